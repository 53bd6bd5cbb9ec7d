// The driver of `code-exec.js`: QuickJS-ng speaking the tool ABI (docs/code-exec.md).
//
// Run as `qjs --std -C -e <this script>`, or pre-initialized (see the end). Reads one JSON
// object on stdin (`code`, `stdin`, `files`), writes `files` under /tmp/work (the working
// directory, with an empty `out/`), runs `code` as a global script and writes one JSON object
// on stdout: `stdout`, `stderr`, `exit_code`, `result`, `files`.
//
// - stdout is streamed: `{"stdout":"` is written first, then every print, JSON-escaped, through
//   libc's small stdout buffer, so a print flood reaches the host's output limit instead of
//   filling the guest's memory. stderr is kept in memory, at most 1,048,576 characters.
// - print, console.log/info/debug, std.puts/printf and std.out go to stdout; console.error/warn
//   and std.err to stderr. Strings print as they are, arrays and plain objects as JSON, anything
//   else through String. std.in reads the `stdin` argument.
// - `code` runs through std.evalScript with top-level await allowed; `result` is the completion
//   value of its last statement (awaited when it is a promise): JSON.stringify when that gives
//   JSON, else String, null for undefined. The call ends when no timer is pending.
// - std.exit(n) ends the code with exit_code n in a normal result. An uncaught exception (also
//   in a timer callback), a syntax error or an unhandled promise rejection is a tool error:
//   QuickJS's message and stack on the real stderr, exit code 1. Bad `files` are exit code 2.

"use strict";
(function () {
  const WORK = "/tmp/work";
  const OUT = WORK + "/out";
  const STDERR_KEEP = 1 << 20;
  // The modules themselves (namespaces, immutable): the code gets its own `std` and `os`.
  const realStd = std;
  const realOs = os;
  const realExit = realStd.exit;
  const realOut = realStd.out;
  const realErr = realStd.err;

  class BadArgs extends Error {}

  function fail(message, code) {
    realOut.flush();
    realErr.puts(message.endsWith("\n") ? message : message + "\n");
    realErr.flush();
    realExit(code);
  }

  // --- input -----------------------------------------------------------------------------

  function readArgs() {
    let args;
    try {
      args = JSON.parse(realStd.in.readAsString());
    } catch (error) {
      throw new BadArgs(`the arguments are not valid JSON: ${error.message}`);
    }
    if (args === null || typeof args !== "object" || Array.isArray(args)) {
      throw new BadArgs("the arguments must be a JSON object");
    }
    const unknown = Object.keys(args).filter((k) => !["code", "stdin", "files"].includes(k));
    if (unknown.length) throw new BadArgs(`unknown argument "${unknown[0]}" (expected code, stdin, files)`);
    const { code, stdin = "", files = [] } = args;
    if (typeof code !== "string") throw new BadArgs("`code` must be a string");
    if (typeof stdin !== "string") throw new BadArgs("`stdin` must be a string");
    if (!Array.isArray(files)) throw new BadArgs("`files` must be an array");
    return { code, stdin, files };
  }

  // A relative, `/`-separated path without `..`, made canonical; throws with the reason.
  function checkPath(path) {
    if (path.startsWith("/")) throw new Error("the path must be relative to the working directory, not absolute");
    if (path.includes("\0")) throw new Error("the path contains a NUL character");
    if (path.endsWith("/")) throw new Error("the path names a folder; give a file name");
    const parts = path.split("/").filter((part) => part !== "" && part !== ".");
    if (parts.includes("..")) throw new Error('the path must not contain ".."');
    if (!parts.length) throw new Error("the path is empty");
    return parts.join("/");
  }

  // base64 by table: QuickJS has no native codec, and every JS operation counts.
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const B64_VALUE = new Uint8Array(128);
  for (let i = 0; i < 64; i++) B64_VALUE[B64.charCodeAt(i)] = i;

  // Standard base64; padding optional, whitespace ignored.
  function fromBase64(text) {
    const s = text.replace(/\s+/g, "").replace(/={1,2}$/, "");
    const bad = /[^A-Za-z0-9+/]/.exec(s);
    if (bad) throw new Error(`invalid base64: unexpected character "${bad[0]}"`);
    if (s.length % 4 === 1) throw new Error("invalid base64: the length is not a whole number of bytes");
    const v = (i) => B64_VALUE[s.charCodeAt(i)];
    const bytes = new Uint8Array((s.length * 3) >> 2);
    let i = 0, j = 0;
    for (; i + 4 <= s.length; i += 4) {
      const n = (v(i) << 18) | (v(i + 1) << 12) | (v(i + 2) << 6) | v(i + 3);
      bytes[j++] = n >> 16;
      bytes[j++] = (n >> 8) & 0xff;
      bytes[j++] = n & 0xff;
    }
    if (i < s.length) {
      const n = (v(i) << 18) | (v(i + 1) << 12) | (i + 2 < s.length ? v(i + 2) << 6 : 0);
      bytes[j++] = n >> 16;
      if (i + 2 < s.length) bytes[j++] = (n >> 8) & 0xff;
    }
    return bytes;
  }

  let B64_PAIRS = null;
  function toBase64(bytes) {
    B64_PAIRS ??= [...B64].flatMap((a) => [...B64].map((b) => a + b));
    const parts = [];
    const rest = bytes.length % 3;
    const whole = bytes.length - rest;
    for (let i = 0; i < whole; i += 3) {
      const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
      parts.push(B64_PAIRS[n >> 12], B64_PAIRS[n & 0xfff]);
    }
    if (rest) {
      const n = (bytes[whole] << 16) | (rest > 1 ? bytes[whole + 1] << 8 : 0);
      parts.push(B64_PAIRS[n >> 12], rest > 1 ? B64[(n >> 6) & 63] + "=" : "==");
    }
    return parts.join("");
  }

  // The text of UTF-8 `bytes`, or null when they are not valid UTF-8 (decodeURIComponent is a
  // strict native decoder: it refuses overlong forms, surrogates and truncated sequences).
  function utf8Text(bytes) {
    const latin1 = [];
    for (let i = 0; i < bytes.length; i += 8192) {
      latin1.push(String.fromCharCode.apply(null, bytes.subarray(i, i + 8192)));
    }
    try {
      return decodeURIComponent(escape(latin1.join("")));
    } catch {
      return null;
    }
  }

  function isDir(path) {
    const [st, err] = realOs.stat(path);
    return !err && (st.mode & realOs.S_IFMT) === realOs.S_IFDIR;
  }

  function makeDirs(path) {
    let dir = "";
    for (const part of path.split("/").slice(1)) {
      dir += "/" + part;
      const err = realOs.mkdir(dir, 0o777);
      if (err && !isDir(dir)) throw new Error(`cannot create the folder ${dir}: ${realStd.strerror(-err)}`);
    }
  }

  function placeFiles(files) {
    makeDirs(OUT);
    files.forEach((entry, index) => {
      const path = entry !== null && typeof entry === "object" ? entry.path : undefined;
      const bad = (why) => new BadArgs(`files[${index}] (${JSON.stringify(path)}): ${why}`);
      if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
        throw bad("each file must be an object with `path` and `content`");
      }
      const unknown = Object.keys(entry).filter((k) => !["path", "content", "encoding"].includes(k));
      if (unknown.length) throw bad(`unknown field "${unknown[0]}"`);
      const { content, encoding = "utf8" } = entry;
      if (typeof path !== "string") throw bad("`path` must be a string");
      if (typeof content !== "string") throw bad("`content` must be a string");
      if (encoding !== "utf8" && encoding !== "base64") {
        throw bad(`unknown encoding ${JSON.stringify(encoding)} (expected "utf8" or "base64")`);
      }
      try {
        const full = WORK + "/" + checkPath(path);
        const data = encoding === "base64" ? fromBase64(content) : null;
        makeDirs(full.slice(0, full.lastIndexOf("/")));
        if (isDir(full)) throw new Error("a folder of that name already exists");
        const opened = {};
        const file = realStd.open(full, "wb", opened);
        if (!file) throw new Error(`cannot write it: ${realStd.strerror(opened.errno)}`);
        if (data) file.write(data.buffer, 0, data.length);
        else file.puts(content.toWellFormed());
        file.close();
      } catch (error) {
        throw bad(error.message);
      }
    });
  }

  // --- output ----------------------------------------------------------------------------

  function emit(text) {
    realOut.puts(JSON.stringify(String(text).toWellFormed()).slice(1, -1));
  }

  const kept = [];
  let keptSize = 0;
  let dropped = 0;
  function capture(text) {
    text = String(text);
    const room = STDERR_KEEP - keptSize;
    if (text.length > room) {
      dropped += text.length - room;
      text = text.slice(0, room);
    }
    kept.push(text);
    keptSize += text.length;
  }
  function stderrText() {
    const text = kept.join("").toWellFormed();
    return dropped ? `${text}\n[stderr truncated: ${dropped} more characters were dropped]` : text;
  }

  function show(value) {
    if (typeof value === "string") return value;
    if (value !== null && typeof value === "object") {
      const proto = Object.getPrototypeOf(value);
      if (Array.isArray(value) || proto === Object.prototype || proto === null) {
        try {
          const json = JSON.stringify(value);
          if (json !== undefined) return json;
        } catch {}
      }
    }
    try {
      return String(value);
    } catch {
      return Object.prototype.toString.call(value);
    }
  }
  const line = (values) => values.map(show).join(" ") + "\n";

  // The value of the code's last statement as `result`: JSON when it is JSON, else String.
  function render(value) {
    if (value === undefined) return null;
    try {
      const json = JSON.stringify(value);
      if (json !== undefined) return json;
    } catch {}
    try {
      return String(value);
    } catch {
      return Object.prototype.toString.call(value);
    }
  }

  // Every regular file under out/, as JSON, in path order.
  function filesJson() {
    const found = [];
    const folders = ["out"];
    while (folders.length) {
      const folder = folders.pop();
      const [names, err] = realOs.readdir(WORK + "/" + folder);
      if (err) continue; // the code removed or replaced out/
      for (const name of names) {
        if (name === "." || name === "..") continue;
        const path = folder + "/" + name;
        const [st, statErr] = realOs.stat(WORK + "/" + path);
        if (statErr) continue;
        const type = st.mode & realOs.S_IFMT;
        if (type === realOs.S_IFDIR) folders.push(path);
        else if (type === realOs.S_IFREG) found.push(path);
      }
    }
    found.sort();
    const parts = [];
    for (const path of found) {
      const full = WORK + "/" + path;
      const bytes = realStd.loadFile(full, { binary: true });
      if (!bytes) continue;
      const text = utf8Text(bytes);
      parts.push(JSON.stringify({
        path: path.toWellFormed(),
        encoding: text === null ? "base64" : "utf8",
        content: text === null ? toBase64(bytes) : text,
        size_bytes: bytes.length,
      }));
    }
    return "[" + parts.join(",") + "]";
  }

  let finished = false;
  function finish(exitCode, value) {
    if (finished) return;
    finished = true;
    const result = render(value);
    realOut.puts(
      `","stderr":${JSON.stringify(stderrText())},"exit_code":${exitCode},` +
        `"result":${result === null ? "null" : JSON.stringify(result.toWellFormed())},` +
        `"files":${filesJson()}}`,
    );
    realOut.flush();
    realExit(0);
  }

  // An uncaught exception's report: QuickJS's message and stack, without the driver's frames
  // (evalScript's backtrace barrier cuts those below the code; those of a timer are dropped).
  function describe(error) {
    if (error instanceof Error) {
      const stack = typeof error.stack === "string" ? error.stack : "";
      const frames = stack.split("\n").filter((frame) => !frame.includes("(<cmdline>:"));
      return `${show(error)}\n${frames.join("\n")}`;
    }
    return `Uncaught ${show(error)}`;
  }

  // --- what the code sees ----------------------------------------------------------------

  function sink(write) {
    return {
      puts: (text) => write(text),
      printf: (...args) => write(realStd.sprintf(...args)),
      flush() {},
      close() {},
      eof: () => false,
      isError: () => false,
      clearerr() {},
    };
  }

  function stdinFile(text) {
    let pos = 0;
    return {
      readAsString(max) {
        const end = max === undefined ? text.length : Math.min(text.length, pos + max);
        const chunk = text.slice(pos, end);
        pos = end;
        return chunk;
      },
      getline() {
        if (pos >= text.length) return null;
        let end = text.indexOf("\n", pos);
        if (end < 0) end = text.length;
        const chunk = text.slice(pos, end);
        pos = end + 1;
        return chunk;
      },
      getByte() {
        return pos < text.length ? text.charCodeAt(pos++) : -1;
      },
      eof: () => pos >= text.length,
      isError: () => false,
      clearerr() {},
      close() {},
      flush() {},
    };
  }

  // Timers are counted, so that the call ends once the last one has fired; an exception in a
  // callback is uncaught, as it would be at the top level.
  const timers = new Set();
  let whenIdle = null;
  function settled() {
    if (!timers.size && whenIdle) {
      const resolve = whenIdle;
      whenIdle = null;
      resolve();
    }
  }
  function guarded(callback, args) {
    try {
      if (typeof callback === "function") callback(...args);
    } catch (error) {
      fail(describe(error), 1);
    }
  }
  function setTimeout(callback, delay = 0, ...args) {
    const id = realOs.setTimeout(() => {
      timers.delete(id);
      guarded(callback, args);
      settled();
    }, delay);
    timers.add(id);
    return id;
  }
  function setInterval(callback, delay = 0, ...args) {
    const id = realOs.setInterval(() => guarded(callback, args), delay);
    timers.add(id);
    return id;
  }
  function clearTimer(id) {
    if (timers.delete(id)) {
      realOs.clearTimeout(id);
      settled();
    }
  }
  // Resolves on the event loop's next turn, once every microtask has run. Not a timer:
  // QuickJS-ng makes every timer wait at least 1 ms, which was most of a short program's call.
  // A write handler on stdout runs at once (the sandbox's descriptors are always ready).
  function nextTurn() {
    return new Promise((resolve) =>
      realOs.setWriteHandler(1, () => {
        realOs.setWriteHandler(1, null);
        resolve();
      }),
    );
  }
  // Resolves after every microtask has run and no timer is left.
  async function quiet() {
    for (;;) {
      await nextTurn();
      if (!timers.size) return;
      await new Promise((resolve) => (whenIdle = resolve));
    }
  }

  // --- host services ---------------------------------------------------------------------

  // Where the host answers service requests, one JSON line each (locara-sandbox's
  // `HOST_CHANNEL_PATH`); not there when the app granted the call no host service.
  const HOST_PATH = "/tmp/.locara-host";
  let hostChannel;
  // Asks host service `service`: the host's answer line (`ok`, `denied`, `failed` or
  // `invalid`), or undefined when the call may use no host service.
  function ask(service, request) {
    if (hostChannel === undefined) hostChannel = realStd.open(HOST_PATH, "r+");
    if (!hostChannel) return undefined;
    hostChannel.puts(JSON.stringify({ service, request }, fileReplacer) + "\n");
    hostChannel.flush();
    const answer = hostChannel.getline();
    return answer === null ? undefined : JSON.parse(answer);
  }
  // Asks host service `service`; its answer, or undefined when the call may not use it.
  function host(service, request) {
    const answer = ask(service, request);
    return answer === undefined ? undefined : answer.ok;
  }

  // A tool call that failed or could not run: `code`, `hint`, `violations`, `limit`, `tool`,
  // and the whole `report`.
  class LocaraError extends Error {
    constructor(tool, report) {
      const hint = report.hint ? ` (hint: ${report.hint})` : "";
      super(`${tool}: ${report.code}: ${report.message}${hint}`);
      this.name = "LocaraError";
      this.tool = tool;
      this.report = report;
      this.code = report.code;
      this.hint = report.hint ?? "";
      this.violations = report.violations ?? [];
      this.limit = report.limit;
    }
  }

  // A file a tool call produced, saved under the working directory; pass it as another call's
  // file argument.
  class LocaraFile {
    constructor(path, name, size, sha256) {
      Object.assign(this, { path, name, size, sha256 });
    }
    bytes() {
      return realStd.loadFile(this.path, { binary: true });
    }
    toString() {
      return this.path;
    }
  }

  // Files pass by value: a LocaraFile, a Uint8Array or an ArrayBuffer becomes {base64}.
  function fileReplacer(key, value) {
    if (value instanceof LocaraFile) return { base64: toBase64(value.bytes()) };
    if (value instanceof Uint8Array) return { base64: toBase64(value) };
    if (value instanceof ArrayBuffer) return { base64: toBase64(new Uint8Array(value)) };
    return value;
  }

  function toolsRequest(request) {
    const answer = ask("tools", request) ?? { denied: "this program may use no host service, so it cannot call tools" };
    if ("ok" in answer) return answer.ok;
    const [kind, message] = Object.entries(answer)[0];
    const denied = kind === "denied";
    throw new LocaraError(request.tool ?? "tools", {
      code: denied ? "capability_denied" : "failed",
      message,
      hint: denied ? "the app must grant `tools` for a program to call tools" : "",
    });
  }

  let callsMade = 0;
  function saveFiles(files) {
    callsMade += 1;
    const folder = `${WORK}/calls/${callsMade}`;
    return files.map((entry) => {
      let name = entry.name.replaceAll("/", "_");
      if (name === "" || name === "." || name === "..") name = "file";
      makeDirs(folder);
      const path = `${folder}/${name}`;
      const bytes = fromBase64(entry.base64);
      const file = realStd.open(path, "wb");
      if (!file) throw new Error(`cannot save ${path}`);
      file.write(bytes.buffer, 0, bytes.length);
      file.close();
      return new LocaraFile(path, entry.name, entry.size_bytes, entry.sha256);
    });
  }

  // Calls `tool` with `args` through the whole pipeline, with the app's grants; resolves to
  // {tool, output, files, stats}, or rejects with a LocaraError. The answer leaves the call's
  // stats with the host, which sends them when `stats` is first read: most programs never read
  // them, and they were a third of the answer.
  async function call(tool, args = {}) {
    if (typeof tool !== "string") throw new TypeError("the tool must be named by a string");
    const answer = toolsRequest({ op: "call", tool, arguments: args, stats: false });
    if (!answer.ok) throw new LocaraError(answer.tool ?? tool, answer.error ?? {});
    let stats = answer.stats;
    const kept = answer.call;
    return {
      tool: answer.tool,
      output: answer.output,
      files: saveFiles(answer.files ?? []),
      get stats() {
        if (stats === undefined && kept !== undefined) stats = toolsRequest({ op: "stats", call: kept }).stats;
        return stats;
      },
    };
  }

  function describeTool(tool) {
    const answer = toolsRequest({ op: "describe", tool });
    if (!answer.ok) throw new LocaraError(tool, answer.error ?? {});
    return answer.description;
  }

  // `locara.tools.pdfSplit({...})`: every tool as a function, named in camelCase.
  const jsName = (id) => id.replace(/[.-]+(.)/g, (_, c) => c.toUpperCase());
  let catalog;
  const tools = new Proxy({}, {
    get(_, name) {
      if (typeof name !== "string") return undefined;
      catalog ??= Object.fromEntries(toolsRequest({ op: "list" }).tools.map((t) => [jsName(t.id), t.id]));
      const id = catalog[name] ?? (Object.values(catalog).includes(name) ? name : undefined);
      if (id === undefined) throw new TypeError(`no tool ${name}; the tools are: ${Object.keys(catalog).sort().join(", ")}`);
      return (args = {}) => call(id, args);
    },
    ownKeys() {
      catalog ??= Object.fromEntries(toolsRequest({ op: "list" }).tools.map((t) => [jsName(t.id), t.id]));
      return Object.keys(catalog);
    },
    getOwnPropertyDescriptor: () => ({ enumerable: true, configurable: true }),
  });

  class ProgressTask {
    constructor(title, total) {
      if (total !== undefined && total !== null && !(Number.isInteger(total) && total >= 0)) {
        throw new TypeError(`total must be a whole number of steps or undefined, not ${total}`);
      }
      const answer = host("progress", { op: "start", title: String(title), total: total ?? null });
      this.task = answer && answer.task;
      this.finished = false;
    }
    // Counts `by` steps done (one by default), with an optional message.
    step(message, by = 1) {
      if (this.finished) throw new Error("this progress task is done");
      if (this.task !== undefined) {
        host("progress", { op: "step", task: this.task, by, message: message === undefined ? null : String(message) });
      }
    }
    // Ends the task, with an optional summary.
    done(summary) {
      if (this.finished) throw new Error("this progress task is done");
      this.finished = true;
      if (this.task !== undefined) {
        host("progress", { op: "done", task: this.task, summary: summary === undefined ? null : String(summary) });
      }
    }
  }

  function installGlobals(stdin) {
    const toStdout = (...values) => emit(line(values));
    const toStderr = (...values) => capture(line(values));
    globalThis.print = toStdout;
    globalThis.console = {
      log: toStdout, info: toStdout, debug: toStdout, dir: (value) => toStdout(value),
      error: toStderr, warn: toStderr,
    };
    globalThis.std = Object.assign({}, realStd, {
      in: stdinFile(stdin),
      out: sink(emit),
      err: sink(capture),
      puts: emit,
      printf: (...args) => emit(realStd.sprintf(...args)),
      exit: (code) => finish(code | 0, undefined),
    });
    globalThis.os = Object.assign({}, realOs, {
      setTimeout, setInterval, clearTimeout: clearTimer, clearInterval: clearTimer,
      sleepAsync: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    });
    Object.assign(globalThis, { setTimeout, setInterval, clearTimeout: clearTimer, clearInterval: clearTimer });
    // What the host offers a program: `locara.progress(title, total)` starts a task the host
    // shows while the program runs (`task.step(message)`, `task.done(summary)`); without the
    // app's `progress` grant the calls do nothing.
    // `await locara.call(tool, args)` and `await locara.tools.pdfSplit(args)` call tools
    // (`docs/code-mode.md`); `locara.search(query, limit)` and `locara.describe(tool)` find them.
    globalThis.locara = Object.freeze({
      progress: (title, total) => new ProgressTask(title, total),
      call,
      tools,
      search: async (query, limit = 10) => toolsRequest({ op: "search", query: String(query), limit }).tools,
      describe: async (tool) => describeTool(tool),
      LocaraError,
      File: LocaraFile,
    });
  }

  async function main() {
    let args;
    try {
      args = readArgs();
      placeFiles(args.files);
    } catch (error) {
      if (error instanceof BadArgs) fail(error.message, 2);
      throw error;
    }
    realOs.chdir(WORK);
    installGlobals(args.stdin);
    realOut.puts('{"stdout":"');
    let value;
    try {
      value = (await realStd.evalScript(args.code, { async: true, backtrace_barrier: true })).value;
      if (value instanceof Promise) value = await value;
      await quiet();
    } catch (error) {
      fail(describe(error), 1);
    }
    finish(0, value);
  }

  function run() {
    main().catch((error) => fail(`code-exec.js driver error: ${describe(error)}`, 1));
  }

  // Run plainly (`qjs … -e <driver>`), the driver makes its one call now. The artifact is
  // QuickJS pre-initialized with the driver loaded (locara-upstream's `quickjs`): its init's
  // argv ends with `__locara_main()`, so the driver only defines that, and each call of the
  // snapshot evaluates it, with a `scriptArgs` emptied as a plain run's.
  if (scriptArgs.at(-1) === "__locara_main()") {
    globalThis.__locara_main = () => {
      delete globalThis.__locara_main;
      scriptArgs.length = 0;
      run();
    };
  } else {
    run();
  }
})();
