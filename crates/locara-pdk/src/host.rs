//! The host services a tool may ask for (see `docs/tool-abi.md` § Host services): `web.fetch`
//! ([`fetch`]) and `llm.chat` ([`chat`]), through the `locara_host` imports (`progress` and
//! `kv` have modules of their own, [`crate::progress`] and [`crate::kv`]); [`call`] asks any
//! service, including ones added later, with a JSON request. A tool's manifest must declare
//! each service it uses.
//!
//! Whether a call may use a service is the host's decision, made from the tool's manifest and
//! the app's grants; a refusal comes back as [`ErrorKind::BadArgs`] with the host's message
//! (a host outside the allow-list is the caller's to fix), a failure as
//! [`ErrorKind::Failed`].
//!
//! Outside a wasm guest (the unit tests on the host) there is no host to ask, and every call
//! fails saying so.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{ErrorKind, ToolError};

/// `ENOTCAPABLE`: the host refused the request.
const ENOTCAPABLE: u16 = 76;

/// Asks host service `service`; returns its JSON answer.
///
/// # Errors
/// A refusal ([`ErrorKind::BadArgs`]) or a failure ([`ErrorKind::Failed`]), with the host's
/// message.
pub fn call(service: &str, request: &Value) -> Result<Value, ToolError> {
    let answer = call_bytes(service, request.to_string().as_bytes())?;
    serde_json::from_slice(&answer).map_err(|e| {
        ToolError::failed(format!("the host's answer to `{service}` is not JSON: {e}"))
    })
}

/// Asks host service `service` with the JSON text `request`; returns its answer's JSON text,
/// for a tool that reads it into its own values without a [`Value`] in between.
///
/// # Errors
/// As [`call`]'s, except that the answer is not checked to be JSON.
pub fn call_bytes(service: &str, request: &[u8]) -> Result<Vec<u8>, ToolError> {
    let (errno, answer) = raw::call(service, request)?;
    match errno {
        0 => Ok(answer),
        ENOTCAPABLE => Err(ToolError::new(
            ErrorKind::BadArgs,
            String::from_utf8_lossy(&answer).into_owned(),
        )),
        _ => Err(ToolError::failed(
            String::from_utf8_lossy(&answer).into_owned(),
        )),
    }
}

/// What the host's `web.fetch` answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The HTTP status of the last response.
    pub status: u16,
    /// The URL finally fetched, after any redirects.
    pub url: String,
    /// The URLs redirected through, in order.
    pub redirects: Vec<String>,
    /// The response's `Content-Type`, if it had one.
    pub content_type: Option<String>,
    /// Whether the body was cut at the size limit.
    pub truncated: bool,
    /// The body, up to the size limit.
    pub body: Vec<u8>,
}

/// `web.fetch`'s answer on the wire.
#[derive(Deserialize)]
struct FetchAnswer {
    status: u16,
    url: String,
    #[serde(default)]
    redirects: Vec<String>,
    content_type: Option<String>,
    truncated: bool,
    body_base64: String,
}

/// Fetches `url` with `GET` through the host, reading at most `max_bytes` of the body (the
/// host's own limit, the tool's `output_bytes`, when `None` or larger).
///
/// The tool must declare the host in its manifest's `wasi_imports.net.allowed_hosts`, and the
/// app must allow it too; every redirect is checked against both.
///
/// # Errors
/// A refused URL ([`ErrorKind::BadArgs`]: the caller can pass another), or a fetch that failed.
pub fn fetch(url: &str, max_bytes: Option<u64>) -> Result<Fetched, ToolError> {
    let mut request = json!({ "url": url });
    if let Some(max_bytes) = max_bytes {
        request["max_bytes"] = max_bytes.into();
    }
    let answer: FetchAnswer = serde_json::from_value(call("web.fetch", &request)?)
        .map_err(|e| ToolError::failed(format!("the host's fetch answer is malformed: {e}")))?;
    let body = base64::engine::general_purpose::STANDARD
        .decode(&answer.body_base64)
        .map_err(|e| ToolError::failed(format!("the host's fetch answer is malformed: {e}")))?;
    Ok(Fetched {
        status: answer.status,
        url: answer.url,
        redirects: answer.redirects,
        content_type: answer.content_type,
        truncated: answer.truncated,
        body,
    })
}

/// One message of a chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The message's text.
    pub content: String,
}

impl Message {
    /// A system message: instructions for the model.
    pub fn system(content: impl Into<String>) -> Message {
        Message {
            role: "system".to_owned(),
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: "user".to_owned(),
            content: content.into(),
        }
    }

    /// An earlier answer of the model.
    pub fn assistant(content: impl Into<String>) -> Message {
        Message {
            role: "assistant".to_owned(),
            content: content.into(),
        }
    }
}

/// A request to the app's language model (`llm.chat`); the host adds the model and the key.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ChatRequest {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The most tokens to generate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Sampling temperature; 0 for the most likely answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// An OpenAI `response_format`, e.g. a `json_schema` the answer must follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Value>,
    /// Sequences that end the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
    /// A seed, for models that sample reproducibly with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl ChatRequest {
    /// A request of these messages, with the model's defaults for everything else.
    pub fn new(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            messages,
            ..ChatRequest::default()
        }
    }
}

/// What the app's language model answered.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChatAnswer {
    /// The answer's text.
    pub content: String,
    /// Why the model stopped (`stop`, `length`, ...), when it says.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// The model that answered, when it says.
    #[serde(default)]
    pub model: Option<String>,
    /// Token counts, as the endpoint reported them.
    #[serde(default)]
    pub usage: Value,
}

/// Asks the app's language model (`llm.chat`).
///
/// The tool must list `"llm.chat"` in its manifest's `capability_requirements`, and the app
/// must grant it and configure an endpoint.
///
/// # Errors
/// A refusal ([`ErrorKind::BadArgs`]) or a failure of the model's endpoint.
pub fn chat(request: &ChatRequest) -> Result<ChatAnswer, ToolError> {
    let request = serde_json::to_value(request).expect("a chat request is JSON");
    serde_json::from_value(call("llm.chat", &request)?)
        .map_err(|e| ToolError::failed(format!("the host's chat answer is malformed: {e}")))
}

#[cfg(target_os = "wasi")]
#[allow(unsafe_code, reason = "the host-service imports are raw by nature")]
mod raw {
    use crate::ToolError;

    #[link(wasm_import_module = "locara_host")]
    unsafe extern "C" {
        #[link_name = "call"]
        fn host_call(
            name: *const u8,
            name_len: usize,
            request: *const u8,
            request_len: usize,
            response_len: *mut u32,
        ) -> u16;
        #[link_name = "response"]
        fn host_response(buf: *mut u8, buf_len: usize) -> u16;
    }

    /// The errno of `call` and the answer (or the message explaining the errno).
    pub(super) fn call(service: &str, request: &[u8]) -> Result<(u16, Vec<u8>), ToolError> {
        let mut len = 0u32;
        // SAFETY: the name, the request and `len` are live for the call; the host reads the
        // first two within their lengths and writes only `len`.
        let errno = unsafe {
            host_call(
                service.as_ptr(),
                service.len(),
                request.as_ptr(),
                request.len(),
                &mut len,
            )
        };
        let mut answer = vec![0u8; len as usize];
        // SAFETY: the host writes at most `answer.len()` bytes into `answer`.
        let taken = unsafe { host_response(answer.as_mut_ptr(), answer.len()) };
        if taken != 0 {
            return Err(ToolError::failed(format!(
                "the host did not hand over its answer to `{service}` (errno {taken}, after errno {errno})"
            )));
        }
        Ok((errno, answer))
    }
}

#[cfg(not(target_os = "wasi"))]
mod raw {
    use crate::ToolError;

    pub(super) fn call(service: &str, _: &[u8]) -> Result<(u16, Vec<u8>), ToolError> {
        Err(ToolError::failed(format!(
            "`{service}` is a host service, available only inside the Locara sandbox"
        )))
    }
}
