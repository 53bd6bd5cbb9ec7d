//! A search service on loopback for tests: a BM25 index over real documents (the sections of
//! the repository's Markdown files) that answers SearXNG's JSON API at `/search` and Brave
//! Search's at `/res/v1/web/search`, counts the requests it gets, and can be told to fail the
//! next ones (503, 429 with `Retry-After`, or SearXNG's "no results, engines failed").
//!
//! It is plain `std` (a thread per connection, HTTP/1.1 with `Connection: close`) so that the
//! library's tests and the CLI's can both include it (`#[path]`) without more dependencies.

#![allow(
    dead_code,
    reason = "each test crate that includes this module uses only part of it"
)]

use std::{
    collections::{HashMap, VecDeque},
    io::{BufRead as _, BufReader, Write as _},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Instant,
};

use serde_json::{Value, json};

/// How the service answers a request it was told to fail.
#[derive(Debug, Clone)]
pub(crate) enum Fault {
    /// This status, with a short text body.
    Status(u16),
    /// 429 Too Many Requests with `Retry-After: <seconds>`.
    RateLimited {
        /// The `Retry-After` value, in seconds.
        retry_after: u64,
    },
    /// SearXNG's answer when its engines fail: 200, no results, `unresponsive_engines`.
    EnginesDown,
}

/// One request the service got.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// When it arrived.
    pub(crate) at: Instant,
    /// Its path.
    pub(crate) path: String,
    /// Its query parameters, decoded.
    pub(crate) params: Vec<(String, String)>,
    /// Its headers, names in lowercase.
    pub(crate) headers: Vec<(String, String)>,
}

impl Seen {
    /// The first query parameter named `name`.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        find(&self.params, name)
    }

    /// The first header named `name` (lowercase).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        find(&self.headers, name)
    }
}

fn find<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// The service, listening on `127.0.0.1` until the process ends.
pub(crate) struct SearchService {
    port: u16,
    shared: Arc<Shared>,
}

struct Shared {
    index: Index,
    brave_key: String,
    faults: Mutex<VecDeque<Fault>>,
    seen: Mutex<Vec<Seen>>,
}

impl SearchService {
    /// Indexes the repository's Markdown and starts answering; Brave requests must carry
    /// `brave_key`.
    pub(crate) fn start(brave_key: &str) -> SearchService {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            index: Index::new(documents(port)),
            brave_key: brave_key.to_owned(),
            faults: Mutex::new(VecDeque::new()),
            seen: Mutex::new(Vec::new()),
        });
        let serving = Arc::clone(&shared);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let shared = Arc::clone(&serving);
                std::thread::spawn(move || {
                    // A client that goes away mid-answer is its business.
                    let _ = answer(&shared, stream);
                });
            }
        });
        SearchService { port, shared }
    }

    /// `http://127.0.0.1:<port>`.
    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Answers the next `count` requests with `fault`.
    pub(crate) fn fail_next(&self, count: usize, fault: Fault) {
        let mut faults = self.shared.faults.lock().unwrap();
        faults.extend(std::iter::repeat_n(fault, count));
    }

    /// The requests so far, in order.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// How many documents the index holds.
    pub(crate) fn documents(&self) -> usize {
        self.shared.index.docs.len()
    }

    /// The URL of the document a file's section is served as, e.g.
    /// `url_of("examples/sample/field-notes.md", "Field notes: the river survey")`.
    pub(crate) fn url_of(&self, file: &str, heading: &str) -> String {
        doc_url(self.port, file, heading)
    }
}

/// The repository's root: both crates including this module are at `crates/<name>`.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn doc_url(port: u16, file: &str, heading: &str) -> String {
    let slug: String = heading
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    format!("http://127.0.0.1:{port}/{file}#{slug}")
}

/// A searchable document: one section of a Markdown file.
struct Doc {
    title: String,
    url: String,
    text: String,
    terms: HashMap<String, u32>,
    len: u32,
}

/// The sections (text under a heading, outside code fences) of the repository's Markdown.
fn documents(port: u16) -> Vec<Doc> {
    let root = repo_root();
    let mut files = vec![
        "README.md".to_owned(),
        "ARCHITECTURE.md".to_owned(),
        "SECURITY.md".to_owned(),
    ];
    for dir in ["docs", "examples/sample"] {
        let mut names: Vec<String> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".md"))
            .map(|n| format!("{dir}/{n}"))
            .collect();
        names.sort();
        files.extend(names);
    }
    let mut docs = Vec::new();
    for file in files {
        let Ok(markdown) = std::fs::read_to_string(root.join(&file)) else {
            continue;
        };
        let mut heading = file.clone();
        let mut body = String::new();
        let mut fenced = false;
        let mut flush = |heading: &str, body: &mut String| {
            if body.split_whitespace().count() >= 8 {
                let text = body.split_whitespace().collect::<Vec<_>>().join(" ");
                let mut terms = HashMap::new();
                let mut len = 0;
                for term in tokens(&format!("{heading} {text}")) {
                    *terms.entry(term).or_insert(0) += 1;
                    len += 1;
                }
                docs.push(Doc {
                    title: heading.to_owned(),
                    url: doc_url(port, &file, heading),
                    text,
                    terms,
                    len,
                });
            }
            body.clear();
        };
        for line in markdown.lines() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if !fenced && line.starts_with('#') {
                flush(&heading, &mut body);
                heading = line.trim_start_matches('#').trim().to_owned();
                continue;
            }
            body.push_str(line);
            body.push('\n');
        }
        flush(&heading, &mut body);
    }
    docs
}

/// Lowercase runs of letters and digits.
fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
}

/// An inverted view of the documents, ranked by Okapi BM25.
struct Index {
    docs: Vec<Doc>,
    df: HashMap<String, u32>,
    avg_len: f64,
}

impl Index {
    fn new(docs: Vec<Doc>) -> Index {
        let mut df = HashMap::new();
        for doc in &docs {
            for term in doc.terms.keys() {
                *df.entry(term.clone()).or_insert(0) += 1;
            }
        }
        let total: u64 = docs.iter().map(|d| u64::from(d.len)).sum();
        let avg_len = total as f64 / docs.len().max(1) as f64;
        Index { docs, df, avg_len }
    }

    /// The documents matching `query`, best first.
    fn search(&self, query: &str) -> Vec<&Doc> {
        const K1: f64 = 1.2;
        const B: f64 = 0.75;
        let mut terms: Vec<String> = tokens(query).collect();
        terms.sort();
        terms.dedup();
        let n = self.docs.len() as f64;
        let mut scored: Vec<(f64, &Doc)> = self
            .docs
            .iter()
            .filter_map(|doc| {
                let mut score = 0.0;
                for term in &terms {
                    let Some(&tf) = doc.terms.get(term) else {
                        continue;
                    };
                    let df = f64::from(self.df[term]);
                    let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                    let tf = f64::from(tf);
                    let norm = 1.0 - B + B * f64::from(doc.len) / self.avg_len;
                    score += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
                }
                (score > 0.0).then_some((score, doc))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.url.cmp(&b.1.url)));
        scored.into_iter().map(|(_, doc)| doc).collect()
    }
}

/// About 40 words of `doc` from a little before the first occurrence of the rarest query term
/// it holds; with `html`, escaped and the matching words in `<strong>`, as Brave quotes pages.
fn snippet(index: &Index, doc: &Doc, query: &str, html: bool) -> String {
    let terms: Vec<String> = tokens(query).collect();
    let words: Vec<&str> = doc.text.split_whitespace().collect();
    let matches = |word: &str| tokens(word).any(|t| terms.contains(&t));
    let rarest = terms
        .iter()
        .filter(|t| doc.terms.contains_key(*t))
        .min_by_key(|t| index.df.get(*t).copied().unwrap_or(u32::MAX));
    let first = words
        .iter()
        .position(|w| tokens(w).any(|t| Some(&t) == rarest))
        .unwrap_or(0);
    let start = first.saturating_sub(6);
    let end = (start + 40).min(words.len());
    words[start..end]
        .iter()
        .map(|word| {
            if !html {
                return (*word).to_owned();
            }
            let escaped = word
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
                .replace('\'', "&#x27;");
            if matches(word) {
                format!("<strong>{escaped}</strong>")
            } else {
                escaped
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reads one request from `stream` and answers it.
fn answer(shared: &Shared, stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_lowercase(), value.trim().to_owned()));
        }
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let seen = Seen {
        at: Instant::now(),
        path: path.to_owned(),
        params: query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (form_decode(k), form_decode(v))
            })
            .collect(),
        headers,
    };
    shared.seen.lock().unwrap().push(seen.clone());
    let fault = shared.faults.lock().unwrap().pop_front();
    let (status, extra, body) = respond(shared, &seen, fault);
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Unknown",
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

/// The status, extra header lines and body answering `seen`.
fn respond(shared: &Shared, seen: &Seen, fault: Option<Fault>) -> (u16, String, String) {
    match fault {
        Some(Fault::Status(status)) => {
            return (status, String::new(), "injected failure".to_owned());
        }
        Some(Fault::RateLimited { retry_after }) => {
            let body = json!({"type": "ErrorResponse", "error": {"status": 429, "code": "RATE_LIMITED", "detail": "Request rate limit exceeded for plan."}});
            return (
                429,
                format!("retry-after: {retry_after}\r\n"),
                body.to_string(),
            );
        }
        Some(Fault::EnginesDown) => {
            let body = json!({
                "query": seen.param("q").unwrap_or_default(),
                "number_of_results": 0,
                "results": [],
                "answers": [], "corrections": [], "infoboxes": [], "suggestions": [],
                "unresponsive_engines": [["local-index", "timeout"]]
            });
            return (200, String::new(), body.to_string());
        }
        None => {}
    }
    let query = seen.param("q").unwrap_or_default();
    match seen.path.as_str() {
        "/search" => {
            if seen.param("format") != Some("json") {
                return (403, String::new(), "Forbidden".to_owned());
            }
            if query.trim().is_empty() {
                return (400, String::new(), "no query".to_owned());
            }
            let results: Vec<Value> = shared
                .index
                .search(query)
                .into_iter()
                .take(20)
                .enumerate()
                .map(|(i, doc)| {
                    json!({
                        "url": doc.url,
                        "title": doc.title,
                        "content": snippet(&shared.index, doc, query, false),
                        "engine": "local-index",
                        "engines": ["local-index"],
                        "positions": [i + 1],
                        "category": "general"
                    })
                })
                .collect();
            let body = json!({
                "query": query,
                "number_of_results": results.len(),
                "results": results,
                "answers": [], "corrections": [], "infoboxes": [], "suggestions": [],
                "unresponsive_engines": []
            });
            (200, String::new(), body.to_string())
        }
        "/res/v1/web/search" => {
            if seen.header("x-subscription-token") != Some(shared.brave_key.as_str()) {
                let body = json!({"type": "ErrorResponse", "error": {"status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid."}});
                return (401, String::new(), body.to_string());
            }
            let count: usize = match seen.param("count").map(str::parse) {
                None => 20,
                Some(Ok(count @ 1..=20)) => count,
                Some(_) => {
                    let body = json!({"type": "ErrorResponse", "error": {"status": 422, "code": "VALIDATION", "detail": "count must be between 1 and 20"}});
                    return (422, String::new(), body.to_string());
                }
            };
            let results: Vec<Value> = shared
                .index
                .search(query)
                .into_iter()
                .take(count)
                .map(|doc| {
                    json!({
                        "type": "search_result",
                        "title": doc.title,
                        "url": doc.url,
                        "description": snippet(&shared.index, doc, query, true),
                        "is_source_local": false
                    })
                })
                .collect();
            let mut body = json!({"type": "search", "query": {"original": query}});
            if !results.is_empty() {
                body["web"] = json!({"type": "search", "results": results});
            }
            (200, String::new(), body.to_string())
        }
        _ => (404, String::new(), "not found".to_owned()),
    }
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte.
fn form_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(byte) => {
                        out.push(byte);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
