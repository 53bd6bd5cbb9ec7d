//! `code-exec.js` end to end: the upstream QuickJS-ng module run with its driver script,
//! published, verified and called through the facade on both engines, as an agent calls it.

use locara_facade::{BackendKind, ErrorReport, Locara, LocaraConfig};
use locara_test_artifacts::TestHome;

use crate::code_exec_support as support;
use serde_json::{Value, json};

const TOOL: &str = "code-exec.js";

fn engines() -> (TestHome, Vec<Locara>) {
    support::engines(TOOL)
}

async fn output(locara: &Locara, arguments: Value) -> Value {
    support::output(locara, TOOL, arguments).await
}

/// `result` of a program that must succeed with exit code 0 and nothing on stderr.
async fn result(locara: &Locara, code: &str) -> Value {
    let out = output(locara, json!({ "code": code })).await;
    assert_eq!(out["exit_code"], 0, "{code}: {out}");
    assert_eq!(out["stderr"], "", "{code}: {out}");
    out["result"].clone()
}

/// `stdout` of a program that must succeed with exit code 0.
async fn stdout(locara: &Locara, code: &str) -> String {
    let out = output(locara, json!({ "code": code })).await;
    assert_eq!(out["exit_code"], 0, "{code}: {out}");
    out["stdout"]
        .as_str()
        .expect("stdout is a string")
        .to_owned()
}

async fn failure(locara: &Locara, arguments: Value) -> (ErrorReport, String) {
    support::failure(locara, TOOL, arguments).await
}

/// A trivial call succeeds: the host and the tool are usable after whatever came before.
async fn still_works(locara: &Locara) {
    assert_eq!(stdout(locara, "console.log(1 + 1)").await, "2\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arithmetic_strings_and_the_last_value() {
    let (_home, hosts) = engines();
    for locara in &hosts {
        let out = output(locara, json!({"code": "console.log(1 + 1)"})).await;
        assert_eq!(
            out,
            json!({"stdout": "2\n", "stderr": "", "exit_code": 0, "result": null, "files": []})
        );
        assert_eq!(result(locara, "const x = 6 * 7;\nx").await, "42");
        assert_eq!(result(locara, "2 ** 53 + 1").await, "9007199254740992");
        assert_eq!(result(locara, "0.1 + 0.2").await, "0.30000000000000004");
        assert_eq!(result(locara, "7 / 0").await, "null"); // JSON.stringify(Infinity)
        assert_eq!(result(locara, "2n ** 70n").await, "1180591620717411303424");
        assert_eq!(
            result(locara, "Number.MAX_SAFE_INTEGER % 1000").await,
            "991"
        );
        // Strings come back as JSON, so quoted.
        assert_eq!(
            result(locara, "'Hello, ' + 'wörld'.toUpperCase()").await,
            "\"Hello, WÖRLD\""
        );
        assert_eq!(
            result(
                locara,
                "const s = 'racecar';\n[...s].reverse().join('') === s"
            )
            .await,
            "true"
        );
        assert_eq!(
            result(
                locara,
                "`${'7'.padStart(3, '0')}|${'  trim  '.trim()}|${'a,b,,c'.split(',').length}`"
            )
            .await,
            "\"007|trim|4\""
        );
        assert_eq!(
            result(locara, "'😀'.length + ':' + [...'😀'].length").await,
            "\"2:1\""
        );
        // The completion value of the last statement, not only of an expression statement.
        assert_eq!(
            result(locara, "let n = 3; if (n > 2) { 'big' } else { 'small' }").await,
            "\"big\""
        );
        // undefined is null; null is a JSON value.
        assert_eq!(result(locara, "let y = 1;").await, Value::Null);
        assert_eq!(result(locara, "null").await, "null");
        // Not JSON: String(value).
        assert_eq!(
            result(locara, "(function f(a) { return a })").await,
            "function f(a) { return a }"
        );
        assert_eq!(result(locara, "Symbol('s')").await, "Symbol(s)");
        assert_eq!(
            result(locara, "const o = {}; o.self = o; o").await,
            "[object Object]"
        );
        // An awaited promise, and top-level await.
        assert_eq!(
            result(locara, "(async () => { await null; return [1, 'two'] })()").await,
            "[1,\"two\"]"
        );
        let out = output(
            locara,
            json!({"code": "const v = await new Promise((r) => setTimeout(() => r(5), 10));\nprint('got', v);\nv * 2"}),
        )
        .await;
        assert_eq!(
            (out["stdout"].as_str(), out["result"].as_str()),
            (Some("got 5\n"), Some("10"))
        );
        // Work left in the microtask queue when the code ends runs to its end before the
        // output is written (the driver waits for the loop's next turn, not for a timer), and
        // a timer set from there still fires.
        let out = output(
            locara,
            json!({"code": "(async () => { for (let i = 0; i < 100; i++) await null; print('chain'); setTimeout(() => print('timer'), 1); })();\nPromise.resolve().then(() => print('microtask'));\n'sync'"}),
        )
        .await;
        assert_eq!(
            (out["stdout"].as_str(), out["result"].as_str()),
            (Some("microtask\nchain\ntimer\n"), Some("\"sync\""))
        );
        // print and console: strings as they are, arrays and plain objects as JSON.
        let out = output(
            locara,
            json!({"code": "print('a', 1, [1, 2], {k: 'v'}, null, undefined, new Map());\nconsole.error('oops', {e: 1});\nconsole.warn('w');\nconsole.info('i')"}),
        )
        .await;
        assert_eq!(
            out["stdout"],
            "a 1 [1,2] {\"k\":\"v\"} null undefined [object Map]\ni\n"
        );
        assert_eq!(out["stderr"], "oops {\"e\":1}\nw\n");
        // stdin.
        let out = output(
            locara,
            json!({"code": "let line, lengths = [];\nwhile ((line = std.in.getline()) !== null) lengths.push(line.length);\nlengths", "stdin": "a\nbb\nccc"}),
        )
        .await;
        assert_eq!(out["result"], "[1,2,3]");
        let out = output(
            locara,
            json!({"code": "std.in.readAsString().split('\\n').map(Number).reduce((a, b) => a + b)", "stdin": "1\n2\n39"}),
        )
        .await;
        assert_eq!(out["result"], "42");
        // std.printf, std.puts and std.out/std.err are captured too.
        let out = output(
            locara,
            json!({"code": "std.printf('%05.1f|%s|%d\\n', 3.14159, 'x', 42); std.puts('p\\n'); std.out.puts('o\\n'); std.err.puts('e')"}),
        )
        .await;
        assert_eq!(out["stdout"], "003.1|x|42\np\no\n");
        assert_eq!(out["stderr"], "e");
        // Output that is not valid UTF-16 still comes back as valid JSON.
        let out = output(locara, json!({"code": "print('a\\ud800b')"})).await;
        assert_eq!(out["stdout"], "a\u{fffd}b\n");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standard_library() {
    let (_home, hosts) = engines();
    for locara in &hosts {
        assert_eq!(
            result(
                locara,
                r#"JSON.parse('{"a": [1, 2, {"b": null}]}').a[2].b === null"#
            )
            .await,
            "true"
        );
        assert_eq!(
            result(locara, "JSON.stringify({b: 2, a: [1, 'x']}, null, 1)").await,
            json!("{\n \"b\": 2,\n \"a\": [\n  1,\n  \"x\"\n ]\n}").to_string()
        );
        assert_eq!(
            result(
                locara,
                r"const m = /(?<y>\d{4})-(?<m>\d{2})-(?<d>\d{2})/u.exec('due 2024-03-15, paid');
[m.groups.y, m.groups.m, m.groups.d, m.index]"
            )
            .await,
            r#"["2024","03","15",4]"#
        );
        assert_eq!(
            result(
                locara,
                r"'a1b22c333'.replace(/\d+/g, (d) => `<${d.length}>`)"
            )
            .await,
            "\"a<1>b<2>c<3>\""
        );
        assert_eq!(
            result(locara, "[Math.hypot(3, 4), Math.max(...[1, 9, 3]), Math.round(2.5), Math.trunc(-4.7), Math.sign(-3), Math.cbrt(27)]")
                .await,
            "[5,9,3,-4,-1,3]"
        );
        assert_eq!(result(locara, "(Math.PI).toFixed(5)").await, "\"3.14159\"");
        let random = result(locara, "const r = Math.random(); r >= 0 && r < 1").await;
        assert_eq!(random, "true");
        assert_eq!(
            result(
                locara,
                "new Date(Date.UTC(2020, 1, 29, 12, 30)).toISOString()"
            )
            .await,
            "\"2020-02-29T12:30:00.000Z\""
        );
        assert_eq!(
            result(locara, "const d = new Date('2024-01-31T00:00:00Z'); d.setUTCMonth(1); d.toISOString().slice(0, 10)")
                .await,
            "\"2024-03-02\""
        );
        // The clock is the host's: a date after this test was written.
        assert_eq!(
            result(locara, "Date.now() > Date.UTC(2025, 0, 1)").await,
            "true"
        );
        assert_eq!(
            result(
                locara,
                "[...new Set([3, 1, 3, 2, 1])].sort((a, b) => a - b)"
            )
            .await,
            "[1,2,3]"
        );
        assert_eq!(
            result(
                locara,
                "const m = new Map([['a', 1]]); m.set('b', 2); [...m.entries()]"
            )
            .await,
            r#"[["a",1],["b",2]]"#
        );
        assert_eq!(
            result(locara, "class Point { #x; constructor(x) { this.#x = x } get double() { return this.#x * 2 } }\nnew Point(21).double")
                .await,
            "42"
        );
        assert_eq!(
            result(locara, "function* fib() { let [a, b] = [0, 1]; for (;;) { yield a; [a, b] = [b, a + b] } }\nconst out = []; for (const n of fib()) { if (n > 50) break; out.push(n) } out")
                .await,
            "[0,1,1,2,3,5,8,13,21,34]"
        );
        assert_eq!(
            result(locara, "[encodeURIComponent('a b&c/é'), decodeURIComponent('%E2%9C%93'), parseInt('ff', 16), Number('1e3'), (255).toString(2)]")
                .await,
            r#"["a%20b%26c%2F%C3%A9","✓",255,1000,"11111111"]"#
        );
        assert_eq!(
            result(locara, "[[3, 1, 2].toSorted(), [1, 2, 3].at(-1), Object.fromEntries([['k', 1]]), 'abc'.at(-1), [1, [2, [3]]].flat(Infinity)]")
                .await,
            r#"[[1,2,3],3,{"k":1},"c",[1,2,3]]"#
        );
    }
}

/// Examples from MDN's JavaScript reference, with the output the pages give.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn examples_from_the_mdn_reference() {
    let (_home, hosts) = engines();
    for locara in &hosts {
        // Array.prototype.reduce()
        let code = "const array1 = [1, 2, 3, 4];
const initialValue = 0;
const sumWithInitial = array1.reduce(
  (accumulator, currentValue) => accumulator + currentValue,
  initialValue,
);
console.log(sumWithInitial);
// Expected output: 10";
        assert_eq!(stdout(locara, code).await, "10\n");
        // String.prototype.replaceAll()
        let code = "const paragraph = \"I think Ruth's dog is cuter than your dog!\";
console.log(paragraph.replaceAll('dog', 'monkey'));
// Expected output: \"I think Ruth's monkey is cuter than your monkey!\"
const regex = /Dog/gi;
console.log(paragraph.replaceAll(regex, 'ferret'));";
        assert_eq!(
            stdout(locara, code).await,
            "I think Ruth's monkey is cuter than your monkey!\nI think Ruth's ferret is cuter than your ferret!\n"
        );
        // String.prototype.matchAll()
        let code = "const regexp = /t(e)(st(\\d?))/g;
const str = 'test1test2';
const array = [...str.matchAll(regexp)];
console.log(array[0]);
// Expected output: Array [\"test1\", \"e\", \"st1\", \"1\"]
console.log(array[1]);
// Expected output: Array [\"test2\", \"e\", \"st2\", \"2\"]";
        assert_eq!(
            stdout(locara, code).await,
            "[\"test1\",\"e\",\"st1\",\"1\"]\n[\"test2\",\"e\",\"st2\",\"2\"]\n"
        );
        // Date.UTC()
        let code = "const utcDate1 = new Date(Date.UTC(96, 1, 2, 3, 4, 5));
const utcDate2 = new Date(Date.UTC(0, 0, 0, 0, 0, 0));
console.log(utcDate1.toUTCString());
// Expected output: \"Fri, 02 Feb 1996 03:04:05 GMT\"
console.log(utcDate2.toUTCString());
// Expected output: \"Sun, 31 Dec 1899 00:00:00 GMT\"";
        assert_eq!(
            stdout(locara, code).await,
            "Fri, 02 Feb 1996 03:04:05 GMT\nSun, 31 Dec 1899 00:00:00 GMT\n"
        );
        // JSON.stringify()
        let code = "console.log(JSON.stringify({ x: 5, y: 6 }));
// Expected output: '{\"x\":5,\"y\":6}'
console.log(JSON.stringify([new Number(3), new String('false'), new Boolean(false)]));
// Expected output: '[3,\"false\",false]'
console.log(JSON.stringify({ x: [10, undefined, function () {}, Symbol('')] }));
// Expected output: '{\"x\":[10,null,null,null]}'
console.log(JSON.stringify(new Date(Date.UTC(2006, 0, 2, 15, 4, 5))));
// Expected output: '\"2006-01-02T15:04:05.000Z\"'";
        assert_eq!(
            stdout(locara, code).await,
            "{\"x\":5,\"y\":6}\n[3,\"false\",false]\n{\"x\":[10,null,null,null]}\n\"2006-01-02T15:04:05.000Z\"\n"
        );
        // Promise.all()
        let code = "const promise1 = Promise.resolve(3);
const promise2 = 42;
const promise3 = new Promise((resolve, reject) => {
  setTimeout(resolve, 100, 'foo');
});

Promise.all([promise1, promise2, promise3]).then((values) => {
  console.log(values);
});
// Expected output: Array [3, 42, \"foo\"]";
        assert_eq!(stdout(locara, code).await, "[3,42,\"foo\"]\n");
        // Array.prototype.flat()
        let code = "const arr1 = [0, 1, 2, [3, 4]];
console.log(arr1.flat());
// expected output: Array [0, 1, 2, 3, 4]
const arr2 = [0, 1, [2, [3, [4, 5]]]];
console.log(arr2.flat(2));
// expected output: Array [0, 1, 2, 3, Array [4, 5]]";
        assert_eq!(stdout(locara, code).await, "[0,1,2,3,4]\n[0,1,2,3,[4,5]]\n");
        // Number.prototype.toFixed() and toPrecision()
        let code = "function financial(x) {
  return Number.parseFloat(x).toFixed(2);
}
console.log(financial(123.456));
// Expected output: \"123.46\"
console.log(financial(0.004));
// Expected output: \"0.00\"
console.log(financial('1.23e+5'));
// Expected output: \"123000.00\"
console.log((123.456).toPrecision(4));
// Expected output: \"123.5\"";
        assert_eq!(
            stdout(locara, code).await,
            "123.46\n0.00\n123000.00\n123.5\n"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exceptions_and_syntax_errors_are_tool_errors_with_their_stack() {
    let (_home, hosts) = engines();
    for locara in &hosts {
        let code = "function inner() { throw new TypeError('bad value ' + 42); }
function outer() { inner(); }
console.log('lost');
outer();";
        let (error, stderr) = failure(locara, json!({ "code": code })).await;
        assert_eq!(
            (error.code.as_str(), error.exit_code),
            ("tool_error", Some(1))
        );
        assert_eq!(
            stderr,
            "TypeError: bad value 42
    at inner (<evalScript>:1:54)
    at outer (<evalScript>:2:20)
    at <eval> (<evalScript>:4:1)"
        );
        assert_eq!(error.message, stderr);

        let (error, stderr) = failure(locara, json!({"code": "let a = 1;\nlet b = (2 +;\n"})).await;
        assert_eq!(error.exit_code, Some(1));
        // QuickJS points at the start of the expression it could not parse.
        assert_eq!(
            stderr,
            "SyntaxError: unexpected token in expression: ';'\n    at <evalScript>:2:9"
        );

        let (error, stderr) = failure(locara, json!({"code": "null.x"})).await;
        assert_eq!(error.exit_code, Some(1));
        assert!(
            stderr.starts_with(
                "TypeError: cannot read property 'x' of null\n    at <eval> (<evalScript>:1:"
            ),
            "{stderr}"
        );

        let (error, stderr) = failure(locara, json!({"code": "throw 42"})).await;
        assert_eq!((error.exit_code, stderr.as_str()), (Some(1), "Uncaught 42"));

        // In a timer callback, in an async function whose promise is the result, unhandled.
        let (_, stderr) = failure(
            locara,
            json!({"code": "setTimeout(() => { throw new RangeError('in a timer') }, 5); 'sync part'"}),
        )
        .await;
        assert!(
            stderr.starts_with("RangeError: in a timer\n    at <anonymous> (<evalScript>:1:"),
            "{stderr}"
        );
        assert!(
            !stderr.contains("<cmdline>"),
            "the driver's frames are hidden: {stderr}"
        );
        let (_, stderr) = failure(
            locara,
            json!({"code": "async function main() { await null; throw new Error('async boom') }\nmain()"}),
        )
        .await;
        assert!(
            stderr.starts_with("Error: async boom\n    at main (<evalScript>:1:"),
            "{stderr}"
        );
        let (error, stderr) = failure(
            locara,
            json!({"code": "Promise.reject(new Error('nobody catches this')); 1"}),
        )
        .await;
        assert_eq!(error.exit_code, Some(1));
        assert!(
            stderr.starts_with("Possibly unhandled promise rejection: Error: nobody catches this"),
            "{stderr}"
        );
        // A caught exception is just a value.
        assert_eq!(
            result(locara, "try { JSON.parse('{bad') } catch (e) { e.name }").await,
            "\"SyntaxError\""
        );
        still_works(locara).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes() {
    let (_home, hosts) = engines();
    for locara in &hosts {
        let out = output(
            locara,
            json!({"code": "print('a'); std.exit(3); print('b')"}),
        )
        .await;
        assert_eq!(
            out,
            json!({"stdout": "a\n", "stderr": "", "exit_code": 3, "result": null, "files": []})
        );
        let out = output(
            locara,
            json!({"code": "console.error('bye'); std.writeFile('out/partial.txt', 'p'); std.exit(0); 5"}),
        )
        .await;
        assert_eq!(out["exit_code"], 0);
        assert_eq!(out["stderr"], "bye\n");
        assert_eq!(out["result"], Value::Null);
        assert_eq!(out["files"][0]["path"], "out/partial.txt");
        // An exit ends the program at once, as a process exit does: no finally block runs.
        let out = output(
            locara,
            json!({"code": "try { std.exit(4) } finally { print('finally') }"}),
        )
        .await;
        assert_eq!(
            (out["exit_code"].as_i64(), out["stdout"].as_str()),
            (Some(4), Some(""))
        );
        // From a timer.
        let out = output(
            locara,
            json!({"code": "setTimeout(() => std.exit(7), 5); 'sync'"}),
        )
        .await;
        assert_eq!(out["exit_code"], 7);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_in_and_out() {
    let (_home, hosts) = engines();
    for locara in &hosts {
        let code = "const text = std.loadFile('data/in.csv');
const bytes = std.loadFile('blob.bin', {binary: true});
const rows = text.trim().split('\\n').map((line) => line.split(','));
std.writeFile('out/report.txt', rows.map(([name, n]) => `${name.toUpperCase()}=${n * 2}`).join('\\n'));
os.mkdir('out/nested');
const f = std.open('out/nested/copy.bin', 'wb');
f.write(bytes.buffer, 0, bytes.length);
f.close();
std.writeFile('out/nested/é.txt', 'ünïcode');
std.writeFile('not-returned.txt', 'only out/ comes back');
[os.getcwd()[0], Array.from(bytes)]";
        let out = output(
            locara,
            json!({
                "code": code,
                "files": [
                    {"path": "data/in.csv", "content": "a,1\nb,20\n"},
                    {"path": "./blob.bin", "content": "AP+ABw==", "encoding": "base64"},
                ],
            }),
        )
        .await;
        assert_eq!(out["result"], r#"["/tmp/work",[0,255,128,7]]"#);
        assert_eq!(
            out["files"],
            json!([
                {"path": "out/nested/copy.bin", "encoding": "base64", "content": "AP+ABw==", "size_bytes": 4},
                {"path": "out/nested/é.txt", "encoding": "utf8", "content": "ünïcode", "size_bytes": 9},
                {"path": "out/report.txt", "encoding": "utf8", "content": "A=2\nB=40", "size_bytes": 8},
            ])
        );
        // Bytes that are almost UTF-8 (a surrogate, an overlong form, a cut sequence) are base64.
        let out = output(
            locara,
            json!({"code": "for (const [name, bytes] of [['s', [0xed, 0xa0, 0x80]], ['o', [0xc0, 0x80]], ['t', [0x61, 0xc3]], ['ok', [0xf0, 0x9f, 0x98, 0x80]]]) {
  const f = std.open('out/' + name, 'wb'); f.write(new Uint8Array(bytes).buffer, 0, bytes.length); f.close();
}"}),
        )
        .await;
        let encodings: Vec<(&str, &str, &str)> = out["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["path"].as_str().unwrap(),
                    f["encoding"].as_str().unwrap(),
                    f["content"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            encodings,
            [
                ("out/o", "base64", "wIA="),
                ("out/ok", "utf8", "😀"),
                ("out/s", "base64", "7aCA"),
                ("out/t", "base64", "YcM="),
            ]
        );
        // A larger binary file survives the round trip byte for byte. (Larger still costs more
        // fuel than wasmi gives: base64 is JavaScript code, and wasmi charges QuickJS's
        // interpreter loop far more fuel per operation than Wasmtime does.)
        let bytes: Vec<u8> = (0..6001u32).map(|i| (i * 7919 % 251) as u8).collect();
        let encoded = base64(&bytes);
        let out = output(
            locara,
            json!({
                "code": "const b = std.loadFile('in.bin', {binary: true}); const f = std.open('out/copy.bin', 'wb'); f.write(b.buffer, 0, b.length); f.close(); b.length",
                "files": [{"path": "in.bin", "content": encoded, "encoding": "base64"}],
            }),
        )
        .await;
        assert_eq!(out["result"], "6001");
        assert_eq!(out["files"][0]["content"], encoded);
        assert_eq!(out["files"][0]["size_bytes"], 6001);

        // Unusable files: exit code 2, naming the entry.
        for (files, message) in [
            (
                json!([{"path": "/etc/x", "content": ""}]),
                "files[0] (\"/etc/x\"): the path must be relative to the working directory, not absolute",
            ),
            (
                json!([{"path": "ok.txt", "content": "x"}, {"path": "a/../../x", "content": ""}]),
                "files[1] (\"a/../../x\"): the path must not contain \"..\"",
            ),
            (
                json!([{"path": "b.bin", "content": "@@@=", "encoding": "base64"}]),
                "files[0] (\"b.bin\"): invalid base64: unexpected character \"@\"",
            ),
            (
                json!([{"path": "b.bin", "content": "QUJDR", "encoding": "base64"}]),
                "files[0] (\"b.bin\"): invalid base64: the length is not a whole number of bytes",
            ),
            (
                json!([{"path": "d/f", "content": "1"}, {"path": "d", "content": "2"}]),
                "files[1] (\"d\"): a folder of that name already exists",
            ),
        ] {
            let (error, stderr) = failure(locara, json!({"code": "1", "files": files})).await;
            assert_eq!(
                (error.code.as_str(), error.exit_code),
                ("tool_error", Some(2))
            );
            assert_eq!(stderr, message);
        }
        still_works(locara).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_of_the_host_is_reachable_and_no_state_survives() {
    let (_home, hosts) = engines();
    for locara in &hosts {
        let code = "const e = {};
const f = std.open('/etc/passwd', 'r', e);
[f, std.strerror(e.errno), std.loadFile('/etc/passwd'), os.readdir('/')[0], os.readdir('/tmp')[0], os.stat('/home')[1] !== 0]";
        assert_eq!(
            result(locara, code).await,
            r#"[null,"No such file or directory",null,[],[".","..","work"],true]"#
        );
        assert_eq!(
            result(locara, "[typeof std.getenv('HOME'), typeof std.getenv('PATH'), Object.keys(std.getenviron()).length, scriptArgs.length]")
                .await,
            r#"["undefined","undefined",0,0]"#
        );
        assert_eq!(
            result(
                locara,
                "[typeof require, typeof process, typeof fetch, typeof os.exec]"
            )
            .await,
            r#"["undefined","undefined","undefined","undefined"]"#
        );
        // `..` cannot leave the temp dir.
        assert_eq!(
            result(locara, "std.loadFile('../../../../etc/passwd')").await,
            "null"
        );
        // A file written in one call is gone in the next; so are globals.
        assert_eq!(
            result(locara, "globalThis.leak = 1; std.writeFile('/tmp/leak.txt', 'x'); os.readdir('/tmp')[0].length").await,
            "4"
        );
        assert_eq!(
            result(
                locara,
                "[typeof leak, std.loadFile('/tmp/leak.txt'), os.readdir('/tmp')[0]]"
            )
            .await,
            r#"["undefined",null,[".","..","work"]]"#
        );
    }
}

/// The artifact is QuickJS pre-initialized with the driver loaded (locara-upstream's
/// `quickjs`): a call starts from the snapshot instead of creating a runtime and compiling the
/// driver, and each call still gets its own `Math.random` sequence and nothing of the init's
/// entry point.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_start_from_the_snapshot_with_their_own_random_numbers() {
    let (_home, hosts) = engines();
    for locara in &hosts {
        let engine = locara.engine().name();
        let response = locara
            .run(locara_facade::RunRequest::new(
                TOOL,
                json!({"code": "console.log(1 + 1)"}),
            ))
            .await
            .expect("the call runs");
        assert!(response.ok, "{engine}: {:?}", response.error);
        // Started plainly, this call burned 19.1e6 fuel on Wasmtime and 161e6 on wasmi (whose
        // fuel costs differ), the driver's compilation most of it; from the snapshot, 0.7e6
        // and 15.6e6.
        let most = if locara.engine() == BackendKind::Wasmi {
            40_000_000
        } else {
            3_000_000
        };
        let fuel = response.stats.fuel_consumed;
        assert!(fuel < most, "{engine}: {fuel} fuel for console.log(1 + 1)");

        let draws = "Array.from({length: 4}, () => Math.random())";
        let (first, second) = (result(locara, draws).await, result(locara, draws).await);
        assert_ne!(first, second, "{engine}: two calls drew the same numbers");
        assert_eq!(
            result(locara, "[typeof __locara_main, scriptArgs.length]").await,
            r#"["undefined",0]"#,
            "{engine}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_end_hostile_programs_and_the_next_call_works() {
    let (_home, hosts) = engines();
    for locara in &hosts {
        let engine = locara.engine().name();
        // An endless loop: fuel on both engines with this manifest's limits (a slow machine
        // may reach the wall clock first).
        let (error, _) = failure(locara, json!({"code": "for (;;) {}"})).await;
        assert_eq!(error.code, "limit_exceeded", "{engine}: {error:?}");
        let limit = error.limit.as_deref().unwrap();
        assert!(
            ["fuel", "wall_time"].contains(&limit),
            "{engine}: {error:?}"
        );
        still_works(locara).await;

        // A memory bomb: QuickJS's allocation fails and it throws InternalError; the host
        // refused the memory first, so it reports the memory limit.
        let (error, stderr) =
            failure(locara, json!({"code": "let s = 'x';\nfor (;;) s += s;"})).await;
        assert_eq!(
            (error.code.as_str(), error.limit.as_deref()),
            ("limit_exceeded", Some("memory")),
            "{engine}: {error:?}"
        );
        assert!(
            stderr.starts_with("InternalError: out of memory"),
            "{engine}: {stderr}"
        );
        still_works(locara).await;
        let (error, _) = failure(
            locara,
            json!({"code": "const keep = [];\nfor (;;) keep.push(new ArrayBuffer(1 << 20));"}),
        )
        .await;
        assert_eq!(
            error.limit.as_deref(),
            Some("memory"),
            "{engine}: {error:?}"
        );
        still_works(locara).await;

        // A recursion bomb. This QuickJS build has a 64 KiB C stack and no stack check of its
        // own (QuickJS disables it on WASI); the `stack_guarded` artifact checks every C-stack
        // allocation and turns an overflow into the engine's stack-overflow trap, which the
        // host reports as the stack limit, before the stack reaches the module's data.
        let (error, _) = failure(
            locara,
            json!({"code": "function f(n) { return f(n + 1) + 1 }\nf(0)"}),
        )
        .await;
        assert_eq!(
            (error.code.as_str(), error.limit.as_deref()),
            ("limit_exceeded", Some("stack")),
            "{engine}: {error:?}"
        );
        assert!(
            error.message.contains("nesting depth"),
            "{engine}: {error:?}"
        );
        assert!(
            error.hint.contains("iteration instead of deep recursion"),
            "{engine}: {error:?}"
        );
        still_works(locara).await;
        // Shallow recursion is fine.
        assert_eq!(
            result(
                locara,
                "function depth(n) { return n === 0 ? 0 : 1 + depth(n - 1) }\ndepth(150)"
            )
            .await,
            "150"
        );

        // A print flood reaches the output limit; the driver streams stdout, so the guest does
        // not run out of memory first.
        let (error, _) = failure(
            locara,
            json!({"code": "const line = 'flood '.repeat(10000);\nfor (;;) print(line);"}),
        )
        .await;
        assert_eq!(
            (error.code.as_str(), error.limit.as_deref()),
            ("limit_exceeded", Some("output_bytes")),
            "{engine}: {error:?}"
        );
        still_works(locara).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_is_bounded_in_the_guest() {
    let home = TestHome::new();
    home.publish_upstream_tool(TOOL);
    for engine in BackendKind::ALL {
        // A host that takes large outputs, so that what is seen is the driver's bound.
        let config = LocaraConfig::new(home.path())
            .with_engine(engine)
            .with_output_cap_bytes(4 << 20);
        let locara = Locara::new(&config).expect("locara starts");
        // stderr is kept in memory: the first 1 MiB characters and a note.
        let out = output(
            &locara,
            json!({"code": "const s = 'e'.repeat(300000);\nfor (let i = 0; i < 5; i++) console.error(s);\n'done'"}),
        )
        .await;
        let stderr = out["stderr"].as_str().unwrap();
        let (kept, note) = stderr.split_at(1 << 20);
        assert!(kept.bytes().all(|b| b == b'e' || b == b'\n'), "{engine:?}");
        assert_eq!(
            note,
            "\n[stderr truncated: 451429 more characters were dropped]"
        );
        assert_eq!(out["result"], "\"done\"");
    }
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
