//! Signed receipts: a host's Ed25519 signature over a JSON document describing one call.
//!
//! The registry does not know what a receipt says (the facade fills it in); it owns the two
//! things that must be done one way only: the bytes that are signed, a canonical JSON form of
//! the document, and the signature check against a trusted key. A receipt file is
//! `{"receipt": {…}, "key_id", "algorithm": "ed25519", "signature": <128 hex>}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Error, KeyId, ManifestSignature, SigningKey, TrustStore, fs, signature};

/// A receipt document with its signature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedReceipt {
    /// What the host attests to.
    pub receipt: Value,
    /// The id of the key that signed it.
    pub key_id: String,
    /// Always `ed25519`.
    pub algorithm: String,
    /// The signature over [`canonical_json`] of `receipt`, 128 hex characters.
    pub signature: String,
}

impl SignedReceipt {
    /// Signs `receipt` with `key`.
    #[must_use]
    pub fn sign(receipt: Value, key: &SigningKey) -> SignedReceipt {
        let signature = key.sign(&canonical_json(&receipt));
        SignedReceipt {
            receipt,
            key_id: key.key_id().to_string(),
            algorithm: ManifestSignature::ALGORITHM.to_owned(),
            signature: hex::encode(signature.to_bytes()),
        }
    }

    /// The receipt file's JSON, pretty-printed with a trailing newline.
    #[must_use]
    pub fn to_json_pretty(&self) -> String {
        fs::to_pretty_json(self)
    }

    /// Parses a receipt file.
    ///
    /// # Errors
    /// [`Error::Malformed`] when the JSON is not a receipt file, or repeats a key in an object
    /// (which readers would disagree on; the signature covers one reading).
    pub fn from_json(text: &str) -> Result<SignedReceipt, Error> {
        let malformed = |e: locara_manifest::Error| Error::Malformed {
            subject: "receipt".to_owned(),
            message: e.to_string(),
        };
        locara_manifest::json::parse_value("receipt", text).map_err(malformed)?;
        fs::parse_json("receipt", text)
    }

    /// Checks the signature against `trust` and returns the signing key's id.
    ///
    /// # Errors
    /// [`Error::Malformed`] for a bad algorithm, key id or signature encoding,
    /// [`Error::RevokedReceiptKey`] when `trust` revoked the key,
    /// [`Error::UnknownReceiptKey`] when the key is not trusted, and
    /// [`Error::BadReceiptSignature`] when the receipt was changed after it was signed.
    pub fn verify(&self, trust: &TrustStore) -> Result<KeyId, Error> {
        let file = serde_json::json!({
            "key_id": self.key_id,
            "algorithm": self.algorithm,
            "signature": self.signature,
        });
        let parsed = ManifestSignature::parse("receipt", &file.to_string())?;
        // The manifest errors of the shared check, said of the receipt.
        signature::verify(
            &canonical_json(&self.receipt),
            &parsed,
            trust,
            "the receipt",
        )
        .map_err(|e| match e {
            Error::UnknownKey { key_id, .. } => Error::UnknownReceiptKey { key_id },
            Error::BadSignature { key_id, .. } => Error::BadReceiptSignature { key_id },
            Error::RevokedKey {
                key_id,
                reason,
                revoked_at,
                ..
            } => Error::RevokedReceiptKey {
                key_id,
                reason,
                revoked_at,
            },
            other => other,
        })
    }
}

/// The canonical bytes of a JSON value: compact, object keys sorted by their UTF-8 bytes,
/// strings and numbers as `serde_json` writes them. Equal values give equal bytes whatever
/// order their keys came in, so a digest of it names the value, not its formatting.
#[must_use]
pub fn canonical_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(&Value::String(key.clone()), out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    // Writing a scalar into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::generate_keypair;

    #[test]
    fn canonical_json_sorts_keys_at_every_level_and_is_compact() {
        let a = json!({"b": 1, "a": [{"z": "é\n", "y": null}, 2.5], "c": {"k": true, "j": false}});
        let b: Value = serde_json::from_str(
            r#"{ "c": {"j": false, "k": true}, "a": [{"y": null, "z": "é\n"}, 2.5], "b": 1 }"#,
        )
        .unwrap();
        let bytes = canonical_json(&a);
        assert_eq!(bytes, canonical_json(&b));
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"a":[{"y":null,"z":"é\n"},2.5],"b":1,"c":{"j":false,"k":true}}"#
        );
    }

    #[test]
    fn a_signed_receipt_verifies_and_any_change_is_refused() {
        let key = generate_keypair("host").unwrap();
        let trust = TrustStore::new().with_key(key.public_key().clone());
        let signed = SignedReceipt::sign(json!({"tool": "text.chunk@0.1.0", "ok": true}), &key);
        let reread = SignedReceipt::from_json(&signed.to_json_pretty()).unwrap();
        assert_eq!(reread.verify(&trust).unwrap(), *key.key_id());

        let mut changed = reread.clone();
        changed.receipt["ok"] = json!(false);
        assert!(matches!(
            changed.verify(&trust),
            Err(Error::BadReceiptSignature { .. })
        ));

        let stranger = generate_keypair("stranger").unwrap();
        let other = TrustStore::new().with_key(stranger.public_key().clone());
        assert!(matches!(
            reread.verify(&other),
            Err(Error::UnknownReceiptKey { .. })
        ));

        let mut garbled = reread;
        garbled.signature = "zz".to_owned();
        assert!(matches!(
            garbled.verify(&trust),
            Err(Error::Malformed { .. })
        ));
    }
}
