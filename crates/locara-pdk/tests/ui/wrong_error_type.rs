//! A `Result` whose error is not `ToolError`: refused, its kind decides the exit code.

use locara_pdk::tool;

/// Counts the characters.
#[tool]
fn count(text: String) -> Result<usize, String> {
    Ok(text.len())
}

fn main() {}
