"""The driver of `code-exec.python`: CPython speaking the tool ABI (docs/code-exec.md).

Reads one JSON object on stdin (`code`, `stdin`, `files`), writes `files` under /tmp/work (the
working directory, with an empty `out/`), runs `code` as the body of a fresh `__main__` module
and writes one JSON object on stdout: `stdout`, `stderr`, `exit_code`, `result`, `files`.

- stdout is streamed: `{"stdout":"` is written first, then every write is JSON-escaped (lossy
  UTF-8) and written through a 64 KiB buffer, so a print flood reaches the host's output limit
  instead of filling the guest's memory. stderr is kept in memory, at most 1 MiB.
- `result` is `repr` of the value of the code's final expression statement, `null` when there
  is none or it is `None`.
- `sys.exit(n)` ends the code with exit_code n in a normal result. An uncaught exception, or a
  syntax error, is a tool error: its traceback (without the driver's frames) on the real stderr
  and exit code 1. Bad `files` (or arguments) are exit code 2. A MemoryError ends the process
  with exit code 1, which the host reports as the memory limit when memory growth was refused.

fd 1 is the tool's JSON output, so the code's writes to fd 1 and 2 through `os.write` (or
`posix.write`, `os.writev`) and files opened on them (`open(1, "w")`, `os.fdopen(2, "wb")`) go
into the captured streams, in order with `print`. Only a lower-level write (`io.FileIO(1)`,
`_io.open(1)`) reaches the descriptor itself: its raw bytes land inside the JSON, which the host
then refuses as invalid output unless they happen to be valid in a JSON string.

The build runs it as `python -c <this file> --locara-preinit` (locara-upstream's `cpython`
module): it copies the standard library into memory (`_keep_stdlib`), defines `__locara_main`,
imports the commonly used standard modules (re, math, datetime, decimal, collections, ...) and
runs one warm-up; the build snapshots the interpreter at that point, and each call of the
snapshot runs `__locara_main()`. (Without the flag it runs one call and exits, as a plain
`python -c` would.) Everything the snapshot froze that must differ between calls is reset at the
start of a call: `random` is reseeded from the host's entropy. The string hash seed cannot be:
it is fixed when the snapshot is built, so the iteration order of a set of strings is the same
in every call (as with a fixed PYTHONHASHSEED).
"""

# Only what every call needs; the rest is imported where it is used (what the snapshot did
# not import, a call imports from `_STDLIB`).
import _ast
import builtins
import codecs
import gc
import io
import json
import marshal
import os
import sys
import types

_WORK = "/tmp/work"
_OUT = _WORK + "/out"
_CODE_NAME = "<code>"
_PREINIT_FLAG = "--locara-preinit"
_STDOUT_BUFFER = 64 << 10
_STDERR_KEEP = 1 << 20
_encode_json_string = json.encoder.encode_basestring
_encode_json_string_ascii = json.encoder.encode_basestring_ascii
# The most a read of the host channel takes at once.
_CHANNEL_READ = 1 << 20
# The driver's own writes; the code's `os.write` is replaced (`_capture_descriptors`).
_os_write = os.write
_os_writev = getattr(os, "writev", None)
_open = io.open
# Where the host answers service requests, one JSON line each (locara-sandbox's
# `HOST_CHANNEL_PATH`); not there when the app granted the call no host service.
_HOST_PATH = "/tmp/.locara-host"
_host_channel = None


class _BadArgs(Exception):
    """The arguments cannot be used (exit code 2)."""


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[_os_write(fd, view):]


def _clean_text(text):
    """`text` without lone surrogates (each becomes U+FFFD), so that it encodes to UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


class _ByteSink(io.RawIOBase):
    """`sys.stdout.buffer` / `sys.stderr.buffer`: bytes are decoded (lossy UTF-8) and passed on."""

    def __init__(self, text_stream):
        super().__init__()
        self._text = text_stream

    def writable(self):
        return True

    def write(self, data):
        data = bytes(data)
        self._text._write_bytes(data)
        return len(data)


class _TextSink(io.TextIOBase):
    """A text stream that is not a file (no `fileno`), with a bytes `buffer`."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self):
        super().__init__()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.buffer = _ByteSink(self)

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        self._emit(text)
        return len(text)

    def _write_bytes(self, data):
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        self._emit(self._decoder.decode(data))

    def _end_bytes(self):
        self._emit(self._decoder.decode(b"", True))


class _StreamedStdout(_TextSink):
    """stdout, JSON-escaped into the result as it is written."""

    def __init__(self):
        super().__init__()
        self._pending = []
        self._size = 0

    def _emit(self, text):
        if not text:
            return
        escaped = _encode_json_string(_clean_text(text))[1:-1].encode("utf-8")
        self._pending.append(escaped)
        self._size += len(escaped)
        if self._size >= _STDOUT_BUFFER:
            self._drain()

    def flush(self):
        if self.closed:
            raise ValueError("I/O operation on closed file.")

    def _drain(self):
        if self._pending:
            data = b"".join(self._pending)
            self._pending = []
            self._size = 0
            _write_all(1, data)


class _CapturedStderr(_TextSink):
    """stderr, kept in memory up to _STDERR_KEEP bytes."""

    def __init__(self):
        super().__init__()
        self._kept = []
        self._size = 0
        self._dropped = 0

    def _emit(self, text):
        data = _clean_text(text).encode("utf-8")
        room = _STDERR_KEEP - self._size
        if len(data) > room:
            self._dropped += len(data) - max(room, 0)
            data = data[: max(room, 0)]
        if data:
            self._kept.append(data)
            self._size += len(data)

    def flush(self):
        pass

    def text(self):
        text = b"".join(self._kept).decode("utf-8", "replace")
        if self._dropped:
            text += f"\n[stderr truncated: {self._dropped} more bytes were dropped]"
        return text


def _capture_descriptors(stdout, stderr):
    """Sends the code's writes to fd 1 and 2 into `stdout` and `stderr` (see the module doc)."""
    import posix

    sinks = {1: stdout, 2: stderr}

    def write(fd, data):
        sink = sinks.get(fd) if isinstance(fd, int) else None
        if sink is None:
            return _os_write(fd, data)
        data = bytes(memoryview(data))
        sink._write_bytes(data)
        return len(data)

    def writev(fd, buffers):
        sink = sinks.get(fd) if isinstance(fd, int) else None
        if sink is None:
            return _os_writev(fd, buffers)
        return sum(write(fd, buffer) for buffer in buffers)

    def open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True, opener=None):
        sink = sinks.get(file) if isinstance(file, int) else None
        if sink is None:
            return _open(file, mode, buffering, encoding, errors, newline, closefd, opener)
        if "r" in mode or "+" in mode:
            raise io.UnsupportedOperation(f"fd {file} is write-only")
        raw = _ByteSink(sink)
        if "b" in mode:
            return raw
        return io.TextIOWrapper(raw, encoding or "utf-8", errors or "strict", newline, write_through=True)

    os.write = posix.write = write
    if _os_writev is not None:
        os.writev = posix.writev = writev
    builtins.open = io.open = open


def _ask(service, request):
    """Asks host service `service`: the host's answer as a dict (`ok`, `denied`, `failed` or
    `invalid`), or None when the call may use no host service. The answer comes in `marshal`
    format (`{"marshal": N}` and N bytes), which CPython reads in C several times faster than
    JSON. The host answers a request before its write returns, so one read usually holds all
    of it; every step below is on the path of each tool call a program makes."""
    global _host_channel
    try:
        channel = _host_channel
        if channel is None:
            channel = _host_channel = _open(_HOST_PATH, "r+b", buffering=0)
        line = (
            '{"service":' + _encode_json_string_ascii(service) + ',"answer":"marshal","request":'
            + _encode_request(request) + "}\n"
        ).encode()
        written = channel.write(line)
        if written != len(line):
            view = memoryview(line)[written:]
            while view:
                view = view[channel.write(view):]
        data = channel.read(_CHANNEL_READ) or b""
        end = data.find(b"\n")
        while end < 0:
            chunk = channel.read(_CHANNEL_READ)
            if not chunk:
                return None
            data += chunk
            end = data.find(b"\n")
        if not data.startswith(b'{"marshal":'):
            return json.loads(data[:end])
        size = int(data[11:end - 1])
        while len(data) - end - 1 < size:
            chunk = channel.read(_CHANNEL_READ)
            if not chunk:
                return None
            data += chunk
    except OSError:
        return None
    return {"ok": marshal.loads(memoryview(data)[end + 1:end + 1 + size])}


def _new_request_encoder():
    """CPython's C JSON encoder, compact, with file arguments by value (`_json_default`); None
    where there is none."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    return make(
        {}, _json_default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True
    )


_request_encoder = None


def _encode_request(value):
    """`value` as JSON text for the host. One C encoder serves every request: `json.dumps`
    with `default` builds a `JSONEncoder` per call, two thirds of a short request's encoding
    in the sandbox (15 µs against 5)."""
    global _request_encoder
    if _request_encoder is None:
        _request_encoder = _new_request_encoder()
        if _request_encoder is None:
            return json.dumps(value, default=_json_default)
    try:
        return "".join(_request_encoder(value, 0))
    except BaseException:
        # Its circular-reference markers may still hold this value's containers.
        _request_encoder = None
        raise


def _host(service, request):
    """Asks host service `service`; its answer, or None when the call may not use it."""
    answer = _ask(service, request)
    return answer.get("ok") if isinstance(answer, dict) else None


def _json_default(value):
    """A file argument's bytes, as the host takes them by value: `{"base64": …}`."""
    import base64

    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    elif isinstance(value, os.PathLike):
        with _open(os.fspath(value), "rb") as file:
            data = file.read()
    else:
        raise TypeError(
            f"a tool argument cannot be a {type(value).__name__}: pass dicts, lists, strings, "
            "numbers, booleans, None, or a file (a locara.File, a pathlib.Path, bytes)"
        )
    return {"base64": base64.b64encode(data).decode("ascii")}


class LocaraError(Exception):
    """A tool call that failed or could not run. `code` (`invalid_input`, `capability_denied`,
    `limit_exceeded`, `tool_error`, ...), `message`, `hint`, `violations` (each with `pointer`,
    `constraint` and `message`), `limit` (for `limit_exceeded`), `tool`, and the whole `report`."""

    def __init__(self, tool, report):
        self.tool = tool
        self.report = report
        self.code = report.get("code", "failed")
        self.message = report.get("message", "")
        self.hint = report.get("hint", "")
        self.violations = report.get("violations", [])
        self.limit = report.get("limit")
        text = f"{tool}: {self.code}: {self.message}"
        super().__init__(text + (f" (hint: {self.hint})" if self.hint else ""))


class File(os.PathLike):
    """A file a tool call produced, saved under the working directory: `path`, `name`, `size`,
    `sha256`. Open it like a path; pass it as another call's file argument."""

    def __init__(self, path, name, size, sha256):
        self.path, self.name, self.size, self.sha256 = path, name, size, sha256

    def __fspath__(self):
        return self.path

    def read_bytes(self):
        with _open(self.path, "rb") as file:
            return file.read()

    def __repr__(self):
        return f"locara.File({self.path!r}, size={self.size})"


class Result:
    """What a tool call returned: `tool` (`id@version`), `output` (its JSON), `files` (a list of
    `locara.File`), `stats` (how it ran: `engine`, `elapsed_ms`, `fuel_consumed`, `limits`; the
    host sends them when first read). `result["key"]` reads the output."""

    def __init__(self, tool, output, files, stats=None, call=None):
        self.tool, self.output, self.files = tool, output, files
        self._stats, self._call = stats, call

    @property
    def stats(self):
        if self._stats is None and self._call is not None:
            self._stats = _tools_request({"op": "stats", "call": self._call})["stats"]
            self._call = None
        return self._stats

    @stats.setter
    def stats(self, stats):
        self._stats, self._call = stats, None

    def __getitem__(self, key):
        return self.output[key]

    def __repr__(self):
        return f"locara.Result({self.tool!r}, output={self.output!r}, files={self.files!r})"


_calls_made = 0


def _tools_request(request):
    """The gateway's answer to `request`; raises LocaraError when it refused or failed."""
    answer = _ask("tools", request)
    if answer is None:
        answer = {"denied": "this program may use no host service, so it cannot call tools"}
    if "ok" in answer:
        return answer["ok"]
    kind, message = next(iter(answer.items()))
    code = "capability_denied" if kind == "denied" else "failed"
    hint = "the app must grant `tools` for a program to call tools" if kind == "denied" else ""
    raise LocaraError(request.get("tool", "tools"), {"code": code, "message": message, "hint": hint})


def _save_files(files):
    """Writes the files of a call's answer under calls/<n>/ in the working directory."""
    import base64

    global _calls_made
    _calls_made += 1
    saved = []
    for entry in files:
        name = entry["name"].replace("/", "_")
        if name in ("", ".", ".."):
            name = "file"
        folder = f"{_WORK}/calls/{_calls_made}"
        os.makedirs(folder, exist_ok=True)
        path = f"{folder}/{name}"
        with _open(path, "wb") as file:
            file.write(base64.b64decode(entry["base64"]))
        saved.append(File(path, entry["name"], entry["size_bytes"], entry["sha256"]))
    return saved


def _call(tool, arguments=None, /, **kwargs):
    """Calls tool `tool` (`id` or `id@version`) with `arguments` (a dict) and/or keyword
    arguments, through the whole pipeline with the app's grants; returns a `locara.Result`.
    Raises `locara.LocaraError` when the call fails or cannot run. Files pass by value: a
    `locara.File`, a `pathlib.Path` or bytes, anywhere in the arguments."""
    if not isinstance(tool, str):
        raise TypeError(f"the tool must be named by a string, not {type(tool).__name__}")
    merged = dict(arguments or {})
    merged.update(kwargs)
    # The answer leaves the call's stats with the host, which sends them only if the program
    # reads them (`Result.stats`): most never do, and they were a third of the answer.
    answer = _tools_request({"op": "call", "tool": tool, "arguments": merged, "stats": False})
    if not answer.get("ok"):
        raise LocaraError(answer.get("tool", tool), answer.get("error") or {})
    files = _save_files(answer.get("files", []))
    return Result(
        answer["tool"], answer.get("output"), files, answer.get("stats"), answer.get("call")
    )


def _python_name(tool_id):
    return tool_id.replace(".", "_").replace("-", "_")


def _tool_doc(description):
    """A docstring from a tool's description and input schema."""
    summary = description.get("summary", {})
    schema = description.get("input_schema", {})
    required = set(schema.get("required", []))
    lines = [summary.get("description", ""), "", "Arguments:"]
    for name, spec in schema.get("properties", {}).items():
        kind = spec.get("type", "file" if spec.get("x-locara-blob") else "any")
        need = "required" if name in required else "optional"
        lines.append(f"    {name} ({kind}, {need}): {spec.get('description', '')}")
    return "\n".join(lines)


class _Tools:
    """Every tool the program may call, as a function: `locara.tools.pdf_split(source=...)`
    (dots and dashes become `_`), or `locara.tools["pdf.split"](...)`. `dir(locara.tools)`
    lists them; `help(locara.tools.pdf_split)` shows the arguments."""

    def __init__(self):
        self._catalog = None

    def _ids(self):
        if self._catalog is None:
            answer = _tools_request({"op": "list"})
            self._catalog = {_python_name(t["id"]): t["id"] for t in answer["tools"]}
        return self._catalog

    def _function(self, tool_id):
        description = _describe(tool_id)

        def call(arguments=None, /, **kwargs):
            return _call(tool_id, arguments, **kwargs)

        call.__name__ = _python_name(tool_id)
        call.__qualname__ = "tools." + call.__name__
        call.__doc__ = _tool_doc(description)
        return call

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        ids = self._ids()
        if name not in ids:
            raise AttributeError(f"no tool {name!r}; the tools are: {', '.join(sorted(ids))}")
        function = self._function(ids[name])
        setattr(self, name, function)
        return function

    def __getitem__(self, tool_id):
        return self._function(tool_id)

    def __dir__(self):
        return sorted(self._ids())


def _describe(tool):
    """Everything needed to call `tool`: its summary, input and output schemas, limits."""
    answer = _tools_request({"op": "describe", "tool": tool})
    if not answer.get("ok"):
        raise LocaraError(tool, answer.get("error") or {})
    return answer["description"]


def _search(query, limit=10):
    """The tools whose name or description match `query`, best first (dicts with `id`, `tool`,
    `description`, `safety_tier`, `score`)."""
    return _tools_request({"op": "search", "query": str(query), "limit": limit})["tools"]


class _ProgressTask:
    """A progress task the host shows while the program runs (`locara.progress`)."""

    def __init__(self, title, total):
        if total is not None and (not isinstance(total, int) or isinstance(total, bool) or total < 0):
            raise ValueError(f"total must be a whole number of steps or None, not {total!r}")
        answer = _host("progress", {"op": "start", "title": str(title), "total": total})
        self._task = answer.get("task") if isinstance(answer, dict) else None
        self._done = False

    def step(self, message=None, by=1):
        """Counts `by` steps done (one by default), with an optional message."""
        if self._done:
            raise RuntimeError("this progress task is done")
        if self._task is not None:
            message = None if message is None else str(message)
            _host("progress", {"op": "step", "task": self._task, "by": by, "message": message})

    def done(self, summary=None):
        """Ends the task, with an optional summary."""
        if self._done:
            raise RuntimeError("this progress task is done")
        self._done = True
        if self._task is not None:
            summary = None if summary is None else str(summary)
            _host("progress", {"op": "done", "task": self._task, "summary": summary})

    def __enter__(self):
        return self

    def __exit__(self, *_):
        if not self._done:
            self.done()
        return False


def _locara_module():
    """The `locara` module the code can import: what the host offers a program."""
    module = types.ModuleType("locara", "What the Locara host offers a program.")

    def progress(title, total=None):
        """Starts a progress task the host shows while the program runs: `task.step(message)`
        counts a step, `task.done(summary)` ends it (or use it in a `with` block). Without the
        app's `progress` grant the calls do nothing."""
        return _ProgressTask(title, total)

    module.progress = progress
    module.call = _call
    module.search = _search
    module.describe = _describe
    module.tools = _Tools()
    module.File = File
    module.Result = Result
    module.LocaraError = LocaraError
    return module


def _read_input():
    chunks = []
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    try:
        args = json.loads(b"".join(chunks))
    except (ValueError, UnicodeDecodeError) as error:
        raise _BadArgs(f"the arguments are not valid JSON: {error}") from None
    if not isinstance(args, dict):
        raise _BadArgs("the arguments must be a JSON object")
    unknown = sorted(set(args) - {"code", "stdin", "files"})
    if unknown:
        raise _BadArgs(f"unknown argument {unknown[0]!r} (expected code, stdin, files)")
    code = args.get("code")
    if not isinstance(code, str):
        raise _BadArgs("`code` must be a string")
    stdin = args.get("stdin", "")
    if not isinstance(stdin, str):
        raise _BadArgs("`stdin` must be a string")
    files = args.get("files", [])
    if not isinstance(files, list):
        raise _BadArgs("`files` must be an array")
    return code, stdin, files


def _check_relative(path):
    """The input file's path made safe: relative, `/`-separated, no `..`, not empty."""
    if path.startswith("/"):
        raise ValueError("the path must be relative to the working directory, not absolute")
    if "\0" in path:
        raise ValueError("the path contains a NUL character")
    if path.endswith("/"):
        raise ValueError("the path names a folder; give a file name")
    parts = []
    for part in path.split("/"):
        if part == "..":
            raise ValueError('the path must not contain ".."')
        if part not in ("", "."):
            parts.append(part)
    if not parts:
        raise ValueError("the path is empty")
    return "/".join(parts)


def _b64decode(text):
    """Standard base64; padding optional, whitespace ignored."""
    import base64
    import binascii

    text = "".join(text.split())
    if len(text) % 4 == 1:
        raise ValueError("invalid base64: the length is not a whole number of bytes")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ValueError(f"invalid base64: {error}") from None


def _place_files(files):
    # Two mkdirs: `os.makedirs` checks and splits the path in Python first, which costs this
    # (unoptimized) interpreter as much as a whole small program.
    for folder in (_WORK, _OUT):
        try:
            os.mkdir(folder)
        except FileExistsError:
            pass
    for index, entry in enumerate(files):
        path = entry.get("path") if isinstance(entry, dict) else None

        def bad(why):
            return _BadArgs(f"files[{index}] ({path!r}): {why}")

        if not isinstance(entry, dict):
            raise bad("each file must be an object with `path` and `content`")
        unknown = sorted(set(entry) - {"path", "content", "encoding"})
        if unknown:
            raise bad(f"unknown field {unknown[0]!r}")
        content = entry.get("content")
        encoding = entry.get("encoding", "utf8")
        if not isinstance(path, str):
            raise bad("`path` must be a string")
        if not isinstance(content, str):
            raise bad("`content` must be a string")
        try:
            relative = _check_relative(path)
            if encoding == "utf8":
                data = _clean_text(content).encode("utf-8")
            elif encoding == "base64":
                data = _b64decode(content)
            else:
                raise ValueError(f'unknown encoding {encoding!r} (expected "utf8" or "base64")')
        except ValueError as error:
            raise bad(str(error)) from None
        full = _WORK + "/" + relative
        try:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as file:
                file.write(data)
        except IsADirectoryError:
            raise bad("a folder of that name already exists") from None
        except OSError as error:
            raise bad(f"cannot write it: {error.strerror or error}") from None


def _out_files():
    """Every regular file under out/, as ("out/…", full path), in path order."""
    found = []
    stack = [("out", _OUT)]
    while stack:
        shown, folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # the code removed or replaced out/
        for entry in entries:
            child = shown + "/" + entry.name
            if entry.is_dir(follow_symlinks=False):
                stack.append((child, entry.path))
            elif entry.is_file(follow_symlinks=False):
                found.append((child, entry.path))
    found.sort()
    return found


def _files_json():
    import base64

    parts = []
    for shown, full in _out_files():
        with _open(full, "rb") as file:
            data = file.read()
        try:
            encoding, content = "utf8", data.decode("utf-8")
        except UnicodeDecodeError:
            encoding, content = "base64", base64.b64encode(data).decode("ascii")
        parts.append(
            '{"path":%s,"encoding":"%s","content":%s,"size_bytes":%d}'
            % (_encode_json_string(_clean_text(shown)), encoding, _encode_json_string(content), len(data))
        )
    return "[" + ",".join(parts) + "]"


def _compile(code):
    """The module body and, if the code ends in an expression statement, that expression."""
    tree = compile(code, _CODE_NAME, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        last = _ast.Expression(tree.body.pop().value)
    body = compile(tree, _CODE_NAME, "exec", dont_inherit=True)
    expression = compile(last, _CODE_NAME, "eval", dont_inherit=True) if last is not None else None
    return body, expression


def _show_source(code):
    """Lets tracebacks quote the code's lines."""
    import linecache

    linecache.cache[_CODE_NAME] = (len(code), None, code.splitlines(True), _CODE_NAME)


def _user_traceback(error):
    """The traceback of `error` from the first frame of the code on (the driver's cut off)."""
    import traceback

    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != _CODE_NAME:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(error), error, tb))


def _fail(message):
    """A tool error: `message` on the real stderr, exit code 1."""
    _write_all(2, _clean_text(message).encode("utf-8"))
    os._exit(1)


def _out_of_memory(error=None):
    """Ends the call after a MemoryError with exit code 1 (the host names the memory limit)."""
    try:
        message = _user_traceback(error) if error is not None else "MemoryError\n"
    except BaseException:
        message = "MemoryError: the program ran out of memory\n"
    try:
        _write_all(2, message.encode("utf-8", "replace"))
    finally:
        os._exit(1)


def _exit_status(error, stderr):
    """The exit code of a SystemExit, printing a non-integer status as Python does."""
    code = error.code
    if code is None:
        return 0
    if isinstance(code, int):
        return int(code)
    try:
        print(code, file=stderr)
    except BaseException:
        pass
    return 1


def _main():
    try:
        code, stdin, files = _read_input()
        _place_files(files)
    except _BadArgs as error:
        _write_all(2, (str(error) + "\n").encode("utf-8", "replace"))
        os._exit(2)
    os.chdir(_WORK)
    _show_source(code)
    try:
        body, expression = _compile(code)
    except (SyntaxError, ValueError) as error:
        # ValueError: a NUL character in the source.
        import traceback

        message = "".join(traceback.format_exception_only(type(error), error))
        lineno = getattr(error, "lineno", None)
        if lineno is not None:
            message += f"(line {lineno}, column {getattr(error, 'offset', None) or 0})\n"
        _fail(message)
    _forget_import_caches()

    stdout = _StreamedStdout()
    stderr = _CapturedStderr()
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    sys.modules["locara"] = _locara_module()
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8", "surrogatepass")), "utf-8", "replace")
    sys.stdout = sys.__stdout__ = stdout
    sys.stderr = sys.__stderr__ = stderr
    _capture_descriptors(stdout, stderr)
    _write_all(1, b'{"stdout":"')

    exit_code = 0
    result = None
    try:
        exec(body, main.__dict__)
        if expression is not None:
            value = eval(expression, main.__dict__)
            if value is not None:
                result = repr(value)
    except SystemExit as error:
        exit_code = _exit_status(error, stderr)
    except MemoryError as error:
        _out_of_memory(error)
    except BaseException as error:
        _fail(_user_traceback(error))

    stdout._end_bytes()
    stdout._drain()
    stderr._end_bytes()
    tail = ',"stderr":%s,"exit_code":%d,"result":%s,"files":%s}' % (
        _encode_json_string(stderr.text()),
        exit_code,
        "null" if result is None else _encode_json_string(_clean_text(result)),
        _files_json(),
    )
    _write_all(1, b'"' + tail.encode("utf-8"))
    os._exit(0)


def _forget_import_caches():
    # The input files are new: drop whatever the import system cached about the working
    # directory (nothing in a fresh process; the cached standard library stays).
    sys.path_importer_cache.pop(os.getcwd(), None)


def __locara_main():
    sys.argv = ["-c"]
    # A snapshot holds the generator's state from build time; a plain run seeds it on import.
    if "random" in sys.modules:
        sys.modules["random"].seed()
    try:
        _main()
    except MemoryError as error:
        _out_of_memory(error)
    except BaseException as error:
        import traceback

        _fail("code-exec.python driver error: " + "".join(traceback.format_exception(error)))


class _Stdlib:
    """The standard library's modules, from memory: the meta path finder and loader of every
    module the snapshot did not import yet.

    At build time the interpreter starts with the standard library in a zip that exists only
    during the init (locara-upstream's `cpython` module); `_keep_stdlib` copies its compiled
    modules into `_STDLIB` (name -> (is a package, marshalled code)), which the snapshot keeps.
    """

    prefix = "/usr/local/lib/python%d.%d/" % sys.version_info[:2]

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        entry = _STDLIB.get(name)
        if entry is None:
            return None
        is_package = entry[0]
        origin = cls.prefix + name.replace(".", "/") + ("/__init__.py" if is_package else ".py")
        spec = type(sys.__spec__)(name, cls, origin=origin, is_package=is_package)
        spec.has_location = True
        return spec

    @staticmethod
    def create_module(spec):
        return None

    @classmethod
    def exec_module(cls, module):
        exec(cls.get_code(module.__spec__.name), module.__dict__)

    @staticmethod
    def get_code(name):
        return marshal.loads(_STDLIB[name][1])

    @staticmethod
    def get_source(name):
        return None

    @staticmethod
    def is_package(name):
        return _STDLIB[name][0]


_STDLIB = {}


def _keep_stdlib():
    """Copies the standard library's zip (the last entry of sys.path) into `_STDLIB` and imports
    from there from now on, as every call of the snapshot will."""
    import zipimport

    archive = sys.path[-1]
    if not archive.endswith(".zip"):
        raise RuntimeError("the standard library is not in a zip: sys.path is %r" % sys.path)
    for path, entry in zipimport._read_directory(archive).items():
        if not path.endswith(".pyc"):
            continue
        name = path[:-4].replace("/", ".")
        is_package = name.endswith(".__init__")
        if is_package:
            name = name[: -len(".__init__")]
        # The 16-byte header: magic number, flags and source hash (checked by the packer).
        _STDLIB[name] = (is_package, zipimport._get_data(archive, entry)[16:])
    sys.meta_path.insert(0, _Stdlib)
    sys.path.remove(archive)
    sys.path_importer_cache.pop(archive, None)
    zipimport._zip_directory_cache.pop(archive, None)
    # What was imported from the zip before now reads it no more.
    for module in list(sys.modules.values()):
        spec = getattr(module, "__spec__", None)
        if spec is not None and isinstance(spec.loader, zipimport.zipimporter):
            spec.loader = module.__loader__ = _Stdlib


def _warm_up():
    """Runs what every call runs once, so that its lazy state is in the snapshot."""
    body, expression = _compile("x = [1, 2]\nx")
    namespace = {"__builtins__": builtins}
    exec(body, namespace)
    repr(eval(expression, namespace))
    try:
        exec(compile("1 / 0", _CODE_NAME, "exec"), namespace)
    except ZeroDivisionError as error:
        _user_traceback(error)
    _show_source("x = 1\n")
    _encode_json_string(_clean_text("a\u00e9\n"))
    codecs.getincrementaldecoder("utf-8")("replace").decode(b"\xc3")
    io.TextIOWrapper(io.BytesIO(b""), "utf-8", "replace").read()
    gc.collect()
    # Everything made so far lives as long as the snapshot: keep the collector off it.
    gc.freeze()


if sys.argv[1:] == [_PREINIT_FLAG]:
    _keep_stdlib()
    # CPython for WASI defaults to 600, for the 512 KiB C stack WASI builds have; this one has
    # 8 MiB, and the sandbox gives wasm 4 MiB of native stack: Python's usual limit fits.
    sys.setrecursionlimit(1000)
    # Preloaded for the code: in a snapshot they cost nothing to import. (A plain run does not
    # pay for them up front.)
    import base64
    import binascii
    import bisect
    import collections
    import contextlib
    import copy
    import csv
    import dataclasses
    import datetime
    import decimal
    import enum
    import fractions
    import functools
    import hashlib
    import heapq
    import itertools
    import linecache
    import math
    import operator
    import pprint
    import random
    import re
    import statistics
    import string
    import struct
    import textwrap
    import time
    import traceback
    import typing

    _warm_up()
else:
    __locara_main()
