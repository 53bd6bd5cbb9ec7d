//! Guest entry point of the `audio.detect-silence` tool; the logic is
//! [`locara_tools_builtin::audio_detect_silence`](mod@locara_tools_builtin::audio_detect_silence).

fn main() -> std::process::ExitCode {
    locara_tools_builtin::audio_detect_silence::main()
}
