//! The memory tools, `memory.save`, `memory.search`, `memory.update` and `memory.delete`:
//! in-process tools over a [`Memory`], scoped to the user of the call's context.

use std::sync::Arc;

use locara_exec::{CallContext, HandlerError, HostTool, ToolHandler};
use locara_manifest::{LimitsSpec, SafetyTier, ToolManifest, ToolName, Version};
use serde_json::{Value, json};

use crate::{Embedder, HybridWeights, LazyMemory, MemoryError, MemoryStore, Query, SearchHit};

/// The id of the tool that saves a note.
pub const MEMORY_SAVE: &str = "memory.save";
/// The id of the tool that searches the user's notes.
pub const MEMORY_SEARCH: &str = "memory.search";
/// The id of the tool that rewrites a note.
pub const MEMORY_UPDATE: &str = "memory.update";
/// The id of the tool that deletes a note.
pub const MEMORY_DELETE: &str = "memory.delete";

/// How many results a search returns unless asked.
pub const DEFAULT_TOP_K: usize = 5;
/// How many results a search may return at most.
pub const MAX_TOP_K: usize = 20;
/// The longest note, in characters (only its first 256 tokens count for meaning).
pub const MAX_TEXT_CHARS: usize = 10_000;
/// The longest source, in characters.
pub const MAX_SOURCE_CHARS: usize = 500;
/// The longest query, in characters.
pub const MAX_QUERY_CHARS: usize = 1_000;

const WALL_TIME_MS: u64 = 60_000;
const OUTPUT_BYTES: u64 = 1 << 20;
const NOTE_ID_PATTERN: &str = "^note-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

/// A user's memory: the notes database, the embedder and the search weights. Cheap to clone.
///
/// Each method takes the user the call is for; an empty one is [`MemoryError::NoUser`]. The
/// methods block (SQLite, inference): call them from a blocking thread.
#[derive(Debug, Clone)]
pub struct Memory {
    store: MemoryStore,
    embedder: Embedder,
    weights: HybridWeights,
}

impl Memory {
    /// Memory over `store`, embedding with `embedder`, searching with the default weights.
    pub fn new(store: MemoryStore, embedder: Embedder) -> Memory {
        Memory {
            store,
            embedder,
            weights: HybridWeights::default(),
        }
    }

    /// Searches with `weights` instead.
    ///
    /// # Errors
    /// [`MemoryError::InvalidArgument`] for weights that are negative, not finite, or both 0.
    pub fn with_weights(mut self, weights: HybridWeights) -> Result<Memory, MemoryError> {
        weights.check()?;
        self.weights = weights;
        Ok(self)
    }

    /// The search weights.
    pub fn weights(&self) -> HybridWeights {
        self.weights
    }

    /// The notes database.
    pub fn store(&self) -> &MemoryStore {
        &self.store
    }

    /// The embedder.
    pub fn embedder(&self) -> &Embedder {
        &self.embedder
    }

    /// Saves a note for `user` and returns its id; when it returns, the note is on disk.
    ///
    /// # Errors
    /// [`MemoryError::NoUser`], [`MemoryError::Embed`], [`MemoryError::Database`].
    pub fn save(
        &self,
        user: &str,
        text: &str,
        source: Option<&str>,
    ) -> Result<String, MemoryError> {
        check_user(user)?;
        let vector = self.embedder.embed_one(text)?;
        self.store
            .insert(user, text, source, &self.embedder.model_id(), &vector)
    }

    /// `user`'s notes best matching `query`, best first, at most `top_k` (1 to
    /// [`MAX_TOP_K`]).
    ///
    /// # Errors
    /// [`MemoryError::InvalidArgument`] for `top_k` out of range; [`MemoryError::NoUser`],
    /// [`MemoryError::Embed`], [`MemoryError::Database`].
    pub fn search(
        &self,
        user: &str,
        query: &str,
        top_k: usize,
    ) -> Result<Vec<SearchHit>, MemoryError> {
        check_user(user)?;
        if !(1..=MAX_TOP_K).contains(&top_k) {
            return Err(MemoryError::InvalidArgument {
                what: "top_k",
                reason: format!("{top_k} is not between 1 and {MAX_TOP_K}"),
            });
        }
        let model = self.embedder.model_id();
        let vector = if self.weights.vector > 0.0 {
            Some(self.embedder.embed_one(query)?)
        } else {
            None
        };
        self.store.search(
            user,
            &Query {
                text: query,
                embedding: vector.as_deref().map(|v| (model.as_str(), v)),
                top_k,
                weights: self.weights,
            },
        )
    }

    /// Rewrites `user`'s note `note_id` (and its source, when given), embedding the new text.
    ///
    /// # Errors
    /// [`MemoryError::NoNote`] when `user` has no such note, whoever else may;
    /// [`MemoryError::NoUser`], [`MemoryError::Embed`], [`MemoryError::Database`].
    pub fn update(
        &self,
        user: &str,
        note_id: &str,
        text: &str,
        source: Option<&str>,
    ) -> Result<(), MemoryError> {
        check_user(user)?;
        let vector = self.embedder.embed_one(text)?;
        self.store.update(
            user,
            note_id,
            text,
            source,
            &self.embedder.model_id(),
            &vector,
        )
    }

    /// Deletes `user`'s note `note_id`.
    ///
    /// # Errors
    /// [`MemoryError::NoNote`] when `user` has no such note, whoever else may;
    /// [`MemoryError::NoUser`], [`MemoryError::Database`].
    pub fn delete(&self, user: &str, note_id: &str) -> Result<(), MemoryError> {
        self.store.delete(user, note_id)
    }

    /// The four memory tools over this memory, to register with the host
    /// (`LocaraConfig::with_host_tool`).
    pub fn tools(&self) -> Vec<HostTool> {
        tools_over(&Source::Ready(self.clone()))
    }
}

/// Where a memory tool gets its memory: given, or loaded on the first call.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    Ready(Memory),
    Lazy(LazyMemory),
}

impl Source {
    fn memory(&self) -> Result<Memory, MemoryError> {
        match self {
            Source::Ready(memory) => Ok(memory.clone()),
            Source::Lazy(lazy) => lazy.memory(),
        }
    }
}

pub(crate) fn tools_over(source: &Source) -> Vec<HostTool> {
    Op::ALL
        .iter()
        .map(|op| {
            let handler = Arc::new(MemoryHandler {
                source: source.clone(),
                op: *op,
            });
            HostTool::new(op.manifest(), handler).unwrap_or_else(|e| {
                unreachable!("the memory tools' manifests are valid (a test checks): {e}")
            })
        })
        .collect()
}

/// The four memory tools over `store` and `embedder`, searching with the default weights
/// ([`Memory::tools`]).
pub fn memory_tools(store: MemoryStore, embedder: Embedder) -> Vec<HostTool> {
    Memory::new(store, embedder).tools()
}

/// The memory tools' manifests as they are registered (before [`HostTool::new`] pins them),
/// for a host that must know them without loading the model: `locara models fetch`
/// installs their `model_dependencies`.
pub fn manifests() -> Vec<ToolManifest> {
    Op::ALL.iter().map(|op| op.manifest()).collect()
}

pub(crate) fn search_manifest() -> ToolManifest {
    Op::Search.manifest()
}

fn check_user(user: &str) -> Result<(), MemoryError> {
    if user.trim().is_empty() {
        Err(MemoryError::NoUser)
    } else {
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Save,
    Search,
    Update,
    Delete,
}

impl Op {
    const ALL: [Op; 4] = [Op::Save, Op::Search, Op::Update, Op::Delete];

    fn id(self) -> &'static str {
        match self {
            Op::Save => MEMORY_SAVE,
            Op::Search => MEMORY_SEARCH,
            Op::Update => MEMORY_UPDATE,
            Op::Delete => MEMORY_DELETE,
        }
    }

    fn manifest(self) -> ToolManifest {
        let id: ToolName = self
            .id()
            .parse()
            .unwrap_or_else(|e| unreachable!("a valid tool id: {e}"));
        let version: Version = env!("CARGO_PKG_VERSION")
            .parse()
            .unwrap_or_else(|e| unreachable!("a valid version: {e}"));
        let (display_name, description, tier) = match self {
            Op::Save => (
                "Save to memory",
                "Save a note to the user's long-term memory, to recall in later conversations: \
                 a fact, a preference, a decision, with where it came from. Keep one idea per \
                 note, written so it makes sense on its own. Returns the note's id.",
                SafetyTier::SideEffecting,
            ),
            Op::Search => (
                "Search memory",
                "Search the user's long-term memory for notes about something, by meaning and \
                 by wording: the query need not repeat the note's words. Returns the best \
                 notes first, each with its text, source, score (0 to 1) and note_id.",
                SafetyTier::ReadOnly,
            ),
            Op::Update => (
                "Update a memory note",
                "Rewrite a note in the user's memory (found with memory.search) when what it \
                 says has changed; the source is kept unless a new one is given.",
                SafetyTier::SideEffecting,
            ),
            Op::Delete => (
                "Delete a memory note",
                "Delete a note from the user's memory (found with memory.search) that is wrong \
                 or no longer wanted. It cannot be undone.",
                SafetyTier::SideEffecting,
            ),
        };
        let mut manifest = HostTool::manifest_template(id, version)
            .with_display_name(display_name)
            .with_description(description)
            .with_license("Apache-2.0")
            .with_safety_tier(tier)
            .with_limits(
                LimitsSpec::new()
                    .with_wall_time_ms(WALL_TIME_MS)
                    .with_output_bytes(OUTPUT_BYTES),
            )
            .with_input_schema(self.input_schema())
            .with_output_schema(self.output_schema());
        for model in crate::model_dependencies() {
            manifest = manifest.with_model_dependency(model);
        }
        manifest
    }

    fn input_schema(self) -> Value {
        let text = json!({
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_TEXT_CHARS,
            "pattern": "\\S",
            "description": "The note, in plain words; it should make sense on its own."
        });
        let source = json!({
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_SOURCE_CHARS,
            "description": "Where it came from, e.g. `conversation 2026-11-27` or a URL."
        });
        let note_id = json!({
            "type": "string",
            "pattern": NOTE_ID_PATTERN,
            "description": "The note's id, `note-…`, as memory.save or memory.search gave it."
        });
        match self {
            Op::Save => json!({
                "type": "object",
                "required": ["text"],
                "properties": {"text": text, "source": source},
                "additionalProperties": false
            }),
            Op::Search => json!({
                "type": "object",
                "required": ["query"],
                "properties": {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_QUERY_CHARS,
                        "pattern": "\\S",
                        "description": "What to recall, in words or as a question."
                    },
                    "top_k": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_TOP_K,
                        "default": DEFAULT_TOP_K,
                        "description": "How many notes to return at most, best first."
                    }
                },
                "additionalProperties": false
            }),
            Op::Update => json!({
                "type": "object",
                "required": ["note_id", "text"],
                "properties": {"note_id": note_id, "text": text, "source": source},
                "additionalProperties": false
            }),
            Op::Delete => json!({
                "type": "object",
                "required": ["note_id"],
                "properties": {"note_id": note_id},
                "additionalProperties": false
            }),
        }
    }

    fn output_schema(self) -> Value {
        let note_id = json!({"type": "string", "pattern": NOTE_ID_PATTERN});
        match self {
            Op::Save | Op::Update => json!({
                "type": "object",
                "required": ["note_id"],
                "properties": {"note_id": note_id},
                "additionalProperties": false
            }),
            Op::Delete => json!({
                "type": "object",
                "required": ["note_id", "deleted"],
                "properties": {"note_id": note_id, "deleted": {"const": true}},
                "additionalProperties": false
            }),
            Op::Search => json!({
                "type": "object",
                "required": ["results"],
                "properties": {
                    "results": {
                        "type": "array",
                        "maxItems": MAX_TOP_K,
                        "items": {
                            "type": "object",
                            "required": ["text", "source", "score", "note_id"],
                            "properties": {
                                "text": {"type": "string"},
                                "source": {"type": ["string", "null"]},
                                "score": {"type": "number", "minimum": 0, "maximum": 1},
                                "note_id": note_id
                            },
                            "additionalProperties": false
                        }
                    }
                },
                "additionalProperties": false
            }),
        }
    }
}

/// One memory tool: which operation, over which memory.
#[derive(Debug)]
struct MemoryHandler {
    source: Source,
    op: Op,
}

fn string(arguments: &Value, key: &str) -> Option<String> {
    arguments
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn failure(error: &MemoryError) -> HandlerError {
    HandlerError::new(error.to_string(), error.hint())
}

#[async_trait::async_trait]
impl ToolHandler for MemoryHandler {
    async fn call(&self, arguments: Value, context: &CallContext) -> Result<Value, HandlerError> {
        // The user is the host's word, never the arguments'.
        let user = context
            .user
            .clone()
            .filter(|u| !u.trim().is_empty())
            .ok_or_else(|| failure(&MemoryError::NoUser))?;
        let memory_source = self.source.clone();
        let op = self.op;
        let text = string(&arguments, "text");
        let source = string(&arguments, "source");
        let note_id = string(&arguments, "note_id");
        let query = string(&arguments, "query");
        let top_k = arguments
            .get("top_k")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_TOP_K, |k| usize::try_from(k).unwrap_or(usize::MAX));
        let missing = |key: &'static str| MemoryError::InvalidArgument {
            what: key,
            reason: "it is required".to_owned(),
        };
        let run = move || -> Result<Value, MemoryError> {
            let memory = memory_source.memory()?;
            match op {
                Op::Save => {
                    let text = text.ok_or_else(|| missing("text"))?;
                    let note_id = memory.save(&user, &text, source.as_deref())?;
                    Ok(json!({"note_id": note_id}))
                }
                Op::Search => {
                    let query = query.ok_or_else(|| missing("query"))?;
                    let hits = memory.search(&user, &query, top_k)?;
                    let results: Vec<Value> = hits
                        .into_iter()
                        .map(|hit| {
                            json!({
                                "text": hit.text,
                                "source": hit.source,
                                "score": round(hit.score),
                                "note_id": hit.note_id,
                            })
                        })
                        .collect();
                    Ok(json!({"results": results}))
                }
                Op::Update => {
                    let note_id = note_id.ok_or_else(|| missing("note_id"))?;
                    let text = text.ok_or_else(|| missing("text"))?;
                    memory.update(&user, &note_id, &text, source.as_deref())?;
                    Ok(json!({"note_id": note_id}))
                }
                Op::Delete => {
                    let note_id = note_id.ok_or_else(|| missing("note_id"))?;
                    memory.delete(&user, &note_id)?;
                    Ok(json!({"note_id": note_id, "deleted": true}))
                }
            }
        };
        match tokio::task::spawn_blocking(run).await {
            Ok(result) => result.map_err(|e| failure(&e)),
            Err(join) => Err(HandlerError::new(
                format!("{} stopped: {join}", op.id()),
                "this is a bug in the memory tools; report it",
            )),
        }
    }
}

/// A score to 4 decimals, within 0..=1.
fn round(score: f32) -> f64 {
    (f64::from(score).clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0
}
