//! Search by meaning (feature `memory`): the cosine similarity of the query's embedding to
//! each tool's name and description, blended with the lexical score of [`crate::search`], so
//! a query that shares no word with the right tool ("make this photo smaller") still finds it.

use std::path::Path;

use locara_memory::{EMBEDDING_DIMENSIONS, Embedder};
use sha2::{Digest, Sha256};

use crate::search::Document;

impl Document {
    /// The texts whose embeddings stand for the tool: its name with the first sentence of
    /// its description (what it is for, which the rest of a long description dilutes), and
    /// its name with the whole description. A tool is as close to a query as the closer of
    /// the two. (The id's words are in the name, and dotted ids embed poorly.)
    pub(crate) fn meanings(&self) -> [String; 2] {
        let first = self
            .description
            .split_inclusive(". ")
            .next()
            .unwrap_or(&self.description);
        [
            format!("{}. {}", self.name, first.trim()),
            format!("{}. {}", self.name, self.description),
        ]
    }
}

/// The weight of meaning in a blended score; wording has the rest. Chosen on the 48 requests
/// of `tests/tool_search.rs` (0.7 and 1.0 rank worse at 1 or at 3).
const MEANING_WEIGHT: f64 = 0.85;

/// How similar in meaning a tool must be to be found without sharing a word with the query
/// (low: a paraphrase of a tool's purpose can score 0.2).
const MIN_SIMILARITY: f32 = 0.1;

/// Blends `lexical` ([`crate::search::rank`]'s hits) with `similarities` (each document's
/// cosine similarity to the query): wording normalised by the best lexical score, plus
/// meaning, weighted [`MEANING_WEIGHT`]. A document is a hit when it shares a word with the
/// query or is at least [`MIN_SIMILARITY`] close in meaning. Best first, ties broken by id.
pub(crate) fn blend(
    documents: &[Document],
    lexical: &[(usize, f64)],
    similarities: &[f32],
) -> Vec<(usize, f64)> {
    let best = lexical.iter().map(|&(_, s)| s).fold(0.0, f64::max);
    let mut wording = vec![0.0; documents.len()];
    for &(i, score) in lexical {
        wording[i] = if best > 0.0 { score / best } else { 0.0 };
    }
    let mut hits: Vec<(usize, f64)> = (0..documents.len())
        .filter(|&i| wording[i] > 0.0 || similarities.get(i).is_some_and(|&s| s >= MIN_SIMILARITY))
        .map(|i| {
            let meaning = f64::from(similarities.get(i).copied().unwrap_or(0.0).max(0.0));
            (
                i,
                (1.0 - MEANING_WEIGHT) * wording[i] + MEANING_WEIGHT * meaning,
            )
        })
        .collect();
    hits.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| documents[a.0].id.cmp(&documents[b.0].id))
    });
    hits
}

/// The embeddings of `texts` by `embedder`, from `<cache>/search/` when an earlier process
/// made them (a file named by the sha256 of the model's id and the texts), else made and
/// kept there for the next. Embedding a catalog's long descriptions takes seconds; reading
/// them back, a millisecond. `None` when the embedder fails.
///
/// The file is the home owner's, like the compiled-module cache; one that is not exactly the
/// expected size is ignored and rewritten.
pub(crate) fn cached_embeddings(
    cache: &Path,
    embedder: &Embedder,
    texts: &[String],
) -> Option<Vec<Vec<f32>>> {
    let mut hasher = Sha256::new();
    hasher.update(embedder.model_id().as_bytes());
    for text in texts {
        hasher.update((text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    let dir = cache.join("search");
    let path = dir.join(format!("{}.f32", hex::encode(hasher.finalize())));
    let size = texts.len() * EMBEDDING_DIMENSIONS * 4;
    if let Ok(bytes) = std::fs::read(&path)
        && bytes.len() == size
    {
        let numbers: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        return Some(
            numbers
                .chunks_exact(EMBEDDING_DIMENSIONS)
                .map(<[f32]>::to_vec)
                .collect(),
        );
    }
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = match embedder.embed(&texts) {
        Ok(vectors) => vectors,
        Err(e) => {
            tracing::warn!("searching by wording only: {e}");
            return None;
        }
    };
    let bytes: Vec<u8> = vectors
        .iter()
        .flatten()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    // A cache: failing to keep it costs the next process time, nothing else.
    let temp = path.with_extension(format!("{}.tmp", std::process::id()));
    let kept = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&temp, &bytes))
        .and_then(|()| std::fs::rename(&temp, &path));
    if let Err(e) = kept {
        let _ = std::fs::remove_file(&temp);
        tracing::debug!(
            "cannot keep the catalog's embeddings in {}: {e}",
            dir.display()
        );
    }
    Some(vectors)
}
