//! Per-call receipts: what a call ran and produced, signed by the host's key.
//!
//! The facade only fills in the [`Receipt`]; the canonical bytes, the digests and the signature
//! are the registry's (`canonical_json`, `Digest`, `SignedReceipt`), the one crate that hashes
//! and signs.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use locara_exec::Provenance;
use locara_registry::{Digest, SignedReceipt, SigningKey, canonical_json};
use serde_json::Value;

use crate::{Error, Receipt, RunResponse, types::ReceiptFile};

/// The receipt format this version writes and `locara verify-receipt` reads.
pub const RECEIPT_FORMAT: &str = "locara.receipt/1";

/// When a call started, by the wall clock (for the receipt) and the monotonic one (for its
/// duration).
#[derive(Debug)]
pub(crate) struct Clock {
    wall: SystemTime,
    monotonic: Instant,
}

impl Clock {
    pub(crate) fn start() -> Clock {
        Clock {
            wall: SystemTime::now(),
            monotonic: Instant::now(),
        }
    }
}

/// SHA-256 of the canonical JSON of `value`, in hex.
pub fn digest(value: &Value) -> String {
    Digest::of(&canonical_json(value)).to_hex()
}

pub(crate) fn build(
    response: &RunResponse,
    provenance: &Provenance,
    input_sha256: String,
    started: &Clock,
) -> Receipt {
    Receipt {
        format: RECEIPT_FORMAT.to_owned(),
        tool: response.tool.clone(),
        manifest_sha256: provenance.manifest_sha256.clone(),
        artifact_sha256: provenance.artifact_sha256.clone(),
        publisher_key_id: provenance.key_id.clone(),
        input_sha256,
        output_sha256: response.output.as_ref().map(digest),
        files: response
            .files
            .iter()
            .map(|f| ReceiptFile {
                name: f.name.clone(),
                size_bytes: f.size_bytes,
                sha256: f.sha256.clone(),
            })
            .collect(),
        ok: response.ok,
        error_code: response.error.as_ref().map(|e| e.code.clone()),
        limits: response.stats.limits.clone(),
        approval: response.approval.clone(),
        engine: response.stats.engine.clone(),
        started_at_unix_ms: started
            .wall
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        duration_ms: started.monotonic.elapsed().as_secs_f64() * 1000.0,
        sandbox_ms: response.stats.elapsed_ms,
        fuel_consumed: response.stats.fuel_consumed,
    }
}

pub(crate) fn sign(receipt: &Receipt, key: &SigningKey) -> Result<SignedReceipt, Error> {
    let body = serde_json::to_value(receipt).map_err(|e| {
        Error::new(
            "receipt_unavailable",
            format!("the receipt could not be serialized: {e}"),
            "report this to Locara's developers",
        )
    })?;
    Ok(SignedReceipt::sign(body, key))
}
