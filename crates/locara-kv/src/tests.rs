//! The store's rules: namespaces, prefixes, limits, and sharing one file.

use serde_json::json;

use super::{Error, KvLimits, KvStore};

fn open(dir: &tempfile::TempDir, app: &str, limits: KvLimits) -> KvStore {
    KvStore::open(dir.path().join("state/kv.sqlite"), app, limits).unwrap()
}

#[test]
fn values_round_trip_and_apps_never_see_each_others_keys() {
    let dir = tempfile::tempdir().unwrap();
    let a = open(&dir, "app-a", KvLimits::default());
    let b = open(&dir, "app-b", KvLimits::default());
    a.set("count", "3").unwrap();
    a.set("user/name", r#""Ada""#).unwrap();
    assert_eq!(a.get("count").unwrap(), Some(json!(3)));
    assert_eq!(b.get("count").unwrap(), None);
    assert!(b.list("", 10).unwrap().is_empty());
    assert!(!b.delete("count").unwrap());
    b.set("count", r#"{"n": 9}"#).unwrap();
    assert_eq!(a.get("count").unwrap(), Some(json!(3)));
    a.set("count", "4").unwrap();
    assert_eq!(a.get("count").unwrap(), Some(json!(4)));
    assert!(a.delete("count").unwrap());
    assert_eq!(a.get("count").unwrap(), None);
    assert_eq!(b.get("count").unwrap(), Some(json!({"n": 9})));
}

#[test]
fn list_matches_prefixes_exactly_in_byte_order() {
    let dir = tempfile::tempdir().unwrap();
    let kv = open(&dir, "app", KvLimits::default());
    for key in ["b/2", "b/1", "b%x", "B/3", "a", "b/10"] {
        kv.set(key, "0").unwrap();
    }
    assert_eq!(kv.list("b/", 10).unwrap(), ["b/1", "b/10", "b/2"]);
    // `%` and `_` are characters, not patterns, and case matters.
    assert_eq!(kv.list("b%", 10).unwrap(), ["b%x"]);
    assert_eq!(kv.list("b_", 10).unwrap(), Vec::<String>::new());
    assert_eq!(kv.list("", 2).unwrap(), ["B/3", "a"]);
}

#[test]
fn a_write_past_the_limits_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let kv = open(&dir, "app", KvLimits::new(2, 20));
    kv.set("a", "1").unwrap();
    kv.set("b", "2").unwrap();
    let full = kv.set("c", "3").unwrap_err();
    assert!(matches!(full, Error::Quota { keys: 3, .. }), "{full}");
    assert!(full.to_string().contains("delete keys"), "{full}");
    // Replacing a value counts the old one out.
    kv.set("a", "12345678901234").unwrap();
    let big = kv.set("a", "123456789012345678").unwrap_err();
    assert!(matches!(big, Error::Quota { bytes: 21, .. }), "{big}");
    assert_eq!(kv.get("a").unwrap(), Some(json!(12_345_678_901_234_u64)));
    assert_eq!(kv.get("c").unwrap(), None);
}

#[test]
fn two_handles_on_one_file_share_it_under_concurrent_writes() {
    let dir = tempfile::tempdir().unwrap();
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let kv = open(&dir, "app", KvLimits::default());
            std::thread::spawn(move || {
                for n in 0..50 {
                    kv.set(&format!("t{i}/{n}"), &n.to_string()).unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let reader = open(&dir, "app", KvLimits::default());
    assert_eq!(reader.list("", 1000).unwrap().len(), 200);
    assert_eq!(reader.get("t3/49").unwrap(), Some(json!(49)));
}
