//! Ranked lexical search over the catalog: ids, names and descriptions.
//!
//! A query is split into lower-case words; each word scores in each field it occurs in,
//! weighted by the field (id 3, name 2, description 1) and by how rare the word is across
//! the catalog (inverse document frequency), so "pdf split" ranks `pdf.split` above every
//! tool that merely mentions PDFs. A word that only prefixes a field's word scores half.
//! Plurals are folded on both sides ("split text into chunks" finds `text.chunk`).
//!
//! When the host has an embedder, `meaning::blend` mixes that score with meaning (feature
//! `memory`).

/// The text of one tool, as search sees it.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) description: String,
}

/// The lower-case words of `text`, English plurals folded (`chunks` is `chunk`), so that a
/// query's "chunks" finds the tool whose id says "chunk".
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let w = w.to_lowercase();
            match w.strip_suffix('s') {
                Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_owned(),
                _ => w,
            }
        })
        .collect()
}

/// English words too common to say what a query is about ("what does page 3 of this PDF
/// say"): a query's words among them do not score.
const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "are", "as", "at", "be", "by", "can", "do", "doe", "each",
    "for", "from", "get", "give", "how", "i", "in", "into", "is", "it", "its", "me", "my", "of",
    "on", "or", "our", "some", "that", "the", "their", "thi", "this", "to", "u", "we", "what",
    "which", "with", "you", "your",
];

/// Scores every document against `query`; returns `(index, score)` for the documents that
/// match, best first (ties broken by id).
pub(crate) fn rank(documents: &[Document], query: &str) -> Vec<(usize, f64)> {
    let fields: Vec<[Vec<String>; 3]> = documents
        .iter()
        .map(|d| [words(&d.id), words(&d.name), words(&d.description)])
        .collect();
    let n = documents.len() as f64;
    let mut scores = vec![0.0; documents.len()];
    for term in words(query)
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
    {
        let matches = |w: &String| w == &term;
        let prefixes = |w: &String| term.len() >= 3 && w.starts_with(&term);
        let df = fields
            .iter()
            .filter(|f| f.iter().flatten().any(|w| matches(w) || prefixes(w)))
            .count() as f64;
        if df == 0.0 {
            continue;
        }
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        for (doc, f) in fields.iter().enumerate() {
            for (field, weight) in f.iter().zip([3.0, 2.0, 1.0]) {
                if field.iter().any(matches) {
                    scores[doc] += weight * idf;
                } else if field.iter().any(prefixes) {
                    scores[doc] += 0.5 * weight * idf;
                }
            }
        }
    }
    let mut hits: Vec<(usize, f64)> = scores
        .into_iter()
        .enumerate()
        .filter(|&(_, s)| s > 0.0)
        .collect();
    hits.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| documents[a.0].id.cmp(&documents[b.0].id))
    });
    hits
}
