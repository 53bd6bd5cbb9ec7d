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

use std::{
    collections::HashSet,
    future::Future as _,
    sync::{Arc, Mutex, MutexGuard},
    task::{Context, Poll},
};

use locara_facade::RunRequest;
use locara_sdk::Sdk;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// The set of warm tools, whatever a panicking holder left in it (a tool id more or less only
/// decides where a call is first polled).
fn lock(warm: &Mutex<HashSet<String>>) -> MutexGuard<'_, HashSet<String>> {
    warm.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A call's outcome as the JavaScript half reads it.
fn outcome(result: std::result::Result<Value, Value>) -> Value {
    match result {
        Ok(value) => json!({"ok": true, "value": value}),
        Err(report) => json!({"ok": false, "error": report}),
    }
}

/// An outcome as JSON text, which `JSON.parse` turns into objects faster than N-API calls
/// building them one property at a time.
fn outcome_text<T: serde::Serialize, E: serde::Serialize>(
    result: std::result::Result<&T, &E>,
) -> String {
    let (ok, field, value) = match result {
        Ok(value) => (true, "value", serde_json::to_string(value)),
        Err(report) => (false, "error", serde_json::to_string(report)),
    };
    match value {
        Ok(value) => format!("{{\"ok\":{ok},\"{field}\":{value}}}"),
        Err(e) => outcome(Err(locara_sdk::error(
            "internal",
            format!("cannot encode the answer: {e}"),
            "report this as a bug",
        )))
        .to_string(),
    }
}

/// An open Locara: the facade behind the JavaScript `Locara` class.
#[napi]
#[derive(Debug)]
pub struct Core {
    runner: Arc<Runner>,
}

/// What [`run_call`] needs: the per-call path, reached through an `External` rather than a
/// method of [`Core`], whose `this` checks cost about a quarter of a microsecond a call.
#[derive(Debug)]
pub struct Runner {
    sdk: Sdk,
    /// The tools that have run once in this process: verified and compiled, so a call of one
    /// is polled first on the JavaScript thread (for at most one fuel slice, as the facade
    /// polls short calls on its caller's thread) and most calls end there, without the two
    /// thread hops of a Promise resolved from another thread. A first call, which may hash
    /// and compile a large module, always runs on the runtime's threads.
    warm: Arc<Mutex<HashSet<String>>>,
}

#[napi]
impl Core {
    /// Opens Locara with `options` (`{home, app, engine, workspace, allow_write, …}`); throws
    /// an error whose message is the report's JSON when it cannot.
    #[napi(factory)]
    pub fn open(options: Value) -> Result<Core> {
        Sdk::open(options, None)
            .map(|sdk| Core {
                runner: Arc::new(Runner {
                    sdk,
                    warm: Arc::default(),
                }),
            })
            .map_err(|report| Error::from_reason(report.to_string()))
    }

    /// The callable tools.
    #[napi]
    pub fn list(&self) -> Value {
        self.runner.sdk.list()
    }

    /// The best matches for `query`.
    #[napi]
    pub fn search(&self, query: String, limit: u32) -> Value {
        self.runner.sdk.search(&query, limit as usize)
    }

    /// Everything needed to call `tool`, as an outcome.
    #[napi]
    pub fn describe(&self, tool: String) -> Value {
        outcome(self.runner.sdk.describe(&tool))
    }

    /// The API of every callable tool as `typescript`, `typescript-module`, `python` or
    /// `python-module` source, as an outcome.
    #[napi]
    pub fn export_api(&self, language: String) -> Value {
        outcome(self.runner.sdk.export_api(&language).map(Value::String))
    }

    /// The handle [`run_call`] takes.
    #[napi(ts_return_type = "object")]
    pub fn runner(&self) -> External<Arc<Runner>> {
        External::new(Arc::clone(&self.runner))
    }

    /// Runs `op` (`run_batch`, `run_chain`) on `request` (JSON text); resolves to its outcome
    /// as JSON text.
    #[napi]
    pub async fn call(&self, op: String, request: String) -> String {
        let request: Value = match serde_json::from_str(&request) {
            Ok(request) => request,
            Err(e) => return outcome(Err(locara_sdk::invalid_call(&e))).to_string(),
        };
        let result = match op.as_str() {
            "run_batch" => self.runner.sdk.run_batch(request).await,
            "run_chain" => self.runner.sdk.run_chain(request).await,
            other => Err(locara_sdk::error(
                "invalid_request",
                format!("unknown operation `{other}`"),
                "use run_batch or run_chain",
            )),
        };
        outcome_text(result.as_ref())
    }

    /// Starts a chat; its events and its end are read from the session.
    #[napi]
    pub fn chat(&self, request: Value) -> ChatSession {
        let (events, receiver) = mpsc::unbounded_channel();
        let (done, end) = oneshot::channel();
        let sdk = self.runner.sdk.clone();
        let task = napi::bindgen_prelude::spawn(async move {
            let on_event = move |event: Value| {
                // The session may be gone (its iterator was abandoned); the chat goes on.
                let _ = events.send(event);
            };
            let _ = done.send(outcome(sdk.chat(request, &on_event).await));
        });
        ChatSession {
            events: tokio::sync::Mutex::new(receiver),
            end: tokio::sync::Mutex::new(Some(end)),
            task,
        }
    }
}

/// A chat in progress: `next()` resolves to each event and then `null`; `result()` to the
/// transcript as an outcome.
#[napi]
#[derive(Debug)]
pub struct ChatSession {
    events: tokio::sync::Mutex<mpsc::UnboundedReceiver<Value>>,
    end: tokio::sync::Mutex<Option<oneshot::Receiver<Value>>>,
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

/// Runs one call (a `RunRequest` as JSON text) with the runner of a [`Core`]: the response as
/// JSON text, at once when the call ended in its first poll, else a Promise of it. A call that
/// could not run throws (or rejects with) an error whose message is the report's JSON.
#[napi(ts_return_type = "string | Promise<string>")]
pub fn run_call<'env>(
    env: &'env Env,
    runner: &External<Arc<Runner>>,
    request: String,
) -> Result<Either<String, PromiseRaw<'env, String>>> {
    let request: RunRequest = serde_json::from_str(&request)
        .map_err(|e| Error::from_reason(locara_sdk::invalid_call(&e).to_string()))?;
    let warm = lock(&runner.warm).contains(&request.tool);
    // A cold tool is remembered once it has run.
    let cold = (!warm).then(|| (request.tool.clone(), Arc::clone(&runner.warm)));
    let sdk = runner.sdk.clone();
    let mut call = Box::pin(async move {
        let answer = sdk.run_request(request).await;
        if let (Ok(_), Some((tool, seen))) = (&answer, cold) {
            lock(&seen).insert(tool);
        }
        match answer {
            Ok(response) => response_text(&response),
            // A report always encodes; were it not to, the message would still say why.
            Err(error) => Err(Error::from_reason(
                serde_json::to_string(error.report()).unwrap_or_else(|e| e.to_string()),
            )),
        }
    });
    if warm {
        let polled = napi::bindgen_prelude::within_runtime_if_available(|| {
            call.as_mut()
                .poll(&mut Context::from_waker(std::task::Waker::noop()))
        });
        if let Poll::Ready(text) = polled {
            return text.map(Either::A);
        }
    }
    Ok(Either::B(env.spawn_future(call)?))
}

/// A response as JSON text, written once into a buffer sized for a typical answer (under
/// glibc's 1 KiB "large request", which consolidates its free lists on every call).
fn response_text(response: &locara_facade::RunResponse) -> Result<String> {
    let mut text = Vec::with_capacity(1000);
    serde_json::to_writer(&mut text, response)
        .map_err(|e| e.to_string())
        .and_then(|()| String::from_utf8(text).map_err(|e| e.to_string()))
        .map_err(|e| {
            let report = locara_sdk::error(
                "internal",
                format!("cannot encode the answer: {e}"),
                "report this as a bug",
            );
            Error::from_reason(report.to_string())
        })
}
