//! Guest entry point of the `pdf.extract-text` tool; the logic is [`locara_tools_builtin::pdf_extract_text`].

fn main() -> std::process::ExitCode {
    use locara_tools_builtin::{abi, blob::OutDir};
    abi::main_with(|input| {
        locara_tools_builtin::pdf_extract_text(input, &abi::tool_root(), &OutDir::guest())
    })
}
