//! Guest entry point of the `ocr` tool; the logic is [`locara_tools_builtin::ocr`].
//!
//! The host maps the model files into the guest, read-only, under `/models`.

fn main() -> std::process::ExitCode {
    locara_tools_builtin::abi::main_with_root(|root, input| {
        locara_tools_builtin::ocr(input, root, std::path::Path::new("/models"))
    })
}
