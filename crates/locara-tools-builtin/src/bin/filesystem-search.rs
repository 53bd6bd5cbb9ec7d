//! Guest entry point of the `filesystem.search` tool; the logic is [`locara_tools_builtin::filesystem_search`](mod@locara_tools_builtin::filesystem_search).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::filesystem_search::main()
}
