//! `text.summarize`, `text.translate` and `text.classify`: text tools answered by the app's
//! language model, which the host reaches for them (`llm.chat`, see [`crate::host`]).
//!
//! Each builds one chat request at temperature 0. `text.classify` asks for JSON constrained
//! to the given labels (an OpenAI `json_schema` response format) and checks that the answer is
//! one of them, so a small model cannot return a label that was not offered.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::abi::{self, ToolError};
use crate::host;

/// What the model answered.
struct Answer {
    content: String,
    model: Option<String>,
}

fn chat(
    system: &str,
    user: String,
    max_tokens: u64,
    response_format: Option<Value>,
) -> Result<Answer, ToolError> {
    let request = host::ChatRequest {
        max_tokens: Some(max_tokens),
        temperature: Some(0.0),
        response_format,
        ..host::ChatRequest::new(vec![
            host::Message::system(system),
            host::Message::user(user),
        ])
    };
    let answer = host::chat(&request)?;
    let content = answer.content.trim().to_owned();
    if content.is_empty() {
        return Err(ToolError::failed(
            "the language model answered with nothing; try again, or rephrase the text",
        ));
    }
    Ok(Answer {
        content,
        model: answer.model,
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SummarizeArgs {
    text: String,
    #[serde(default = "default_max_words")]
    max_words: u64,
}

fn default_max_words() -> u64 {
    60
}

/// Runs `text.summarize`.
///
/// # Errors
/// The language model was refused or failed.
pub fn summarize(input: Value) -> Result<Value, ToolError> {
    let args: SummarizeArgs = abi::parse_args(input)?;
    let answer = chat(
        "You summarize texts. Reply with the summary only, in the language of the text.",
        format!(
            "Summarize this text in at most {} words:\n\n{}",
            args.max_words, args.text
        ),
        args.max_words * 2 + 16,
        None,
    )?;
    Ok(json!({"summary": answer.content, "model": answer.model}))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TranslateArgs {
    text: String,
    target_language: String,
    #[serde(default)]
    source_language: Option<String>,
}

/// Runs `text.translate`.
///
/// # Errors
/// The language model was refused or failed.
pub fn translate(input: Value) -> Result<Value, ToolError> {
    let args: TranslateArgs = abi::parse_args(input)?;
    let from = args
        .source_language
        .as_deref()
        .map(|l| format!(" from {l}"))
        .unwrap_or_default();
    // Room for a translation somewhat longer than the original, in tokens of a few chars.
    let max_tokens = (args.text.chars().count() as u64 / 2).clamp(32, 4096);
    let answer = chat(
        "You translate texts. Reply with the translation only.",
        format!(
            "Translate this text{from} into {}:\n\n{}",
            args.target_language, args.text
        ),
        max_tokens,
        None,
    )?;
    Ok(json!({"translation": answer.content, "model": answer.model}))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassifyArgs {
    text: String,
    labels: Vec<String>,
    #[serde(default)]
    instructions: Option<String>,
}

/// Runs `text.classify`.
///
/// # Errors
/// Fewer than two distinct labels, or the language model was refused, failed, or answered
/// outside the labels.
pub fn classify(input: Value) -> Result<Value, ToolError> {
    let args: ClassifyArgs = abi::parse_args(input)?;
    let mut labels = args.labels.clone();
    labels.sort();
    labels.dedup();
    if labels.len() < 2 {
        return Err(ToolError::bad_args(
            "`labels` needs at least two different labels to choose from",
        ));
    }
    let instructions = args
        .instructions
        .map(|i| format!("{i}\n\n"))
        .unwrap_or_default();
    let format = json!({
        "type": "json_schema",
        "json_schema": {
            "name": "classification",
            "strict": true,
            "schema": {
                "type": "object",
                "properties": {"label": {"type": "string", "enum": args.labels}},
                "required": ["label"],
                "additionalProperties": false,
            },
        },
    });
    let answer = chat(
        "You classify texts. Reply with JSON: {\"label\": <one of the labels>}.",
        format!(
            "{instructions}Labels: {}\n\nText: {}",
            args.labels.join(", "),
            args.text
        ),
        32,
        Some(format),
    )?;
    let label = serde_json::from_str::<Value>(&answer.content)
        .ok()
        .and_then(|v| v["label"].as_str().map(str::to_owned))
        .or_else(|| Some(answer.content.trim().trim_matches('"').to_owned()))
        .filter(|l| args.labels.contains(l));
    match label {
        Some(label) => Ok(json!({"label": label, "model": answer.model})),
        None => Err(ToolError::failed(format!(
            "the language model answered {:?}, which is not one of the labels ({}); its endpoint may not support JSON-schema output",
            answer.content,
            args.labels.join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_needs_two_different_labels() {
        let error = classify(json!({"text": "x", "labels": ["a", "a"]})).unwrap_err();
        assert_eq!(error.kind(), abi::ErrorKind::BadArgs);
        assert!(error.message().contains("at least two"), "{error}");
    }

    #[test]
    fn outside_the_sandbox_there_is_no_model() {
        let error = summarize(json!({"text": "x"})).unwrap_err();
        assert!(
            error.message().contains("only inside the Locara sandbox"),
            "{error}"
        );
    }
}
