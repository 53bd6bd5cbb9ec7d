//! What Locara's Python and Node packages share: opening the facade from a language's options,
//! and every call as JSON values in and out.
//!
//! It knows how an app that is not written in Rust names things: the options object
//! (`home`, `app`, `engine`, `workspace`, `llm`, …), requests and responses as the facade's
//! JSON, errors as the facade's [`ErrorReport`](locara_facade::ErrorReport) (code, message, hint, violations, limit), and
//! the grants an app without a manifest gets, which are the CLI's (the person who wrote the
//! program named each tool). It deliberately knows nothing of Python or JavaScript values,
//! event loops or the GIL: `locara-python` and `locara-node` convert their languages' values to
//! and from [`serde_json::Value`] and drive the futures here on their own runtimes. Running a
//! tool is always the facade's [`Locara`], never a second implementation.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use locara_facade::{
    ApprovalDecision, ApprovalRequest, Approver, BackendKind, BatchRequest, ChainRequest,
    ChatEvent, ChatModel, ChatRequest, FsGrant, Grants, LlmEndpoint, Locara, LocaraConfig,
    RunRequest, SafetyTier, ToolFormat,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// How an app opens Locara: the constructor's arguments in either language.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// The Locara home (`registry/`, `cache/`, `trust/`, `locara.lock`), the same the CLI
    /// uses; by default `$LOCARA_HOME`.
    #[serde(default)]
    pub home: Option<PathBuf>,
    /// An app manifest (`locara.json`); its tools and grants bound every call. Without one,
    /// the app gets what the CLI gives the person at the terminal: `workspace`, read-only
    /// unless `allow_write`, the memory tools, kv, progress and code mode.
    #[serde(default)]
    pub app: Option<PathBuf>,
    /// `wasmtime` (the default) or `wasmi`.
    #[serde(default)]
    pub engine: Option<String>,
    /// The directory tools see at `/workspace` unless a call names another.
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    /// Without an app manifest: grant `workspace` read-write.
    #[serde(default)]
    pub allow_write: bool,
    /// Whom calls are made for (per-user tools such as memory are scoped by it).
    #[serde(default)]
    pub user: Option<String>,
    /// The app's language model, an OpenAI-compatible API base (`http://127.0.0.1:8080/v1`):
    /// what `chat` talks to and what `llm.chat` answers tools with.
    #[serde(default)]
    pub llm: Option<String>,
    /// The model name sent to `llm`.
    #[serde(default)]
    pub llm_model: Option<String>,
    /// The bearer token sent to `llm`.
    #[serde(default)]
    pub llm_api_key: Option<String>,
    /// Without an app manifest: the network hosts tools may reach (as `--allow-host`).
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// Approve every privileged call. Without it (and without an approver the language
    /// binding supplies), privileged calls are refused with `approval_denied`.
    #[serde(default)]
    pub approve_all: bool,
}

/// An app's handle on Locara: the facade, and the workspace calls default to.
#[derive(Debug, Clone)]
pub struct Sdk {
    locara: Locara,
    workspace: Option<PathBuf>,
}

/// A language binding's answer to a privileged call: `true` runs it.
pub type ApproveFn = Arc<dyn Fn(Value) -> bool + Send + Sync>;

/// Asks the binding's function, on a blocking thread (it may call into the language).
struct FnApprover(ApproveFn);

impl std::fmt::Debug for FnApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnApprover")
    }
}

#[async_trait::async_trait]
impl Approver for FnApprover {
    async fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        let question = json!({
            "tool": request.tool.to_string(),
            "safety_tier": format!("{:?}", request.safety_tier).to_lowercase(),
            "description": request.description,
            "arguments": request.arguments,
        });
        let approve = Arc::clone(&self.0);
        match tokio::task::spawn_blocking(move || approve(question)).await {
            Ok(true) => ApprovalDecision::approve("the app", "its approver said yes"),
            Ok(false) => ApprovalDecision::deny("the app", "its approver said no"),
            Err(_) => ApprovalDecision::deny("the app", "its approver failed"),
        }
    }
}

/// Approves every call: `approve_all`.
#[derive(Debug)]
struct ApproveAll;

#[async_trait::async_trait]
impl Approver for ApproveAll {
    async fn approve(&self, _: &ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::approve("the app", "approve_all")
    }
}

/// An error report as a value: the error a binding raises.
pub fn error(code: &str, message: impl Into<String>, hint: impl Into<String>) -> Value {
    json!({"code": code, "message": message.into(), "hint": hint.into()})
}

/// An error's report as a value.
pub fn report(error: &locara_facade::Error) -> Value {
    to_value(error.report())
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or_else(|e| {
        error(
            "internal",
            format!("cannot encode: {e}"),
            "report this as a bug",
        )
    })
}

/// The report of a call that is not a `RunRequest`.
pub fn invalid_call(e: &impl std::fmt::Display) -> Value {
    invalid(
        "call",
        e,
        "a call is {tool, arguments, workspace?, receipt?, seed?, user?}",
    )
}

fn invalid(what: &str, e: impl std::fmt::Display, hint: &str) -> Value {
    error("invalid_request", format!("invalid {what}: {e}"), hint)
}

/// `dir` made absolute, checked to be a directory.
fn directory(dir: &Path, what: &str) -> Result<PathBuf, Value> {
    std::fs::canonicalize(dir)
        .ok()
        .filter(|d| d.is_dir())
        .ok_or_else(|| {
            error(
                "invalid_request",
                format!("{what} {} is not a directory", dir.display()),
                "name an existing directory",
            )
        })
}

impl Sdk {
    /// Opens Locara with `options` (an [`Options`] object) and, when the binding has one, a
    /// function that approves privileged calls.
    ///
    /// # Errors
    /// An error report: options that are not valid, a home without tools, an app manifest that
    /// cannot be read, or anything [`Locara::new`] refuses.
    pub fn open(options: Value, approver: Option<ApproveFn>) -> Result<Sdk, Value> {
        let options: Options = serde_json::from_value(options).map_err(|e| {
            invalid(
                "options",
                e,
                "pass home, app, engine, workspace, allow_write, user, llm, llm_model, \
                 llm_api_key, allow_hosts or approve_all",
            )
        })?;
        let home = options
            .home
            .clone()
            .or_else(|| std::env::var_os("LOCARA_HOME").map(PathBuf::from))
            .ok_or_else(|| {
                error(
                    "no_home",
                    "no Locara home was given",
                    "pass home=… (the directory `cargo xtask build-tools --home` or `locara \
                     publish` installed tools into) or set LOCARA_HOME",
                )
            })?;
        let engine = match options.engine.as_deref() {
            None | Some("wasmtime") => BackendKind::Wasmtime,
            Some("wasmi") => BackendKind::Wasmi,
            Some(other) => {
                return Err(error(
                    "invalid_request",
                    format!("unknown engine `{other}`"),
                    "use `wasmtime` or `wasmi`",
                ));
            }
        };
        let workspace = options
            .workspace
            .as_deref()
            .map(|d| directory(d, "the workspace"))
            .transpose()?;
        // Each call removes its own temp dir: Python and Node may exit without dropping the
        // `Locara`, and a cleaner thread stopped by the exit would leave its queue on disk.
        let mut config = LocaraConfig::new(&home)
            .with_engine(engine)
            .with_background_temp_removal(false);
        match (approver, options.approve_all) {
            (Some(approve), _) => config = config.with_approver(Arc::new(FnApprover(approve))),
            (None, true) => config = config.with_approver(Arc::new(ApproveAll)),
            (None, false) => {}
        }
        if let Some(user) = &options.user {
            config = config.with_user(user);
        }
        let llm = options.llm.as_ref().map(|url| {
            let endpoint = LlmEndpoint::new(url, options.llm_model.as_deref().unwrap_or("default"));
            match &options.llm_api_key {
                Some(key) => endpoint.with_api_key(key),
                None => endpoint,
            }
        });
        if let Some(llm) = &llm {
            config = config.with_llm(llm.clone());
        }
        let http = locara_http::HyperClient::new(locara_egress::Connector::new());
        config = config.with_http_client(Arc::new(http));
        match &options.app {
            Some(file) => {
                let text = std::fs::read_to_string(file).map_err(|e| {
                    error(
                        "invalid_app",
                        format!("cannot read the app manifest {}: {e}", file.display()),
                        "name an app manifest (locara.json) that exists",
                    )
                })?;
                let app = locara_facade::AppManifest::from_json(&text).map_err(|e| {
                    error(
                        "invalid_app",
                        format!("invalid app manifest {}: {e}", file.display()),
                        "fix the app manifest; docs/app-manifest.md describes it",
                    )
                })?;
                let dir = match file.parent() {
                    Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
                    _ => PathBuf::from("."),
                };
                config = config.with_app(app, dir);
            }
            None => {
                if !config.registry_dir().is_dir() {
                    return Err(error(
                        "no_tools",
                        format!("no tools installed in {}", config.registry_dir().display()),
                        "run `cargo xtask build-tools --home DIR` (in the Locara repo) or \
                         `locara publish`, and pass that DIR as home",
                    ));
                }
                config = config.with_memory().with_grants(user_grants(
                    workspace.as_deref(),
                    &options,
                    llm.is_some(),
                ));
            }
        }
        let locara = Locara::new(&config).map_err(|e| report(&e))?;
        Ok(Sdk { locara, workspace })
    }

    /// The facade, for what this crate does not wrap.
    pub fn locara(&self) -> &Locara {
        &self.locara
    }

    /// The callable tools, newest version of each.
    pub fn list(&self) -> Value {
        to_value(&self.locara.list())
    }

    /// The `limit` tools that best match `query`.
    pub fn search(&self, query: &str, limit: usize) -> Value {
        to_value(&self.locara.search_tools(query, limit))
    }

    /// Everything a caller needs to call `tool`.
    ///
    /// # Errors
    /// The error report (`not_found`, …).
    pub fn describe(&self, tool: &str) -> Result<Value, Value> {
        self.locara
            .describe(tool)
            .map(|d| to_value(&d))
            .map_err(|e| report(&e))
    }

    /// The API of every callable tool as `typescript`, `typescript-module`, `python` or
    /// `python-module` source.
    ///
    /// # Errors
    /// An unknown language.
    pub fn export_api(&self, language: &str) -> Result<String, Value> {
        let language = match language {
            "typescript" => locara_facade::ApiLanguage::TypeScript,
            "typescript-module" => locara_facade::ApiLanguage::TypeScriptModule,
            "python" => locara_facade::ApiLanguage::Python,
            "python-module" => locara_facade::ApiLanguage::PythonModule,
            other => {
                return Err(error(
                    "invalid_request",
                    format!("unknown language `{other}`"),
                    "use `typescript`, `typescript-module`, `python` or `python-module`",
                ));
            }
        };
        Ok(self.locara.export_api(language))
    }

    /// Runs one call: its response (`ok` false when the tool ran and failed), or the report of
    /// why it could not run.
    ///
    /// # Errors
    /// The error report.
    pub async fn run(&self, request: Value) -> Result<Value, Value> {
        let request = serde_json::from_value(request).map_err(|e| invalid_call(&e))?;
        match self.run_request(request).await {
            Ok(response) => Ok(to_value(&response)),
            Err(e) => Err(report(&e)),
        }
    }

    /// [`Sdk::run`] without the JSON values, for a binding that converts the response itself
    /// (the per-call path both packages take); the workspace defaults to the app's.
    ///
    /// # Errors
    /// Why the call could not run.
    pub async fn run_request(
        &self,
        mut request: RunRequest,
    ) -> Result<locara_facade::RunResponse, locara_facade::Error> {
        if request.workspace.is_none() {
            request.workspace.clone_from(&self.workspace);
        }
        self.locara.run(request).await
    }

    /// Runs a batch (`{"calls": [...]}`): read-only calls concurrently.
    ///
    /// # Errors
    /// A batch that is not valid.
    pub async fn run_batch(&self, batch: Value) -> Result<Value, Value> {
        let mut batch: BatchRequest = serde_json::from_value(batch)
            .map_err(|e| invalid("batch", e, "a batch is {calls: [{tool, arguments}, …]}"))?;
        for call in &mut batch.calls {
            if call.workspace.is_none() {
                call.workspace.clone_from(&self.workspace);
            }
        }
        Ok(to_value(&self.locara.run_batch(batch).await))
    }

    /// Runs a chain (the facade's `ChainRequest` as JSON).
    ///
    /// # Errors
    /// A chain that is not valid.
    pub async fn run_chain(&self, chain: Value) -> Result<Value, Value> {
        let chain: ChainRequest = serde_json::from_value(chain).map_err(|e| {
            invalid(
                "chain",
                e,
                "a chain is {steps: [{tool, arguments, id?, when?, for_each?}, …]}",
            )
        })?;
        Ok(to_value(&self.locara.run_chain(chain).await))
    }

    /// Chats (see [`chat_request`] for the request), telling `on_event` each step, piece of
    /// text and tool call as it happens; the whole transcript.
    ///
    /// # Errors
    /// The report of why the chat could not start.
    pub async fn chat(
        &self,
        request: Value,
        on_event: &(dyn Fn(Value) + Send + Sync),
    ) -> Result<Value, Value> {
        let mut request = chat_request(request)?;
        if request.workspace.is_none() {
            request.workspace.clone_from(&self.workspace);
        }
        let events = |event: ChatEvent<'_>| on_event(event_value(event));
        match self.locara.chat_with(request, &events).await {
            Ok(response) => Ok(to_value(&response)),
            Err(e) => Err(report(&e)),
        }
    }
}

/// What the CLI grants the person at the terminal, who named each tool: `workspace`,
/// every safety tier (a privileged call still needs the approver), the hosts named, the
/// language model when there is one, kv, progress and code mode.
fn user_grants(workspace: Option<&Path>, options: &Options, llm: bool) -> Grants {
    let mut grants = Grants::new().with_max_safety_tier(SafetyTier::Privileged);
    if let Some(dir) = workspace {
        grants = grants.with_fs(FsGrant::new(dir).with_write(options.allow_write));
    }
    let mut net = locara_manifest::NetAccess::new();
    for host in &options.allow_hosts {
        net = net.with_host(host.clone());
    }
    grants = grants.with_net(net);
    if llm {
        grants = grants.with_service(locara_facade::LLM_CHAT);
    }
    grants
        .with_service(locara_facade::KV)
        .with_service(locara_facade::PROGRESS)
        .with_service(locara_facade::TOOLS)
}

/// A chat request from its JSON: `{"prompt": "…"}` or `{"messages": [...]}`, with `model`
/// (`{"base_url", "model", "format"?: "openai"|"anthropic", "api_key"?}`), `system`, `tools`,
/// `max_steps`, `max_tokens`, `timeout_ms`, `max_output_tokens`, `temperature`, `seed`,
/// `workspace`.
///
/// # Errors
/// An invalid request.
pub fn chat_request(request: Value) -> Result<ChatRequest, Value> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Model {
        base_url: String,
        model: String,
        #[serde(default)]
        format: Option<String>,
        #[serde(default)]
        api_key: Option<String>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Request {
        #[serde(default)]
        prompt: Option<String>,
        #[serde(default)]
        messages: Option<Vec<Value>>,
        #[serde(default)]
        model: Option<Model>,
        #[serde(default)]
        system: Option<String>,
        #[serde(default)]
        tools: Option<Vec<String>>,
        #[serde(default)]
        max_steps: Option<usize>,
        #[serde(default)]
        max_tokens: Option<u64>,
        #[serde(default)]
        timeout_ms: Option<u64>,
        #[serde(default)]
        max_output_tokens: Option<u32>,
        #[serde(default)]
        temperature: Option<f64>,
        #[serde(default)]
        seed: Option<u64>,
        #[serde(default)]
        workspace: Option<PathBuf>,
    }
    const HINT: &str = "a chat is {prompt or messages, model?, system?, tools?, max_steps?, \
                        max_tokens?, timeout_ms?, max_output_tokens?, temperature?, seed?, \
                        workspace?}";
    let r: Request = serde_json::from_value(request).map_err(|e| invalid("chat", e, HINT))?;
    let mut chat = match (r.prompt, r.messages) {
        (Some(prompt), None) => ChatRequest::new(prompt),
        (None, Some(messages)) => ChatRequest::with_messages(messages),
        _ => {
            return Err(error(
                "invalid_request",
                "a chat needs either a prompt or messages",
                HINT,
            ));
        }
    };
    if let Some(m) = r.model {
        let format = match m.format.as_deref() {
            None | Some("openai") => ToolFormat::OpenAi,
            Some("anthropic") => ToolFormat::Anthropic,
            Some(other) => {
                return Err(error(
                    "invalid_request",
                    format!("unknown model format `{other}`"),
                    "use `openai` or `anthropic`",
                ));
            }
        };
        let mut model = ChatModel::new(format, m.base_url, m.model);
        if let Some(key) = m.api_key {
            model = model.with_api_key(key);
        }
        chat = chat.with_model(model);
    }
    if let Some(system) = r.system {
        chat = chat.with_system(system);
    }
    if let Some(tools) = r.tools {
        chat = chat.with_tools(tools);
    }
    if let Some(steps) = r.max_steps {
        chat = chat.with_max_steps(steps);
    }
    if let Some(tokens) = r.max_tokens {
        chat = chat.with_max_tokens(tokens);
    }
    if let Some(ms) = r.timeout_ms {
        chat = chat.with_timeout(Duration::from_millis(ms));
    }
    if let Some(tokens) = r.max_output_tokens {
        chat = chat.with_max_output_tokens(tokens);
    }
    if let Some(t) = r.temperature {
        chat = chat.with_temperature(t);
    }
    if let Some(seed) = r.seed {
        chat = chat.with_seed(seed);
    }
    if let Some(dir) = r.workspace {
        chat = chat.with_workspace(dir);
    }
    Ok(chat)
}

/// A chat event as the bindings hand it on: `{"type": "step"|"text"|"tool_call", …}`.
fn event_value(event: ChatEvent<'_>) -> Value {
    match event {
        ChatEvent::Step { step } => json!({"type": "step", "step": step}),
        ChatEvent::Text { step, text } => json!({"type": "text", "step": step, "text": text}),
        ChatEvent::ToolCall { step, call } => {
            json!({"type": "tool_call", "step": step, "call": to_value(call)})
        }
        _ => json!({"type": "other"}),
    }
}

#[cfg(test)]
mod tests;
