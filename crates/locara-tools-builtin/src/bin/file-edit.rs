//! Guest entry point of the `file.edit` tool; the logic is [`locara_tools_builtin::file_edit`](mod@locara_tools_builtin::file_edit).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::file_edit::main()
}
