//! The fuzzers' regression inputs (`fuzz/regressions/signature/`), run through the code the
//! `signature` fuzz target drives, so that `cargo test` keeps a fixed crash fixed without the
//! fuzzer. A new input shows up in the snapshot (`UPDATE_EXPECT=1` rewrites it).

use std::path::Path;

use expect_test::expect;

use crate::{ManifestSignature, PublicKey, SigningKey, TrustStore, verify_manifest};

/// As the `signature` fuzz target: `<signature file> NUL <manifest bytes>`, verified with the
/// fuzz targets' fixed key trusted; without a NUL, a signature (or public key) file alone.
fn signature(data: &[u8]) -> String {
    let key = SigningKey::from_seed("locara-fuzz", &[7; 32]).unwrap();
    let trust = TrustStore::new().with_key(key.public_key().clone());
    let (signature, manifest) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (&data[..nul], &data[nul + 1..]),
        None => (data, &[][..]),
    };
    let Ok(text) = std::str::from_utf8(signature) else {
        return "not UTF-8".to_owned();
    };
    match ManifestSignature::from_json(text) {
        Ok(signature) => {
            let again = ManifestSignature::from_json(&signature.to_json_pretty()).unwrap();
            assert_eq!(again, signature);
            match verify_manifest(manifest, &signature, &trust) {
                Ok(key_id) => format!("verified by {key_id}"),
                Err(e) => e.to_string(),
            }
        }
        Err(e) => match PublicKey::from_json(text) {
            Ok(public) => format!("a public key file of {}", public.key_id()),
            Err(key_error) => format!("{e}\n    as a public key file: {key_error}"),
        },
    }
}

#[test]
fn signature_regressions() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/signature");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no inputs in {}", dir.display());
    let outcomes: Vec<String> = paths
        .iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            format!("{name}: {}", signature(&std::fs::read(path).unwrap()))
        })
        .collect();
    expect![[r#"
        bad-key-id: malformed signature file: invalid key id `ed25519:éééééééé`: expected `ed25519:` followed by 16 lowercase hex characters
            as a public key file: malformed public key file: unknown field `algorithm`, expected one of `publisher`, `key_id`, `public_key` at line 1 column 82
        deep-nesting: malformed signature file: invalid type: sequence, expected a string at line 1 column 11
            as a public key file: malformed public key file: invalid type: sequence, expected a string at line 1 column 11
        huge-signature: malformed signature file: `signature` must be 128 hex characters: Invalid string length
            as a public key file: malformed public key file: unknown field `algorithm`, expected one of `publisher`, `key_id`, `public_key` at line 1 column 50
        lone-surrogate: malformed signature file: unexpected end of hex escape at line 1 column 60
            as a public key file: malformed public key file: unknown field `algorithm`, expected one of `publisher`, `key_id`, `public_key` at line 1 column 50
        low-order-key.pub.json: malformed signature file: unknown field `publisher`, expected one of `key_id`, `algorithm`, `signature` at line 1 column 12
            as a public key file: key id mismatch in public key file: the file says ed25519:0000000000000000, but its key is ed25519:01d0fabd251fcbbe (the file was edited by hand; regenerate or restore it)
        multibyte-signature: malformed signature file: `signature` must be 128 hex characters: Invalid character 'Ã' at position 0
            as a public key file: malformed public key file: unknown field `algorithm`, expected one of `publisher`, `key_id`, `public_key` at line 1 column 50
        non-hex-signature: malformed signature file: `signature` must be 128 hex characters: Invalid character 'z' at position 0
            as a public key file: malformed public key file: unknown field `algorithm`, expected one of `publisher`, `key_id`, `public_key` at line 1 column 50
        short-signature: malformed signature file: `signature` must be 128 hex characters: Invalid string length
            as a public key file: malformed public key file: unknown field `algorithm`, expected one of `publisher`, `key_id`, `public_key` at line 1 column 50
        unknown-algorithm: malformed signature file: unsupported algorithm `rsa`, expected `ed25519`
            as a public key file: malformed public key file: unknown field `algorithm`, expected one of `publisher`, `key_id`, `public_key` at line 1 column 50
        zero-signature: bad signature on manifest by ed25519:fe812c12f3ab4ce6: the manifest bytes do not match the signature (manifest.json was modified after signing); re-publish the tool or restore the original files"#]].assert_eq(&outcomes.join("\n"));
}
