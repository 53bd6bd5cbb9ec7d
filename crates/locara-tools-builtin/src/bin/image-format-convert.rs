//! Guest entry point of the `image.format-convert` tool; the logic is
//! [`locara_tools_builtin::image_format_convert`](mod@locara_tools_builtin::image_format_convert).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::image_format_convert::main()
}
