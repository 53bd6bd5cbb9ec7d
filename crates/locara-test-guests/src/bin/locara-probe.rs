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
//! | `recurse`      |                             | recurses until the stack overflows                |
//! | `bytes`        | `hex`                       | writes the hex-decoded bytes verbatim to stdout   |
//! | `files`        | `count`, `bytes`            | creates `count` files of `bytes` bytes in `/tmp`  |
//! | `churn`        | `count`, `bytes`            | rewrites `/tmp/churn` `count` times, removing it every other time |
//! | `hold_fds`     | `count`, `ms`               | opens `count` files, then sleeps holding them     |
//! | `hostloop`     | `call`                      | calls one host function in a loop forever         |
//! | `random_big`   | `bytes`                     | asks for `bytes` random bytes in one call         |
//! | `abi_abuse`    |                             | calls WASI with bad pointers, ids and counts      |
//! | `paths`        | `paths`, `content`          | reads (and writes `content` to) each path         |
//! | `plant`        | `steps`                     | makes dirs, files, symlinks and hard links in order (and lists dirs: `ok: a,b`) |
//! | `service`      | `service`, `request`, `buf` | asks a host service (`locara_host`), reading the answer into a `buf`-byte buffer (default: its length) |
//! | `channel`      | `lines`                     | writes the strings `lines`, each ended by a newline, to the host channel in one write, then prints `{"answers": …}`, all it reads back |
//! | `grow`         | `path`, `chunk`, `count`    | writes `count` chunks of `chunk` bytes (chunk `i` all `i % 251`) to a new file at `path`, then reads it back from the start and checks it |
//! | `staged`       | `path`, `touch`             | reads the file at `path` every way a reader does (stat, read, seek, tell, pread); with `touch`, writes `/tmp/out/touched` and creates and removes `/tmp/out/gone` after its first 4 bytes, then tries to write to it and lists its directory |
//!
//! `spin` takes an optional `path`: a file it writes in `/tmp` first, so that a stopped call
//! has a temp dir to clean up.
//!
//! Any op takes `"disk": true`: the probe first creates and removes `/tmp/.disk`, which the
//! host cannot do in memory (it removes nothing there), so the call's temp dir is made on disk
//! from the start (the host keeps it in memory until a call needs the disk), and tests can see
//! what becomes of it.

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
    if input.get("disk") == Some(&Value::Bool(true))
        && let Err(e) =
            std::fs::write("/tmp/.disk", b"").and_then(|()| std::fs::remove_file("/tmp/.disk"))
    {
        fail(1, &format!("cannot create and remove /tmp/.disk: {e}"));
    }
    match op.as_str() {
        "echo" => emit(&json!({ "echo": input })),
        "spin" => {
            let touch = str_field(&input, "path");
            if !touch.is_empty() {
                let _ = std::fs::write(touch, "spinning");
            }
            spin()
        }
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
        "recurse" => emit(&json!({ "depth": recurse(0) })),
        "bytes" => write_stdout(&hex(str_field(&input, "hex"))),
        "files" => files(
            u64_field(&input, "count").unwrap_or(10_000),
            u64_field(&input, "bytes").unwrap_or(16),
        ),
        "churn" => churn(
            u64_field(&input, "count").unwrap_or(100),
            u64_field(&input, "bytes").unwrap_or(4096),
        ),
        "hold_fds" => hold_fds(
            u64_field(&input, "count").unwrap_or(8),
            u64_field(&input, "ms").unwrap_or(60_000),
        ),
        "hostloop" => hostloop(str_field(&input, "call")),
        "random_big" => random_big(u64_field(&input, "bytes").unwrap_or(0)),
        "abi_abuse" => abi_abuse(),
        "paths" => paths(&input),
        "plant" => plant(&input),
        "service" => service(
            str_field(&input, "service"),
            str_field(&input, "request"),
            u64_field(&input, "buf"),
        ),
        "channel" => channel(&input),
        "grow" => grow(
            str_field(&input, "path"),
            u64_field(&input, "chunk").unwrap_or(1),
            u64_field(&input, "count").unwrap_or(0),
        ),
        "staged" => staged(
            str_field(&input, "path"),
            input.get("touch").and_then(Value::as_bool).unwrap_or(false),
        ),
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

fn grow(path: &str, chunk: u64, count: u64) {
    use std::io::{Seek as _, SeekFrom};
    let result = (|| -> io::Result<Value> {
        if let Some(parent) = std::path::Path::new(path).parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        let chunk = usize::try_from(chunk).unwrap_or(1).max(1);
        for i in 0..count {
            file.write_all(&vec![(i % 251) as u8; chunk])?;
        }
        let len = file.stream_position()?;
        file.seek(SeekFrom::Start(0))?;
        let mut back = Vec::new();
        file.read_to_end(&mut back)?;
        let intact = back.len() as u64 == len
            && back
                .chunks(chunk)
                .enumerate()
                .all(|(i, c)| c.iter().all(|&b| b == (i % 251) as u8));
        Ok(json!({ "len": len, "intact": intact }))
    })();
    match result {
        Ok(report) => emit(&json!({ "ok": true, "report": report })),
        Err(e) => emit(&json!({ "ok": false, "error": e.to_string() })),
    }
}

fn staged(path: &str, touch: bool) {
    use std::io::{Seek as _, SeekFrom};
    let result = (|| -> io::Result<Value> {
        let mut file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        let path_len = std::fs::metadata(path)?.len();
        let mut head = [0u8; 4];
        file.read_exact(&mut head)?;
        let after_head = file.stream_position()?;
        let mut report = Map::new();
        if touch {
            std::fs::create_dir_all("/tmp/out")?;
            std::fs::write("/tmp/out/touched", b"t")?;
            // A removal: the host cannot do it in memory, so the temp dir goes to disk here.
            std::fs::write("/tmp/out/gone", b"")?;
            std::fs::remove_file("/tmp/out/gone")?;
            report.insert("write_refused".into(), json!(file.write(b"x").is_err()));
            let mut names =
                std::fs::read_dir(std::path::Path::new(path).parent().unwrap_or("/".as_ref()))?
                    .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect::<io::Result<Vec<_>>>()?;
            names.sort();
            report.insert("listed".into(), json!(names));
        }
        let mut rest = Vec::new();
        file.read_to_end(&mut rest)?;
        let tail_at = file.seek(SeekFrom::End(-3))?;
        let mut tail = Vec::new();
        file.read_to_end(&mut tail)?;
        let past_end = file.seek(SeekFrom::Start(len + 10))?;
        let mut nothing = Vec::new();
        file.read_to_end(&mut nothing)?;
        let before_start_refused = file.seek(SeekFrom::Current(-(len as i64) - 20)).is_err();
        let mut middle = [0u8; 3];
        let middle_read = pread(&file, &mut middle, 2)?;
        let position_kept = file.stream_position()?;
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        report.extend([
            ("len".to_owned(), json!(len)),
            ("path_len".to_owned(), json!(path_len)),
            ("head".to_owned(), json!(text(&head))),
            ("after_head".to_owned(), json!(after_head)),
            ("rest".to_owned(), json!(text(&rest))),
            ("tail_at".to_owned(), json!(tail_at)),
            ("tail".to_owned(), json!(text(&tail))),
            ("past_end".to_owned(), json!(past_end)),
            ("past_end_read".to_owned(), json!(nothing.len())),
            (
                "before_start_refused".to_owned(),
                json!(before_start_refused),
            ),
            ("pread".to_owned(), json!(text(&middle[..middle_read]))),
            ("position_kept".to_owned(), json!(position_kept)),
        ]);
        Ok(Value::Object(report))
    })();
    match result {
        Ok(report) => emit(&json!({ "ok": true, "report": report })),
        Err(e) => emit(&json!({ "ok": false, "error": e.to_string() })),
    }
}

/// Reads into `buf` at `offset` without moving the file's position (`fd_pread`).
#[cfg(target_os = "wasi")]
fn pread(file: &std::fs::File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::fd::AsRawFd as _;
    let iov = raw::Iovec {
        buf: buf.as_mut_ptr(),
        len: buf.len(),
    };
    let mut read = 0u32;
    let fd = u32::try_from(file.as_raw_fd()).map_err(io::Error::other)?;
    // SAFETY: `iov` points at `buf`, alive and writable for the call; `read` is a live local.
    #[allow(unsafe_code, reason = "fd_pread has no stable std wrapper on WASI")]
    let errno = unsafe { raw::fd_pread(fd, &iov, 1, offset, &mut read) };
    if errno != 0 {
        return Err(io::Error::other(format!("fd_pread: errno {errno}")));
    }
    Ok(read as usize)
}

#[cfg(not(target_os = "wasi"))]
fn pread(file: &std::fs::File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
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

/// Recurses without bound; the frame is kept alive so the compiler cannot turn it into a loop.
fn recurse(depth: u64) -> u64 {
    // Never true; it only keeps the recursion from being unconditional in the compiler's eyes.
    if black_box(depth) == u64::MAX {
        return 0;
    }
    let frame = black_box([depth; 16]);
    black_box(recurse(depth + 1)) + frame[black_box(3)]
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len() / 2)
        .filter_map(|i| u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// Creates `count` files under `/tmp/many/`, closing each one; reports how many it made, or
/// fails (exit 1) naming the file it could not write, as a real tool would.
fn files(count: u64, bytes: u64) {
    let content = vec![b'f'; usize::try_from(bytes).unwrap_or(0)];
    if let Err(e) = std::fs::create_dir_all("/tmp/many") {
        fail(1, &format!("cannot create /tmp/many: {e}"));
    }
    for i in 0..count {
        let path = format!("/tmp/many/f{i}");
        if let Err(e) = std::fs::write(&path, &content) {
            fail(
                1,
                &format!("cannot write {path} (file {} of {count}): {e}", i + 1),
            );
        }
    }
    emit(&json!({ "created": count }));
}

/// Writes `/tmp/churn` (`bytes` bytes) `count` times, truncating it each time and removing it
/// every other time: much written, little held at once.
fn churn(count: u64, bytes: u64) {
    let content = vec![b'c'; usize::try_from(bytes).unwrap_or(0)];
    for i in 0..count {
        if let Err(e) = std::fs::write("/tmp/churn", &content) {
            fail(1, &format!("cannot write /tmp/churn (time {}): {e}", i + 1));
        }
        if i % 2 == 1
            && let Err(e) = std::fs::remove_file("/tmp/churn")
        {
            fail(1, &format!("cannot remove /tmp/churn: {e}"));
        }
    }
    emit(&json!({ "written": count }));
}

/// Opens `count` files and sleeps `ms` with all of them open.
fn hold_fds(count: u64, ms: u64) {
    let mut held = Vec::new();
    for i in 0..count {
        match std::fs::File::create(format!("/tmp/held{i}")) {
            Ok(f) => held.push(f),
            Err(e) => fail(2, &format!("cannot open /tmp/held{i}: {e}")),
        }
    }
    std::thread::sleep(Duration::from_millis(ms));
    emit(&json!({ "held": held.len() }));
}

/// Calls one cheap host function forever: the guest spends its time in the host, not in wasm.
fn hostloop(call: &str) -> ! {
    let mut buf = [0u8; 8];
    loop {
        match call {
            "clock" => {
                black_box(SystemTime::now());
            }
            "yield" => std::thread::yield_now(),
            "random" => {
                let _ = black_box(getrandom::fill(&mut buf));
            }
            "stat" => {
                let _ = black_box(std::fs::metadata("/tmp"));
            }
            _ => {
                let _ = black_box(io::stdout().write(b""));
            }
        }
    }
}

/// Asks for `bytes` random bytes in a single `random_get`.
fn random_big(bytes: u64) {
    let Ok(n) = usize::try_from(bytes) else {
        fail(2, "bytes does not fit in memory")
    };
    let mut buf = vec![0u8; n];
    match getrandom::fill(&mut buf) {
        Ok(()) => {
            let nonzero = buf.iter().filter(|&&b| b != 0).count();
            emit(&json!({ "len": n, "nonzero": nonzero }));
        }
        Err(e) => emit(&json!({ "len": n, "error": e.to_string() })),
    }
}

/// For each path: what reading it gives, and, when `content` is set, what writing it gives.
fn paths(input: &Value) {
    let content = input.get("content").and_then(Value::as_str);
    let mut results = Vec::new();
    for path in input
        .get("paths")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let read = match std::fs::read(path) {
            Ok(bytes) => format!("ok: {}", String::from_utf8_lossy(&bytes)),
            Err(e) => format!("err: {e}"),
        };
        let write = content.map(|content| match std::fs::write(path, content) {
            Ok(()) => "ok".to_owned(),
            Err(e) => format!("err: {e}"),
        });
        results.push(json!({ "path": path, "read": read, "write": write }));
    }
    emit(&json!({ "results": results }));
}

/// Builds a file tree, step by step: `{"mkdir": p}`, `{"write": [p, content]}`,
/// `{"symlink": [target, link]}`, `{"hardlink": [from, to]}`, `{"remove": p}`, `{"rmdir": p}`. Each step's
/// result is reported, and a failed step does not stop the rest: the point is to plant links
/// for the host to trip over after the call.
fn plant(input: &Value) {
    let pair = |v: &Value| -> (String, String) {
        let s = |i: usize| v.get(i).and_then(Value::as_str).unwrap_or("").to_owned();
        (s(0), s(1))
    };
    let mut results = Vec::new();
    for step in input
        .get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let result = if let Some(p) = step.get("mkdir").and_then(Value::as_str) {
            std::fs::create_dir_all(p)
        } else if let Some(v) = step.get("write") {
            let (p, content) = pair(v);
            std::fs::write(p, content)
        } else if let Some(v) = step.get("symlink") {
            let (target, link) = pair(v);
            symlink(&target, &link)
        } else if let Some(v) = step.get("hardlink") {
            let (from, to) = pair(v);
            std::fs::hard_link(from, to)
        } else if let Some(p) = step.get("remove").and_then(Value::as_str) {
            std::fs::remove_file(p)
        } else if let Some(p) = step.get("rmdir").and_then(Value::as_str) {
            std::fs::remove_dir_all(p)
        } else if let Some(p) = step.get("list").and_then(Value::as_str) {
            let listed = std::fs::read_dir(p).and_then(|entries| {
                let mut names = entries
                    .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect::<io::Result<Vec<_>>>()?;
                names.sort();
                Ok(names)
            });
            results.push(match listed {
                Ok(names) => format!("ok: {}", names.join(",")),
                Err(e) => format!("err: {e}"),
            });
            continue;
        } else {
            Err(io::Error::other(format!("unknown step {step}")))
        };
        results.push(match result {
            Ok(()) => "ok".to_owned(),
            Err(e) => format!("err: {e}"),
        });
    }
    emit(&json!({ "results": results }));
}

/// Raw WASI calls with arguments no well-behaved libc would pass. Each must come back as an
/// errno (or a clean trap of the guest), never as a host crash or an out-of-bounds host access.
#[cfg(target_os = "wasi")]
#[allow(unsafe_code, reason = "raw WASI imports are the point of this op")]
mod raw {
    #[link(wasm_import_module = "wasi_snapshot_preview1")]
    unsafe extern "C" {
        pub(super) fn clock_time_get(id: u32, precision: u64, out: *mut u64) -> u16;
        pub(super) fn clock_res_get(id: u32, out: *mut u64) -> u16;
        pub(super) fn random_get(buf: *mut u8, len: usize) -> u16;
        pub(super) fn poll_oneoff(subs: *const u8, events: *mut u8, n: u32, out: *mut u32) -> u16;
        pub(super) fn fd_write(fd: u32, iovs: *const u8, n: u32, out: *mut u32) -> u16;
        pub(super) fn fd_read(fd: u32, iovs: *const u8, n: u32, out: *mut u32) -> u16;
        pub(super) fn fd_pread(
            fd: u32,
            iovs: *const Iovec,
            n: u32,
            offset: u64,
            out: *mut u32,
        ) -> u16;
        pub(super) fn path_open(
            fd: u32,
            dirflags: u32,
            path: *const u8,
            path_len: usize,
            oflags: u16,
            base: u64,
            inheriting: u64,
            fdflags: u16,
            out: *mut u32,
        ) -> u16;
        pub(super) fn fd_close(fd: u32) -> u16;
        pub(super) fn sock_accept(fd: u32, flags: u32, out: *mut u32) -> u16;
        pub(super) fn sock_recv(
            fd: u32,
            iovs: *const u8,
            n: u32,
            flags: u32,
            out: *mut u32,
            out_flags: *mut u32,
        ) -> u16;
        pub(super) fn sock_send(fd: u32, iovs: *const u8, n: u32, flags: u32, out: *mut u32)
        -> u16;
        pub(super) fn sock_shutdown(fd: u32, how: u32) -> u16;
        pub(super) fn args_get(argv: *mut *mut u8, buf: *mut u8) -> u16;
    }

    /// A WASI `iovec`: where to read into, and how much.
    #[repr(C)]
    pub(super) struct Iovec {
        pub(super) buf: *mut u8,
        pub(super) len: usize,
    }

    /// An address far past the end of any memory this probe will have.
    pub(super) const WILD: usize = 0xFFFF_FFF0;

    pub(super) fn wild<T>() -> *mut T {
        WILD as *mut T
    }

    /// Runs every abusive call and returns `(name, errno)` pairs.
    pub(super) fn calls() -> Vec<(&'static str, u16)> {
        let mut out = 0u64;
        let mut n = 0u32;
        let iov = [0u8; 8];
        let sub = [0xFFu8; 48];
        let mut events = [0u8; 32];
        // SAFETY: every pointer is either to a live local or deliberately wild; the host must
        // check bounds and never write through a wild pointer into this module's memory.
        unsafe {
            vec![
                ("clock_time_get bad id", clock_time_get(99, 0, &mut out)),
                (
                    "clock_time_get max id",
                    clock_time_get(u32::MAX, 0, &mut out),
                ),
                ("clock_time_get wild out", clock_time_get(0, 0, wild())),
                ("clock_res_get bad id", clock_res_get(42, &mut out)),
                ("clock_res_get wild out", clock_res_get(1, wild())),
                ("random_get wild buf", random_get(wild(), 64)),
                (
                    "random_get huge len",
                    random_get(events.as_mut_ptr(), usize::MAX),
                ),
                (
                    "poll_oneoff zero",
                    poll_oneoff(sub.as_ptr(), events.as_mut_ptr(), 0, &mut n),
                ),
                (
                    "poll_oneoff bad tag",
                    poll_oneoff(sub.as_ptr(), events.as_mut_ptr(), 1, &mut n),
                ),
                (
                    "poll_oneoff huge n",
                    poll_oneoff(sub.as_ptr(), events.as_mut_ptr(), u32::MAX, &mut n),
                ),
                (
                    "poll_oneoff wild subs",
                    poll_oneoff(wild(), events.as_mut_ptr(), 1, &mut n),
                ),
                (
                    "fd_write huge iovs",
                    fd_write(1, iov.as_ptr(), u32::MAX, &mut n),
                ),
                ("fd_write wild iovs", fd_write(1, wild(), 4, &mut n)),
                ("fd_read wild iovs", fd_read(0, wild(), 4, &mut n)),
                ("fd_write bad fd", fd_write(9999, iov.as_ptr(), 1, &mut n)),
                (
                    "path_open wild path",
                    path_open(3, 0, wild(), 16, 0, u64::MAX, u64::MAX, 0, &mut n),
                ),
                (
                    "path_open huge path",
                    path_open(3, 0, sub.as_ptr(), usize::MAX, 0, 0, 0, 0, &mut n),
                ),
                ("sock_accept stdout", sock_accept(1, 0, &mut n)),
                ("sock_accept bad fd", sock_accept(9999, 0, &mut n)),
                (
                    "sock_recv stdin",
                    sock_recv(0, iov.as_ptr(), 1, 0, &mut n, wild()),
                ),
                ("sock_send wild", sock_send(1, wild(), 4, 0, wild())),
                ("sock_shutdown preopen", sock_shutdown(3, 2)),
                ("fd_close stdin", fd_close(0)),
                ("fd_close bad fd", fd_close(u32::MAX)),
                ("args_get wild", args_get(wild(), wild())),
            ]
        }
    }
}

#[cfg(not(target_os = "wasi"))]
fn service(_: &str, _: &str, _: Option<u64>) {
    fail(
        2,
        "service calls the host: build the probe for wasm32-wasip1",
    )
}

/// Writes `input.lines` to the host channel in one write, then prints all it reads back.
fn channel(input: &Value) {
    let mut request = String::new();
    for line in input["lines"].as_array().map_or(&[][..], Vec::as_slice) {
        request.push_str(line.as_str().unwrap_or_default());
        request.push('\n');
    }
    let mut channel = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/tmp/.locara-host")
        .unwrap_or_else(|e| fail(2, &format!("cannot open the host channel: {e}")));
    if let Err(e) = channel.write_all(request.as_bytes()) {
        fail(2, &format!("cannot write to the host channel: {e}"));
    }
    let mut answers = String::new();
    if let Err(e) = channel.read_to_string(&mut answers) {
        fail(2, &format!("cannot read the host channel: {e}"));
    }
    emit(&json!({ "answers": answers }));
}

/// Asks host service `name`, then prints `{"errno", "len", "response_errno", "answer"}`:
/// the errno of `call`, the answer's length, the errno of `response` and the answer as text.
#[cfg(target_os = "wasi")]
fn service(name: &str, request: &str, buf: Option<u64>) {
    #[allow(unsafe_code, reason = "the host-service imports are raw by nature")]
    mod host {
        #[link(wasm_import_module = "locara_host")]
        unsafe extern "C" {
            fn call(
                name: *const u8,
                name_len: usize,
                request: *const u8,
                request_len: usize,
                response_len: *mut u32,
            ) -> u16;
            fn response(buf: *mut u8, buf_len: usize) -> u16;
        }

        pub(super) fn ask(name: &str, request: &str) -> (u16, u32) {
            let mut len = 0u32;
            // SAFETY: both slices and `len` are live for the call; the host writes only `len`.
            let errno = unsafe {
                call(
                    name.as_ptr(),
                    name.len(),
                    request.as_ptr(),
                    request.len(),
                    &mut len,
                )
            };
            (errno, len)
        }

        pub(super) fn take(buf: &mut [u8]) -> u16 {
            // SAFETY: the host writes at most `buf.len()` bytes into `buf`.
            unsafe { response(buf.as_mut_ptr(), buf.len()) }
        }
    }
    let (errno, len) = host::ask(name, request);
    let size = buf.map_or(len as usize, |b| b as usize);
    let mut answer = vec![0u8; size];
    let response_errno = host::take(&mut answer);
    answer.truncate(len as usize);
    emit(&json!({
        "errno": errno,
        "len": len,
        "response_errno": response_errno,
        "answer": String::from_utf8_lossy(&answer),
    }));
}

#[cfg(not(target_os = "wasi"))]
fn abi_abuse() {
    fail(
        2,
        "abi_abuse makes raw WASI calls: build the probe for wasm32-wasip1",
    )
}

#[cfg(target_os = "wasi")]
fn abi_abuse() {
    let results: Map<String, Value> = raw::calls()
        .into_iter()
        .map(|(name, errno)| (name.to_owned(), json!(errno)))
        .collect();
    emit(&json!({ "errno": results }));
}
