"""Locara for Python apps: call signed tools in WebAssembly sandboxes (OCR, PDF, code, search...).

    from locara import Locara

    loc = Locara(home="~/.locara")
    text = loc.tools.ocr(source=Path("scan.png"))["text"]
    parts = loc.tools.pdf_split(source=Path("manual.pdf"), ranges=["1-2", "3-end"])
    for part in parts.files:
        part.save("out/")

Every call runs through Locara's pipeline (signature and hash checks, the app's grants, schema
checks, limits), the same as the ``locara`` command on the same home. Blocking methods release
the GIL while a tool runs; ``loc.aio`` has the same methods as coroutines for asyncio. A call
that cannot run, or a tool that fails, raises a :class:`LocaraError` subclass named after its
error code (:class:`InvalidInput` with its ``violations``, :class:`LimitExceeded` with its
``limit``, ...).
"""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, Mapping, Sequence, TypeVar, cast

from . import _locara

if TYPE_CHECKING:
    # `tools.pyi`, generated from the tools' manifests when the wheel is built
    # (`locara tools export --format python-module`): each tool a typed method.
    from .tools import AsyncTools as TypedAsyncTools
    from .tools import Tools as TypedTools

T = TypeVar("T")

__all__ = [
    "Locara",
    "AsyncLocara",
    "Result",
    "File",
    "LocaraError",
    "InvalidInput",
    "InvalidRequest",
    "NotFound",
    "CapabilityDenied",
    "ApprovalDenied",
    "LimitExceeded",
    "ToolFailed",
    "VerificationFailed",
    "Cancelled",
    "error_class",
]


# --- errors ------------------------------------------------------------------------------


class LocaraError(Exception):
    """A call that could not run, or a tool that ran and failed.

    ``code`` is Locara's stable snake_case code, ``hint`` says what to do next, ``report`` is
    the whole error report as a dict, and ``result`` the tool's :class:`Result` when it ran (its
    stderr, its stats) and failed.
    """

    def __init__(self, report: Mapping[str, Any], result: "Result[Any] | None" = None) -> None:
        self.report: dict[str, Any] = dict(report)
        self.code: str = str(report.get("code", "error"))
        self.message: str = str(report.get("message", ""))
        self.hint: str = str(report.get("hint", ""))
        self.violations: list[dict[str, Any]] = list(report.get("violations", []))
        self.limit: str | None = report.get("limit")
        self.exit_code: int | None = report.get("exit_code")
        self.result = result
        super().__init__(f"{self.code}: {self.message}" + (f" (hint: {self.hint})" if self.hint else ""))


class InvalidInput(LocaraError):
    """The arguments broke the tool's input schema: each of ``violations`` has a JSON
    ``pointer``, the ``constraint`` and a ``message``."""


class InvalidRequest(LocaraError):
    """The request itself is malformed: an unknown option, a bad tool reference, a bad chain."""


class NotFound(LocaraError):
    """No callable tool has that id (or a chat's tool pattern matched none)."""


class CapabilityDenied(LocaraError):
    """The tool needs a capability (a directory, a host, a service) the app did not grant."""


class ApprovalDenied(LocaraError):
    """A privileged call was refused by the approver (or there was none)."""


class LimitExceeded(LocaraError):
    """The tool hit a limit; ``limit`` names it (``fuel``, ``memory``, ``wall_time``, ...)."""


class ToolFailed(LocaraError):
    """The tool ran and failed (``exit_code`` is its exit code)."""


class VerificationFailed(LocaraError):
    """The tool's signature, key, hashes or lock did not verify; it was not run."""


class Cancelled(LocaraError):
    """The call was cancelled."""


_CLASSES: dict[str, type[LocaraError]] = {
    "invalid_input": InvalidInput,
    "invalid_request": InvalidRequest,
    "invalid_tool_ref": InvalidRequest,
    "invalid_app": InvalidRequest,
    "not_found": NotFound,
    "capability_denied": CapabilityDenied,
    "approval_denied": ApprovalDenied,
    "limit_exceeded": LimitExceeded,
    "tool_error": ToolFailed,
    "artifact_tampered": VerificationFailed,
    "untrusted": VerificationFailed,
    "revoked": VerificationFailed,
    "lock_mismatch": VerificationFailed,
    "model_tampered": VerificationFailed,
    "home_file_refused": VerificationFailed,
    "cancelled": Cancelled,
}


def error_class(code: str) -> type[LocaraError]:
    """The exception class raised for error ``code`` (:class:`LocaraError` for codes without
    their own class)."""
    return _CLASSES.get(code, LocaraError)


def _error(report: Mapping[str, Any], result: "Result[Any] | None" = None) -> LocaraError:
    return error_class(str(report.get("code", "")))(report, result)


# --- results -----------------------------------------------------------------------------


class File:
    """A file a tool produced: its ``name`` (as the tool's output names it) and ``data``."""

    __slots__ = ("name", "data", "sha256")

    def __init__(self, name: str, data: bytes, sha256: str) -> None:
        self.name = name
        self.data = data
        self.sha256 = sha256

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Writes the file into ``directory`` under its base name, never overwriting a file
        already there (``part.pdf`` becomes ``part-1.pdf``, ...); returns the path written."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        name = Path(self.name).name
        if name in ("", ".", ".."):
            raise ValueError(f"cannot save a file named {self.name!r}")
        stem, suffix = Path(name).stem, Path(name).suffix
        candidate, n = directory / name, 0
        while True:
            try:
                with open(candidate, "xb") as out:
                    out.write(self.data)
                return candidate
            except FileExistsError:
                n += 1
                candidate = directory / f"{stem}-{n}{suffix}"

    def __repr__(self) -> str:
        return f"File(name={self.name!r}, {len(self.data)} bytes)"


class Result(Generic[T]):
    """What a tool call produced: ``output`` (its JSON output), ``files`` (:class:`File`),
    ``stderr``, ``stats``, and ``approval``, ``receipt`` and ``calls`` when there are any.
    ``result["key"]`` reads the output."""

    __slots__ = ("tool", "output", "files", "stderr", "stats", "approval", "receipt", "calls", "raw")

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.tool: str = raw.get("tool", "")
        self.output: T = raw.get("output")  # type: ignore[assignment]
        self.files: list[File] = [
            File(f["name"], base64.b64decode(f["base64"]) if "base64" in f else Path(f["path"]).read_bytes(), f["sha256"])
            for f in raw.get("files", ())
        ]
        self.stderr: str = raw.get("stderr", "")
        self.stats: dict[str, Any] = raw.get("stats", {})
        self.approval: dict[str, Any] | None = raw.get("approval")
        self.receipt: dict[str, Any] | None = raw.get("receipt")
        self.calls: list[dict[str, Any]] = raw.get("calls", [])

    def __getitem__(self, key: Any) -> Any:
        return self.output[key]

    def __repr__(self) -> str:
        return f"Result(tool={self.tool!r}, output={self.output!r}, files={self.files!r})"


def _result(raw: dict[str, Any]) -> Result[Any]:
    result: Result[Any] = Result(raw)
    if not raw.get("ok", False):
        raise _error(raw.get("error") or {"code": "tool_error", "message": "the tool failed"}, result)
    return result


# --- requests ----------------------------------------------------------------------------


def _batch_call(call: Any) -> dict[str, Any]:
    if isinstance(call, tuple):
        tool, arguments = call
        return {"tool": tool, "arguments": arguments}
    call = dict(call)
    if "workspace" in call and call["workspace"] is not None:
        call["workspace"] = os.fspath(call["workspace"])
    return call


def _chain(steps: Sequence[Mapping[str, Any]], max_calls: int | None, wall_time_ms: int | None) -> dict[str, Any]:
    chain: dict[str, Any] = {"steps": [dict(s) for s in steps]}
    for step in chain["steps"]:
        if step.get("workspace") is not None:
            step["workspace"] = os.fspath(step["workspace"])
    if max_calls is not None:
        chain["max_calls"] = max_calls
    if wall_time_ms is not None:
        chain["wall_time_ms"] = wall_time_ms
    return chain


def _chat(prompt: str | None, messages: Sequence[Any] | None, options: dict[str, Any]) -> dict[str, Any]:
    request: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
    if prompt is not None:
        request["prompt"] = prompt
    if messages is not None:
        request["messages"] = list(messages)
    if "tools" in request:
        request["tools"] = list(request["tools"])
    if "workspace" in request:
        request["workspace"] = os.fspath(request["workspace"])
    return request


def _python_name(tool_id: str) -> str:
    return tool_id.replace(".", "_").replace("-", "_")


class _ToolIndex:
    """Maps attribute names (``pdf_split``) to tool ids (``pdf.split``) of one Locara."""

    def __init__(self, core: Any) -> None:
        self._core = core
        self._names: dict[str, str] | None = None

    def id_for(self, name: str) -> str | None:
        if self._names is None:
            self._names = {_python_name(t["id"]): t["id"] for t in self._core.list()}
        return self._names.get(name)

    def names(self) -> list[str]:
        self.id_for("")
        return sorted(self._names or {})


class Tools:
    """``loc.tools.pdf_split(source=..., ranges=[...])`` or ``loc.tools["pdf.split"](...)``:
    each callable tool as a function of its arguments, returning a :class:`Result` (a
    coroutine under ``loc.aio.tools``)."""

    def __init__(self, run: Callable[..., Any], index: _ToolIndex) -> None:
        self._run = run
        self._index = index

    def __getitem__(self, tool: str) -> Callable[..., Any]:
        run = self._run

        def call(arguments: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Any:
            return run(tool, {**(arguments or {}), **kwargs})

        call.__name__ = _python_name(tool)
        call.__qualname__ = f"Tools.{call.__name__}"
        call.__doc__ = f"Calls the tool `{tool}`; `describe('{tool}')` gives its schemas."
        return call

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)
        tool = self._index.id_for(name)
        if tool is None:
            raise AttributeError(f"no callable tool is named {name!r} (tools: {', '.join(self._index.names())})")
        return self[tool]

    def __dir__(self) -> Iterable[str]:
        return self._index.names()


# --- the API -----------------------------------------------------------------------------


def _core_call(core: Any, op: str, request: Any, on_event: Callable[[dict[str, Any]], None] | None = None) -> Any:
    try:
        return core.call(op, request, on_event)
    except _locara.Failure as failure:
        raise _error(failure.args[0]) from None


class Locara:
    """An open Locara home, as an app sees it.

    ``home`` is the home the ``locara`` command uses (default ``$LOCARA_HOME``). With ``app``
    (an app manifest), its tools and grants bound every call; without one the app gets what the
    CLI gives the person at the terminal: ``workspace`` (read-only unless ``allow_write``) and
    every tool. ``approve`` decides privileged calls: ``True`` approves all, a function gets each
    call's description (a dict) and returns whether it may run; without it they are refused.
    ``llm`` (an OpenAI-compatible API base) is the model ``chat`` and ``llm.chat`` use.
    """

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        *,
        app: str | os.PathLike[str] | None = None,
        engine: str | None = None,
        workspace: str | os.PathLike[str] | None = None,
        allow_write: bool = False,
        user: str | None = None,
        llm: str | None = None,
        llm_model: str | None = None,
        llm_api_key: str | None = None,
        allow_hosts: Sequence[str] = (),
        approve: bool | Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        options: dict[str, Any] = {
            "home": None if home is None else os.path.expanduser(os.fspath(home)),
            "app": app,
            "engine": engine,
            "workspace": workspace,
            "allow_write": allow_write,
            "user": user,
            "llm": llm,
            "llm_model": llm_model,
            "llm_api_key": llm_api_key,
            "allow_hosts": list(allow_hosts),
            "approve_all": approve is True,
        }
        options = {k: v for k, v in options.items() if v is not None}
        try:
            self._core = _locara.Core(options, approve if callable(approve) else None)
        except _locara.Failure as failure:
            raise _error(failure.args[0]) from None
        self._index = _ToolIndex(self._core)
        self.tools: TypedTools = cast("TypedTools", Tools(self.run, self._index))
        self.aio = AsyncLocara(self)

    def list(self) -> list[dict[str, Any]]:
        """The callable tools (newest version of each): id, version, name, description, tier."""
        return self._core.list()

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The ``limit`` tools that best match ``query``, best first."""
        return self._core.search(query, limit)

    def describe(self, tool: str) -> dict[str, Any]:
        """Everything needed to call ``tool``: description, input and output schemas, limits."""
        try:
            return self._core.describe(tool)
        except _locara.Failure as failure:
            raise _error(failure.args[0]) from None

    def export_api(self, language: str = "python") -> str:
        """The API of every callable tool as ``python``, ``python-module`` (stubs),
        ``typescript`` or ``typescript-module`` source."""
        try:
            return self._core.export_api(language)
        except _locara.Failure as failure:
            raise _error(failure.args[0]) from None

    def run(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        workspace: str | os.PathLike[str] | None = None,
        receipt: bool = False,
        seed: int | None = None,
        user: str | None = None,
    ) -> Result[Any]:
        """Runs ``tool`` (``id`` or ``id@version``) with ``arguments``. A ``bytes``, path or
        open file among them is a file, sent by its bytes. Raises a :class:`LocaraError`
        subclass when the call cannot run or the tool fails."""
        try:
            raw = self._core.run(tool, {} if arguments is None else arguments,
                                 None if workspace is None else os.fspath(workspace), receipt, seed, user)
        except _locara.Failure as failure:
            raise _error(failure.args[0]) from None
        return _result(raw)

    def run_batch(self, calls: Iterable[Any]) -> dict[str, Any]:
        """Runs calls (``(tool, arguments)`` pairs or call dicts) as one batch: read-only ones
        concurrently, the others in order. One result per call; nothing is raised for a call
        that failed (its result says why)."""
        return _core_call(self._core, "run_batch", {"calls": [_batch_call(c) for c in calls]})

    def run_chain(
        self,
        steps: Sequence[Mapping[str, Any]],
        *,
        max_calls: int | None = None,
        wall_time_ms: int | None = None,
    ) -> dict[str, Any]:
        """Runs a chain: steps ``{"tool", "arguments", "id"?, "when"?, "for_each"?, "as"?}``
        whose arguments may refer to earlier outputs (``{"$ref": "pages.output.files"}``)."""
        return _core_call(self._core, "run_chain", _chain(steps, max_calls, wall_time_ms))

    def chat(
        self,
        prompt: str | None = None,
        *,
        messages: Sequence[Any] | None = None,
        model: Mapping[str, Any] | None = None,
        system: str | None = None,
        tools: Sequence[str] | None = None,
        max_steps: int | None = None,
        max_tokens: int | None = None,
        timeout_ms: int | None = None,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        workspace: str | os.PathLike[str] | None = None,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Carries a conversation on with the model (the app's ``llm``, or ``model``:
        ``{"base_url", "model", "format"?, "api_key"?}``), running the tools it calls (ids or
        globs in ``tools``, default all) until it answers. ``on_event`` gets each step, piece of
        text and tool call as it happens. Returns the transcript: ``answer``, ``stop_reason``,
        ``steps``, ``messages``, ``usage``."""
        options = dict(model=model, system=system, tools=tools, max_steps=max_steps, max_tokens=max_tokens,
                       timeout_ms=timeout_ms, max_output_tokens=max_output_tokens, temperature=temperature,
                       seed=seed, workspace=workspace)
        return _core_call(self._core, "chat", _chat(prompt, messages, options), on_event)


class AsyncLocara:
    """The methods of a :class:`Locara` as coroutines (``loc.aio``): ``await loc.aio.run(...)``,
    ``await loc.aio.tools.ocr(source=...)``. Calls run on Locara's own threads, so many can be
    in flight from one event loop; cancelling the awaiting task stops the tool."""

    def __init__(self, loc: Locara) -> None:
        self._loc = loc
        self._core = loc._core
        self.tools: TypedAsyncTools = cast("TypedAsyncTools", Tools(self.run, loc._index))

    async def _start(self, op: str, request: Any, on_event: Callable[[dict[str, Any]], None] | None = None) -> Any:
        return await self._settle(lambda done, events: self._core.start(op, request, done, events), on_event)

    async def _settle(self, start: Callable[..., Any], on_event: Callable[[dict[str, Any]], None] | None = None) -> Any:
        """Starts a call with ``start(done, events)`` and awaits its end."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()

        def settle(ok: bool, value: Any) -> None:
            if not future.done():
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(_error(value))

        def done(ok: bool, value: Any) -> None:
            loop.call_soon_threadsafe(settle, ok, value)

        events = None
        if on_event is not None:
            def events(event: dict[str, Any]) -> None:
                loop.call_soon_threadsafe(on_event, event)

        pending = start(done, events)
        try:
            return await future
        except asyncio.CancelledError:
            pending.cancel()
            raise

    def list(self) -> list[dict[str, Any]]:
        return self._loc.list()

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        return self._loc.search(query, limit)

    def describe(self, tool: str) -> dict[str, Any]:
        return self._loc.describe(tool)

    async def run(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        workspace: str | os.PathLike[str] | None = None,
        receipt: bool = False,
        seed: int | None = None,
        user: str | None = None,
    ) -> Result[Any]:
        """:meth:`Locara.run`, awaited."""
        args = {} if arguments is None else arguments
        path = None if workspace is None else os.fspath(workspace)
        return _result(await self._settle(
            lambda done, _: self._core.start_run(tool, args, done, path, receipt, seed, user)))

    async def run_batch(self, calls: Iterable[Any]) -> dict[str, Any]:
        """:meth:`Locara.run_batch`, awaited."""
        return await self._start("run_batch", {"calls": [_batch_call(c) for c in calls]})

    async def run_chain(
        self,
        steps: Sequence[Mapping[str, Any]],
        *,
        max_calls: int | None = None,
        wall_time_ms: int | None = None,
    ) -> dict[str, Any]:
        """:meth:`Locara.run_chain`, awaited."""
        return await self._start("run_chain", _chain(steps, max_calls, wall_time_ms))

    async def chat(
        self,
        prompt: str | None = None,
        *,
        messages: Sequence[Any] | None = None,
        model: Mapping[str, Any] | None = None,
        system: str | None = None,
        tools: Sequence[str] | None = None,
        max_steps: int | None = None,
        max_tokens: int | None = None,
        timeout_ms: int | None = None,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        workspace: str | os.PathLike[str] | None = None,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """:meth:`Locara.chat`, awaited; ``on_event`` runs on the event loop."""
        options = dict(model=model, system=system, tools=tools, max_steps=max_steps, max_tokens=max_tokens,
                       timeout_ms=timeout_ms, max_output_tokens=max_output_tokens, temperature=temperature,
                       seed=seed, workspace=workspace)
        return await self._start("chat", _chat(prompt, messages, options), on_event)
