//! Who approves privileged calls on the command line: `--yes`, a policy file, or the person at
//! the terminal.
//!
//! The order is fixed: `--yes` approves everything; else a policy's `deny` rules win over its
//! `allow` rules; a call no rule matches is decided by the policy's `otherwise` (`deny` by
//! default, or `ask`); without a policy, the terminal is asked. Asking needs an interactive
//! session (stdin is a terminal) and talks to `/dev/tty`, never reading stdin's data (which
//! may carry the arguments or an MCP stream); otherwise the call is denied with a reason that
//! names `--yes` and `--policy`.

use std::{
    io::{BufRead as _, Write as _},
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use locara_facade::{ApprovalDecision, ApprovalRequest, Approver, ToolRef};
use serde::Deserialize;

/// A policy file: which privileged tools may run without asking.
///
/// ```json
/// {"allow": ["admin.rotate-logs", "code-exec.*"], "deny": ["admin.drop@2.0.0"], "otherwise": "ask"}
/// ```
///
/// A rule is an id, `id@version`, or a prefix ending in `*`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Policy {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    otherwise: Otherwise,
}

/// What a policy does with a call no rule matches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Otherwise {
    #[default]
    Deny,
    Ask,
}

impl Policy {
    /// Reads a policy file.
    pub(crate) fn read(path: &Path) -> anyhow::Result<Policy> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the policy file {}", path.display()))?;
        let policy: Policy = locara_manifest::json::from_str("policy file", &text).with_context(|| {
            format!(
                "invalid policy file {}: expected {{\"allow\": [...], \"deny\": [...], \"otherwise\": \"deny\"|\"ask\"}}",
                path.display()
            )
        })?;
        for rule in policy.allow.iter().chain(&policy.deny) {
            let name = rule.strip_suffix('*').unwrap_or(rule);
            if name.is_empty() || name.contains('*') {
                anyhow::bail!(
                    "invalid rule `{rule}` in the policy file {}: use an id, `id@version`, or a prefix ending in `*`",
                    path.display()
                );
            }
        }
        Ok(policy)
    }

    /// The first rule that matches `tool`, `deny` rules first.
    fn decide(&self, tool: &ToolRef) -> Option<(bool, &str)> {
        let matches = |rule: &String| match rule.strip_suffix('*') {
            Some(prefix) => tool.to_string().starts_with(prefix),
            None => *rule == tool.id.to_string() || *rule == tool.to_string(),
        };
        if let Some(rule) = self.deny.iter().find(|r| matches(r)) {
            return Some((false, rule));
        }
        self.allow
            .iter()
            .find(|r| matches(r))
            .map(|r| (true, r.as_str()))
    }
}

/// The command line's approver.
#[derive(Debug)]
pub(crate) struct CliApprover {
    /// `--yes`.
    pub(crate) yes: bool,
    /// `--policy`, read.
    pub(crate) policy: Option<(PathBuf, Policy)>,
}

#[async_trait::async_trait]
impl Approver for CliApprover {
    async fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        if self.yes {
            return ApprovalDecision::approve("--yes", "approved on the command line");
        }
        if let Some((path, policy)) = &self.policy {
            let by = format!("policy {}", path.display());
            match policy.decide(&request.tool) {
                Some((true, rule)) => {
                    return ApprovalDecision::approve(by, format!("allowed by rule `{rule}`"));
                }
                Some((false, rule)) => {
                    return ApprovalDecision::deny(by, format!("denied by rule `{rule}`"));
                }
                None if policy.otherwise == Otherwise::Deny => {
                    return ApprovalDecision::deny(by, "no rule allows it");
                }
                None => {}
            }
        }
        let request = request.clone();
        tokio::task::spawn_blocking(move || ask_terminal(&request))
            .await
            .unwrap_or_else(|e| {
                ApprovalDecision::deny("terminal", format!("the prompt failed: {e}"))
            })
    }
}

/// Asks on `/dev/tty`.
fn ask_terminal(request: &ApprovalRequest) -> ApprovalDecision {
    use std::io::IsTerminal as _;
    if !std::io::stdin().is_terminal() {
        return ApprovalDecision::deny(
            "terminal",
            "this is not an interactive session, so nobody can be asked; approve with `--yes` or a `--policy` file",
        );
    }
    let no_terminal = |e: std::io::Error| {
        ApprovalDecision::deny(
            "terminal",
            format!("there is no terminal to ask ({e}); approve with `--yes` or a `--policy` file"),
        )
    };
    let tty = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    {
        Ok(tty) => tty,
        Err(e) => return no_terminal(e),
    };
    let mut writer = &tty;
    let arguments = serde_json::to_string(&request.arguments).unwrap_or_default();
    let shown: String = arguments.chars().take(2000).collect();
    let prompt = format!(
        "\n{} is privileged: {}\n  arguments: {shown}\nAllow this call? [y/N] ",
        request.tool, request.description
    );
    if let Err(e) = writer
        .write_all(prompt.as_bytes())
        .and_then(|()| writer.flush())
    {
        return no_terminal(e);
    }
    let mut answer = String::new();
    if let Err(e) = std::io::BufReader::new(&tty).read_line(&mut answer) {
        return no_terminal(e);
    }
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => ApprovalDecision::approve("terminal", "the user said yes"),
        _ => ApprovalDecision::deny("terminal", "the user said no"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(json: &str) -> Policy {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn deny_rules_win_then_allow_rules_then_nothing() {
        let p = policy(
            r#"{"allow": ["admin.*", "ops.restart@1.0.0"], "deny": ["admin.drop"], "otherwise": "ask"}"#,
        );
        let r = |s: &str| s.parse::<ToolRef>().unwrap();
        assert_eq!(p.decide(&r("admin.rotate@0.1.0")), Some((true, "admin.*")));
        assert_eq!(
            p.decide(&r("admin.drop@0.1.0")),
            Some((false, "admin.drop"))
        );
        assert_eq!(
            p.decide(&r("ops.restart@1.0.0")),
            Some((true, "ops.restart@1.0.0"))
        );
        assert_eq!(p.decide(&r("ops.restart@2.0.0")), None);
        assert_eq!(p.otherwise, Otherwise::Ask);
        assert_eq!(policy("{}").otherwise, Otherwise::Deny);
    }

    #[test]
    fn a_bad_policy_file_is_refused_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("policy.json");
        std::fs::write(&file, r#"{"allow": ["a*b"]}"#).unwrap();
        let error = format!("{:#}", Policy::read(&file).unwrap_err());
        assert!(error.contains("invalid rule `a*b`"), "{error}");
        std::fs::write(&file, r#"{"permit": []}"#).unwrap();
        let error = format!("{:#}", Policy::read(&file).unwrap_err());
        assert!(
            error.contains("policy.json") && error.contains("permit"),
            "{error}"
        );
        // A repeated key is refused, not read as its last value.
        std::fs::write(&file, r#"{"deny": ["admin.*"], "deny": []}"#).unwrap();
        let error = format!("{:#}", Policy::read(&file).unwrap_err());
        assert!(error.contains("duplicate key \"deny\""), "{error}");
    }
}
