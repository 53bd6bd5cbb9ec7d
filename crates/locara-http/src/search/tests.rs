//! Unit tests of the text helpers of `web.search`.

use super::{cut, plain_text, seconds};

#[test]
fn plain_text_drops_tags_and_decodes_references() {
    assert_eq!(
        plain_text("The <strong>river</strong> survey&#39;s  <b>bend</b> &amp; bank"),
        "The river survey's bend & bank"
    );
    assert_eq!(
        plain_text("a < b &gt; c &unknown; d &#x27;e"),
        "a < b > c &unknown; d 'e"
    );
    assert_eq!(plain_text("x <3 y"), "x <3 y");
    assert_eq!(plain_text("tail &"), "tail &");
    assert_eq!(plain_text("<em>open"), "open");
    assert_eq!(plain_text("1 <2> 3"), "1 <2> 3");
    assert_eq!(
        plain_text("<strong>beaver</strong>s<br/>dam<p>mill</p>"),
        "beavers dam mill"
    );
}

#[test]
fn seconds_and_cut_read_well() {
    assert_eq!(seconds(std::time::Duration::from_millis(1500)), "1.5 s");
    assert_eq!(seconds(std::time::Duration::from_millis(250)), "0.25 s");
    assert_eq!(seconds(std::time::Duration::from_secs(20)), "20 s");
    assert_eq!(cut("abcdef", 3), "abc…");
    assert_eq!(cut("abc", 3), "abc");
}
