//! `web.search`: a read-only tool that asks the search service the app configured.
//!
//! [`web_search`] makes a [`HostTool`] from a [`SearchProvider`]: a URL, the API it speaks
//! ([`SearchFormat`]: SearXNG's JSON API or Brave Search's) and, for Brave, an API key. The
//! model gives a `query` and `max_results` (1 to 10, 5 by default) and gets
//! `{query, provider, results: [{title, url, snippet}]}`, the snippets as plain text.
//!
//! The key is the host's: it comes from the [`SearchProvider`], never from the arguments (the
//! input schema has no room for one), and no message repeats it.
//!
//! The provider's host is the tool's `wasi_imports.net.allowed_hosts`, so the composition rule
//! lets the tool run only when the app grants that host, as for an HTTP provider. Requests are
//! [`Egress::Configured`]: the app named the service.
//!
//! Transient failures (a 429, a 5xx, no connection, or a SearXNG answer with no results because
//! its engines failed) are retried with exponential backoff (250 ms, 500 ms, 1 s, 2 s), or after
//! the `Retry-After` the service asked for, at most [`MAX_ATTEMPTS`] times and never past the
//! call's deadline: the tool's wall-time limit, counted from the start of the call, less a
//! margin to report in. The error then says how many attempts were made, what the last one got
//! and why retrying stopped.

use std::{
    fmt,
    sync::Arc,
    time::{Duration, Instant},
};

use hyper::StatusCode;
use locara_exec::{
    Egress, HandlerError, HostTool, HttpClient, HttpRequest, HttpResponse, ToolHandler,
};
use locara_manifest::{LimitsSpec, NetAccess, SafetyTier, WasiImports};
use serde_json::{Value, json};
use url::Url;

use crate::{Error, HyperClient};

/// The id of the tool [`web_search`] makes.
pub const WEB_SEARCH: &str = "web.search";

/// The most results one call returns (`max_results`' maximum).
pub const MAX_RESULTS: u64 = 10;

/// The results a call returns when it does not say (`max_results`' default).
pub const DEFAULT_RESULTS: u64 = 5;

/// The most requests one call sends: the first and up to four retries.
pub const MAX_ATTEMPTS: u32 = 5;

/// The wait before the first retry; each next one doubles it.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// The most bytes of a search service's answer read.
const MAX_RESPONSE_BYTES: usize = 4 << 20;

/// The most characters of a title and of a snippet returned.
const MAX_TITLE_CHARS: usize = 300;
const MAX_SNIPPET_CHARS: usize = 600;

/// The API a search service speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SearchFormat {
    /// SearXNG's JSON API: `GET <url>/search?q=…&format=json` (the instance must enable the
    /// `json` format in its `settings.yml`). An API key, when set, is sent as
    /// `Authorization: Bearer <key>`, for instances behind an authenticating proxy.
    Searxng,
    /// Brave Search's web search API: `GET <url>?q=…&count=N` with the key in
    /// `X-Subscription-Token`. A URL without a path means
    /// `https://api.search.brave.com/res/v1/web/search`'s path.
    Brave,
}

impl SearchFormat {
    /// Its name: `searxng` or `brave`.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchFormat::Searxng => "searxng",
            SearchFormat::Brave => "brave",
        }
    }

    fn display_name(self) -> &'static str {
        match self {
            SearchFormat::Searxng => "SearXNG",
            SearchFormat::Brave => "Brave Search",
        }
    }
}

impl fmt::Display for SearchFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The search service a [`web_search`] tool asks: where it is, what it speaks, its key.
///
/// Its `Debug` output never shows the key.
#[derive(Clone)]
pub struct SearchProvider {
    url: String,
    format: SearchFormat,
    api_key: Option<String>,
    wall_time: Duration,
    client: Arc<dyn HttpClient>,
}

impl SearchProvider {
    /// The wall-time limit of a call by default: 20 s, retries included.
    pub const DEFAULT_WALL_TIME: Duration = Duration::from_secs(20);

    /// The service at `url` speaking `format`: for SearXNG the instance's base URL (e.g.
    /// `http://127.0.0.1:8888`; `/search` is added unless the path ends with it), for Brave
    /// `https://api.search.brave.com` or the full endpoint URL. No API key, a wall time of
    /// [`SearchProvider::DEFAULT_WALL_TIME`], and [`HyperClient`] to send requests.
    pub fn new(url: impl Into<String>, format: SearchFormat) -> SearchProvider {
        SearchProvider {
            url: url.into(),
            format,
            api_key: None,
            wall_time: Self::DEFAULT_WALL_TIME,
            client: Arc::new(HyperClient::default()),
        }
    }

    /// Sets the API key (required for Brave). An empty key counts as none.
    pub fn with_api_key(mut self, key: impl Into<String>) -> SearchProvider {
        let key = key.into();
        self.api_key = Some(key).filter(|k| !k.is_empty());
        self
    }

    /// Sets the tool's wall-time limit: each call, retries included, ends within it.
    pub fn with_wall_time(mut self, wall_time: Duration) -> SearchProvider {
        self.wall_time = wall_time;
        self
    }

    /// Sets the client that sends requests (e.g. a [`HyperClient`] trusting a private CA).
    pub fn with_client(mut self, client: Arc<dyn HttpClient>) -> SearchProvider {
        self.client = client;
        self
    }

    /// The URL given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The API it speaks.
    pub fn format(&self) -> SearchFormat {
        self.format
    }
}

impl fmt::Debug for SearchProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SearchProvider")
            .field("url", &self.url)
            .field("format", &self.format)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("wall_time", &self.wall_time)
            .field("client", &self.client)
            .finish()
    }
}

/// Makes the `web.search` tool asking `provider`.
///
/// The tool is `read_only`; its `wasi_imports.net.allowed_hosts` is the provider's host, so it
/// runs only where the app grants that host.
///
/// # Errors
/// [`Error::Endpoint`] for a URL that is not `http(s)://host[:port][/path]` or a Brave provider
/// without an API key; [`Error::Manifest`] for a wall time above the manifest maximum (300 s).
pub fn web_search(provider: SearchProvider) -> Result<HostTool, Error> {
    let bad = |reason: &str| Error::Endpoint {
        url: provider.url.clone(),
        reason: reason.to_owned(),
    };
    let mut endpoint = Url::parse(&provider.url).map_err(|e| bad(&e.to_string()))?;
    if !matches!(endpoint.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https"));
    }
    if !endpoint.username().is_empty() || endpoint.password().is_some() {
        return Err(bad(
            "it carries credentials; give the API key separately (LOCARA_SEARCH_API_KEY for the CLI)",
        ));
    }
    endpoint.set_fragment(None);
    // `host_str` keeps an IPv6 address in brackets (`[::1]`); a grant names the address alone.
    let host = endpoint
        .host_str()
        .ok_or_else(|| bad("it has no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    match provider.format {
        SearchFormat::Searxng => {
            if !endpoint.path().trim_end_matches('/').ends_with("/search") {
                endpoint
                    .path_segments_mut()
                    .map_err(|()| bad("it cannot have a path"))?
                    .pop_if_empty()
                    .push("search");
            }
        }
        SearchFormat::Brave => {
            if provider.api_key.is_none() {
                return Err(bad(
                    "Brave Search needs an API key (the CLI reads it from LOCARA_SEARCH_API_KEY)",
                ));
            }
            if endpoint.path() == "/" {
                endpoint.set_path("/res/v1/web/search");
            }
        }
    }
    let wall_time_ms = u64::try_from(provider.wall_time.as_millis()).unwrap_or(u64::MAX);
    let manifest = HostTool::manifest_template(
        WEB_SEARCH
            .parse()
            .map_err(|e| Error::Manifest(format!("{e}")))?,
        env!("CARGO_PKG_VERSION")
            .parse()
            .map_err(|e| Error::Manifest(format!("{e}")))?,
    )
    .with_display_name("Web search")
    .with_description(format!(
        "Search the web with the app's search service ({} at {host}) and get the top results as \
         {{title, url, snippet}}, best first. Use short keyword queries; fetch a result's url \
         (web.fetch) to read the page itself.",
        provider.format.display_name()
    ))
    .with_license("Apache-2.0")
    .with_safety_tier(SafetyTier::ReadOnly)
    .with_wasi_imports(WasiImports::new().with_net(NetAccess::new().with_host(host.clone())))
    .with_limits(
        LimitsSpec::new()
            .with_wall_time_ms(wall_time_ms)
            .with_output_bytes(256 * 1024),
    )
    .with_input_schema(input_schema())
    .with_output_schema(output_schema());
    let handler = Arc::new(SearchHandler {
        endpoint,
        format: provider.format,
        api_key: provider.api_key,
        wall_time: provider.wall_time,
        client: provider.client,
    });
    HostTool::new(manifest, handler).map_err(|e| Error::Manifest(e.to_string()))
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "required": ["query"],
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": 400,
                "pattern": "\\S",
                "description": "What to search for, e.g. `rust tower middleware timeout`."
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS,
                "default": DEFAULT_RESULTS,
                "description": "How many results to return, best first."
            }
        },
        "additionalProperties": false
    })
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "required": ["query", "provider", "results"],
        "properties": {
            "query": {"type": "string", "description": "The query searched for."},
            "provider": {"enum": ["searxng", "brave"], "description": "The API that answered."},
            "results": {
                "type": "array",
                "maxItems": MAX_RESULTS,
                "items": {
                    "type": "object",
                    "required": ["title", "url", "snippet"],
                    "properties": {
                        "title": {"type": "string"},
                        "url": {"type": "string"},
                        "snippet": {"type": "string", "description": "Plain text from the page, as the search service quotes it."}
                    },
                    "additionalProperties": false
                }
            }
        },
        "additionalProperties": false
    })
}

/// Asks the search service for each call.
#[derive(Debug)]
struct SearchHandler {
    /// The URL requests go to, without their query.
    endpoint: Url,
    format: SearchFormat,
    api_key: Option<String>,
    wall_time: Duration,
    client: Arc<dyn HttpClient>,
}

/// What one attempt got.
enum Attempt {
    /// The results: the call's output.
    Results(Value),
    /// A failure worth retrying: what it was, and the wait the service asked for.
    Transient {
        what: String,
        retry_after: Option<Duration>,
    },
    /// A failure that retrying would repeat.
    Fatal(HandlerError),
}

#[async_trait::async_trait]
impl ToolHandler for SearchHandler {
    async fn call(
        &self,
        arguments: Value,
        _context: &locara_exec::CallContext,
    ) -> Result<Value, HandlerError> {
        let started = Instant::now();
        let deadline = started + budget(self.wall_time);
        let query = arguments["query"].as_str().unwrap_or_default().trim();
        let max_results = arguments
            .get("max_results")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_RESULTS)
            .clamp(1, MAX_RESULTS);
        let request = self.request(query, max_results);
        let mut attempts = 0;
        let (last, stop) = loop {
            attempts += 1;
            let remaining = deadline.saturating_duration_since(Instant::now());
            let sent = self
                .client
                .send(request.clone(), MAX_RESPONSE_BYTES.saturating_add(1));
            let (what, retry_after) = match tokio::time::timeout(remaining, sent).await {
                Err(_) => {
                    break (
                        "got no answer".to_owned(),
                        format!(
                            "the call's deadline ({}) passed while it waited",
                            seconds(self.wall_time)
                        ),
                    );
                }
                Ok(Err(error)) => (format!("could not be reached: {error}"), None),
                Ok(Ok(response)) => match self.read(&response, query, max_results) {
                    Attempt::Results(output) => return Ok(output),
                    Attempt::Fatal(error) => return Err(error),
                    Attempt::Transient { what, retry_after } => (what, retry_after),
                },
            };
            if attempts >= MAX_ATTEMPTS {
                break (
                    what,
                    format!("{WEB_SEARCH} stops after {MAX_ATTEMPTS} attempts"),
                );
            }
            let wait = retry_after.unwrap_or(FIRST_BACKOFF * 2u32.pow(attempts - 1));
            if Instant::now() + wait >= deadline {
                let asked = if retry_after.is_some() {
                    "the wait it asked for (Retry-After)"
                } else {
                    "the next backoff"
                };
                break (
                    what,
                    format!(
                        "{asked}, {}, would pass the call's deadline ({})",
                        seconds(wait),
                        seconds(self.wall_time)
                    ),
                );
            }
            tokio::time::sleep(wait).await;
        };
        Err(HandlerError::new(
            format!(
                "the search service at {} failed {attempts} attempt{} in {}: the last {last}; {stop}",
                self.endpoint,
                if attempts == 1 { "" } else { "s" },
                seconds(started.elapsed()),
            ),
            "the search service is down, overloaded or rate-limited: try again in a while, or \
             answer without searching and tell the user",
        ))
    }
}

impl SearchHandler {
    fn request(&self, query: &str, max_results: u64) -> HttpRequest {
        let mut url = self.endpoint.clone();
        let mut headers = vec![("accept".to_owned(), "application/json".to_owned())];
        match self.format {
            SearchFormat::Searxng => {
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("format", "json");
                if let Some(key) = &self.api_key {
                    headers.push(("authorization".to_owned(), format!("Bearer {key}")));
                }
            }
            SearchFormat::Brave => {
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("count", &max_results.to_string());
                if let Some(key) = &self.api_key {
                    headers.push(("x-subscription-token".to_owned(), key.clone()));
                }
            }
        }
        HttpRequest::get(url, headers).with_egress(Egress::Configured)
    }

    /// Reads one answer: results, a transient failure or a final one.
    fn read(&self, response: &HttpResponse, query: &str, max_results: u64) -> Attempt {
        let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::BAD_GATEWAY);
        let endpoint = &self.endpoint;
        let fatal = |message: String, hint: &str| Attempt::Fatal(HandlerError::new(message, hint));
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Attempt::Transient {
                what: format!("answered {status}{}", excerpt(&response.body)),
                retry_after: response.header("retry-after").and_then(retry_after),
            };
        }
        if status.is_redirection() {
            return fatal(
                format!(
                    "the search service at {endpoint} answered {status} to {}; {WEB_SEARCH} follows no redirects",
                    response.header("location").unwrap_or("an unnamed location")
                ),
                "the search service's URL is outdated: tell the user to configure the URL it redirects to",
            );
        }
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            let hint = match self.format {
                SearchFormat::Searxng if self.api_key.is_none() => {
                    "tell the user: the SearXNG instance refuses JSON searches; enable the json format \
                     (search.formats: [html, json] in its settings.yml) or use an instance that allows it"
                }
                _ => {
                    "tell the user: the search service refused the API key; set a valid one \
                     (the CLI reads LOCARA_SEARCH_API_KEY)"
                }
            };
            return fatal(
                format!(
                    "the search service at {endpoint} answered {status}{}",
                    excerpt(&response.body)
                ),
                hint,
            );
        }
        if !status.is_success() {
            return fatal(
                format!(
                    "the search service at {endpoint} answered {status}{}",
                    excerpt(&response.body)
                ),
                "the search service refused this query: rephrase it with fewer, plainer words, or tell the user",
            );
        }
        if response.body.len() > MAX_RESPONSE_BYTES {
            return fatal(
                format!(
                    "the search service at {endpoint} answered with more than {MAX_RESPONSE_BYTES} bytes"
                ),
                "the search service misbehaves; tell the user",
            );
        }
        let body: Value = match serde_json::from_slice(&response.body) {
            Ok(body) => body,
            Err(error) => {
                return fatal(
                    format!(
                        "the search service at {endpoint} answered with a body that is not JSON \
                         ({error}), while {} answers JSON{}",
                        self.format.display_name(),
                        excerpt(&response.body)
                    ),
                    "the search service is not configured as it speaks: tell the user to check \
                     its URL and format (--search-provider, --search-format)",
                );
            }
        };
        let (items, keys) = match self.format {
            SearchFormat::Searxng => (body.get("results"), ("title", "url", "content")),
            SearchFormat::Brave => (
                body.pointer("/web/results").or_else(|| {
                    // Brave leaves `web` out when nothing matched.
                    body.get("type")
                        .filter(|t| *t == "search")
                        .map(|_| &Value::Null)
                }),
                ("title", "url", "description"),
            ),
        };
        let items = match items {
            Some(Value::Array(items)) => items.as_slice(),
            Some(Value::Null) => &[],
            _ => {
                return fatal(
                    format!(
                        "the search service at {endpoint} answered JSON without {}: it does not \
                         speak {}'s format{}",
                        match self.format {
                            SearchFormat::Searxng => "a `results` list",
                            SearchFormat::Brave => "`web.results`",
                        },
                        self.format.display_name(),
                        excerpt(&response.body)
                    ),
                    "the search service is not configured as it speaks: tell the user to check \
                     its URL and format (--search-provider, --search-format)",
                );
            }
        };
        let mut results: Vec<Value> = Vec::new();
        for item in items {
            if results.len() as u64 >= max_results {
                break;
            }
            let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
            let url = text(keys.1).trim();
            if url.is_empty() || results.iter().any(|r| r["url"] == url) {
                continue;
            }
            results.push(json!({
                "title": cut(&plain_text(text(keys.0)), MAX_TITLE_CHARS),
                "url": url,
                "snippet": cut(&plain_text(text(keys.2)), MAX_SNIPPET_CHARS),
            }));
        }
        if results.is_empty() && self.format == SearchFormat::Searxng {
            // SearXNG answers 200 with no results when its engines failed; that is no answer.
            let failed: Vec<String> = body
                .get("unresponsive_engines")
                .and_then(Value::as_array)
                .map(|engines| {
                    engines
                        .iter()
                        .map(|engine| match engine.as_array().map(Vec::as_slice) {
                            Some([name, reason, ..]) => format!(
                                "{} ({})",
                                name.as_str().unwrap_or("?"),
                                reason.as_str().unwrap_or("?")
                            ),
                            _ => engine.to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            if !failed.is_empty() {
                return Attempt::Transient {
                    what: format!(
                        "answered no results because its engines failed: {}",
                        failed.join(", ")
                    ),
                    retry_after: None,
                };
            }
        }
        Attempt::Results(json!({
            "query": query,
            "provider": self.format.as_str(),
            "results": results,
        }))
    }
}

/// The time a call may spend trying: its wall time less a tenth (at most 1 s), kept to report
/// in before the pipeline stops the call.
fn budget(wall_time: Duration) -> Duration {
    wall_time.saturating_sub((wall_time / 10).min(Duration::from_secs(1)))
}

/// A `Retry-After` in seconds; an HTTP date is left to the backoff.
fn retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// `d` in seconds for a person: `1.5 s`, `0.25 s`, `20 s`.
fn seconds(d: Duration) -> String {
    let text = format!("{:.2}", d.as_secs_f64());
    format!("{} s", text.trim_end_matches('0').trim_end_matches('.'))
}

/// `: <the start of body>` for an error message, or nothing for an empty body.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        String::new()
    } else {
        format!(": {}", cut(&text, 300))
    }
}

/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
    }
}

/// `html` as plain text: tags dropped (a block tag or `<br>` leaves a space), character
/// references decoded, whitespace collapsed. A `<` that does not open a tag (`a < b`) is text.
fn plain_text(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find(['<', '&']) {
        text.push_str(&rest[..at]);
        rest = &rest[at..];
        if rest.starts_with('<') {
            let opens_tag = rest[1..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!');
            match rest.find('>').filter(|_| opens_tag) {
                Some(end) if !rest[1..end].contains('<') => {
                    // Inline markup (`<strong>`, `<em>`) joins its text to what is around it;
                    // a block or a break separates words.
                    let name: String = rest[1..end]
                        .trim_start_matches('/')
                        .chars()
                        .take_while(char::is_ascii_alphanumeric)
                        .collect::<String>()
                        .to_ascii_lowercase();
                    if matches!(
                        name.as_str(),
                        "br" | "p"
                            | "div"
                            | "li"
                            | "ul"
                            | "ol"
                            | "tr"
                            | "td"
                            | "th"
                            | "table"
                            | "h1"
                            | "h2"
                            | "h3"
                            | "h4"
                            | "h5"
                            | "h6"
                            | "hr"
                            | "blockquote"
                    ) {
                        text.push(' ');
                    }
                    rest = &rest[end + 1..];
                }
                _ => {
                    text.push('<');
                    rest = &rest[1..];
                }
            }
        } else {
            match rest[1..]
                .find(';')
                .filter(|&end| end <= 10)
                .and_then(|end| Some((entity(&rest[1..=end])?, end)))
            {
                Some((decoded, end)) => {
                    text.push(decoded);
                    rest = &rest[end + 2..];
                }
                None => {
                    text.push('&');
                    rest = &rest[1..];
                }
            }
        }
    }
    text.push_str(rest);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The character a reference names (`amp`, `#39`, `#x27`), without `&` and `;`.
fn entity(name: &str) -> Option<char> {
    let code = if let Some(hex) = name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
        u32::from_str_radix(hex, 16).ok()?
    } else if let Some(decimal) = name.strip_prefix('#') {
        decimal.parse().ok()?
    } else {
        return match name {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some(' '),
            "hellip" => Some('…'),
            "mdash" => Some('—'),
            "ndash" => Some('–'),
            "lsquo" => Some('‘'),
            "rsquo" => Some('’'),
            "ldquo" => Some('“'),
            "rdquo" => Some('”'),
            _ => None,
        };
    };
    char::from_u32(code)
}

#[cfg(test)]
mod tests;
