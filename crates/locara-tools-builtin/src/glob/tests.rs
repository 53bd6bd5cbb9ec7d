//! Tests for glob matching.

use super::*;

fn m(pattern: &str, text: &str) -> bool {
    Glob::new(pattern, false).unwrap().is_match(text)
}

#[test]
fn star_and_question_stay_within_a_segment() {
    assert!(m("*.rs", "main.rs"));
    assert!(!m("*.rs", "src/main.rs"));
    assert!(m("?.txt", "a.txt"));
    assert!(!m("?.txt", "ab.txt"));
    assert!(m("src/*/mod.rs", "src/abi/mod.rs"));
    assert!(!m("src/*/mod.rs", "src/a/b/mod.rs"));
}

#[test]
fn double_star_crosses_directories() {
    assert!(m("**/*.rs", "main.rs"));
    assert!(m("**/*.rs", "src/a/b/main.rs"));
    assert!(m("src/**/*.rs", "src/main.rs"));
    assert!(m("src/**/*.rs", "src/x/y/main.rs"));
    assert!(!m("src/**/*.rs", "tests/main.rs"));
    assert!(m("src/**", "src/x/y"));
}

#[test]
fn classes_braces_and_escapes() {
    assert!(m("[abc].txt", "b.txt"));
    assert!(!m("[abc].txt", "d.txt"));
    assert!(m("[a-c]x", "bx"));
    assert!(m("[!a]x", "bx"));
    assert!(!m("[!a]x", "ax"));
    assert!(m("[^a]x", "bx"));
    assert!(m("[]]", "]"));
    assert!(m("*.{rs,toml}", "Cargo.toml"));
    assert!(m("*.{rs,toml}", "lib.rs"));
    assert!(!m("*.{rs,toml}", "lib.py"));
    assert!(m("{a,b{c,d}}", "bd"));
    assert!(m(r"\*.txt", "*.txt"));
    assert!(!m(r"\*.txt", "a.txt"));
    assert!(m("[unclosed", "[unclosed"));
    assert!(m("a+b(c).txt", "a+b(c).txt"));
}

#[test]
fn case_insensitive_and_path_style() {
    assert!(Glob::new("*.RS", true).unwrap().is_match("main.rs"));
    assert!(!Glob::new("*.RS", false).unwrap().is_match("main.rs"));
    assert!(
        Glob::with_options("./src/*", false, true)
            .unwrap()
            .is_match("./src/a/b.rs")
    );
}

#[test]
fn matches_path_uses_the_name_unless_the_pattern_has_a_slash() {
    let name = Glob::new("*.rs", false).unwrap();
    assert!(name.matches_path("src/deep/main.rs"));
    let path = Glob::new("src/*.rs", false).unwrap();
    assert!(path.matches_path("src/main.rs"));
    assert!(!path.matches_path("lib/src/main.rs"));
}

#[test]
fn malformed_patterns_are_errors() {
    assert_eq!(
        Glob::new("*.{rs", false).unwrap_err(),
        "invalid glob \"*.{rs\": unclosed '{'"
    );
}

#[test]
fn meta_detection_and_unescaping() {
    assert!(has_meta("*.rs"));
    assert!(has_meta("a[bc]"));
    assert!(!has_meta(r"\*.rs"));
    assert!(!has_meta("plain.txt"));
    assert_eq!(unescape(r"\*a\\b"), r"*a\b");
}
