//! Guest entry point of the `audio.transcribe` tool; the logic is
//! [`locara_tools_builtin::audio_transcribe`].

fn main() -> std::process::ExitCode {
    locara_tools_builtin::audio_transcribe::main()
}
