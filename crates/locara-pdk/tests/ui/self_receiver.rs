//! A tool function taking `self`: refused, a tool is a free function.

use locara_pdk::tool;

/// Counts something.
#[tool]
fn count(&self, text: String) -> Result<usize, locara_pdk::ToolError> {
    Ok(text.len())
}

fn main() {}
