//! The native addon of `@locara/sdk`: JavaScript values in and out of [`locara_sdk::Sdk`], each
//! call a `Promise` driven on napi-rs's Tokio runtime, so a running tool never blocks Node's
//! event loop.
//!
//! It knows how to hand the facade's JSON to JavaScript and back (napi-rs's serde_json
//! conversion), how to answer every call with `{ok, value}` or `{ok: false, error}` so the
//! JavaScript half can throw its `LocaraError`, and how a chat's events reach an async iterator
//! (a channel the iterator pulls from). It deliberately knows nothing of Buffers, paths,
//! `LocaraError` or the `tools` proxy: those are `npm/index.js`, and running a call is the
//! facade's.

use locara_sdk::Sdk;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc, oneshot};

/// A call's outcome as the JavaScript half reads it.
fn outcome(result: std::result::Result<Value, Value>) -> Value {
    match result {
        Ok(value) => json!({"ok": true, "value": value}),
        Err(report) => json!({"ok": false, "error": report}),
    }
}

/// An open Locara: the facade behind the JavaScript `Locara` class.
#[napi]
#[derive(Debug)]
pub struct Core {
    sdk: Sdk,
}

#[napi]
impl Core {
    /// Opens Locara with `options` (`{home, app, engine, workspace, allowWrite, …}` in the
    /// facade's snake_case); `{ok: false, error}` when it cannot.
    #[napi(factory)]
    pub fn open(options: Value) -> Result<Core> {
        Sdk::open(options, None)
            .map(|sdk| Core { sdk })
            .map_err(|report| Error::from_reason(report.to_string()))
    }

    /// The callable tools.
    #[napi]
    pub fn list(&self) -> Value {
        self.sdk.list()
    }

    /// The best matches for `query`.
    #[napi]
    pub fn search(&self, query: String, limit: u32) -> Value {
        self.sdk.search(&query, limit as usize)
    }

    /// Everything needed to call `tool`, as an outcome.
    #[napi]
    pub fn describe(&self, tool: String) -> Value {
        outcome(self.sdk.describe(&tool))
    }

    /// The API of every callable tool as `typescript` or `python` source, as an outcome.
    #[napi]
    pub fn export_api(&self, language: String) -> Value {
        outcome(self.sdk.export_api(&language).map(Value::String))
    }

    /// Runs `op` (`run`, `run_batch`, `run_chain`) on `request`; resolves to an outcome.
    #[napi]
    pub async fn call(&self, op: String, request: Value) -> Value {
        let result = match op.as_str() {
            "run" => self.sdk.run(request).await,
            "run_batch" => self.sdk.run_batch(request).await,
            "run_chain" => self.sdk.run_chain(request).await,
            other => Err(locara_sdk::error(
                "invalid_request",
                format!("unknown operation `{other}`"),
                "use run, run_batch or run_chain",
            )),
        };
        outcome(result)
    }

    /// Starts a chat; its events and its end are read from the session.
    #[napi]
    pub fn chat(&self, request: Value) -> ChatSession {
        let (events, receiver) = mpsc::unbounded_channel();
        let (done, end) = oneshot::channel();
        let sdk = self.sdk.clone();
        let task = napi::bindgen_prelude::spawn(async move {
            let on_event = move |event: Value| {
                // The session may be gone (its iterator was abandoned); the chat goes on.
                let _ = events.send(event);
            };
            let _ = done.send(outcome(sdk.chat(request, &on_event).await));
        });
        ChatSession {
            events: Mutex::new(receiver),
            end: Mutex::new(Some(end)),
            task,
        }
    }
}

/// A chat in progress: `next()` resolves to each event and then `null`; `result()` to the
/// transcript as an outcome.
#[napi]
#[derive(Debug)]
pub struct ChatSession {
    events: Mutex<mpsc::UnboundedReceiver<Value>>,
    end: Mutex<Option<oneshot::Receiver<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

#[napi]
impl ChatSession {
    /// The next event, or `null` when the chat has ended.
    #[napi]
    pub async fn next(&self) -> Option<Value> {
        self.events.lock().await.recv().await
    }

    /// How the chat ended (once; later calls resolve to an `invalid_request` outcome).
    #[napi]
    pub async fn result(&self) -> Value {
        let Some(end) = self.end.lock().await.take() else {
            return outcome(Err(locara_sdk::error(
                "invalid_request",
                "the chat's result was already read",
                "read it once",
            )));
        };
        end.await.unwrap_or_else(|_| {
            outcome(Err(locara_sdk::error(
                "cancelled",
                "the chat was cancelled",
                "start it again",
            )))
        })
    }

    /// Stops the chat (a model request or tool call in flight is cancelled).
    #[napi]
    pub fn cancel(&self) {
        self.task.abort();
    }
}
