//! The state capabilities a wasm tool may be granted (`test.state`, a `locara-pdk` guest): the
//! app's `kv` store, `progress` reports heard through the facade, and random numbers a caller
//! may seed, on both engines.

use std::{
    path::Path,
    sync::{Arc, Mutex},
};

use locara_facade::{
    AppManifest, BackendKind, Locara, LocaraConfig, Progress, ProgressEvent, RunRequest,
    RunResponse,
};
use locara_test_artifacts::{PDK_STATE, PDK_STATE_MANIFEST, TestHome};
use serde_json::{Value, json};

fn home() -> TestHome {
    let home = TestHome::new();
    home.publish(
        &home.registry(),
        Path::new(PDK_STATE),
        Path::new(PDK_STATE_MANIFEST),
    )
    .unwrap();
    home
}

/// An app named `name` that may call `test.state` and is granted `services`.
fn app(home: &TestHome, name: &str, services: &[&str], engine: BackendKind) -> Locara {
    let app = AppManifest::from_json(
        &json!({
            "schema_version": 1,
            "name": name,
            "tools": ["test.state@0.1.0"],
            "grants": {"services": services, "max_safety_tier": "side_effecting"},
        })
        .to_string(),
    )
    .unwrap();
    let config = LocaraConfig::new(home.path())
        .with_app(app, home.path())
        .with_engine(engine);
    Locara::new(&config).unwrap()
}

async fn state(locara: &Locara, arguments: Value) -> Value {
    let response = locara
        .run(RunRequest::new("test.state", arguments.clone()))
        .await
        .unwrap_or_else(|e| panic!("{arguments}: {e}"));
    assert!(response.ok, "{arguments}: {:?}", response.error);
    response.output.unwrap()
}

/// Runs `request` with a progress callback; the response and every report heard, in order.
async fn watched(locara: &Locara, request: RunRequest) -> (RunResponse, Vec<Progress>) {
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let response = locara
        .run_with_progress(
            request,
            Arc::new(move |p: &Progress| sink.lock().unwrap().push(p.clone())),
        )
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    (response, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv_persists_across_hosts_and_apps_never_share_it() {
    let home = home();
    for engine in [BackendKind::Wasmtime, BackendKind::Wasmi] {
        let notes = app(&home, "notes", &["kv"], engine);
        let first = state(&notes, json!({"op": "count", "key": "visits"})).await;
        let second = state(&notes, json!({"op": "count", "key": "visits"})).await;
        assert_eq!(
            second["count"].as_u64(),
            Some(first["count"].as_u64().unwrap() + 1)
        );
    }
    // A new host on the same home (as a new process would be) sees what the last one kept.
    let notes = app(&home, "notes", &["kv"], BackendKind::Wasmtime);
    assert_eq!(
        state(&notes, json!({"op": "get", "key": "visits"})).await,
        json!({"value": 4})
    );
    state(
        &notes,
        json!({"op": "set", "key": "drafts/a", "value": {"title": "A"}}),
    )
    .await;
    state(
        &notes,
        json!({"op": "set", "key": "drafts/b", "value": [1, 2]}),
    )
    .await;
    assert_eq!(
        state(&notes, json!({"op": "list", "key": "drafts/"})).await,
        json!({"keys": ["drafts/a", "drafts/b"]})
    );
    assert_eq!(
        state(&notes, json!({"op": "delete", "key": "drafts/a"})).await,
        json!({"deleted": true})
    );
    assert_eq!(
        state(&notes, json!({"op": "get", "key": "drafts/a"})).await,
        json!({"value": null})
    );

    // Another app on the same home has a namespace of its own.
    let other = app(&home, "other", &["kv"], BackendKind::Wasmtime);
    assert_eq!(
        state(&other, json!({"op": "get", "key": "visits"})).await,
        json!({"value": null})
    );
    assert_eq!(
        state(&other, json!({"op": "list", "key": ""})).await,
        json!({"keys": []})
    );

    // A value above the size limit is refused with the reason, and nothing is stored.
    let big = "x".repeat(70_000);
    let response = other
        .run(RunRequest::new(
            "test.state",
            json!({"op": "set", "key": "big", "value": big}),
        ))
        .await
        .unwrap();
    let error = response.error.unwrap();
    assert!(error.message.contains("above the 65536"), "{error:?}");

    // An app that does not grant `kv` cannot run a tool that needs it.
    let denied = app(&home, "no-kv", &[], BackendKind::Wasmtime);
    let error = denied
        .run(RunRequest::new(
            "test.state",
            json!({"op": "get", "key": "visits"}),
        ))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "capability_denied", "{error}");
    assert!(error.to_string().contains("`kv`"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_facade_caller_in_order_when_granted() {
    let home = home();
    for engine in [BackendKind::Wasmtime, BackendKind::Wasmi] {
        let granted = app(&home, "watched", &["kv", "progress"], engine);
        let (response, seen) = watched(
            &granted,
            RunRequest::new("test.state", json!({"op": "progress", "n": 3})),
        )
        .await;
        assert!(response.ok, "{:?}", response.error);
        let events: Vec<_> = seen.iter().map(|p| p.event.clone()).collect();
        assert_eq!(
            events,
            [
                ProgressEvent::Started { total: Some(3) },
                ProgressEvent::Step {
                    done: 1,
                    total: Some(3),
                    message: Some("step 1".to_owned())
                },
                ProgressEvent::Step {
                    done: 2,
                    total: Some(3),
                    message: Some("step 2".to_owned())
                },
                ProgressEvent::Step {
                    done: 3,
                    total: Some(3),
                    message: Some("step 3".to_owned())
                },
                ProgressEvent::Done {
                    done: 3,
                    summary: Some("counted to 3".to_owned())
                },
            ],
            "{engine:?}"
        );
        assert!(
            seen.iter()
                .all(|p| p.tool == "test.state@0.1.0" && p.task == 1 && p.title == "Counting")
        );

        // Without the grant the tool still runs, and reports nothing.
        let silent = app(&home, "unwatched", &["kv"], engine);
        let (response, seen) = watched(
            &silent,
            RunRequest::new("test.state", json!({"op": "progress", "n": 3})),
        )
        .await;
        assert_eq!(response.output, Some(json!({"steps": 3})));
        assert!(seen.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_makes_random_numbers_repeat_on_both_engines() {
    let home = home();
    let random = |seed: Option<u64>| {
        let mut request = RunRequest::new("test.state", json!({"op": "random", "n": 32}));
        if let Some(seed) = seed {
            request = request.with_seed(seed);
        }
        request
    };
    let mut seeded = Vec::new();
    let mut unseeded = Vec::new();
    for engine in [BackendKind::Wasmtime, BackendKind::Wasmi] {
        let locara = app(&home, "dice", &["kv"], engine);
        for seed in [Some(7), Some(7), Some(8)] {
            let response = locara.run(random(seed)).await.unwrap();
            seeded.push(response.output.unwrap()["hex"].clone());
        }
        let response = locara.run(random(None)).await.unwrap();
        unseeded.push(response.output.unwrap()["hex"].clone());
    }
    // Seed 7 gives one stream on both engines and every run; seed 8 another.
    assert_eq!(seeded[0], seeded[1]);
    assert_eq!(seeded[0], seeded[3]);
    assert_eq!(seeded[0], seeded[4]);
    assert_eq!(seeded[2], seeded[5]);
    assert_ne!(seeded[0], seeded[2]);
    // Without a seed, random stays random.
    assert_ne!(unseeded[0], unseeded[1]);
    assert_ne!(unseeded[0], seeded[0]);
    assert_eq!(seeded[0].as_str().unwrap().len(), 64);
}

/// Programs' random numbers under a seed: Python's `random` (seeded from WASI's `random_get`)
/// and Lua's `math.random` (seeded by the tool from it) repeat on both engines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_python_and_lua_programs_repeat_on_both_engines() {
    for (tool, code) in [
        (
            "code-exec.python",
            "import random; print(random.random(), random.randint(1, 10**9))",
        ),
        (
            "code-exec.lua",
            "print(math.random(), math.random(1, 10^9))",
        ),
    ] {
        let (_home, hosts) = crate::code_exec_support::engines(tool);
        let mut seeded = Vec::new();
        let mut unseeded = Vec::new();
        for locara in &hosts {
            for seed in [Some(42), Some(42), None] {
                let mut request = RunRequest::new(tool, json!({"code": code}));
                if let Some(seed) = seed {
                    request = request.with_seed(seed);
                }
                let response = locara.run(request).await.unwrap();
                assert!(response.ok, "{tool}: {:?}", response.error);
                let stdout = response.output.unwrap()["stdout"].clone();
                if seed.is_some() {
                    seeded.push(stdout);
                } else {
                    unseeded.push(stdout);
                }
            }
        }
        assert!(
            seeded.windows(2).all(|w| w[0] == w[1]),
            "{tool}: {seeded:?}"
        );
        assert_ne!(unseeded[0], unseeded[1], "{tool}");
        assert_ne!(unseeded[0], seeded[0], "{tool}");
    }
}

/// A host over `home` for an app named `name` that may call `tool`, granted `services`.
fn code_app(home: &TestHome, tool: &str, services: &[&str], engine: BackendKind) -> Locara {
    let app = AppManifest::from_json(
        &json!({
            "schema_version": 1,
            "name": name_of(tool),
            "tools": [format!("{tool}@0.1.0")],
            "grants": {"services": services},
        })
        .to_string(),
    )
    .unwrap();
    let config = LocaraConfig::new(home.path())
        .with_app(app, home.path())
        .with_engine(engine)
        .with_compiled_cache(locara_test_artifacts::SHARED_COMPILED_CACHE);
    Locara::new(&config).unwrap()
}

fn name_of(tool: &str) -> String {
    tool.replace('.', "-")
}

/// The same program in each language: a task of two steps, done, then one step too many,
/// whose error message the program prints.
const PROGRESS_PROGRAMS: [(&str, &str); 3] = [
    (
        "code-exec.lua",
        "local t = locara.progress('Summing', 2)\n\
         t:step('first half')\nt:step('second half')\nt:done('sum is 10')\n\
         local ok, err = pcall(t.step, t, 'too late')\nprint(err)",
    ),
    (
        "code-exec.python",
        "import locara\nt = locara.progress('Summing', 2)\n\
         t.step('first half'); t.step('second half'); t.done('sum is 10')\n\
         try:\n    t.step('too late')\nexcept RuntimeError as e:\n    print(e)",
    ),
    (
        "code-exec.js",
        "const t = locara.progress('Summing', 2);\n\
         t.step('first half'); t.step('second half'); t.done('sum is 10');\n\
         try { t.step('too late'); } catch (e) { print(e.message); }",
    ),
];

/// `locara.progress` in Lua (a host import), Python and JavaScript (prebuilt interpreters,
/// through the host channel at `/tmp/.locara-host`): a program's task reaches the facade caller on both
/// engines, and a program misusing it gets its language's error, not a failed host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn programs_in_every_language_report_progress() {
    let expected = [
        ProgressEvent::Started { total: Some(2) },
        ProgressEvent::Step {
            done: 1,
            total: Some(2),
            message: Some("first half".to_owned()),
        },
        ProgressEvent::Step {
            done: 2,
            total: Some(2),
            message: Some("second half".to_owned()),
        },
        ProgressEvent::Done {
            done: 2,
            summary: Some("sum is 10".to_owned()),
        },
    ];
    for (tool, code) in PROGRESS_PROGRAMS {
        let home = crate::code_exec_support::home_with(tool);
        for engine in [BackendKind::Wasmtime, BackendKind::Wasmi] {
            let locara = code_app(&home, tool, &["progress"], engine);
            let (response, seen) =
                watched(&locara, RunRequest::new(tool, json!({"code": code}))).await;
            assert!(response.ok, "{tool} on {engine:?}: {:?}", response.error);
            let output = response.output.unwrap();
            let stdout = output["stdout"].as_str().unwrap();
            assert!(
                stdout.contains("this progress task is done"),
                "{tool}: {output}"
            );
            let events: Vec<_> = seen.iter().map(|p| p.event.clone()).collect();
            assert_eq!(events, expected, "{tool} on {engine:?}");
            assert!(
                seen.iter().all(|p| p.title == "Summing"),
                "{tool}: {seen:?}"
            );
        }
    }
}

/// Without the app's `progress` grant a program's reports go nowhere and it runs as usual,
/// in each language (Python's task also works as a `with` block).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_grant_progress_does_nothing() {
    let programs = [
        (
            "code-exec.lua",
            "local t = locara.progress('Idle', 1)\nt:step('one')\nt:done()\nprint('ran')",
        ),
        (
            "code-exec.python",
            "import locara\nwith locara.progress('Idle', 1) as t:\n    t.step('one')\nprint('ran')",
        ),
        (
            "code-exec.js",
            "const t = locara.progress('Idle', 1); t.step('one'); t.done(); print('ran')",
        ),
    ];
    for (tool, code) in programs {
        let home = crate::code_exec_support::home_with(tool);
        let locara = code_app(&home, tool, &[], BackendKind::Wasmtime);
        let (response, seen) = watched(&locara, RunRequest::new(tool, json!({"code": code}))).await;
        assert!(response.ok, "{tool}: {:?}", response.error);
        assert_eq!(response.output.unwrap()["stdout"], json!("ran\n"), "{tool}");
        assert!(seen.is_empty(), "{tool}: {seen:?}");
    }
}

/// A store that cannot be opened fails the call that needed it, and the next call tries
/// again: the host outlives a home that was unwritable for a moment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv_opens_again_after_a_failed_open() {
    let home = home();
    let blocker = home.path().join("state");
    std::fs::write(&blocker, "not a directory").unwrap();
    let notes = app(&home, "notes", &["kv"], BackendKind::Wasmtime);
    let response = notes
        .run(RunRequest::new(
            "test.state",
            json!({"op": "count", "key": "visits"}),
        ))
        .await
        .unwrap();
    assert!(!response.ok, "{:?}", response.output);
    std::fs::remove_file(&blocker).unwrap();
    let counted = state(&notes, json!({"op": "count", "key": "visits"})).await;
    assert_eq!(counted["count"], json!(1), "{counted}");
}

/// The host channel answers only what the call was granted: a program with `progress` asks
/// for the network and for the app's kv store and is denied both (code-exec.python declares
/// neither), a line that is not a request is answered as such, and a program granted no
/// service is denied everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_channel_answers_only_what_was_granted() {
    let tool = "code-exec.python";
    let home = crate::code_exec_support::home_with(tool);
    let code = r#"channel = open('/tmp/.locara-host', 'r+b', buffering=0)
def ask(line):
    channel.write(line)
    return channel.read(65536).decode()
print(ask(b'not json\n'), end='')
print(ask(b'{"service": "web.fetch", "request": {"url": "http://127.0.0.1:9/"}}\n'), end='')
print(ask(b'{"service": "kv", "request": {"op": "get", "key": "k"}}\n'), end='')
print(ask(b'{"service": "progress", "request": {"op": "start", "title": "t"}}\n'), end='')
import json, marshal
channel.write(b'{"service": "progress", "request": {"op": "start", "title": "m"}, "answer": "marshal"}\n')
head, _, body = channel.read(65536).partition(b"\n")
answer = json.loads(head)
if "marshal" in answer and len(body) == answer["marshal"]:
    print(json.dumps({"marshal": marshal.loads(body)}))
else:
    print(head.decode())
print(ask(b'{"service": "progress", "request": {"op": "start", "title": "t"}, "answer": "xml"}\n'), end='')
"#;
    let granted = code_app(&home, tool, &["progress", "kv"], BackendKind::Wasmtime);
    let (response, seen) = watched(&granted, RunRequest::new(tool, json!({"code": code}))).await;
    assert!(response.ok, "{:?}", response.error);
    let stdout = response.output.unwrap()["stdout"]
        .as_str()
        .unwrap()
        .to_owned();
    let answers: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = answers
        .iter()
        .map(|a| a.as_object().unwrap().keys().next().unwrap().as_str())
        .collect();
    assert_eq!(
        kinds,
        ["invalid", "denied", "denied", "ok", "marshal", "invalid"],
        "{stdout}"
    );
    assert!(answers[3]["ok"]["task"].is_u64(), "{stdout}");
    // The same answer in CPython's `marshal` format, as the Python driver asks for it.
    assert_eq!(
        answers[4]["marshal"]["task"],
        answers[3]["ok"]["task"].as_u64().unwrap() + 1,
        "{stdout}"
    );
    assert!(
        answers[5]["invalid"]
            .as_str()
            .unwrap()
            .contains("\"marshal\""),
        "{stdout}"
    );
    assert_eq!(seen.len(), 2, "{seen:?}");

    // code-exec.python declares `tools`, so a program always finds the channel; granted
    // nothing, it is denied everything.
    let ungranted = code_app(&home, tool, &[], BackendKind::Wasmtime);
    let (response, seen) = watched(&ungranted, RunRequest::new(tool, json!({"code": code}))).await;
    assert!(response.ok, "{:?}", response.error);
    let stdout = response.output.unwrap()["stdout"]
        .as_str()
        .unwrap()
        .to_owned();
    let kinds: Vec<String> = stdout
        .lines()
        .map(|l| {
            let answer: Value = serde_json::from_str(l).unwrap();
            answer.as_object().unwrap().keys().next().unwrap().clone()
        })
        .collect();
    assert_eq!(
        kinds,
        ["invalid", "denied", "denied", "denied", "denied", "invalid"],
        "{stdout}"
    );
    assert!(seen.is_empty(), "{seen:?}");

    // A tool that declares no host service finds no channel at all.
    home.publish_probe_as("test.plain", "read_only");
    let plain = Locara::new(&LocaraConfig::new(home.path())).unwrap();
    let response = plain
        .run(RunRequest::new(
            "test.plain",
            json!({"op": "read", "path": "/tmp/.locara-host"}),
        ))
        .await
        .unwrap();
    let output = response.output.unwrap();
    assert_eq!(output["ok"], false, "{output}");
    assert!(
        output["error"].as_str().unwrap().contains("No such file"),
        "{output}"
    );
}
