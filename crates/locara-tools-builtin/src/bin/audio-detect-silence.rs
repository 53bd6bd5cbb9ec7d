//! Guest entry point of the `audio.detect-silence` tool; the logic is
//! [`locara_tools_builtin::audio_detect_silence`].

use locara_tools_builtin::{abi, blob::OutDir};

fn main() -> std::process::ExitCode {
    abi::main_with(|input| {
        locara_tools_builtin::audio_detect_silence(input, &abi::tool_root(), &OutDir::guest())
    })
}
