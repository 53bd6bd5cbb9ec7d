//! The composition rule: a tool gets what its manifest declares, and never more than the app
//! was granted.

mod layer;

use std::{
    path::Path,
    sync::Arc,
    task::{Context, Poll},
};

use locara_manifest::{Grants, SafetyTier, UserDirAccess};
use locara_sandbox::DirPerms;
use tower::Service;

pub use self::layer::CheckCapabilitiesLayer;
use crate::{CallFuture, ExecError, Grant, ResolvedCall, ToolResult};

/// Checks a [`ResolvedCall`] against the app's [`Grants`] and fills in its [`Grant`].
#[derive(Debug, Clone)]
pub struct CheckCapabilities<S> {
    inner: S,
    grants: Arc<Grants>,
}

impl<S> CheckCapabilities<S> {
    /// Wraps `inner`, checking against `grants`.
    pub fn new(inner: S, grants: Arc<Grants>) -> CheckCapabilities<S> {
        CheckCapabilities { inner, grants }
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Unwraps the service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> Service<ResolvedCall> for CheckCapabilities<S>
where
    S: Service<ResolvedCall, Response = ToolResult, Error = ExecError, Future = CallFuture>
        + Send
        + 'static,
{
    type Response = ToolResult;
    type Error = ExecError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ExecError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut call: ResolvedCall) -> CallFuture {
        match check(&call, &self.grants) {
            Ok(grant) => {
                call.grant = grant;
                self.inner.call(call)
            }
            Err(error) => Box::pin(async move { Err(error) }),
        }
    }
}

/// Applies the composition rule to one call.
pub(crate) fn check(call: &ResolvedCall, grants: &Grants) -> Result<Grant, ExecError> {
    let manifest = call.tool.manifest();
    // The tool's name is only written out when a call is refused.
    let denied = |capability: String, reason: String| ExecError::CapabilityDenied {
        tool: manifest.tool_ref().to_string(),
        capability,
        reason,
    };

    if manifest.safety_tier > grants.max_safety_tier {
        return Err(denied(
            format!("the {} safety tier", tier(manifest.safety_tier)),
            format!(
                "is above the app's maximum, {}",
                tier(grants.max_safety_tier)
            ),
        ));
    }
    for service in &manifest.capability_requirements {
        // Reporting progress, calling tools and running models on the host are optional: a
        // tool that declares them runs without the grant, and the service then refuses its
        // requests (progress reports go nowhere; a program's tool call fails, saying the app
        // did not grant `tools`; a tool runs its models itself).
        if service == crate::services::PROGRESS
            || service == crate::gateway::TOOLS
            || service == crate::MODELS_RUN
        {
            continue;
        }
        if !grants.services.contains(service) {
            return Err(denied(
                format!("the host service `{service}`"),
                "the app did not grant".to_owned(),
            ));
        }
    }
    let declares = |service: &str| {
        manifest
            .capability_requirements
            .iter()
            .any(|s| s == service)
    };
    let app_hosts = &grants.net.allowed_hosts;
    for host in &manifest.wasi_imports.net.allowed_hosts {
        if host == "*" && app_hosts.is_empty() {
            return Err(denied(
                "network access (to any host the app allows)".to_owned(),
                "was not given: the app allows no network hosts (`grants.net.allowed_hosts`)"
                    .to_owned(),
            ));
        }
        if host != "*" && !crate::services::host_allowed(app_hosts, host) {
            return Err(denied(
                format!("network access to {host}"),
                "is not among the app's allowed hosts".to_owned(),
            ));
        }
    }
    Ok(Grant {
        workspace: workspace(call, grants, &denied)?,
        hosts: crate::services::effective_hosts(
            &manifest.wasi_imports.net.allowed_hosts,
            app_hosts,
        ),
        // The app's own: a tool asking for `127.0.0.1` from an app that grants `*` gets the
        // name, not the loopback address.
        addresses: app_hosts
            .iter()
            .filter(|h| locara_manifest::NetAccess::names_addresses(h))
            .cloned()
            .collect(),
        llm: declares(crate::services::LLM_CHAT),
        progress: declares(crate::services::PROGRESS)
            && grants
                .services
                .iter()
                .any(|s| s == crate::services::PROGRESS),
        kv: declares(crate::services::KV),
        tools: declares(crate::gateway::TOOLS)
            && grants.services.iter().any(|s| s == crate::gateway::TOOLS),
        models: declares(crate::MODELS_RUN)
            && grants.services.iter().any(|s| s == crate::MODELS_RUN),
    })
}

/// The workspace directory the call gets, if its tool asks for one.
fn workspace(
    call: &ResolvedCall,
    grants: &Grants,
    denied: &dyn Fn(String, String) -> ExecError,
) -> Result<Option<(std::path::PathBuf, std::path::PathBuf, DirPerms)>, ExecError> {
    let manifest = call.tool.manifest();
    let wants_write = match manifest.wasi_imports.fs.user_dir {
        UserDirAccess::None => return Ok(None),
        UserDirAccess::Read => false,
        UserDirAccess::ReadWrite => true,
    };
    let access = if wants_write {
        "read-write access to a workspace directory"
    } else {
        "a workspace directory"
    };
    let Some(selected) = &call.workspace else {
        // A tool that takes files as arguments runs without a workspace when every file comes
        // by value (`{"base64": …}`): only a file named by path needs one.
        let by_path = crate::execute::file_arguments(manifest)
            .filter(|name| {
                call.arguments
                    .get(name)
                    .and_then(|v| v.get("path"))
                    .is_some()
            })
            .collect::<Vec<_>>();
        let has_files = crate::execute::file_arguments(manifest).next().is_some();
        if has_files && !wants_write && by_path.is_empty() {
            return Ok(None);
        }
        if let Some(name) = by_path.first() {
            return Err(denied(
                access.to_owned(),
                format!(
                    "was not given, and the file argument `{name}` names a path in it: select the directory (`--dir DIR` on the command line), or pass the file's bytes as {{\"base64\": …}}"
                ),
            ));
        }
        return Err(denied(
            access.to_owned(),
            "was not given: select one for the call (`--dir DIR` on the command line)".to_owned(),
        ));
    };
    let dir = std::fs::canonicalize(selected)
        .ok()
        .filter(|d| d.is_dir())
        .ok_or_else(|| {
            denied(
                access.to_owned(),
                format!(
                    "cannot use {}: it is not an existing directory",
                    selected.display()
                ),
            )
        })?;
    let (root, grant) = grants
        .fs
        .iter()
        .filter_map(|g| Some((std::fs::canonicalize(&g.path).ok()?, g)))
        .filter(|(root, _)| dir.starts_with(root))
        .max_by_key(|(_, g)| g.write)
        .ok_or_else(|| {
            denied(
                format!("access to {}", dir.display()),
                "is not inside any directory the app granted (`grants.fs` in locara.json)"
                    .to_owned(),
            )
        })?;
    if wants_write && !grant.write {
        return Err(denied(
            format!("write access to {}", dir.display()),
            format!("the app granted read-only (grant {})", display(&grant.path)),
        ));
    }
    let perms = if wants_write {
        DirPerms::ReadWrite
    } else {
        DirPerms::ReadOnly
    };
    Ok(Some((dir, root, perms)))
}

/// The tier's wire name, e.g. `side_effecting`.
fn tier(tier: SafetyTier) -> String {
    serde_json::to_value(tier)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{tier:?}"))
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
