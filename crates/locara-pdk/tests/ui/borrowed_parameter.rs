//! A borrowed parameter (`&str`): refused, the arguments are deserialized into owned values.

use locara_pdk::tool;

/// Counts the characters.
#[tool]
fn count(text: &str) -> Result<usize, locara_pdk::ToolError> {
    Ok(text.len())
}

fn main() {}
