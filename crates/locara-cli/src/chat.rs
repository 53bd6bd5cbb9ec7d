//! `locara chat`: the LLM tool loop on the command line ([`Locara::chat_with`]).
//!
//! The model's text streams to stdout as it arrives; each tool call is one line on stderr when
//! it ends (the tool, its arguments, and its outcome). `--transcript FILE` keeps the whole
//! chat as JSON, `--receipts DIR` a signed receipt per call. Exit codes: 0 the model answered,
//! 1 a budget stopped it (max steps, tokens, time), 2 the model failed or the chat could not
//! start.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Mutex,
    time::Duration,
};

use anyhow::{Context as _, format_err};
use clap::Args;
use locara_facade::{ChatEvent, ChatModel, ChatRequest, ChatResponse, ChatToolCall, StopReason};
use serde_json::{Value, json};

use crate::{
    arguments::{self, Stdin},
    cli::{Cli, Format},
    context::{self, Context},
    output, receipts,
};

/// Exit code: a budget stopped the chat.
const STOPPED: u8 = 1;
/// Exit code: the model failed.
const FAILED: u8 = 2;

/// `locara chat --help`: the long description, set on the subcommand, where clap reads it.
pub(crate) const CHAT_LONG_ABOUT: &str = "\
Chat with a language model that can call the callable tools (the LLM tool loop).

The model is --llm URL (the API base, e.g. http://127.0.0.1:8080/v1 for llama.cpp's server or
https://api.openai.com/v1) with --llm-model NAME, speaking --format openai (Chat Completions) or
anthropic (Messages, e.g. https://api.anthropic.com/v1). An API key is read from
LOCARA_LLM_API_KEY, never from the command line.

The prompt is PROMPT, or stdin when PROMPT is absent or `-`; --messages FILE carries on an
earlier conversation (a JSON array of messages in the model's format, or a transcript written
by --transcript), PROMPT then being the next user message.

The tools offered are every callable tool, or those --tools names (ids or globs, e.g.
--tools 'filesystem.*' --tools text.chunk). Every call the model makes runs through the same
pipeline as `locara run`: read-only calls of one turn concurrently, the others one at a time
in order, privileged ones only when approved (--yes, --policy, or the terminal). A call that
fails or cannot run (unknown tool, arguments that are not JSON or break the schema, refused) is
answered with its error report, and the model goes on.

The chat ends when the model answers without calling a tool, or at --max-steps (model turns),
--max-tokens (input and output tokens over the chat, as the API reports them) or --timeout
(seconds, model and tools together), and says which.

The model's text streams to stdout as it arrives; each tool call is one line on stderr when it
ends. --transcript FILE writes the whole chat as JSON (the messages, each turn, each call with
its arguments, result and timing); --receipts DIR writes a signed receipt per call; --json
prints the transcript on stdout instead of the text.

Exit codes: 0 the model answered; 1 a budget stopped the chat; 2 the model failed (unreachable,
an error status, an unreadable answer) or the chat could not start.";

/// `locara chat`.
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// What to ask (words are joined with spaces); stdin when absent or `-`
    #[arg(value_name = "PROMPT")]
    pub(crate) prompt: Vec<String>,

    /// The API's format
    #[arg(long, value_enum, default_value_t = Format::Openai)]
    pub(crate) format: Format,

    /// Offer only these tools: an id or a glob over ids (repeatable) [default: every callable
    /// tool]
    #[arg(long = "tools", value_name = "GLOB")]
    pub(crate) tools: Vec<String>,

    /// The system prompt
    #[arg(long, value_name = "TEXT")]
    pub(crate) system: Option<String>,

    /// Carry on this conversation: a JSON array of messages, or a transcript (--transcript)
    #[arg(long, value_name = "FILE")]
    pub(crate) messages: Option<PathBuf>,

    /// The most times the model is asked
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub(crate) max_steps: usize,

    /// The most tokens the chat may use, input and output of every turn
    #[arg(long, value_name = "N")]
    pub(crate) max_tokens: Option<u64>,

    /// The most seconds the chat may take
    #[arg(long, value_name = "SECS")]
    pub(crate) timeout: Option<f64>,

    /// The most tokens of one answer
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub(crate) max_output_tokens: u32,

    /// Sampling temperature
    #[arg(long)]
    pub(crate) temperature: Option<f64>,

    /// Sampling seed (OpenAI-compatible servers)
    #[arg(long)]
    pub(crate) seed: Option<u64>,

    /// The directory tools see at /workspace; without an app manifest it is granted,
    /// read-only unless --allow-write
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,

    /// Without an app manifest: let tools write in --dir
    #[arg(long, requires = "dir")]
    pub(crate) allow_write: bool,

    /// Write the files tools produce into DIR (created if missing)
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,

    /// Write the whole chat to FILE as JSON
    #[arg(long, value_name = "FILE")]
    pub(crate) transcript: Option<PathBuf>,

    /// Write a signed receipt of every tool call into DIR (created if missing)
    #[arg(long, value_name = "DIR")]
    pub(crate) receipts: Option<PathBuf>,
}

/// `locara chat`.
pub(crate) fn chat(
    ctx: &Context,
    cli: &Cli,
    args: &ChatArgs,
    stdin: &mut Stdin<'_>,
) -> anyhow::Result<ExitCode> {
    let format = args.format.kind();
    let Some(url) = &cli.llm else {
        return Err(format_err!(
            "`locara chat` needs a model: pass --llm URL (the API base of an OpenAI-compatible \
             server such as http://127.0.0.1:8080/v1, or with --format anthropic \
             https://api.anthropic.com/v1) and --llm-model NAME; an API key goes in \
             LOCARA_LLM_API_KEY"
        ));
    };
    let mut model = ChatModel::new(format, url, &cli.llm_model);
    if let Ok(key) = std::env::var("LOCARA_LLM_API_KEY")
        && !key.is_empty()
    {
        model = model.with_api_key(key);
    }

    let mut messages = match &args.messages {
        Some(file) => read_messages(file)?,
        None => Vec::new(),
    };
    let prompt = args.prompt.join(" ");
    let prompt = if prompt.is_empty() && args.messages.is_some() {
        None
    } else if prompt.is_empty() || prompt == "-" {
        Some(stdin.read("the prompt")?)
    } else {
        Some(prompt)
    };
    if let Some(prompt) = prompt {
        if prompt.trim().is_empty() {
            return Err(format_err!(
                "the prompt is empty: pass PROMPT, or write it to stdin"
            ));
        }
        messages.push(json!({"role": "user", "content": prompt}));
    }

    let dir = args.dir.as_deref().map(context::existing_dir).transpose()?;
    let out = context::created_dir(args.out.as_deref(), "output")?;
    let receipts_dir = context::created_dir(args.receipts.as_deref(), "receipts")?;
    let receipt_key = match &receipts_dir {
        Some(_) => Some(receipts::host_key(ctx)?),
        None => None,
    };
    let locara = ctx.locara_with_output(
        dir.as_deref(),
        args.allow_write,
        out.as_deref(),
        receipt_key,
    )?;

    let mut request = ChatRequest::with_messages(messages)
        .with_model(model)
        .with_max_steps(args.max_steps)
        .with_max_output_tokens(args.max_output_tokens);
    if !args.tools.is_empty() {
        request = request.with_tools(args.tools.iter().cloned());
    }
    if let Some(system) = &args.system {
        request = request.with_system(system);
    }
    if let Some(tokens) = args.max_tokens {
        request = request.with_max_tokens(tokens);
    }
    if let Some(seconds) = args.timeout {
        let timeout = Duration::try_from_secs_f64(seconds)
            .map_err(|_| format_err!("--timeout {seconds}: give a positive number of seconds"))?;
        request = request.with_timeout(timeout);
    }
    if let Some(temperature) = args.temperature {
        request = request.with_temperature(temperature);
    }
    if let Some(seed) = args.seed {
        request = request.with_seed(seed);
    }
    if let Some(dir) = &dir {
        request = request.with_workspace(dir);
    }
    if let Some(out) = &out {
        request = request.with_output_dir(out);
    }
    if receipts_dir.is_some() {
        request = request.with_receipts();
    }

    // A multi-threaded runtime: the read-only calls of a turn run at the same time.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let screen = Screen {
        stream: !ctx.json,
        at_line_start: Mutex::new(true),
    };
    let response = runtime.block_on(locara.chat_with(request, &|event| screen.show(event)))?;
    screen.end_line();

    if let Some(file) = &args.transcript {
        let text =
            serde_json::to_string_pretty(&response).context("cannot serialize the transcript")?;
        std::fs::write(file, text + "\n")
            .with_context(|| format!("cannot write the transcript {}", file.display()))?;
    }
    if let Some(dir) = &receipts_dir {
        write_receipts(dir, &response)?;
    }
    if ctx.json {
        output::json(&response)?;
    }
    Ok(match response.stop_reason {
        StopReason::FinalAnswer => ExitCode::SUCCESS,
        reason => {
            let mut text = format!("chat stopped: {reason}");
            if let Some(report) = &response.error {
                text = format!("chat stopped ({reason})\n{}", output::report_text(report));
            }
            eprint!("{text}");
            if !text.ends_with('\n') {
                eprintln!();
            }
            if reason == StopReason::ModelError {
                ExitCode::from(FAILED)
            } else {
                ExitCode::from(STOPPED)
            }
        }
    })
}

/// The messages of `file`: an array of messages, or a transcript's `messages`.
fn read_messages(file: &Path) -> anyhow::Result<Vec<Value>> {
    let source = file.to_string_lossy();
    let mut no_stdin = Stdin::new(std::io::empty());
    let text = arguments::read_source(&source, &mut no_stdin, "the messages")?;
    let value = locara_manifest::json::parse_value("messages", &text)
        .with_context(|| format!("{} is not JSON", file.display()))?;
    let messages = match value {
        Value::Array(messages) => messages,
        Value::Object(mut transcript) => match transcript.remove("messages") {
            Some(Value::Array(messages)) => messages,
            _ => {
                return Err(format_err!(
                    "{} has no `messages` array: give a JSON array of messages or a transcript written by --transcript",
                    file.display()
                ));
            }
        },
        _ => {
            return Err(format_err!(
                "{} is not a JSON array of messages or a transcript",
                file.display()
            ));
        }
    };
    Ok(messages)
}

/// Writes each call's receipt as `DIR/<step>-<n>-<tool>.receipt.json`.
fn write_receipts(dir: &Path, response: &ChatResponse) -> anyhow::Result<()> {
    for step in &response.steps {
        for (n, call) in step.calls.iter().enumerate() {
            let Some(receipt) = call.response.as_ref().and_then(|r| r.receipt.as_ref()) else {
                continue;
            };
            let tool = call.tool.as_deref().unwrap_or(&call.name);
            let path = dir.join(format!("{}-{}-{tool}.receipt.json", step.step, n + 1));
            std::fs::write(&path, receipt.to_json_pretty())
                .with_context(|| format!("cannot write the receipt {}", path.display()))?;
            eprintln!("wrote the receipt {}", path.display());
        }
    }
    Ok(())
}

/// The terminal: the model's text on stdout as it comes, a line per tool call on stderr.
#[derive(Debug)]
struct Screen {
    /// Whether the text goes to stdout (not with --json).
    stream: bool,
    at_line_start: Mutex<bool>,
}

impl Screen {
    fn show(&self, event: ChatEvent<'_>) {
        match event {
            ChatEvent::Text { text, .. } if self.stream => {
                // A closed stdout is the reader's choice; the chat goes on.
                let _ = output::stdout(text);
                if let Ok(mut at_start) = self.at_line_start.lock() {
                    *at_start = text.ends_with('\n');
                }
            }
            ChatEvent::ToolCall { call, .. } => {
                self.end_line();
                eprintln!("{}", call_line(call));
            }
            _ => {}
        }
    }

    /// Ends the model's text with a newline, when it did not.
    fn end_line(&self) {
        if let Ok(mut at_start) = self.at_line_start.lock()
            && !*at_start
        {
            let _ = output::stdout("\n");
            *at_start = true;
        }
    }
}

/// A tool call in one line: the tool, its arguments, and what came of it.
fn call_line(call: &ChatToolCall) -> String {
    let tool = call.tool.as_deref().unwrap_or(&call.name);
    let arguments = match &call.arguments {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let outcome = match (&call.response, &call.error) {
        (Some(response), _) if response.ok => format!(
            "ok ({:.0} ms): {}",
            call.elapsed_ms,
            response
                .output
                .as_ref()
                .map_or_else(String::new, Value::to_string)
        ),
        (Some(response), _) => match &response.error {
            Some(report) => format!(
                "failed ({:.0} ms), {}: {}",
                call.elapsed_ms, report.code, report.message
            ),
            None => "failed".to_owned(),
        },
        // Refused, malformed, or not run for a budget: the code says which.
        (None, Some(report)) => format!("{}: {}", report.code, report.message),
        (None, None) => "did not run".to_owned(),
    };
    one_line(&format!(
        "tool {tool} {} -> {}",
        clip(&arguments, 80),
        clip(&outcome, 160)
    ))
}

/// `text` on one line, cut to `max` characters.
fn clip(text: &str, max: usize) -> String {
    let flat = one_line(text);
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
