//! Guest entry point of the `pdf.split` tool; the logic is [`locara_tools_builtin::pdf_split`].

fn main() -> std::process::ExitCode {
    use locara_tools_builtin::{abi, blob::OutDir};
    abi::main_with(|input| {
        locara_tools_builtin::pdf_split(input, &abi::tool_root(), &OutDir::guest())
    })
}
