//! The API a code-mode program is written against, as source text: TypeScript declarations for
//! code-exec.js's `locara` global and a Python stub for code-exec.python's `locara` module, each
//! tool a typed function with its description as a doc comment (`locara tools export --format
//! typescript|python`, docs/code-mode.md).
//!
//! Types come from the manifests' JSON Schemas: `type` (and lists of types), `enum`, `const`,
//! `anyOf`/`oneOf`, `items`, `properties` with `required`, `additionalProperties`, and
//! `$ref` into the same schema's `$defs`. A file argument (`"x-locara-blob": true`) is a file
//! of the program, bytes or `{"path"}`/`{"base64"}`. Anything else is `unknown` / `Any`.

use std::fmt::Write as _;

use serde_json::Value;

use crate::{Locara, ToolDescription};

/// The language of an exported API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApiLanguage {
    /// TypeScript declarations (`.d.ts`) of code-exec.js's `locara` global.
    TypeScript,
    /// The same tool types as a plain module, without the `locara` global: the
    /// `tools.d.ts` of the Node package `@locara/sdk`, whose `loc.tools` has these methods.
    TypeScriptModule,
    /// A Python stub (`.pyi`) of code-exec.python's `locara` module.
    Python,
    /// The same tool types as the stub of a module of the Python package `locara`
    /// (`locara/tools.pyi`): `Tools` and `AsyncTools`, the types of `loc.tools` and
    /// `loc.aio.tools`.
    PythonModule,
}

/// How deep a schema is turned into a type before the rest is `unknown`.
const MAX_DEPTH: usize = 12;

impl Locara {
    /// The API of every callable tool (the newest version of each id), as source text in
    /// `language`; see [`ApiLanguage`].
    pub fn export_api(&self, language: ApiLanguage) -> String {
        let descriptions: Vec<ToolDescription> = self
            .callable_ids()
            .iter()
            .filter_map(|id| self.describe(id).ok())
            .collect();
        let tools = descriptions.iter().map(|d| Tool {
            id: d.summary.id.clone(),
            description: &d.summary.description,
            input: &d.input_schema,
            output: &d.output_schema,
        });
        match language {
            ApiLanguage::TypeScript => typescript(tools, TS_GLOBAL),
            ApiLanguage::TypeScriptModule => typescript(tools, ""),
            ApiLanguage::Python => python(tools, PY_PRELUDE, PY_FUNCTIONS),
            ApiLanguage::PythonModule => python(tools, PY_MODULE_PRELUDE, ""),
        }
    }
}

struct Tool<'a> {
    id: String,
    description: &'a str,
    input: &'a Value,
    output: &'a Value,
}

/// `pdf.split` → `PdfSplit`.
fn pascal(id: &str) -> String {
    id.split(['.', '-', '_'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut chars = p.chars();
            chars.next().map_or_else(String::new, |c| {
                c.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

/// The name of tool `id` in code-exec.js's `locara.tools`: `pdf.split` is `pdfSplit`.
pub fn javascript_name(id: &str) -> String {
    camel(id)
}

/// The name of tool `id` in code-exec.python's and code-exec.lua's `locara.tools`:
/// `pdf.split` is `pdf_split`.
pub fn python_name(id: &str) -> String {
    snake(id)
}

/// `pdf.split` → `pdfSplit` (as code-exec.js names `locara.tools`).
fn camel(id: &str) -> String {
    let pascal = pascal(id);
    let mut chars = pascal.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_ascii_lowercase().to_string() + chars.as_str()
    })
}

/// `pdf.split` → `pdf_split` (as code-exec.python names `locara.tools`).
fn snake(id: &str) -> String {
    id.replace(['.', '-'], "_")
}

/// `$ref` resolved against `root` (`#/$defs/Name` or `#/definitions/Name`).
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
            .unwrap_or(&Value::Null),
        None => schema,
    }
}

fn is_blob(schema: &Value) -> bool {
    schema.get("x-locara-blob") == Some(&Value::Bool(true))
}

fn required(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// `text` as the lines of a comment body, each prefixed with `prefix`.
fn comment(text: &str, prefix: &str, out: &mut String) {
    for line in text.replace("*/", "*\\/").lines() {
        out.push_str(format!("{prefix}{line}").trim_end());
        out.push('\n');
    }
}

// --- TypeScript ---------------------------------------------------------------------------

/// The declarations of `tools`, followed by `global` (the `locara` global of code mode).
fn typescript<'a>(tools: impl Iterator<Item = Tool<'a>>, global: &str) -> String {
    let mut out = String::from(TS_PRELUDE);
    let mut members = String::new();
    for tool in tools {
        let name = pascal(&tool.id);
        let _ = writeln!(out, "/** The arguments of `{}`. */", tool.id);
        let _ = writeln!(
            out,
            "export type {name}Input = {};\n",
            ts_type(tool.input, tool.input, 0, "")
        );
        let _ = writeln!(out, "/** The output of `{}`. */", tool.id);
        let _ = writeln!(
            out,
            "export type {name}Output = {};\n",
            ts_type(tool.output, tool.output, 0, "")
        );
        members.push_str("  /**\n");
        comment(tool.description, "   * ", &mut members);
        let _ = writeln!(members, "   *\n   * `{}`\n   */", tool.id);
        let _ = writeln!(
            members,
            "  {}(args: {name}Input): Promise<ToolResult<{name}Output>>;",
            camel(&tool.id)
        );
    }
    let _ = write!(
        out,
        "/** Every tool this app may call, named in camelCase (`pdf.split` is `pdfSplit`). */\nexport interface Tools {{\n{members}}}\n{global}"
    );
    out
}

const TS_PRELUDE: &str = r#"// The tools a code-exec.js program may call through `locara` (docs/code-mode.md).
// Generated by `locara tools export --format typescript` from the tools' manifests.

/** A file a tool call produced, saved under the program's working directory. */
export interface LocaraFile {
  path: string;
  name: string;
  size: number;
  sha256: string;
  bytes(): Uint8Array;
}

/** A file argument: a file a call produced, bytes, or `{path}` in the workspace, `{base64}`. */
export type FileArgument =
  | LocaraFile
  | Uint8Array
  | ArrayBuffer
  | { path: string }
  | { base64: string };

/** What a tool call returned. */
export interface ToolResult<Output> {
  /** The tool that ran, `id@version`. */
  tool: string;
  output: Output;
  files: LocaraFile[];
  stats: Record<string, unknown>;
}

/** A tool call that failed or could not run (`error instanceof locara.LocaraError`). */
export interface LocaraError extends Error {
  tool: string;
  /** `invalid_input`, `capability_denied`, `limit_exceeded`, `tool_error`, ... */
  code: string;
  hint: string;
  violations: { pointer: string; constraint: string; message: string }[];
  /** For `limit_exceeded`: which limit. */
  limit?: string;
  report: Record<string, unknown>;
}

/** A tool in a search result. */
export interface ToolSummary {
  tool: string;
  id: string;
  version: string;
  display_name: string;
  description: string;
  safety_tier: string;
  score?: number;
}

"#;

const TS_GLOBAL: &str = r#"
/** What the host offers a program. */
export interface Locara {
  tools: Tools;
  /** Calls a tool by id (`id` or `id@version`). */
  call(tool: string, args?: Record<string, unknown>): Promise<ToolResult<unknown>>;
  search(query: string, limit?: number): Promise<ToolSummary[]>;
  describe(tool: string): Promise<Record<string, unknown>>;
  progress(
    title: string,
    total?: number,
  ): { step(message?: string): void; done(summary?: string): void };
  LocaraError: new (...args: never[]) => LocaraError;
}

declare global {
  const locara: Locara;
}
"#;

fn ts_literal(value: &Value) -> String {
    match value {
        Value::Object(_) | Value::Array(_) => "unknown".to_owned(),
        other => other.to_string(),
    }
}

fn ts_property(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        name.to_owned()
    } else {
        Value::String(name.to_owned()).to_string()
    }
}

fn ts_type(schema: &Value, root: &Value, depth: usize, indent: &str) -> String {
    if depth > MAX_DEPTH {
        return "unknown".to_owned();
    }
    let schema = resolve(schema, root);
    if is_blob(schema) {
        return "FileArgument".to_owned();
    }
    if let Some(value) = schema.get("const") {
        return ts_literal(value);
    }
    if let Some(values) = schema["enum"].as_array() {
        return values
            .iter()
            .map(ts_literal)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema[key].as_array() {
            return options
                .iter()
                .map(|o| ts_type(o, root, depth + 1, indent))
                .collect::<Vec<_>>()
                .join(" | ");
        }
    }
    match &schema["type"] {
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .map(|t| ts_of_type(t, schema, root, depth, indent))
            .collect::<Vec<_>>()
            .join(" | "),
        Value::String(t) => ts_of_type(t, schema, root, depth, indent),
        _ if schema.get("properties").is_some() => {
            ts_of_type("object", schema, root, depth, indent)
        }
        _ => "unknown".to_owned(),
    }
}

fn ts_of_type(kind: &str, schema: &Value, root: &Value, depth: usize, indent: &str) -> String {
    match kind {
        "string" => "string".to_owned(),
        "integer" | "number" => "number".to_owned(),
        "boolean" => "boolean".to_owned(),
        "null" => "null".to_owned(),
        "array" => match schema.get("items") {
            Some(items) => format!("Array<{}>", ts_type(items, root, depth + 1, indent)),
            None => "unknown[]".to_owned(),
        },
        "object" => {
            let Some(properties) = schema["properties"].as_object() else {
                return match schema.get("additionalProperties") {
                    Some(Value::Object(_)) => format!(
                        "Record<string, {}>",
                        ts_type(&schema["additionalProperties"], root, depth + 1, indent)
                    ),
                    _ => "Record<string, unknown>".to_owned(),
                };
            };
            let required = required(schema);
            let inner = format!("{indent}  ");
            let mut out = String::from("{\n");
            for (name, property) in properties {
                if let Some(description) = property.get("description").and_then(Value::as_str) {
                    let _ = writeln!(out, "{inner}/**");
                    comment(description, &format!("{inner} * "), &mut out);
                    let _ = writeln!(out, "{inner} */");
                }
                let optional = if required.contains(&name.as_str()) {
                    ""
                } else {
                    "?"
                };
                let _ = writeln!(
                    out,
                    "{inner}{}{optional}: {};",
                    ts_property(name),
                    ts_type(property, root, depth + 1, &inner)
                );
            }
            let _ = write!(out, "{indent}}}");
            out
        }
        _ => "unknown".to_owned(),
    }
}

// --- Python -------------------------------------------------------------------------------

/// Python's keywords, which cannot name a keyword argument.
const PY_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

fn py_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !PY_KEYWORDS.contains(&name)
}

/// The stub of `tools` after `prelude`; `functions` (code mode's module functions) close a
/// stub of code mode's module, and a package module's stub gets `AsyncTools` instead.
fn python<'a>(tools: impl Iterator<Item = Tool<'a>>, prelude: &str, functions: &str) -> String {
    let mut out = String::from(prelude);
    let mut methods = String::new();
    for tool in tools {
        let name = pascal(&tool.id);
        let _ = writeln!(out, "\nclass {name}Output(TypedDict, total=False):");
        let _ = writeln!(out, "    \"\"\"The output of `{}`.\"\"\"", tool.id);
        let output = resolve(tool.output, tool.output);
        match output["properties"].as_object() {
            Some(properties) if properties.keys().all(|k| py_identifier(k)) => {
                for (field, schema) in properties {
                    let _ = writeln!(out, "    {field}: {}", py_type(schema, tool.output, 0));
                }
            }
            _ => out.push_str("    pass\n"),
        }

        let input = resolve(tool.input, tool.input);
        let required = required(input);
        let properties = input["properties"].as_object();
        let mut parameters = Vec::new();
        let mut docs = String::new();
        let mut others = false;
        for (field, schema) in properties.into_iter().flatten() {
            if !py_identifier(field) {
                others = true;
                continue;
            }
            let kind = py_type(schema, tool.input, 0);
            if required.contains(&field.as_str()) {
                parameters.push(format!("{field}: {kind}"));
            } else {
                parameters.push(format!("{field}: {kind} | None = None"));
            }
            let description = schema
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .replace('\n', " ");
            let _ = writeln!(docs, "            {field}: {description}");
        }
        if others {
            parameters.push("**arguments: Any".to_owned());
        }
        let signature = if parameters.is_empty() {
            String::new()
        } else {
            format!(", *, {}", parameters.join(", "))
        };
        let _ = writeln!(
            methods,
            "    def {}(self{signature}) -> Result[{name}Output]:",
            snake(&tool.id)
        );
        methods.push_str("        \"\"\"");
        let description = tool
            .description
            .replace('\\', "\\\\")
            .replace("\"\"\"", "\\\"\\\"\\\"");
        let mut lines = description.lines();
        if let Some(first) = lines.next() {
            methods.push_str(first);
        }
        methods.push('\n');
        for line in lines {
            methods.push_str(format!("        {line}").trim_end());
            methods.push('\n');
        }
        let _ = writeln!(methods, "\n        `{}`", tool.id);
        if !docs.is_empty() {
            let _ = write!(
                methods,
                "\n        Args:\n{}",
                docs.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"")
            );
        }
        methods.push_str("        \"\"\"\n        ...\n\n");
    }
    let _ = write!(
        out,
        "\n\nclass Tools:\n    \"\"\"Every tool this app may call (`pdf.split` is `pdf_split`).\"\"\"\n\n{methods}{functions}"
    );
    if functions.is_empty() {
        let coroutines = format!("\n{methods}").replace("\n    def ", "\n    async def ");
        let _ = write!(
            out,
            "    def __getitem__(self, tool: str) -> Callable[..., Result[Any]]:\n        \"\"\"Any tool by id.\"\"\"\n        ...\n\n\
             \x20   def __getattr__(self, name: str) -> Callable[..., Result[Any]]:\n        {OTHER_TOOL}\n        ...\n\n\n\
             class AsyncTools:\n    \"\"\"The same tools as coroutines (`loc.aio.tools`).\"\"\"\n{coroutines}\
             \x20   def __getitem__(self, tool: str) -> Callable[..., Awaitable[Result[Any]]]:\n        \"\"\"Any tool by id.\"\"\"\n        ...\n\n\
             \x20   def __getattr__(self, name: str) -> Callable[..., Awaitable[Result[Any]]]:\n        {OTHER_TOOL}\n        ...\n"
        );
    }
    out
}

const PY_PRELUDE: &str = r#""""The tools a code-exec.python program may call through `import locara` (docs/code-mode.md).

Generated by `locara tools export --format python` from the tools' manifests.
"""

from __future__ import annotations

import os
from typing import Any, Generic, Literal, TypedDict, TypeVar

T = TypeVar("T")


class File(os.PathLike):
    """A file a tool call produced, saved under the program's working directory."""

    path: str
    name: str
    size: int
    sha256: str

    def __fspath__(self) -> str: ...
    def read_bytes(self) -> bytes: ...


FileArgument = File | os.PathLike | bytes | dict[str, str]
"""A file argument: a file a call produced, a path of the program's, bytes, or `{"path"}` in
the workspace or `{"base64"}`."""


class Result(Generic[T]):
    """What a tool call returned; `result["key"]` reads the output."""

    tool: str
    output: T
    files: list[File]
    stats: dict[str, Any]

    def __getitem__(self, key: str) -> Any: ...


class LocaraError(Exception):
    """A tool call that failed or could not run."""

    tool: str
    code: str
    message: str
    hint: str
    violations: list[dict[str, str]]
    limit: str | None
    report: dict[str, Any]
"#;

/// The docstring of a package stub's `__getattr__`: the tools of the app's home need not be
/// the ones the stub was generated from.
const OTHER_TOOL: &str =
    "\"\"\"A tool these types do not know (installed later, or a third party's).\"\"\"";

const PY_MODULE_PRELUDE: &str = r#""""The tools of `loc.tools` and `loc.aio.tools` in the `locara` package (docs/sdk.md).

Generated by `locara tools export --format python-module` from the tools' manifests.
"""

from __future__ import annotations

import os
from typing import IO, Any, Awaitable, Callable, Literal, TypedDict

from . import Result

FileArgument = os.PathLike[str] | bytes | bytearray | IO[bytes] | dict[str, str]
"""A file argument: a path, bytes, an open file, or `{"path"}` in the workspace or `{"base64"}`."""
"#;

const PY_FUNCTIONS: &str = r#"
tools: Tools


def call(tool: str, arguments: dict[str, Any] | None = None, /, **kwargs: Any) -> Result[Any]:
    """Calls `tool` (`id` or `id@version`) with `arguments` and/or keyword arguments."""
    ...


def search(query: str, limit: int = 10) -> list[dict[str, Any]]:
    """The tools whose name or description match `query`, best first."""
    ...


def describe(tool: str) -> dict[str, Any]:
    """Everything needed to call `tool`: its schemas, limits and description."""
    ...
"#;

fn py_literal(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(_) | Value::String(_) => value.to_string(),
        _ => "Any".to_owned(),
    }
}

fn py_type(schema: &Value, root: &Value, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "Any".to_owned();
    }
    let schema = resolve(schema, root);
    if is_blob(schema) {
        return "FileArgument".to_owned();
    }
    if let Some(value) = schema.get("const") {
        return format!("Literal[{}]", py_literal(value));
    }
    if let Some(values) = schema["enum"].as_array() {
        let literals: Vec<String> = values.iter().map(py_literal).collect();
        return format!("Literal[{}]", literals.join(", "));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema[key].as_array() {
            return options
                .iter()
                .map(|o| py_type(o, root, depth + 1))
                .collect::<Vec<_>>()
                .join(" | ");
        }
    }
    let one = |kind: &str| match kind {
        "string" => "str".to_owned(),
        "integer" => "int".to_owned(),
        "number" => "float".to_owned(),
        "boolean" => "bool".to_owned(),
        "null" => "None".to_owned(),
        "array" => match schema.get("items") {
            Some(items) => format!("list[{}]", py_type(items, root, depth + 1)),
            None => "list[Any]".to_owned(),
        },
        _ => "dict[str, Any]".to_owned(),
    };
    match &schema["type"] {
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .map(one)
            .collect::<Vec<_>>()
            .join(" | "),
        Value::String(kind) => one(kind),
        _ if schema.get("properties").is_some() => "dict[str, Any]".to_owned(),
        _ => "Any".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_follow_the_bindings() {
        assert_eq!(pascal("code-exec.python"), "CodeExecPython");
        assert_eq!(camel("pdf.split"), "pdfSplit");
        assert_eq!(camel("code-exec.js"), "codeExecJs");
        assert_eq!(snake("code-exec.lua"), "code_exec_lua");
    }

    #[test]
    fn schemas_become_types() {
        let schema = json!({
            "type": "object",
            "required": ["source"],
            "properties": {
                "source": {"x-locara-blob": true, "type": "object"},
                "mode": {"enum": ["a", "b"]},
                "n": {"type": ["integer", "null"]},
                "parts": {"type": "array", "items": {"$ref": "#/$defs/Part"}},
                "not-an-identifier": {"type": "string"},
            },
            "$defs": {"Part": {"type": "object", "properties": {"file": {"type": "string"}}}},
        });
        let ts = ts_type(&schema, &schema, 0, "");
        assert!(ts.contains("  source: FileArgument;"), "{ts}");
        assert!(ts.contains("  mode?: \"a\" | \"b\";"), "{ts}");
        assert!(ts.contains("  n?: number | null;"), "{ts}");
        assert!(ts.contains("file?: string;"), "{ts}");
        assert!(ts.contains("\"not-an-identifier\"?: string;"), "{ts}");
        assert_eq!(
            py_type(&schema["properties"]["parts"], &schema, 0),
            "list[dict[str, Any]]"
        );
        assert_eq!(
            py_type(&schema["properties"]["mode"], &schema, 0),
            "Literal[\"a\", \"b\"]"
        );
        assert_eq!(
            py_type(&schema["properties"]["n"], &schema, 0),
            "int | None"
        );
    }
}
