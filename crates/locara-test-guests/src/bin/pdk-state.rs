//! `test.state`: a `locara-pdk` tool that uses the host's state capabilities — the app's `kv`
//! store, `progress` reports and random numbers (seeded by the caller or not) — so the tests
//! can check each through the whole pipeline, on both engines.

use locara_pdk::{JsonSchema, ToolError, kv, progress, tool};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// What to do: `get`, `set`, `delete`, `list`, `count` (add one to a counter key),
    /// `random` (that many random bytes, in hex) or `progress` (a task of that many steps).
    op: String,
    /// The key, for `get`, `set`, `delete` and `count`; the prefix for `list`.
    #[serde(default)]
    key: String,
    /// The value, for `set`.
    #[serde(default)]
    value: Option<Value>,
    /// How many random bytes, or progress steps.
    #[serde(default)]
    n: u32,
}

/// Keeps state for the tests: the app's key-value pairs, progress reports, random bytes.
#[tool(id = "test.state")]
fn state(args: Args) -> Result<Value, ToolError> {
    Ok(match args.op.as_str() {
        "get" => json!({"value": kv::get::<Value>(&args.key)?}),
        "set" => {
            kv::set(&args.key, &args.value.unwrap_or(Value::Null))?;
            json!({})
        }
        "delete" => json!({"deleted": kv::delete(&args.key)?}),
        "list" => json!({"keys": kv::list(&args.key)?}),
        "count" => {
            let n = kv::get::<u64>(&args.key)?.unwrap_or(0) + 1;
            kv::set(&args.key, &n)?;
            json!({"count": n})
        }
        "random" => {
            let mut bytes = vec![0; args.n as usize];
            getrandom::fill(&mut bytes).map_err(|e| ToolError::failed(e.to_string()))?;
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            json!({"hex": hex})
        }
        "progress" => {
            let task = progress::Task::start("Counting", Some(u64::from(args.n)));
            for i in 0..args.n {
                task.step(Some(&format!("step {}", i + 1)));
            }
            task.done(Some(&format!("counted to {}", args.n)));
            json!({"steps": args.n})
        }
        other => return Err(ToolError::bad_args(format!("unknown op `{other}`"))),
    })
}
