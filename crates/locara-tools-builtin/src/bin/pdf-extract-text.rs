//! Guest entry point of the `pdf.extract-text` tool; the logic is [`locara_tools_builtin::pdf_extract_text`](mod@locara_tools_builtin::pdf_extract_text).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::pdf_extract_text::main()
}
