//! `test.shout`: a tool written with `locara-pdk`, so the tests can run one through the whole
//! pipeline (publish, schema checks, sandbox, error codes) and check that its committed
//! manifest template carries the schemas its code derives.

use locara_pdk::{JsonSchema, ToolError, tool};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The text to shout.
    text: String,
    /// How many exclamation marks to add.
    #[serde(default)]
    bangs: u8,
}

#[derive(Serialize, JsonSchema)]
struct Shouted {
    /// The text in capitals.
    text: String,
}

/// Shouts the text: returns it in capitals, with `bangs` exclamation marks.
///
/// Empty text is refused.
#[tool(id = "test.shout")]
fn shout(args: Args) -> Result<Shouted, ToolError> {
    if args.text.trim().is_empty() {
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
