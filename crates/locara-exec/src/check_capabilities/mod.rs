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
    S: Service<ResolvedCall, Response = ToolResult, Error = ExecError> + Send + 'static,
    S::Future: Send + 'static,
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
                Box::pin(self.inner.call(call))
            }
            Err(error) => Box::pin(async move { Err(error) }),
        }
    }
}

/// Applies the composition rule to one call.
pub(crate) fn check(call: &ResolvedCall, grants: &Grants) -> Result<Grant, ExecError> {
    let manifest = call.tool.manifest();
    let tool = manifest.tool_ref().to_string();
    let denied = |capability: String, reason: String| ExecError::CapabilityDenied {
        tool: tool.clone(),
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
        if !grants.services.contains(service) {
            return Err(denied(
                format!("the host service `{service}`"),
                "the app did not grant".to_owned(),
            ));
        }
    }
    for host in &manifest.wasi_imports.net.allowed_hosts {
        if !grants.net.allowed_hosts.contains(host) {
            return Err(denied(
                format!("network access to {host}"),
                "is not among the app's allowed hosts".to_owned(),
            ));
        }
    }
    // An in-process tool (an HTTP provider, say) makes its own connections; a wasm tool gets
    // no sockets from this sandbox.
    let in_process = matches!(call.tool, crate::ResolvedTool::Host(_));
    if !in_process && !manifest.wasi_imports.net.allowed_hosts.is_empty() {
        return Err(denied(
            "network access".to_owned(),
            "this version of the sandbox does not provide to wasm tools".to_owned(),
        ));
    }

    let wants_write = match manifest.wasi_imports.fs.user_dir {
        UserDirAccess::None => return Ok(Grant::default()),
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
            return Ok(Grant::default());
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
    let grant = grants
        .fs
        .iter()
        .filter(|g| std::fs::canonicalize(&g.path).is_ok_and(|root| dir.starts_with(root)))
        .max_by_key(|g| g.write)
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
    Ok(Grant {
        workspace: Some((dir, perms)),
    })
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
