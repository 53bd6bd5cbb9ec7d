use locara_pdk::tool;

#[tool]
fn count(text: String) -> Result<usize, locara_pdk::ToolError> {
    Ok(text.len())
}

fn main() {}
