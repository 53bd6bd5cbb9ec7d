//! Guest entry point of the `code-exec.lua` tool; the logic is
//! [`locara_tools_builtin::code_exec_lua`].

fn main() -> std::process::ExitCode {
    locara_tools_builtin::code_exec_lua::main()
}
