"""An MCP server that speaks only the older HTTP+SSE transport (MCP 2024-11-05), written with the
Python `mcp` package (pinned in tests/python/requirements.txt, installed by
scripts/setup-test.sh into .tools/py/). The hub's SSE client is tested against it
(tests/tests/it/mcp_sse.rs).

    python sse_server.py PORT

Serves the event stream at http://127.0.0.1:PORT/sse and takes messages at /messages/.
"""

import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("sse-only", instructions="A test server on the HTTP+SSE transport.")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Answers the text in capitals."""
    return text.upper()


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason given."""
    raise ToolError(reason)


@server.prompt()
def greet(name: str) -> str:
    """A greeting for someone."""
    return f"Say hello to {name}."


if __name__ == "__main__":
    server.run("sse", host="127.0.0.1", port=int(sys.argv[1]))
