//! The one error type of this crate.

/// Everything that can go wrong while parsing or validating a wire format.
///
/// Messages are lower-case, name the offending input and, where a rule was broken, state the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The JSON text could not be parsed into the expected type (syntax error, unknown or missing
    /// field, wrong type, or a field value that failed its own rule such as a bad tool name).
    #[error("invalid {what} at line {line}, column {column}: {message}")]
    Json {
        /// What was being parsed, e.g. `tool manifest`.
        what: &'static str,
        /// 1-based line of the error in the JSON text.
        line: usize,
        /// 1-based column of the error in the JSON text.
        column: usize,
        /// The parser's message, e.g. "unknown field `foo`, expected one of ...".
        message: String,
    },

    /// A tool name broke the naming rule.
    #[error(
        "invalid tool name `{input}`: {reason} (a tool name is one or more dot-separated segments, \
         each a lowercase ascii letter or digit followed by lowercase ascii letters, digits, `_` or `-`, \
         at most 64 characters in total, e.g. `text.chunk` or `bash.read-only`)"
    )]
    InvalidToolName {
        /// The rejected input.
        input: String,
        /// Which part of the rule was broken.
        reason: String,
    },

    /// A version is not a full semantic version.
    #[error(
        "invalid version `{input}`: {reason} (use a full semantic version MAJOR.MINOR.PATCH, e.g. `1.0.0`)"
    )]
    InvalidVersion {
        /// The rejected input.
        input: String,
        /// Why it was rejected.
        reason: String,
    },

    /// A SHA-256 digest is not 64 lowercase hex characters.
    #[error("invalid sha256 `{input}`: {reason} (expected exactly 64 lowercase hex characters)")]
    InvalidSha256 {
        /// The rejected input.
        input: String,
        /// Why it was rejected.
        reason: String,
    },

    /// A document declares a schema or format version this crate does not understand.
    #[error("unsupported {what} version {found}, expected {expected}")]
    UnsupportedVersion {
        /// Which document, e.g. `tool manifest schema`.
        what: &'static str,
        /// The version found in the document.
        found: u32,
        /// The only version this crate understands.
        expected: u32,
    },

    /// A JSON object names the same key twice. JSON readers disagree on which value wins, so
    /// such a text is refused wherever Locara reads JSON.
    #[error(
        "invalid {what} at line {line}, column {column}: duplicate key {key:?} at {pointer}; \
         an object may name a key only once (JSON readers disagree on which value wins)"
    )]
    DuplicateKey {
        /// What was being parsed, e.g. `tool manifest`.
        what: &'static str,
        /// The repeated key.
        key: String,
        /// The JSON pointer of the repeated member, e.g. `/input_schema/properties/path`.
        pointer: String,
        /// 1-based line of the repeated key in the JSON text.
        line: usize,
        /// 1-based column of the repeated key in the JSON text.
        column: usize,
    },

    /// A limit is above its maximum.
    #[error("limit `{limit}` is {value}, above the maximum of {max}; lower it to at most {max}")]
    LimitTooHigh {
        /// The limit's field name, e.g. `memory_mb`.
        limit: &'static str,
        /// The requested value.
        value: u64,
        /// The largest accepted value.
        max: u64,
    },

    /// A limit is zero, which would make every call fail.
    #[error("limit `{limit}` is 0; omit it to get the default or give a positive value")]
    LimitZero {
        /// The limit's field name, e.g. `wall_time_ms`.
        limit: &'static str,
    },

    /// `input_schema` or `output_schema` is not a JSON object.
    #[error("`{field}` must be a JSON Schema object, found {found}")]
    SchemaNotObject {
        /// `input_schema` or `output_schema`.
        field: &'static str,
        /// The JSON type that was found instead, e.g. `a string`.
        found: &'static str,
    },

    /// A string field that must carry a value is empty or blank.
    #[error("`{field}` must not be empty")]
    EmptyField {
        /// The field's path, e.g. `capability_requirements[1]`.
        field: String,
    },

    /// A network host entry is not a host name, an IP address or `*`, so it would match no
    /// request.
    #[error(
        "invalid host {host:?} in `{field}`: {reason}; give a host name (e.g. `api.example.com`), \
         an IP address (e.g. `127.0.0.1` or `::1`) or `*` for any host, without a scheme, port, path or brackets"
    )]
    InvalidNetHost {
        /// The field's path, e.g. `wasi_imports.net.allowed_hosts[0]`.
        field: String,
        /// The rejected entry.
        host: String,
        /// What is wrong with it, e.g. "it has a port".
        reason: String,
    },

    /// A model dependency is inconsistent (a name that is not a plain file name, a duplicate).
    #[error("invalid `{field}`: {reason}")]
    InvalidModel {
        /// The offending field, e.g. `model_dependencies[0].name`.
        field: String,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// A manifest's `interpreter` section is inconsistent.
    #[error("invalid `{field}`: {reason}")]
    InvalidInterpreter {
        /// The field's path, e.g. `interpreter.argv`.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },

    /// An app manifest names a registry tool without a version.
    #[error(
        "registry tool `{reference}` must pin a version, e.g. `{reference}@0.1.0` (app manifests never float to the newest version)"
    )]
    UnpinnedTool {
        /// The reference as written.
        reference: String,
    },

    /// An app manifest names the same registry tool twice.
    #[error("registry tool `{id}` is listed more than once in `tools`; keep one entry")]
    DuplicateTool {
        /// The repeated tool id.
        id: String,
    },
}
