//! A result type without `Serialize` and `JsonSchema`: the diagnostic names the derives to add.

use locara_pdk::{ToolError, tool};

struct Count(usize);

/// Counts the characters.
#[tool]
fn count(text: String) -> Result<Count, ToolError> {
    Ok(Count(text.len()))
}
