//! Guest entry point of the `code-exec.lua` tool; the logic is
//! [`locara_tools_builtin::code_exec_lua`].

fn main() -> std::process::ExitCode {
    locara_tools_builtin::code_exec_lua::main()
}

// Pre-initialization (docs/tool-abi.md): makes the Lua interpreter before any call, for the
// publisher to snapshot.
locara_pdk::preinit!(locara_tools_builtin::code_exec_lua::preinit);
