//! Guest entry point of the `ocr` tool; the logic is [`locara_tools_builtin::ocr`](mod@locara_tools_builtin::ocr).
//!
//! The host maps the model files into the guest, read-only, under `/models`. The workspace is
//! optional: an image passed by value is staged under `/tmp`.

fn main() -> std::process::ExitCode {
    locara_tools_builtin::ocr::main()
}
