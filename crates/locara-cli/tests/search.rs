//! `locara --search-provider URL run web.search` against a search service on loopback (the
//! library tests' BM25 index over the repository's Markdown, speaking SearXNG's and Brave's
//! JSON): the host is granted by `--allow-host` or the app manifest, never by naming the
//! provider, and Brave's key comes from LOCARA_SEARCH_API_KEY.

use serde_json::json;

mod support;
use support::{Cli, Run};

#[path = "../../locara-http/tests/support/search_service.rs"]
mod search_service;
use search_service::SearchService;

const KEY: &str = "cli-brave-key-81d0";

/// `locara ARGS…` with LOCARA_SEARCH_API_KEY set to `key`, or unset.
fn run(cli: &Cli, key: Option<&str>, args: &[&str]) -> Run {
    match key {
        Some(key) => cli.run_with_env(args, &[("LOCARA_SEARCH_API_KEY", key)], &[]),
        None => cli.run_with_env(args, &[], &["LOCARA_SEARCH_API_KEY"]),
    }
}

#[test]
fn web_search_queries_the_search_provider_the_terminal_names() {
    let service = SearchService::start(KEY);
    let cli = Cli::new();
    let base = service.base_url();
    let notes = service.url_of(
        "examples/sample/field-notes.md",
        "Field notes: the river survey",
    );
    let query = "query=beavers dammed the mill race";

    let found = run(
        &cli,
        None,
        &[
            "--search-provider",
            &base,
            "--allow-host",
            "127.0.0.1",
            "run",
            "web.search",
            "--arg",
            query,
        ],
    );
    assert_eq!(found.code, 0, "{found:#?}");
    let output = found.json();
    assert_eq!(output["provider"], "searxng");
    assert_eq!(output["results"][0]["url"], notes.as_str(), "{output:#}");
    assert_eq!(output["results"].as_array().unwrap().len(), 5);

    // Naming the provider does not grant its host: the composition rule refuses the call,
    // before any request, and says which flag grants it.
    let before = service.seen().len();
    let refused = run(
        &cli,
        None,
        &[
            "--search-provider",
            &base,
            "run",
            "web.search",
            "--arg",
            query,
        ],
    );
    assert_eq!(refused.code, 2, "{refused:#?}");
    assert!(
        refused
            .stderr
            .starts_with("error[capability_denied]: web.search@")
            && refused.stderr.contains("needs network access to 127.0.0.1")
            && refused
                .stderr
                .contains("hint: let the tool reach 127.0.0.1 with `--allow-host 127.0.0.1`"),
        "{}",
        refused.stderr
    );
    assert_eq!(service.seen().len(), before);

    // With an app manifest, its grants decide.
    let app = |hosts: serde_json::Value| {
        cli.write(
            "locara.json",
            &json!({"schema_version": 1, "name": "searcher", "tools": [], "grants": {"net": {"allowed_hosts": hosts}}})
                .to_string(),
        );
    };
    app(json!([]));
    let refused = run(
        &cli,
        None,
        &[
            "--search-provider",
            &base,
            "run",
            "web.search",
            "--arg",
            query,
        ],
    );
    assert_eq!(refused.code, 2, "{refused:#?}");
    assert!(
        refused.stderr.contains("needs network access to 127.0.0.1"),
        "{}",
        refused.stderr
    );
    app(json!(["127.0.0.1"]));
    let found = run(
        &cli,
        None,
        &[
            "--search-provider",
            &base,
            "run",
            "web.search",
            "--arg",
            query,
            "--arg",
            "max_results=2",
        ],
    );
    assert_eq!(found.code, 0, "{found:#?}");
    assert_eq!(found.json()["results"].as_array().unwrap().len(), 2);
    std::fs::remove_file(cli.path("locara.json")).unwrap();

    // Brave: the key comes from the environment and goes in X-Subscription-Token.
    let brave = format!("{base}/res/v1/web/search");
    let args = [
        "--search-provider",
        brave.as_str(),
        "--search-format",
        "brave",
        "--allow-host",
        "127.0.0.1",
        "run",
        "web.search",
        "--arg",
        query,
    ];
    let found = run(&cli, Some(KEY), &args);
    assert_eq!(found.code, 0, "{found:#?}");
    assert_eq!(found.json()["provider"], "brave");
    assert_eq!(found.json()["results"][0]["url"], notes.as_str());
    assert_eq!(
        service.seen().pop().unwrap().header("x-subscription-token"),
        Some(KEY)
    );
    let unkeyed = run(&cli, None, &args);
    assert_eq!(unkeyed.code, 2, "{unkeyed:#?}");
    assert!(
        unkeyed
            .stderr
            .contains("cannot use the search provider (--search-provider)")
            && unkeyed.stderr.contains("Brave Search needs an API key")
            && unkeyed.stderr.contains("LOCARA_SEARCH_API_KEY"),
        "{}",
        unkeyed.stderr
    );
}
