use locara_pdk::tool;

/// Counts the characters.
#[tool]
fn count(text: String) -> Result<usize, String> {
    Ok(text.len())
}

fn main() {}
