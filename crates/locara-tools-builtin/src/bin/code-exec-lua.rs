//! Guest entry point of the `code-exec.lua` tool; the logic is
//! [`locara_tools_builtin::code_exec_lua`].

fn main() -> std::process::ExitCode {
    locara_tools_builtin::code_exec_lua::main()
}

/// Pre-initialization (docs/tool-abi.md): makes the Lua interpreter before any call, for the
/// publisher to snapshot.
#[allow(
    unsafe_code,
    reason = "an export is how the publisher finds it; the name is unique to this module"
)]
#[unsafe(export_name = "locara_preinit")]
pub extern "C" fn locara_preinit() {
    locara_tools_builtin::code_exec_lua::preinit();
}
