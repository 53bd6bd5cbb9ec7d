//! The memory tools from the command line: `models fetch memory.search` installs the
//! embedder, one process saves a note and the next finds it, and `--user` keeps users apart.
//! Also search by meaning once the model is installed.

mod support;

use support::Cli;

fn note_id(run: &support::Run) -> String {
    run.json()["note_id"].as_str().unwrap().to_owned()
}

fn found(run: &support::Run) -> Vec<(String, String)> {
    run.json()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| {
            (
                hit["note_id"].as_str().unwrap().to_owned(),
                hit["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn notes_outlive_the_process_that_saved_them_and_stay_with_their_user() {
    let cli = Cli::new();
    // Without the model the call fails and says what to run; without a user it is refused.
    let missing = cli.expect(
        1,
        &["--user", "alice", "run", "memory.save", "--arg", "text=x"],
    );
    assert!(
        missing.stderr.contains("locara models fetch memory.search"),
        "{missing:#?}"
    );
    let fetched = cli.expect(0, &["models", "fetch", "memory.search"]);
    assert!(
        fetched.stdout.contains("all-minilm-l6-v2.safetensors"),
        "{fetched:#?}"
    );
    let nobody = cli.expect(1, &["run", "memory.search", "--arg", "query=food"]);
    assert!(nobody.stderr.contains("need a user"), "{nobody:#?}");

    let save = |user: &str, text: &str| {
        note_id(&cli.expect(
            0,
            &[
                "--user",
                user,
                "run",
                "memory.save",
                "--arg",
                &format!("text={text}"),
            ],
        ))
    };
    let search = |user: &str, query: &str| {
        found(&cli.expect(
            0,
            &[
                "--user",
                user,
                "run",
                "memory.search",
                "--arg",
                &format!("query={query}"),
            ],
        ))
    };
    let peanuts = save("alice", "I am allergic to peanuts");
    save(
        "alice",
        "My sister lives in Lisbon and works as an architect",
    );
    save("bob", "Bob's favourite food is peanut butter");
    // Another process, by meaning: no word of the query is in the note.
    let hits = search("alice", "which food should I avoid");
    assert_eq!(
        hits[0],
        (peanuts.clone(), "I am allergic to peanuts".to_owned()),
        "{hits:?}"
    );
    assert!(
        hits.iter().all(|(_, text)| !text.contains("Bob")),
        "{hits:?}"
    );
    // LOCARA_USER names the user too; bob never sees alice's notes.
    let bob = cli.run_with_env(
        &["run", "memory.search", "--arg", "query=allergic to peanuts"],
        &[("LOCARA_USER", "bob")],
        &[],
    );
    assert_eq!(bob.code, 0, "{bob:#?}");
    assert!(
        found(&bob).iter().all(|(_, text)| text.contains("Bob")),
        "{bob:#?}"
    );

    // Update and delete, each in its own process; bob cannot touch alice's note.
    let stolen = cli.expect(
        1,
        &[
            "--user",
            "bob",
            "run",
            "memory.delete",
            "--arg",
            &format!("note_id={peanuts}"),
        ],
    );
    assert!(stolen.stderr.contains("no note"), "{stolen:#?}");
    cli.expect(
        0,
        &[
            "--user",
            "alice",
            "run",
            "memory.update",
            "--arg",
            &format!("note_id={peanuts}"),
            "--arg",
            "text=I am allergic to peanuts and to shellfish",
        ],
    );
    let hits = search("alice", "seafood allergy");
    assert_eq!(
        hits[0].1, "I am allergic to peanuts and to shellfish",
        "{hits:?}"
    );
    cli.expect(
        0,
        &[
            "--user",
            "alice",
            "run",
            "memory.delete",
            "--arg",
            &format!("note_id={peanuts}"),
        ],
    );
    let hits = search("alice", "allergic");
    assert!(hits.iter().all(|(id, _)| *id != peanuts), "{hits:?}");
}

#[test]
fn search_finds_tools_by_meaning_once_the_model_is_installed() {
    let cli = Cli::new();
    let query = "make this photo smaller";
    let lexical = cli.expect(0, &["--json", "search", query]);
    cli.expect(0, &["models", "fetch", "memory.search"]);
    let ids = |run: &support::Run| -> Vec<String> {
        run.json()
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_ne!(
        ids(&lexical).first().map(String::as_str),
        Some("image.resize")
    );
    // The first search embeds the catalog and keeps it; the second reads it back.
    for _ in 0..2 {
        let hybrid = cli.expect(0, &["--json", "search", query]);
        assert_eq!(ids(&hybrid)[0], "image.resize", "{hybrid:#?}");
    }
    let kept = std::fs::read_dir(cli.in_home("cache/search"))
        .unwrap()
        .count();
    assert_eq!(kept, 1);
}
