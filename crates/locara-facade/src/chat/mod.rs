//! The LLM tool loop: [`Locara::chat`] carries a conversation on with a language model, runs
//! the tools it calls through the pipeline, and hands their results back until it answers.
//!
//! Each step asks the model once (streamed: its text reaches [`ChatEvent::Text`] as it
//! arrives), then runs the tool calls of its answer like a batch: consecutive read-only calls
//! concurrently, any other call alone and in order, privileged ones through the approver (the
//! pipeline asks it). Every call is answered, in the model's format: the tool's output as JSON,
//! or the error report (code, message, hint, violations) of a tool that failed, a call the
//! pipeline refused, or a call that could not become one (an unknown name, arguments that are
//! not a JSON object), so the model can correct itself. The loop stops at an answer without
//! tool calls, or when a budget runs out (`max_steps`, tokens, wall-clock time), and says which
//! ([`StopReason`]).
//!
//! The wire formats (`openai.rs`, `anthropic.rs`, over `sse.rs` and `wire.rs`) are apart from
//! the loop; tool names are `formats.rs`'s (`text.chunk` is `text_chunk`, resolved back through
//! the offered tools). The model is reached through the app's [`HttpClient`], as an endpoint
//! the app configured ([`locara_exec::Egress::Configured`]).

mod anthropic;
mod openai;
mod sse;
mod types;
mod wire;

#[cfg(test)]
mod tests;

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
    time::Instant,
};

use locara_exec::HttpClient;
use locara_manifest::SafetyTier;
use serde_json::Value;
use tokio::time::Instant as Deadline;

pub use self::types::{
    ChatEvent, ChatModel, ChatRequest, ChatResponse, ChatStep, ChatToolCall, OfferedTool,
    StopReason, TokenUsage,
};
use crate::{
    Error, Locara, RunRequest, RunResponse, ToolDescription,
    batch::segments,
    formats::{self, Names, ToolCallRequest, export, tool_call_name, tool_results_reply},
    locara::tier_name,
};

impl Locara {
    /// Carries `request`'s conversation on with its model, offering it the tools the request
    /// names, until the model answers or a budget runs out. See [`Locara::chat_with`].
    ///
    /// # Errors
    /// As [`Locara::chat_with`].
    pub async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, Error> {
        self.chat_with(request, &|_| {}).await
    }

    /// Like [`Locara::chat`], telling `on_event` what happens as it happens: each step, the
    /// model's text as it arrives, and each tool call when it ends.
    ///
    /// The response is the whole transcript. A model that cannot be reached or answers with an
    /// error mid-way ends the chat with [`StopReason::ModelError`] and the report in
    /// [`ChatResponse::error`], keeping what came before.
    ///
    /// # Errors
    /// Only when the chat cannot start: `no_model` (no model in the request and no language
    /// model configured), `invalid_model` (its URL is not http or https), `no_http_client`,
    /// `invalid_request` (no messages, `max_steps` 0), `receipt_unavailable` (receipts asked for
    /// without a receipt key), `not_found` (a tool pattern that matches no callable tool),
    /// `name_collision` (two offered tools would share a name).
    pub async fn chat_with(
        &self,
        request: ChatRequest,
        on_event: &(dyn Fn(ChatEvent<'_>) + Send + Sync),
    ) -> Result<ChatResponse, Error> {
        let started = Instant::now();
        let model = match (&request.model, &self.shared.services.llm) {
            (Some(model), _) => model.clone(),
            (None, Some(llm)) => ChatModel::from_llm(llm),
            (None, None) => {
                return Err(Error::new(
                    "no_model",
                    "no language model to chat with",
                    "name one in the request (ChatRequest::with_model), or configure the app's (LocaraConfig::with_llm; `--llm URL` on the command line)",
                ));
            }
        };
        let url = wire::url(&model)?;
        let Some(http) = self.shared.services.http.clone() else {
            return Err(Error::new(
                "no_http_client",
                "this host has no HTTP client to reach the model with",
                "configure one with LocaraConfig::with_http_client",
            ));
        };
        if request.messages.is_empty() {
            return Err(Error::new(
                "invalid_request",
                "the chat has no message",
                "start it with the user's message, e.g. ChatRequest::new(\"…\")",
            ));
        }
        if request.receipts && self.shared.receipt_key.is_none() {
            return Err(Error::new(
                "receipt_unavailable",
                "receipts were asked for, but this host has no receipt key",
                "chat without receipts, or configure a receipt key (LocaraConfig::with_receipt_key)",
            ));
        }
        if request.max_steps == 0 {
            return Err(Error::new(
                "invalid_request",
                "max_steps is 0: the model could not be asked even once",
                "allow at least one step",
            ));
        }
        let offered = self.offered_tools(&request.tools)?;
        let descriptions: Vec<ToolDescription> = offered
            .iter()
            .filter_map(|id| self.describe(id).ok())
            .collect();
        let definitions = export(&descriptions, model.format)?;
        let names = Names::new(offered.iter().cloned());

        let deadline = request.timeout.map(|t| Deadline::now() + t);
        let mut chat = Chat {
            locara: self,
            http,
            url,
            request: &request,
            model: &model,
            definitions,
            names,
            on_event,
            started,
            deadline,
            messages: request.messages.clone(),
            steps: Vec::new(),
            usage: TokenUsage::default(),
        };
        let (stop_reason, answer, error) = chat.run().await;
        Ok(ChatResponse {
            stop_reason,
            answer,
            error: error.map(|e| e.report().clone()),
            format: model.format,
            model: model.model.clone(),
            system: request.system.clone(),
            tools: offered
                .iter()
                .map(|id| OfferedTool {
                    name: tool_call_name(id),
                    id: id.clone(),
                })
                .collect(),
            messages: chat.messages,
            steps: chat.steps,
            usage: chat.usage,
            elapsed_ms: millis(started.elapsed()),
        })
    }

    /// The callable tool ids `patterns` (ids or globs) name, each once, sorted.
    fn offered_tools(&self, patterns: &[String]) -> Result<Vec<String>, Error> {
        let ids = self.callable_ids();
        let mut chosen = BTreeSet::new();
        for pattern in patterns {
            let pattern = pattern.trim();
            let before = chosen.len();
            let mut matched = false;
            for id in ids.iter().filter(|id| glob(pattern, id)) {
                matched = true;
                chosen.insert(id.clone());
            }
            if !matched && chosen.len() == before {
                return Err(Error::new(
                    "not_found",
                    format!(
                        "no callable tool matches `{pattern}`; the callable tools are: {}",
                        ids.join(", ")
                    ),
                    "offer tools by id (text.chunk) or by a glob over ids (filesystem.*, * for all)",
                ));
            }
        }
        Ok(chosen.into_iter().collect())
    }
}

/// Whether `id` matches `pattern`, where `*` stands for any run of characters and `?` for one.
fn glob(pattern: &str, id: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pattern.chars().collect(), id.chars().collect());
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((star_p, star_s)) = star {
            pi = star_p + 1;
            si = star_s + 1;
            star = Some((star_p, star_s + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn millis(duration: std::time::Duration) -> f64 {
    (duration.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

/// A chat under way.
struct Chat<'a> {
    locara: &'a Locara,
    http: Arc<dyn HttpClient>,
    url: url::Url,
    request: &'a ChatRequest,
    model: &'a ChatModel,
    definitions: Vec<Value>,
    names: Names,
    on_event: &'a (dyn Fn(ChatEvent<'_>) + Send + Sync),
    started: Instant,
    deadline: Option<Deadline>,
    messages: Vec<Value>,
    steps: Vec<ChatStep>,
    usage: TokenUsage,
}

/// How a call of the current turn is to be answered when it does not run.
struct NotRun {
    code: &'static str,
    message: String,
    hint: &'static str,
}

impl Chat<'_> {
    /// Asks and runs until the chat ends: why, the answer, and the error of a model failure.
    async fn run(&mut self) -> (StopReason, Option<String>, Option<Error>) {
        let request = self.request;
        for step in 1..=request.max_steps {
            // What the token budget leaves for this answer.
            let mut max_tokens = request.max_output_tokens.max(1);
            if let Some(budget) = request.max_tokens {
                let left = budget.saturating_sub(self.usage.total());
                if left == 0 {
                    return self.budget_stop(StopReason::TokenBudget);
                }
                max_tokens = max_tokens.min(u32::try_from(left).unwrap_or(u32::MAX));
            }
            if self.deadline.is_some_and(|d| Deadline::now() >= d) {
                return self.budget_stop(StopReason::TimeBudget);
            }
            (self.on_event)(ChatEvent::Step { step });
            let asked = Instant::now();
            let params = wire::Params {
                model: self.model,
                system: request.system.as_deref(),
                messages: &self.messages,
                tools: &self.definitions,
                max_tokens,
                temperature: request.temperature,
                seed: request.seed,
            };
            let on_event = self.on_event;
            let mut on_text = |text: &str| on_event(ChatEvent::Text { step, text });
            let asking = wire::ask(&*self.http, &self.url, &params, &mut on_text);
            let turn = match self.deadline {
                Some(deadline) => match tokio::time::timeout_at(deadline, asking).await {
                    Ok(turn) => turn,
                    Err(_) => return self.budget_stop(StopReason::TimeBudget),
                },
                None => asking.await,
            };
            let turn = match turn {
                Ok(turn) => turn,
                Err(error) => return (StopReason::ModelError, None, Some(error)),
            };
            if let Some(usage) = turn.usage {
                self.usage.add(usage);
            }
            self.messages.push(turn.message);
            self.steps.push(ChatStep {
                step,
                text: turn.text.clone(),
                finish_reason: turn.finish_reason.clone(),
                usage: turn.usage,
                model_ms: millis(asked.elapsed()),
                calls: Vec::new(),
            });
            let cut = matches!(turn.finish_reason.as_deref(), Some("length" | "max_tokens"));
            let budget_spent = request.max_tokens.is_some_and(|b| {
                self.usage.total() >= b || (cut && max_tokens < request.max_output_tokens)
            });
            if turn.calls.is_empty() {
                if budget_spent && cut {
                    return self.budget_stop(StopReason::TokenBudget);
                }
                return (StopReason::FinalAnswer, Some(turn.text), None);
            }
            let calls: Vec<(ToolCallRequest, Value)> = turn
                .calls
                .into_iter()
                .map(|c| (self.names.resolve(c.raw), c.arguments))
                .collect();
            // The model is not asked again: its calls are answered without running.
            let last = if step == request.max_steps {
                Some((
                    StopReason::MaxSteps,
                    NotRun {
                        code: "not_run",
                        message: format!(
                            "the call did not run: the chat stopped at its limit of {} model turn{} (max_steps), so its result would not be read",
                            request.max_steps,
                            if request.max_steps == 1 { "" } else { "s" }
                        ),
                        hint: "allow more steps to let the model use the tools it asks for",
                    },
                ))
            } else if budget_spent {
                Some((
                    StopReason::TokenBudget,
                    NotRun {
                        code: "not_run",
                        message: format!(
                            "the call did not run: the chat's token budget ({}) is spent, so its result would not be read",
                            request.max_tokens.unwrap_or(0)
                        ),
                        hint: "allow more tokens to let the model use the tools it asks for",
                    },
                ))
            } else {
                None
            };
            match last {
                Some((reason, not_run)) => {
                    let records = calls
                        .iter()
                        .map(|(call, arguments)| self.unanswered(step, call, arguments, &not_run))
                        .collect();
                    self.answer(step, &calls, records);
                    return self.budget_stop(reason);
                }
                None => {
                    let (records, timed_out) = self.run_calls(step, &calls).await;
                    self.answer(step, &calls, records);
                    if timed_out {
                        return self.budget_stop(StopReason::TimeBudget);
                    }
                }
            }
        }
        // Not reached: the last allowed step returns above, whatever the model answered.
        self.budget_stop(StopReason::MaxSteps)
    }

    /// Ends the chat at a budget, saying which.
    fn budget_stop(&self, reason: StopReason) -> (StopReason, Option<String>, Option<Error>) {
        let request = self.request;
        let message = match reason {
            StopReason::MaxSteps => format!(
                "the model was asked {} (max_steps) and still called tools",
                match request.max_steps {
                    1 => "once".to_owned(),
                    n => format!("{n} times"),
                }
            ),
            StopReason::TokenBudget => format!(
                "the token budget of {} is spent ({} used)",
                request.max_tokens.unwrap_or(0),
                self.usage.total()
            ),
            StopReason::TimeBudget => format!(
                "the time budget of {:.1} s ran out",
                request.timeout.map_or(0.0, |t| t.as_secs_f64())
            ),
            _ => String::new(),
        };
        let hint = match reason {
            StopReason::MaxSteps => "allow more steps (max_steps), or ask a narrower question",
            StopReason::TokenBudget => "allow more tokens (max_tokens), or offer fewer tools",
            _ => "allow more time (timeout)",
        };
        (reason, None, Some(Error::new(reason.name(), message, hint)))
    }

    /// Adds the answers to `calls` to the conversation, and the calls to step `step`.
    fn answer(
        &mut self,
        step: usize,
        calls: &[(ToolCallRequest, Value)],
        records: Vec<ChatToolCall>,
    ) {
        let results: Vec<Value> = records
            .iter()
            .zip(calls)
            .map(|(record, (call, _))| result_message(call, record))
            .collect();
        match tool_results_reply(self.model.format, results) {
            Value::Array(messages) => self.messages.extend(messages),
            message => self.messages.push(message),
        }
        if let Some(last) = self.steps.iter_mut().rev().find(|s| s.step == step) {
            last.calls = records;
        }
    }

    /// Runs `calls` as a batch does; the second value says the time budget cut it short.
    async fn run_calls(
        &self,
        step: usize,
        calls: &[(ToolCallRequest, Value)],
    ) -> (Vec<ChatToolCall>, bool) {
        let slots: Mutex<Vec<Option<ChatToolCall>>> = Mutex::new(vec![None; calls.len()]);
        let tiered: Vec<(usize, Option<SafetyTier>)> = calls
            .iter()
            .enumerate()
            .map(|(index, (call, _))| {
                let tier = match &call.request {
                    Ok(request) => self.locara.safety_tier(&request.tool),
                    // Answered at once, so it may join any run of read-only calls.
                    Err(_) => Some(SafetyTier::ReadOnly),
                };
                (index, tier)
            })
            .collect();
        let mut timed_out = false;
        for segment in segments(tiered) {
            let runs = segment.into_iter().map(|(index, tier)| {
                let slots = &slots;
                async move {
                    let (call, arguments) = &calls[index];
                    let record = self.run_call(call, arguments, tier).await;
                    (self.on_event)(ChatEvent::ToolCall {
                        step,
                        call: &record,
                    });
                    if let Ok(mut slots) = slots.lock() {
                        slots[index] = Some(record);
                    }
                }
            });
            let all = futures_util::future::join_all(runs);
            match self.deadline {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, all).await.is_err() {
                        timed_out = true;
                        break;
                    }
                }
                None => {
                    all.await;
                }
            }
        }
        let filled = slots.into_inner().unwrap_or_else(|e| e.into_inner());
        let timeout = self.request.timeout.map_or(0.0, |t| t.as_secs_f64());
        let records = filled
            .into_iter()
            .zip(calls)
            .map(|(slot, (call, arguments))| match slot {
                Some(record) => record,
                None => self.unanswered(step, call, arguments, &NotRun {
                        code: "cancelled",
                        message: format!(
                            "the call was cancelled: the chat's time budget of {timeout:.1} s ran out before it ended (a call that had started was stopped, and may have done part of its work)"
                        ),
                        hint: "allow more time to let the model use the tools it asks for",
                    }),
            })
            .collect();
        (records, timed_out)
    }

    /// Runs one call (or answers it with why it cannot run).
    async fn run_call(
        &self,
        call: &ToolCallRequest,
        arguments: &Value,
        tier: Option<SafetyTier>,
    ) -> ChatToolCall {
        let started_ms = millis(self.started.elapsed());
        let began = Instant::now();
        let outcome = match call.request.clone() {
            Ok(mut run) => {
                let request = self.request;
                if let Some(dir) = &request.workspace {
                    run = run.with_workspace(dir);
                }
                if let Some(dir) = &request.output_dir {
                    run = run.with_output_dir(dir);
                }
                if request.receipts {
                    run = run.with_receipt();
                }
                self.locara.run(run).await
            }
            Err(error) => Err(error),
        };
        let (response, error) = match outcome {
            Ok(response) => (Some(response), None),
            Err(error) => (None, Some(error)),
        };
        let result = result_text(response.as_ref(), error.as_ref());
        ChatToolCall {
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            tool: call
                .request
                .as_ref()
                .ok()
                .map(|r: &RunRequest| r.tool.clone()),
            arguments: arguments.clone(),
            safety_tier: tier.filter(|_| call.request.is_ok()).map(tier_name),
            ok: response.as_ref().is_some_and(|r| r.ok),
            response,
            error: error.map(|e| e.report().clone()),
            result,
            started_ms,
            elapsed_ms: millis(began.elapsed()),
        }
    }

    /// A call answered without running, for `why`; the event is sent here.
    fn unanswered(
        &self,
        step: usize,
        call: &ToolCallRequest,
        arguments: &Value,
        why: &NotRun,
    ) -> ChatToolCall {
        // A malformed call keeps its own error: that is what the model must fix.
        let error = match &call.request {
            Err(error) => error.clone(),
            Ok(_) => Error::new(why.code, why.message.clone(), why.hint),
        };
        let record = ChatToolCall {
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            tool: call.request.as_ref().ok().map(|r| r.tool.clone()),
            arguments: arguments.clone(),
            safety_tier: call
                .request
                .as_ref()
                .ok()
                .and_then(|r| self.locara.safety_tier(&r.tool))
                .map(tier_name),
            ok: false,
            response: None,
            result: result_text(None, Some(&error)),
            error: Some(error.report().clone()),
            started_ms: millis(self.started.elapsed()),
            elapsed_ms: 0.0,
        };
        (self.on_event)(ChatEvent::ToolCall {
            step,
            call: &record,
        });
        record
    }
}

/// The text the model reads as a call's result: the output as JSON, or the error report. Files
/// are listed by name, size and hash, never with their bytes.
fn result_text(response: Option<&RunResponse>, error: Option<&Error>) -> String {
    match (response, error) {
        (Some(response), _) => {
            let mut shown = response.clone();
            for file in &mut shown.files {
                file.base64 = None;
            }
            formats::result_text(Ok(&shown))
        }
        (None, Some(error)) => formats::result_text(Err(error)),
        (None, None) => String::new(),
    }
}

/// The message (or block) that answers `call` with what `record` says.
fn result_message(call: &ToolCallRequest, record: &ChatToolCall) -> Value {
    call.answer(record.result.clone(), !record.ok)
}
