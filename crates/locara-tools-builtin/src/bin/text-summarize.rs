//! Guest entry point of the `text.summarize` tool; the logic is [`locara_tools_builtin::text_summarize`].

fn main() -> std::process::ExitCode {
    locara_tools_builtin::abi::main_with(locara_tools_builtin::text_summarize)
}
