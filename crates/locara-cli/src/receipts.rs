//! Receipts on the command line: the home's receipt key, and `verify-receipt`.
//!
//! The key is `<home>/keys/receipts.secret.json` (mode 0600), made on first use, with its
//! public half beside it as `receipts.pub.json`: give that file to whoever checks receipts.

use std::{path::Path, process::ExitCode};

use anyhow::{Context as _, format_err};
use locara_facade::{RECEIPT_FORMAT, Receipt, SignedReceipt, SigningKey, ToolRef, receipt_digest};
use locara_registry::{PublicKey, TrustStore, generate_keypair};

use crate::{cli::VerifyReceiptArgs, context::Context, output};

/// The receipt key's publisher name and file base name.
const RECEIPT_KEY: &str = "receipts";

/// The home's receipt key, made on first use.
pub(crate) fn host_key(ctx: &Context) -> anyhow::Result<SigningKey> {
    let dir = ctx.keys_dir();
    let secret = dir.join(format!("{RECEIPT_KEY}.secret.json"));
    if secret.is_file() {
        return SigningKey::read_file(&secret)
            .with_context(|| format!("cannot read the receipt key {}", secret.display()));
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let key = generate_keypair(RECEIPT_KEY)?;
    key.write_file(&secret)?;
    let public = dir.join(format!("{RECEIPT_KEY}.pub.json"));
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
    let mut checks = Checks::default();
    let trust = TrustStore::new().with_key(key);
    checks.add(
        "signature",
        signed
            .verify(&trust)
            .map(|id| format!("signed by {} (key {id})", key_file.display()))
            .map_err(|e| e.to_string()),
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
        "{} {} on {}, {} ms, approval: {approval}\n",
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
        output::stdout(&summary)?;
        for line in &checks.lines {
            output::stdout(&format!(
                "{:4}  {:9}  {}\n",
                if line["ok"] == true { "ok" } else { "FAIL" },
                line["check"].as_str().unwrap_or_default(),
                line["detail"].as_str().unwrap_or_default()
            ))?;
        }
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
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
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
