//! Locara's execution pipeline: one path from a tool call to a checked result.
//!
//! A call goes through tower layers, in this order:
//!
//! 1. [`ValidateId`]: the tool reference parses (`id` or `id@version`).
//! 2. [`Resolve`]: the registry finds, verifies and loads the tool ([`Resolver`]).
//! 3. [`CheckCapabilities`]: the composition rule, the tool's capabilities ⊆ the app's grants.
//! 4. [`ValidateInput`]: the arguments against the manifest's `input_schema`.
//! 5. [`RequireApproval`]: a privileged call runs only if the host's [`Approver`] says yes.
//! 6. [`ValidateOutput`]: (on the way back) the result against `output_schema`.
//! 7. [`CapOutput`]: (on the way back, before 6) long output is cut, with a marker.
//! 8. [`Execute`]: the sandbox runs the module under the manifest's limits, with the host
//!    services the call was granted ([`WEB_FETCH`], [`LLM_CHAT`], [`PROGRESS`], [`KV`]; see
//!    [`ServicesConfig`]; and [`TOOLS`], the [`ToolGateway`] a host may serve), and the call's
//!    [`CallContext`] (its user, random seed, progress sink, gateway).
//!
//! Every layer shares one error type, [`ExecError`], reserved for calls that could not run.
//! A tool that ran and failed (a tool error, a trap, an exceeded limit, invalid output) is a
//! [`ToolResult`] whose [`failure`](ToolResult::failure) says what happened, so that an agent
//! sees it as data it can act on.
//!
//! This crate knows manifests, registries and sandboxes, but not agents: the facade owns search,
//! chains and the serializable request/response types.

mod approve;
mod call;
mod cap_output;
mod check_capabilities;
mod config;
mod context;
pub mod depth;
mod error;
mod execute;
mod gateway;
mod host_tool;
mod models;
mod pipeline;
mod resolve;
mod schema;
mod services;
mod validate_id;
mod validate_input;
mod validate_output;

#[cfg(test)]
mod fuzz_regressions;
#[cfg(test)]
mod tests;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

/// A file a tool produced (re-exported from the sandbox).
pub use locara_sandbox::OutputFile;

pub use crate::{
    approve::{ApprovalDecision, ApprovalRequest, Approver, RequireApproval, RequireApprovalLayer},
    call::{
        CallFuture, FailureKind, Grant, ParsedCall, Provenance, ResolvedCall, ResolvedTool,
        RunStats, ToolCall, ToolFailure, ToolResult, Truncation,
    },
    cap_output::{CapOutput, CapOutputLayer},
    check_capabilities::{CheckCapabilities, CheckCapabilitiesLayer},
    config::ExecConfig,
    context::{CallContext, Progress, ProgressEvent, ProgressSink},
    error::{ExecError, SchemaViolation},
    execute::Execute,
    gateway::{GatewayAnswer, TOOLS, ToolGateway},
    host_tool::{HOST_ENGINE, HOST_TOOL_URL, HandlerError, HostTool, ToolHandler},
    models::{MODELS_RUN, Matrix, ModelFile, ModelRunner, Tensor},
    pipeline::{Pipeline, pipeline},
    resolve::{Resolve, ResolveLayer, Resolver},
    services::{
        Egress, HttpClient, HttpRequest, HttpResponse, KV, KV_MAX_KEY, KV_MAX_VALUE, KvStore,
        LLM_CHAT, LlmEndpoint, PROGRESS, ServicesConfig, WEB_FETCH,
    },
    validate_id::{ValidateId, ValidateIdLayer},
    validate_input::{ValidateInput, ValidateInputLayer},
    validate_output::{ValidateOutput, ValidateOutputLayer},
};
