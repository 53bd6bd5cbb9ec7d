//! Guest entry point of the `text.summarize` tool; the logic is [`locara_tools_builtin::text_llm::summarize`].

fn main() -> std::process::ExitCode {
    locara_tools_builtin::text_llm::summarize::main()
}
