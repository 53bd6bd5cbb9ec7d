//! The chat loop's request and response: plain data, the transcript a host keeps or shows.

use std::{path::PathBuf, time::Duration};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{ErrorReport, RunResponse, ToolFormat};

/// A language model the chat loop talks to: an API base, a model name and the format the API
/// speaks.
///
/// Requests go to `<base_url>/chat/completions` for [`ToolFormat::OpenAi`] (any
/// OpenAI-compatible server: OpenAI, llama.cpp's `llama-server`, vLLM, Ollama…) and to
/// `<base_url>/messages` for [`ToolFormat::Anthropic`] (base `https://api.anthropic.com/v1`).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChatModel {
    /// The API's format.
    pub format: ToolFormat,
    /// The API base, e.g. `http://127.0.0.1:8080/v1` or `https://api.openai.com/v1`.
    pub base_url: String,
    /// The model named in each request.
    pub model: String,
    /// Sent as `Authorization: Bearer <key>` (OpenAI) or `x-api-key` (Anthropic) when set.
    pub api_key: Option<String>,
}

impl ChatModel {
    /// The model `model` behind the API at `base_url`, speaking `format`, without an API key.
    pub fn new(format: ToolFormat, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ChatModel {
            format,
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
        }
    }

    /// The app's language model ([`crate::LocaraConfig::with_llm`]): an OpenAI-compatible
    /// endpoint.
    pub fn from_llm(llm: &crate::LlmEndpoint) -> ChatModel {
        ChatModel {
            format: ToolFormat::OpenAi,
            base_url: llm.base_url.clone(),
            model: llm.model.clone(),
            api_key: llm.api_key.clone(),
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> ChatModel {
        self.api_key = Some(key.into());
        self
    }
}

impl std::fmt::Debug for ChatModel {
    /// Never shows the API key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatModel")
            .field("format", &self.format)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .finish()
    }
}

/// A conversation to carry on with a model, offering it tools (see
/// [`Locara::chat`](crate::Locara::chat)).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The model. By default the app's language model ([`crate::LocaraConfig::with_llm`]), in
    /// the OpenAI format.
    pub model: Option<ChatModel>,
    /// The system prompt, sent as the first `system` message (OpenAI) or as `system`
    /// (Anthropic).
    pub system: Option<String>,
    /// The conversation so far, in the model's format; the last message is usually the user's.
    /// `{"role": "user", "content": "…"}` is valid in both formats, and a transcript's
    /// [`ChatResponse::messages`] carries a conversation on.
    pub messages: Vec<Value>,
    /// The tools offered: ids (`text.chunk`) or globs over ids (`filesystem.*`, `*` for every
    /// callable tool). Empty offers none. By default `["*"]`.
    pub tools: Vec<String>,
    /// The most times the model is asked. The tool calls the model makes in its last allowed
    /// turn are not run (their results say so), since it would not read them. By default 8.
    pub max_steps: usize,
    /// The most tokens the model may use over the whole chat, input and output of every turn
    /// as its API reports them (each turn re-reads the conversation). Each turn's output is
    /// also capped at what is left. By default none.
    pub max_tokens: Option<u64>,
    /// The most time the whole chat may take, model and tools together; a model request or
    /// tool call still running then is cancelled. By default none.
    pub timeout: Option<Duration>,
    /// The most tokens of one answer (`max_tokens` in each request). By default 1024.
    pub max_output_tokens: u32,
    /// Sampling temperature. By default the API's.
    pub temperature: Option<f64>,
    /// Sampling seed, for servers that take one (OpenAI-compatible ones). By default none.
    pub seed: Option<u64>,
    /// The directory every tool call sees at `/workspace`.
    pub workspace: Option<PathBuf>,
    /// Where tools write the files they produce (see [`crate::RunRequest::output_dir`]).
    pub output_dir: Option<PathBuf>,
    /// Ask for a signed receipt of every tool call ([`crate::RunRequest::receipt`]).
    pub receipts: bool,
}

impl ChatRequest {
    /// A chat that asks `prompt` as the user, with every callable tool offered and every other
    /// option at its default.
    pub fn new(prompt: impl Into<String>) -> ChatRequest {
        ChatRequest::with_messages(vec![json!({"role": "user", "content": prompt.into()})])
    }

    /// A chat that carries on `messages` (in the model's format).
    pub fn with_messages(messages: Vec<Value>) -> ChatRequest {
        ChatRequest {
            model: None,
            system: None,
            messages,
            tools: vec!["*".to_owned()],
            max_steps: 8,
            max_tokens: None,
            timeout: None,
            max_output_tokens: 1024,
            temperature: None,
            seed: None,
            workspace: None,
            output_dir: None,
            receipts: false,
        }
    }

    /// Sets the model.
    pub fn with_model(mut self, model: ChatModel) -> ChatRequest {
        self.model = Some(model);
        self
    }

    /// Sets the system prompt.
    pub fn with_system(mut self, system: impl Into<String>) -> ChatRequest {
        self.system = Some(system.into());
        self
    }

    /// Offers these tools (ids or globs) instead of every callable one.
    pub fn with_tools<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the most times the model is asked.
    pub fn with_max_steps(mut self, steps: usize) -> ChatRequest {
        self.max_steps = steps;
        self
    }

    /// Sets the token budget of the whole chat.
    pub fn with_max_tokens(mut self, tokens: u64) -> ChatRequest {
        self.max_tokens = Some(tokens);
        self
    }

    /// Sets the wall-clock budget of the whole chat.
    pub fn with_timeout(mut self, timeout: Duration) -> ChatRequest {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the most tokens of one answer.
    pub fn with_max_output_tokens(mut self, tokens: u32) -> ChatRequest {
        self.max_output_tokens = tokens;
        self
    }

    /// Sets the sampling temperature.
    pub fn with_temperature(mut self, temperature: f64) -> ChatRequest {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the sampling seed.
    pub fn with_seed(mut self, seed: u64) -> ChatRequest {
        self.seed = Some(seed);
        self
    }

    /// Selects the directory tool calls see at `/workspace`.
    pub fn with_workspace(mut self, dir: impl Into<PathBuf>) -> ChatRequest {
        self.workspace = Some(dir.into());
        self
    }

    /// Writes the files tools produce into `dir`.
    pub fn with_output_dir(mut self, dir: impl Into<PathBuf>) -> ChatRequest {
        self.output_dir = Some(dir.into());
        self
    }

    /// Asks for a signed receipt of every tool call.
    pub fn with_receipts(mut self) -> ChatRequest {
        self.receipts = true;
        self
    }
}

/// Why a chat ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// The model answered without calling a tool.
    FinalAnswer,
    /// The model was asked [`ChatRequest::max_steps`] times and still called tools.
    MaxSteps,
    /// The token budget ([`ChatRequest::max_tokens`]) is spent.
    TokenBudget,
    /// The wall-clock budget ([`ChatRequest::timeout`]) ran out.
    TimeBudget,
    /// The model's API failed or answered something unreadable ([`ChatResponse::error`]).
    ModelError,
}

impl StopReason {
    /// The reason's name, as in JSON: `final_answer`, `max_steps`, `token_budget`,
    /// `time_budget` or `model_error`.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::FinalAnswer => "final_answer",
            StopReason::MaxSteps => "max_steps",
            StopReason::TokenBudget => "token_budget",
            StopReason::TimeBudget => "time_budget",
            StopReason::ModelError => "model_error",
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Tokens, as the model's API counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TokenUsage {
    /// Tokens read (the prompt, including cached ones).
    pub input_tokens: u64,
    /// Tokens written.
    pub output_tokens: u64,
}

impl TokenUsage {
    /// Input and output together.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    pub(crate) fn add(&mut self, other: TokenUsage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// The whole chat: how it ended, the answer, and every turn and tool call on the way. It
/// serializes to the transcript `locara chat --transcript FILE` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatResponse {
    /// Why the chat ended.
    pub stop_reason: StopReason,
    /// The model's final answer, when it gave one ([`StopReason::FinalAnswer`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub answer: Option<String>,
    /// What failed, for [`StopReason::ModelError`]; what ran out, for a budget.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<ErrorReport>,
    /// The API format.
    pub format: ToolFormat,
    /// The model, as named in the requests.
    pub model: String,
    /// The system prompt.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub system: Option<String>,
    /// The names of the tools offered (as the model calls them) and their ids.
    pub tools: Vec<OfferedTool>,
    /// The whole conversation in the model's format: the request's messages, each answer of
    /// the model, and the results of its tool calls (each call answered, even one that did not
    /// run). Send it back as [`ChatRequest::messages`] to carry on.
    pub messages: Vec<Value>,
    /// One per time the model was asked.
    pub steps: Vec<ChatStep>,
    /// Tokens used over every turn, as the API reported them.
    pub usage: TokenUsage,
    /// How long the chat took, in milliseconds.
    pub elapsed_ms: f64,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OfferedTool {
    /// The function name the model calls it by (`text_chunk`).
    pub name: String,
    /// The tool's id (`text.chunk`).
    pub id: String,
}

/// One turn: the model was asked, answered, and its tool calls ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatStep {
    /// 1 for the first time the model was asked.
    pub step: usize,
    /// What the model wrote besides its tool calls.
    pub text: String,
    /// Why the model stopped writing, as its API says (`stop`, `tool_calls`, `end_turn`,
    /// `tool_use`, `length`, `max_tokens`…).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub finish_reason: Option<String>,
    /// This turn's tokens, when the API reported them.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub usage: Option<TokenUsage>,
    /// How long the model took to answer, in milliseconds.
    pub model_ms: f64,
    /// The tool calls the model made, in its order.
    pub calls: Vec<ChatToolCall>,
}

/// A tool call the model made, and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatToolCall {
    /// The call's id, as the model gave it.
    pub call_id: String,
    /// The function name the model called.
    pub name: String,
    /// The tool that name stands for, when it stands for one offered.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tool: Option<String>,
    /// The arguments: a JSON object, or the model's text when it was not one.
    pub arguments: Value,
    /// `read_only` calls of one turn run concurrently; the others one at a time, in order.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub safety_tier: Option<String>,
    /// Whether the tool ran and succeeded.
    pub ok: bool,
    /// The tool's response, when it ran (`ok: false` when it ran and failed).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub response: Option<RunResponse>,
    /// Why it did not run: a malformed call (`invalid_tool_call`), an unknown tool
    /// (`not_found`), a refusal of the pipeline (`invalid_input`, `capability_denied`,
    /// `approval_denied`…), or a budget (`not_run`, `cancelled`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<ErrorReport>,
    /// The text the model was given as the call's result.
    pub result: String,
    /// When the call started, in milliseconds since the chat started.
    pub started_ms: f64,
    /// How long it took, in milliseconds.
    pub elapsed_ms: f64,
}

/// What happens during a chat, as it happens (see [`Locara::chat_with`](crate::Locara::chat_with)).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum ChatEvent<'a> {
    /// The model is about to be asked, for the `step`th time.
    Step {
        /// 1 for the first time.
        step: usize,
    },
    /// A piece of the model's text, as it arrives.
    Text {
        /// The turn.
        step: usize,
        /// The piece.
        text: &'a str,
    },
    /// A tool call ended (or was answered without running).
    ToolCall {
        /// The turn.
        step: usize,
        /// The call and its outcome.
        call: &'a ChatToolCall,
    },
}
