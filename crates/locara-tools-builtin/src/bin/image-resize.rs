//! Guest entry point of the `image.resize` tool; the logic is
//! [`locara_tools_builtin::image_resize`](mod@locara_tools_builtin::image_resize).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::image_resize::main()
}
