"""A small MCP server on the official Python SDK (PyPI `mcp`, FastMCP), for tests/all/mcp_backend.rs.

Run over stdio: `server.py`; over streamable HTTP at `http://127.0.0.1:PORT/mcp`:
`server.py --http PORT`. Its tools cover what Locara's MCP backend maps: a read-only tool
with structured output (`add`), a read-only tool with plain text output (`shout`), a tool that
fails (`fail`), and one without annotations, which MCP defaults to destructive (`wipe`).
"""

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

mcp = FastMCP("py-tools")

READ_ONLY = ToolAnnotations(readOnlyHint=True)


@mcp.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool(annotations=READ_ONLY, structured_output=False)
def shout(text: str, times: int = 1) -> str:
    """Upper-case a text and repeat it."""
    return text.upper() * times


@mcp.tool(annotations=READ_ONLY)
def fail(reason: str) -> str:
    """Always fails, with the reason given."""
    raise ValueError(f"refused: {reason}")


@mcp.tool()
def wipe(target: str) -> str:
    """Pretends to delete the target (no annotations: MCP treats it as destructive)."""
    return f"wiped {target}"


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--http"]:
        mcp.settings.host = "127.0.0.1"
        mcp.settings.port = int(sys.argv[2])
        mcp.settings.log_level = "WARNING"
        mcp.run(transport="streamable-http")
    else:
        mcp.run()
