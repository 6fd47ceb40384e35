"""An MCP server (stdio) whose listings carry `ttlMs` and `cacheScope` and whose server, tools
and prompts carry icons, written with the Python `mcp` package (pinned in
tests/python/requirements.txt, installed by scripts/setup-test.sh into .tools/py/). The hub's
listing cache and its icons are tested against it (tests/tests/it/mcp_cache_icons.rs).

    python cache_icons_server.py TTL_MS SCOPE [--no-server-icon] [--icon-base URL]

The N-th `tools/list` lists a tool `gen_N` (and the N-th `prompts/list` a prompt `pgen_N`), so
a test sees which listing it got: a cached one (the same N) or a fresh one. SCOPE is `public`
or `private`. `--icon-base URL` adds tools whose icons are http URLs under URL (`remote`:
`/icon.png`, `remote_html`: `/page.png`, `remote_big`: `/big.png`); `--no-server-icon` leaves
the server without an icon of its own.
"""

import asyncio
import base64
import sys

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TTL_MS = int(sys.argv[1])
SCOPE = sys.argv[2]
OPTIONS = sys.argv[3:]
SERVER_HAS_ICON = "--no-server-icon" not in OPTIONS
ICON_BASE = OPTIONS[OPTIONS.index("--icon-base") + 1] if "--icon-base" in OPTIONS else None

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


SERVER_ICON = types.Icon(src=data_url("image/png", PNG), mime_type="image/png")
PIC = types.Icon(src=data_url("image/png", PNG + b"pic"), mime_type="image/png")
# HTML dressed as an icon, declared and labelled as a PNG.
HTML_AS_PNG = types.Icon(src=data_url("image/png", b"<script>alert(1)</script>"), mime_type="image/png")
HTML = types.Icon(src=data_url("text/html", b"<script>alert(1)</script>"), mime_type="text/html")
# A real PNG header followed by more than the 64 KiB cap.
BIG = types.Icon(src=data_url("image/png", PNG + b"\0" * (70 * 1024)), mime_type="image/png")
SVG = types.Icon(
    src=data_url("image/svg+xml", b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"/>'),
    mime_type="image/svg+xml",
)

listings = 0
prompt_listings = 0


def tool(name: str, icons: list[types.Icon] | None = None) -> types.Tool:
    return types.Tool(
        name=name,
        description=f"The tool {name}.",
        input_schema={"type": "object", "properties": {}},
        icons=icons,
    )


async def list_tools(ctx, params) -> types.ListToolsResult:
    global listings
    listings += 1
    tools = [
        tool(f"gen_{listings}"),
        tool("pic", [PIC]),
        tool("page", [HTML]),
        tool("disguised", [HTML_AS_PNG]),
        tool("big", [BIG]),
        # Its own icon is refused; the server's shows instead.
        tool("plain"),
    ]
    if ICON_BASE:
        for name, path in [("remote", "icon.png"), ("remote_html", "page.png"), ("remote_big", "big.png")]:
            tools.append(tool(name, [types.Icon(src=f"{ICON_BASE}/{path}", mime_type="image/png")]))
    return types.ListToolsResult(tools=tools, ttl_ms=TTL_MS, cache_scope=SCOPE)


async def call_tool(ctx, params) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=f"called {params.name}")])


async def list_prompts(ctx, params) -> types.ListPromptsResult:
    global prompt_listings
    prompt_listings += 1
    return types.ListPromptsResult(
        prompts=[
            types.Prompt(name="greet", description="A greeting.", icons=[SVG]),
            types.Prompt(name="bare", description="No icon of its own."),
            types.Prompt(name=f"pgen_{prompt_listings}"),
        ],
        ttl_ms=TTL_MS,
        cache_scope=SCOPE,
    )


async def get_prompt(ctx, params) -> types.GetPromptResult:
    return types.GetPromptResult(
        messages=[types.PromptMessage(role="user", content=types.TextContent(text="Hello."))]
    )


server = Server(
    "cache-icons",
    icons=[SERVER_ICON] if SERVER_HAS_ICON else None,
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
