//! Guest entry point of the `image.format-convert` tool; the logic is [`locara_tools_builtin::image_format_convert`].

fn main() -> std::process::ExitCode {
    locara_tools_builtin::abi::main_with(|input| {
        locara_tools_builtin::image_format_convert(
            input,
            &locara_tools_builtin::abi::tool_root(),
            &locara_tools_builtin::blob::OutDir::guest(),
        )
    })
}
