//! Guest entry point of the `bash.read-only` tool; the logic is [`locara_tools_builtin::bash_read_only`](mod@locara_tools_builtin::bash_read_only).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::bash_read_only::main()
}
