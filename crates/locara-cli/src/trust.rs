//! `locara trust list` and `locara trust revoke`: the home's trusted keys and their revocations.
//!
//! The keys are the `*.pub.json` files in `<home>/trust`; revocations are `<home>/trust/
//! revoked.json`, read and written by `locara-registry` (`TrustStore::load_dir`,
//! `TrustStore::write_revocations`). A revoked key is never trusted, whether or not its key file
//! is still there, so revoking never deletes a file: the record says what was revoked and why.

use std::{process::ExitCode, time::SystemTime};

use anyhow::Context as _;
use locara_registry::{KeyId, PublicKey, REVOCATION_FILE, Revocation, rfc3339_utc};
use serde_json::json;

use crate::{context::Context, output};

/// `locara trust list`.
pub(crate) fn list(ctx: &Context) -> anyhow::Result<ExitCode> {
    let trust = ctx.trust()?;
    let keys: Vec<_> = trust
        .listed_keys()
        .map(|key| {
            let revocation = trust.revocation(key.key_id());
            json!({
                "key_id": key.key_id().to_string(),
                "publisher": key.publisher(),
                "revoked": revocation.is_some(),
            })
        })
        .collect();
    let revocations: Vec<_> = trust
        .revocations()
        .map(|r| {
            json!({
                "key_id": r.key_id.to_string(),
                "publisher": r.publisher,
                "reason": r.reason,
                "revoked_at": r.revoked_at,
            })
        })
        .collect();
    if ctx.json {
        output::json(&json!({
            "trust_dir": ctx.trust_dir(),
            "keys": keys,
            "revoked": revocations,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = String::new();
    for key in trust.listed_keys() {
        let status = match trust.revocation(key.key_id()) {
            Some(r) => format!("REVOKED{}", detail(r)),
            None => "trusted".to_owned(),
        };
        text.push_str(&format!(
            "{}  {:16}  {status}\n",
            key.key_id(),
            key.publisher()
        ));
    }
    for r in trust
        .revocations()
        .filter(|r| trust.listed_keys().all(|k| *k.key_id() != r.key_id))
    {
        text.push_str(&format!(
            "{}  {:16}  REVOKED{} (no key file in the trust directory)\n",
            r.key_id,
            r.publisher.as_deref().unwrap_or("-"),
            detail(r)
        ));
    }
    output::stdout(&text)?;
    if text.is_empty() {
        eprintln!(
            "{} holds no keys: copy each publisher's `*.pub.json` there to trust it",
            ctx.trust_dir().display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `locara trust revoke`.
pub(crate) fn revoke(
    ctx: &Context,
    key_id: &str,
    reason: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let key_id: KeyId = key_id
        .trim()
        .parse()
        .context("name the key to revoke by its id (`locara trust list` shows them)")?;
    let mut trust = ctx.trust()?;
    let trust_dir = ctx.trust_dir();
    let list_file = trust_dir.join(REVOCATION_FILE);
    if let Some(existing) = trust.revocation(&key_id) {
        let message = format!(
            "{key_id} is already revoked{} in {}; nothing changed\n",
            detail(existing),
            list_file.display()
        );
        if ctx.json {
            output::json(
                &json!({ "key_id": key_id.to_string(), "revoked": true, "changed": false, "revocation_list": list_file }),
            )?;
        } else {
            output::stdout(&message)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Record the key itself when this home has it: a trusted publisher key, or its own
    // receipt key.
    let known = trust
        .listed_keys()
        .find(|k| *k.key_id() == key_id)
        .cloned()
        .or_else(|| host_public_key(ctx, &key_id));
    let mut revocation = match &known {
        Some(key) => Revocation::of_key(key),
        None => Revocation::new(key_id.clone()),
    }
    .with_revoked_at(rfc3339_utc(SystemTime::now()));
    if let Some(reason) = reason.map(str::trim).filter(|r| !r.is_empty()) {
        revocation = revocation.with_reason(reason);
    }
    trust.revoke(revocation);
    let written = trust
        .write_revocations(&trust_dir)
        .with_context(|| format!("cannot record the revocation of {key_id}"))?;
    if ctx.json {
        output::json(&json!({
            "key_id": key_id.to_string(),
            "publisher": known.as_ref().map(PublicKey::publisher),
            "revoked": true,
            "changed": true,
            "revocation_list": written,
        }))?;
    } else {
        let who = known
            .as_ref()
            .map_or_else(String::new, |k| format!(" ({})", k.publisher()));
        output::stdout(&format!(
            "revoked {key_id}{who}, recorded in {}\nwhat it signed no longer resolves or runs, `locara verify` reports it as FAIL, and receipts it signed fail `locara verify-receipt`\n",
            written.display()
        ))?;
    }
    if known.is_none() {
        eprintln!(
            "note: {key_id} is not a key in {} or this home's keys; the revocation is recorded all the same",
            trust_dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The home's own public key (`<home>/keys/*.pub.json`, the receipt key) with this id.
fn host_public_key(ctx: &Context, key_id: &KeyId) -> Option<PublicKey> {
    let entries = std::fs::read_dir(ctx.keys_dir()).ok()?;
    entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".pub.json"))
        })
        .filter_map(|path| PublicKey::read_file(&path).ok())
        .find(|key| key.key_id() == key_id)
}

/// ` on DATE (REASON)`, each part when the revocation says it.
fn detail(revocation: &Revocation) -> String {
    let mut text = String::new();
    if let Some(at) = &revocation.revoked_at {
        text.push_str(&format!(" on {at}"));
    }
    if let Some(reason) = &revocation.reason {
        text.push_str(&format!(" ({reason})"));
    }
    text
}
