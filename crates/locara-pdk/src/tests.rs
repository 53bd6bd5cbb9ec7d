//! The PDK on its own: `#[tool]` expansions called in process, their info and schemas, and
//! the ABI's exit codes and messages.

use expect_test::expect;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{
    ErrorKind, JsonSchema, ToolError, encode, finish, one_line, parse_args, read_input, tool,
};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The text to shout.
    text: String,
    /// How many exclamation marks to add.
    #[serde(default)]
    bangs: u8,
}

#[derive(Debug, Serialize, JsonSchema)]
struct Shouted {
    /// The text in capitals.
    text: String,
}

/// Shouts the text: returns it in capitals.
///
/// Empty text is refused.
#[tool(id = "test.shout")]
fn shout(args: Args) -> Result<Shouted, ToolError> {
    if args.text.is_empty() {
        return Err(ToolError::bad_args("text is empty; pass the text to shout"));
    }
    Ok(Shouted {
        text: format!(
            "{}{}",
            args.text.to_uppercase(),
            "!".repeat(args.bangs.into())
        ),
    })
}

mod plain {
    use crate::{ToolError, tool};

    /// Repeats a word.
    #[tool]
    pub(super) fn repeat(word: String, times: Option<u32>) -> Result<Vec<String>, ToolError> {
        Ok(vec![word; times.unwrap_or(2) as usize])
    }

    pub(super) mod raw {
        use crate::{ToolError, tool};

        /// Names the kind of a thing: a raw identifier is a field named without its `r#`.
        #[tool]
        pub(in super::super) fn kind(r#type: String) -> Result<String, ToolError> {
            Ok(format!("a {type}", type = r#type))
        }
    }
}

fn run(f: impl FnOnce(Value) -> Result<Value, ToolError>, stdin: &str) -> (u8, String, String) {
    let (code, out, err) = finish(
        read_input(stdin.as_bytes())
            .and_then(f)
            .and_then(|value| encode(&value)),
    );
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn a_struct_input_tool_runs_and_reports_its_errors_by_kind() {
    let call = __locara_tool_call;
    assert_eq!(
        run(call, r#"{"text": "hi", "bangs": 2}"#),
        (0, "{\"text\":\"HI!!\"}\n".to_owned(), String::new())
    );
    let (code, out, err) = run(call, r#"{"text": ""}"#);
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(err, "text is empty; pass the text to shout\n");
    let (code, _, err) = run(call, r#"{"text": "a", "loud": true}"#);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("invalid arguments: unknown field `loud`"),
        "{err}"
    );
    let (code, _, err) = run(call, "{not json");
    assert_eq!(code, 2);
    assert!(
        err.starts_with("the arguments on stdin are not valid JSON"),
        "{err}"
    );
    let (code, _, err) = run(call, "[1]");
    assert_eq!(
        (code, err.as_str()),
        (2, "the arguments must be a JSON object, got an array\n")
    );
}

#[test]
fn plain_parameters_are_the_fields_of_the_input() {
    let call = plain::__locara_tool_call;
    assert_eq!(
        run(call, r#"{"word": "a", "times": 3}"#).1,
        "[\"a\",\"a\",\"a\"]\n"
    );
    assert_eq!(run(call, r#"{"word": "b"}"#).1, "[\"b\",\"b\"]\n");
    assert_eq!(
        run(plain::raw::__locara_tool_call, r#"{"type": "tool"}"#).1,
        "\"a tool\"\n"
    );
    let (code, _, err) = run(call, r#"{"times": 3}"#);
    assert_eq!(
        (code, err.as_str()),
        (2, "invalid arguments: missing field `word`\n")
    );
}

#[test]
fn the_info_carries_the_doc_comment_and_the_schemas() {
    let info = __locara_tool_info();
    assert_eq!(info.id, "test.shout");
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(
        info.description,
        "Shouts the text: returns it in capitals.\n\nEmpty text is refused."
    );
    expect![[r#"
        {
          "$schema": "https://json-schema.org/draft/2020-12/schema",
          "additionalProperties": false,
          "properties": {
            "bangs": {
              "default": 0,
              "description": "How many exclamation marks to add.",
              "format": "uint8",
              "maximum": 255,
              "minimum": 0,
              "type": "integer"
            },
            "text": {
              "description": "The text to shout.",
              "type": "string"
            }
          },
          "required": [
            "text"
          ],
          "title": "test.shout input",
          "type": "object"
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&info.input_schema).unwrap());
    expect![[r#"
        {
          "$schema": "https://json-schema.org/draft/2020-12/schema",
          "properties": {
            "text": {
              "description": "The text in capitals.",
              "type": "string"
            }
          },
          "required": [
            "text"
          ],
          "title": "test.shout output",
          "type": "object"
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&info.output_schema).unwrap());

    // Without `id`, the package name; plain parameters are the properties of an object.
    let info = plain::__locara_tool_info();
    assert_eq!(info.id, "locara-pdk");
    assert_eq!(info.input_schema["title"], "locara-pdk input");
    assert_eq!(info.input_schema["required"], json!(["word"]));
    assert_eq!(info.input_schema["additionalProperties"], false);
    assert_eq!(info.output_schema["type"], "array");
    assert_eq!(info.output_schema["title"], "locara-pdk output");
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "only deserialized")]
struct Probe {
    path: String,
    #[serde(default)]
    n: u32,
}

#[test]
fn parse_args_reports_the_offending_field() {
    let err = parse_args::<Probe>(json!({})).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert_eq!(err.message(), "invalid arguments: missing field `path`");

    let err = parse_args::<Probe>(json!({"path": "a", "bogus": 1})).unwrap_err();
    assert!(
        err.message()
            .starts_with("invalid arguments: unknown field `bogus`"),
        "{err}"
    );

    let err = parse_args::<Probe>(json!({"path": "a", "n": -1})).unwrap_err();
    assert!(
        err.message().contains("invalid value: integer `-1`"),
        "{err}"
    );

    let err = parse_args::<Probe>(json!(["path"])).unwrap_err();
    assert_eq!(
        err.message(),
        "the arguments must be a JSON object, got an array"
    );
}

#[test]
fn exit_codes_follow_the_abi_and_messages_are_one_line() {
    assert_eq!(ErrorKind::Failed.exit_code(), 1);
    assert_eq!(ErrorKind::BadArgs.exit_code(), 2);
    assert_eq!(ToolError::failed("x").to_string(), "x");
    assert_eq!(
        one_line("regex parse error:\n    (a\n    ^\nerror: unclosed group\n"),
        "regex parse error: (a ^ error: unclosed group"
    );
    let (code, out, err) = finish(Err(ToolError::failed("first\n  second")));
    assert_eq!(
        (code, out.as_slice(), err.as_slice()),
        (1, &b""[..], &b"first second\n"[..])
    );
}

/// An input with a file argument, as a tool that reads a document takes it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WithFile {
    /// The document to read.
    source: crate::files::Blob,
}

#[test]
fn a_blob_field_is_a_file_argument_the_host_stages() {
    let schema = crate::schema_of::<WithFile>("t input".to_owned(), crate::Direction::Input);
    assert_eq!(
        schema["properties"]["source"],
        json!({
            "type": "object",
            "x-locara-blob": true,
            "description": "The document to read.",
            "properties": {
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": "A file in the workspace (relative path or /workspace/...)"
                },
                "base64": {"type": "string", "description": "The file's bytes, standard base64"}
            },
            "additionalProperties": false,
            "minProperties": 1,
            "maxProperties": 1
        })
    );
    let args: WithFile = parse_args(json!({"source": {"path": "/tmp/in/source"}})).unwrap();
    assert_eq!(args.source, crate::files::Blob::path("/tmp/in/source"));
}

#[test]
fn a_chat_request_sends_only_what_is_set() {
    use crate::host::{ChatRequest, Message};
    let request = ChatRequest::new(vec![Message::system("Be brief."), Message::user("Hi")]);
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        json!({"messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"}
        ]})
    );
    let request = ChatRequest {
        max_tokens: Some(10),
        seed: Some(7),
        ..request
    };
    let value = serde_json::to_value(&request).unwrap();
    assert_eq!(
        (value["max_tokens"].as_u64(), value["seed"].as_u64()),
        (Some(10), Some(7))
    );
}

#[test]
fn outside_the_sandbox_a_host_service_says_where_it_works() {
    let error = crate::host::fetch("http://example.test/", None).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Failed);
    assert!(
        error.message().contains("only inside the Locara sandbox"),
        "{error}"
    );
    let error = crate::host::chat(&crate::host::ChatRequest::default()).unwrap_err();
    assert!(error.message().contains("`llm.chat`"), "{error}");
}

/// A result with a nested type and a field left out when empty.
#[derive(Serialize, JsonSchema)]
struct Listing {
    /// The entries.
    entries: Vec<Entry>,
    /// Why the listing stopped early, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    cut: Option<String>,
}

/// One entry.
#[derive(Serialize, JsonSchema)]
struct Entry {
    /// Its name.
    name: String,
}

#[test]
fn a_result_schema_inlines_nested_types_and_requires_only_what_is_always_written() {
    let schema = crate::schema_of::<Listing>("t output".to_owned(), crate::Direction::Output);
    assert!(schema.get("$defs").is_none(), "{schema:#}");
    assert_eq!(
        schema["properties"]["entries"]["items"]["properties"]["name"]["type"],
        "string"
    );
    assert_eq!(schema["required"], json!(["entries"]));
}

/// What a tool's `main` writes for `stdin`, by the JSON-text path `main` takes
/// (`__locara_tool_run`): exit code, stdout, stderr.
fn run_json(
    f: impl FnOnce(&[u8]) -> Result<Vec<u8>, ToolError>,
    stdin: &str,
) -> (u8, String, String) {
    let (code, out, err) = finish(crate::read_stdin(stdin.as_bytes()).and_then(|json| f(&json)));
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn main_reads_and_writes_json_text_as_the_value_path_does() {
    let inputs = [
        r#"{"text": "hi", "bangs": 2}"#,
        r#"  {"text": "hi"}  "#,
        "\n\t{\"text\": \"h\\u00e9 \\\"q\\\"\"}\r\n",
        r#"{"text": "first", "text": "last"}"#,
        r#"{"bangs": 1, "text": "order"}"#,
        r#"{"text": ""}"#,
        r#"{"text": "a", "loud": true}"#,
        r#"{"text": "a", "bangs": 300}"#,
        r#"{"text": "a", "bangs": 1.0}"#,
        r#"{"text": 5}"#,
        r#"{"text": "a"} trailing"#,
        r#"["hi", 2]"#,
        "{not json",
        "",
        "null",
    ];
    for input in inputs {
        let by_value = run(__locara_tool_call, input);
        let by_text = run_json(__locara_tool_run, input);
        assert_eq!(by_text, by_value, "{input}");
    }
    // A positional array would fill the struct in serde's own reading: refused here too.
    assert_eq!(
        run_json(__locara_tool_run, r#"["hi", 2]"#).2,
        "the arguments must be a JSON object, got an array\n"
    );
    let plain = [r#"{"word": "a", "times": 3}"#, r#"{"times": 3}"#, "{}"];
    for input in plain {
        assert_eq!(
            run_json(plain::__locara_tool_run, input),
            run(plain::__locara_tool_call, input),
            "{input}"
        );
    }
}

#[test]
fn a_result_is_written_in_its_fields_order() {
    #[derive(Serialize, JsonSchema)]
    struct Out {
        zebra: u8,
        apple: Vec<u8>,
    }
    /// Writes two fields.
    #[tool(id = "test.order")]
    fn order() -> Result<Out, ToolError> {
        Ok(Out {
            zebra: 1,
            apple: vec![2],
        })
    }
    assert_eq!(
        run_json(__locara_tool_run, "{}").1,
        "{\"zebra\":1,\"apple\":[2]}\n"
    );
    assert_eq!(
        run(__locara_tool_call, "{}").1,
        "{\"apple\":[2],\"zebra\":1}\n"
    );
}
