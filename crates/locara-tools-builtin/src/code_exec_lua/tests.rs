//! Native unit tests of `code-exec.lua`: the interpreter, the streamed output and the files,
//! in a temporary directory standing for `/tmp` (without `chdir`, so paths are absolute here;
//! the end-to-end tests in `tests/all/code_exec_lua.rs` run the guest in `/tmp/work`).

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

use serde_json::{Value, json};

use super::*;

#[derive(Clone, Default)]
struct SharedBuf(Rc<RefCell<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs `input` in a fresh temp dir; returns the parsed output or the error.
fn call_in(dir: &Path, input: Value) -> Result<Value, ToolError> {
    let buf = SharedBuf::default();
    run(input, &Dirs::new(dir), Box::new(buf.clone()), false)?;
    let bytes = buf.0.borrow().clone();
    Ok(serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes))))
}

fn call(input: Value) -> Result<Value, ToolError> {
    let dir = tempfile::tempdir().unwrap();
    call_in(dir.path(), input)
}

fn lua(code: &str) -> Value {
    call(json!({ "code": code })).unwrap_or_else(|e| panic!("{code}: {}", e.message()))
}

fn lua_error(code: &str) -> ToolError {
    match call(json!({ "code": code })) {
        Ok(output) => panic!("{code} succeeded: {output}"),
        Err(error) => error,
    }
}

#[test]
fn prints_and_returns() {
    let out =
        lua("print(1 + 1, 'a', nil, true, 2^10)\nio.write(7 // 2, ' ', 1.5, '\\n')\nreturn 6 * 7");
    assert_eq!(out["stdout"], "2\ta\tnil\ttrue\t1024.0\n3 1.5\n");
    assert_eq!(out["stderr"], "");
    assert_eq!(out["exit_code"], 0);
    assert_eq!(out["result"], "42");
    assert_eq!(out["files"], json!([]));
}

#[test]
fn the_result_is_every_returned_value_or_null() {
    assert_eq!(
        lua("return 1, nil, 'x', {} == nil")["result"],
        "1\tnil\tx\tfalse"
    );
    assert_eq!(lua("local x = 1")["result"], Value::Null);
    assert_eq!(lua("return nil")["result"], Value::Null);
    assert_eq!(lua("return")["result"], Value::Null);
    assert_eq!(
        lua("return setmetatable({}, {__tostring = function() return 'point(1, 2)' end})")["result"],
        "point(1, 2)"
    );
}

#[test]
fn strings_and_the_standard_library() {
    let out = lua(r#"
print(string.format("%5.2f|%-4s|%x|%05d", math.pi, "ab", 255, 42))
print(("hello world"):gsub("o", "0"))
print(string.match("key = value", "(%w+)%s*=%s*(%w+)"))
local t = {5, 2, 8, 1}
table.sort(t)
print(table.concat(t, ","))
print(utf8.char(72, 228, 8364), utf8.len("häll€"), #"€")
print(os.time{year = 2020, month = 1, day = 1, hour = 0})
print(os.date("!%Y-%m-%d %H:%M:%S", 0))
print(math.type(1), math.type(1.0), math.tointeger(3.0), math.max(3, 9, 4))
local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1) return b * 2 end)
print(co(1), co(10))
print(pcall(error, {code = 7}))
print(select(2, pcall(error, "oops")))
"#);
    let stdout = out["stdout"].as_str().unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], " 3.14|ab  |ff|00042");
    assert_eq!(lines[1], "hell0 w0rld\t2");
    assert_eq!(lines[2], "key\tvalue");
    assert_eq!(lines[3], "1,2,5,8");
    assert_eq!(lines[4], "Hä€\t5\t3");
    assert_eq!(lines[5], "1577836800");
    assert_eq!(lines[6], "1970-01-01 00:00:00");
    assert_eq!(lines[7], "integer\tfloat\t3\t9");
    assert_eq!(lines[8], "2\t20");
    assert!(lines[9].starts_with("false\ttable: "), "{}", lines[9]);
    // Level 1 is `pcall` itself, a C function: no position, as in C Lua.
    assert_eq!(lines[10], "oops");
}

#[test]
fn an_error_is_the_tool_error_with_its_traceback() {
    let error = lua_error("local function f(x)\n  error('boom ' .. x)\nend\nf(3)");
    assert_eq!(error.kind(), abi::ErrorKind::Failed);
    expect_test::expect![[r#"
        input:2: boom 3
        stack traceback:
        	[C]: in global 'error'
        	input:2: in local 'f'
        	input:4: in main chunk"#]]
    .assert_eq(error.message());

    let error = lua_error("local t = nil\nreturn t.x");
    assert!(
        error
            .message()
            .starts_with("input:2: attempt to index a nil value (local 't')\nstack traceback:"),
        "{}",
        error.message()
    );
    assert!(
        !error.message().contains("code-exec"),
        "{}",
        error.message()
    );

    assert!(
        lua_error("error({})")
            .message()
            .starts_with("(error object is a table value)\n")
    );
    assert!(lua_error("error(42)").message().starts_with("42\n"));
}

#[test]
fn a_syntax_error_names_the_line() {
    let error = lua_error("local x = 1\nx = = 2");
    assert_eq!(error.kind(), abi::ErrorKind::Failed);
    assert_eq!(error.message(), "input:2: unexpected symbol near '='");
}

#[test]
fn a_failing_tostring_of_the_result_is_a_tool_error() {
    let error =
        lua_error("return setmetatable({}, {__tostring = function() error('no text') end})");
    assert!(
        error.message().starts_with("input:1: no text\n"),
        "{}",
        error.message()
    );
}

#[test]
fn recursion_ends_in_lua_stack_overflow() {
    let error = lua_error("local function r() return 1 + r() end\nreturn r()");
    assert!(
        error.message().contains("stack overflow"),
        "{}",
        error.message()
    );
    // The traceback is shortened, as Lua does.
    assert!(error.message().contains("skipping"), "{}", error.message());
    // Legitimately deep recursion (far past luars' default of 1024 frames) works.
    assert_eq!(
        lua(
            "local function depth(n) if n == 0 then return 0 end return 1 + depth(n - 1) end\nreturn depth(50000)"
        )["result"],
        "50000"
    );
}

#[test]
fn stdin_is_readable_with_io_read_and_io_lines() {
    let out = call(json!({
        "code": "local first = io.read('l')\nlocal n = io.read('n')\nlocal rest = {}\nfor line in io.lines() do rest[#rest + 1] = line end\nreturn first, n, #rest, rest[1], rest[#rest]",
        "stdin": "hello\n42\na\nb\nlast"
    }))
    .unwrap();
    // `io.read('n')` leaves the end of its line, which `io.lines` then returns, as in C Lua.
    assert_eq!(out["result"], "hello\t42\t4\t\tlast");
    assert_eq!(lua("return io.read('a')")["result"], "");
}

#[test]
fn stdout_and_stderr_behave_like_files() {
    let out = lua(r#"
assert(io.stdout:write("a", 1, "b") == io.stdout)
io.stderr:write("warn: ", 2, "\n")
print(io.type(io.stdout), io.type(io.stderr), io.type(42), tostring(io.stdout))
print(io.stdout:close())
io.stdout:setvbuf("no")
io.stdout:flush()
print(pcall(io.write, {}))
"#);
    assert_eq!(
        out["stdout"],
        "a1bfile\tfile\tnil\tfile (stdout)\nnil\tcannot close standard file\nfalse\tbad argument #1 to 'write' (string expected, got table)\n"
    );
    assert_eq!(out["stderr"], "warn: 2\n");
}

#[test]
fn io_output_switches_between_a_file_and_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("work/out/log.txt");
    let code = format!(
        "io.output({path:?})\nio.write('to file')\nio.close()\nio.output(io.stdout)\nio.write('to stdout')\nreturn io.output() == io.stdout",
        path = path.to_str().unwrap()
    );
    let out = call_in(dir.path(), json!({ "code": code })).unwrap();
    assert_eq!(out["stdout"], "to stdout");
    assert_eq!(out["result"], "true");
    assert_eq!(
        out["files"],
        json!([{"path": "out/log.txt", "encoding": "utf8", "content": "to file", "size_bytes": 7}])
    );
}

#[test]
fn output_is_escaped_and_lossy_even_across_writes() {
    // "€" is E2 82 AC: split over two writes it is still one character; a lone byte is U+FFFD.
    let out =
        lua(r#"io.write("\xE2", "\x82\xAC", " \"q\" \\ \t \0 \1 ", "\xFF", "ok\n", "\xE2\x82")"#);
    assert_eq!(
        out["stdout"],
        "€ \"q\" \\ \t \u{0} \u{1} \u{FFFD}ok\n\u{FFFD}"
    );
}

#[test]
fn the_json_string_writer_matches_from_utf8_lossy() {
    let inputs: [&[u8]; 5] = [
        b"plain",
        b"\xF0\x9F\x98",
        b"\x80abc",
        b"a\xC3",
        b"\xA9\n\"\x1f",
    ];
    let mut w = JsonStringWriter::new(Vec::new());
    let mut all = Vec::new();
    for piece in inputs {
        w.write_bytes(piece).unwrap();
        all.extend_from_slice(piece);
    }
    w.end().unwrap();
    let mut written = b"\"".to_vec();
    written.extend_from_slice(w.inner());
    let decoded: String = serde_json::from_slice(&written).unwrap();
    assert_eq!(decoded, String::from_utf8_lossy(&all));
}

#[test]
fn stderr_is_bounded() {
    let out = lua("local s = string.rep('e', 4096)\nfor i = 1, 300 do io.stderr:write(s) end");
    let stderr = out["stderr"].as_str().unwrap();
    assert!(stderr.starts_with("eeee"));
    assert!(
        stderr.ends_with(&format!(
            "\n[stderr truncated: {} more bytes were dropped]",
            300 * 4096 - STDERR_KEEP
        )),
        "{}",
        &stderr[stderr.len() - 100..]
    );
}

#[test]
fn files_go_in_and_come_back_from_out() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let code = format!(
        r#"
local root = {work:?}
local f = assert(io.open(root .. "/data/in.txt"))
local text = f:read("a")
f:close()
local bin = assert(io.open(root .. "/blob.bin", "rb")):read("a")
local o = assert(io.open(root .. "/out/upper.txt", "w"))
o:write(text:upper())
o:close()
local b = assert(io.open(root .. "/out/sub/bytes.bin", "wb"))
b:write(bin, "\0\255")
b:close()
return #bin
"#,
        work = work.to_str().unwrap()
    );
    std::fs::create_dir_all(work.join("out/sub")).unwrap();
    let out = call_in(
        dir.path(),
        json!({
            "code": code,
            "files": [
                {"path": "data/in.txt", "content": "hello"},
                {"path": "./blob.bin", "content": "AAEC", "encoding": "base64"},
            ]
        }),
    )
    .unwrap();
    assert_eq!(out["result"], "3");
    assert_eq!(
        out["files"],
        json!([
            {"path": "out/sub/bytes.bin", "encoding": "base64", "content": base64_encode(b"\0\x01\x02\0\xff"), "size_bytes": 5},
            {"path": "out/upper.txt", "encoding": "utf8", "content": "HELLO", "size_bytes": 5},
        ])
    );
}

#[test]
fn bad_files_are_bad_arguments_naming_the_entry() {
    for (file, message) in [
        (
            json!({"path": "/etc/x", "content": ""}),
            "files[0] (\"/etc/x\"): the path must be relative",
        ),
        (
            json!({"path": "a/../../x", "content": ""}),
            "files[0] (\"a/../../x\"): the path must not contain \"..\"",
        ),
        (
            json!({"path": "./", "content": ""}),
            "files[0] (\"./\"): the path names a folder",
        ),
        (
            json!({"path": ".", "content": ""}),
            "files[0] (\".\"): the path is empty",
        ),
        (
            json!({"path": "x.bin", "content": "QU*J", "encoding": "base64"}),
            "files[0] (\"x.bin\"): invalid base64: '*' at offset 2",
        ),
    ] {
        let error = call(json!({"code": "return 1", "files": [file]})).unwrap_err();
        assert_eq!(error.kind(), abi::ErrorKind::BadArgs);
        assert!(error.message().starts_with(message), "{}", error.message());
    }
    let error = call(json!({"code": "return 1", "files": [{"path": "a", "content": ""}, {"path": "a/b", "content": ""}]})).unwrap_err();
    assert!(
        error
            .message()
            .starts_with("files[1] (\"a/b\"): cannot create its folder"),
        "{}",
        error.message()
    );
    let error = call(json!({"code": "return 1", "extra": 1})).unwrap_err();
    assert_eq!(error.kind(), abi::ErrorKind::BadArgs);
}

#[test]
fn base64_round_trips_and_refuses_bad_input() {
    for bytes in [
        &b""[..],
        b"f",
        b"fo",
        b"foo",
        b"foob",
        b"fooba",
        b"foobar",
        &[0, 255, 128, 7],
    ] {
        let encoded = base64_encode(bytes);
        assert_eq!(base64_decode(&encoded).unwrap(), bytes, "{encoded}");
    }
    assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
    assert_eq!(base64_encode(b"fo"), "Zm8=");
    assert_eq!(base64_decode("Zm8").unwrap(), b"fo");
    assert_eq!(base64_decode("Zm9v\nYmFy").unwrap(), b"foobar");
    assert!(base64_decode("Zm9vY").is_err());
    assert!(base64_decode("Zm=8").is_err());
}

#[test]
fn bytecode_is_not_loaded() {
    // The host's files and processes are the sandbox's to hide (the end-to-end tests check
    // them in the guest); bytecode, which the interpreter does not verify, is refused here.
    let out = lua("return load(string.dump(function() return 1 end))");
    assert_eq!(
        out["result"],
        "nil\tattempt to load a binary chunk (bytecode loading is disabled)"
    );
}

#[test]
fn the_manifest_documents_what_the_code_does() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/code-exec.lua.json");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let input = &manifest["input_schema"]["properties"];
    assert_eq!(input["stdin"]["default"], "");
    assert_eq!(input["files"]["default"], json!([]));
    assert_eq!(
        input["files"]["items"]["properties"]["encoding"]["default"],
        "utf8"
    );
    let stderr = manifest["output_schema"]["properties"]["stderr"]["description"]
        .as_str()
        .unwrap();
    assert_eq!(STDERR_KEEP, 1 << 20);
    assert!(stderr.contains("at most 1 MiB"), "{stderr}");
    // What the defaults mean: the fields may be left out.
    assert_eq!(lua("return io.read('a'), arg == nil")["result"], "\ttrue");
}
