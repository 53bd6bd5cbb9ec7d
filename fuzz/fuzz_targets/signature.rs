//! Fuzzes signature verification input: `manifest.sig.json` (and trusted public key files)
//! against the bytes of a `manifest.json`, with a fixed trusted key.
//!
//! Input: `<signature file> NUL <manifest bytes>`; without a NUL, a signature file (or a public
//! key file) over empty bytes. A signature verifies only under the trusted key, and whatever
//! the fixed key signs verifies.

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use locara_registry::{
    Error, ManifestSignature, PublicKey, SigningKey, TrustStore, sign_manifest, verify_manifest,
};

/// The fuzzers' key; the committed seeds are signed with it.
static KEY: LazyLock<SigningKey> = LazyLock::new(|| {
    SigningKey::from_seed("locara-fuzz", &[7; 32]).expect("a valid publisher name")
});
static TRUST: LazyLock<TrustStore> =
    LazyLock::new(|| TrustStore::new().with_key(KEY.public_key().clone()));

fuzz_target!(|data: &[u8]| {
    let (signature, manifest) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (&data[..nul], &data[nul + 1..]),
        None => (data, &[][..]),
    };
    if let Ok(text) = std::str::from_utf8(signature) {
        match ManifestSignature::from_json(text) {
            Ok(signature) => check(&signature, manifest),
            Err(error) => {
                drop(error.to_string());
                if let Ok(key) = PublicKey::from_json(text) {
                    let again = PublicKey::from_json(&key.to_json_pretty())
                        .expect("a printed public key parses");
                    assert_eq!(again.key_id(), key.key_id());
                }
            }
        }
    }

    // Whatever the trusted key signs verifies, through the signature file's JSON.
    let signed = sign_manifest(manifest, &KEY);
    let printed =
        ManifestSignature::from_json(&signed.to_json_pretty()).expect("a printed signature parses");
    assert_eq!(printed, signed);
    assert_eq!(
        verify_manifest(manifest, &printed, &TRUST).ok().as_ref(),
        Some(KEY.key_id())
    );
});

fn check(signature: &ManifestSignature, manifest: &[u8]) {
    let printed = signature.to_json_pretty();
    let again = ManifestSignature::from_json(&printed)
        .unwrap_or_else(|e| panic!("the printed signature does not parse: {e}\n{printed}"));
    assert_eq!(&again, signature, "the round trip changed the signature");
    match verify_manifest(manifest, signature, &TRUST) {
        Ok(key_id) => assert_eq!(&key_id, KEY.key_id()),
        Err(error @ Error::UnknownKey { .. }) => {
            assert_ne!(signature.key_id(), KEY.key_id(), "{error}");
        }
        Err(error @ Error::BadSignature { .. }) => {
            assert_eq!(signature.key_id(), KEY.key_id(), "{error}");
        }
        Err(error) => panic!("unexpected error: {error}"),
    }
}
