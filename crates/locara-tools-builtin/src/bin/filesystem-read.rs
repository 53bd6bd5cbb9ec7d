//! Guest entry point of the `filesystem.read` tool; the logic is [`locara_tools_builtin::filesystem_read`](mod@locara_tools_builtin::filesystem_read).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::filesystem_read::main()
}
