//! Guest entry point of the `filesystem.list` tool; the logic is [`locara_tools_builtin::filesystem_list`](mod@locara_tools_builtin::filesystem_list).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::filesystem_list::main()
}
