//! An input struct without `JsonSchema`: the diagnostic names the derives to add.

use locara_pdk::{ToolError, tool};

#[derive(serde::Deserialize)]
struct Args {
    text: String,
}

/// Counts the characters.
#[tool]
fn count(args: Args) -> Result<usize, ToolError> {
    Ok(args.text.len())
}
