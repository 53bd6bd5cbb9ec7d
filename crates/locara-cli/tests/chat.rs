//! `locara chat` end to end: the built binary against a real model (Qwen2.5-Coder-0.5B-Instruct
//! served by llama.cpp on loopback, as `.ci/test-deps` installs it and `tests/all/chat.rs` uses
//! it): the answer streams to stdout, each tool call is one line on stderr, the transcript and
//! the receipts are written, and the exit code says how the chat ended.

mod support;

use std::path::PathBuf;

use serde_json::Value;
use support::Cli;

fn model_url() -> &'static str {
    locara_test_artifacts::llm::qwen_tools()
}

const QUESTION: &str =
    "What is the access code for the north gate? Search the file contents for 'north gate'.";

/// A working directory with `gates/gates.txt`, a fact the model cannot know.
fn cli() -> Cli {
    let cli = Cli::new();
    std::fs::create_dir(cli.path("gates")).unwrap();
    std::fs::write(
        cli.path("gates/gates.txt"),
        "The access code for the north gate is 7319-KESTREL. The south gate has no code.\n",
    )
    .unwrap();
    cli
}

#[test]
fn chat_streams_the_answer_shows_each_call_and_writes_transcript_and_receipts() {
    let cli = cli();
    let url = model_url();
    let run = cli.run(&[
        "--llm",
        url,
        "chat",
        "--tools",
        "filesystem.search",
        "--dir",
        "gates",
        "--temperature",
        "0",
        "--seed",
        "7",
        "--transcript",
        "transcript.json",
        "--receipts",
        "receipts",
        QUESTION,
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("7319-KESTREL"), "{run:#?}");
    assert!(run.stdout.ends_with('\n'), "{run:#?}");
    // One line for the call: the tool, its arguments, its outcome.
    let calls: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("tool "))
        .collect();
    assert_eq!(calls.len(), 1, "{run:#?}");
    assert!(
        calls[0].starts_with("tool filesystem.search {") && calls[0].contains("-> ok ("),
        "{}",
        calls[0]
    );

    let transcript: Value =
        serde_json::from_str(&std::fs::read_to_string(cli.path("transcript.json")).unwrap())
            .unwrap();
    assert_eq!(transcript["stop_reason"], "final_answer");
    assert_eq!(transcript["format"], "openai");
    assert_eq!(transcript["tools"][0]["name"], "filesystem_search");
    let call = &transcript["steps"][0]["calls"][0];
    assert_eq!(call["tool"], "filesystem.search");
    assert!(call["result"].as_str().unwrap().contains("7319-KESTREL"));
    assert!(
        transcript["answer"]
            .as_str()
            .unwrap()
            .contains("7319-KESTREL")
    );

    // The receipt names the call's tool and checks out against the home.
    let receipts: Vec<PathBuf> = std::fs::read_dir(cli.path("receipts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(receipts.len(), 1, "{receipts:?}");
    let name = receipts[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(name, "1-1-filesystem.search.receipt.json");
    assert!(run.stderr.contains("wrote the receipt"), "{run:#?}");
    let verified = cli.run(&["verify-receipt", receipts[0].to_str().unwrap()]);
    assert_eq!(verified.code, 0, "{verified:#?}");
}

#[test]
fn chat_says_which_budget_stopped_it_and_exits_1() {
    let cli = cli();
    let url = model_url();
    // The prompt on stdin; one turn allowed, and the model's first turn calls the tool.
    let run = cli.run_with_stdin(
        &[
            "--llm",
            url,
            "chat",
            "--tools",
            "filesystem.search",
            "--dir",
            "gates",
            "--temperature",
            "0",
            "--max-steps",
            "1",
            "--json",
        ],
        QUESTION,
    );
    assert_eq!(run.code, 1, "{run:#?}");
    let transcript = run.json();
    assert_eq!(transcript["stop_reason"], "max_steps");
    assert_eq!(
        transcript["steps"][0]["calls"][0]["error"]["code"],
        "not_run"
    );
    assert!(
        run.stderr.contains("chat stopped (max_steps)")
            && run.stderr.contains("the model was asked once (max_steps)"),
        "{run:#?}"
    );
}

#[test]
fn chat_needs_a_model_and_says_how_to_name_one() {
    let cli = cli();
    let stderr = cli.refused(&["chat", "hello"], "");
    assert!(
        stderr.contains("`locara chat` needs a model: pass --llm URL")
            && stderr.contains("LOCARA_LLM_API_KEY"),
        "{stderr}"
    );
    // A model that does not answer is a model error, exit 2, saying where it was looked for.
    let run = cli.run(&["--llm", "http://127.0.0.1:9/v1", "chat", "hello"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr.contains(
            "error[model_error]: cannot reach the model at http://127.0.0.1:9/v1/chat/completions"
        ),
        "{run:#?}"
    );
}
