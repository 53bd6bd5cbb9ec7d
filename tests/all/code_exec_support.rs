//! What the code-exec tests share: a home with the tool, a `Locara` per engine, and calls that
//! must succeed or must fail, each assertion naming the program and the engine.

use locara_facade::{BackendKind, ErrorReport, Locara, LocaraConfig, RunRequest, RunResponse};
use locara_test_artifacts::{SHARED_COMPILED_CACHE, TestHome, UPSTREAM_TOOLS};
use serde_json::Value;

/// A home with `tool` published, and a `Locara` over it for each engine. An interpreter tool
/// is fetched and published on demand; large modules are compiled once per machine.
pub(crate) fn engines(tool: &str) -> (TestHome, Vec<Locara>) {
    let home = home_with(tool);
    let hosts = BackendKind::ALL
        .into_iter()
        .map(|engine| {
            let config = LocaraConfig::new(home.path())
                .with_engine(engine)
                .with_compiled_cache(SHARED_COMPILED_CACHE);
            Locara::new(&config).expect("locara starts")
        })
        .collect();
    (home, hosts)
}

/// A home with `tool` published (an interpreter tool is fetched and published on demand).
pub(crate) fn home_with(tool: &str) -> TestHome {
    let home = TestHome::new();
    if UPSTREAM_TOOLS.iter().any(|(id, _)| *id == tool) {
        home.publish_upstream_tool(tool);
    }
    home
}

async fn call(locara: &Locara, tool: &str, arguments: Value) -> RunResponse {
    locara
        .run(RunRequest::new(tool, arguments))
        .await
        .expect("the call could run")
}

/// The output of a call that must succeed.
pub(crate) async fn output(locara: &Locara, tool: &str, arguments: Value) -> Value {
    let response = call(locara, tool, arguments.clone()).await;
    assert!(
        response.ok,
        "{} on {}: {:?}\nstderr: {}",
        arguments["code"],
        locara.engine().name(),
        response.error,
        response.stderr
    );
    response.output.expect("a successful call has output")
}

/// The error report of a call that must fail, and what the tool wrote to stderr.
pub(crate) async fn failure(
    locara: &Locara,
    tool: &str,
    arguments: Value,
) -> (ErrorReport, String) {
    let response = call(locara, tool, arguments.clone()).await;
    assert!(
        !response.ok,
        "{} on {} should fail: {:?}",
        arguments["code"],
        locara.engine().name(),
        response.output
    );
    (
        response.error.expect("a failed call has an error"),
        response.stderr,
    )
}
