"""A program written against the installed `locara` package's type hints.

`cargo xtask sdk test` checks it with `mypy --strict --warn-unused-ignores` (it is never run, and
pytest does not collect it): each `# type: ignore[...]` marks a line that must be an error.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from locara import File, LimitExceeded, Locara, LocaraError, Result
from locara.tools import PdfSplitOutput


def split(loc: Locara, pdf: Path) -> list[File]:
    # Tool arguments and outputs are typed from the manifests.
    parts: Result[PdfSplitOutput] = loc.tools.pdf_split(source=pdf, ranges=["1-2", "3-end"])
    pages: int | None = parts.output.get("page_count")
    assert pages is None or pages > 0
    loc.tools.text_chunk(text=7)  # type: ignore[arg-type]
    loc.tools.ocr()  # type: ignore[call-arg]
    loc.tools["pdf.split"](source=pdf.read_bytes(), ranges=["1"])
    # A tool the types do not know (a third party's) is still callable.
    loc.tools.acme_invoice_parse(source=pdf)
    return parts.files


async def chunk(loc: Locara, text: str) -> int:
    result = await loc.aio.tools.text_chunk(text=text, max_chars=400)
    count: int | None = result.output.get("count")
    return count or 0


def main() -> str:
    loc = Locara("/srv/locara", workspace="/srv/docs", approve=lambda call: call["tool"].startswith("text."))
    try:
        saved = [part.save("parts/") for part in split(loc, Path("manual.pdf"))]
        return f"{saved} {asyncio.run(chunk(loc, 'One. Two.'))}"
    except LimitExceeded as e:
        return f"{e.limit}"
    except LocaraError as e:
        return f"{e.code} {e.hint} {e.violations}"
