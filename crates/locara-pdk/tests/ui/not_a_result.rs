use locara_pdk::tool;

/// Counts the characters.
#[tool]
fn count(text: String) -> usize {
    text.len()
}

fn main() {}
