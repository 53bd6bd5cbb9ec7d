"""The `locara` package as an app uses it: real tools on real input, from the installed wheel.

`cargo xtask sdk test` builds the wheel, installs it, and runs this suite with LOCARA_TEST_HOME
(a home with the tools it calls, signed by the development key in its keys/) and LOCARA_REPO.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import locara
from locara import (
    ApprovalDenied,
    CapabilityDenied,
    InvalidInput,
    InvalidRequest,
    LimitExceeded,
    Locara,
    LocaraError,
    NotFound,
    ToolFailed,
    VerificationFailed,
)

HOME = Path(os.environ["LOCARA_TEST_HOME"])
REPO = Path(os.environ["LOCARA_REPO"])
PDF = Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf")
VENV = Path(os.environ.get("LOCARA_PY_VENV", "/var/tmp/locara-py"))
CLI = Path(os.environ["LOCARA_CLI"])


@pytest.fixture(scope="module")
def loc() -> Locara:
    return Locara(HOME)


@pytest.fixture(scope="module")
def title_png(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The title block of the PDF's first page, rendered by poppler (as CI's OCR check does)."""
    out = tmp_path_factory.mktemp("ocr") / "title"
    subprocess.run(
        ["pdftoppm", "-png", "-singlefile", "-r", "100", "-f", "1", "-l", "1", "-x", "110", "-y", "280",
         "-W", "640", "-H", "110", str(PDF), str(out)],
        check=True,
    )
    return out.with_suffix(".png")


def test_the_package_is_the_installed_wheel_and_typed() -> None:
    package = Path(locara.__file__).parent
    assert "site-packages" in str(package), package
    assert (package / "py.typed").is_file()
    assert "def pdf_split(self, *" in (package / "tools.pyi").read_text()


def test_list_search_and_describe(loc: Locara) -> None:
    ids = [tool["id"] for tool in loc.list()]
    assert "text.chunk" in ids and "pdf.split" in ids, ids
    assert loc.search("split a PDF into parts", 3)[0]["id"] == "pdf.split"
    described = loc.describe("pdf.split")
    assert "ranges" in described["input_schema"]["properties"], described
    with pytest.raises(NotFound) as refused:
        loc.describe("no.such-tool")
    assert refused.value.code == "not_found" and refused.value.hint


def test_ocr_reads_a_real_image_given_as_a_path_bytes_or_an_open_file(loc: Locara, title_png: Path) -> None:
    by_path = loc.tools.ocr(source=title_png)
    assert "Abstract Syntax Notation One" in by_path["text"], by_path.output
    by_bytes = loc.tools.ocr(source=title_png.read_bytes())
    with open(title_png, "rb") as image:
        by_file = loc.tools["ocr"]({"source": image})
    assert by_bytes.output == by_path.output == by_file.output


def test_pdf_split_returns_files_that_save_without_overwriting(loc: Locara, tmp_path: Path) -> None:
    result = loc.tools.pdf_split(source=PDF, ranges=["1-2", "3-end"])
    assert [f.name for f in result.files] == ["part-001.pdf", "part-002.pdf"]
    assert result.files[0].data.startswith(b"%PDF")
    saved = result.files[1].save(tmp_path)
    again = result.files[1].save(tmp_path)
    assert (saved.name, again.name) == ("part-002.pdf", "part-002-1.pdf")
    info = subprocess.run(["pdfinfo", str(saved)], check=True, capture_output=True, text=True).stdout
    assert any(line.split() == ["Pages:", "34"] for line in info.splitlines()), info


def test_code_runs_in_the_sandbox(loc: Locara) -> None:
    result = loc.tools.code_exec_python(code="import math\nprint(math.comb(10, 3))")
    assert result["stdout"] == "120\n", result.output
    assert result.stats["engine"] == "wasmtime"


def test_a_chain_splits_a_pdf_and_extracts_each_part(loc: Locara) -> None:
    response = loc.run_chain(
        [
            {"id": "pages", "tool": "pdf.split", "arguments": {"source": PDF, "ranges": ["1", "2"]}},
            {"id": "texts", "tool": "pdf.extract-text", "for_each": {"$ref": "pages.files"}, "as": "part",
             "arguments": {"source": {"$ref": "part"}}},
        ]
    )
    assert response["ok"], response
    # Step 1 ran once per part; its calls are the chain's calls 1 and 2.
    assert [(t["step"], t["calls"]) for t in response["trace"]] == [(0, [0]), (1, [1, 2])]
    texts = [response["steps"][i]["output"] for i in response["trace"][1]["calls"]]
    assert [t["page_count"] for t in texts] == [1, 1]
    assert "Abstract Syntax Notation One" in texts[0]["pages"][0]["text"], texts[0]


def test_a_batch_reports_each_call_and_overlaps_read_only_ones(loc: Locara) -> None:
    response = loc.run_batch(
        [("text.chunk", {"text": f"One. Two. {n}.", "max_chars": 5}) for n in range(4)]
        + [{"tool": "text.chunk", "arguments": {"text": 7}}]
    )
    results = response["results"]
    assert [r["response"]["ok"] for r in results[:4]] == [True] * 4, results
    assert not response["ok"]
    assert results[4]["error"]["code"] == "invalid_input", results[4]
    # Read-only calls of a batch overlap: four half-second sleeps in about one.
    loc.tools.code_exec_python(code="print(1)")  # compiled, warm
    started = time.monotonic()
    sleeps = loc.run_batch([("code-exec.python", {"code": "import time\ntime.sleep(0.5)"})] * 4)
    assert sleeps["ok"], sleeps
    assert time.monotonic() - started < 1.6


def test_each_error_code_raises_its_class(loc: Locara, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as invalid:
        loc.tools.text_chunk(text=7)
    assert invalid.value.violations[0]["pointer"] == "/text"
    with pytest.raises(NotFound):
        loc.run("no.such-tool")
    with pytest.raises(InvalidRequest, match="unknown engine"):
        Locara(HOME, engine="v8")
    with pytest.raises(InvalidRequest):
        loc.run("text.chunk!")
    with pytest.raises(TypeError, match="cannot send a set"):
        loc.tools.text_chunk(text={1, 2})
    # A tool that needs the workspace, when the app granted none.
    with pytest.raises(CapabilityDenied) as denied:
        loc.tools.filesystem_search(query="x")
    assert "workspace" in str(denied.value)
    # The tool ran and failed: the error carries what it wrote.
    with pytest.raises(ToolFailed) as failed:
        loc.tools.pdf_split(source=b"not a pdf", ranges=["1"])
    assert failed.value.result is not None and failed.value.exit_code is not None
    with pytest.raises(LimitExceeded) as limit:
        loc.tools.code_exec_python(code="print('x' * 50_000_000)")
    assert limit.value.limit in ("output_bytes", "memory", "fuel", "wall_time"), limit.value.report
    assert all(issubclass(c, LocaraError) for c in (InvalidInput, NotFound, ToolFailed, LimitExceeded))


def _home_with_a_privileged_tool(tmp_path: Path) -> Path:
    """A copy of the home with `test.admin`, text.chunk's module published as privileged."""
    home = tmp_path / "home"
    shutil.copytree(HOME, home, ignore=shutil.ignore_patterns("cache"))
    source = home / "registry/tools/text.chunk/0.1.0"
    manifest = json.loads((source / "manifest.json").read_text())
    manifest.update(id="test.admin", safety_tier="privileged")
    del manifest["artifact"]
    template = tmp_path / "admin.json"
    template.write_text(json.dumps(manifest))
    subprocess.run(
        [str(CLI), "--home", str(home), "publish", "--key", str(home / "keys/locara-dev.secret.json"),
         "--manifest", str(template), "--wasm", str(source / "text.chunk-0.1.0.wasm")],
        check=True, capture_output=True,
    )
    return home


def test_privileged_calls_need_the_apps_approval(tmp_path: Path) -> None:
    home = _home_with_a_privileged_tool(tmp_path)
    with pytest.raises(ApprovalDenied):
        Locara(home).tools.test_admin(text="a. b.")
    asked: list[dict] = []

    def approve(question: dict) -> bool:
        asked.append(question)
        return question["arguments"]["text"] == "fine."

    loc = Locara(home, approve=approve)
    assert loc.tools.test_admin(text="fine.").approval["approved"] is True
    with pytest.raises(ApprovalDenied):
        loc.tools.test_admin(text="not this one.")
    assert [q["tool"] for q in asked] == ["test.admin@0.1.0"] * 2
    assert Locara(home, approve=True).tools.test_admin(text="x.")["count"] == 1


def test_a_tampered_tool_is_refused_before_it_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(HOME, home, ignore=shutil.ignore_patterns("cache"))
    wasm = home / "registry/tools/text.chunk/0.1.0/text.chunk-0.1.0.wasm"
    data = bytearray(wasm.read_bytes())
    data[-1] ^= 0xFF
    wasm.write_bytes(bytes(data))
    with pytest.raises(VerificationFailed) as refused:
        Locara(home).tools.text_chunk(text="a")
    assert refused.value.code == "artifact_tampered"


def test_a_workspace_is_granted_read_only_unless_writes_are_allowed(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("beavers build dams\n")
    found = Locara(HOME, workspace=tmp_path).tools.filesystem_search(query="dams")
    assert "notes.md" in json.dumps(found.output)
    edit = {"path": "notes.md", "edits": [{"old": "dams", "new": "lodges"}]}
    with pytest.raises(CapabilityDenied):
        Locara(HOME, workspace=tmp_path).tools.file_edit(**edit)
    Locara(HOME, workspace=tmp_path, allow_write=True).tools.file_edit(**edit)
    assert (tmp_path / "notes.md").read_text() == "beavers build lodges\n"


def test_asyncio_runs_calls_concurrently_and_cancels_them(loc: Locara) -> None:
    sleep = "import time\ntime.sleep(0.5)\nprint('slept')"

    async def main() -> float:
        await loc.aio.tools.code_exec_python(code="print(1)")  # compiled, warm
        started = time.monotonic()
        results = await asyncio.gather(*(loc.aio.tools.code_exec_python(code=sleep) for _ in range(8)))
        elapsed = time.monotonic() - started
        assert [r["stdout"] for r in results] == ["slept\n"] * 8
        # A call awaited with a deadline is cancelled in its sandbox when the deadline passes.
        cancelled_at = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(loc.aio.run("code-exec.python", {"code": "import time\ntime.sleep(20)"}), 0.3)
        assert time.monotonic() - cancelled_at < 5
        with pytest.raises(InvalidInput):
            await loc.aio.tools.text_chunk(text=7)
        return elapsed

    elapsed = asyncio.run(main())
    # Eight half-second sleeps one after another would take 4 s.
    assert elapsed < 2.5, f"8 concurrent calls took {elapsed:.2f} s"


def test_blocking_calls_release_the_gil(loc: Locara) -> None:
    import threading

    sleep = {"code": "import time\ntime.sleep(0.5)"}
    threads = [threading.Thread(target=loc.run, args=("code-exec.python", sleep)) for _ in range(4)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert time.monotonic() - started < 1.8


@pytest.fixture(scope="module")
def model_url() -> str:
    """Qwen2.5-Coder-0.5B-Instruct served by llama.cpp on loopback (as the Rust chat tests)."""
    model = VENV / "share/locara/Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf"
    server = subprocess.Popen(
        [str(VENV / "bin/python"), str(REPO / "tests/llm/serve.py"), str(model), "--ctx", "4096",
         "--chat-template", str(REPO / "tests/llm/qwen2.5-coder-tools.jinja")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    line = server.stdout.readline()
    assert line.startswith("listening "), line
    yield line.removeprefix("listening ").strip() + "/v1"
    server.terminate()
    server.wait(timeout=30)


QUESTION = "What is the access code for the north gate? Search the file contents for 'north gate'."


def test_chat_runs_the_tools_the_model_calls(model_url: str, tmp_path: Path) -> None:
    (tmp_path / "gates").mkdir()
    (tmp_path / "gates/gates.txt").write_text(
        "The access code for the north gate is 7319-KESTREL. The south gate has no code.\n"
    )
    loc = Locara(HOME, workspace=tmp_path / "gates", llm=model_url, llm_model="qwen2.5-coder-0.5b-instruct")
    events: list[dict] = []
    transcript = loc.chat(QUESTION, tools=["filesystem.search"], temperature=0, seed=7,
                          max_output_tokens=200, on_event=events.append)
    assert transcript["stop_reason"] == "final_answer", transcript
    assert "7319-KESTREL" in transcript["answer"], transcript
    calls = [e["call"] for e in events if e["type"] == "tool_call"]
    assert [c["tool"] for c in calls] == ["filesystem.search"], events
    assert events[0] == {"type": "step", "step": 1}

    async def main() -> dict:
        return await loc.aio.chat(QUESTION, tools=["filesystem.search"], temperature=0, seed=7, max_output_tokens=200)

    assert "7319-KESTREL" in asyncio.run(main())["answer"]
    with pytest.raises(NotFound):
        loc.chat("hi", tools=["no.such-*"])


def test_the_tools_api_is_exported_for_type_checkers(loc: Locara) -> None:
    stub = loc.export_api("python")
    assert "def pdf_split(self, *, every: int | None = None, ranges: list[str] | None = None, source: FileArgument)" in stub
    assert "unknown language" in str(pytest.raises(InvalidRequest, loc.export_api, "cobol").value)
    assert "pdf_split" in dir(loc.tools)
    with pytest.raises(AttributeError, match="no callable tool"):
        loc.tools.no_such_tool
