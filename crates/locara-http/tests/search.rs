//! `web.search` against a search service started on loopback by the test (`support/
//! search_service.rs`: a BM25 index over the repository's Markdown speaking SearXNG's and
//! Brave's JSON): relevance, `max_results`, retries with backoff on injected failures, the
//! deadline, Brave's key and markup, and the composition rule.

use std::time::{Duration, Instant};

use locara_facade::{Grants, Locara, LocaraConfig, RunRequest, RunResponse, SafetyTier};
use locara_http::{SearchFormat, SearchProvider, web_search};
use locara_manifest::NetAccess;
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};

#[path = "support/search_service.rs"]
mod search_service;
use search_service::{Fault, SearchService};

const BRAVE_KEY: &str = "brave-test-key-5f2c";

/// The field notes' own heading, and so its document's title.
const FIELD_NOTES: &str = "Field notes: the river survey";

/// A facade whose app grants `127.0.0.1` and registers `provider`'s `web.search`.
fn facade(home: &TestHome, provider: SearchProvider) -> Locara {
    let config = LocaraConfig::new(home.path())
        .with_grants(
            Grants::new()
                .with_max_safety_tier(SafetyTier::ReadOnly)
                .with_net(NetAccess::new().with_host("127.0.0.1")),
        )
        .with_host_tool(web_search(provider).unwrap());
    Locara::new(&config).unwrap()
}

async fn search(locara: &Locara, arguments: Value) -> RunResponse {
    locara
        .run(RunRequest::new("web.search", arguments))
        .await
        .unwrap()
}

fn results(response: &RunResponse) -> &[Value] {
    assert!(response.ok, "{:?}", response.error);
    response.output.as_ref().unwrap()["results"]
        .as_array()
        .unwrap()
}

fn urls(response: &RunResponse) -> Vec<&str> {
    results(response)
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searxng_results_come_ranked_from_the_index() {
    let service = SearchService::start(BRAVE_KEY);
    assert!(
        service.documents() > 20,
        "{} documents",
        service.documents()
    );
    let home = TestHome::new();
    let locara = facade(
        &home,
        SearchProvider::new(service.base_url(), SearchFormat::Searxng),
    );
    let notes = service.url_of("examples/sample/field-notes.md", FIELD_NOTES);

    // Queries taken from the field notes' text find them first.
    for query in [
        "beavers dammed the lower end of the mill race",
        "conductivity and temperature of the water samples",
    ] {
        let found = search(&locara, json!({"query": query})).await;
        assert_eq!(urls(&found)[0], notes, "{query}: {:#?}", found.output);
        let first = &results(&found)[0];
        assert_eq!(first["title"], FIELD_NOTES);
        assert_eq!(found.output.as_ref().unwrap()["query"], query);
        assert_eq!(found.output.as_ref().unwrap()["provider"], "searxng");
    }
    let found = search(&locara, json!({"query": "lodges felled willows"})).await;
    let snippet = results(&found)[0]["snippet"].as_str().unwrap();
    assert!(
        snippet.contains("lodges and a great many felled willows"),
        "{snippet}"
    );

    // What went over the wire: SearXNG's JSON API at <base>/search, no key.
    let sent = service.seen().pop().unwrap();
    assert_eq!(sent.path, "/search");
    assert_eq!(sent.param("q"), Some("lodges felled willows"));
    assert_eq!(sent.param("format"), Some("json"));
    assert_eq!(sent.header("authorization"), None);

    // max_results: 5 by default, up to 10, 11 refused by the schema before any request.
    let common = json!({"query": "the tool and the app"});
    assert_eq!(results(&search(&locara, common.clone()).await).len(), 5);
    let ten = search(
        &locara,
        json!({"query": "the tool and the app", "max_results": 10}),
    )
    .await;
    assert_eq!(results(&ten).len(), 10);
    let two = search(
        &locara,
        json!({"query": "the tool and the app", "max_results": 2}),
    )
    .await;
    assert_eq!(urls(&two), urls(&ten)[..2], "the same ranking, cut");
    let requests = service.seen().len();
    for arguments in [
        json!({"query": "the tool", "max_results": 11}),
        json!({"query": "the tool", "max_results": 0}),
        json!({"query": ""}),
        json!({"query": "   "}),
        json!({"query": "the tool", "api_key": "from the model"}),
        json!({}),
    ] {
        let error = locara
            .run(RunRequest::new("web.search", arguments.clone()))
            .await
            .unwrap_err();
        assert_eq!(error.code(), "invalid_input", "{arguments}: {error}");
    }
    assert_eq!(service.seen().len(), requests, "refused calls send nothing");

    // A base URL that already ends in /search is not extended.
    let direct = facade(
        &home,
        SearchProvider::new(
            format!("{}/search", service.base_url()),
            SearchFormat::Searxng,
        ),
    );
    let found = search(&direct, json!({"query": "beavers mill race"})).await;
    assert_eq!(urls(&found)[0], notes);
    assert_eq!(service.seen().pop().unwrap().path, "/search");

    // A query nothing matches is an empty list, not an error.
    let none = search(&locara, json!({"query": "zyzzyvaquux"})).await;
    assert!(results(&none).is_empty());

    let description = locara.describe("web.search").unwrap();
    assert_eq!(description.summary.safety_tier, "read_only");
    assert_eq!(description.backend, "in_process");
    assert_eq!(
        description.capabilities["wasi_imports"]["net"]["allowed_hosts"],
        json!(["127.0.0.1"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_failures_are_retried_with_backoff() {
    let service = SearchService::start(BRAVE_KEY);
    let home = TestHome::new();
    let locara = facade(
        &home,
        SearchProvider::new(service.base_url(), SearchFormat::Searxng),
    );
    let query = json!({"query": "marker posts carried downstream"});
    let notes = service.url_of("examples/sample/field-notes.md", FIELD_NOTES);

    // Two 503s, then an answer: three requests, 250 ms then 500 ms apart.
    service.fail_next(2, Fault::Status(503));
    let found = search(&locara, query.clone()).await;
    assert_eq!(urls(&found)[0], notes);
    let seen = service.seen();
    assert_eq!(seen.len(), 3, "{seen:#?}");
    let gaps: Vec<Duration> = seen.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(gaps[0] >= Duration::from_millis(250), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(500), "{gaps:?}");

    // A 429 with Retry-After: 1 is retried after a second, not 250 ms.
    service.fail_next(1, Fault::RateLimited { retry_after: 1 });
    let found = search(&locara, query.clone()).await;
    assert_eq!(urls(&found)[0], notes);
    let seen = service.seen();
    assert_eq!(seen.len(), 5);
    assert!(seen[4].at - seen[3].at >= Duration::from_secs(1));

    // SearXNG's "no results, the engines failed" is no answer: asked again.
    service.fail_next(1, Fault::EnginesDown);
    let found = search(&locara, query.clone()).await;
    assert_eq!(urls(&found)[0], notes);
    assert_eq!(service.seen().len(), 7);

    // When it persists, the error names the engines and the attempts.
    service.fail_next(5, Fault::EnginesDown);
    let failed = search(&locara, query).await;
    assert!(!failed.ok);
    let report = failed.error.unwrap();
    assert_eq!(report.code, "tool_error");
    assert!(
        report.message.contains("failed 5 attempts")
            && report
                .message
                .contains("engines failed: local-index (timeout)")
            && report.message.contains("stops after 5 attempts"),
        "{report:?}"
    );
    assert_eq!(service.seen().len(), 12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_stops_retrying_with_a_clear_error() {
    let service = SearchService::start(BRAVE_KEY);
    let home = TestHome::new();
    let locara = facade(
        &home,
        SearchProvider::new(service.base_url(), SearchFormat::Searxng)
            .with_wall_time(Duration::from_millis(1500)),
    );
    // Always 503: requests at 0, 250 and 750 ms; the next wait (1 s) would end past 1.5 s.
    service.fail_next(100, Fault::Status(503));
    let started = Instant::now();
    let failed = search(&locara, json!({"query": "river"})).await;
    let elapsed = started.elapsed();
    let report = failed.error.unwrap();
    assert_eq!(report.code, "tool_error", "{report:?}");
    assert_eq!(service.seen().len(), 3);
    assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}");
    let base = service.base_url();
    assert!(
        report.message.starts_with(&format!(
            "the search service at {base}/search failed 3 attempts in "
        )) && report.message.contains(
            "the last answered 503 Service Unavailable: injected failure; the next backoff, 1 s, \
             would pass the call's deadline (1.5 s)"
        ),
        "{report:?}"
    );
    assert!(report.hint.contains("try again in a while"), "{report:?}");

    // A Retry-After beyond the deadline is not waited for.
    let service = SearchService::start(BRAVE_KEY);
    let locara_rate_limited = locara_with(&home, &service, Duration::from_millis(1500));
    service.fail_next(1, Fault::RateLimited { retry_after: 120 });
    let failed = search(&locara_rate_limited, json!({"query": "river"})).await;
    let report = failed.error.unwrap();
    assert_eq!(service.seen().len(), 1);
    assert!(
        report.message.contains("failed 1 attempt in")
            && report.message.contains("answered 429 Too Many Requests")
            && report.message.contains(
                "the wait it asked for (Retry-After), 120 s, would pass the call's deadline (1.5 s)"
            ),
        "{report:?}"
    );

    // Nobody listening: every attempt fails to connect, and the error says so.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let nobody = facade(
        &home,
        SearchProvider::new(format!("http://127.0.0.1:{port}"), SearchFormat::Searxng)
            .with_wall_time(Duration::from_millis(1500)),
    );
    let report = search(&nobody, json!({"query": "river"}))
        .await
        .error
        .unwrap();
    assert!(
        report.message.contains("failed 3 attempts")
            && report.message.contains("could not be reached"),
        "{report:?}"
    );
}

fn locara_with(home: &TestHome, service: &SearchService, wall_time: Duration) -> Locara {
    facade(
        home,
        SearchProvider::new(service.base_url(), SearchFormat::Searxng).with_wall_time(wall_time),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brave_sends_the_key_and_its_markup_is_stripped() {
    let service = SearchService::start(BRAVE_KEY);
    let home = TestHome::new();
    let endpoint = format!("{}/res/v1/web/search", service.base_url());
    let locara = facade(
        &home,
        SearchProvider::new(&endpoint, SearchFormat::Brave).with_api_key(BRAVE_KEY),
    );
    let found = search(
        &locara,
        json!({"query": "marker posts downstream alder", "max_results": 3}),
    )
    .await;
    assert_eq!(
        urls(&found)[0],
        service.url_of("examples/sample/field-notes.md", FIELD_NOTES)
    );
    assert!(results(&found).len() <= 3);
    assert_eq!(found.output.as_ref().unwrap()["provider"], "brave");
    // Brave quotes "<strong>marker</strong> <strong>posts</strong> from last year&#x27;s".
    let snippet = results(&found)[0]["snippet"].as_str().unwrap();
    assert!(
        snippet.contains("five marker posts from last year's survey") && !snippet.contains('<'),
        "{snippet}"
    );
    let sent = service.seen().pop().unwrap();
    assert_eq!(sent.path, "/res/v1/web/search");
    assert_eq!(sent.header("x-subscription-token"), Some(BRAVE_KEY));
    assert_eq!(sent.param("count"), Some("3"));
    assert_eq!(sent.param("q"), Some("marker posts downstream alder"));

    // A query nothing matches: Brave leaves `web` out; that is an empty list.
    let none = search(&locara, json!({"query": "zyzzyvaquux"})).await;
    assert!(results(&none).is_empty());

    // A wrong key: a final error (no retry) that says what to fix and never shows the key.
    let wrong = facade(
        &home,
        SearchProvider::new(&endpoint, SearchFormat::Brave).with_api_key("not-the-key"),
    );
    let before = service.seen().len();
    let report = search(&wrong, json!({"query": "river"}))
        .await
        .error
        .unwrap();
    assert_eq!(service.seen().len(), before + 1);
    assert!(
        report.message.contains("answered 401 Unauthorized")
            && report.message.contains("SUBSCRIPTION_TOKEN_INVALID")
            && report.hint.contains("LOCARA_SEARCH_API_KEY")
            && !report.message.contains("not-the-key"),
        "{report:?}"
    );

    // Brave without a key cannot be configured at all, and a key never shows in Debug.
    let error = web_search(SearchProvider::new(&endpoint, SearchFormat::Brave)).unwrap_err();
    assert!(error.to_string().contains("needs an API key"), "{error}");
    let provider = SearchProvider::new(&endpoint, SearchFormat::Brave).with_api_key(BRAVE_KEY);
    assert!(!format!("{provider:?}").contains(BRAVE_KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_composition_rule_refuses_it_without_the_host_grant() {
    let service = SearchService::start(BRAVE_KEY);
    let home = TestHome::new();
    let tool = web_search(SearchProvider::new(
        service.base_url(),
        SearchFormat::Searxng,
    ))
    .unwrap();
    for grants in [
        Grants::new().with_net(NetAccess::new().with_host("api.search.brave.com")),
        Grants::new(),
    ] {
        let locara = Locara::new(
            &LocaraConfig::new(home.path())
                .with_grants(grants)
                .with_host_tool(tool.clone()),
        )
        .unwrap();
        let error = locara
            .run(RunRequest::new("web.search", json!({"query": "river"})))
            .await
            .unwrap_err();
        assert_eq!(error.code(), "capability_denied");
        assert!(
            error.to_string().contains("network access to 127.0.0.1"),
            "{error}"
        );
    }
    assert!(service.seen().is_empty(), "a refused call sends nothing");
}

#[test]
fn provider_urls_are_checked_and_completed() {
    for (url, reason) in [
        ("ftp://search.example/", "the scheme must be http or https"),
        ("not a url", "relative URL without a base"),
        ("http://user:pw@search.example/", "carries credentials"),
    ] {
        let error = web_search(SearchProvider::new(url, SearchFormat::Searxng)).unwrap_err();
        assert!(error.to_string().contains(reason), "{url}: {error}");
    }
    // An https provider is accepted (the client speaks TLS), and its host is what is granted.
    let tool = web_search(
        SearchProvider::new("https://api.search.brave.com", SearchFormat::Brave).with_api_key("k"),
    )
    .unwrap();
    assert_eq!(
        tool.manifest().wasi_imports.net.allowed_hosts,
        ["api.search.brave.com".to_owned()]
    );
    let tool = web_search(SearchProvider::new(
        "http://[::1]:8888/searx/",
        SearchFormat::Searxng,
    ))
    .unwrap();
    assert_eq!(
        tool.manifest().wasi_imports.net.allowed_hosts,
        ["::1".to_owned()]
    );
}
