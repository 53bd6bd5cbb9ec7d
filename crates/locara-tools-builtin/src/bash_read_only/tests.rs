//! Tests for `bash.read-only`: parsing, every command, pipelines and refusals.

use std::fs;

use expect_test::{Expect, expect};
use serde_json::json;

use crate::abi::ErrorKind;

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("src/util")).unwrap();
    fs::create_dir_all(root.join(".git")).unwrap();
    fs::write(root.join(".hidden"), "secret\n").unwrap();
    fs::write(root.join(".git/HEAD"), "ref: main\n").unwrap();
    fs::write(
        root.join("README.md"),
        "# Title\nHello world\nhello again\n",
    )
    .unwrap();
    fs::write(root.join("notes.txt"), "b\na\nc\na\n10\n9\n").unwrap();
    fs::write(root.join("src/main.rs"), "fn main() {\n    helper(1);\n}\n").unwrap();
    fs::write(
        root.join("src/util/helper.rs"),
        "pub fn helper(x: u8) -> u8 {\n    x + 1 // TODO\n}\n",
    )
    .unwrap();
    fs::write(root.join("src/blob.bin"), b"main\0binary").unwrap();
    fs::write(
        root.join("lines.txt"),
        (1..=15).map(|i| format!("line {i}\n")).collect::<String>(),
    )
    .unwrap();
    fs::write(root.join("ünï.txt"), "ünïcödé\n").unwrap();
    dir
}

fn run(dir: &tempfile::TempDir, command: &str) -> String {
    match super::run(dir.path(), json!({ "command": command })) {
        Ok(out) => format!(
            "exit {}\n{}",
            out["exit_code"],
            out["stdout"].as_str().unwrap()
        ),
        Err(err) => format!(
            "error ({:?}): {}\n",
            err.kind(),
            err.message().replace(super::SUPPORTED, "<SUPPORTED>")
        ),
    }
}

fn check(command: &str, expect: Expect) {
    let dir = workspace();
    expect.assert_eq(&run(&dir, command));
}

#[test]
fn ls() {
    check(
        "ls",
        expect![[r#"
        exit 0
        README.md
        lines.txt
        notes.txt
        src
        ünï.txt
    "#]],
    );
    check(
        "ls -la src",
        expect![[r#"
        exit 0
        -         11 blob.bin
        -         29 main.rs
        d          - util
    "#]],
    );
    check(
        "ls -aF",
        expect![[r#"
        exit 0
        .git/
        .hidden
        README.md
        lines.txt
        notes.txt
        src/
        ünï.txt
    "#]],
    );
    check(
        "ls src/util /workspace/README.md src/main.rs",
        expect![[r#"
        exit 0
        /workspace/README.md
        src/main.rs

        src/util:
        helper.rs
    "#]],
    );
    check(
        "ls nope",
        expect![[r#"
        error (BadArgs): ls: cannot access 'nope': No such file or directory; check the path with ls or find
    "#]],
    );
    check(
        "ls -R",
        expect![[r#"
        error (BadArgs): ls: unsupported option '-R'; usage: ls [-l] [-a] [-F] [path...]
    "#]],
    );
}

#[test]
fn cat_head_tail() {
    check(
        "cat README.md src/main.rs",
        expect![[r#"
        exit 0
        # Title
        Hello world
        hello again
        fn main() {
            helper(1);
        }
    "#]],
    );
    check(
        "cat -n src/main.rs",
        expect![[r#"
        exit 0
             1	fn main() {
             2	    helper(1);
             3	}
    "#]],
    );
    check(
        "head -n 2 lines.txt",
        expect![[r#"
        exit 0
        line 1
        line 2
    "#]],
    );
    check(
        "head -3 lines.txt",
        expect![[r#"
        exit 0
        line 1
        line 2
        line 3
    "#]],
    );
    check(
        "head lines.txt | wc -l",
        expect![[r#"
        exit 0
        10
    "#]],
    );
    check(
        "tail -n2 lines.txt",
        expect![[r#"
        exit 0
        line 14
        line 15
    "#]],
    );
    check(
        "tail -n +14 lines.txt",
        expect![[r#"
        exit 0
        line 14
        line 15
    "#]],
    );
    check(
        "head -c 5 README.md",
        expect![[r#"
        exit 0
        # Tit"#]],
    );
    check(
        "head -n 1 README.md src/main.rs",
        expect![[r#"
        exit 0
        ==> README.md <==
        # Title

        ==> src/main.rs <==
        fn main() {
    "#]],
    );
    check(
        "cat src",
        expect![[r#"
        error (BadArgs): cat: src: Is a directory; use ls or find to see what it contains
    "#]],
    );
    check(
        "cat missing.txt",
        expect![[r#"
        error (BadArgs): cat: missing.txt: No such file or directory; check the path with ls or find
    "#]],
    );
    check(
        "head -n x lines.txt",
        expect![[r#"
        error (BadArgs): head: invalid number 'x' for -n; pass a non-negative integer
    "#]],
    );
}

#[test]
fn wc() {
    check(
        "wc README.md",
        expect![[r#"
        exit 0
         3  6 32 README.md
    "#]],
    );
    check(
        "wc -l README.md lines.txt",
        expect![[r#"
        exit 0
         3 README.md
        15 lines.txt
        18 total
    "#]],
    );
    check(
        "wc -m ünï.txt",
        expect![[r#"
        exit 0
        8 ünï.txt
    "#]],
    );
    check(
        "wc -c ünï.txt",
        expect![[r#"
        exit 0
        12 ünï.txt
    "#]],
    );
    check(
        "cat README.md | wc -w",
        expect![[r#"
        exit 0
        6
    "#]],
    );
}

#[test]
fn grep() {
    check(
        "grep hello README.md",
        expect![[r#"
        exit 0
        hello again
    "#]],
    );
    check(
        "grep -in hello README.md",
        expect![[r#"
        exit 0
        2:Hello world
        3:hello again
    "#]],
    );
    check(
        "grep -rn helper src",
        expect![[r#"
        exit 0
        src/main.rs:2:    helper(1);
        src/util/helper.rs:1:pub fn helper(x: u8) -> u8 {
    "#]],
    );
    check(
        "grep -r main",
        expect![[r#"
        exit 0
        Binary file ./src/blob.bin matches
        ./src/main.rs:fn main() {
    "#]],
    );
    check(
        "grep -rl helper .",
        expect![[r#"
        exit 0
        ./src/main.rs
        ./src/util/helper.rs
    "#]],
    );
    check(
        "grep -c -i hello README.md notes.txt",
        expect![[r#"
        exit 0
        README.md:2
        notes.txt:0
    "#]],
    );
    check(
        "grep -v a notes.txt",
        expect![[r#"
        exit 0
        b
        c
        10
        9
    "#]],
    );
    check(
        "grep -w a notes.txt",
        expect![[r#"
        exit 0
        a
        a
    "#]],
    );
    check(
        r"grep -o 'h[a-z]*' README.md",
        expect![[r#"
        exit 0
        hello
    "#]],
    );
    check(
        r"grep 'world\|again' README.md",
        expect![[r#"
        exit 0
        Hello world
        hello again
    "#]],
    );
    check(
        "grep -E 'fn (main|helper)' -r src",
        expect![[r#"
        exit 0
        src/main.rs:fn main() {
        src/util/helper.rs:pub fn helper(x: u8) -> u8 {
    "#]],
    );
    check(
        "grep -F 'x + 1' -r src --include=*.rs",
        expect![[r#"
        exit 0
        src/util/helper.rs:    x + 1 // TODO
    "#]],
    );
    check(
        "grep -r TODO . --exclude-dir=util",
        expect![[r#"
        exit 1
    "#]],
    );
    check(
        "grep -e a -e b notes.txt",
        expect![[r#"
        exit 0
        b
        a
        a
    "#]],
    );
    check(
        "grep nomatch README.md",
        expect![[r#"
        exit 1
    "#]],
    );
    check(
        "grep -q Hello README.md",
        expect![[r#"
        exit 0
    "#]],
    );
    check(
        "grep -h -m 1 l README.md lines.txt",
        expect![[r#"
        exit 0
        # Title
        line 1
    "#]],
    );
    check(
        "grep main src",
        expect![[r#"
        error (BadArgs): grep: src: Is a directory; add -r to search the files under it
    "#]],
    );
    check(
        "grep '(' README.md",
        expect![[r#"
        exit 1
    "#]],
    );
    check(
        "grep -E '(' README.md",
        expect![[r#"
        error (BadArgs): grep: invalid pattern '(': unclosed group; use -F to search for the text literally
    "#]],
    );
    check(
        r"grep '\(a\)\1' README.md",
        expect![[r#"
        error (BadArgs): grep: backreferences (\1 ... \9) are not supported
    "#]],
    );
    check(
        "grep -A 2 x README.md",
        expect![[r#"
        error (BadArgs): grep: unsupported option '-A'; usage: grep [-i] [-n] [-r] [-l] [-c] [-v] [-w] [-o] [-q] [-h] [-H] [-E] [-F] [-m N] [-e PATTERN] [--include=GLOB] [--exclude=GLOB] [--exclude-dir=GLOB] PATTERN [path...]
    "#]],
    );
    check(
        "grep",
        expect![[r#"
        error (BadArgs): grep: no pattern given; usage: grep [-i] [-n] [-r] [-l] [-c] [-v] [-w] [-o] [-q] [-h] [-H] [-E] [-F] [-m N] [-e PATTERN] [--include=GLOB] [--exclude=GLOB] [--exclude-dir=GLOB] PATTERN [path...]
    "#]],
    );
}

#[test]
fn find() {
    check(
        "find",
        expect![[r#"
        exit 0
        .
        ./.git
        ./.git/HEAD
        ./.hidden
        ./README.md
        ./lines.txt
        ./notes.txt
        ./src
        ./src/blob.bin
        ./src/main.rs
        ./src/util
        ./src/util/helper.rs
        ./ünï.txt
    "#]],
    );
    check(
        "find src -name '*.rs'",
        expect![[r#"
        exit 0
        src/main.rs
        src/util/helper.rs
    "#]],
    );
    check(
        "find . -maxdepth 1 -type d",
        expect![[r#"
        exit 0
        .
        ./.git
        ./src
    "#]],
    );
    check(
        "find src/ -type f -mindepth 2",
        expect![[r#"
        exit 0
        src/util/helper.rs
    "#]],
    );
    check(
        "find . -iname 'README*' -o -name x",
        expect![[r#"
        error (BadArgs): find: unsupported expression '-o'; only tests joined by an implicit AND are supported; usage: find [path...] [-name GLOB] [-iname GLOB] [-path GLOB] [-type f|d|l] [-maxdepth N] [-mindepth N]
    "#]],
    );
    check(
        "find . -path '*/util/*'",
        expect![[r#"
        exit 0
        ./src/util/helper.rs
    "#]],
    );
    check(
        "find . -name '*.rs' -delete",
        expect![[r#"
        error (BadArgs): find: '-delete' is not supported: this shell is read-only and runs no programs; usage: find [path...] [-name GLOB] [-iname GLOB] [-path GLOB] [-type f|d|l] [-maxdepth N] [-mindepth N]
    "#]],
    );
    check(
        "find nope",
        expect![[r#"
        error (BadArgs): find: 'nope': No such file or directory; check the path with ls or find
    "#]],
    );
}

#[test]
fn sort_uniq_echo_pwd() {
    check(
        "sort notes.txt",
        expect![[r#"
        exit 0
        10
        9
        a
        a
        b
        c
    "#]],
    );
    check(
        "sort -n notes.txt | head -n 2",
        expect![[r#"
        exit 0
        a
        a
    "#]],
    );
    check(
        "sort -rn notes.txt | head -n 2",
        expect![[r#"
        exit 0
        10
        9
    "#]],
    );
    check(
        "sort notes.txt | uniq -c",
        expect![[r#"
        exit 0
              1 10
              1 9
              2 a
              1 b
              1 c
    "#]],
    );
    check(
        "sort -u notes.txt | uniq -d",
        expect![[r#"
        exit 0
    "#]],
    );
    check(
        "echo -n hi there",
        expect![[r#"
        exit 0
        hi there"#]],
    );
    check(
        r#"echo 'single $HOME' "double \"q\"" a\ b"#,
        expect![[r#"
        exit 0
        single $HOME double "q" a b
    "#]],
    );
    check(
        "pwd",
        expect![[r#"
        exit 0
        /workspace
    "#]],
    );
}

#[test]
fn pipelines_feed_stdout_to_stdin() {
    check(
        "cat lines.txt | grep 1 | tail -n 2 | wc -l",
        expect![[r#"
        exit 0
        2
    "#]],
    );
    check(
        "find src -type f | grep -c rs",
        expect![[r#"
        exit 0
        2
    "#]],
    );
    check(
        "echo hello | grep -n hell",
        expect![[r#"
        exit 0
        1:hello
    "#]],
    );
    check(
        "cat README.md | grep nothing-here",
        expect![[r#"
        exit 1
    "#]],
    );
    // The exit code is the last stage's, as in bash without pipefail.
    check(
        "grep nothing-here README.md | wc -l",
        expect![[r#"
        exit 0
        0
    "#]],
    );
}

#[test]
fn globs_expand_against_the_workspace() {
    check(
        "ls *.txt",
        expect![[r#"
        exit 0
        lines.txt
        notes.txt
        ünï.txt
    "#]],
    );
    check(
        "wc -l src/*/*.rs",
        expect![[r#"
        exit 0
        3 src/util/helper.rs
    "#]],
    );
    check(
        "echo '*.txt' *.none",
        expect![[r#"
        exit 0
        *.txt *.none
    "#]],
    );
    check(
        "ls /workspace/src/*.rs",
        expect![[r#"
        exit 0
        /workspace/src/main.rs
    "#]],
    );
    check(
        "echo .h*",
        expect![[r#"
        exit 0
        .hidden
    "#]],
    );
}

#[test]
fn unsupported_syntax_is_refused_with_the_command_list() {
    check(
        "cat a > b",
        expect![[r#"
        error (BadArgs): unsupported shell syntax: redirection (> or <); nothing can be written, and files are read by naming them as arguments. <SUPPORTED>
    "#]],
    );
    check(
        "ls; rm -rf /",
        expect![[r#"
        error (BadArgs): unsupported shell syntax: multiple commands (; or a line break); run one pipeline per call. <SUPPORTED>
    "#]],
    );
    check(
        "ls && ls",
        expect![[r#"
        error (BadArgs): unsupported shell syntax: &&; run one pipeline per call. <SUPPORTED>
    "#]],
    );
    check(
        "ls || ls",
        expect![[r#"
        error (BadArgs): unsupported shell syntax: ||; run one pipeline per call. <SUPPORTED>
    "#]],
    );
    check(
        "echo `ls`",
        expect![[r#"
        error (BadArgs): unsupported shell syntax: command substitution (`...`); run the inner command in its own call. <SUPPORTED>
    "#]],
    );
    check(
        "echo $(ls)",
        expect![[r#"
        error (BadArgs): unsupported shell syntax: command substitution ($(...)); run the inner command in its own call. <SUPPORTED>
    "#]],
    );
    check(
        "echo \"$HOME\"",
        expect![[r#"
        error (BadArgs): unsupported shell syntax: variables ($NAME); there are no variables; write the value itself, or put a literal $ in single quotes. <SUPPORTED>
    "#]],
    );
    check(
        "ls &",
        expect![[r#"
        error (BadArgs): unsupported shell syntax: &; commands cannot run in the background. <SUPPORTED>
    "#]],
    );
    check(
        "ls\nls",
        expect![[r#"
        error (BadArgs): unsupported shell syntax: multiple commands (; or a line break); run one pipeline per call. <SUPPORTED>
    "#]],
    );
    check(
        "(ls)",
        expect![[r#"
        error (BadArgs): unsupported shell syntax: subshells and parentheses; quote them if they are part of a pattern. <SUPPORTED>
    "#]],
    );
    check(
        "curl http://x",
        expect![[r#"
        error (BadArgs): unsupported command 'curl'. <SUPPORTED>
    "#]],
    );
    check(
        "rm README.md",
        expect![[r#"
        error (BadArgs): unsupported command 'rm': this shell is read-only and runs no programs; to change files use filesystem.write or file.edit. <SUPPORTED>
    "#]],
    );
    check(
        "cd src",
        expect![[r#"
        error (BadArgs): cd is not supported: the working directory is always /workspace; use paths relative to it instead (e.g. ls src/lib)
    "#]],
    );
    check(
        "echo 'open",
        expect![[r#"
        error (BadArgs): unclosed single quote ('); add the closing quote
    "#]],
    );
    check(
        "echo \"open",
        expect![[r#"
        error (BadArgs): unclosed double quote ("); add the closing quote
    "#]],
    );
    check(
        "ls |",
        expect![[r#"
        error (BadArgs): a pipeline stage is empty; write a command after the last |
    "#]],
    );
    check(
        "| ls",
        expect![[r#"
        error (BadArgs): a pipeline stage is empty; write commands on both sides of |
    "#]],
    );
    check(
        "   ",
        expect![[r#"
        error (BadArgs): the command is empty; <SUPPORTED>
    "#]],
    );
    check(
        "cat /etc/passwd",
        expect![[r#"
        error (BadArgs): cat: the path "/etc/passwd" is outside the workspace; pass a path relative to the workspace (e.g. "src/main.rs") or an absolute path starting with /workspace/
    "#]],
    );
}

#[test]
fn quoting_and_comments() {
    check(
        r#"grep "hello again" README.md # trailing comment"#,
        expect![[r#"
        exit 0
        hello again
    "#]],
    );
    check(
        r#"echo a'b'"c" 'x|y' "semi;colon" 'gt>lt<' '$(no)'"#,
        expect![[r#"
        exit 0
        abc x|y semi;colon gt>lt< $(no)
    "#]],
    );
    check(
        "echo price: $ 5",
        expect![[r#"
        exit 0
        price: $ 5
    "#]],
    );
    check(
        "echo ''",
        expect![[r#"
        exit 0

    "#]],
    );
}

#[test]
fn large_output_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("big.txt"), "y".repeat(3 * 1024 * 1024)).unwrap();
    let out = super::run(dir.path(), json!({"command": "cat big.txt"})).unwrap();
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.len() < 1024 * 1024 + 200);
    assert!(stdout.ends_with("[output truncated: showing the first 1048576 of 3145728 bytes; pipe through head or narrow the command]\n"));
    let out = super::run(dir.path(), json!({"command": "cat big.txt | wc -c"})).unwrap();
    assert_eq!(out["stdout"], "3145728\n");
}

#[test]
fn errors_are_bad_args() {
    let dir = workspace();
    let err = super::run(dir.path(), json!({"command": "frobnicate"})).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert!(err.message().contains("Supported commands: ls"), "{err}");
    let err = super::run(dir.path(), json!({"cmd": "ls"})).unwrap_err();
    assert!(
        err.message()
            .starts_with("invalid arguments: unknown field `cmd`"),
        "{err}"
    );
}

#[test]
fn more_options() {
    check(
        "head -n -13 lines.txt",
        expect![[r#"
        exit 0
        line 1
        line 2
    "#]],
    );
    check(
        "tail -c 4 lines.txt",
        expect![[r#"
            exit 0
             15
        "#]],
    );
    check(
        "cat notes.txt | head -n +2",
        expect![[r#"
        error (BadArgs): head: +N is not supported; to skip the first lines use tail -n +N
    "#]],
    );
    check(
        "sort -f notes.txt | uniq -u",
        expect![[r#"
        exit 0
        10
        9
        b
        c
    "#]],
    );
    check(
        r"echo -e 'a\tb\nc'",
        expect![[r#"
        exit 0
        a	b
        c
    "#]],
    );
    check(
        "echo -x",
        expect![[r#"
        exit 0
        -x
    "#]],
    );
    check(
        "grep -on 'l[a-z]*' README.md",
        expect![[r#"
            exit 0
            1:le
            2:llo
            2:ld
            3:llo
        "#]],
    );
    check(
        "cat -- -",
        expect![[r#"
        exit 0
    "#]],
    );
    check(
        "grep -c x - README.md",
        expect![[r#"
        exit 1
        (standard input):0
        README.md:0
    "#]],
    );
    check(
        "ls missing/*.rs",
        expect![[r#"
        error (BadArgs): ls: cannot access 'missing/*.rs': No such file or directory; check the path with ls or find
    "#]],
    );
    check(
        "grep -m",
        expect![[r#"
        error (BadArgs): grep: option '-m' needs a value; usage: grep [-i] [-n] [-r] [-l] [-c] [-v] [-w] [-o] [-q] [-h] [-H] [-E] [-F] [-m N] [-e PATTERN] [--include=GLOB] [--exclude=GLOB] [--exclude-dir=GLOB] PATTERN [path...]
    "#]],
    );
    check(
        "uniq notes.txt out.txt",
        expect![[r#"
        error (BadArgs): uniq: writing to an output file is not supported; pass at most one input path
    "#]],
    );
}

#[cfg(unix)]
#[test]
fn symlinks_in_listings() {
    let dir = workspace();
    std::os::unix::fs::symlink("src/main.rs", dir.path().join("link.rs")).unwrap();
    expect![[r#"
        exit 0
        -         32 README.md
        -        111 lines.txt
        l          - link.rs -> src/main.rs
        -         13 notes.txt
        d          - src
        -         12 ünï.txt
    "#]]
    .assert_eq(&run(&dir, "ls -l"));
    expect![[r#"
        exit 0
        ./link.rs
    "#]]
    .assert_eq(&run(&dir, "find . -type l"));
    expect![[r#"
        exit 0
        fn main() {
    "#]]
    .assert_eq(&run(&dir, "head -n 1 link.rs"));
}
