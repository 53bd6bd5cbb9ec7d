//! Guest entry point of the `filesystem.read` tool; the logic is [`locara_tools_builtin::filesystem_read`].

fn main() -> std::process::ExitCode {
    locara_tools_builtin::abi::main_with_root(locara_tools_builtin::filesystem_read)
}
