//! Write Locara tools in Rust.
//!
//! A Locara tool is a wasm32-wasip1 program that reads one JSON object of arguments on stdin
//! and writes one JSON value on stdout (exit code 0), or a one-line message on stderr with exit
//! code 1 (it failed) or 2 (the arguments were unusable): `docs/tool-abi.md`. This crate is
//! that ABI on the guest side. [`macro@tool`] on a function makes it the program's entry
//! point and derives the tool's input and output JSON Schemas (draft 2020-12, with
//! [`schemars`]) and its description (the doc comment) from the code; the program prints them
//! as a [`ToolInfo`] when run with [`DESCRIBE_FLAG`], which is where a manifest's schemas come
//! from. It deliberately knows nothing of manifests' other fields (limits, capabilities,
//! safety tier), of signing or of the host: a tool asks for what it needs in its manifest, and
//! the host decides what it gets.
//!
//! A tool crate depends on `serde` (with `derive`) and `schemars` 1 beside this crate: their
//! derives name their own crates.
//!
//! ```
//! use locara_pdk::{JsonSchema, ToolError, tool};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Args {
//!     /// The text to shout.
//!     text: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Shouted {
//!     text: String,
//! }
//!
//! /// Shouts the text: returns it in capitals.
//! #[tool(id = "text.shout")]
//! fn shout(args: Args) -> Result<Shouted, ToolError> {
//!     Ok(Shouted { text: args.text.to_uppercase() })
//! }
//! ```

use std::fmt;
use std::io::{self, Read, Write};
use std::process::ExitCode;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use locara_pdk_macros::tool;

pub mod files;
pub mod host;
pub mod kv;
pub mod models;
pub mod progress;
pub mod workspace;

// `#[tool]` expands to `::locara_pdk::...` paths, which this crate's own tests use too.
#[cfg(test)]
extern crate self as locara_pdk;
pub use schemars::JsonSchema;

#[cfg(test)]
mod tests;

/// Makes `function` (a `fn()`) the module's pre-initialization (docs/tool-abi.md §
/// Pre-initialization), exported as `locara_preinit`: `locara publish`, `locara dev` and
/// `cargo xtask build-tools` run it once and publish the module with the memory it left, so
/// the work it does (tables built, a parser or an interpreter made, kept in a `static`) is
/// done once, before any call, instead of in each.
/// The tool must still work when it has not run (the module as built, e.g. shipped in an app
/// with `locara sign`): make what is missing then, e.g. with `OnceLock::get_or_init`. It must
/// not open files or read `/workspace` or `/models`, and what it takes from clocks or random
/// numbers is frozen into every call.
///
/// ```
/// use std::sync::OnceLock;
///
/// static SQUARES: OnceLock<Vec<u64>> = OnceLock::new();
///
/// fn squares() -> &'static [u64] {
///     SQUARES.get_or_init(|| (0..1024).map(|i| i * i).collect())
/// }
///
/// locara_pdk::preinit!(|| {
///     squares();
/// });
/// ```
#[macro_export]
macro_rules! preinit {
    ($function:expr) => {
        #[allow(
            unsafe_code,
            reason = "an export is how the publisher finds the pre-initialization"
        )]
        /// The module's pre-initialization, which its publisher runs once (docs/tool-abi.md).
        #[unsafe(export_name = "locara_preinit")]
        pub extern "C" fn __locara_preinit() {
            let function: fn() = $function;
            function();
        }
    };
}

/// The argument that makes a `#[tool]` program print its [`ToolInfo`] as JSON and exit,
/// instead of reading arguments on stdin.
pub const DESCRIBE_FLAG: &str = "--locara-describe";

/// Why a tool did not produce a result; decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The tool ran and failed (exit code 1), e.g. an I/O error.
    Failed,
    /// The arguments were unusable even though they passed the schema (exit code 2),
    /// e.g. a missing file or an ambiguous edit.
    BadArgs,
}

impl ErrorKind {
    /// The process exit code for this kind of error.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Failed => 1,
            ErrorKind::BadArgs => 2,
        }
    }
}

/// A tool error: a kind and a one-line message written for the caller (usually an LLM).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    kind: ErrorKind,
    message: String,
}

impl ToolError {
    /// An error of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ToolError {
        ToolError {
            kind,
            message: message.into(),
        }
    }

    /// The tool ran and failed (exit code 1).
    pub fn failed(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::Failed, message)
    }

    /// The arguments were unusable (exit code 2).
    pub fn bad_args(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::BadArgs, message)
    }

    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, as written to stderr.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// What a `#[tool]` program says about itself: the manifest fields the code determines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    /// The tool id (`#[tool(id = "...")]`, or the package name).
    pub id: String,
    /// The package version.
    pub version: String,
    /// The function's doc comment.
    pub description: String,
    /// The JSON Schema of the arguments.
    pub input_schema: Value,
    /// The JSON Schema of the result.
    pub output_schema: Value,
}

impl ToolInfo {
    /// The manifest fields a `ToolInfo` carries, by their names in the manifest and here.
    pub const MANIFEST_FIELDS: [&str; 5] = [
        "id",
        "version",
        "description",
        "input_schema",
        "output_schema",
    ];

    /// The info of a tool taking `I` and returning `O`.
    pub fn of<I: JsonSchema, O: JsonSchema>(
        id: &str,
        version: &str,
        description: &str,
    ) -> ToolInfo {
        ToolInfo::with_schemas(
            id,
            version,
            description,
            |title| schema_of::<I>(title, Direction::Input),
            |title| schema_of::<O>(title, Direction::Output),
        )
    }

    /// The info with the schemas `input` and `output` make, given their titles.
    fn with_schemas(
        id: &str,
        version: &str,
        description: &str,
        input: fn(String) -> Value,
        output: fn(String) -> Value,
    ) -> ToolInfo {
        ToolInfo {
            id: id.to_owned(),
            version: version.to_owned(),
            description: description.to_owned(),
            input_schema: input(format!("{id} input")),
            output_schema: output(format!("{id} output")),
        }
    }
}

/// Which way a schema describes its type: how the input is read, or how the result is written
/// (a result's field with `skip_serializing_if` is then not required).
#[derive(Clone, Copy)]
enum Direction {
    Input,
    Output,
}

/// `T`'s JSON Schema (draft 2020-12), titled `title` as the manifests' schemas are (`ocr
/// input`), rather than by the Rust type's name.
///
/// Nested types are inlined rather than referenced through `$defs`: the schema is what a
/// language model reads to call the tool, and many model APIs ignore or reject `$ref`. Only a
/// recursive type keeps a reference. A doc comment on the type itself is left out: the tool's
/// description says what the tool does, and each field's doc comment what it means.
fn schema_of<T: JsonSchema>(title: String, direction: Direction) -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
    });
    let settings = match direction {
        Direction::Input => settings.for_deserialize(),
        Direction::Output => settings.for_serialize(),
    };
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Value::Object(map) = &mut value {
        map.remove("description");
        map.insert("title".to_owned(), Value::String(title));
    }
    value
}

/// Runs a tool over the process's stdin, stdout and stderr, and returns the exit code for
/// `main` to return.
///
/// Bad JSON on stdin exits with code 2; a [`ToolError`] exits with its kind's code; a panic
/// becomes a one-line error with code 1.
///
/// Returns the exit code rather than calling `std::process::exit`: a successful `_start` then
/// returns normally instead of through `proc_exit`, which the host would otherwise treat as an
/// early stop.
pub fn main_with(f: impl FnOnce(Value) -> Result<Value, ToolError>) -> ExitCode {
    report_panics_as_tool_errors();
    let result = read_input(io::stdin().lock())
        .and_then(f)
        .and_then(|value| encode(&value));
    write_result(result)
}

/// [`main_with`] for a tool that reads its arguments' JSON text and writes its result's (what
/// `#[tool]` generates: no `serde_json::Value` is made on either side).
fn main_bytes(f: impl FnOnce(&[u8]) -> Result<Vec<u8>, ToolError>) -> ExitCode {
    report_panics_as_tool_errors();
    let result = read_stdin(io::stdin().lock()).and_then(|json| f(&json));
    write_result(result)
}

/// Writes a tool's result (its JSON text) to stdout, or its error to stderr; the exit code.
fn write_result(result: Result<Vec<u8>, ToolError>) -> ExitCode {
    let (mut code, out, mut err) = finish(result);
    if !out.is_empty() {
        let mut stdout = io::stdout().lock();
        if let Err(e) = stdout.write_all(&out).and_then(|()| stdout.flush()) {
            let failed = ToolError::failed(format!("cannot write the result to stdout: {e}"));
            (code, _, err) = finish(Err(failed));
        }
    }
    let mut stderr = io::stderr().lock();
    // Nothing useful is left to do if stderr itself is broken.
    let _ = stderr.write_all(&err).and_then(|()| stderr.flush());
    ExitCode::from(code)
}

/// A tool's result as JSON text.
fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, ToolError> {
    serde_json::to_vec(value).map_err(cannot_encode)
}

/// Why a result could not be written as JSON (not expected: a map whose keys are neither
/// strings nor numbers, or a `Serialize` implementation that fails).
fn cannot_encode(error: serde_json::Error) -> ToolError {
    ToolError::failed(format!("cannot encode the result as JSON: {error}"))
}

/// The exit code, stdout and stderr bytes for a tool's result (its JSON text).
fn finish(result: Result<Vec<u8>, ToolError>) -> (u8, Vec<u8>, Vec<u8>) {
    match result {
        Ok(mut bytes) => {
            bytes.push(b'\n');
            (0, bytes, Vec::new())
        }
        Err(err) => {
            let line = format!("{}\n", one_line(err.message()));
            (err.kind().exit_code() as u8, Vec::new(), line.into_bytes())
        }
    }
}

/// Makes a panic a one-line tool error (exit code 1) instead of a trap.
///
/// Tools are built with `panic = "abort"`, where a panic would end as an `unreachable` trap
/// that the host can only report as a crash. A parser that panics on a malformed file then
/// reads as what it is: this input could not be handled.
fn report_panics_as_tool_errors() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let line = one_line(&format!(
            "the tool failed on this input (internal error: {message}{location}); the file may be malformed or use a feature the tool does not support"
        ));
        let mut stderr = io::stderr().lock();
        let _ = writeln!(stderr, "{line}").and_then(|()| stderr.flush());
        std::process::exit(ErrorKind::Failed.exit_code());
    }));
}

fn read_input(reader: impl Read) -> Result<Value, ToolError> {
    parse_json(&read_stdin(reader)?)
}

fn read_stdin(mut reader: impl Read) -> Result<Vec<u8>, ToolError> {
    let mut buf = Vec::new();
    reader
        .read_to_end(&mut buf)
        .map_err(|e| ToolError::failed(format!("cannot read the arguments from stdin: {e}")))?;
    Ok(buf)
}

fn parse_json(json: &[u8]) -> Result<Value, ToolError> {
    serde_json::from_slice(json)
        .map_err(|e| ToolError::bad_args(format!("the arguments on stdin are not valid JSON: {e}")))
}

/// [`parse_args`] of the arguments' JSON text, read straight into `T` when they are an object
/// `T` takes; on any error (and for JSON that is not an object) it reads them as
/// [`parse_args`] does, so a tool's errors, and what it does with a key given twice (keeps the
/// last), are the same either way.
fn parse_args_json<T: DeserializeOwned>(json: &[u8]) -> Result<T, ToolError> {
    let first = json
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    if first == Some(&b'{')
        && let Ok(args) = serde_json::from_slice(json)
    {
        return Ok(args);
    }
    parse_args(parse_json(json)?)
}

/// Collapses a possibly multi-line message into one line.
pub fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Deserializes a tool's arguments, turning serde errors into [`ErrorKind::BadArgs`].
///
/// # Errors
/// Returns a bad-arguments error naming the offending field.
pub fn parse_args<T: DeserializeOwned>(input: Value) -> Result<T, ToolError> {
    if !input.is_object() {
        return Err(ToolError::bad_args(format!(
            "the arguments must be a JSON object, got {}",
            json_type(&input)
        )));
    }
    serde_json::from_value(input)
        .map_err(|e| ToolError::bad_args(format!("invalid arguments: {e}")))
}

/// Serializes a tool's output.
///
/// # Errors
/// Returns a failed error if the value cannot be represented as JSON (not expected).
pub fn to_output<T: Serialize>(output: &T) -> Result<Value, ToolError> {
    serde_json::to_value(output).map_err(cannot_encode)
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What `#[tool]` expands to calls; not a stable API.
#[doc(hidden)]
pub mod __private {
    use std::io::Write;
    use std::process::ExitCode;

    use serde::Serialize;
    use serde::de::DeserializeOwned;

    use crate::{DESCRIBE_FLAG, JsonSchema, ToolError, ToolInfo};

    pub use schemars;
    pub use serde;
    pub use serde_json;

    /// A type a `#[tool]` function can take as its whole input. It has no supertraits, and
    /// the generated code reaches serde and schemars only through it, so a type that lacks a
    /// derive fails this one bound, with this message, and nothing else.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool's input: it must implement `serde::Deserialize` and `schemars::JsonSchema`",
        label = "the tool's input",
        note = "derive them: `#[derive(serde::Deserialize, locara_pdk::JsonSchema)]`"
    )]
    pub trait ToolInput: Sized {
        /// [`parse_args`](crate::parse_args).
        fn parse(input: serde_json::Value) -> Result<Self, ToolError>;
        /// The arguments' JSON text read straight into the type.
        fn parse_json(input: &[u8]) -> Result<Self, ToolError>;
        /// The type's JSON Schema, titled `title`.
        fn schema(title: String) -> serde_json::Value;
    }
    // Not looked through when a type lacks one of the two, so that the error is the trait's
    // own message, which names both derives, rather than one per missing derive.
    #[diagnostic::do_not_recommend]
    impl<T: DeserializeOwned + JsonSchema> ToolInput for T {
        fn parse(input: serde_json::Value) -> Result<T, ToolError> {
            crate::parse_args(input)
        }
        fn parse_json(input: &[u8]) -> Result<T, ToolError> {
            crate::parse_args_json(input)
        }
        fn schema(title: String) -> serde_json::Value {
            crate::schema_of::<T>(title, crate::Direction::Input)
        }
    }

    /// A type a `#[tool]` function can return in its `Ok` (no supertraits, as [`ToolInput`]).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool's result: it must implement `serde::Serialize` and `schemars::JsonSchema`",
        label = "the tool's result",
        note = "derive them: `#[derive(serde::Serialize, locara_pdk::JsonSchema)]`"
    )]
    pub trait ToolOutput: Sized {
        /// [`to_output`](crate::to_output).
        fn to_value(&self) -> Result<serde_json::Value, ToolError>;
        /// The result's JSON text, written straight from the type.
        fn encode(&self) -> Result<Vec<u8>, ToolError>;
        /// The type's JSON Schema, titled `title`.
        fn schema(title: String) -> serde_json::Value;
    }
    #[diagnostic::do_not_recommend]
    impl<T: Serialize + JsonSchema> ToolOutput for T {
        fn to_value(&self) -> Result<serde_json::Value, ToolError> {
            crate::to_output(self)
        }
        fn encode(&self) -> Result<Vec<u8>, ToolError> {
            crate::encode(self)
        }
        fn schema(title: String) -> serde_json::Value {
            crate::schema_of::<T>(title, crate::Direction::Output)
        }
    }

    /// A `#[tool]` function's input and result types, named once: the macro implements it
    /// for a type of its own, where the two types are written with the spans of the function's
    /// input and result, and every generated function reaches them through it. A type without
    /// a derive it needs is then reported once, where the impl names it, rather than again at
    /// each generated use (seven errors for one missing derive, before).
    pub trait Io {
        /// What the tool takes.
        type Input: ToolInput;
        /// What the tool returns in its `Ok`.
        type Output: ToolOutput;
    }

    /// The [`ToolInfo`] of the tool whose types `T` names, as [`ToolInfo::of`] makes it.
    pub fn info<T: Io>(id: &str, version: &str, description: &str) -> ToolInfo {
        ToolInfo::with_schemas(
            id,
            version,
            description,
            <T::Input as ToolInput>::schema,
            <T::Output as ToolOutput>::schema,
        )
    }

    /// The `main` of a `#[tool]` program: `f` takes the arguments' JSON text and gives the
    /// result's.
    pub fn main(
        info: fn() -> ToolInfo,
        f: impl FnOnce(&[u8]) -> Result<Vec<u8>, ToolError>,
    ) -> ExitCode {
        if std::env::args().nth(1).as_deref() == Some(DESCRIBE_FLAG) {
            let mut json = serde_json::to_vec_pretty(&info()).expect("a ToolInfo is JSON");
            json.push(b'\n');
            let mut stdout = std::io::stdout().lock();
            return match stdout.write_all(&json).and_then(|()| stdout.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            };
        }
        crate::main_bytes(f)
    }

    /// Parses `input` as `T::Input`, runs `f` and encodes its result.
    pub fn call<T: Io>(
        f: impl FnOnce(T::Input) -> Result<T::Output, ToolError>,
        input: serde_json::Value,
    ) -> Result<serde_json::Value, ToolError> {
        f(T::Input::parse(input)?)?.to_value()
    }

    /// [`call`] on the arguments' JSON text, giving the result's: the arguments are read
    /// straight into `T::Input` and the result written straight from `T::Output` (a `serde_json::Value` of
    /// each, its maps built and dropped, was a fifth of text.chunk's call in the sandbox). The
    /// same result and errors as [`call`], but for how it is written: an object's keys come in
    /// `T::Output`'s order rather than sorted, and an `f32` as itself (`0.1`) rather than widened to an
    /// `f64` (`0.10000000149011612`).
    pub fn call_json<T: Io>(
        f: impl FnOnce(T::Input) -> Result<T::Output, ToolError>,
        input: &[u8],
    ) -> Result<Vec<u8>, ToolError> {
        f(T::Input::parse_json(input)?)?.encode()
    }
}
