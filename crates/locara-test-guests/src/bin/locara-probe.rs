//! `locara-probe`: an adversarial `wasm32-wasip1` guest for the sandbox conformance suite.
//!
//! It reads one JSON object `{"op": "...", ...}` from stdin, does that one thing and prints a
//! JSON result on stdout. Some ops never finish on purpose (`spin`, `membomb`, `flood`,
//! `stderr_flood`): the host's limits must stop them. The others report what the sandbox
//! allowed, without panicking (except `panic`, which exists to panic).
//!
//! | op             | input fields                | does                                              |
//! |----------------|-----------------------------|---------------------------------------------------|
//! | `echo`         | anything                    | prints `{"echo": <input>}`                        |
//! | `spin`         |                             | loops forever                                     |
//! | `membomb`      |                             | allocates and touches 1 MiB blocks forever        |
//! | `flood`        |                             | writes 64 KiB chunks to stdout forever            |
//! | `stderr_flood` |                             | writes 64 KiB chunks to stderr forever            |
//! | `fds`          | `count` (10000)             | opens `/tmp/f{i}` files, keeping every handle     |
//! | `escape`       |                             | tries to read outside the preopens                |
//! | `env`          |                             | prints env vars, args and the working directory   |
//! | `write`        | `path`, `content`           | writes a file                                     |
//! | `read`         | `path`                      | reads a file                                      |
//! | `list`         | `path`                      | lists a directory                                 |
//! | `hardlink`     | `path`, `content`           | hard-links `path` to `content`, appends to it     |
//! | `sleep`        | `ms`                        | sleeps (`poll_oneoff`)                            |
//! | `panic`        |                             | panics                                            |
//! | `exit`         | `code`, `stderr`            | writes `stderr` to stderr and exits with `code`   |
//! | `output`       | `bytes`                     | prints `{"data": "xxx…"}` with `bytes` x's        |
//! | `raw`          | `text`                      | writes `text` verbatim to stdout                  |
//! | `time_random`  |                             | prints the clock and 16 random bytes              |

use std::hint::black_box;
use std::io::{self, Read, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

fn main() {
    let mut raw = Vec::new();
    if let Err(e) = io::stdin().read_to_end(&mut raw) {
        fail(2, &format!("cannot read stdin: {e}"));
    }
    let input: Value = match serde_json::from_slice(&raw) {
        Ok(v) => v,
        Err(e) => fail(2, &format!("stdin is not valid JSON: {e}")),
    };
    let op = input
        .get("op")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match op.as_str() {
        "echo" => emit(&json!({ "echo": input })),
        "spin" => spin(),
        "membomb" => membomb(),
        "flood" => flood(&mut io::stdout()),
        "stderr_flood" => flood(&mut io::stderr()),
        "fds" => fds(u64_field(&input, "count").unwrap_or(10_000)),
        "escape" => escape(),
        "env" => env(),
        "write" => write(str_field(&input, "path"), str_field(&input, "content")),
        "read" => read(str_field(&input, "path")),
        "list" => list(str_field(&input, "path")),
        "hardlink" => hardlink(str_field(&input, "path"), str_field(&input, "content")),
        "sleep" => sleep(u64_field(&input, "ms").unwrap_or(0)),
        "panic" => panic!("locara-probe: deliberate panic"),
        "exit" => {
            let code = input.get("code").and_then(Value::as_i64).unwrap_or(1);
            let code = i32::try_from(code).unwrap_or(1);
            fail(code, str_field(&input, "stderr"))
        }
        "output" => output(u64_field(&input, "bytes").unwrap_or(0)),
        "raw" => write_stdout(str_field(&input, "text").as_bytes()),
        "time_random" => time_random(),
        other => fail(2, &format!("unknown op {other:?}")),
    }
}

fn str_field<'a>(input: &'a Value, name: &str) -> &'a str {
    input.get(name).and_then(Value::as_str).unwrap_or("")
}

fn u64_field(input: &Value, name: &str) -> Option<u64> {
    input.get(name).and_then(Value::as_u64)
}

/// Writes `bytes` to stdout and flushes; errors are ignored (the host may have closed it).
fn write_stdout(bytes: &[u8]) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

fn emit(value: &Value) {
    let mut bytes = value.to_string().into_bytes();
    bytes.push(b'\n');
    write_stdout(&bytes);
}

/// Writes `message` to stderr and exits with `code`.
fn fail(code: i32, message: &str) -> ! {
    let mut err = io::stderr().lock();
    let _ = err.write_all(message.as_bytes()).and_then(|()| err.flush());
    std::process::exit(code)
}

fn spin() -> ! {
    let mut counter = 0u64;
    loop {
        counter = black_box(counter.wrapping_add(1));
    }
}

fn membomb() -> ! {
    const BLOCK: usize = 1024 * 1024;
    let mut kept: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut block = vec![0u8; BLOCK];
        // Touch every page so the memory is really used.
        for i in (0..BLOCK).step_by(4096) {
            block[i] = 1;
        }
        kept.push(black_box(block));
        black_box(&kept);
    }
}

fn flood(stream: &mut dyn Write) -> ! {
    let chunk = vec![b'x'; 64 * 1024];
    loop {
        // Keep writing even if the host starts refusing: stopping us is the host's job.
        let _ = black_box(stream.write_all(&chunk));
    }
}

fn fds(count: u64) {
    let mut files = Vec::new();
    let mut error = Value::Null;
    for i in 0..count {
        match std::fs::File::create(format!("/tmp/f{i}")) {
            Ok(f) => files.push(f),
            Err(e) => {
                error = Value::String(e.to_string());
                break;
            }
        }
    }
    emit(&json!({ "opened": files.len(), "error": error }));
}

fn escape() {
    let mut results = Map::new();
    let mut record = |name: &str, result: io::Result<Vec<u8>>| {
        let text = match result {
            Ok(bytes) => format!(
                "ok: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(20)])
            ),
            Err(e) => format!("err: {e}"),
        };
        results.insert(name.to_owned(), Value::String(text));
    };
    record(
        "workspace_dotdot",
        std::fs::read("/workspace/../etc/passwd"),
    );
    record("tmp_dotdot", std::fs::read("/tmp/../etc/passwd"));
    record("absolute", std::fs::read("/etc/passwd"));
    record("relative_dotdot", std::fs::read("../etc/passwd"));
    record(
        "symlink_absolute",
        symlink("/etc/passwd", "/tmp/link").and_then(|()| std::fs::read("/tmp/link")),
    );
    record(
        "symlink_dotdot",
        symlink("..", "/tmp/up").and_then(|()| std::fs::read("/tmp/up/etc/passwd")),
    );
    record(
        "read_dir_root",
        std::fs::read_dir("/").map(|entries| {
            let names: Vec<String> = entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.join(",").into_bytes()
        }),
    );
    emit(&json!({ "results": results }));
}

/// Creates a symlink; `std::fs::soft_link` is the only stable API that does so on WASI.
#[expect(
    deprecated,
    reason = "soft_link is the only stable symlink API available on wasip1"
)]
fn symlink(original: &str, link: &str) -> io::Result<()> {
    std::fs::soft_link(original, link)
}

fn env() {
    let env: Vec<String> = std::env::vars_os()
        .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
        .collect();
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cwd = match std::env::current_dir() {
        Ok(p) => p.display().to_string(),
        Err(e) => format!("err: {e}"),
    };
    emit(&json!({ "env": env, "args": args, "cwd": cwd }));
}

/// Hard-links `from` to `to`, then tries to append to `to`: a link from a read-only directory
/// into a writable one must not become a way to write the original.
fn hardlink(from: &str, to: &str) {
    let linked = std::fs::hard_link(from, to);
    let appended = std::fs::OpenOptions::new()
        .append(true)
        .open(to)
        .and_then(|mut f| f.write_all(b" pwned"));
    let show = |r: io::Result<()>| match r {
        Ok(()) => "ok".to_owned(),
        Err(e) => format!("err: {e}"),
    };
    emit(&json!({ "link": show(linked), "append": show(appended) }));
}

fn write(path: &str, content: &str) {
    match std::fs::write(path, content) {
        Ok(()) => emit(&json!({ "ok": true })),
        Err(e) => emit(&json!({ "ok": false, "error": e.to_string() })),
    }
}

fn read(path: &str) {
    match std::fs::read(path) {
        Ok(bytes) => emit(&json!({ "ok": true, "content": String::from_utf8_lossy(&bytes) })),
        Err(e) => emit(&json!({ "ok": false, "error": e.to_string() })),
    }
}

fn list(path: &str) {
    let result = std::fs::read_dir(path).and_then(|entries| {
        let mut names = Vec::new();
        for entry in entries {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    });
    match result {
        Ok(names) => emit(&json!({ "ok": true, "entries": names })),
        Err(e) => emit(&json!({ "ok": false, "error": e.to_string() })),
    }
}

fn sleep(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
    emit(&json!({ "slept_ms": ms }));
}

fn output(bytes: u64) {
    let Ok(n) = usize::try_from(bytes) else {
        fail(2, "bytes does not fit in memory")
    };
    let mut out = Vec::with_capacity(n + 12);
    out.extend_from_slice(b"{\"data\":\"");
    out.resize(out.len() + n, b'x');
    out.extend_from_slice(b"\"}\n");
    write_stdout(&out);
}

fn time_random() {
    let time_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let mut random = [0u8; 16];
    let random = getrandom::fill(&mut random).map(|()| random);
    let time = match time_ms {
        Ok(ms) => json!(ms),
        Err(e) => json!(format!("err: {e}")),
    };
    let random = match random {
        Ok(bytes) => json!(bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()),
        Err(e) => json!(format!("err: {e}")),
    };
    emit(&json!({ "time_ms": time, "random": random }));
}
