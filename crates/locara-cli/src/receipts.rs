//! Receipts on the command line: the home's receipt key, and `verify-receipt`.
//!
//! The key is `<home>/keys/receipts.secret.json` (mode 0600, in `<home>/keys`, mode 0700 when
//! made here), made on first use, with its public half beside it as `receipts.pub.json`: give
//! that file to whoever checks receipts. A receipt key revoked in `<home>/trust/revoked.json`
//! signs nothing more, and receipts it signed, or whose tool's publisher key is revoked, fail
//! `verify-receipt`.
//!
//! `verify-receipt` prints its verdict before anything the receipt claims: when a check fails,
//! the FAIL lines come first and the receipt's claims follow, marked as unverified.

use std::{path::Path, process::ExitCode};

use anyhow::{Context as _, format_err};
use locara_facade::{RECEIPT_FORMAT, Receipt, SignedReceipt, SigningKey, ToolRef, receipt_digest};
use locara_registry::{Error, KeyId, PublicKey, TrustStore, generate_keypair};

use crate::{cli::VerifyReceiptArgs, context::Context, output};

/// The receipt key's publisher name and file base name.
const RECEIPT_KEY: &str = "receipts";

/// The home's receipt key, made on first use; refused when the home revoked it.
pub(crate) fn host_key(ctx: &Context) -> anyhow::Result<SigningKey> {
    let dir = ctx.keys_dir();
    let secret = dir.join(format!("{RECEIPT_KEY}.secret.json"));
    let public = dir.join(format!("{RECEIPT_KEY}.pub.json"));
    // Anything at the path (a FIFO, a symlink to a device) is read, and refused, rather than
    // taken for a missing key.
    if secret.symlink_metadata().is_ok() {
        let key = SigningKey::read_file(&secret)
            .with_context(|| format!("cannot read the receipt key {}", secret.display()))?;
        if let Some(revocation) = ctx.trust()?.revocation(key.key_id()) {
            return Err(format_err!(
                "the receipt key {} ({}) is revoked in {}{}: it signs no more receipts; move {} and {} out of {} and a new key is made on the next `run --receipt`",
                key.key_id(),
                secret.display(),
                ctx.trust_dir()
                    .join(locara_registry::REVOCATION_FILE)
                    .display(),
                revocation
                    .reason
                    .as_ref()
                    .map_or_else(String::new, |r| format!(" ({r})")),
                secret.display(),
                public.display(),
                dir.display(),
            ));
        }
        return Ok(key);
    }
    // The key's directory is made mode 0700 and the file mode 0600, by the registry.
    let key = generate_keypair(RECEIPT_KEY)?;
    key.write_file(&secret)?;
    key.public_key().write_file(&public)?;
    eprintln!(
        "made the receipt key {} (its public key, for checking receipts: {})",
        secret.display(),
        public.display()
    );
    Ok(key)
}

/// `locara verify-receipt`: exit 0 when every check passed, 1 when one failed.
pub(crate) fn verify_receipt(ctx: &Context, args: &VerifyReceiptArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read the receipt {}", args.file.display()))?;
    let signed = SignedReceipt::from_json(&text)
        .with_context(|| format!("{} is not a receipt file", args.file.display()))?;
    let key_file = args
        .key
        .clone()
        .unwrap_or_else(|| ctx.keys_dir().join(format!("{RECEIPT_KEY}.pub.json")));
    let key = PublicKey::read_file(&key_file).with_context(|| {
        format!(
            "cannot read the host's public key {}: pass the key that signed the receipt with --key",
            key_file.display()
        )
    })?;
    // The home's revocations apply to receipt keys as to publisher keys.
    let home_trust = ctx.trust()?;
    let mut trust = TrustStore::new().with_key(key.clone());
    for revocation in home_trust.revocations() {
        trust.revoke(revocation.clone());
    }
    let mut checks = Checks::default();
    checks.add(
        "signature",
        signed
            .verify(&trust)
            .map(|id| format!("signed by {} (key {id})", key_file.display()))
            .map_err(|e| match e {
                Error::UnknownReceiptKey { .. } => format!(
                    "{e} (checked against {}, key {}; pass the key that signed it with --key)",
                    key_file.display(),
                    key.key_id()
                ),
                e => e.to_string(),
            }),
    );
    let receipt: Receipt = serde_json::from_value(signed.receipt.clone()).with_context(|| {
        format!(
            "{} does not hold a {RECEIPT_FORMAT} receipt",
            args.file.display()
        )
    })?;
    if receipt.format != RECEIPT_FORMAT {
        return Err(format_err!(
            "{} is a `{}` receipt; this locara reads `{RECEIPT_FORMAT}`",
            args.file.display(),
            receipt.format
        ));
    }
    checks.add("publisher", publisher_check(&home_trust, &receipt));
    checks.add("tool", registry_check(ctx, &receipt));
    if let Some(path) = &args.arguments {
        checks.add(
            "arguments",
            digest_check(path, Some(&receipt.input_sha256))?,
        );
    }
    if let Some(path) = &args.output {
        checks.add(
            "output",
            digest_check(path, receipt.output_sha256.as_ref())?,
        );
    }
    let approval = receipt.approval.as_ref().map_or_else(
        || "none needed".to_owned(),
        |a| {
            format!(
                "{} by {}: {}",
                if a.approved { "approved" } else { "denied" },
                a.by,
                a.reason
            )
        },
    );
    let summary = format!(
        "{} {} on {}, {} ms, approval: {approval}",
        receipt.tool,
        if receipt.ok { "succeeded" } else { "failed" },
        receipt.engine,
        receipt.duration_ms.round()
    );
    if ctx.json {
        output::json(&serde_json::json!({
            "ok": checks.ok,
            "checks": checks.lines,
            "receipt": receipt,
        }))?;
    } else {
        output::stdout(&checks.report(&summary))?;
    }
    Ok(if checks.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[derive(Debug)]
struct Checks {
    ok: bool,
    lines: Vec<serde_json::Value>,
}

impl Default for Checks {
    fn default() -> Checks {
        Checks {
            ok: true,
            lines: Vec::new(),
        }
    }
}

impl Checks {
    /// The text report. When every check passed, the receipt's claims are verified and come
    /// first. When one failed, the FAIL lines come first (someone skimming sees the verdict
    /// before any claim), then the checks that passed, then the claims, marked unverified.
    fn report(&self, summary: &str) -> String {
        let line = |line: &serde_json::Value| {
            format!(
                "{:4}  {:9}  {}\n",
                if line["ok"] == true { "ok" } else { "FAIL" },
                line["check"].as_str().unwrap_or_default(),
                line["detail"].as_str().unwrap_or_default()
            )
        };
        let mut text = String::new();
        if self.ok {
            text.push_str(summary);
            text.push('\n');
            for l in &self.lines {
                text.push_str(&line(l));
            }
            return text;
        }
        for l in self.lines.iter().filter(|l| l["ok"] != true) {
            text.push_str(&line(l));
        }
        for l in self.lines.iter().filter(|l| l["ok"] == true) {
            text.push_str(&line(l));
        }
        text.push_str(&format!(
            "the receipt did not verify; what it claims, unverified: {summary}\n"
        ));
        text
    }

    fn add(&mut self, check: &str, result: Result<String, String>) {
        self.ok &= result.is_ok();
        let (ok, detail) = match result {
            Ok(detail) => (true, detail),
            Err(detail) => (false, detail),
        };
        self.lines
            .push(serde_json::json!({"check": check, "ok": ok, "detail": detail}));
    }
}

/// The publisher key that signed the tool when it ran is not revoked now. (The tool check
/// resolves today's registry, which may hold the same manifest re-signed by a new key.)
fn publisher_check(trust: &TrustStore, receipt: &Receipt) -> Result<String, String> {
    let key_id: KeyId = receipt.publisher_key_id.parse().map_err(|e| {
        format!(
            "the receipt names an invalid publisher key `{}`: {e}",
            receipt.publisher_key_id
        )
    })?;
    match trust.revocation(&key_id) {
        Some(revocation) => {
            let mut detail = String::new();
            if let Some(at) = &revocation.revoked_at {
                detail.push_str(&format!(" on {at}"));
            }
            if let Some(reason) = &revocation.reason {
                detail.push_str(&format!(" ({reason})"));
            }
            Err(format!(
                "{} ran signed by {key_id}, which this home revoked{detail}: what that key signed is no longer trusted",
                receipt.tool
            ))
        }
        None => Ok(format!("{key_id} is not revoked in this home")),
    }
}

/// The tool the receipt names is the one this home's registry verifies, byte for byte.
fn registry_check(ctx: &Context, receipt: &Receipt) -> Result<String, String> {
    let tool: ToolRef = receipt
        .tool
        .parse()
        .map_err(|e| format!("the receipt names an invalid tool `{}`: {e}", receipt.tool))?;
    let cache = tempfile::tempdir().map_err(|e| format!("cannot make a temp dir: {e}"))?;
    let registry = ctx.registry(cache.path()).map_err(|e| format!("{e:#}"))?;
    let artifact = registry
        .resolve(&tool)
        .map_err(|e| format!("{} cannot be verified in this home: {e}", receipt.tool))?;
    let manifest = artifact.manifest_digest().to_hex();
    let wasm = artifact.artifact_digest().to_hex();
    if manifest != receipt.manifest_sha256 || wasm != receipt.artifact_sha256 {
        return Err(format!(
            "{} in this registry is not the tool that ran: manifest {manifest} vs {}, artifact {wasm} vs {}",
            receipt.tool, receipt.manifest_sha256, receipt.artifact_sha256
        ));
    }
    Ok(format!(
        "{} matches this registry (manifest {}…)",
        receipt.tool,
        &manifest[..12]
    ))
}

/// The JSON in `path` hashes to `expected`.
fn digest_check(path: &Path, expected: Option<&String>) -> anyhow::Result<Result<String, String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    // Strict: a repeated key would hash one way here and be read another way elsewhere.
    let value = locara_manifest::json::parse_value("receipt input or output", &text)
        .with_context(|| format!("{} is not JSON with unique keys", path.display()))?;
    let actual = receipt_digest(&value);
    Ok(match expected {
        Some(expected) if *expected == actual => Ok(format!("{} matches", path.display())),
        Some(expected) => Err(format!(
            "{} hashes to {actual}, the receipt says {expected}",
            path.display()
        )),
        None => Err(format!(
            "the receipt has no output, but {} was given",
            path.display()
        )),
    })
}
