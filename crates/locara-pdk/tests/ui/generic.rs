//! A generic tool function: refused, its schemas must be known at compile time.

use locara_pdk::tool;

/// Echoes its input.
#[tool]
fn echo<T>(value: T) -> Result<T, locara_pdk::ToolError> {
    Ok(value)
}

fn main() {}
