//! `text.summarize`, `text.translate` and `text.classify`: text tools answered by the app's
//! language model, which the host reaches for them (`llm.chat`, see [`crate::host`]).
//!
//! Each builds one chat request at temperature 0. `text.classify` asks for JSON constrained
//! to the given labels (an OpenAI `json_schema` response format) and checks that the answer is
//! one of them, so a small model cannot return a label that was not offered.

use serde_json::Value;

use crate::abi::ToolError;
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

/// `text.summarize`.
pub mod summarize {
    use locara_pdk::{JsonSchema, tool};
    use serde::{Deserialize, Serialize};
    use serde_json::Value;

    use crate::abi::ToolError;

    /// `text.summarize`'s arguments.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Args {
        /// The text to summarize.
        #[schemars(length(min = 1, max = 100_000))]
        text: String,
        /// The most words in the summary. Default 60.
        #[serde(default = "default_max_words")]
        #[schemars(range(min = 5, max = 1000))]
        max_words: u64,
    }

    fn default_max_words() -> u64 {
        60
    }

    /// `text.summarize`'s result.
    #[derive(Debug, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Output {
        /// The summary.
        #[schemars(length(min = 1))]
        summary: String,
        /// The model that answered, as the endpoint names it (null if it does not say).
        model: Option<String>,
    }

    /// Summarizes a text in at most max_words words (default 60), in the text's language, using
    /// the app's language model (an OpenAI-compatible endpoint the app configures; the tool
    /// needs the llm.chat host service). The summary is the model's: check facts that matter
    /// against the text. No file or network access of its own.
    #[tool(id = "text.summarize")]
    pub fn text_summarize(args: Args) -> Result<Output, ToolError> {
        let answer = super::chat(
            "You summarize texts. Reply with the summary only, in the language of the text.",
            format!(
                "Summarize this text in at most {} words:\n\n{}",
                args.max_words, args.text
            ),
            args.max_words * 2 + 16,
            None,
        )?;
        Ok(Output {
            summary: answer.content,
            model: answer.model,
        })
    }

    /// Runs `text.summarize` on a JSON input.
    ///
    /// # Errors
    /// The language model was refused or failed.
    pub fn run(input: Value) -> Result<Value, ToolError> {
        __locara_tool_call(input)
    }
}

/// `text.translate`.
pub mod translate {
    use locara_pdk::{JsonSchema, tool};
    use serde::{Deserialize, Serialize};
    use serde_json::Value;

    use crate::abi::ToolError;

    /// `text.translate`'s arguments.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Args {
        /// The text to translate.
        #[schemars(length(min = 1, max = 100_000))]
        text: String,
        /// The language to translate into, e.g. French or fr.
        #[schemars(length(min = 2, max = 64))]
        target_language: String,
        /// The text's language, if known; otherwise the model detects it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "String", length(min = 2, max = 64))]
        source_language: Option<String>,
    }

    /// `text.translate`'s result.
    #[derive(Debug, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Output {
        /// The translation.
        #[schemars(length(min = 1))]
        translation: String,
        /// The model that answered, as the endpoint names it (null if it does not say).
        model: Option<String>,
    }

    /// Translates a text into target_language (a language name such as French, or a code such
    /// as fr), using the app's language model (an OpenAI-compatible endpoint the app
    /// configures; the tool needs the llm.chat host service). No file or network access of its
    /// own.
    #[tool(id = "text.translate")]
    pub fn text_translate(args: Args) -> Result<Output, ToolError> {
        let from = args
            .source_language
            .as_deref()
            .map(|l| format!(" from {l}"))
            .unwrap_or_default();
        // Room for a translation somewhat longer than the original, in tokens of a few chars.
        let max_tokens = (args.text.chars().count() as u64 / 2).clamp(32, 4096);
        let answer = super::chat(
            "You translate texts. Reply with the translation only.",
            format!(
                "Translate this text{from} into {}:\n\n{}",
                args.target_language, args.text
            ),
            max_tokens,
            None,
        )?;
        Ok(Output {
            translation: answer.content,
            model: answer.model,
        })
    }

    /// Runs `text.translate` on a JSON input.
    ///
    /// # Errors
    /// The language model was refused or failed.
    pub fn run(input: Value) -> Result<Value, ToolError> {
        __locara_tool_call(input)
    }
}

/// `text.classify`.
pub mod classify {
    use locara_pdk::{JsonSchema, tool};
    use serde::{Deserialize, Serialize};
    use serde_json::{Value, json};

    use crate::abi::ToolError;

    /// `text.classify`'s arguments.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Args {
        /// The text to classify.
        #[schemars(length(min = 1, max = 100_000))]
        text: String,
        /// The labels to choose from.
        #[schemars(length(min = 2, max = 50), extend("uniqueItems" = true), inner(length(min = 1, max = 100)))]
        labels: Vec<String>,
        /// What the labels mean or how to choose, if it is not obvious.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "String", length(max = 2000))]
        instructions: Option<String>,
    }

    /// `text.classify`'s result.
    #[derive(Debug, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Output {
        /// The chosen label, one of labels.
        #[schemars(length(min = 1))]
        label: String,
        /// The model that answered, as the endpoint names it (null if it does not say).
        model: Option<String>,
    }

    /// Puts a text into exactly one of the given labels (e.g. positive, negative; or spam, not
    /// spam), using the app's language model (an OpenAI-compatible endpoint the app configures;
    /// the tool needs the llm.chat host service). The model's answer is constrained to the
    /// labels with a JSON-schema response format and checked, so the label returned is always
    /// one of those given. No file or network access of its own.
    #[tool(id = "text.classify")]
    pub fn text_classify(args: Args) -> Result<Output, ToolError> {
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
        let answer = super::chat(
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
            Some(label) => Ok(Output {
                label,
                model: answer.model,
            }),
            None => Err(ToolError::failed(format!(
                "the language model answered {:?}, which is not one of the labels ({}); its endpoint may not support JSON-schema output",
                answer.content,
                args.labels.join(", ")
            ))),
        }
    }

    /// Runs `text.classify` on a JSON input.
    ///
    /// # Errors
    /// Fewer than two distinct labels, or the language model was refused, failed, or answered
    /// outside the labels.
    pub fn run(input: Value) -> Result<Value, ToolError> {
        __locara_tool_call(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi;
    use serde_json::json;

    #[test]
    fn classify_needs_two_different_labels() {
        let error = classify::run(json!({"text": "x", "labels": ["a", "a"]})).unwrap_err();
        assert_eq!(error.kind(), abi::ErrorKind::BadArgs);
        assert!(error.message().contains("at least two"), "{error}");
    }

    #[test]
    fn outside_the_sandbox_there_is_no_model() {
        let error = summarize::run(json!({"text": "x"})).unwrap_err();
        assert!(
            error.message().contains("only inside the Locara sandbox"),
            "{error}"
        );
    }
}
