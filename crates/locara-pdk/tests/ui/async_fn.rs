//! `#[tool]` on an `async fn`: refused, a tool is one synchronous call.

use locara_pdk::tool;

/// Counts the characters.
#[tool]
async fn count(text: String) -> Result<usize, locara_pdk::ToolError> {
    Ok(text.len())
}

fn main() {}
