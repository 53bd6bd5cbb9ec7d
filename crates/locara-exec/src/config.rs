//! What the pipeline is built with.

use std::sync::Arc;

use locara_manifest::{EffectiveLimits, Grants};
use locara_sandbox::Sandbox;

use crate::{Approver, Resolver, ServicesConfig};

/// Everything [`pipeline`](crate::pipeline) needs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExecConfig {
    /// Finds and verifies tools.
    pub resolver: Arc<dyn Resolver>,
    /// Runs them.
    pub sandbox: Sandbox,
    /// What the app granted: the upper bound of what any tool gets (the composition rule).
    pub grants: Grants,
    /// The most any tool may get, whatever its manifest asks for. By default, the maxima of
    /// [`EffectiveLimits::MAX`].
    pub max_limits: EffectiveLimits,
    /// The most output, in bytes of compact JSON, returned to the caller; longer strings in the
    /// output are cut with a marker. By default 1 MiB.
    pub output_cap_bytes: usize,
    /// Asked before each privileged call; without one, privileged calls are denied.
    pub approver: Option<Arc<dyn Approver>>,
    /// What the host services wasm tools may call use (an HTTP client, the app's language
    /// model). By default there are none, and every service call fails.
    pub services: ServicesConfig,
}

impl ExecConfig {
    /// A configuration with the default limits and output cap.
    pub fn new(resolver: Arc<dyn Resolver>, sandbox: Sandbox, grants: Grants) -> ExecConfig {
        ExecConfig {
            resolver,
            sandbox,
            grants,
            max_limits: EffectiveLimits::MAX,
            output_cap_bytes: 1 << 20,
            approver: None,
            services: ServicesConfig::default(),
        }
    }

    /// Sets [`ExecConfig::output_cap_bytes`].
    pub fn with_output_cap_bytes(mut self, bytes: usize) -> ExecConfig {
        self.output_cap_bytes = bytes;
        self
    }

    /// Sets the [`Approver`] asked before each privileged call.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> ExecConfig {
        self.approver = Some(approver);
        self
    }

    /// Sets [`ExecConfig::services`].
    pub fn with_services(mut self, services: ServicesConfig) -> ExecConfig {
        self.services = services;
        self
    }

    /// Sets [`ExecConfig::max_limits`].
    pub fn with_max_limits(mut self, limits: EffectiveLimits) -> ExecConfig {
        self.max_limits = limits;
        self
    }
}
