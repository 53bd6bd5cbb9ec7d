//! Guest entry point of the `audio.transcribe` tool; the logic is
//! [`locara_tools_builtin::audio_transcribe`].

fn main() -> std::process::ExitCode {
    use locara_tools_builtin::{abi, audio_transcribe};
    abi::main_with(|input| {
        audio_transcribe::run(input, &abi::tool_root(), &audio_transcribe::models_dir())
    })
}
