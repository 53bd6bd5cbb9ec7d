//! Finds and verifies the tool a call names.

mod layer;

use std::{
    collections::HashMap,
    fmt,
    sync::{Arc, Mutex},
    task::{Context, Poll},
};

use std::path::PathBuf;

use locara_manifest::{ToolManifest, ToolRef};
use locara_registry::{Registry, VerifiedArtifact};
use tower::Service;

pub use self::layer::ResolveLayer;
use crate::{CallFuture, ExecError, HostTool, ParsedCall, ResolvedCall, ResolvedTool, ToolResult};

/// Finds a tool and verifies it: its signature, its key, its hash, and the lockfile.
///
/// [`Registry`] is the implementation; a host that adds tools from elsewhere (app-shipped
/// tools, say) wraps it. Implementations may block (they read and hash files): the pipeline
/// calls them on a blocking thread.
pub trait Resolver: Send + Sync + fmt::Debug + 'static {
    /// The verified tool `tool` names.
    ///
    /// # Errors
    /// Whatever the registry refuses, with its reason.
    fn resolve(&self, tool: &ToolRef) -> Result<VerifiedArtifact, locara_registry::Error>;

    /// The directory holding the verified models `tool` depends on, under the names its
    /// manifest gives them; `None` for a tool without models. The tool sees it read-only at
    /// `/models`.
    ///
    /// # Errors
    /// A missing model or one that does not match its pin, naming the command that fetches it.
    fn models(&self, tool: &ToolManifest) -> Result<Option<PathBuf>, locara_registry::Error>;

    /// The in-process tool `tool` names, when the host registered one; it takes precedence over
    /// the registry. By default there are none.
    fn host_tool(&self, tool: &ToolRef) -> Option<HostTool> {
        let _ = tool;
        None
    }
}

impl Resolver for Registry {
    fn resolve(&self, tool: &ToolRef) -> Result<VerifiedArtifact, locara_registry::Error> {
        Registry::resolve(self, tool)
    }

    fn models(&self, tool: &ToolManifest) -> Result<Option<PathBuf>, locara_registry::Error> {
        self.models().view(tool)
    }
}

/// Turns a [`ParsedCall`] into a [`ResolvedCall`].
///
/// A tool is verified the first time this service (or a clone of it) resolves its reference;
/// later calls reuse the verified bytes, so a file replaced on disk afterwards is never run
/// (and never compiled) in this process.
#[derive(Debug, Clone)]
pub struct Resolve<S> {
    inner: S,
    resolver: Arc<dyn Resolver>,
    verified: Arc<Mutex<HashMap<ToolRef, Verified>>>,
}

/// A verified tool and the directory of its verified models.
type Verified = (VerifiedArtifact, Option<PathBuf>);

impl<S> Resolve<S> {
    /// Wraps `inner`, resolving with `resolver`.
    pub fn new(inner: S, resolver: Arc<dyn Resolver>) -> Resolve<S> {
        Resolve {
            inner,
            resolver,
            verified: Arc::default(),
        }
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

impl<S> Service<ParsedCall> for Resolve<S>
where
    S: Service<ResolvedCall, Response = ToolResult, Error = ExecError, Future = CallFuture>
        + Clone
        + Send
        + 'static,
{
    type Response = ToolResult;
    type Error = ExecError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ExecError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: ParsedCall) -> CallFuture {
        // A host tool, or one verified before (every call after a tool's first), goes straight
        // to the inner service, called now: its future is this call's, with no future of this
        // layer's own to allocate and move, and no clone of the services below.
        if let Some(tool) = self.resolver.host_tool(&call.tool) {
            return self.inner.call(resolved(call, tool, None));
        }
        let cached = self
            .verified
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&call.tool)
            .cloned();
        if let Some((artifact, models)) = cached {
            return self.inner.call(resolved(call, artifact, models));
        }
        // The inner service is called only once the tool is verified: the one polled ready
        // goes with the future, and a clone (not ready) stays here (tower's rule for a service
        // that awaits before calling inward).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let resolver = Arc::clone(&self.resolver);
        let verified = Arc::clone(&self.verified);
        Box::pin(async move {
            let tool = call.tool.clone();
            let (artifact, models) = tokio::task::spawn_blocking(move || {
                let artifact = resolver.resolve(&tool)?;
                let models = resolver.models(artifact.manifest())?;
                Ok::<_, locara_registry::Error>((artifact, models))
            })
            .await
            .map_err(|e| ExecError::Cancelled(e.to_string()))??;
            verified
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(call.tool.clone(), (artifact.clone(), models.clone()));
            inner.call(resolved(call, artifact, models)).await
        })
    }
}

/// `call` as a call of `tool`, whose verified models (if any) are in `models`.
fn resolved(
    call: ParsedCall,
    tool: impl Into<ResolvedTool>,
    models: Option<PathBuf>,
) -> ResolvedCall {
    let mut resolved =
        ResolvedCall::new(tool, call.arguments, call.workspace).with_context(call.context);
    resolved.models = models;
    resolved
}
