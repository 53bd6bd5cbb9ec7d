//! One model turn over HTTP, whatever the format: the request, the streamed answer read as it
//! arrives, and what the turn said ([`Turn`]). The formats themselves are in `openai.rs` and
//! `anthropic.rs`; the loop in `mod.rs` knows neither.

use locara_exec::{Egress, HttpClient, HttpRequest};
use serde_json::Value;
use url::Url;

use super::{ChatModel, TokenUsage, anthropic, openai, sse};
use crate::{Error, ToolFormat, formats::RawCall};

/// The most bytes of one answer read.
const MAX_ANSWER_BYTES: usize = 8 << 20;

/// What one request to the model carries.
#[derive(Debug)]
pub(crate) struct Params<'a> {
    pub(crate) model: &'a ChatModel,
    pub(crate) system: Option<&'a str>,
    pub(crate) messages: &'a [Value],
    /// The tool definitions, in the model's format.
    pub(crate) tools: &'a [Value],
    pub(crate) max_tokens: u32,
    pub(crate) temperature: Option<f64>,
    pub(crate) seed: Option<u64>,
}

/// What the model answered in one turn.
#[derive(Debug)]
pub(crate) struct Turn {
    /// Its text.
    pub(crate) text: String,
    /// Its tool calls, in order.
    pub(crate) calls: Vec<Call>,
    /// The assistant message to add to the conversation, in the model's format.
    pub(crate) message: Value,
    pub(crate) usage: Option<TokenUsage>,
    pub(crate) finish_reason: Option<String>,
}

/// A tool call of a [`Turn`].
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) raw: RawCall,
    /// The arguments as the model gave them: the object, or its text when it is not one.
    pub(crate) arguments: Value,
}

/// Why an answer is no turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The server said it failed (an error event or object), in these words.
    Server(String),
    /// The answer is not of the format's shape.
    Unreadable(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Server(message) => write!(f, "the server reported an error: {message}"),
            Failure::Unreadable(problem) => f.write_str(problem),
        }
    }
}

/// Reads a streamed answer, event by event.
pub(crate) trait Stream: Send {
    /// Takes one server-sent event; the model's text goes to `on_text` as it comes.
    fn event(&mut self, event: &sse::Event, on_text: &mut dyn FnMut(&str));
    /// What the turn said, or why there is none.
    fn finish(self: Box<Self>) -> Result<Turn, Failure>;
}

/// The URL requests to `model` go to.
///
/// # Errors
/// `invalid_model` when the base URL is not an `http` or `https` URL.
pub(crate) fn url(model: &ChatModel) -> Result<Url, Error> {
    let base = model.base_url.trim_end_matches('/');
    let path = match model.format {
        ToolFormat::OpenAi => "chat/completions",
        ToolFormat::Anthropic => "messages",
    };
    let hint = match model.format {
        ToolFormat::OpenAi => {
            "give the API base of an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 or https://api.openai.com/v1"
        }
        ToolFormat::Anthropic => {
            "give the API base of an Anthropic Messages API, e.g. https://api.anthropic.com/v1"
        }
    };
    let url = Url::parse(&format!("{base}/{path}")).map_err(|e| {
        Error::new(
            "invalid_model",
            format!("the model URL `{}` is not a URL: {e}", model.base_url),
            hint,
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(Error::new(
            "invalid_model",
            format!(
                "the model URL `{}` is not an http or https URL",
                model.base_url
            ),
            hint,
        ));
    }
    Ok(url)
}

/// Asks the model once, handing its text to `on_text` as it arrives.
///
/// # Errors
/// `model_error`, in words a person can act on, when the model cannot be reached, answers
/// with an error status, or answers something that is not a turn.
pub(crate) async fn ask(
    http: &dyn HttpClient,
    url: &Url,
    params: &Params<'_>,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<Turn, Error> {
    let model = params.model;
    let (body, mut headers) = match model.format {
        ToolFormat::OpenAi => (openai::body(params), openai::headers(model)),
        ToolFormat::Anthropic => (anthropic::body(params), anthropic::headers(model)),
    };
    headers.push(("content-type".to_owned(), "application/json".to_owned()));
    headers.push((
        "accept".to_owned(),
        "text/event-stream, application/json".to_owned(),
    ));
    let request = HttpRequest::post(url.clone(), headers, body.to_string().into_bytes())
        .with_egress(Egress::Configured);
    let mut stream: Box<dyn Stream> = match model.format {
        ToolFormat::OpenAi => Box::<openai::Stream>::default(),
        ToolFormat::Anthropic => Box::<anthropic::Stream>::default(),
    };
    let mut events = sse::Decoder::default();
    let streaming = {
        let stream = &mut stream;
        let events = &mut events;
        let mut on_data = |bytes: &[u8]| {
            events.feed(bytes, &mut |event| stream.event(&event, &mut *on_text));
        };
        http.send_streaming(request, MAX_ANSWER_BYTES, &mut on_data)
            .await
    };
    let response = streaming.map_err(|e| {
        model_error(
            format!("cannot reach the model at {url}: {e}"),
            "check that the model server is running and the URL is right (--llm)",
        )
    })?;
    if !(200..300).contains(&response.status) {
        return Err(status_error(
            url,
            response.status,
            &response.body,
            model.format,
        ));
    }
    if response.truncated {
        return Err(model_error(
            format!(
                "the model's answer at {url} is longer than {} MiB",
                MAX_ANSWER_BYTES >> 20
            ),
            "ask for a shorter answer (max_output_tokens)",
        ));
    }
    let failed = |failure: Failure| match failure {
        Failure::Server(message) => model_error(
            format!("the model at {url} failed while answering: {message}"),
            "the server could not finish its answer; try again, rephrase the request, or offer \
             fewer tools (a tool call that the server cannot parse ends this way with small models)",
        ),
        Failure::Unreadable(problem) => model_error(
            format!("cannot read the model's answer from {url}: {problem}"),
            format!(
                "check that the server speaks the {} format (--format)",
                model.format
            ),
        ),
    };
    let json = response
        .header("content-type")
        .is_some_and(|t| t.trim_start().starts_with("application/json"));
    if json {
        // A server that does not stream answers with one JSON document.
        let value: Value = serde_json::from_slice(&response.body)
            .map_err(|e| failed(Failure::Unreadable(format!("its JSON is invalid: {e}"))))?;
        let turn = match model.format {
            ToolFormat::OpenAi => openai::from_json(&value),
            ToolFormat::Anthropic => anthropic::from_json(&value),
        }
        .map_err(failed)?;
        if !turn.text.is_empty() {
            on_text(&turn.text);
        }
        return Ok(turn);
    }
    events.finish(&mut |event| stream.event(&event, &mut *on_text));
    stream.finish().map_err(failed)
}

pub(crate) fn model_error(message: impl Into<String>, hint: impl Into<String>) -> Error {
    Error::new("model_error", message, hint)
}

/// The error of an answer with status `status`: the API's own message when it gives one.
fn status_error(url: &Url, status: u16, body: &[u8], format: ToolFormat) -> Error {
    let text = String::from_utf8_lossy(body);
    let said = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            // OpenAI: {"error": {"message"}}; Anthropic: {"type": "error", "error": {"message"}};
            // some servers: {"error": "text"}.
            let error = v.get("error")?;
            error
                .get("message")
                .and_then(Value::as_str)
                .or(error.as_str())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| text.chars().take(300).collect::<String>().trim().to_owned());
    let hint = match status {
        401 | 403 => format!(
            "check the API key in LOCARA_LLM_API_KEY (sent as {})",
            match format {
                ToolFormat::OpenAi => "`Authorization: Bearer`",
                ToolFormat::Anthropic => "`x-api-key`",
            }
        ),
        404 => "check the API base URL (it usually ends in /v1) and the model name".to_owned(),
        408 | 429 => "the API is busy or rate-limited; wait and try again".to_owned(),
        400..=499 => format!(
            "the API refused the request; check the model name and that it speaks the {format} format"
        ),
        _ => "the model server failed; try again later".to_owned(),
    };
    let said = if said.is_empty() {
        String::new()
    } else {
        format!(": {said}")
    };
    model_error(format!("the model at {url} answered {status}{said}"), hint)
}

/// The token counts of a `usage` object: `input_key`, `output_key` and any of `extra_inputs`
/// that are numbers.
pub(crate) fn usage(
    value: &Value,
    input_key: &str,
    output_key: &str,
    extra_inputs: &[&str],
) -> Option<TokenUsage> {
    let object = value.as_object()?;
    let number = |key: &str| object.get(key).and_then(Value::as_u64);
    let input = number(input_key);
    let output = number(output_key);
    if input.is_none() && output.is_none() {
        return None;
    }
    let extra: u64 = extra_inputs.iter().filter_map(|k| number(k)).sum();
    Some(TokenUsage {
        input_tokens: input.unwrap_or(0).saturating_add(extra),
        output_tokens: output.unwrap_or(0),
    })
}
