//! The facade end to end: a Locara home with signed built tools, as a host uses it.

use locara_facade::{
    BackendKind, ChainRequest, FsGrant, Grants, Locara, LocaraConfig, RunRequest, SafetyTier,
};
use locara_test_artifacts::TestHome;
use serde_json::json;

fn locara(home: &TestHome, engine: BackendKind, grants: Grants) -> Locara {
    Locara::new(
        &LocaraConfig::new(home.path())
            .with_engine(engine)
            .with_grants(grants),
    )
    .expect("locara starts")
}

#[test]
fn list_search_and_describe_the_catalog() {
    let home = TestHome::new();
    let locara = locara(&home, BackendKind::Wasmtime, Grants::new());
    let ids: Vec<String> = locara.list().into_iter().map(|t| t.tool).collect();
    for id in [
        "bash.read-only@0.1.0",
        "file.edit@0.1.0",
        "filesystem.read@0.1.0",
        "text.chunk@0.1.0",
        "test.probe@0.1.0",
    ] {
        assert!(ids.contains(&id.to_owned()), "{id} missing from {ids:?}");
    }
    let hits = locara.search_tools("split text into chunks", 3);
    assert_eq!(hits[0].id, "text.chunk", "{hits:?}");
    assert!(hits[0].score.unwrap() > 0.0);
    let hits = locara.search_tools("read a file", 3);
    assert_eq!(hits[0].id, "filesystem.read", "{hits:?}");

    let description = locara.describe("text.chunk").unwrap();
    assert_eq!(description.summary.tool, "text.chunk@0.1.0");
    assert_eq!(description.input_schema["required"], json!(["text"]));
    assert_eq!(description.artifact_sha256.len(), 64);
    let error = locara.describe("text.chunker").unwrap_err();
    assert_eq!(error.code(), "not_found");
    // The closest tool first, and a count of the rest rather than the whole catalog.
    let message = error.to_string();
    assert!(
        message.starts_with("no tool `text.chunker`; available: text.chunk@0.1.0, "),
        "{message}"
    );
    let catalog = locara.list().len();
    assert!(catalog > locara_manifest::AVAILABLE_LISTED, "{catalog}");
    assert!(
        message.ends_with(&format!(
            ", and {} more",
            catalog - locara_manifest::AVAILABLE_LISTED
        )),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_reports_success_failure_and_refusal_as_agents_see_them() {
    let home = TestHome::new();
    for engine in BackendKind::ALL {
        let locara = locara(&home, engine, Grants::new());
        let ok = locara
            .run(RunRequest::new(
                "text.chunk",
                json!({"text": "One. Two. Three.", "max_chars": 6}),
            ))
            .await
            .unwrap();
        assert!(ok.ok, "{:?}", ok.error);
        assert_eq!(ok.stats.engine, engine.name());
        let wire = serde_json::to_value(&ok).unwrap();
        assert_eq!(wire["output"]["count"], json!(3), "{wire}");
        // Fuel is metered: both engines check the deadline between its slices.
        assert_eq!(wire["stats"]["limits"]["periodic"], json!(["wall_time"]));

        let refused = locara
            .run(RunRequest::new("text.chunk", json!({"text": 5})))
            .await
            .unwrap_err();
        let report = serde_json::to_value(refused.report()).unwrap();
        assert_eq!(report["code"], "invalid_input");
        assert_eq!(report["violations"][0]["pointer"], "/text");
        assert!(report["hint"].as_str().unwrap().contains("/text"));
    }
}

/// A host that bounds calls by time alone (`with_fuel_metering(false)`) gets the same outputs,
/// and each report says the fuel limit was not enforced and counts no fuel; wasmi meters
/// anyway. By default every limit is enforced and the report has no `not_enforced`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_fuel_metering_reports_say_fuel_was_not_enforced() {
    let home = TestHome::new();
    let request = || {
        RunRequest::new(
            "text.chunk",
            json!({"text": "One. Two. Three.", "max_chars": 6}),
        )
    };
    for engine in BackendKind::ALL {
        let metered = locara(&home, engine, Grants::new())
            .run(request())
            .await
            .unwrap();
        let unmetered = Locara::new(
            &LocaraConfig::new(home.path())
                .with_engine(engine)
                .with_fuel_metering(false),
        )
        .unwrap()
        .run(request())
        .await
        .unwrap();
        assert!(metered.ok && unmetered.ok, "{metered:?} {unmetered:?}");
        assert_eq!(metered.output, unmetered.output);
        let (metered, unmetered) = (
            serde_json::to_value(&metered).unwrap(),
            serde_json::to_value(&unmetered).unwrap(),
        );
        assert!(metered["stats"]["fuel_consumed"].as_u64().unwrap() > 0);
        assert_eq!(metered["stats"]["limits"].get("not_enforced"), None);
        if engine == BackendKind::Wasmtime {
            assert_eq!(unmetered["stats"]["fuel_consumed"], json!(0));
            assert_eq!(
                unmetered["stats"]["limits"]["not_enforced"],
                json!(["fuel"])
            );
        } else {
            assert!(unmetered["stats"]["fuel_consumed"].as_u64().unwrap() > 0);
            assert_eq!(unmetered["stats"]["limits"].get("not_enforced"), None);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chain_binds_an_earlier_result() {
    let home = TestHome::new();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("story.txt"), "Once upon a time. The end.").unwrap();
    let grants = Grants::new()
        .with_fs(FsGrant::new(dir.path()))
        .with_max_safety_tier(SafetyTier::ReadOnly);
    let locara = locara(&home, BackendKind::Wasmtime, grants);
    let chain = ChainRequest::new(vec![
        RunRequest::new("filesystem.read", json!({"path": "story.txt"})).with_workspace(dir.path()),
        RunRequest::new(
            "text.chunk",
            json!({"text": {"$ref": "steps.0.output.content"}, "max_chars": 18}),
        ),
    ]);
    let response = locara.run_chain(chain).await;
    assert!(response.ok, "{response:?}");
    let chunks = &response.steps[1].output.as_ref().unwrap()["chunks"];
    assert_eq!(chunks[0]["text"], "Once upon a time. ");
    assert_eq!(chunks[1]["text"], "The end.");

    let broken = ChainRequest::new(vec![
        RunRequest::new("text.chunk", json!({"text": "a"})),
        RunRequest::new(
            "text.chunk",
            json!({"text": {"$ref": "steps.0.output.content"}}),
        ),
    ]);
    let response = locara.run_chain(broken).await;
    assert!(!response.ok);
    assert_eq!(response.failed_step, Some(1));
    let error = response.error.unwrap();
    assert_eq!(error.code, "invalid_binding");
    assert_eq!(error.violations[0].pointer, "/text");
    assert!(
        error
            .message
            .contains("has no `content`; its fields are: chunks, count"),
        "{}",
        error.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_manifest_limits_the_catalog_to_what_it_declares() {
    let home = TestHome::new();
    let app = locara_facade::AppManifest::from_json(
        r#"{"schema_version": 1, "name": "demo", "tools": ["text.chunk@0.1.0"]}"#,
    )
    .unwrap();
    let locara = Locara::new(&LocaraConfig::new(home.path()).with_app(app, home.path())).unwrap();
    assert_eq!(
        locara
            .list()
            .into_iter()
            .map(|t| t.tool)
            .collect::<Vec<_>>(),
        ["text.chunk@0.1.0"]
    );
    let ok = locara
        .run(RunRequest::new("text.chunk", json!({"text": "hi"})))
        .await
        .unwrap();
    assert!(ok.ok);
    let error = locara
        .run(RunRequest::new("filesystem.read", json!({"path": "x"})))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("filesystem.read"), "{error}");
}
