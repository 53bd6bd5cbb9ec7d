//! A tool function without a doc comment: refused, it is the description a model reads.

use locara_pdk::tool;

#[tool]
fn count(text: String) -> Result<usize, locara_pdk::ToolError> {
    Ok(text.len())
}

fn main() {}
