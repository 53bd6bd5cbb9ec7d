//! The progress line: drawn on stderr when it is a terminal (a real pseudo-terminal, made by
//! util-linux's `script`), and nothing on stderr otherwise.

mod support;

use std::process::{Command, Stdio};

use support::Cli;

const MANUAL: &str = "/usr/share/doc/libtasn1-doc/libtasn1.pdf";

fn args() -> Vec<String> {
    [
        "run",
        "pdf.extract-text",
        "--arg",
        &format!("source=@{MANUAL}"),
        "--arg",
        "pages=1-36",
    ]
    .map(str::to_owned)
    .to_vec()
}

#[test]
fn a_terminal_sees_a_progress_line_and_a_pipe_sees_nothing() {
    assert!(
        std::path::Path::new(MANUAL).is_file(),
        "install Debian's libtasn1-doc (`bash .ci/test-deps`)"
    );
    let cli = Cli::new();

    // Not a terminal: stdout has the result, stderr stays empty.
    let piped = cli.run(&args().iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(piped.code, 0, "{piped:#?}");
    assert!(piped.stdout.contains("Abstract Syntax Notation One"));
    assert_eq!(piped.stderr, "");

    // A terminal: `script` runs the command on a pseudo-terminal and records what it drew.
    let log = cli.cwd.path().join("terminal.log");
    let mut line = vec![env!("CARGO_BIN_EXE_locara").to_owned()];
    line.extend(args().into_iter().map(|a| format!("'{a}'")));
    let status = Command::new("script")
        .args(["--quiet", "--return", "--command"])
        .arg(line.join(" "))
        .arg(&log)
        .env("LOCARA_HOME", cli.home.path())
        .current_dir(cli.cwd.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("util-linux's `script` runs");
    assert!(status.success());
    let drawn = String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned();
    // The line is drawn in place (carriage return, erase line), counts the pages, says when
    // it is done, and is erased before the result is printed.
    assert!(
        drawn.contains("\r\x1b[2Kpdf.extract-text: Reading pages 0/36"),
        "{drawn}"
    );
    assert!(
        drawn.contains(
            "pdf.extract-text: Reading pages: 28 pages read, cut at max_chars on page 28"
        ),
        "{drawn}"
    );
    let erased = drawn.rfind("\r\x1b[2K").unwrap();
    let result = drawn.find("Abstract Syntax Notation One").unwrap();
    assert!(erased < result, "{drawn}");
}
