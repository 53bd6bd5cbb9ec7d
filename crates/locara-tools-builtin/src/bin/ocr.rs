//! Guest entry point of the `ocr` tool; the logic is [`locara_tools_builtin::ocr`].
//!
//! The host maps the model files into the guest, read-only, under `/models`. The workspace is
//! optional: an image passed by value is staged under `/tmp`.

fn main() -> std::process::ExitCode {
    locara_tools_builtin::abi::main_with(|input| {
        locara_tools_builtin::ocr(
            input,
            &locara_tools_builtin::abi::tool_root(),
            std::path::Path::new("/models"),
        )
    })
}
