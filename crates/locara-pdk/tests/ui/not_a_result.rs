//! A tool function that does not return `Result<T, ToolError>`: refused.

use locara_pdk::tool;

/// Counts the characters.
#[tool]
fn count(text: String) -> usize {
    text.len()
}

fn main() {}
