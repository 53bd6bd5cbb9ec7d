//! Guest entry point of the `image.resize` tool; the logic is [`locara_tools_builtin::image_resize`].

fn main() -> std::process::ExitCode {
    locara_tools_builtin::abi::main_with(|input| {
        locara_tools_builtin::image_resize(
            input,
            &locara_tools_builtin::abi::tool_root(),
            &locara_tools_builtin::blob::OutDir::guest(),
        )
    })
}
