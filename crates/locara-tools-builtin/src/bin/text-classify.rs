//! Guest entry point of the `text.classify` tool; the logic is [`locara_tools_builtin::text_llm::classify`].

fn main() -> std::process::ExitCode {
    locara_tools_builtin::text_llm::classify::main()
}
