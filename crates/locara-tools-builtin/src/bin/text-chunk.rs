//! Guest entry point of the `text.chunk` tool; the logic is [`locara_tools_builtin::text_chunk`](mod@locara_tools_builtin::text_chunk).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::text_chunk::main()
}
