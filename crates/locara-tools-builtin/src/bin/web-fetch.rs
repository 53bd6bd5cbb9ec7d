//! Guest entry point of the `web.fetch` tool; the logic is [`locara_tools_builtin::web_fetch`](mod@locara_tools_builtin::web_fetch).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::web_fetch::main()
}
