//! What the `locara` binary's test files share: a test home with a clean working directory,
//! and runs of the binary with their exit code and output.

#![allow(
    dead_code,
    reason = "each test file is its own crate and uses only part of this module"
)]

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use locara_test_artifacts::TestHome;
use serde_json::Value;

/// A test home (every built-in tool and `test.probe`, published and signed) plus a clean
/// working directory (no stray `locara.json` or `.locara`).
pub(crate) struct Cli {
    pub(crate) home: TestHome,
    pub(crate) cwd: tempfile::TempDir,
    /// When set, a run that has not exited by then is killed and fails the test.
    deadline: Option<Duration>,
}

/// What one run of the binary did.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
    }
}

impl Cli {
    pub(crate) fn new() -> Cli {
        Cli {
            home: TestHome::new(),
            cwd: tempfile::tempdir().unwrap(),
            deadline: None,
        }
    }

    /// [`Cli::new`], whose runs are killed (failing the test) when they have not exited within
    /// 60 s: for tests where a run that blocks (on a FIFO, say) is the bug.
    pub(crate) fn watched() -> Cli {
        Cli {
            deadline: Some(Duration::from_secs(60)),
            ..Cli::new()
        }
    }

    /// `locara ARGS…` with this home and working directory, and no language model from the
    /// environment.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_locara"));
        command
            .args(args)
            .env("LOCARA_HOME", self.home.path())
            .env_remove("LOCARA_LLM_URL")
            .current_dir(self.cwd.path());
        command
    }

    pub(crate) fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Run {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn locara");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        if let Some(deadline) = self.deadline {
            let started = Instant::now();
            while child.try_wait().unwrap().is_none() {
                if started.elapsed() > deadline {
                    child.kill().unwrap();
                    let output = child.wait_with_output().unwrap();
                    panic!(
                        "locara {args:?} did not exit within {} s (it blocked); stderr: {}",
                        deadline.as_secs(),
                        String::from_utf8_lossy(&output.stderr)
                    );
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let output = child.wait_with_output().unwrap();
        Run {
            code: output.status.code().expect("exit code"),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    pub(crate) fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, "")
    }

    /// `locara ARGS…` with the variables of `env` set, those named in `unset` removed, and no
    /// stdin.
    pub(crate) fn run_with_env(&self, args: &[&str], env: &[(&str, &str)], unset: &[&str]) -> Run {
        let mut command = self.command(args);
        for name in unset {
            command.env_remove(name);
        }
        let output = command
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        Run {
            code: output.status.code().expect("exit code"),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    /// Runs and asserts exit code `code`.
    pub(crate) fn expect(&self, code: i32, args: &[&str]) -> Run {
        let run = self.run(args);
        assert_eq!(run.code, code, "locara {args:?}: {run:#?}");
        run
    }

    /// Runs, asserts a usage error (exit code 2, nothing on stdout) and returns stderr.
    pub(crate) fn refused(&self, args: &[&str], stdin: &str) -> String {
        let run = self.run_with_stdin(args, stdin);
        assert_eq!(run.code, 2, "locara {args:?}: {run:#?}");
        assert_eq!(run.stdout, "", "locara {args:?}: {run:#?}");
        run.stderr
    }

    /// `relative` in the working directory.
    pub(crate) fn path(&self, relative: &str) -> PathBuf {
        self.cwd.path().join(relative)
    }

    /// `relative` in the home.
    pub(crate) fn in_home(&self, relative: &str) -> PathBuf {
        self.home.path().join(relative)
    }

    /// Writes `text` to `name` in the working directory.
    pub(crate) fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path(name), text).unwrap();
    }
}

pub(crate) fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}
