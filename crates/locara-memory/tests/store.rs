//! The notes database without the model: per-user isolation under concurrent writers,
//! several stores (and processes) on one file, crash safety, FTS5.
//!
//! Vectors here are made up (a deterministic function of the text); the model's own vectors
//! are tested in `memory.rs`.

use std::{
    io::{BufRead as _, BufReader, Write as _},
    process::{Command, Stdio},
    sync::Arc,
    thread,
    time::Duration,
};

use locara_memory::{HybridWeights, MemoryError, MemoryStore, Query};

const MODEL: &str = "test-vectors";

/// A unit vector that depends on the text's words, so equal texts have equal vectors.
fn vector(text: &str) -> Vec<f32> {
    let mut v = [0.0f32; 16];
    for word in text.split_whitespace() {
        let h = word
            .bytes()
            .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        v[(h % 16) as usize] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter().map(|x| x / norm).collect()
}

fn save(store: &MemoryStore, user: &str, text: &str) -> String {
    store
        .insert(user, text, Some("test"), MODEL, &vector(text))
        .unwrap()
}

fn search(store: &MemoryStore, user: &str, text: &str, top_k: usize) -> Vec<String> {
    let v = vector(text);
    store
        .search(
            user,
            &Query {
                text,
                embedding: Some((MODEL, &v)),
                top_k,
                weights: HybridWeights::default(),
            },
        )
        .unwrap()
        .into_iter()
        .map(|hit| hit.text)
        .collect()
}

fn temp_store() -> (tempfile::TempDir, MemoryStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::open_in_home(dir.path()).unwrap();
    (dir, store)
}

#[test]
fn fts5_is_compiled_in_and_indexes_the_notes() {
    let (_dir, store) = temp_store();
    assert!(store.has_fts5().unwrap());
    save(&store, "alice", "The car needs new tyres before winter");
    save(&store, "alice", "Buy oat milk");
    // Porter stemming: "tyre" finds "tyres"; full text only.
    let hits = store
        .search(
            "alice",
            &Query {
                text: "tyre",
                embedding: None,
                top_k: 5,
                weights: HybridWeights::TEXT_ONLY,
            },
        )
        .unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].text, "The car needs new tyres before winter");
    assert!(hits[0].score > 0.0 && hits[0].score == hits[0].text_score);
    assert_eq!(hits[0].vector_score, 0.0);
    // FTS5 syntax in a query is only words.
    for query in ["NEAR(car tyres)", "\"unbalanced", "car AND", "*", "tyres:^"] {
        store
            .search(
                "alice",
                &Query {
                    text: query,
                    embedding: None,
                    top_k: 5,
                    weights: HybridWeights::TEXT_ONLY,
                },
            )
            .unwrap_or_else(|e| panic!("{query}: {e}"));
    }
    store.check_integrity().unwrap();
}

#[test]
fn bm25_is_normalised_by_what_the_query_could_score() {
    let (_dir, store) = temp_store();
    for text in [
        "The boiler was serviced last October by the plumber",
        "The plumber invoice is in the blue folder",
        "October rent was paid late",
        "Buy oat milk",
        "Call the bank about the mortgage",
        "Water the tomatoes every evening",
    ] {
        save(&store, "alice", text);
    }
    // Other users' notes hold the words too: they are not matched, only counted.
    save(&store, "bob", "boiler boiler plumber October");
    let text_scores = |query: &str| -> Vec<(String, f32)> {
        store
            .search(
                "alice",
                &Query {
                    text: query,
                    embedding: None,
                    top_k: 10,
                    weights: HybridWeights::TEXT_ONLY,
                },
            )
            .unwrap()
            .into_iter()
            .map(|hit| (hit.text, hit.text_score))
            .collect()
    };
    let all_words = text_scores("boiler serviced plumber October");
    assert_eq!(
        all_words[0].0,
        "The boiler was serviced last October by the plumber"
    );
    assert!(all_words[0].1 > 0.8, "{all_words:?}");
    // The best match of a query it only partly answers is not given full marks.
    let partly = text_scores("when was the boiler last repaired by an engineer");
    assert_eq!(partly.len(), 1, "{partly:?}");
    assert!(partly[0].1 < 0.6, "{partly:?}");
    assert!(text_scores("zebra crossing").is_empty());
}

#[test]
fn the_database_is_private_and_in_wal_mode() {
    use std::os::unix::fs::PermissionsExt as _;
    let (dir, store) = temp_store();
    save(&store, "alice", "a note");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(store.path(), MemoryStore::path_in_home(dir.path()));
    assert_eq!(mode(store.path()), 0o600);
    assert_eq!(mode(store.path().parent().unwrap()), 0o700);
    let wal = store.path().with_extension("sqlite3-wal");
    assert!(wal.exists(), "no WAL file beside the database");
    assert_eq!(mode(&wal), 0o600);
}

#[test]
fn update_and_delete_reach_only_the_owners_notes() {
    let (_dir, store) = temp_store();
    let id = save(&store, "alice", "alice's secret");
    let no_note = format!("no note `{id}`");
    for user in ["bob", "Alice", "alice "] {
        let err = store
            .update(user, &id, "bob was here", None, MODEL, &vector("x"))
            .unwrap_err();
        assert_eq!(err.to_string(), no_note, "{user}");
        let err = store.delete(user, &id).unwrap_err();
        assert_eq!(err.to_string(), no_note, "{user}");
        let err = store.get(user, &id).unwrap_err();
        assert_eq!(err.to_string(), no_note, "{user}");
        assert!(search(&store, user, "alice's secret", 20).is_empty());
    }
    // Same message as a note that never existed.
    let missing = "note-00000000-0000-4000-8000-000000000000";
    assert_eq!(
        store.delete("bob", missing).unwrap_err().to_string(),
        format!("no note `{missing}`")
    );
    let note = store.get("alice", &id).unwrap();
    assert_eq!(
        (note.text.as_str(), note.source.as_deref()),
        ("alice's secret", Some("test"))
    );
    assert!(matches!(
        store.insert("", "x", None, MODEL, &vector("x")),
        Err(MemoryError::NoUser)
    ));
    assert!(matches!(store.count(" "), Err(MemoryError::NoUser)));
}

#[test]
fn concurrent_users_never_see_each_others_notes() {
    let (_dir, store) = temp_store();
    const USERS: usize = 4;
    const NOTES: usize = 40;
    let threads: Vec<_> = (0..USERS)
        .map(|u| {
            let store = store.clone();
            thread::spawn(move || {
                let user = format!("user{u}");
                for n in 0..NOTES {
                    // Every user writes the same words, plus a mark of its own.
                    let text = format!("shared words about the garden number {n} mark{u}");
                    let id = save(&store, &user, &text);
                    // Interleave reads with the other users' writes.
                    for hit in search(&store, &user, "shared words garden", 20) {
                        assert!(hit.contains(&format!(" mark{u}")), "{user} saw `{hit}`");
                    }
                    if n % 4 == 0 {
                        store
                            .update(
                                &user,
                                &id,
                                &format!("{text} (edited)"),
                                None,
                                MODEL,
                                &vector(&text),
                            )
                            .unwrap();
                    }
                    if n % 5 == 0 {
                        store.delete(&user, &id).unwrap();
                    }
                }
                user
            })
        })
        .collect();
    for handle in threads {
        let user = handle.join().unwrap();
        assert_eq!(store.count(&user).unwrap(), NOTES - NOTES / 5);
    }
    for u in 0..USERS {
        let user = format!("user{u}");
        let hits = search(&store, &user, "shared words about the garden", 20);
        assert_eq!(hits.len(), 20);
        assert!(hits.iter().all(|t| t.contains(&format!("mark{u}"))));
    }
    store.check_integrity().unwrap();
}

#[test]
fn two_stores_on_one_file_see_each_others_writes() {
    let (dir, first) = temp_store();
    let second = MemoryStore::open_in_home(dir.path()).unwrap();
    let id = save(&first, "alice", "the spare key is under the blue flowerpot");
    assert_eq!(
        search(&second, "alice", "where is the spare key", 5),
        ["the spare key is under the blue flowerpot"]
    );
    second
        .update(
            "alice",
            &id,
            "the spare key is with the neighbour",
            None,
            MODEL,
            &vector("the spare key is with the neighbour"),
        )
        .unwrap();
    assert_eq!(
        first.get("alice", &id).unwrap().text,
        "the spare key is with the neighbour"
    );
    // Writers from both stores at once queue on the lock instead of failing.
    let writers: Vec<_> = [first.clone(), second.clone()]
        .into_iter()
        .enumerate()
        .map(|(i, store)| {
            thread::spawn(move || {
                for n in 0..50 {
                    save(&store, "bob", &format!("note {n} from store {i}"));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(first.count("bob").unwrap(), 100);
    assert_eq!(second.count("bob").unwrap(), 100);
}

/// The child's side of the crash test: saves notes from two threads, printing each id once its
/// save returned, and aborts (no destructor, no checkpoint) while saves are under way.
const CRASH_CHILD: &str = "LOCARA_MEMORY_CRASH_CHILD";

fn crash_child(home: &str) -> ! {
    let store = MemoryStore::open_in_home(std::path::Path::new(home)).unwrap();
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    for t in 0..2 {
        let (store, out) = (store.clone(), Arc::clone(&out));
        thread::spawn(move || {
            for n in 0.. {
                let text = format!("crash note {n} of thread {t}");
                let id = save(&store, "alice", &text);
                let mut out = out.lock().unwrap();
                writeln!(out, "saved {id} {text}").unwrap();
                out.flush().unwrap();
            }
        });
    }
    // Let some saves through, then die mid-write.
    thread::sleep(Duration::from_millis(1500));
    std::process::abort();
}

#[test]
fn a_crashed_process_loses_no_note_whose_save_returned() {
    if let Ok(home) = std::env::var(CRASH_CHILD) {
        crash_child(&home);
    }
    let dir = tempfile::tempdir().unwrap();
    // Another process holds the database open while the child writes and crashes.
    let bystander = MemoryStore::open_in_home(dir.path()).unwrap();
    save(&bystander, "alice", "written before the crash");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "a_crashed_process_loses_no_note_whose_save_returned",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CRASH_CHILD, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let saved: Vec<(String, String)> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| {
            let rest = line.strip_prefix("saved ")?;
            let (id, text) = rest.split_once(' ')?;
            Some((id.to_owned(), text.to_owned()))
        })
        .collect();
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child was meant to abort: {status}");
    assert!(
        saved.len() >= 10,
        "only {} saves before the crash",
        saved.len()
    );

    let reopened = MemoryStore::open_in_home(dir.path()).unwrap();
    reopened.check_integrity().unwrap();
    for (id, text) in &saved {
        assert_eq!(&reopened.get("alice", id).unwrap().text, text);
    }
    let count = reopened.count("alice").unwrap();
    // Every acknowledged save, the bystander's note, and at most one per thread in flight.
    assert!(
        (saved.len() + 1..=saved.len() + 3).contains(&count),
        "{count} notes after {} acknowledged saves",
        saved.len()
    );
    // The store that was open during the crash still works.
    save(&bystander, "alice", "written after the crash");
    assert_eq!(bystander.count("alice").unwrap(), count + 1);
    eprintln!(
        "crash test: {} acknowledged saves, {count} notes after reopening",
        saved.len()
    );
}
