//! Search by meaning: the catalog of every built-in tool and the memory tools, searched with
//! natural-language requests that people and agents write, by wording alone and blended with
//! the embedding model. Prints recall@1 and recall@3 of both.

use locara_facade::{Locara, LocaraConfig};
use locara_registry::ModelStore;
use locara_test_artifacts::TestHome;

/// Requests written for the catalog, each with the tools that answer it.
const QUERIES: &[(&str, &[&str])] = &[
    ("turn my voice recording into text", &["audio.transcribe"]),
    (
        "what does the speaker say in this wav file",
        &["audio.transcribe"],
    ),
    ("transcribe an interview", &["audio.transcribe"]),
    (
        "find the quiet parts of a podcast",
        &["audio.detect-silence"],
    ),
    (
        "where are the pauses in this mp3",
        &["audio.detect-silence"],
    ),
    ("list the files in a folder", &["filesystem.list"]),
    (
        "show me what is inside this directory",
        &["filesystem.list"],
    ),
    ("how big is each file in the project", &["filesystem.list"]),
    ("open a file and show me its contents", &["filesystem.read"]),
    (
        "look for a word across all my documents",
        &["filesystem.search"],
    ),
    (
        "which file mentions the invoice number",
        &["filesystem.search"],
    ),
    ("save this text to a new file", &["filesystem.write"]),
    ("create a file called notes.txt", &["filesystem.write"]),
    ("fix a typo in my config file", &["file.edit"]),
    ("change one line in a source file", &["file.edit"]),
    ("run grep and wc over the project", &["bash.read-only"]),
    (
        "count matching lines with a shell pipeline",
        &["bash.read-only"],
    ),
    ("execute a python script", &["code-exec.python"]),
    (
        "compute the standard deviation of these numbers with python",
        &["code-exec.python"],
    ),
    ("run some javascript", &["code-exec.js"]),
    ("evaluate a JS expression", &["code-exec.js"]),
    ("run a lua snippet", &["code-exec.lua"]),
    (
        "calculate a formula by writing a small program",
        &["code-exec.python", "code-exec.js", "code-exec.lua"],
    ),
    ("make this photo smaller", &["image.resize"]),
    ("crop a picture to a square thumbnail", &["image.resize"]),
    ("convert a png to jpeg", &["image.format-convert"]),
    ("save the image as webp instead", &["image.format-convert"]),
    ("read the text in a scanned page", &["ocr"]),
    ("get the words out of a screenshot", &["ocr"]),
    ("extract the text from a PDF", &["pdf.extract-text"]),
    ("what does page 3 of this PDF say", &["pdf.extract-text"]),
    ("split a PDF into separate pages", &["pdf.split"]),
    ("pull chapter two out of a PDF document", &["pdf.split"]),
    (
        "break a long document into pieces for embedding",
        &["text.chunk"],
    ),
    ("cut this text into smaller parts", &["text.chunk"]),
    (
        "give me a short summary of this article",
        &["text.summarize"],
    ),
    ("tl;dr of a long email", &["text.summarize"]),
    ("put this sentence into French", &["text.translate"]),
    ("how do you say this in Spanish", &["text.translate"]),
    ("is this review positive or negative", &["text.classify"]),
    (
        "tag a support ticket as billing or technical",
        &["text.classify"],
    ),
    ("download a web page", &["web.fetch"]),
    ("get the contents of a URL", &["web.fetch"]),
    ("remember that I prefer tea over coffee", &["memory.save"]),
    (
        "what did the user tell me about their allergies",
        &["memory.search"],
    ),
    ("recall what I know about this person", &["memory.search"]),
    ("forget the note about my old address", &["memory.delete"]),
    (
        "correct an outdated fact I saved earlier",
        &["memory.update"],
    ),
];

/// The share of queries whose answer is among the first `k` hits.
fn recall(locara: &Locara, k: usize, misses: &mut Vec<String>) -> f64 {
    let found = QUERIES
        .iter()
        .filter(|(query, answers)| {
            let hits: Vec<String> = locara
                .search_tools(query, k)
                .into_iter()
                .map(|t| t.id)
                .collect();
            let found = hits.iter().any(|id| answers.contains(&id.as_str()));
            if !found {
                misses.push(format!("{query:?} -> {hits:?} (want {answers:?})"));
            }
            found
        })
        .count();
    found as f64 / QUERIES.len() as f64
}

#[test]
fn meaning_finds_the_tools_that_wording_misses() {
    assert!(QUERIES.len() >= 40);
    let home = TestHome::new();
    for id in locara_test_artifacts::UPSTREAM_TOOLS
        .iter()
        .map(|(id, _)| id)
    {
        home.publish_upstream_tool(id);
    }
    let config = LocaraConfig::new(home.path()).with_memory();
    let lexical = Locara::new(&config).unwrap();
    // Without the model installed, search is lexical (and does not fail).
    let mut misses = Vec::new();
    let lexical_at_1 = recall(&lexical, 1, &mut Vec::new());
    let lexical_at_3 = recall(&lexical, 3, &mut misses);
    for miss in &misses {
        eprintln!("lexical miss: {miss}");
    }

    let models = ModelStore::new(config.models_dir());
    let blobs = locara_upstream::fetch::BlobCache::user_default();
    for manifest in locara_memory::manifests().iter().take(1) {
        locara_upstream::models::install_missing(manifest, &models, &blobs, |_| {}).unwrap();
    }
    let hybrid = Locara::new(&config).unwrap();
    let ids: Vec<String> = hybrid.list().into_iter().map(|t| t.id).collect();
    for id in ["memory.save", "memory.search", "code-exec.python", "ocr"] {
        assert!(ids.iter().any(|i| i == id), "{id} is not in {ids:?}");
    }
    let mut misses = Vec::new();
    let hybrid_at_1 = recall(&hybrid, 1, &mut Vec::new());
    let hybrid_at_3 = recall(&hybrid, 3, &mut misses);
    for miss in &misses {
        eprintln!("hybrid miss: {miss}");
    }
    eprintln!(
        "tool search over {} tools, {} queries: recall@1 lexical {lexical_at_1:.2} hybrid \
         {hybrid_at_1:.2}; recall@3 lexical {lexical_at_3:.2} hybrid {hybrid_at_3:.2}",
        ids.len(),
        QUERIES.len()
    );
    assert!(
        hybrid_at_3 > lexical_at_3,
        "meaning should find more than wording"
    );
    assert!(hybrid_at_3 >= 0.9, "recall@3 {hybrid_at_3:.2}");
    assert!(hybrid_at_1 >= lexical_at_1);

    // A query that shares no word with its tool is found by meaning alone.
    let hits = hybrid.search_tools("turn my voice recording into text", 3);
    assert!(hits.iter().any(|t| t.id == "audio.transcribe"), "{hits:?}");
}
