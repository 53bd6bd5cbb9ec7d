//! Tests for the directory walker and binary sniffing.

use std::fs;

use super::*;

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("b/deeper/deepest")).unwrap();
    fs::create_dir_all(root.join("a")).unwrap();
    fs::write(root.join("z.txt"), "z").unwrap();
    fs::write(root.join("a/one.txt"), "1").unwrap();
    fs::write(root.join("b/two.txt"), "22").unwrap();
    fs::write(root.join("b/deeper/three.txt"), "333").unwrap();
    fs::write(root.join("b/deeper/deepest/four.txt"), "4444").unwrap();
    dir
}

fn collect(root: &Path, max_depth: usize, mut flow: impl FnMut(&Entry) -> Flow) -> Vec<String> {
    let mut seen = Vec::new();
    walk(root, max_depth, &mut |e| {
        seen.push(format!("{} {:?} {}", e.rel, e.kind, e.depth));
        flow(e)
    })
    .unwrap();
    seen
}

#[test]
fn walks_depth_first_in_name_order() {
    let dir = tree();
    assert_eq!(
        collect(dir.path(), 10, |_| Flow::Continue),
        [
            "a Dir 1",
            "a/one.txt File 2",
            "b Dir 1",
            "b/deeper Dir 2",
            "b/deeper/deepest Dir 3",
            "b/deeper/deepest/four.txt File 4",
            "b/deeper/three.txt File 3",
            "b/two.txt File 2",
            "z.txt File 1",
        ]
    );
}

#[test]
fn respects_max_depth_skip_and_stop() {
    let dir = tree();
    assert_eq!(
        collect(dir.path(), 1, |_| Flow::Continue),
        ["a Dir 1", "b Dir 1", "z.txt File 1"]
    );
    let skipped = collect(dir.path(), 10, |e| {
        if e.name == "b" {
            Flow::Skip
        } else {
            Flow::Continue
        }
    });
    assert_eq!(
        skipped,
        ["a Dir 1", "a/one.txt File 2", "b Dir 1", "z.txt File 1"]
    );
    let stopped = collect(dir.path(), 10, |e| {
        if e.name == "one.txt" {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    assert_eq!(stopped, ["a Dir 1", "a/one.txt File 2"]);
}

#[cfg(unix)]
#[test]
fn symlinks_are_reported_not_followed() {
    let dir = tree();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("a/loop")).unwrap();
    let seen = collect(dir.path(), 10, |_| Flow::Continue);
    assert!(seen.contains(&"a/loop Symlink 2".to_owned()), "{seen:?}");
    assert!(!seen.iter().any(|s| s.starts_with("a/loop/")), "{seen:?}");
}

#[test]
fn sizes_are_for_files_only() {
    let dir = tree();
    let entries = read_sorted(&dir.path().join("b"), "b", 2).unwrap();
    let sizes: Vec<(String, u64)> = entries.iter().map(|e| (e.rel.clone(), e.size())).collect();
    assert_eq!(
        sizes,
        [("b/deeper".to_owned(), 0), ("b/two.txt".to_owned(), 2)]
    );
}

#[test]
fn missing_root_is_an_error() {
    let dir = tree();
    let err = walk(&dir.path().join("nope"), 3, &mut |_| Flow::Continue).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
}

#[test]
fn binary_means_nul_in_the_first_8_kib() {
    assert!(!is_binary(b"plain text\n"));
    assert!(is_binary(b"a\0b"));
    let mut late = vec![b'a'; BINARY_SNIFF_BYTES];
    late.push(0);
    assert!(!is_binary(&late));
    assert!(!is_binary(b""));
}
