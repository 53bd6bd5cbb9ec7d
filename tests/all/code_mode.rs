//! Code mode: programs in code-exec.python, code-exec.js and code-exec.lua call tools through
//! the gateway (`docs/code-mode.md`), every inner call going through the whole pipeline with the
//! app's grants, on both engines; and every refusal the gateway makes.

use std::{
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use locara_facade::{
    AppManifest, ApprovalDecision, ApprovalRequest, Approver, BackendKind, GatewayLimits, Locara,
    LocaraConfig, RunRequest, RunResponse,
};
use locara_test_artifacts::{SHARED_COMPILED_CACHE, TestHome};
use serde_json::{Value, json};

use crate::{code_exec_support::home_with, media_support::libtasn1_pdf};

/// How the app of a test is set up.
struct App<'a> {
    services: &'a [&'a str],
    tier: &'a str,
    /// A directory granted to the app, and whether read-write.
    dir: Option<(&'a Path, bool)>,
    limits: GatewayLimits,
    approver: Option<Arc<dyn Approver>>,
}

impl Default for App<'_> {
    fn default() -> Self {
        App {
            services: &["tools"],
            tier: "side_effecting",
            dir: None,
            limits: GatewayLimits::default(),
            approver: None,
        }
    }
}

/// A home with the three code-exec tools and every built-in tool.
fn home() -> TestHome {
    let home = home_with("code-exec.python");
    home.publish_upstream_tool("code-exec.js");
    home
}

/// A host over `home` for an app that may call every tool of the home, set up as `app` says.
fn host(home: &TestHome, engine: BackendKind, app: &App<'_>) -> Locara {
    let everything = Locara::new(&LocaraConfig::new(home.path())).unwrap();
    let tools: Vec<String> = everything.list().into_iter().map(|t| t.tool).collect();
    let fs: Vec<Value> = app
        .dir
        .iter()
        .map(|(path, write)| json!({"path": path, "write": write}))
        .collect();
    let manifest = AppManifest::from_json(
        &json!({
            "schema_version": 1,
            "name": "code-mode",
            "tools": tools,
            "grants": {"services": app.services, "max_safety_tier": app.tier, "fs": fs},
        })
        .to_string(),
    )
    .unwrap();
    let mut config = LocaraConfig::new(home.path())
        .with_app(manifest, home.path())
        .with_engine(engine)
        .with_compiled_cache(SHARED_COMPILED_CACHE)
        .with_gateway_limits(app.limits);
    if let Some(approver) = &app.approver {
        config = config.with_approver(Arc::clone(approver));
    }
    Locara::new(&config).unwrap()
}

/// Runs `code` in `tool`; the response, which must be a success.
async fn program(locara: &Locara, tool: &str, code: &str, extra: Value) -> RunResponse {
    let mut arguments = json!({"code": code});
    if let Value::Object(extra) = extra {
        arguments.as_object_mut().unwrap().extend(extra);
    }
    program_request(locara, RunRequest::new(tool, arguments)).await
}

async fn program_request(locara: &Locara, request: RunRequest) -> RunResponse {
    let tool = request.tool.clone();
    let response = locara.run(request).await.unwrap();
    assert!(
        response.ok,
        "{tool} on {}: {:?}\n{}",
        locara.engine().name(),
        response.error,
        response.stderr
    );
    let exit = &response.output.as_ref().unwrap()["exit_code"];
    assert_eq!(
        exit,
        0,
        "{tool} on {}: {}",
        locara.engine().name(),
        response.output.as_ref().unwrap()["stderr"]
    );
    response
}

/// The JSON the program printed last.
fn printed(response: &RunResponse) -> Value {
    let stdout = response.output.as_ref().unwrap()["stdout"]
        .as_str()
        .unwrap();
    let last = stdout.lines().last().unwrap_or_else(|| panic!("no output"));
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// The program's `files` argument: `pdf` as `manual.pdf` in its working directory.
fn manual_pdf(pdf: &[u8]) -> Value {
    use base64::Engine as _;
    json!({"files": [{
        "path": "manual.pdf",
        "encoding": "base64",
        "content": base64::engine::general_purpose::STANDARD.encode(pdf),
    }]})
}

/// The text of each of the first three pages of `pdf` as pdf.extract-text reads the whole PDF,
/// which a program's parts must match. Calling pdf.extract-text and pdf.split here also
/// compiles them, which would otherwise happen within the program's own wall time.
async fn whole_pdf_pages(locara: &Locara, pdf: &[u8]) -> Vec<String> {
    use base64::Engine as _;
    let source = json!({"base64": base64::engine::general_purpose::STANDARD.encode(pdf)});
    let whole = locara
        .run(RunRequest::new(
            "pdf.extract-text",
            json!({"source": source, "pages": "1-3"}),
        ))
        .await
        .unwrap();
    let split = locara
        .run(RunRequest::new(
            "pdf.split",
            json!({"source": source, "ranges": ["1"]}),
        ))
        .await
        .unwrap();
    assert!(split.ok, "{:?}", split.error);
    whole.output.as_ref().unwrap()["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_program_splits_a_pdf_and_extracts_each_part() {
    let home = home();
    let pdf = std::fs::read(libtasn1_pdf()).unwrap();
    let code = r#"
import json, pathlib, locara
parts = locara.tools.pdf_split(source=pathlib.Path("manual.pdf"), ranges=["1-2", "3"])
texts = []
for part in parts.files:
    text = locara.call("pdf.extract-text", {"source": part})
    texts.append([page["text"] for page in text["pages"]])
print(json.dumps({"names": [f.name for f in parts.files], "sizes": [f.size for f in parts.files], "texts": texts}))
"#;
    let files = manual_pdf(&pdf);
    for engine in BackendKind::ALL {
        let locara = host(&home, engine, &App::default());
        let pages = whole_pdf_pages(&locara, &pdf).await;
        let response = program(&locara, "code-exec.python", code, files.clone()).await;
        let seen = printed(&response);
        assert_eq!(seen["names"].as_array().unwrap().len(), 2, "{seen}");
        assert!(!pages[0].trim().is_empty());
        assert_eq!(seen["texts"][0], json!([pages[0], pages[1]]), "{engine:?}");
        assert_eq!(seen["texts"][1], json!([pages[2]]), "{engine:?}");
        // The host sees every inner call, each one ran.
        let calls: Vec<(&str, bool)> = response
            .calls
            .iter()
            .map(|c| (c.tool.as_str(), c.ok))
            .collect();
        assert_eq!(calls.len(), 3, "{calls:?}");
        assert!(calls[0].0.starts_with("pdf.split@") && calls.iter().all(|c| c.1));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_js_program_searches_a_workspace_then_edits_a_file_unless_it_is_read_only() {
    let home = home();
    let code = r#"
const found = await locara.tools.filesystemSearch({ query: "hello" });
const path = found.output.matches[0].path;
let outcome;
try {
  const edit = await locara.call("file.edit", { path, edits: [{ old: "hello", new: "goodbye" }] });
  outcome = { path, replacements: edit.output.replacements };
} catch (error) {
  outcome = { path, code: error.code, isLocaraError: error instanceof locara.LocaraError, message: error.message };
}
print(JSON.stringify(outcome));
"#;
    for engine in BackendKind::ALL {
        for write in [true, false] {
            let workspace = tempfile::tempdir().unwrap();
            std::fs::write(workspace.path().join("notes.txt"), "hello world\n").unwrap();
            std::fs::write(workspace.path().join("other.txt"), "nothing here\n").unwrap();
            let app = App {
                dir: Some((workspace.path(), write)),
                ..App::default()
            };
            let locara = host(&home, engine, &app);
            let mut request = RunRequest::new("code-exec.js", json!({"code": code}));
            request.workspace = Some(workspace.path().to_path_buf());
            let seen = printed(&program_request(&locara, request).await);
            assert_eq!(seen["path"], "notes.txt", "{seen}");
            let text = std::fs::read_to_string(workspace.path().join("notes.txt")).unwrap();
            if write {
                assert_eq!(seen["replacements"], 1, "{engine:?}: {seen}");
                assert_eq!(text, "goodbye world\n");
            } else {
                assert_eq!(seen["code"], "capability_denied", "{engine:?}: {seen}");
                assert_eq!(seen["isLocaraError"], true);
                assert!(
                    seen["message"].as_str().unwrap().contains("read-only"),
                    "{seen}"
                );
                assert_eq!(text, "hello world\n", "a refused edit changed nothing");
            }
        }
    }
}

/// Files pass between tools in Lua as in Python: a call's files are saved under `calls/<n>/`
/// and come back as `locara.file`s, which pass by value to the next call; a file that cannot
/// be read fails the call (`failed`), as it would in the tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lua_program_passes_the_files_of_one_call_to_the_next() {
    let home = home();
    let pdf = std::fs::read(libtasn1_pdf()).unwrap();
    let code = r#"
local parts = locara.tools.pdf_split{source = locara.file("manual.pdf"), ranges = {"1-2", "3"}}
local paths = {}
for i, part in ipairs(parts.files) do
  paths[#paths + 1] = part.path
  local text = locara.call("pdf.extract-text", {source = part})
  for _, page in ipairs(text.output.pages) do io.write(page.text, "\n<<page>>\n") end
end
local ok, err = pcall(locara.call, "pdf.extract-text", {source = locara.file("missing.pdf")})
local saved = io.open(paths[2], "rb")
local size = #saved:read("a")
saved:close()
return table.concat(paths, ","), err.code, err.message, size == parts.files[2].size_bytes
"#;
    let files = manual_pdf(&pdf);
    for engine in BackendKind::ALL {
        let locara = host(&home, engine, &App::default());
        let pages = whole_pdf_pages(&locara, &pdf).await;
        let response = program(&locara, "code-exec.lua", code, files.clone()).await;
        let output = response.output.as_ref().unwrap();
        let result = output["result"].as_str().unwrap();
        let fields: Vec<&str> = result.split('\t').collect();
        let paths: Vec<&str> = fields[0].split(',').collect();
        assert_eq!(paths.len(), 2, "{engine:?}: {result}");
        assert!(paths.iter().all(|p| p.starts_with("calls/1/")), "{result}");
        assert_eq!(fields[1], "failed", "{result}");
        assert!(
            fields[2].contains("cannot read the file missing.pdf"),
            "{result}"
        );
        assert_eq!(fields[3], "true", "the saved part has its size: {result}");
        let read: Vec<&str> = output["stdout"]
            .as_str()
            .unwrap()
            .split("\n<<page>>\n")
            .filter(|t| !t.is_empty())
            .collect();
        assert_eq!(read, pages, "{engine:?}");
        // The failed call never reached the host: two calls for the parts, after the split.
        assert_eq!(response.calls.len(), 3, "{:?}", response.calls);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lua_program_calls_text_chunk() {
    let home = TestHome::new();
    let code = r#"
local r = locara.call("text.chunk", {text = "One sentence. Another one. A third.", max_chars = 16})
local lazy = rawget(r, "stats") == nil
local stats = r.stats
local kept = rawget(r, "stats") == stats and r.stats == stats
local again = locara.tools.text_chunk{text = "Short.", max_chars = 100}
local ok, err = pcall(locara.call, "text.chunk", {text = 5})
local cycle = {}
cycle.self = cycle
local refused = {}
for _, args in ipairs({{text = 0/0}, {1, text = "mixed"}, cycle, {text = print}}) do
  local ok, message = pcall(locara.call, "text.chunk", args)
  refused[#refused + 1] = (not ok) and tostring(message) or "ran"
end
local _, no_args = pcall(locara.call, "text.chunk")
return #r.output.chunks, r.output.chunks[1].text, #again.output.chunks, r.tool, err.code, err.violations[1].pointer, table.concat(refused, "|"), r.stats.engine, r.stats.limits.max_fds, #r.files, no_args.code, no_args.violations[1].message, tostring(lazy), tostring(kept)
"#;
    for engine in BackendKind::ALL {
        let locara = host(&home, engine, &App::default());
        let response = program(&locara, "code-exec.lua", code, json!({})).await;
        let result = response.output.as_ref().unwrap()["result"]
            .as_str()
            .unwrap();
        let fields: Vec<&str> = result.split('\t').collect();
        assert_eq!(fields[0], "3", "{engine:?}: {result}");
        assert_eq!(fields[1].trim(), "One sentence.", "{result}");
        assert_eq!(fields[2], "1", "{result}");
        assert!(fields[3].starts_with("text.chunk@"), "{result}");
        assert_eq!(fields[4], "invalid_input", "{result}");
        assert_eq!(fields[5], "/text", "{result}");
        // Arguments that are not JSON are refused in the program, before any call.
        let refused: Vec<&str> = fields[6].split('|').collect();
        assert!(refused[0].contains("NaN or infinite"), "{result}");
        assert!(refused[1].contains("neither all strings"), "{result}");
        assert!(refused[2].contains("nest deeper than 64"), "{result}");
        assert!(refused[3].contains("cannot be a function"), "{result}");
        // The call's stats come back, and an empty `files`; no arguments are `{}`.
        assert_eq!(fields[7], format!("{engine:?}").to_lowercase(), "{result}");
        assert!(fields[8].parse::<u32>().unwrap() > 0, "{result}");
        assert_eq!(fields[9], "0", "{result}");
        assert_eq!(fields[10], "invalid_input", "{result}");
        assert!(fields[11].contains("text"), "{result}");
        // The stats were asked for when first read, and kept in the table after.
        assert_eq!(fields[12], "true", "{result}");
        assert_eq!(fields[13], "true", "{result}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inner_calls_stats_are_sent_when_the_program_reads_them() {
    let home = home();
    // Python: `Result.stats` asks the host the first time it is read; on the host channel, a
    // call with `"stats": false` is answered without them and with the number that asks.
    let python = r#"
import io, json, locara
r = locara.call("text.chunk", {"text": "One. Two.", "max_chars": 5})
lazy = r._stats is None
stats = r.stats
channel = io.open("/tmp/.locara-host", "r+b", buffering=0)
def ask(request):
    channel.write((json.dumps({"service": "tools", "request": request}) + "\n").encode())
    return json.loads(channel.readline())
chunk = {"op": "call", "tool": "text.chunk", "arguments": {"text": "One."}}
answer = ask({**chunk, "stats": False})["ok"]
print(json.dumps({
    "lazy": lazy, "read_twice": r.stats is stats, "engine": stats["engine"],
    "max_fds": stats["limits"]["max_fds"], "answer": sorted(answer),
    "asked": ask({"op": "stats", "call": answer["call"]})["ok"]["stats"]["engine"],
    "eager": sorted(ask(chunk)["ok"]),
    "unknown": ask({"op": "stats", "call": 99}), "bad": ask({**chunk, "stats": "yes"}),
}))
"#;
    let js = r#"
const r = await locara.call("text.chunk", { text: "One. Two.", max_chars: 5 });
print(JSON.stringify({ keys: Object.keys(r), engine: r.stats.engine, max_fds: r.stats.limits.max_fds, same: r.stats === r.stats }));
"#;
    for engine in BackendKind::ALL {
        let name = format!("{engine:?}").to_lowercase();
        let locara = host(&home, engine, &App::default());
        let seen = printed(&program(&locara, "code-exec.python", python, json!({})).await);
        assert_eq!(seen["lazy"], true, "{seen}");
        assert_eq!(seen["read_twice"], true, "{seen}");
        assert_eq!(seen["engine"], name, "{seen}");
        assert!(seen["max_fds"].as_u64() > Some(0), "{seen}");
        assert_eq!(
            seen["answer"],
            json!(["call", "ok", "output", "tool"]),
            "{seen}"
        );
        assert_eq!(seen["asked"], name, "{seen}");
        assert_eq!(
            seen["eager"],
            json!(["ok", "output", "stats", "tool"]),
            "{seen}"
        );
        let unknown = seen["unknown"]["failed"].as_str().unwrap_or_default();
        assert!(unknown.contains("no call 99 kept its stats"), "{seen}");
        let bad = seen["bad"]["failed"].as_str().unwrap_or_default();
        assert!(bad.contains("`stats` must be true or false"), "{seen}");

        let seen = printed(&program(&locara, "code-exec.js", js, json!({})).await);
        assert_eq!(
            seen["keys"],
            json!(["tool", "output", "files", "stats"]),
            "{seen}"
        );
        assert_eq!(seen["engine"], name, "{seen}");
        assert!(seen["max_fds"].as_u64() > Some(0), "{seen}");
        assert_eq!(seen["same"], true, "{seen}");
    }
}

/// A Python program that makes `calls` and prints, for each, the output's keys or the error.
fn python_calls(calls: &str) -> String {
    format!(
        r#"
import json, locara
seen = []
for tool, arguments in {calls}:
    try:
        seen.append({{"ok": sorted(locara.call(tool, arguments).output)}})
    except locara.LocaraError as error:
        seen.append({{"code": error.code, "limit": error.limit, "message": error.message}})
print(json.dumps(seen))
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_refuses_what_the_app_did_not_grant() {
    let home = home();
    home.publish_probe_as("test.admin", "privileged");
    let chunk = r#"[("text.chunk", {"text": "A. B.", "max_chars": 10})]"#;
    for engine in BackendKind::ALL {
        // Without `tools` in the app's grants, code-exec.python still runs, but cannot call.
        let app = App {
            services: &[],
            ..App::default()
        };
        let seen = printed(
            &program(
                &host(&home, engine, &app),
                "code-exec.python",
                &python_calls(chunk),
                json!({}),
            )
            .await,
        );
        assert_eq!(seen[0]["code"], "capability_denied", "{engine:?}: {seen}");
        assert!(
            seen[0]["message"]
                .as_str()
                .unwrap()
                .contains("did not grant `tools`"),
            "{seen}"
        );
        // code-exec.lua too, with the error object its callers get.
        let lua = r#"
local ok, err = pcall(locara.call, "text.chunk", {text = "A. B."})
return tostring(ok), err.tool, err.code, err.message, err.hint
"#;
        let response = program(&host(&home, engine, &app), "code-exec.lua", lua, json!({})).await;
        let result = response.output.as_ref().unwrap()["result"]
            .as_str()
            .unwrap();
        let fields: Vec<&str> = result.split('\t').collect();
        assert_eq!(
            fields[..3],
            ["false", "text.chunk", "capability_denied"],
            "{engine:?}: {result}"
        );
        assert!(fields[3].contains("did not grant `tools`"), "{result}");
        assert!(fields[4].contains("must grant `tools`"), "{result}");

        // An inner tool needing what the app lacks (the network, for web.fetch) is refused.
        let seen = printed(
            &program(
                &host(&home, engine, &App::default()),
                "code-exec.python",
                &python_calls(r#"[("web.fetch", {"url": "http://127.0.0.1:9/"})]"#),
                json!({}),
            )
            .await,
        );
        assert_eq!(seen[0]["code"], "capability_denied", "{engine:?}: {seen}");

        // A privileged inner call is put to the approver, who says no.
        let approver = Arc::new(Denier::default());
        let app = App {
            tier: "privileged",
            approver: Some(approver.clone()),
            ..App::default()
        };
        let seen = printed(
            &program(
                &host(&home, engine, &app),
                "code-exec.python",
                &python_calls(r#"[("test.admin", {"op": "echo"})]"#),
                json!({}),
            )
            .await,
        );
        assert_eq!(seen[0]["code"], "approval_denied", "{engine:?}: {seen}");
        assert_eq!(
            approver.asked.lock().unwrap().as_slice(),
            ["test.admin@0.1.0"]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inner_calls_count_against_the_outer_calls_limits() {
    let home = home();
    let chunk = r#"("text.chunk", {"text": "A. B.", "max_chars": 10})"#;
    for engine in BackendKind::ALL {
        // The fourth call of three allowed is refused, naming the limit.
        let app = App {
            limits: GatewayLimits::default().with_max_calls(3),
            ..App::default()
        };
        let locara = host(&home, engine, &app);
        let code = python_calls(&format!("[{chunk}] * 4"));
        let response = program(&locara, "code-exec.python", &code, json!({})).await;
        let seen = printed(&response);
        for call in &seen.as_array().unwrap()[..3] {
            assert_eq!(call["ok"], json!(["chunks", "count"]), "{engine:?}: {seen}");
        }
        assert_eq!(seen[3]["code"], "limit_exceeded", "{seen}");
        assert_eq!(seen[3]["limit"], "tool_calls", "{seen}");
        assert_eq!(response.calls.len(), 4);
        // Each inner call, run or refused, says how long the host took over it, time the
        // program spent waiting inside the outer call.
        let host_ms: Vec<f64> = response.calls.iter().map(|c| c.elapsed_ms).collect();
        assert!(host_ms.iter().all(|&ms| ms > 0.0), "{host_ms:?}");
        assert!(
            host_ms.iter().sum::<f64>() <= response.stats.elapsed_ms,
            "{host_ms:?} against the outer call's {} ms",
            response.stats.elapsed_ms
        );

        // An answer beyond the bytes the call's programs may receive is refused; the call ran,
        // and the host's list says it was not delivered.
        let app = App {
            limits: GatewayLimits::default().with_output_bytes(1),
            ..App::default()
        };
        let locara = host(&home, engine, &app);
        let code = python_calls(&format!("[{chunk}]"));
        let response = program(&locara, "code-exec.python", &code, json!({})).await;
        let seen = printed(&response);
        assert_eq!(seen[0]["limit"], "gateway_output_bytes", "{seen}");
        assert!(!response.calls[0].ok);
        assert_eq!(response.calls[0].error.as_deref(), Some("limit_exceeded"));

        // Python runs Lua, which calls text.chunk: depth 2, within the default, and refused
        // at a limit of 1.
        let lua = r#"local ok, r = pcall(locara.call, "text.chunk", {text = "A. B.", max_chars = 10})
if ok then return #r.output.chunks end
return r.code .. " " .. tostring(r.limit)"#;
        let code = format!(
            r#"
import json, locara
r = locara.call("code-exec.lua", {{"code": {lua:?}}})
print(json.dumps(r.output["result"]))
"#,
            lua = lua
        );
        for (depth, expected) in [(2, "1"), (1, "limit_exceeded depth")] {
            let app = App {
                limits: GatewayLimits::default().with_max_depth(depth),
                ..App::default()
            };
            let locara = host(&home, engine, &app);
            // Compiled before the program runs, not within its wall time.
            program(&locara, "code-exec.lua", "return 1", json!({})).await;
            let seen = printed(&program(&locara, "code-exec.python", &code, json!({})).await);
            assert_eq!(seen, expected, "{engine:?}, depth {depth}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outer_deadline_stops_a_program_waiting_on_an_inner_call() {
    let home = home();
    home.publish_probe_with("test.slow", "read_only", |m| {
        m["limits"]["wall_time_ms"] = 120_000.into();
    });
    let code = r#"
import locara
locara.call("test.slow", {"op": "sleep", "ms": 100000})
print("not reached")
"#;
    for engine in BackendKind::ALL {
        let locara = host(&home, engine, &App::default());
        let started = Instant::now();
        let response = locara
            .run(RunRequest::new("code-exec.python", json!({"code": code})))
            .await
            .unwrap();
        let took = started.elapsed();
        assert!(!response.ok, "{engine:?}");
        let error = response.error.unwrap();
        assert_eq!(error.code, "limit_exceeded", "{engine:?}: {error:?}");
        assert_eq!(error.limit.as_deref(), Some("wall_time"), "{error:?}");
        // code-exec.python's 15 s, not the inner call's 100 s.
        assert!(took < Duration::from_secs(40), "{engine:?}: {took:?}");
    }
}

/// Says no to every privileged call, remembering which.
#[derive(Debug, Default)]
struct Denier {
    asked: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Approver for Denier {
    async fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.asked.lock().unwrap().push(request.tool.to_string());
        ApprovalDecision::deny("test host", "refused by the test")
    }
}
