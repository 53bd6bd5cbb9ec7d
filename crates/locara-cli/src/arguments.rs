//! A tool's argument object from the command line: a JSON object (positional, or `--input`
//! FILE or `-`), with `--arg KEY=VALUE` pairs set on top.
//!
//! VALUE is parsed as JSON when it parses, else taken as a string; `@PATH` takes a file's text
//! and `@-` stdin's. Stdin can be read once per command.
//!
//! JSON is read by `locara_manifest::json`, which refuses an object that repeats a key
//! (`{"path": "a", "path": "b"}`): which value a reader keeps differs between readers, so the
//! call would not be the one the person or the model wrote. The same goes for a key given by
//! two `--arg`s; a `--arg` does override the key of the JSON object it is set on top of.

use std::io::Read;

use anyhow::{Context as _, format_err};
use locara_manifest::json;
use serde_json::{Map, Value};

/// Stdin, readable once, named after whoever read it for a clear error on the second read.
pub(crate) struct Stdin<'a> {
    reader: Box<dyn Read + 'a>,
    taken_by: Option<String>,
}

impl<'a> Stdin<'a> {
    /// Wraps a reader (the process's stdin, or a test's bytes).
    pub(crate) fn new(reader: impl Read + 'a) -> Stdin<'a> {
        Stdin {
            reader: Box::new(reader),
            taken_by: None,
        }
    }

    /// Reads all of stdin as text, for `user` (e.g. `--input -`).
    pub(crate) fn read(&mut self, user: &str) -> anyhow::Result<String> {
        if let Some(first) = &self.taken_by {
            return Err(format_err!(
                "{user} cannot read stdin: {first} already read it"
            ));
        }
        self.taken_by = Some(user.to_owned());
        let mut text = String::new();
        self.reader
            .read_to_string(&mut text)
            .with_context(|| format!("cannot read stdin for {user}"))?;
        Ok(text)
    }
}

/// Reads a file's text, or stdin's for `-`.
pub(crate) fn read_source(
    source: &str,
    stdin: &mut Stdin<'_>,
    user: &str,
) -> anyhow::Result<String> {
    if source == "-" {
        return stdin.read(user);
    }
    std::fs::read_to_string(source).with_context(|| format!("cannot read {source} for {user}"))
}

/// The argument object, and which `--arg` values were read as JSON rather than as strings
/// (for a hint when the tool wanted a string).
#[derive(Debug)]
pub(crate) struct Arguments {
    /// The object to send.
    pub(crate) value: Value,
    /// `(key, VALUE as typed)` for each `--arg` whose VALUE parsed as JSON other than a string.
    pub(crate) parsed: Vec<(String, String)>,
}

/// How `--arg KEY=@PATH` passes a file to a file argument (`"x-locara-blob": true` in the
/// tool's input schema): by path when the file is inside the workspace, else by its bytes.
#[derive(Debug, Default)]
pub(crate) struct FileArgs<'a> {
    /// The keys that are file arguments.
    pub(crate) keys: Vec<String>,
    /// The workspace the tool sees at `/workspace`, canonical.
    pub(crate) workspace: Option<&'a std::path::Path>,
}

impl FileArgs<'_> {
    /// The argument for the file at `source`.
    fn value(&self, source: &str) -> anyhow::Result<Value> {
        use base64::Engine as _;
        let path =
            std::fs::canonicalize(source).with_context(|| format!("cannot open {source}"))?;
        if let Some(relative) = self
            .workspace
            .and_then(|root| path.strip_prefix(root).ok())
            .and_then(|p| p.to_str())
        {
            return Ok(serde_json::json!({ "path": relative }));
        }
        let bytes = std::fs::read(&path).with_context(|| format!("cannot read {source}"))?;
        Ok(serde_json::json!({
            "base64": base64::engine::general_purpose::STANDARD.encode(bytes)
        }))
    }
}

/// Builds the argument object.
pub(crate) fn build(
    positional: Option<&str>,
    input: Option<&str>,
    pairs: &[String],
    files: &FileArgs<'_>,
    stdin: &mut Stdin<'_>,
) -> anyhow::Result<Arguments> {
    let base = match (positional, input) {
        (Some(text), _) => Some(parse_object(text, "ARGS_JSON")?),
        (None, Some(source)) => {
            let text = read_source(source, stdin, "--input")?;
            Some(parse_object(&text, &format!("--input {source}"))?)
        }
        (None, None) => None,
    };
    let mut object = base.unwrap_or_default();
    let mut parsed = Vec::new();
    let mut given = Vec::new();
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format_err!("--arg {pair:?} is not KEY=VALUE"))?;
        if key.is_empty() {
            return Err(format_err!("--arg {pair:?} has an empty key"));
        }
        if given.contains(&key) {
            return Err(format_err!(
                "--arg {key}=… is given twice; give each key once"
            ));
        }
        given.push(key);
        let value = match value.strip_prefix('@') {
            Some(source) if source != "-" && files.keys.iter().any(|k| k == key) => {
                files.value(source)?
            }
            Some(source) => Value::String(read_source(source, stdin, &format!("--arg {key}"))?),
            None => {
                refuse_repeated_keys(value, key)?;
                let json = parse_value(value);
                if !json.is_string() {
                    parsed.push((key.to_owned(), value.to_owned()));
                }
                json
            }
        };
        object.insert(key.to_owned(), value);
    }
    Ok(Arguments {
        value: Value::Object(object),
        parsed,
    })
}

/// VALUE as JSON when it parses (numbers, booleans, null, arrays, objects, quoted strings),
/// else as a string. (An object that repeats a key does not parse; [`build`] refuses it first.)
pub(crate) fn parse_value(text: &str) -> Value {
    json::parse_value("--arg value", text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// Refuses a `--arg KEY=VALUE` whose VALUE is JSON but for a key it repeats, rather than
/// taking it as a string. (A VALUE that is not JSON anyway stays a string.)
fn refuse_repeated_keys(text: &str, key: &str) -> anyhow::Result<()> {
    match json::parse_value("--arg value", text) {
        Err(e @ locara_manifest::Error::DuplicateKey { .. })
            if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() =>
        {
            Err(anyhow::Error::new(e).context(format!("--arg {key}=… repeats a key")))
        }
        _ => Ok(()),
    }
}

/// Parses `text` as a JSON object.
fn parse_object(text: &str, what: &str) -> anyhow::Result<Map<String, Value>> {
    let value = json::parse_value("tool arguments", text).map_err(|e| match e {
        locara_manifest::Error::DuplicateKey { .. } => {
            anyhow::Error::new(e).context(format!("{what} repeats a key"))
        }
        e => anyhow::Error::new(e).context(format!("{what} is not valid JSON")),
    })?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(format_err!(
            "{what} must be a JSON object of arguments, not {}",
            kind(&other)
        )),
    }
}

/// What kind of JSON value this is, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
