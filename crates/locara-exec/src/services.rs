//! The host services a wasm tool may call (through the sandbox's `locara_host` imports), and
//! who may call which.
//!
//! - [`WEB_FETCH`] fetches a URL with `GET`. The tool's `net.allowed_hosts` is what it asks for
//!   and the app's grants bound it (`"*"` in the tool means "whatever the app allows"; the
//!   composition rule refuses a tool asking for more); every URL, and every redirect, is
//!   checked against that list before a connection is made. The body is cut at the tool's
//!   `output_bytes` limit (or the smaller `max_bytes` the tool asks for).
//! - [`LLM_CHAT`] asks the app's language model, an OpenAI-compatible chat-completions
//!   endpoint the host configures ([`LlmEndpoint`]). The tool must list `llm.chat` in its
//!   `capability_requirements` and the app must grant it.
//!
//! - [`PROGRESS`] reports how a long call is going: `start` a task (a title, an optional total
//!   of steps), `step` it, and end it with `done` (an optional summary). The reports go to the
//!   call's [`ProgressSink`](crate::ProgressSink), when the host gave one. Declaring it is
//!   optional for the app: a tool that declares `progress` runs whether or not the app grants
//!   it, and only reports when granted (the tool's helper ignores a refusal).
//! - [`KV`] is the app's key-value store: `get`, `set`, `delete` and `list` (by prefix) of JSON
//!   values, persisted by the [`KvStore`] the host supplies, one namespace per app. The tool
//!   must list `kv` and the app must grant it. Keys are at most [`KV_MAX_KEY`] bytes, values
//!   at most [`KV_MAX_VALUE`] bytes of JSON; the store bounds what an app may hold in all.
//! - [`TOOLS`] searches, describes and calls tools through the host's
//!   [`ToolGateway`](crate::ToolGateway) (see `gateway.rs`). Like progress it is optional for
//!   the app: a tool that declares it runs without the grant, and its requests are refused.
//!
//! - [`MODELS_RUN`](crate::MODELS_RUN) runs the tool's pinned models on the host (see
//!   `models.rs`). Like progress it is optional for the app: a tool that declares it runs
//!   without the grant, and runs its models itself.
//!
//! This module decides and speaks JSON; the bytes go over an [`HttpClient`] the host supplies
//! (`locara-http` has one), so the pipeline itself opens no sockets.
//!
//! Both request formats are in `docs/tool-abi.md` § Host services.

use std::{fmt, sync::Arc, time::Duration};

use locara_sandbox::{CancelToken, HostServices, Now, PendingAnswer, ServiceCall, ServiceError};
use serde_json::{Value, json};
use url::Url;

use crate::gateway::TOOLS;

/// The service that fetches a URL.
pub const WEB_FETCH: &str = "web.fetch";
/// The service that asks the app's language model.
pub const LLM_CHAT: &str = "llm.chat";

/// The service that reports a call's progress.
pub const PROGRESS: &str = "progress";
/// The service that keeps the app's key-value pairs.
pub const KV: &str = "kv";

/// The longest key [`KV`] takes, in bytes.
pub const KV_MAX_KEY: usize = 512;
/// The largest value [`KV`] takes, in bytes of compact JSON.
pub const KV_MAX_VALUE: usize = 64 << 10;
/// The most keys one `list` returns.
const KV_MAX_LIST: usize = 1000;
/// The most progress tasks one call may start.
const MAX_TASKS: usize = 64;
/// The longest progress title, message or summary kept, in characters; longer ones are cut.
const MAX_PROGRESS_TEXT: usize = 200;

/// How many redirects [`WEB_FETCH`] follows, each checked against the allow-list.
const MAX_REDIRECTS: usize = 5;
/// The most bytes of a language model's answer read.
const LLM_MAX_BYTES: usize = 4 << 20;

/// Who chose where an [`HttpRequest`] goes, and so which addresses it may reach once its host
/// name is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Egress {
    /// The app's own configuration named the URL (its language model, an HTTP provider, a
    /// search service, an MCP server): whatever address the host resolves to.
    Configured,
    /// A tool chose the URL (its host already checked against the grants), and these are the
    /// app's grants: a resolved address that is not public (loopback, private, link-local,
    /// unique-local, shared, cloud metadata, …) is reached only when one of them is that
    /// address or a range holding it; a host name or `*` among them names no address.
    Granted(Arc<[String]>),
}

/// One HTTP request a host service makes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpRequest {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// An absolute `http` or `https` URL, already checked against the call's allow-list.
    pub url: Url,
    /// Extra headers (`Host` is the client's job).
    pub headers: Vec<(String, String)>,
    /// The body (empty for `GET`).
    pub body: Vec<u8>,
    /// Which addresses the request may reach; [`Egress::Granted`] with no grants (public
    /// addresses only) unless set.
    pub egress: Egress,
}

impl HttpRequest {
    /// A `GET` of `url`.
    pub fn get(url: Url, headers: Vec<(String, String)>) -> HttpRequest {
        HttpRequest {
            method: "GET",
            url,
            headers,
            body: Vec::new(),
            egress: Egress::Granted(Arc::from([])),
        }
    }

    /// A `POST` of `body` to `url`.
    pub fn post(url: Url, headers: Vec<(String, String)>, body: Vec<u8>) -> HttpRequest {
        HttpRequest {
            method: "POST",
            url,
            headers,
            body,
            egress: Egress::Granted(Arc::from([])),
        }
    }

    /// Sets which addresses the request may reach.
    pub fn with_egress(mut self, egress: Egress) -> HttpRequest {
        self.egress = egress;
        self
    }
}

/// The answer to an [`HttpRequest`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The headers, names in lowercase.
    pub headers: Vec<(String, String)>,
    /// The body, at most the `max_bytes` asked for.
    pub body: Vec<u8>,
    /// Whether the body was longer than `max_bytes` and was cut.
    pub truncated: bool,
}

impl HttpResponse {
    /// A response with `status`, `headers` (names in lowercase) and `body`.
    pub fn new(
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        truncated: bool,
    ) -> HttpResponse {
        HttpResponse {
            status,
            headers,
            body,
            truncated,
        }
    }

    /// The first header named `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends the HTTP requests host services make. It must follow no redirect (the service checks
/// each one), read no more than `max_bytes` of a body, and connect only to an address the
/// request's [`Egress`] allows.
#[async_trait::async_trait]
pub trait HttpClient: Send + Sync + fmt::Debug {
    /// Sends `request` once; an `Err` is a message saying why there is no response.
    async fn send(&self, request: HttpRequest, max_bytes: usize) -> Result<HttpResponse, String>;

    /// Sends `request` once like [`HttpClient::send`], handing each piece of the body to
    /// `on_data` as it arrives (a streamed answer, e.g. server-sent events) before returning
    /// the whole response. The default hands over the whole body at the end.
    async fn send_streaming(
        &self,
        request: HttpRequest,
        max_bytes: usize,
        on_data: &mut (dyn for<'b> FnMut(&'b [u8]) + Send),
    ) -> Result<HttpResponse, String> {
        let response = self.send(request, max_bytes).await?;
        on_data(&response.body);
        Ok(response)
    }
}

/// An OpenAI-compatible chat-completions endpoint: the app's language model.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LlmEndpoint {
    /// The API base, e.g. `http://127.0.0.1:8080/v1`; requests go to `<base>/chat/completions`.
    pub base_url: String,
    /// The `model` sent with each request.
    pub model: String,
    /// Sent as `Authorization: Bearer <key>` when set.
    pub api_key: Option<String>,
}

impl LlmEndpoint {
    /// An endpoint at `base_url` serving `model`, without an API key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> LlmEndpoint {
        LlmEndpoint {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> LlmEndpoint {
        self.api_key = Some(key.into());
        self
    }

    fn completions_url(&self) -> Result<Url, String> {
        let base = self.base_url.trim_end_matches('/');
        let url = Url::parse(&format!("{base}/chat/completions")).map_err(|e| {
            format!(
                "the language model URL `{}` is not a URL: {e}",
                self.base_url
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "the language model URL `{}` is not an http or https URL",
                self.base_url
            ));
        }
        Ok(url)
    }
}

/// The app's key-value pairs: one namespace (the host makes one store per app), JSON values.
/// Called on the thread that runs the guest, which waits.
pub trait KvStore: Send + Sync + fmt::Debug {
    /// The value of `key`, if set.
    fn get(&self, key: &str) -> Result<Option<Value>, String>;
    /// Sets `key` to `value` (compact JSON of at most [`KV_MAX_VALUE`] bytes), durably; an
    /// `Err` (the app's quota is used up, the disk failed) says why and changes nothing.
    fn set(&self, key: &str, value: &str) -> Result<(), String>;
    /// Removes `key`; whether it was set.
    fn delete(&self, key: &str) -> Result<bool, String>;
    /// The keys starting with `prefix`, in byte order, at most `limit` of them.
    fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>, String>;
}

/// What the host gives wasm tools: the HTTP client, the language model and the app's
/// key-value store, when configured.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServicesConfig {
    /// How [`WEB_FETCH`] and [`LLM_CHAT`] reach the network; without one, both fail.
    pub http: Option<Arc<dyn HttpClient>>,
    /// The app's language model; without one, [`LLM_CHAT`] is refused.
    pub llm: Option<LlmEndpoint>,
    /// The app's key-value store; without one, [`KV`] fails.
    pub kv: Option<Arc<dyn KvStore>>,
    /// What runs tools' models on the host; without one, [`MODELS_RUN`](crate::MODELS_RUN)
    /// is refused (and tools run their models themselves).
    pub models: Option<Arc<dyn crate::ModelRunner>>,
}

impl ServicesConfig {
    /// No HTTP client and no language model.
    pub fn new() -> ServicesConfig {
        ServicesConfig::default()
    }

    /// Sets the HTTP client.
    pub fn with_http(mut self, http: Arc<dyn HttpClient>) -> ServicesConfig {
        self.http = Some(http);
        self
    }

    /// Sets the language model.
    pub fn with_llm(mut self, llm: LlmEndpoint) -> ServicesConfig {
        self.llm = Some(llm);
        self
    }

    /// Sets the app's key-value store.
    pub fn with_kv(mut self, kv: Arc<dyn KvStore>) -> ServicesConfig {
        self.kv = Some(kv);
        self
    }

    /// Sets what runs tools' models on the host.
    pub fn with_models(mut self, models: Arc<dyn crate::ModelRunner>) -> ServicesConfig {
        self.models = Some(models);
        self
    }
}

/// Whether `host` is allowed by `allowed` (host names, IP addresses and CIDR ranges, as
/// `locara_manifest::NetAccess::check_host` admits them, or `*` for any): a name matches itself
/// ignoring case, an address every spelling of itself and every range holding it (`::1` is `0:0:0:0:0:0:0:1`, which is
/// how a URL may write it or a grant name it).
pub(crate) fn host_allowed(allowed: &[String], host: &str) -> bool {
    allowed
        .iter()
        .any(|a| locara_manifest::NetAccess::admits(a, host))
}

/// The hosts a call may fetch from: what the tool asks for, bounded by the app's grants.
pub(crate) fn effective_hosts(tool: &[String], app: &[String]) -> Vec<String> {
    if tool.iter().any(|h| h == "*") {
        app.to_vec()
    } else {
        tool.iter()
            .filter(|h| host_allowed(app, h))
            .cloned()
            .collect()
    }
}

/// The services of one call.
#[derive(Debug)]
pub(crate) struct CallServices {
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) config: Arc<ServicesConfig>,
    /// The tool, for messages (`id@version`).
    pub(crate) tool: String,
    /// The hosts [`WEB_FETCH`] may reach; empty when the tool asked for no network.
    pub(crate) hosts: Vec<String>,
    /// The addresses and ranges the app's grants name: what a resolved address that is not
    /// public must be in.
    pub(crate) addresses: Arc<[String]>,
    /// Whether the tool may use [`LLM_CHAT`] (it asked, and the app granted).
    pub(crate) llm: bool,
    /// The most bytes of a fetched body.
    pub(crate) max_bytes: usize,
    /// Where progress reports go: `None` when the tool may not report (it did not declare
    /// `progress`, or the app did not grant it).
    pub(crate) progress: Option<ProgressReporter>,
    /// Whether the tool may use [`KV`].
    pub(crate) kv: bool,
    /// Whether, and through what, the tool may use [`TOOLS`].
    pub(crate) gateway: Gateway,
    /// The models the tool may run on the host: `None` unless it declared
    /// [`MODELS_RUN`](crate::MODELS_RUN), the app granted it and the host runs models.
    pub(crate) models: Option<crate::models::CallModels>,
}

/// What a call may do with [`TOOLS`].
#[derive(Debug)]
pub(crate) enum Gateway {
    /// The tool did not declare `tools`.
    Undeclared,
    /// The tool declared `tools`, but the app did not grant it.
    NotGranted,
    /// The tool may call tools, through the host's gateway when it serves one.
    Granted(Option<crate::ToolGateway>),
}

/// A call's progress tasks, and who hears of them.
pub(crate) struct ProgressReporter {
    sink: Option<crate::ProgressSink>,
    tasks: std::sync::Mutex<Vec<Task>>,
}

struct Task {
    title: String,
    total: Option<u64>,
    done: u64,
    finished: bool,
}

impl fmt::Debug for ProgressReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressReporter")
            .field("sink", &self.sink.is_some())
            .finish_non_exhaustive()
    }
}

impl ProgressReporter {
    pub(crate) fn new(sink: Option<crate::ProgressSink>) -> ProgressReporter {
        ProgressReporter {
            sink,
            tasks: std::sync::Mutex::new(Vec::new()),
        }
    }
}

/// `text` cut to [`MAX_PROGRESS_TEXT`] characters.
fn progress_text(text: &str) -> String {
    match text.char_indices().nth(MAX_PROGRESS_TEXT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

impl HostServices for CallServices {
    fn call(
        &self,
        service: &str,
        request: &[u8],
        call: &ServiceCall,
    ) -> Result<Vec<u8>, ServiceError> {
        // Tensors travel as bytes after a JSON header, not as JSON.
        if service == crate::MODELS_RUN {
            return self.run_model(request, call);
        }
        let request: Value = serde_json::from_slice(request).map_err(|e| {
            ServiceError::Failed(format!("the request to `{service}` is not JSON: {e}"))
        })?;
        // The two local services answer at once, on the guest's thread.
        match service {
            PROGRESS => return self.progress(&request).map(|v| v.to_string().into_bytes()),
            KV => return self.kv(&request).map(|v| v.to_string().into_bytes()),
            _ => {}
        }
        let json = |answer: Value| answer.to_string().into_bytes();
        let work = async {
            match service {
                WEB_FETCH => self.fetch(&request).await.map(json),
                LLM_CHAT => self.chat(&request).await.map(json),
                // The gateway's answer is JSON text already.
                TOOLS => self.tools(request).await,
                other => Err(ServiceError::Denied(format!(
                    "there is no host service `{other}`; the services are `{WEB_FETCH}`, `{LLM_CHAT}`, `{PROGRESS}`, `{KV}`, `{TOOLS}` and `{}`",
                    crate::MODELS_RUN
                ))),
            }
        };
        self.until_deadline(work, call)
    }

    /// A `tools` request is polled once in place: a quick inner call (one that ends in its
    /// first slice, as text.chunk does) is answered with no thread hop for the program either;
    /// a longer one is left running for [`HostServices::wait`]. Every other service needs a
    /// thread that may block: the network ones wait on I/O, kv may wait on its database's lock,
    /// and progress calls the app's sink.
    fn call_now(&self, service: &str, request: &[u8], _call: &ServiceCall) -> Now {
        if service != TOOLS {
            return Now::NeedsThread;
        }
        let gateway = match self.gateway() {
            Ok(gateway) => gateway,
            Err(refused) => return Now::Answered(Err(refused)),
        };
        let request: Value = match serde_json::from_slice(request) {
            Ok(request) => request,
            Err(e) => {
                return Now::Answered(Err(ServiceError::Failed(format!(
                    "the request to `{service}` is not JSON: {e}"
                ))));
            }
        };
        let mut answer: PendingAnswer = PendingAnswer(Box::pin(async move {
            gateway.ask(request).await.map_err(ServiceError::Failed)
        }));
        // The inner call starts on this (the runtime's) thread as any call does, and moves to
        // a blocking thread of the runtime if it is still pending.
        let _runtime = self.runtime.enter();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match answer.0.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(answer) => Now::Answered(answer),
            std::task::Poll::Pending => Now::Started(answer),
        }
    }

    fn wait(&self, pending: PendingAnswer, call: &ServiceCall) -> Result<Vec<u8>, ServiceError> {
        self.until_deadline(pending.0, call)
    }
}

impl CallServices {
    /// [`MODELS_RUN`](crate::MODELS_RUN): the model runs on one of the runtime's blocking
    /// threads while this one waits, so that the call's deadline and cancel still stop the
    /// guest. A model still running then finishes in the background, its answer dropped: a
    /// run cannot be interrupted, and is bounded by its inputs, which the guest's memory held;
    /// the runs of a request not yet started then do not start.
    fn run_model(&self, request: &[u8], call: &ServiceCall) -> Result<Vec<u8>, ServiceError> {
        let Some(models) = &self.models else {
            return Err(ServiceError::Denied(format!(
                "{} may not run its models on the host: it must list `{}` in its capability_requirements, the app must grant it, and the host must offer it",
                self.tool,
                crate::MODELS_RUN
            )));
        };
        let work = models.parse(&self.tool, request)?;
        let runner = Arc::clone(&models.runner);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let running = self
            .runtime
            .spawn_blocking(move || work.answer(runner.as_ref(), &stopped));
        let answer = self.until_deadline(
            async {
                running.await.unwrap_or_else(|e| {
                    Err(ServiceError::Failed(format!(
                        "the model stopped before answering: {e}"
                    )))
                })
            },
            call,
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        answer
    }

    /// Blocks this thread on `work`, until it answers or the call's deadline or cancel.
    fn until_deadline(
        &self,
        work: impl Future<Output = Result<Vec<u8>, ServiceError>>,
        call: &ServiceCall,
    ) -> Result<Vec<u8>, ServiceError> {
        let deadline = tokio::time::Instant::from_std(call.deadline);
        self.runtime.block_on(async {
            tokio::select! {
                answer = work => answer,
                () = tokio::time::sleep_until(deadline) => Err(ServiceError::DeadlineExceeded),
                () = cancelled(&call.cancel) => Err(ServiceError::Cancelled),
            }
        })
    }
}

/// Resolves when `cancel` is cancelled.
async fn cancelled(cancel: &CancelToken) {
    while !cancel.is_cancelled() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

impl CallServices {
    /// [`PROGRESS`]: `{"op": "start", "title", "total"?}` → `{"task"}`, `{"op": "step",
    /// "task", "by"?, "message"?}` → `{"done"}`, `{"op": "done", "task", "summary"?}` → `{}`.
    fn progress(&self, request: &Value) -> Result<Value, ServiceError> {
        let Some(reporter) = &self.progress else {
            return Err(ServiceError::Denied(format!(
                "{} may not report progress: it must list `{PROGRESS}` in its capability_requirements and the app must grant it",
                self.tool
            )));
        };
        let bad = |m: &str| ServiceError::Failed(format!("a `{PROGRESS}` request {m}"));
        let text = |key: &str| request.get(key).and_then(Value::as_str).map(progress_text);
        let mut tasks = reporter.tasks.lock().unwrap_or_else(|e| e.into_inner());
        let (answer, task, event) = match request["op"].as_str() {
            Some("start") => {
                if tasks.len() == MAX_TASKS {
                    return Err(bad(&format!(
                        "starts more than {MAX_TASKS} tasks in one call"
                    )));
                }
                let title =
                    text("title").ok_or_else(|| bad("to `start` needs a string `title`"))?;
                let total = match request.get("total") {
                    None | Some(Value::Null) => None,
                    Some(total) => Some(
                        total
                            .as_u64()
                            .ok_or_else(|| bad("has a `total` that is not a whole number"))?,
                    ),
                };
                tasks.push(Task {
                    title,
                    total,
                    done: 0,
                    finished: false,
                });
                let id = tasks.len();
                (
                    json!({"task": id}),
                    id,
                    crate::ProgressEvent::Started { total },
                )
            }
            Some(op @ ("step" | "done")) => {
                let id = request["task"]
                    .as_u64()
                    .and_then(|id| usize::try_from(id).ok())
                    .filter(|id| (1..=tasks.len()).contains(id))
                    .ok_or_else(|| bad(&format!("to `{op}` names no task this call started")))?;
                let task = &mut tasks[id - 1];
                if task.finished {
                    return Err(bad(&format!("to `{op}` names task {id}, which is done")));
                }
                if op == "step" {
                    let by = match request.get("by") {
                        None | Some(Value::Null) => 1,
                        Some(by) => by
                            .as_u64()
                            .ok_or_else(|| bad("has a `by` that is not a whole number"))?,
                    };
                    task.done = task.done.saturating_add(by);
                    let event = crate::ProgressEvent::Step {
                        done: task.done,
                        total: task.total,
                        message: text("message"),
                    };
                    (json!({"done": task.done}), id, event)
                } else {
                    task.finished = true;
                    let event = crate::ProgressEvent::Done {
                        done: task.done,
                        summary: text("summary"),
                    };
                    (json!({}), id, event)
                }
            }
            _ => return Err(bad("needs `op`: `start`, `step` or `done`")),
        };
        let title = tasks[task - 1].title.clone();
        drop(tasks);
        if let Some(sink) = &reporter.sink {
            sink(&crate::Progress::new(
                self.tool.clone(),
                u32::try_from(task).unwrap_or(u32::MAX),
                title,
                event,
            ));
        }
        Ok(answer)
    }

    /// [`KV`]: `{"op": "get", "key"}` → `{"value"}` (`null` when unset), `{"op": "set", "key",
    /// "value"}` → `{}`, `{"op": "delete", "key"}` → `{"deleted"}`, `{"op": "list", "prefix"?,
    /// "limit"?}` → `{"keys"}`.
    fn kv(&self, request: &Value) -> Result<Value, ServiceError> {
        if !self.kv {
            return Err(ServiceError::Denied(format!(
                "{} does not list `{KV}` in its capability_requirements",
                self.tool
            )));
        }
        let Some(store) = &self.config.kv else {
            return Err(ServiceError::Failed(
                "the host was set up without a key-value store".to_owned(),
            ));
        };
        let bad = |m: String| ServiceError::Failed(format!("a `{KV}` request {m}"));
        let key = || -> Result<&str, ServiceError> {
            let key = request["key"]
                .as_str()
                .ok_or_else(|| bad("needs a string `key`".to_owned()))?;
            if key.is_empty() || key.len() > KV_MAX_KEY {
                return Err(bad(format!(
                    "has a key of {} bytes; keys are 1 to {KV_MAX_KEY} bytes",
                    key.len()
                )));
            }
            Ok(key)
        };
        let failed = |e: String| ServiceError::Failed(format!("the key-value store failed: {e}"));
        match request["op"].as_str() {
            Some("get") => Ok(json!({"value": store.get(key()?).map_err(failed)?})),
            Some("set") => {
                let key = key()?;
                let Some(value) = request.get("value") else {
                    return Err(bad("to `set` needs a `value`".to_owned()));
                };
                let value = value.to_string();
                if value.len() > KV_MAX_VALUE {
                    return Err(bad(format!(
                        "sets `{key}` to {} bytes of JSON, above the {KV_MAX_VALUE} a value may have",
                        value.len()
                    )));
                }
                store.set(key, &value).map_err(failed)?;
                Ok(json!({}))
            }
            Some("delete") => Ok(json!({"deleted": store.delete(key()?).map_err(failed)?})),
            Some("list") => {
                let prefix = match request.get("prefix") {
                    None | Some(Value::Null) => "",
                    Some(prefix) => prefix
                        .as_str()
                        .ok_or_else(|| bad("has a `prefix` that is not a string".to_owned()))?,
                };
                let limit = request["limit"]
                    .as_u64()
                    .map_or(KV_MAX_LIST, |l| usize::try_from(l).unwrap_or(KV_MAX_LIST))
                    .min(KV_MAX_LIST);
                Ok(json!({"keys": store.list(prefix, limit).map_err(failed)?}))
            }
            _ => Err(bad(
                "needs `op`: `get`, `set`, `delete` or `list`".to_owned()
            )),
        }
    }

    /// [`TOOLS`]: the host's gateway answers the request, on this (the guest's) thread.
    async fn tools(&self, request: Value) -> Result<Vec<u8>, ServiceError> {
        let gateway = self.gateway()?;
        gateway.ask(request).await.map_err(ServiceError::Failed)
    }

    /// The gateway that answers this call's [`TOOLS`] requests, or why there is none.
    fn gateway(&self) -> Result<crate::ToolGateway, ServiceError> {
        match &self.gateway {
            Gateway::Granted(Some(gateway)) => Ok(gateway.clone()),
            Gateway::Granted(None) => Err(ServiceError::Failed(
                "this host runs no tool gateway, so a tool cannot call tools here".to_owned(),
            )),
            Gateway::NotGranted => Err(ServiceError::Denied(format!(
                "{} may not call tools: the app did not grant `{TOOLS}` (add it to `grants.services` in locara.json)",
                self.tool
            ))),
            Gateway::Undeclared => Err(ServiceError::Denied(format!(
                "{} does not list `{TOOLS}` in its capability_requirements",
                self.tool
            ))),
        }
    }

    fn http(&self) -> Result<&Arc<dyn HttpClient>, ServiceError> {
        self.config.http.as_ref().ok_or_else(|| {
            ServiceError::Failed("the host was set up without an HTTP client".to_owned())
        })
    }

    /// Checks `url` against the call's allow-list.
    fn check_url(&self, url: &Url, why: &str) -> Result<(), ServiceError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ServiceError::Denied(format!(
                "{why} `{url}` is not an http or https URL"
            )));
        }
        let host = url.host_str().unwrap_or("");
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if self.hosts.is_empty() {
            return Err(ServiceError::Denied(format!(
                "{} declares no network access (`net.allowed_hosts`), so it may not fetch {why} `{url}`",
                self.tool
            )));
        }
        if !host_allowed(&self.hosts, host) {
            return Err(ServiceError::Denied(format!(
                "{why} `{url}` is on host `{host}`, which is not among the hosts {} may reach ({})",
                self.tool,
                self.hosts.join(", ")
            )));
        }
        Ok(())
    }

    async fn fetch(&self, request: &Value) -> Result<Value, ServiceError> {
        let bad = |m: String| ServiceError::Failed(m);
        let text = request["url"]
            .as_str()
            .ok_or_else(|| bad("a `web.fetch` request needs a string `url`".to_owned()))?;
        let mut url =
            Url::parse(text).map_err(|e| bad(format!("`{text}` is not an absolute URL: {e}")))?;
        let max_bytes = request["max_bytes"].as_u64().map_or(self.max_bytes, |m| {
            usize::try_from(m).unwrap_or(usize::MAX).min(self.max_bytes)
        });
        self.check_url(&url, "the URL")?;
        let http = self.http()?;
        let mut redirects = Vec::new();
        loop {
            let request =
                HttpRequest::get(url.clone(), vec![("accept".to_owned(), "*/*".to_owned())])
                    .with_egress(Egress::Granted(self.addresses.clone()));
            let response = http
                .send(request, max_bytes)
                .await
                .map_err(|e| ServiceError::Failed(format!("fetching `{url}` failed: {e}")))?;
            let location = response.header("location").map(str::to_owned);
            match location {
                Some(location) if (300..400).contains(&response.status) => {
                    if redirects.len() == MAX_REDIRECTS {
                        return Err(ServiceError::Failed(format!(
                            "`{text}` redirected more than {MAX_REDIRECTS} times"
                        )));
                    }
                    let next = url.join(&location).map_err(|e| {
                        bad(format!(
                            "`{url}` redirected to `{location}`, which is not a URL: {e}"
                        ))
                    })?;
                    self.check_url(&next, &format!("`{url}` redirected to"))?;
                    redirects.push(Value::String(next.to_string()));
                    url = next;
                }
                _ => {
                    use base64::Engine as _;
                    return Ok(json!({
                        "status": response.status,
                        "url": url.as_str(),
                        "redirects": redirects,
                        "content_type": response.header("content-type"),
                        "truncated": response.truncated,
                        "body_base64": base64::engine::general_purpose::STANDARD.encode(&response.body),
                    }));
                }
            }
        }
    }

    async fn chat(&self, request: &Value) -> Result<Value, ServiceError> {
        if !self.llm {
            return Err(ServiceError::Denied(format!(
                "{} does not list `{LLM_CHAT}` in its capability_requirements",
                self.tool
            )));
        }
        let Some(endpoint) = &self.config.llm else {
            return Err(ServiceError::Denied(
                "the app configured no language model (an OpenAI-compatible endpoint: `--llm URL` on the CLI, `LocaraConfig::with_llm` in a host)"
                    .to_owned(),
            ));
        };
        let Some(messages) = request.get("messages").filter(|m| m.is_array()) else {
            return Err(ServiceError::Failed(
                "an `llm.chat` request needs a `messages` array".to_owned(),
            ));
        };
        let mut body = json!({"model": endpoint.model, "messages": messages, "stream": false});
        for key in [
            "max_tokens",
            "temperature",
            "response_format",
            "stop",
            "seed",
        ] {
            if let Some(value) = request.get(key) {
                body[key] = value.clone();
            }
        }
        let url = endpoint.completions_url().map_err(ServiceError::Failed)?;
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if let Some(key) = &endpoint.api_key {
            headers.push(("authorization".to_owned(), format!("Bearer {key}")));
        }
        let request = HttpRequest::post(url.clone(), headers, body.to_string().into_bytes())
            .with_egress(Egress::Configured);
        let failed = |m: String| ServiceError::Failed(format!("the language model at `{url}` {m}"));
        let response = self
            .http()?
            .send(request, LLM_MAX_BYTES)
            .await
            .map_err(|e| failed(format!("could not be reached: {e}")))?;
        if !(200..300).contains(&response.status) {
            let text: String = String::from_utf8_lossy(&response.body)
                .chars()
                .take(500)
                .collect();
            return Err(failed(format!(
                "answered {}: {}",
                response.status,
                text.trim()
            )));
        }
        let answer: Value = serde_json::from_slice(&response.body)
            .map_err(|e| failed(format!("answered with a body that is not JSON: {e}")))?;
        let choice = &answer["choices"][0];
        let Some(content) = choice["message"]["content"].as_str() else {
            return Err(failed(format!(
                "answered without `choices[0].message.content`: {answer}"
            )));
        };
        Ok(json!({
            "content": content,
            "finish_reason": choice["finish_reason"],
            "model": answer["model"],
            "usage": answer["usage"],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &[&str]) -> Vec<String> {
        list.iter().map(|h| (*h).to_owned()).collect()
    }

    #[test]
    fn the_tools_hosts_are_bounded_by_the_apps() {
        let app = hosts(&["api.example.com", "127.0.0.1"]);
        assert_eq!(
            effective_hosts(&hosts(&["127.0.0.1", "evil.example"]), &app),
            hosts(&["127.0.0.1"])
        );
        // "*" in the tool means whatever the app allows, and nothing when it allows nothing.
        assert_eq!(effective_hosts(&hosts(&["*"]), &app), app);
        assert!(effective_hosts(&hosts(&["*"]), &[]).is_empty());
        // "*" in the app allows every host the tool names.
        assert_eq!(
            effective_hosts(&hosts(&["a.example"]), &hosts(&["*"])),
            hosts(&["a.example"])
        );
    }

    #[test]
    fn hosts_match_whole_names_ignoring_case() {
        let allowed = hosts(&["example.com"]);
        assert!(host_allowed(&allowed, "EXAMPLE.com"));
        assert!(!host_allowed(&allowed, "api.example.com"));
        assert!(!host_allowed(&allowed, "example.com.evil"));
        assert!(!host_allowed(&[], "example.com"));
    }

    #[test]
    fn addresses_match_every_spelling_of_themselves() {
        let allowed = hosts(&["0:0:0:0:0:0:0:1", "::ffff:127.0.0.2", "10.0.0.1"]);
        // How `url` writes these hosts (an IPv6 address compressed, without its brackets).
        assert!(host_allowed(&allowed, "::1"));
        assert!(host_allowed(&allowed, "::ffff:7f00:2"));
        assert!(host_allowed(&allowed, "10.0.0.1"));
        assert!(!host_allowed(&allowed, "::2"));
        assert!(!host_allowed(&allowed, "10.0.0.10"));
        assert!(!host_allowed(&hosts(&["::1"]), "localhost"));
    }

    #[test]
    fn the_llm_url_must_be_http_or_https() {
        let url = LlmEndpoint::new("http://127.0.0.1:8080/v1/", "m").completions_url();
        assert_eq!(
            url.unwrap().as_str(),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        let tls = LlmEndpoint::new("https://api.example.com/v1", "m").completions_url();
        assert_eq!(
            tls.unwrap().as_str(),
            "https://api.example.com/v1/chat/completions"
        );
        let ftp = LlmEndpoint::new("ftp://files.example/v1", "m").completions_url();
        assert!(ftp.unwrap_err().contains("not an http or https URL"));
    }
}
