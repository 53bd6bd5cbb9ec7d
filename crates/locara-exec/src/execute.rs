//! The innermost service: runs a checked call in the sandbox under its limits.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    task::{Context, Poll},
};

use locara_manifest::{EffectiveLimits, ToolManifest};
use locara_registry::{Digest, VerifiedArtifact};
use locara_sandbox::{
    CancelToken, Capabilities, Compiled, DirPerms, LimitKind, Limits, MadeBytes, RunArgs,
    RunFuture, RunOutcome, RunStatus, Sandbox,
};
use serde_json::Value;
use tower::Service;

use crate::{
    CallFuture, ExecError, FailureKind, Provenance, ResolvedCall, ResolvedTool, RunStats,
    ToolFailure, ToolResult,
    services::{CallServices, Gateway, ProgressReporter, ServicesConfig},
};

/// Where the workspace directory appears inside the tool.
pub(crate) const WORKSPACE_GUEST_PATH: &str = "/workspace";

/// Where a tool's models appear inside it, read-only.
pub(crate) const MODELS_GUEST_PATH: &str = "/models";

/// The schema keyword that marks a file argument (`{"path"}` or `{"base64"}`), see
/// `docs/tool-abi.md`.
pub(crate) const BLOB_KEYWORD: &str = "x-locara-blob";

/// Runs a [`ResolvedCall`] in the sandbox: compiles its module once (per process, and on disk
/// if the sandbox has a cache), then runs it on a blocking thread under the manifest's limits,
/// capped by the host's.
#[derive(Debug, Clone)]
pub struct Execute {
    sandbox: Sandbox,
    max_limits: EffectiveLimits,
    compiled: Arc<Mutex<HashMap<Digest, Compiled>>>,
    /// Shared by every clone of this service and every call's [`CallServices`]: cloning the
    /// pipeline (tower clones it once a call) copies no endpoint's strings.
    services: Arc<ServicesConfig>,
}

impl Execute {
    /// A service that runs calls in `sandbox`, never with more than `max_limits`.
    pub fn new(sandbox: Sandbox, max_limits: EffectiveLimits) -> Execute {
        Execute {
            sandbox,
            max_limits,
            compiled: Arc::default(),
            services: Arc::default(),
        }
    }

    /// Sets what the host services wasm tools may call (`web.fetch`, `llm.chat`) use.
    pub fn with_services(mut self, services: ServicesConfig) -> Execute {
        self.services = Arc::new(services);
        self
    }

    /// The engine's name, as results report it.
    fn engine(&self) -> &'static str {
        self.sandbox.kind().map_or("custom", |k| k.name())
    }

    fn compiled(&self, artifact: &VerifiedArtifact) -> Result<Compiled, ExecError> {
        if let Some(compiled) = self.compiled_already(artifact) {
            return Ok(compiled);
        }
        let key = *artifact.artifact_digest();
        // The hex digest is the sandbox's cache key: it names the bytes, verified by the registry.
        // A module compiled before needs no bytes, so they are read only to compile.
        let compiled = self
            .sandbox
            .compile_unless_cached(&key.to_hex(), || artifact.wasm().map_err(ExecError::from))?;
        self.compiled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, compiled.clone());
        Ok(compiled)
    }

    /// The compiled module of `artifact` if this process compiled it already.
    fn compiled_already(&self, artifact: &VerifiedArtifact) -> Option<Compiled> {
        self.compiled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(artifact.artifact_digest())
            .cloned()
    }

    /// Runs a call to its end on this (blocking) thread, compiling its module first if needed.
    fn run(
        &self,
        call: &mut ResolvedCall,
        artifact: &VerifiedArtifact,
        cancel: &CancelToken,
        runtime: tokio::runtime::Handle,
    ) -> Result<ToolResult, ExecError> {
        let compiled = self.compiled(artifact)?;
        let (args, limits, made) = self.prepare(call, artifact, cancel, runtime)?;
        let outcome =
            compiled.run_cancellable(&args.input, &args.limits, &args.caps, &args.cancel)?;
        drop(args);
        finish(self.engine(), artifact, &limits, outcome, &made)
    }

    /// What the sandbox is given for a call: its input, limits and capabilities, the
    /// effective limits the result reports, and the file arguments decoded while it runs. A
    /// file argument's base64 text made so ([`stage_blobs`]) is taken out of the call's
    /// arguments, not copied.
    fn prepare(
        &self,
        call: &mut ResolvedCall,
        artifact: &VerifiedArtifact,
        cancel: &CancelToken,
        runtime: tokio::runtime::Handle,
    ) -> Result<(RunArgs, EffectiveLimits, Vec<MadeBlob>), ExecError> {
        let manifest = artifact.manifest();
        let limits = effective_limits(&manifest.limits(), &self.max_limits);
        let sandbox_limits = Limits {
            memory_bytes: limits.memory_bytes,
            wall_time: limits.wall_time,
            fuel: limits.fuel,
            output_bytes: limits.output_bytes,
            max_fds: limits.max_fds,
            temp_bytes: limits.temp_bytes,
        };
        let mut argv = manifest.argv().into_iter();
        let program = argv.next().unwrap_or_default();
        let mut caps = Capabilities::new()
            .program_name(program)
            .with_args(argv)
            .collecting("out");
        if let (Some((dir, perms)), Some(root)) =
            (call.grant.workspace(), call.grant.workspace_root())
        {
            caps = caps.preopened_dir_beneath(root, dir, WORKSPACE_GUEST_PATH, perms);
        }
        if let Some(models) = &call.models {
            caps = caps.preopened_dir(models, MODELS_GUEST_PATH, DirPerms::ReadOnly);
        }
        let grant = &call.grant;
        let declares_tools = manifest
            .capability_requirements
            .iter()
            .any(|s| s == crate::gateway::TOOLS);
        // The models the tool may run on the host: those its manifest pins, in the directory
        // the registry verified.
        let models = match (&self.services.models, &call.models) {
            (Some(runner), Some(dir)) if grant.models => Some(crate::models::CallModels {
                runner: Arc::clone(runner),
                files: manifest
                    .model_dependencies
                    .iter()
                    .map(|m| {
                        crate::ModelFile::new(&m.name, m.sha256.to_string(), dir.join(&m.name))
                    })
                    .collect(),
            }),
            _ => None,
        };
        let declares_models = manifest
            .capability_requirements
            .iter()
            .any(|s| s == crate::MODELS_RUN);
        if !grant.hosts.is_empty()
            || grant.llm
            || grant.progress
            || grant.kv
            || declares_tools
            || declares_models
        {
            caps = caps.with_services(Arc::new(CallServices {
                runtime: runtime.clone(),
                config: Arc::clone(&self.services),
                tool: manifest.tool_ref().to_string(),
                hosts: grant.hosts.clone(),
                addresses: grant.addresses.clone().into(),
                llm: grant.llm,
                max_bytes: usize::try_from(limits.output_bytes).unwrap_or(usize::MAX),
                progress: grant
                    .progress
                    .then(|| ProgressReporter::new(call.context.progress.clone())),
                kv: grant.kv,
                gateway: if grant.tools {
                    Gateway::Granted(call.context.gateway.clone())
                } else if declares_tools {
                    Gateway::NotGranted
                } else {
                    Gateway::Undeclared
                },
                models,
            }));
        }
        if let Some(seed) = call.context.seed {
            caps = caps.with_random_seed(seed);
        }
        // A call that can change nothing outside its sandbox (no workspace it may write, no
        // host service with effects) may start before its file arguments are decoded: one
        // found damaged late fails the call all the same, and nothing the tool did outlives it.
        let contained = call
            .grant
            .workspace()
            .is_none_or(|(_, perms)| perms == DirPerms::ReadOnly)
            && grant.hosts.is_empty()
            && !grant.llm
            && !grant.kv
            && !grant.tools;
        let mut made = Vec::new();
        // Only a tool with file arguments has its arguments rewritten (and so copied).
        let input = if file_arguments(manifest).next().is_some() {
            let producers = contained.then_some(&runtime);
            let (arguments, staged) = stage_blobs(manifest, &mut call.arguments, producers)?;
            for (name, bytes) in staged {
                caps = match bytes {
                    Staged::Decoded(bytes) => caps.with_temp_file(format!("in/{name}"), bytes),
                    Staged::Made(blob) => {
                        let bytes = Arc::clone(&blob.bytes);
                        made.push(blob);
                        caps.with_made_temp_file(format!("in/{name}"), bytes)
                    }
                };
            }
            serde_json::to_vec(&arguments)
        } else {
            serde_json::to_vec(&call.arguments)
        }
        .map_err(|e| ExecError::Cancelled(e.to_string()))?;
        Ok((
            RunArgs {
                input,
                limits: sandbox_limits,
                caps,
                cancel: cancel.clone(),
            },
            limits,
            made,
        ))
    }
}

impl Service<ResolvedCall> for Execute {
    type Response = ToolResult;
    type Error = ExecError;
    type Future = CallFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ExecError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: ResolvedCall) -> CallFuture {
        let artifact = match &call.tool {
            ResolvedTool::Signed(artifact) => artifact.clone(),
            ResolvedTool::Host(tool) => {
                let limits = effective_limits(&tool.manifest().limits(), &self.max_limits);
                return Box::pin(crate::host_tool::run(
                    tool.clone(),
                    call.arguments,
                    call.context,
                    limits,
                ));
            }
        };
        let cancel = CancelToken::new();
        // Dropping the future (a timeout, `select!`, an aborted task, a client that went away)
        // stops the call in the sandbox, which then removes its temp dir as after any end.
        let guard = CancelOnDrop(cancel.clone());
        // A module this process compiled already is prepared and started here, and the future
        // holds only what its end needs (not the call, not this service): a short call ends
        // in its first poll, on the caller's thread, with no thread hop; a longer one
        // continues on a blocking thread (see `drive`). Outside a runtime (a future polled
        // later, elsewhere) the call is prepared when first polled, below.
        if let (Some(compiled), Ok(runtime)) = (
            self.compiled_already(&artifact),
            tokio::runtime::Handle::try_current(),
        ) {
            let mut call = call;
            let (args, limits, made) = match self.prepare(&mut call, &artifact, &cancel, runtime) {
                Ok(prepared) => prepared,
                Err(e) => return Box::pin(std::future::ready(Err(e))),
            };
            drop(call);
            let engine = self.engine();
            let started = start(&compiled, args);
            return Box::pin(async move {
                let _guard = guard;
                let outcome = drive_started(&compiled, started).await?;
                finish(engine, &artifact, &limits, outcome, &made)
            });
        }
        let this = self.clone();
        Box::pin(async move {
            let mut call = call;
            let _guard = guard;
            let runtime = tokio::runtime::Handle::current();
            if let Some(compiled) = this.compiled_already(&artifact) {
                let (args, limits, made) = this.prepare(&mut call, &artifact, &cancel, runtime)?;
                let outcome = drive_started(&compiled, start(&compiled, args)).await?;
                return finish(this.engine(), &artifact, &limits, outcome, &made);
            }
            // A first call compiles, which is never done on the runtime's thread.
            tokio::task::spawn_blocking(move || this.run(&mut call, &artifact, &cancel, runtime))
                .await
                .map_err(|e| ExecError::Cancelled(e.to_string()))?
        })
    }
}

/// A call of a compiled module, started: the future [`Compiled::start`] made (it runs only when
/// polled), or the call given back by an engine that cannot start one; and whether its first
/// slice may run on the runtime's thread (few enough staged bytes).
struct Started {
    call: Result<RunFuture, Box<RunArgs>>,
    inline: bool,
}

fn start(compiled: &Compiled, args: RunArgs) -> Started {
    let inline = staged_bytes(&args.caps) <= INLINE_STAGED_BYTES;
    Started {
        call: compiled.start(args),
        inline,
    }
}

/// Runs a started call of `compiled` to its end: its future driven (see [`drive`]), or, for an
/// engine that cannot start a call as a future, on a blocking thread.
async fn drive_started(compiled: &Compiled, started: Started) -> Result<RunOutcome, ExecError> {
    let Started { call, inline } = started;
    match call {
        Ok(future) => drive(future, inline).await,
        Err(args) => {
            let compiled = compiled.clone();
            tokio::task::spawn_blocking(move || {
                compiled.run_cancellable(&args.input, &args.limits, &args.caps, &args.cancel)
            })
            .await
            .map_err(|e| ExecError::Cancelled(e.to_string()))?
            .map_err(ExecError::from)
        }
    }
}

/// Turns how the call ended into its result: the input's error instead when a file
/// argument decoded while the call ran turns out not to be base64 (decoded to its end
/// here if the tool did not read all of it).
fn finish(
    engine: &'static str,
    artifact: &VerifiedArtifact,
    limits: &EffectiveLimits,
    outcome: RunOutcome,
    made: &[MadeBlob],
) -> Result<ToolResult, ExecError> {
    let manifest = artifact.manifest();
    if outcome.status == RunStatus::Cancelled {
        return Err(ExecError::Cancelled(format!(
            "{} was stopped after {} ms",
            manifest.tool_ref(),
            outcome.elapsed.as_millis()
        )));
    }
    if let Some(blob) = made.iter().find(|blob| !blob.bytes.finish()) {
        let message = match decode_base64(blob.text()) {
            Err(e) => e.to_string(),
            // `base64-simd` refuses exactly what `base64` does (the unit test below), so
            // this is not expected; the call is answered as failed all the same, since
            // the tool read an error where its input was.
            Ok(_) => "the vector decoder refused it".to_owned(),
        };
        return Err(invalid_base64(manifest, &blob.name, &message));
    }
    let mut result = result_of(manifest, outcome, *limits, engine.to_owned());
    result.provenance = Provenance {
        manifest_sha256: artifact.manifest_digest().to_hex(),
        artifact_sha256: artifact.artifact_digest().to_hex(),
        key_id: artifact.key_id().to_string(),
    };
    Ok(result)
}

/// The most bytes of staged files a call may have and still start on the async runtime's
/// thread: staging writes them to the temp dir before the guest runs, and a big write belongs
/// on a blocking thread.
const INLINE_STAGED_BYTES: usize = 256 << 10;

fn staged_bytes(caps: &Capabilities) -> usize {
    caps.staged_files().map(|(_, len)| len).sum()
}

/// Drives a call started by the sandbox: polled once here (on the async runtime's thread, when
/// `inline`), where a call that ends within one slice of guest execution costs no thread hop;
/// a call still pending after it (a longer call, or one about to block in a sleep or a host
/// service) is moved to a blocking thread and driven to its end there. Either way the call is
/// stopped when the caller's future is dropped, by the token [`CancelOnDrop`] cancels.
async fn drive(mut future: RunFuture, inline: bool) -> Result<RunOutcome, ExecError> {
    if inline {
        let first = std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await;
        if let Poll::Ready(outcome) = first {
            return Ok(outcome?);
        }
    }
    let outcome = tokio::task::spawn_blocking(move || locara_sandbox::block_on(future))
        .await
        .map_err(|e| ExecError::Cancelled(e.to_string()))??;
    Ok(outcome)
}

/// Cancels its token when dropped: held by a call's future, it turns dropping the future into
/// stopping the call. Cancelling a call that already ended does nothing.
#[derive(Debug)]
struct CancelOnDrop(CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// A file argument's bytes, as staged.
enum Staged {
    /// Decoded before the call starts.
    Decoded(Vec<u8>),
    /// Decoded while the call runs.
    Made(MadeBlob),
}

/// A file argument decoded while its call runs: its name, its base64 text (taken out of the
/// call's arguments), where in it the base64 is (the text trimmed), and the bytes.
pub(crate) struct MadeBlob {
    name: String,
    text: Arc<String>,
    range: std::ops::Range<usize>,
    bytes: Arc<MadeBytes>,
}

impl MadeBlob {
    fn text(&self) -> &str {
        &self.text[self.range.clone()]
    }
}

/// The shortest base64 text a contained call decodes while it runs rather than before: 1 MiB,
/// ~0.12 ms to decode (see [`TWO_THREADS_FROM`]).
const MADE_FROM: usize = 1 << 20;

/// How many base64 characters make one chunk of a file decoded while its call runs (48 KiB of
/// bytes): the guest's first read waits for one (~8 µs), and a chunk is a fraction of a
/// percent of such a file.
const TEXT_CHUNK: usize = 1 << 16;

/// The arguments with every file argument given as `{"base64": ...}` (a top-level property
/// whose schema has `"x-locara-blob": true`) replaced by `{"path": "/tmp/in/<name>"}`, and
/// the bytes to stage there: decoded once, here, so the tool never parses them out of its
/// stdin. The other values are copied; the base64 text (megabytes) is only read.
///
/// For a call that can change nothing outside its sandbox, given the runtime whose blocking
/// threads decode (`producers`), a text of [`MADE_FROM`] characters or more whose length and
/// padding are right is taken out of `arguments` and decoded while the call runs
/// ([`made_blob`]) instead.
fn stage_blobs(
    manifest: &ToolManifest,
    arguments: &mut Value,
    producers: Option<&tokio::runtime::Handle>,
) -> Result<(Value, Vec<(String, Staged)>), ExecError> {
    let Some(object) = arguments.as_object_mut() else {
        return Ok((arguments.clone(), Vec::new()));
    };
    let blobs: Vec<&str> = file_arguments(manifest)
        .filter(|name| !name.contains(['/', '\\', '\0']) && *name != "." && *name != "..")
        .collect();
    let mut rewritten = serde_json::Map::new();
    let mut staged = Vec::new();
    for (name, value) in object {
        let encoded = if blobs.contains(&name.as_str()) {
            value.get_mut("base64").and_then(|text| match text {
                Value::String(text) => Some(text),
                _ => None,
            })
        } else {
            None
        };
        let Some(encoded) = encoded else {
            rewritten.insert(name.clone(), value.clone());
            continue;
        };
        let path = format!("/tmp/in/{name}");
        let bytes = match producers.and_then(|runtime| made_blob(name, encoded, runtime)) {
            Some(made) => Staged::Made(made),
            None => Staged::Decoded(
                decode_base64(encoded.trim())
                    .map_err(|e| invalid_base64(manifest, name, &e.to_string()))?,
            ),
        };
        rewritten.insert(name.clone(), serde_json::json!({ "path": path }));
        staged.push((name.clone(), bytes));
    }
    Ok((Value::Object(rewritten), staged))
}

/// `encoded` decoded while the call runs, if it is long enough ([`MADE_FROM`]) and its length
/// and padding are right (otherwise it is decoded now, which finds the error): the text is
/// taken (an empty string is left in the arguments), and one of `runtime`'s blocking threads
/// (kept from call to call, where a new thread cost ~20 µs more) decodes it chunk by chunk
/// ahead of the tool's reads, which decode a chunk themselves when they get there first.
fn made_blob(
    name: &str,
    encoded: &mut String,
    runtime: &tokio::runtime::Handle,
) -> Option<MadeBlob> {
    let trimmed = encoded.trim();
    if trimmed.len() < MADE_FROM {
        return None;
    }
    let len = base64_simd::STANDARD
        .decoded_length(trimmed.as_bytes())
        .ok()?;
    // Where the trimmed text starts: after the whitespace `trim` took from the front.
    let start = encoded.len() - encoded.trim_start().len();
    let range = start..start + trimmed.len();
    let text = Arc::new(std::mem::take(encoded));
    let source = Arc::clone(&text);
    let chunks = range.clone();
    let bytes = Arc::new(MadeBytes::new(len, TEXT_CHUNK / 4 * 3, move |i, out| {
        let start = chunks.start + i * TEXT_CHUNK;
        let piece = &source.as_bytes()[start..(start + TEXT_CHUNK).min(chunks.end)];
        // Each piece is base64 on its own: a whole number of quanta, the text's padding in
        // the last. One that is not, or that decodes to other than its chunk's length (a
        // piece ending in padding), is damaged.
        let engine = base64_simd::STANDARD;
        if engine.decoded_length(piece).ok()? != out.len() {
            return None;
        }
        engine
            .decode(piece, base64_simd::Out::from_uninit_slice(out))
            .ok()
    }));
    let producer = Arc::clone(&bytes);
    // Its answer is `finish`'s to give, once the call has ended.
    drop(runtime.spawn_blocking(move || MadeBytes::make_all(&producer)));
    Some(MadeBlob {
        name: name.to_owned(),
        text,
        range,
        bytes,
    })
}

/// A file argument's base64 text refused, with `base64`'s `message` (which names the offending
/// symbol and its offset).
fn invalid_base64(manifest: &ToolManifest, name: &str, message: &str) -> ExecError {
    ExecError::InvalidInput {
        tool: manifest.tool_ref().to_string(),
        violations: vec![crate::SchemaViolation {
            pointer: format!("/{name}/base64"),
            constraint: "standard base64 (RFC 4648, with padding)".to_owned(),
            message: format!("the file's bytes are not valid base64: {message}"),
        }],
    }
}

/// Decodes standard base64 (RFC 4648, with padding). A file argument is megabytes of it and
/// its decoding is most of what the host does for such a call, so the vector decoder
/// (`base64-simd`, AVX2/SSE4.1/NEON chosen at run time) goes first, on two threads for a long
/// text ([`vector_decode`]); any input it refuses is decoded again by `base64`, whose answer
/// (the bytes, or the error naming the offending symbol and its offset) is the one given.
fn decode_base64(encoded: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::Engine as _;
    vector_decode(encoded.as_bytes(), TWO_THREADS_FROM)
        .ok_or(())
        .or_else(|()| base64::engine::general_purpose::STANDARD.decode(encoded))
}

/// The shortest base64 text decoded on two threads: ~1 MiB takes the vector decoder ~0.12 ms,
/// against ~20 µs to start a thread (a minute of WAV, 7 MB of text, takes 0.83 ms on one and
/// 0.55 ms on two, on a 2-core machine).
const TWO_THREADS_FROM: usize = 1 << 20;

/// `text` decoded by `base64-simd`, or `None` where it refuses it. From `two_threads_from`
/// bytes on, where the machine has a second core, the text is cut in two at a multiple of
/// four characters and the first half decoded on a second thread into the first part of the
/// answer while this one decodes the second. Each half is checked as a whole base64 text, and
/// each must fill its part exactly: a first half ending in padding (valid alone, the whole
/// not) decodes to fewer bytes than its part holds, and is refused.
fn vector_decode(text: &[u8], two_threads_from: usize) -> Option<Vec<u8>> {
    use base64_simd::Out;
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let engine = base64_simd::STANDARD;
    let total = engine.decoded_length(text).ok()?;
    let mut decoded = Vec::with_capacity(total);
    let spare = &mut decoded.spare_capacity_mut()[..total];
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let written = if text.len() < two_threads_from.max(8) || cores < 2 {
        engine
            .decode(text, Out::from_uninit_slice(spare))
            .ok()?
            .len()
    } else {
        let (head, tail) = text.split_at(text.len() / 8 * 4);
        let (first, second) = spare.split_at_mut(head.len() / 4 * 3);
        let (first_len, second_len) = (first.len(), second.len());
        let halves = std::thread::scope(|scope| {
            let other = std::thread::Builder::new()
                .name("locara-base64".to_owned())
                .spawn_scoped(scope, || {
                    engine
                        .decode(head, Out::from_uninit_slice(first))
                        .map(|d| d.len())
                })
                .ok()?;
            let this = engine
                .decode(tail, Out::from_uninit_slice(second))
                .map(|d| d.len());
            let other = other
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            Some((other.ok(), this.ok()))
        });
        // Where no thread could be started, this one decodes the whole text.
        let Some((head_written, tail_written)) = halves else {
            return engine.decode_to_vec(text).ok();
        };
        if head_written? != first_len || tail_written? != second_len {
            return None;
        }
        total
    };
    if written != total {
        return None;
    }
    #[allow(
        unsafe_code,
        reason = "the decoder writes into the vector's spare capacity"
    )]
    // SAFETY: `total` is within the capacity reserved above, and the decoder initialised the
    // first `total` bytes: one call or two wrote exactly that many (checked just above).
    unsafe {
        decoded.set_len(total);
    }
    Some(decoded)
}

/// The names of a tool's file arguments: top-level input properties whose schema carries
/// `"x-locara-blob": true`.
pub(crate) fn file_arguments(manifest: &ToolManifest) -> impl Iterator<Item = &str> {
    manifest
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(name, schema)| {
            !name.is_empty() && schema.get(BLOB_KEYWORD).and_then(Value::as_bool) == Some(true)
        })
        .map(|(name, _)| name.as_str())
}

/// The manifest's limits, each capped by the host's.
pub(crate) fn effective_limits(wanted: &EffectiveLimits, max: &EffectiveLimits) -> EffectiveLimits {
    let mut limits = *wanted;
    limits.memory_bytes = wanted.memory_bytes.min(max.memory_bytes);
    limits.wall_time = wanted.wall_time.min(max.wall_time);
    limits.fuel = wanted.fuel.min(max.fuel);
    limits.output_bytes = wanted.output_bytes.min(max.output_bytes);
    limits.max_fds = wanted.max_fds.min(max.max_fds);
    limits.temp_bytes = wanted.temp_bytes.min(max.temp_bytes);
    limits
}

fn limit_value(limit: LimitKind, limits: &EffectiveLimits) -> String {
    match limit {
        LimitKind::Memory => format!("{} MiB", limits.memory_bytes >> 20),
        LimitKind::WallTime => format!("{} ms", limits.wall_time.as_millis()),
        LimitKind::Fuel => format!("{} units", limits.fuel),
        LimitKind::Output => format!("{} bytes", limits.output_bytes),
        LimitKind::Fds => format!("{} descriptors", limits.max_fds),
        LimitKind::TempBytes => format!("{} MiB", limits.temp_bytes >> 20),
        LimitKind::Stack => "the call stack's nesting depth".to_owned(),
        _ => "its limit".to_owned(),
    }
}

fn limit_hint(limit: LimitKind) -> &'static str {
    match limit {
        LimitKind::Output => {
            "ask for less output (a smaller range or max_* argument), or split the work into several calls"
        }
        LimitKind::Fds => "the tool opened too many files at once; work on fewer files per call",
        LimitKind::TempBytes => {
            "the tool wrote more to its temp dir than it may; give it a smaller input or split the work"
        }
        LimitKind::Stack => "use iteration instead of deep recursion",
        _ => {
            "the input is probably too large or too complex for one call: split it into smaller calls"
        }
    }
}

/// Turns a sandbox outcome into the pipeline's result.
fn result_of(
    manifest: &ToolManifest,
    outcome: RunOutcome,
    limits: EffectiveLimits,
    engine: String,
) -> ToolResult {
    let tool = manifest.tool_ref();
    let stderr = String::from_utf8_lossy(&outcome.stderr)
        .trim_end()
        .to_owned();
    let failure = |kind, message: String, hint: &str| {
        Some(ToolFailure {
            kind,
            message,
            hint: hint.to_owned(),
            violations: Vec::new(),
        })
    };
    let (output, failure) = match outcome.status {
        RunStatus::Exited(0) => match serde_json::from_slice::<Value>(&outcome.stdout) {
            Ok(value) => (Some(value), None),
            Err(error) => {
                let start: String = String::from_utf8_lossy(&outcome.stdout)
                    .chars()
                    .take(200)
                    .collect();
                let message = format!(
                    "{tool} wrote output that is not JSON ({error}); it began with {start:?}"
                );
                (
                    None,
                    failure(
                        FailureKind::InvalidOutput,
                        message,
                        "this is a bug in the tool; report it to its publisher",
                    ),
                )
            }
        },
        RunStatus::Exited(code) => {
            let message = if stderr.is_empty() {
                format!("{tool} failed with exit code {code} and no message")
            } else {
                stderr.clone()
            };
            let hint = "read the message, correct the arguments and call again";
            (
                None,
                failure(FailureKind::ToolError { exit_code: code }, message, hint),
            )
        }
        RunStatus::LimitExceeded(limit) => {
            let message = format!(
                "{tool} exceeded its {limit} limit ({}) and was stopped",
                limit_value(limit, &limits)
            );
            (
                None,
                failure(
                    FailureKind::LimitExceeded {
                        limit: limit.name(),
                    },
                    message,
                    limit_hint(limit),
                ),
            )
        }
        RunStatus::Trapped(trap) => {
            let detail = stderr
                .lines()
                .find(|l| l.contains("panicked"))
                .unwrap_or(&trap)
                .to_owned();
            let message = format!("{tool} crashed: {detail}");
            (
                None,
                failure(
                    FailureKind::Crashed,
                    message,
                    "this is likely a bug in the tool; try other arguments or report it",
                ),
            )
        }
        RunStatus::OutputRefused(why) => {
            let message = format!("{tool} returned no files: {why}");
            (
                None,
                failure(
                    FailureKind::InvalidOutput,
                    message,
                    "a tool must leave its output files as regular files in a real directory; report this tool to its publisher",
                ),
            )
        }
        other => {
            let message = format!("{tool} ended unexpectedly: {other:?}");
            (
                None,
                failure(
                    FailureKind::Crashed,
                    message,
                    "report this to Locara's developers",
                ),
            )
        }
    };
    let files = if failure.is_none() {
        outcome.files
    } else {
        Vec::new()
    };
    ToolResult {
        tool,
        output,
        failure,
        stderr,
        files,
        truncation: None,
        stats: RunStats {
            engine,
            elapsed: outcome.elapsed,
            fuel_consumed: outcome.fuel_consumed,
            limits,
            enforced: outcome.enforced,
        },
        approval: None,
        provenance: Provenance::default(),
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use locara_manifest::ToolManifest;
    use serde_json::json;

    use super::{Staged, TEXT_CHUNK, decode_base64, stage_blobs, vector_decode};

    /// `decode_base64` accepts exactly what `base64`'s standard engine accepts, with the same
    /// bytes: encoded data of every length, and the same data broken every way a caller could
    /// break it (a bad symbol anywhere, missing or extra padding, non-zero trailing bits,
    /// whitespace, truncation).
    #[test]
    fn the_vector_decoder_accepts_exactly_what_base64_does() {
        let reference = |s: &str| base64::engine::general_purpose::STANDARD.decode(s).ok();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut cases: Vec<String> = [
            "", "QQ==", "QR==", "QQ=", "QQ", "QUI=", "QUJ=", "Q===", "=", "====",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        for len in (0..200).chain([1000, 4095, 4096, 4097, 65_537]) {
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
            cases.push(encoded.clone());
            if encoded.is_empty() {
                continue;
            }
            let at = next() as usize % encoded.len();
            for symbol in [b'!', b' ', b'\n', b'=', b'-', b'_', b'A', 0xc3] {
                let mut broken = encoded.clone().into_bytes();
                broken[at] = symbol;
                if let Ok(broken) = String::from_utf8(broken) {
                    cases.push(broken);
                }
            }
            cases.push(encoded.trim_end_matches('=').to_owned());
            cases.push(format!("{encoded}="));
            cases.push(format!("{encoded}===="));
            cases.push(encoded[..encoded.len() - 1].to_owned());
            cases.push(format!("{} {}", &encoded[..at], &encoded[at..]));
        }
        for case in &cases {
            assert_eq!(decode_base64(case).ok(), reference(case), "{case:?}");
            // The vector decoder alone: `base64` is only the judge of the errors' wording.
            assert_eq!(
                vector_decode(case.as_bytes(), usize::MAX),
                reference(case),
                "{case:?} by base64-simd"
            );
            // The same, cut in two and decoded on two threads (a long text's way).
            assert_eq!(
                vector_decode(case.as_bytes(), 0),
                vector_decode(case.as_bytes(), usize::MAX),
                "{case:?} on two threads"
            );
        }
        // A text long enough to be decoded on two threads by default, whole and with a bad
        // symbol in either half.
        let bytes: Vec<u8> = (0..(800 << 10) + 2).map(|_| next() as u8).collect();
        let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
        assert!(encoded.len() >= super::TWO_THREADS_FROM);
        assert_eq!(decode_base64(&encoded).ok(), Some(bytes));
        for at in [17, encoded.len() - 9] {
            let mut broken = encoded.clone().into_bytes();
            broken[at] = b'!';
            let broken = String::from_utf8(broken).expect("ASCII");
            assert_eq!(
                decode_base64(&broken).map_err(|e| e.to_string()),
                base64::engine::general_purpose::STANDARD
                    .decode(&broken)
                    .map_err(|e| e.to_string()),
                "a bad symbol at {at}"
            );
        }
        // Two halves valid alone, padding where the text is cut: the whole is not base64.
        for case in ["QQ==QUJD", "QUI=QUJDQUJD", "QUJDQQ==QUJDQUJD"] {
            assert_eq!(reference(case), None, "{case:?}");
            assert_eq!(vector_decode(case.as_bytes(), 0), None, "{case:?}");
        }
    }

    /// A manifest whose `source` is a file argument.
    fn with_a_file_argument() -> ToolManifest {
        ToolManifest::from_json(
            &json!({
                "schema_version": 1,
                "id": "test.file-reader",
                "version": "0.1.0",
                "display_name": "File reader",
                "description": "Reads a file.",
                "license": "Apache-2.0",
                "artifact": {
                    "url": "test.file-reader-0.1.0.wasm",
                    "sha256": "0000000000000000000000000000000000000000000000000000000000000000",
                    "size_bytes": 1
                },
                "safety_tier": "read_only",
                "limits": {"memory_mb": 64},
                "input_schema": {
                    "type": "object",
                    "properties": {"source": {"type": "object", "x-locara-blob": true}}
                },
                "output_schema": {"type": "object"}
            })
            .to_string(),
        )
        .expect("a valid manifest")
    }

    /// A contained call's long file argument is taken out of the arguments (not copied) and
    /// decoded while the call runs, to the same bytes, and a damaged one is found when the
    /// chunk holding the damage is made; a short one, or any of a call that is not contained,
    /// is decoded before the call starts.
    #[test]
    fn a_contained_call_decodes_a_long_file_argument_while_it_runs() {
        let manifest = with_a_file_argument();
        let bytes: Vec<u8> = (0..900_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let arguments = json!({"source": {"base64": format!(" {text}\n")}, "n": 3});
        let rewritten = json!({"source": {"path": "/tmp/in/source"}, "n": 3});

        let runtime = tokio::runtime::Runtime::new().unwrap();
        let producers = Some(runtime.handle());
        let mut taken = arguments.clone();
        let (args, staged) = stage_blobs(&manifest, &mut taken, producers).unwrap();
        assert_eq!(args, rewritten);
        assert_eq!(
            taken["source"]["base64"], "",
            "the text is taken, not copied"
        );
        let [(name, Staged::Made(blob))] = staged.as_slice() else {
            panic!("not made while the call runs")
        };
        assert_eq!(name, "source");
        assert_eq!(blob.text(), text);
        assert_eq!(blob.bytes.len(), bytes.len());
        let mut end = [0u8; 10];
        assert_eq!(
            blob.bytes.read_at(&mut end, bytes.len() as u64 - 10),
            Some(10)
        );
        assert_eq!(end, bytes[bytes.len() - 10..]);
        assert!(blob.bytes.finish() && !blob.bytes.failed());
        assert_eq!(blob.bytes.to_vec(), Some(bytes.clone()));

        for (mut arguments, producers) in [
            (arguments.clone(), None),
            (
                json!({"source": {"base64": &text[..(1 << 20) - 4]}}),
                producers,
            ),
        ] {
            let before = arguments.clone();
            let (_, staged) = stage_blobs(&manifest, &mut arguments, producers).unwrap();
            assert_eq!(arguments, before, "nothing is taken");
            let [(_, Staged::Decoded(decoded))] = staged.as_slice() else {
                panic!("not decoded before the call")
            };
            assert_eq!(decoded[..], bytes[..decoded.len()]);
        }

        // Damaged where the tool would read it last: a bad symbol in the last chunk, and
        // padding at the end of a chunk (each piece valid alone, the whole not).
        let mut bad_symbol = text.clone().into_bytes();
        let at = bad_symbol.len() - 10;
        bad_symbol[at] = b'!';
        let mut padded = text.clone();
        padded.replace_range(TEXT_CHUNK - 2..TEXT_CHUNK, "==");
        for damaged in [String::from_utf8(bad_symbol).unwrap(), padded] {
            let mut arguments = json!({"source": {"base64": &damaged}});
            let (_, staged) = stage_blobs(&manifest, &mut arguments, producers).unwrap();
            let [(_, Staged::Made(blob))] = staged.as_slice() else {
                panic!("not made while the call runs")
            };
            assert!(!blob.bytes.finish() && blob.bytes.failed());
            assert_eq!(
                decode_base64(blob.text()).map_err(|e| e.to_string()),
                base64::engine::general_purpose::STANDARD
                    .decode(&damaged)
                    .map_err(|e| e.to_string())
            );
            assert!(decode_base64(blob.text()).is_err());
        }
    }
}
