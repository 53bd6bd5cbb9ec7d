//! Guest entry point of the `pdf.split` tool; the logic is [`locara_tools_builtin::pdf_split`](mod@locara_tools_builtin::pdf_split).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::pdf_split::main()
}
