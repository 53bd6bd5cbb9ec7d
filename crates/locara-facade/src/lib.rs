//! Locara's one entry point for hosts and agents.
//!
//! [`Locara`] is built from a [`LocaraConfig`] and offers what an agent needs:
//! [`search_tools`](Locara::search_tools), [`describe`](Locara::describe),
//! [`run`](Locara::run) and [`run_chain`](Locara::run_chain). It also speaks the OpenAI and
//! Anthropic tool-calling formats: [`export_tools`](Locara::export_tools),
//! [`requests_from_tool_calls`](Locara::requests_from_tool_calls) and
//! [`tool_result_message`]; and [`chat`](Locara::chat) runs the LLM tool loop: it carries a
//! conversation on with a model, running the tools it calls, until it answers. Requests and
//! responses are plain data that serialize to the JSON an agent sees; errors carry a code, a
//! message, a hint and, for schema errors, the failing JSON pointers.
//!
//! The facade implements little itself: verification is `locara-registry`'s, the pipeline
//! `locara-exec`'s, the engines `locara-sandbox`'s. It never exposes an engine type.
//!
//! ```no_run
//! # async fn demo() -> Result<(), locara_facade::Error> {
//! use locara_facade::{Locara, LocaraConfig, RunRequest};
//! use serde_json::json;
//!
//! let locara = Locara::new(&LocaraConfig::new(".locara"))?;
//! for hit in locara.search_tools("split text into chunks", 3) {
//!     println!("{} {:?}", hit.tool, hit.score);
//! }
//! let response = locara.run(RunRequest::new("text.chunk", json!({"text": "One. Two.", "max_chars": 5}))).await?;
//! assert!(response.ok, "{:?}", response.error);
//! # Ok(())
//! # }
//! ```

mod batch;
mod chain;
mod chat;
mod codegen;
mod error;
mod files;
mod formats;
mod gateway;
mod kv;
mod locara;
#[cfg(feature = "memory")]
mod meaning;
mod receipt;
mod search;
mod types;

#[cfg(test)]
mod fuzz_regressions;
#[cfg(test)]
mod tests;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

pub use crate::{
    codegen::{ApiLanguage, javascript_name, python_name},
    gateway::GatewayLimits,
};
pub use locara_exec::{
    ApprovalDecision, ApprovalRequest, Approver, CallContext, Egress, HandlerError, HostTool,
    HttpClient, HttpRequest, HttpResponse, KV, LLM_CHAT, LlmEndpoint, MODELS_RUN, Matrix,
    ModelFile, ModelRunner, PROGRESS, Progress, ProgressEvent, ProgressSink, ServicesConfig, TOOLS,
    Tensor, ToolHandler, WEB_FETCH,
};
pub use locara_manifest::{AppManifest, FsGrant, Grants, SafetyTier, ToolManifest, ToolRef};
#[cfg(feature = "memory")]
pub use locara_memory::HybridWeights;
pub use locara_registry::{SignedReceipt, SigningKey};
pub use locara_sandbox::BackendKind;

pub use crate::{
    chat::{
        ChatEvent, ChatModel, ChatRequest, ChatResponse, ChatStep, ChatToolCall, OfferedTool,
        StopReason, TokenUsage,
    },
    error::Error,
    formats::{
        ToolCallRequest, ToolFormat, tool_call_name, tool_result_message, tool_results_reply,
    },
    locara::{Locara, LocaraConfig},
    receipt::{RECEIPT_FORMAT, digest as receipt_digest},
    types::{
        ApprovalReport, BatchRequest, BatchResponse, BatchResult, ChainRequest, ChainResponse,
        ChainStep, ErrorReport, FileReport, InnerCallReport, LimitsReport, Receipt, ReceiptFile,
        RunRequest, RunResponse, StatsReport, StepTrace, ToolDescription, ToolSummary,
        TruncationReport, ViolationReport,
    },
};
