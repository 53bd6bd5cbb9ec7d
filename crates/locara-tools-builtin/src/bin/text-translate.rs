//! Guest entry point of the `text.translate` tool; the logic is [`locara_tools_builtin::text_llm::translate`].

fn main() -> std::process::ExitCode {
    locara_tools_builtin::text_llm::translate::main()
}
