//! `#[tool(id = ...)]` with an id that is not lowercase dotted parts: refused.

use locara_pdk::tool;

/// Counts the characters.
#[tool(id = "Text Count")]
fn count(text: String) -> Result<usize, locara_pdk::ToolError> {
    Ok(text.len())
}

fn main() {}
