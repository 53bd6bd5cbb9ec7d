//! Guest entry point of the `filesystem.write` tool; the logic is [`locara_tools_builtin::filesystem_write`](mod@locara_tools_builtin::filesystem_write).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::filesystem_write::main()
}
