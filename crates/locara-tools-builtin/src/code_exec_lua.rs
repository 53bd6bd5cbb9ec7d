//! `code-exec.lua`: runs a Lua 5.5 chunk (the pure-Rust `luars` interpreter) and returns what
//! it printed, its return values and the files it left in `out/`; the contract, shared with
//! the other `code-exec.*` tools, is `docs/code-exec.md`.
//!
//! The chunk runs with the whole standard library. The host's sandbox is the only jail: the
//! guest sees nothing but the per-call `/tmp`, so `io.open("/etc/passwd")` fails like any
//! missing file, `os.getenv` finds no variables and `os.execute`/`io.popen` cannot start
//! processes. Bytecode cannot be loaded (`load` of a `string.dump` result fails): the
//! interpreter does not verify it. The working directory is `/tmp/work`, which holds the
//! input `files` and an empty `out/`.
//!
//! Standard output is *streamed* into the JSON result: `{"stdout":"` is written first, then
//! every `print`/`io.write` is JSON-escaped (lossy UTF-8, even when a character is split
//! across two writes) and written through a 64 KiB buffer, so a print flood reaches the
//! host's `output_bytes` limit instead of filling the guest's memory. Standard error
//! (`io.stderr`) is kept in memory, at most [`STDERR_KEEP`] bytes. The rest of the object
//! follows once the chunk has returned, or when it calls `os.exit`, which ends the program
//! there like the real one (no `pcall` can catch it) with a normal result.
//!
//! `io.stdout` and `io.stderr` are Lua objects with the methods of a file (`write` returns
//! the file, `close` refuses like for a standard file); `io.output`, `io.write`, `io.close`,
//! `io.type` and `print` know about them. `io.stdin` is a real file holding the `stdin`
//! argument. An error that escapes the chunk is a tool error (exit code 1) whose message is
//! Lua's, with its traceback; a syntax error is one too. Bad `files` are exit code 2.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;

use locara_pdk::progress;
use luars::{Lua, LuaApi, LuaState, LuaValue, SafeOption, Stdlib};
use serde::Deserialize;
use serde_json::Value;

use crate::abi::{self, ToolError};

#[cfg(test)]
mod tests;

/// The most bytes of standard error kept; what follows is dropped and counted.
pub const STDERR_KEEP: usize = 1 << 20;

/// How deep Lua calls may nest before "stack overflow" (luars' default is only 1024).
///
/// Lua-to-Lua calls do not grow the native stack in luars, so this is bounded by memory
/// (`LUAI_MAXSTACK` slots), as in C Lua.
const MAX_CALL_DEPTH: usize = 200_000;

/// How deep calls through Rust (metamethods, `pcall`, `gsub` callbacks, …) may nest before
/// "C stack overflow". At C Lua's 200, some such recursions (a `pcall` that rethrows, a `gsub`
/// callback) exhaust wasmi's 1000 wasm call frames first and end in a trap; at 120 every one
/// tried ends in Lua's error on both engines.
const MAX_C_STACK_DEPTH: usize = 120;

/// The driver's own chunk name; its frames are cut from tracebacks.
const DRIVER_NAME: &str = "=[code-exec]";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    code: String,
    #[serde(default)]
    stdin: String,
    #[serde(default)]
    files: Vec<FileIn>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIn {
    path: String,
    content: String,
    #[serde(default)]
    encoding: Encoding,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Encoding {
    #[default]
    Utf8,
    Base64,
}

/// Where a call keeps its files: `root` is `/tmp` in the sandbox.
#[derive(Debug, Clone)]
pub struct Dirs {
    root: PathBuf,
}

impl Dirs {
    /// A call whose temp dir is `root` (the sandbox's `/tmp`).
    pub fn new(root: impl Into<PathBuf>) -> Dirs {
        Dirs { root: root.into() }
    }

    /// The working directory: `<root>/work`.
    pub fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    /// The folder whose files are returned: `<root>/work/out`.
    pub fn out(&self) -> PathBuf {
        self.work().join("out")
    }

    fn stdin(&self) -> PathBuf {
        self.root.join(".code-exec-stdin")
    }
}

/// The guest's entry point: reads the arguments from stdin, runs the chunk in `/tmp/work`,
/// streams the result to stdout, and returns the exit code for `main`.
///
/// Natively (not wasm), `LOCARA_TOOL_TMP` replaces `/tmp` so the binary can be smoke-tested,
/// and the working directory stays the process's own.
pub fn main() -> ExitCode {
    #[cfg(not(target_os = "wasi"))]
    let root =
        std::env::var_os("LOCARA_TOOL_TMP").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    #[cfg(target_os = "wasi")]
    let root = PathBuf::from("/tmp");

    let result = read_input().and_then(|input| {
        let out = BufWriter::with_capacity(64 << 10, io::stdout());
        run(
            input,
            &Dirs::new(root),
            Box::new(out),
            cfg!(target_os = "wasi"),
        )
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let mut stderr = io::stderr().lock();
            // A Lua error keeps its lines (message, then traceback); nothing useful is left to
            // do if stderr itself is broken.
            let _ =
                writeln!(stderr, "{}", error.message().trim_end()).and_then(|()| stderr.flush());
            ExitCode::from(error.kind().exit_code() as u8)
        }
    }
}

fn read_input() -> Result<Value, ToolError> {
    let mut buf = Vec::new();
    io::stdin()
        .lock()
        .read_to_end(&mut buf)
        .map_err(|e| ToolError::failed(format!("cannot read the arguments from stdin: {e}")))?;
    serde_json::from_slice(&buf)
        .map_err(|e| ToolError::bad_args(format!("the arguments on stdin are not valid JSON: {e}")))
}

/// Runs one call: places the input files under `dirs.work()`, runs the chunk, and writes the
/// JSON result to `out` (flushed). With `chdir`, the process's working directory becomes
/// `dirs.work()` first (the guest does this; native tests must not).
///
/// `os.exit` writes the rest of the result and ends the process with exit code 0.
///
/// # Errors
/// Bad arguments or `files` ([`abi::ErrorKind::BadArgs`]); a Lua error or syntax error, with its
/// message and traceback, or an I/O failure ([`abi::ErrorKind::Failed`]). What was already written
/// to `out` is then incomplete and is not the answer.
pub fn run(input: Value, dirs: &Dirs, out: Box<dyn Write>, chdir: bool) -> Result<(), ToolError> {
    let args: Args = abi::parse_args(input)?;
    place_files(dirs, &args.files)?;
    std::fs::write(dirs.stdin(), args.stdin.as_bytes())
        .map_err(|e| ToolError::failed(format!("cannot prepare the program's stdin: {e}")))?;
    if chdir {
        std::env::set_current_dir(dirs.work()).map_err(|e| {
            ToolError::failed(format!("cannot enter the working directory /tmp/work: {e}"))
        })?;
    }

    // The interpreter made ahead of time (a pre-initialized module's), or made now.
    let prepared = PREPARED
        .with(|p| p.borrow_mut().take())
        .map_or_else(Prepared::new, Ok)?;
    *prepared.session.borrow_mut() = Session::new(out, dirs.clone());
    prepared
        .session
        .borrow_mut()
        .stdout
        .begin()
        .map_err(|e| write_failed(&e))?;
    let (outcome, session) = run_lua(prepared, &args, dirs)?;
    let mut session = session.borrow_mut();
    match outcome {
        Outcome::Returned(result) => session.finish(0, result.as_deref()),
        Outcome::Error(message) => Err(ToolError::failed(message)),
    }
}

/// How the chunk ended, as the driver reported it.
#[derive(Debug)]
enum Outcome {
    /// It returned: its values through `tostring`, tab-separated, or `None`.
    Returned(Option<String>),
    /// A syntax error, or an error that escaped it, with the traceback.
    Error(String),
}

/// Everything the Lua side writes to, shared by the Rust functions it calls.
struct Session {
    stdout: JsonStringWriter<Box<dyn Write>>,
    stderr: Vec<u8>,
    stderr_dropped: u64,
    dirs: Dirs,
    outcome: Option<Outcome>,
    /// The program's progress tasks (`locara.progress`), by handle; `None` once done.
    tasks: Vec<Option<progress::Task>>,
    /// How many tool calls (`locara.call`) the program made: their files go to `calls/<n>/`.
    calls_made: u32,
}

impl Session {
    fn new(out: Box<dyn Write>, dirs: Dirs) -> Session {
        Session {
            stdout: JsonStringWriter::new(out),
            stderr: Vec::new(),
            stderr_dropped: 0,
            dirs,
            outcome: None,
            tasks: Vec::new(),
            calls_made: 0,
        }
    }

    fn write_stderr(&mut self, bytes: &[u8]) {
        let room = STDERR_KEEP.saturating_sub(self.stderr.len());
        let kept = bytes.len().min(room);
        self.stderr.extend_from_slice(&bytes[..kept]);
        self.stderr_dropped += (bytes.len() - kept) as u64;
    }

    /// Closes the `stdout` string and writes the rest of the result object.
    fn finish(&mut self, exit_code: i64, result: Option<&str>) -> Result<(), ToolError> {
        let mut stderr = String::from_utf8_lossy(&self.stderr).into_owned();
        if self.stderr_dropped > 0 {
            let _ = write!(
                stderr,
                "\n[stderr truncated: {} more bytes were dropped]",
                self.stderr_dropped
            );
        }
        let files = list_out_files(&self.dirs.out())?;
        let w = &mut self.stdout;
        w.end().map_err(|e| write_failed(&e))?;
        let mut tail = format!(
            ",\"stderr\":{},\"exit_code\":{exit_code},\"result\":{},\"files\":[",
            Value::String(stderr),
            result.map_or(Value::Null, |r| Value::String(r.to_owned()))
        );
        let out = w.inner();
        for (index, (display, full)) in files.iter().enumerate() {
            let bytes = std::fs::read(full).map_err(|e| {
                ToolError::failed(format!("cannot read the output file {display}: {e}"))
            })?;
            if index > 0 {
                tail.push(',');
            }
            let _ = write!(tail, "{{\"path\":{},", Value::String(display.clone()));
            match std::str::from_utf8(&bytes) {
                Ok(text) => {
                    tail.push_str("\"encoding\":\"utf8\",\"content\":\"");
                    out.write_all(tail.as_bytes())
                        .and_then(|()| write_escaped(out, text))
                        .map_err(|e| write_failed(&e))?;
                }
                Err(_) => {
                    tail.push_str("\"encoding\":\"base64\",\"content\":\"");
                    out.write_all(tail.as_bytes())
                        .and_then(|()| write_base64(out, &bytes))
                        .map_err(|e| write_failed(&e))?;
                }
            }
            tail = format!("\",\"size_bytes\":{}}}", bytes.len());
        }
        tail.push_str("]}\n");
        out.write_all(tail.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| write_failed(&e))
    }
}

fn write_failed(error: &io::Error) -> ToolError {
    ToolError::failed(format!("cannot write the result to stdout: {error}"))
}

/// Writes a JSON string's contents, a piece at a time, from bytes that may split a UTF-8
/// character between two writes. Invalid UTF-8 becomes U+FFFD, as `String::from_utf8_lossy`
/// does for the whole.
struct JsonStringWriter<W: Write> {
    out: W,
    /// The start of a character whose remaining bytes have not been written yet (at most 3).
    pending: Vec<u8>,
}

impl<W: Write> JsonStringWriter<W> {
    fn new(out: W) -> Self {
        JsonStringWriter {
            out,
            pending: Vec::new(),
        }
    }

    /// Writes `{"stdout":"`.
    fn begin(&mut self) -> io::Result<()> {
        self.out.write_all(b"{\"stdout\":\"")
    }

    fn write_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        let joined;
        let mut rest = bytes;
        if !self.pending.is_empty() {
            let mut buf = std::mem::take(&mut self.pending);
            buf.extend_from_slice(bytes);
            joined = buf;
            rest = &joined;
        }
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => return write_escaped(&mut self.out, text),
                Err(error) => {
                    let (valid, invalid) = rest.split_at(error.valid_up_to());
                    if let Ok(text) = std::str::from_utf8(valid) {
                        write_escaped(&mut self.out, text)?;
                    }
                    match error.error_len() {
                        Some(len) => {
                            self.out.write_all("\u{FFFD}".as_bytes())?;
                            rest = &invalid[len..];
                        }
                        None => {
                            self.pending = invalid.to_vec();
                            return Ok(());
                        }
                    }
                }
            }
        }
    }

    /// Ends the string: a character left incomplete becomes U+FFFD, then the closing quote.
    fn end(&mut self) -> io::Result<()> {
        if !std::mem::take(&mut self.pending).is_empty() {
            self.out.write_all("\u{FFFD}".as_bytes())?;
        }
        self.out.write_all(b"\"")
    }

    fn inner(&mut self) -> &mut W {
        &mut self.out
    }
}

/// Writes `text` JSON-escaped, without quotes.
fn write_escaped(out: &mut (impl Write + ?Sized), text: &str) -> io::Result<()> {
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => &[],
            _ => continue,
        };
        out.write_all(&bytes[start..i])?;
        if escape.is_empty() {
            write!(out, "\\u{b:04x}")?;
        } else {
            out.write_all(escape)?;
        }
        start = i + 1;
    }
    out.write_all(&bytes[start..])
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Writes `bytes` as standard base64 with padding.
fn write_base64(out: &mut (impl Write + ?Sized), bytes: &[u8]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(8192);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                buf.push(BASE64[(n >> (18 - 6 * i) & 63) as usize]);
            } else {
                buf.push(b'=');
            }
        }
        if buf.len() >= 8188 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

#[cfg(test)]
fn base64_encode(bytes: &[u8]) -> String {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = write_base64(&mut out, bytes);
    String::from_utf8(out).unwrap_or_default()
}

/// Decodes standard base64; padding is optional, whitespace is ignored.
fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits, mut padding) = (0u32, 0u32, 0usize);
    for (i, c) in text.char_indices() {
        let value = match c {
            'A'..='Z' => c as u32 - 'A' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 26,
            '0'..='9' => c as u32 - '0' as u32 + 52,
            '+' => 62,
            '/' => 63,
            '=' => {
                padding += 1;
                continue;
            }
            c if c.is_ascii_whitespace() => continue,
            c => return Err(format!("invalid base64: {c:?} at offset {i}")),
        };
        if padding > 0 {
            return Err(format!(
                "invalid base64: data after '=' padding at offset {i}"
            ));
        }
        acc = acc << 6 | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // 6 leftover bits can never be a whole byte: the length is wrong (e.g. "QUJDR").
    if bits >= 6 || padding > 2 {
        return Err("invalid base64: the length is not a whole number of bytes".to_owned());
    }
    Ok(out)
}

/// Creates `work/` and `work/out/`, then writes each input file.
fn place_files(dirs: &Dirs, files: &[FileIn]) -> Result<(), ToolError> {
    let work = dirs.work();
    std::fs::create_dir_all(dirs.out())
        .map_err(|e| ToolError::failed(format!("cannot create the working directory: {e}")))?;
    for (index, file) in files.iter().enumerate() {
        let bad =
            |why: String| ToolError::bad_args(format!("files[{index}] ({:?}): {why}", file.path));
        let relative = check_relative(&file.path).map_err(bad)?;
        let bytes = match file.encoding {
            Encoding::Utf8 => file.content.clone().into_bytes(),
            Encoding::Base64 => base64_decode(&file.content).map_err(bad)?,
        };
        let full = work.join(&relative);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| bad(format!("cannot create its folder: {e}")))?;
        }
        std::fs::write(&full, bytes).map_err(|e| match e.kind() {
            io::ErrorKind::IsADirectory => bad("a folder of that name already exists".to_owned()),
            _ => bad(format!("cannot write it: {e}")),
        })?;
    }
    Ok(())
}

/// Checks an input file's path: relative, `/`-separated, no `..`, not empty; drops `.`.
fn check_relative(path: &str) -> Result<String, String> {
    if path.starts_with('/') {
        return Err("the path must be relative to the working directory, not absolute".to_owned());
    }
    if path.contains('\0') {
        return Err("the path contains a NUL character".to_owned());
    }
    if path.ends_with('/') {
        return Err("the path names a folder; give a file name".to_owned());
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            ".." => return Err("the path must not contain \"..\"".to_owned()),
            "" | "." => {}
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err("the path is empty".to_owned());
    }
    Ok(parts.join("/"))
}

/// Every regular file under `out`, as `("out/…", full path)`, in path order.
fn list_out_files(out: &Path) -> Result<Vec<(String, PathBuf)>, ToolError> {
    let mut files = Vec::new();
    let mut stack = vec![(String::from("out"), out.to_path_buf())];
    while let Some((display, dir)) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            // The program removed or replaced `out/`: nothing to return from it.
            Err(_) => continue,
        };
        for entry in entries {
            let entry = entry.map_err(|e| {
                ToolError::failed(format!("cannot list the output folder {display}: {e}"))
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = format!("{display}/{name}");
            let kind = entry.file_type().map_err(|e| {
                ToolError::failed(format!("cannot inspect the output file {child}: {e}"))
            })?;
            if kind.is_dir() {
                stack.push((child, entry.path()));
            } else if kind.is_file() {
                files.push((child, entry.path()));
            }
        }
    }
    files.sort();
    Ok(files)
}

thread_local! {
    /// The interpreter [`preinit`] made, for the one program this instance runs.
    static PREPARED: RefCell<Option<Prepared>> = const { RefCell::new(None) };
}

/// Makes the Lua interpreter ahead of the program: the state with its standard library, the
/// Rust functions the driver uses, and the driver compiled. The module exports it as
/// `locara_preinit`; the publisher runs it once and snapshots the memory it leaves
/// (docs/tool-abi.md § Pre-initialization), so a call starts with all of this made. Compiling
/// the driver was most of a short program's time (~0.7 ms of ~1 ms in the sandbox). Without a
/// snapshot, or when making it failed here, [`run`] makes it itself (and reports the failure).
///
/// Nothing here depends on the call: the call's streams, directories and arguments reach the
/// Rust functions through [`Prepared::session`], set by [`run`]; `math.random` is seeded and
/// `os.clock` restarted when the program starts.
pub fn preinit() {
    PREPARED.with(|p| {
        let mut p = p.borrow_mut();
        if p.is_none() {
            *p = Prepared::new().ok();
        }
    });
}

/// Why the interpreter could not be made or started.
fn start_failed(what: impl std::fmt::Display) -> ToolError {
    ToolError::failed(format!("cannot start the Lua interpreter: {what}"))
}

/// A Lua interpreter ready for a program: see [`preinit`]. The functions come first: fields
/// drop in order, and a function refers into the interpreter.
struct Prepared {
    /// `math.randomseed(...)`.
    seed: luars::LuaFunction,
    /// [`DRIVER`], compiled.
    driver: luars::LuaFunction,
    /// What the Rust functions registered in `lua` write to; [`run`] puts the call's in.
    session: Rc<RefCell<Session>>,
    lua: Lua,
}

impl Prepared {
    fn new() -> Result<Prepared, ToolError> {
        let mut lua = Lua::new(SafeOption {
            max_call_depth: MAX_CALL_DEPTH,
            max_c_stack_depth: MAX_C_STACK_DEPTH,
            allow_load_bytecode: false,
            ..SafeOption::default()
        });
        lua.open_stdlib(Stdlib::All).map_err(start_failed)?;
        let session = Rc::new(RefCell::new(Session::new(
            Box::new(io::sink()),
            Dirs::new("/tmp"),
        )));
        register_functions(&mut lua, &session).map_err(start_failed)?;
        let seed = lua
            .load("math.randomseed(...)")
            .set_name("=[code-exec seed]")
            .into_function()
            .map_err(start_failed)?;
        let driver = lua
            .load(DRIVER)
            .set_name(DRIVER_NAME)
            .into_function()
            .map_err(start_failed)?;
        Ok(Prepared {
            seed,
            driver,
            session,
            lua,
        })
    }
}

/// Registers the Rust functions the driver takes (and removes) from the globals; each works
/// on `session`.
fn register_functions(lua: &mut Lua, session: &Rc<RefCell<Session>>) -> luars::LuaResult<()> {
    let state = lua.global_state_mut();
    let s = Rc::clone(session);
    state.register_function("__code_exec_out", move |l| {
        let mut session = s.borrow_mut();
        for_each_string_arg(l, |bytes| session.stdout.write_bytes(bytes))
    })?;
    let s = Rc::clone(session);
    state.register_function("__code_exec_err", move |l| {
        let mut session = s.borrow_mut();
        for_each_string_arg(l, |bytes| {
            session.write_stderr(bytes);
            Ok(())
        })
    })?;
    let s = Rc::clone(session);
    state.register_function("__code_exec_report", move |l| {
        let kind = l.get_arg(1).and_then(|v| v.as_str().map(str::to_owned));
        let value = l.get_arg(2).and_then(|v| {
            v.as_bytes()
                .map(|b| String::from_utf8_lossy(b).into_owned())
        });
        let outcome = match kind.as_deref() {
            Some("ok") => Outcome::Returned(value),
            _ => Outcome::Error(value.unwrap_or_else(|| "(no error message)".to_owned())),
        };
        s.borrow_mut().outcome = Some(outcome);
        Ok(0)
    })?;
    let s = Rc::clone(session);
    state.register_function("__code_exec_exit", move |l| {
        let code = exit_status(l)?;
        let finished = s.borrow_mut().finish(code, None);
        match finished {
            // `os.exit` ends the program here, as the real one does: no `pcall` catches it.
            Ok(()) => std::process::exit(0),
            Err(error) => {
                let _ = writeln!(io::stderr(), "{}", error.message());
                std::process::exit(error.kind().exit_code())
            }
        }
    })?;
    let s = Rc::clone(session);
    state.register_function("__code_exec_progress", move |l| {
        progress_call(l, &mut s.borrow_mut().tasks)
    })?;
    state.register_function("__code_exec_tools", tools_call)?;
    let s = Rc::clone(session);
    state.register_function("__code_exec_call", move |l| {
        call_tool(l, &mut s.borrow_mut().calls_made)
    })?;
    Ok(())
}

/// Runs the program with the interpreter `prepared`, whose session is the call's; how it
/// ended, and the session.
fn run_lua(
    prepared: Prepared,
    args: &Args,
    dirs: &Dirs,
) -> Result<(Outcome, Rc<RefCell<Session>>), ToolError> {
    // Declared in this order, so that on every path the functions drop before the interpreter.
    let Prepared {
        mut lua,
        session,
        seed,
        driver,
    } = prepared;
    lua.global_state_mut().restart_clock();
    // Lua seeds `math.random` from the clock; seeding it from the host's random numbers
    // instead makes it as random as they are, and repeatable when the caller seeds the call.
    // Non-negative, so each is an integer, as Lua's own seeds are.
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(start_failed)?;
    let half = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8])) >> 1;
    seed.call::<_, ()>((half(&bytes[..8]) as i64, half(&bytes[8..]) as i64))
        .map_err(start_failed)?;

    let stdin_path = dirs.stdin().to_string_lossy().into_owned();
    let tmp_root = dirs.root.to_string_lossy().into_owned();
    let ran = driver.call::<_, ()>((args.code.as_str(), stdin_path.as_str(), tmp_root.as_str()));
    let outcome = session.borrow_mut().outcome.take();
    let outcome = match (outcome, ran) {
        (Some(Outcome::Error(message)), _) => Outcome::Error(trim_traceback(&message)),
        (Some(outcome), _) => outcome,
        (None, Err(error)) => Outcome::Error(format!("the Lua program failed: {error}")),
        (None, Ok(())) => {
            return Err(ToolError::failed(
                "the Lua driver ended without a result (a bug in code-exec.lua)",
            ));
        }
    };
    // Ending the interpreter here (not at the process's end) closes the files the program
    // left open, flushing what it wrote to them before `out/` is listed. In the guest, whose
    // process ends with the call, only those are released and the rest of the interpreter's
    // memory is left to the process's end: freeing its every object one at a time was about a
    // fifth of a short program's time, and more the more tool calls it made.
    drop((seed, driver));
    if cfg!(target_os = "wasi") {
        lua.close_for_exit();
    } else {
        drop(lua);
    }
    Ok((outcome, session))
}

/// `__code_exec_progress(op, …)`, behind the driver's `locara.progress`: `("start", title,
/// total?)` returns a handle; `("step", handle, message?)` and `("done", handle, summary?)`
/// report on it. The host shows the reports when the app granted progress, and drops them
/// otherwise; a program never fails for want of it.
fn progress_call(
    l: &mut LuaState,
    tasks: &mut Vec<Option<progress::Task>>,
) -> luars::LuaResult<usize> {
    let text = |l: &LuaState, i: usize| {
        l.get_arg(i).and_then(|v| {
            v.as_bytes()
                .map(|b| String::from_utf8_lossy(b).into_owned())
        })
    };
    let op = text(l, 1).unwrap_or_default();
    if op == "start" {
        let title = text(l, 2).unwrap_or_default();
        let total = l
            .get_arg(3)
            .and_then(|v| v.as_integer())
            .and_then(|n| u64::try_from(n).ok());
        tasks.push(Some(progress::Task::start(&title, total)));
        l.push_value(LuaValue::integer(tasks.len() as i64))?;
        return Ok(1);
    }
    let index = l
        .get_arg(2)
        .and_then(|v| v.as_integer())
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| n.checked_sub(1));
    let message = text(l, 3);
    let Some(slot) = index.and_then(|i| tasks.get_mut(i)) else {
        return Err(l.error("bad progress task (use the one locara.progress returned)".to_owned()));
    };
    match (op.as_str(), slot.take()) {
        ("step", Some(task)) => {
            task.step(message.as_deref());
            *slot = Some(task);
        }
        ("done", Some(task)) => task.done(message.as_deref()),
        (_, None) => return Err(l.error("this progress task is done".to_owned())),
        (other, Some(task)) => {
            *slot = Some(task);
            return Err(l.error(format!("unknown progress operation {other:?}")));
        }
    }
    Ok(0)
}

/// `__code_exec_tools(request, file_mt)`, behind the driver's `locara.search`,
/// `locara.describe` and `locara.tools` (calls go through [`call_tool`]): sends the Lua table
/// `request` as JSON to the host's `tools` gateway and returns its answer as Lua tables, or
/// `nil, code, message` when the gateway refused (`capability_denied`) or failed (`failed`).
/// Both conversions are streamed here, in Rust: the request is written as JSON text straight
/// from the Lua values ([`LuaJson`]) and the answer read straight into Lua values ([`ToLua`]),
/// with no `serde_json::Value` between, no JSON handled in Lua, and no answer compiled as a
/// chunk.
fn tools_call(l: &mut LuaState) -> luars::LuaResult<usize> {
    let request = l.get_arg(1).unwrap_or_else(LuaValue::nil);
    let file_mt = l.get_arg(2).unwrap_or_else(LuaValue::nil);
    let failure = RefCell::new(None);
    let request = LuaJson::new(&request, &file_mt, &failure);
    let answer = match ask_gateway(l, &request, &failure)? {
        Ok(answer) => answer,
        Err(refused) => return push_refusal(l, &refused),
    };
    let mut scratch = Vec::new();
    let read = read_answer(&answer, |reader| {
        serde::de::DeserializeSeed::deserialize(
            ToLua {
                l: &mut *l,
                scratch: &mut scratch,
            },
            reader,
        )
    });
    match read {
        Ok(answer) => {
            // No collection runs while the answer is built (luars collects only at the VM's
            // safe points), and the finished table is rooted on the stack at once.
            l.push_value(answer)?;
            Ok(1)
        }
        Err(error) => push_refusal(l, &error),
    }
}

/// `__code_exec_call(tool, arguments, file_mt)`, behind the driver's `locara.call`: asks the
/// gateway to call `tool` with the Lua value `arguments` (written as [`tools_call`] writes a
/// request, with no request table made for it), and returns only what `locara.call` gives the
/// program. Files go by value: a table whose metatable is `file_mt` (`locara.file`) is written
/// as `{"base64": …}` of that file, and the files of the answer are saved under `calls/<n>/`
/// and returned with their `path` instead. The call's stats stay with the host (`"stats":
/// false`) until the program reads them. It returns `true, tool, output, files, stats, kept`
/// when the call succeeded (`files` is `nil` when there are none; `stats` is `nil` and `kept`
/// the number a `stats` request names them by, unless the host sent them), `false, tool, error` (the error
/// report, as a table) when it failed, and `nil, code, message` when the gateway refused or
/// failed. The answer's other members (`ok`, a receipt, …) are read past, never made into Lua
/// values.
fn call_tool(l: &mut LuaState, calls_made: &mut u32) -> luars::LuaResult<usize> {
    let tool = l.get_arg(1).unwrap_or_else(LuaValue::nil);
    let arguments = l.get_arg(2).unwrap_or_else(LuaValue::nil);
    let file_mt = l.get_arg(3).unwrap_or_else(LuaValue::nil);
    let failure = RefCell::new(None);
    let request = CallRequest {
        op: "call",
        tool: LuaJson::new(&tool, &file_mt, &failure),
        arguments: LuaJson::new(&arguments, &file_mt, &failure),
        stats: false,
    };
    let answer = match ask_gateway(l, &request, &failure)? {
        Ok(answer) => answer,
        Err(refused) => return push_refusal(l, &refused),
    };
    let mut failure = None;
    let read = read_answer(&answer, |reader| {
        serde::de::DeserializeSeed::deserialize(
            CallAnswer {
                l: &mut *l,
                calls_made,
                failure: &mut failure,
            },
            reader,
        )
    });
    let answer = match (read, failure) {
        (Ok(answer), None) => answer,
        (_, Some(error)) | (Err(error), None) => return push_refusal(l, &error),
    };
    // Nothing was collected while the values were made, and they are rooted on the stack now.
    let returned: &[LuaValue] = if answer.ok {
        &[
            LuaValue::boolean(true),
            answer.tool,
            answer.output,
            answer.files,
            answer.stats,
            answer.kept,
        ]
    } else {
        &[LuaValue::boolean(false), answer.tool, answer.error]
    };
    for value in returned {
        l.push_value(*value)?;
    }
    Ok(returned.len())
}

/// The request `locara.call` sends: `{"op": "call", "tool", "arguments", "stats": false}`.
#[derive(serde::Serialize)]
struct CallRequest<'a> {
    op: &'static str,
    tool: LuaJson<'a>,
    arguments: LuaJson<'a>,
    stats: bool,
}

/// Sends `request` to the gateway: its answer, or why the gateway (or reading a file the
/// request passes) failed. A request that cannot be written as JSON is a Lua error.
fn ask_gateway(
    l: &mut LuaState,
    request: &impl serde::Serialize,
    failure: &RefCell<Option<ToolError>>,
) -> luars::LuaResult<Result<Vec<u8>, ToolError>> {
    let request = serde_json::to_vec(request);
    let request = match (request, failure.borrow_mut().take()) {
        (Ok(request), None) => request,
        // A file that cannot be read fails the call, as a failed call would.
        (_, Some(error)) => return Ok(Err(error)),
        (Err(message), None) => return Err(l.error(message.to_string())),
    };
    Ok(locara_pdk::host::call_bytes("tools", &request))
}

/// Returns `nil, code, message` for a request the gateway refused (`capability_denied`) or
/// that failed (`failed`).
fn push_refusal(l: &mut LuaState, error: &ToolError) -> luars::LuaResult<usize> {
    let code = match error.kind() {
        abi::ErrorKind::BadArgs => "capability_denied",
        _ => "failed",
    };
    l.push_value(LuaValue::nil())?;
    let code = l.create_string(code)?;
    l.push_value(code)?;
    let message = l.create_string(error.message())?;
    l.push_value(message)?;
    Ok(3)
}

/// How deep tables passed to a tool may nest: deeper is taken for a table that holds itself.
const MAX_ARGUMENT_DEPTH: usize = 64;

/// A Lua value passed to a tool, written as JSON: a table is an array when its keys are
/// exactly `1..n` (n > 0), an object when they are all strings (an empty table is `{}`), and a
/// file when its metatable is `file_mt` (`{"base64": …}` of the file at its `path`). A value
/// JSON cannot hold is an error the program gets as a Lua error; a file that cannot be read is
/// put in `failure` instead, for the call to fail as a failed call does.
struct LuaJson<'a> {
    value: &'a LuaValue,
    file_mt: &'a LuaValue,
    depth: usize,
    failure: &'a RefCell<Option<ToolError>>,
}

impl<'a> LuaJson<'a> {
    fn new(
        value: &'a LuaValue,
        file_mt: &'a LuaValue,
        failure: &'a RefCell<Option<ToolError>>,
    ) -> LuaJson<'a> {
        LuaJson {
            value,
            file_mt,
            depth: 0,
            failure,
        }
    }

    fn child<'b>(&'b self, value: &'b LuaValue) -> LuaJson<'b> {
        LuaJson {
            value,
            file_mt: self.file_mt,
            depth: self.depth + 1,
            failure: self.failure,
        }
    }
}

impl serde::Serialize for LuaJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeMap as _, SerializeSeq as _};
        let value = self.value;
        if value.is_nil() {
            return s.serialize_unit();
        }
        if let Some(b) = value.as_boolean() {
            return s.serialize_bool(b);
        }
        if let Some(i) = value.as_integer_strict() {
            return s.serialize_i64(i);
        }
        if value.is_float() {
            let f = value.as_float().unwrap_or(f64::NAN);
            if !f.is_finite() {
                return Err(S::Error::custom(
                    "a tool argument cannot be NaN or infinite",
                ));
            }
            return s.serialize_f64(f);
        }
        if let Some(bytes) = value.as_bytes().or_else(|| value.as_binary()) {
            return match std::str::from_utf8(bytes) {
                Ok(text) => s.serialize_str(text),
                Err(_) => Err(S::Error::custom(
                    "a string passed to a tool is not UTF-8 text",
                )),
            };
        }
        let Some(table) = value.as_table() else {
            return Err(S::Error::custom(
                "a tool argument cannot be a function, a thread or userdata",
            ));
        };
        if self.depth == MAX_ARGUMENT_DEPTH {
            return Err(S::Error::custom(format!(
                "the tables passed to a tool nest deeper than {MAX_ARGUMENT_DEPTH} (does one hold itself?)"
            )));
        }
        let entries = table.iter_all();
        if is_file(table, self.file_mt) {
            use base64::Engine as _;
            let path = entries
                .iter()
                .find(|(k, _)| k.as_bytes() == Some(b"path"))
                .and_then(|(_, v)| v.as_bytes())
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .ok_or_else(|| S::Error::custom("a locara.file has no path"))?;
            let bytes = std::fs::read(&path).map_err(|e| {
                let message = format!("cannot read the file {path}: {e}");
                *self.failure.borrow_mut() = Some(ToolError::failed(message.clone()));
                S::Error::custom(message)
            })?;
            let mut map = s.serialize_map(Some(1))?;
            map.serialize_entry(
                "base64",
                &base64::engine::general_purpose::STANDARD.encode(bytes),
            )?;
            return map.end();
        }
        // An array when its keys are exactly 1..n: n of them, each in range (so each once).
        let n = table.len();
        let mut items: Vec<Option<&LuaValue>> = Vec::new();
        if n > 0 && entries.len() == n {
            items.resize(n, None);
            for (k, v) in &entries {
                match k.as_integer_strict().and_then(|i| usize::try_from(i).ok()) {
                    Some(i) if (1..=n).contains(&i) => items[i - 1] = Some(v),
                    _ => break,
                }
            }
        }
        if n > 0 && items.len() == n && items.iter().all(Option::is_some) {
            let mut seq = s.serialize_seq(Some(n))?;
            for item in items.into_iter().flatten() {
                seq.serialize_element(&self.child(item))?;
            }
            return seq.end();
        }
        let mut map = s.serialize_map(Some(entries.len()))?;
        for (k, v) in &entries {
            let key = k.as_bytes().or_else(|| k.as_binary()).ok_or_else(|| {
                S::Error::custom(
                    "a table passed to a tool has keys that are neither all strings (an object) nor 1..n (an array)",
                )
            })?;
            let key = std::str::from_utf8(key).map_err(|_| {
                S::Error::custom("a key of a table passed to a tool is not UTF-8 text")
            })?;
            map.serialize_entry(key, &self.child(v))?;
        }
        map.end()
    }
}

/// Whether `table`'s metatable is `file_mt`, the one `locara.file` sets. Compared as table
/// pointers: a metatable read back from a table is not tagged as the same value the program
/// passed (`==` on the two `LuaValue`s is false), so the values themselves cannot be compared.
fn is_file(table: &luars::LuaRawTable, file_mt: &LuaValue) -> bool {
    let pointer = |value: &LuaValue| value.as_table_ptr().map(|p| p.as_ptr() as usize);
    match (table.get_metatable(), pointer(file_mt)) {
        (Some(meta), Some(file_mt)) => pointer(&meta) == Some(file_mt),
        _ => false,
    }
}

/// Reads the gateway's answer with `read`, which must take all of it. The text is checked to
/// be UTF-8 once, as a whole, rather than string by string.
fn read_answer<T>(
    answer: &[u8],
    read: impl FnOnce(
        &mut serde_json::Deserializer<serde_json::de::StrRead<'_>>,
    ) -> serde_json::Result<T>,
) -> Result<T, ToolError> {
    let not_json = |e: &dyn std::fmt::Display| {
        ToolError::failed(format!("the host's answer to `tools` is not JSON: {e}"))
    };
    let text = std::str::from_utf8(answer).map_err(|e| not_json(&e))?;
    let mut reader = serde_json::Deserializer::from_str(text);
    read(&mut reader)
        .and_then(|value| reader.end().map(|()| value))
        .map_err(|e| not_json(&e))
}

/// The value of a call answer's `files`: the files saved ([`save_files`]), then read as Lua
/// values with their paths; a file that cannot be saved is put in `failure`.
fn read_files<'de, A: serde::de::MapAccess<'de>>(
    map: &mut A,
    to_lua: &mut ToLua<'_>,
    calls_made: &mut u32,
    failure: &mut Option<ToolError>,
) -> Result<LuaValue, A::Error> {
    use serde::de::Error as _;
    let mut files: Vec<Value> = map.next_value()?;
    if let Err(error) = save_files(&mut files, calls_made) {
        let message = error.message().to_owned();
        *failure = Some(error);
        return Err(A::Error::custom(message));
    }
    serde::de::DeserializeSeed::deserialize(to_lua.reborrow(), Value::Array(files))
        .map_err(A::Error::custom)
}

/// What `locara.call` keeps of a call's answer, as Lua values (`nil` when absent).
struct CallFields {
    ok: bool,
    tool: LuaValue,
    output: LuaValue,
    error: LuaValue,
    files: LuaValue,
    stats: LuaValue,
    /// The number that asks the host for `stats` it kept (`call`).
    kept: LuaValue,
}

/// A call's answer (the `RunResponse`, or the gateway's `{"ok": false, "tool", "error"}`),
/// read into [`CallFields`]: its other members are read past without making Lua values.
struct CallAnswer<'a> {
    l: &'a mut LuaState,
    calls_made: &'a mut u32,
    failure: &'a mut Option<ToolError>,
}

impl<'de> serde::de::DeserializeSeed<'de> for CallAnswer<'_> {
    type Value = CallFields;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<CallFields, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for CallAnswer<'_> {
    type Value = CallFields;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<CallFields, A::Error> {
        let mut scratch = Vec::new();
        let mut to_lua = ToLua {
            l: self.l,
            scratch: &mut scratch,
        };
        let mut fields = CallFields {
            ok: false,
            tool: LuaValue::nil(),
            output: LuaValue::nil(),
            error: LuaValue::nil(),
            files: LuaValue::nil(),
            stats: LuaValue::nil(),
            kept: LuaValue::nil(),
        };
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let field = match &*key {
                "ok" => {
                    fields.ok = map.next_value()?;
                    continue;
                }
                "files" => {
                    fields.files =
                        read_files(&mut map, &mut to_lua, self.calls_made, self.failure)?;
                    continue;
                }
                "tool" => &mut fields.tool,
                "output" => &mut fields.output,
                "error" => &mut fields.error,
                "stats" => &mut fields.stats,
                "call" => &mut fields.kept,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            *field = map.next_value_seed(to_lua.reborrow())?;
        }
        Ok(fields)
    }
}

/// JSON read straight into a Lua value: `null` is `nil` (in a table, no entry), an array a
/// table `1..n`, an integer that fits in 64 bits an integer, any other number a float. The
/// items of the arrays and objects being read wait on one `scratch` stack, each table made
/// at its size once its items are read.
struct ToLua<'a> {
    l: &'a mut LuaState,
    scratch: &'a mut Vec<LuaValue>,
}

impl ToLua<'_> {
    fn reborrow(&mut self) -> ToLua<'_> {
        ToLua {
            l: &mut *self.l,
            scratch: &mut *self.scratch,
        }
    }

    /// A table of the key-value pairs on the scratch stack from `start` (key, value, key,
    /// value, …), which it takes off the stack, sized for them at once.
    fn table_from(&mut self, start: usize) -> luars::LuaResult<LuaValue> {
        let table = self.l.create_table(0, (self.scratch.len() - start) / 2)?;
        let mut pairs = self.scratch.drain(start..);
        while let (Some(key), Some(value)) = (pairs.next(), pairs.next()) {
            self.l.raw_set(&table, key, value);
        }
        Ok(table)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for ToLua<'_> {
    type Value = LuaValue;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<LuaValue, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ToLua<'_> {
    type Value = LuaValue;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<LuaValue, E> {
        Ok(LuaValue::nil())
    }

    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<LuaValue, E> {
        Ok(LuaValue::boolean(b))
    }

    fn visit_i64<E: serde::de::Error>(self, i: i64) -> Result<LuaValue, E> {
        Ok(LuaValue::integer(i))
    }

    fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<LuaValue, E> {
        Ok(i64::try_from(u).map_or_else(|_| LuaValue::float(u as f64), LuaValue::integer))
    }

    fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<LuaValue, E> {
        Ok(LuaValue::float(f))
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<LuaValue, E> {
        self.l.create_string(s).map_err(E::custom)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<LuaValue, A::Error> {
        use serde::de::Error as _;
        let start = self.scratch.len();
        while let Some(item) = seq.next_element_seed(self.reborrow())? {
            self.scratch.push(item);
        }
        let table = self
            .l
            .create_table(self.scratch.len() - start, 0)
            .map_err(A::Error::custom)?;
        for (i, item) in (1..).zip(self.scratch.drain(start..)) {
            if !item.is_nil() {
                self.l.raw_seti(&table, i, item);
            }
        }
        Ok(table)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(mut self, mut map: A) -> Result<LuaValue, A::Error> {
        use serde::de::Error as _;
        let start = self.scratch.len();
        while let Some(key) = map.next_key_seed(self.reborrow())? {
            let value = map.next_value_seed(self.reborrow())?;
            if !value.is_nil() {
                self.scratch.extend([key, value]);
            }
        }
        self.table_from(start).map_err(A::Error::custom)
    }
}

/// Saves the files of a call's answer under `calls/<n>/` of the working directory, each
/// entry's `base64` replaced with the `path` it was saved at.
fn save_files(files: &mut [Value], calls_made: &mut u32) -> Result<(), ToolError> {
    use base64::Engine as _;
    *calls_made += 1;
    let folder = PathBuf::from(format!("calls/{calls_made}"));
    for file in files {
        let name = file["name"].as_str().unwrap_or("file").replace('/', "_");
        let name = if matches!(name.as_str(), "" | "." | "..") {
            "file".to_owned()
        } else {
            name
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(file["base64"].as_str().unwrap_or_default())
            .map_err(|e| ToolError::failed(format!("a file of the answer is not base64: {e}")))?;
        let path = folder.join(&name);
        std::fs::create_dir_all(&folder)
            .and_then(|()| std::fs::write(&path, bytes))
            .map_err(|e| ToolError::failed(format!("cannot save {}: {e}", path.display())))?;
        if let Some(entry) = file.as_object_mut() {
            entry.remove("base64");
            entry.insert("path".to_owned(), Value::String(path.display().to_string()));
        }
    }
    Ok(())
}

/// Calls `write` with the bytes of every argument, which must all be strings.
fn for_each_string_arg(
    l: &mut LuaState,
    mut write: impl FnMut(&[u8]) -> io::Result<()>,
) -> luars::LuaResult<usize> {
    let mut i = 1;
    while let Some(arg) = l.get_arg(i) {
        let Some(bytes) = arg.as_bytes() else {
            return Err(l.error(format!("bad argument #{i} (string expected)")));
        };
        if let Err(e) = write(bytes) {
            return Err(l.error(format!("cannot write the program's output: {e}")));
        }
        i += 1;
    }
    Ok(0)
}

/// `os.exit`'s status: `true` or none is 0, `false` is 1, else the integer given.
fn exit_status(l: &mut LuaState) -> luars::LuaResult<i64> {
    let arg = l.get_arg(1).unwrap_or_else(LuaValue::nil);
    if arg.is_nil() {
        return Ok(0);
    }
    if let Some(b) = arg.as_boolean() {
        return Ok(if b { 0 } else { 1 });
    }
    if let Some(n) = arg.as_integer() {
        return Ok(n);
    }
    Err(l.error("bad argument #1 to 'exit' (number has no integer representation)".to_owned()))
}

/// Cuts the driver's own frames (the `xpcall` that runs the chunk, and below) from a traceback.
fn trim_traceback(message: &str) -> String {
    let driver = &DRIVER_NAME[1..];
    let lines: Vec<&str> = message.lines().collect();
    let Some(first_driver) = lines.iter().position(|l| l.contains(driver)) else {
        return message.to_owned();
    };
    let mut end = first_driver;
    // The `[C]: in … 'xpcall'` line just above the driver's frame is the driver's too.
    if end > 0
        && lines[end - 1].trim_start().starts_with("[C]:")
        && lines[end - 1].contains("xpcall")
    {
        end -= 1;
    }
    lines[..end].join("\n")
}

/// Runs inside the interpreter: installs the streams, then loads and runs the user's chunk.
/// Its arguments: the code, the path of the file holding stdin, and the temp dir. The Rust functions it
/// needs arrive as globals and are removed before the user's code runs.
const DRIVER: &str = r#"
local code, stdin_path, tmp_root = ...
local raw_out, raw_err, report, exit = __code_exec_out, __code_exec_err, __code_exec_report, __code_exec_exit
local progress_call = __code_exec_progress

-- `locara.progress(title, total)`: a task the host shows while the program runs, with
-- `:step(message)` and `:done(summary)`.
local task_methods = {}
task_methods.__index = task_methods
function task_methods:step(message) progress_call("step", self.handle, message) end
function task_methods:done(summary) progress_call("done", self.handle, summary) end

-- Tool calls (docs/code-mode.md): requests go to the host as Lua tables and answers come back
-- as Lua tables; the conversions to and from JSON are done in Rust (`tools_call`, and
-- `call_tool` for `locara.call`).
local tools_call, call_tool = __code_exec_tools, __code_exec_call
local file_mt = {__tostring = function(f) return f.path end}
local error_mt = {__tostring = function(e)
  local hint = (e.hint ~= "" and e.hint) and (" (hint: " .. e.hint .. ")") or ""
  return tostring(e.tool) .. ": " .. tostring(e.code) .. ": " .. tostring(e.message) .. hint
end}
local function locara_error(tool, report)
  return setmetatable({
    tool = tool, code = report.code or "failed", message = report.message or "",
    hint = report.hint or "", violations = report.violations or {}, limit = report.limit,
    report = report,
  }, error_mt)
end
-- The error a request the gateway refused or failed raises, at `level`.
local function refused(tool, code, message, level)
  local hint = code == "capability_denied" and "the app must grant `tools` for a program to call tools" or ""
  error(locara_error(tool, {code = code, message = message, hint = hint}), level + 1)
end
local function ask(request)
  local answer, code, message = tools_call(request, file_mt)
  if not answer then refused(request.tool or "tools", code, message, 3) end
  return answer
end
-- A result's `stats`, which the host kept until the program reads them.
local function kept_stats(result, key)
  if key ~= "stats" then return nil end
  local stats = ask({op = "stats", call = getmetatable(result).call}).stats
  rawset(result, "stats", stats)
  return stats
end
local function call(tool, args)
  if type(tool) ~= "string" then error("the tool must be named by a string", 2) end
  local ok, name, output, files, stats, kept = call_tool(tool, args, file_mt)
  if ok == nil then refused(tool, name, output, 2) end
  if not ok then error(locara_error(name or tool, output or {}), 2) end
  if files then
    for _, f in ipairs(files) do setmetatable(f, file_mt) end
  else
    files = {}
  end
  local result = {tool = name, output = output, files = files, stats = stats}
  if stats == nil and kept ~= nil then
    setmetatable(result, {__index = kept_stats, call = kept})
  end
  return result
end
local catalog
local tools = setmetatable({}, {__index = function(_, name)
  if not catalog then
    catalog = {}
    for _, t in ipairs(ask({op = "list"}).tools) do catalog[(t.id:gsub("[.-]", "_"))] = t.id end
  end
  local id = catalog[name]
  if not id then
    for _, known in pairs(catalog) do if known == name then id = known end end
  end
  if not id then error("no tool " .. tostring(name), 2) end
  return function(args) return call(id, args) end
end})

locara = {
  progress = function(title, total)
    return setmetatable({handle = progress_call("start", tostring(title), total)}, task_methods)
  end,
  -- `locara.call(tool, args)`: calls a tool; returns {tool, output, files, stats}, or raises
  -- an error object with code, message, hint, violations, limit.
  call = call,
  tools = tools,
  search = function(query, limit)
    return ask({op = "search", query = tostring(query), limit = limit or 10}).tools
  end,
  describe = function(tool)
    local answer = ask({op = "describe", tool = tool})
    if not answer.ok then error(locara_error(tool, answer.error or {}), 2) end
    return answer.description
  end,
  -- `locara.file(path)`: a file of the working directory, to pass as a file argument.
  file = function(path) return setmetatable({path = path}, file_mt) end,
}
__code_exec_out, __code_exec_err, __code_exec_report, __code_exec_exit, __code_exec_progress = nil, nil, nil, nil, nil
__code_exec_tools, __code_exec_call = nil, nil

local type, select, tostring, error, load, xpcall, pcall, setmetatable =
      type, select, tostring, error, load, xpcall, pcall, setmetatable
local getmetatable, traceback = debug.getmetatable, debug.traceback
local format, concat, pack = string.format, table.concat, table.pack
local io_open, io_type, io_output, io_input = io.open, io.type, io.output, io.input

-- Standard output and error: objects with a file's methods over the host's streams.
local function std_stream(name, raw)
  local stream = {}
  local methods = {}
  function methods.write(self, ...)
    for i = 1, select('#', ...) do
      local v = select(i, ...)
      local t = type(v)
      if t ~= "string" then
        if t == "number" then
          v = tostring(v)
        else
          error(format("bad argument #%d to 'write' (string expected, got %s)", i, t), 2)
        end
      end
      raw(v)
    end
    return self
  end
  function methods.flush(self) return self end
  function methods.setvbuf() return true end
  function methods.close() return nil, "cannot close standard file" end
  function methods.seek() return nil, "Illegal seek", 29 end
  function methods.read() return nil, "Bad file descriptor", 9 end
  function methods.lines() error(name .. " is not readable", 2) end
  return setmetatable(stream, {
    __index = methods,
    __name = "FILE*",
    __tostring = function() return "file (" .. name .. ")" end,
  })
end

local stdout, stderr = std_stream("stdout", raw_out), std_stream("stderr", raw_err)
local current_out = stdout
io.stdout, io.stderr = stdout, stderr

function io.type(f)
  if f == stdout or f == stderr then return "file" end
  return io_type(f)
end
function io.output(f)
  if f == nil then return current_out end
  if f == stdout or f == stderr then current_out = f return f end
  current_out = io_output(f)
  return current_out
end
function io.write(...)
  return current_out:write(...)
end
function io.close(f)
  return (f or current_out):close()
end
function print(...)
  local n = select('#', ...)
  if n == 1 then
    raw_out(tostring((...)), "\n")
    return
  end
  local parts = {}
  for i = 1, n do parts[i] = tostring((select(i, ...))) end
  raw_out(concat(parts, "\t"), "\n")
end

local stdin = io_open(stdin_path, "r")
if stdin then
  io.stdin = stdin
  io_input(stdin)
end

os.exit = function(status) exit(status) end

-- No processes: say so as C Lua does where it has no popen or shell (luars' wasm build calls
-- every popen mode invalid, and claims a shell). difftime returns a float, as in C Lua.
function io.popen() error("'popen' not supported", 2) end
function os.execute(command)
  if command == nil then return false end
  return nil, "exit", 127
end
local difftime = os.difftime
function os.difftime(t2, t1) return difftime(t2, t1) + 0.0 end

-- luars' io.tmpfile asks for the system temp dir, which wasm has not: a file in /tmp that is
-- unlinked at once, as the C library does.
local os_remove, tmpfiles = os.remove, 0
function io.tmpfile()
  tmpfiles = tmpfiles + 1
  local name = tmp_root .. "/.code-exec-tmpfile-" .. tmpfiles
  local f, err, code = io_open(name, "w+b")
  if f then os_remove(name) end
  return f, err, code
end

local fn, err = load(code, "@input", "t")
if not fn then
  return report("error", err)
end

local function handler(e)
  local msg = e
  if type(e) ~= "string" then
    local mt = getmetatable(e)
    if mt and mt.__tostring then
      local ok, s = pcall(tostring, e)
      msg = ok and s or format("(error object is a %s value)", type(e))
    elseif type(e) == "number" then
      msg = tostring(e)
    else
      msg = format("(error object is a %s value)", type(e))
    end
  end
  return traceback(msg, 2)
end

local r = pack(xpcall(fn, handler))
if not r[1] then
  return report("error", r[2])
end
if r.n == 1 or (r.n == 2 and r[2] == nil) then
  return report("ok")
end
local ok, rendered = xpcall(function()
  local parts = {}
  for i = 2, r.n do parts[#parts + 1] = tostring(r[i]) end
  return concat(parts, "\t")
end, handler)
return report(ok and "ok" or "error", rendered)
"#;
