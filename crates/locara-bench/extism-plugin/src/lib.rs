//! `text.chunk` as an Extism plugin: the peer that `locara-bench`'s pipeline benchmark runs under
//! the `extism` host SDK next to Locara.
//!
//! The chunking is not re-written here: `text_chunk` is the very source file Locara's `text.chunk`
//! tool is built from, so both sides run the same code on the same input. Only the ABI differs:
//! Locara's tool reads its arguments from stdin and writes its output to stdout (a WASI command),
//! this plugin exports `chunk`, which takes the same arguments' JSON bytes as Extism input and
//! returns the same output's JSON bytes as Extism output.

use extism_pdk::{Error, FnResult, WithReturnCode, plugin_fn};
use serde_json::Value;

#[path = "../../../locara-tools-builtin/src/text_chunk.rs"]
mod text_chunk;

/// The three items of the tools' ABI (`locara_tools_builtin::abi`) that `text_chunk` uses, with
/// the same behaviour.
mod abi {
    use serde::{Serialize, de::DeserializeOwned};
    use serde_json::Value;

    /// Why a tool did not produce a result; its code is the command's exit code.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum ErrorKind {
        Failed,
        BadArgs,
    }

    impl ErrorKind {
        pub(crate) fn code(self) -> i32 {
            match self {
                ErrorKind::Failed => 1,
                ErrorKind::BadArgs => 2,
            }
        }
    }

    /// A tool error: a kind and a one-line message.
    #[derive(Debug)]
    pub(crate) struct ToolError {
        pub(crate) kind: ErrorKind,
        pub(crate) message: String,
    }

    impl ToolError {
        pub(crate) fn bad_args(message: impl Into<String>) -> ToolError {
            ToolError {
                kind: ErrorKind::BadArgs,
                message: message.into(),
            }
        }

        pub(crate) fn failed(message: impl Into<String>) -> ToolError {
            ToolError {
                kind: ErrorKind::Failed,
                message: message.into(),
            }
        }
    }

    pub(crate) fn parse_args<T: DeserializeOwned>(input: Value) -> Result<T, ToolError> {
        if !input.is_object() {
            return Err(ToolError::bad_args(
                "the arguments must be a JSON object".to_owned(),
            ));
        }
        serde_json::from_value(input)
            .map_err(|e| ToolError::bad_args(format!("invalid arguments: {e}")))
    }

    pub(crate) fn to_output<T: Serialize>(output: &T) -> Result<Value, ToolError> {
        serde_json::to_value(output)
            .map_err(|e| ToolError::failed(format!("cannot encode the result as JSON: {e}")))
    }
}

/// Chunks the text of the arguments (`{"text": …, "max_chars": …, "overlap": …}`, JSON bytes),
/// returning `{"chunks": [{index, text, start, end}…], "count": n}` as JSON bytes. A bad argument
/// fails the call with code 2, as the tool exits with 2.
#[plugin_fn]
pub fn chunk(input: Vec<u8>) -> FnResult<Vec<u8>> {
    let arguments: Value = serde_json::from_slice(&input).map_err(|e| {
        WithReturnCode::new(
            Error::msg(format!("the arguments are not valid JSON: {e}")),
            abi::ErrorKind::BadArgs.code(),
        )
    })?;
    let output = text_chunk::run(arguments)
        .map_err(|e| WithReturnCode::new(Error::msg(e.message), e.kind.code()))?;
    Ok(serde_json::to_vec(&output)?)
}
