"""An MCP server (stdio, protocol 2026-07-28) whose tools ask the user for input through
multi-round-trip requests (`input_required`: elicitation forms and URLs), written with the
Python `mcp` package (pinned in tests/python/requirements.txt, installed by
scripts/setup-test.sh into .tools/py/). The hub's elicitation is tested against it
(tests/tests/it/mcp_elicitation.rs and the browser tests).

    python elicit_server.py

Tools:
- `book_table {day}`: asks a form (name: string, required; seats: integer; vip: boolean; size:
  enum), then answers with what it was given, the `requestState` it got back, and the action.
- `sign_in`: asks the user to open a URL; accepted, it answers "signed in".
- `two_rounds`: asks a first question, then (answered) a second one, then answers both.
- `sampler`: asks for sampling (which a host that does not offer it must refuse).
- `plain`: answers at once.
- `counter {n, ms}`: reports progress 1..n of n ("counted i"), one every `ms`, then answers.
"""

import asyncio
import json

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

FORM_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "Who books"},
        "seats": {"type": "integer", "title": "Seats", "minimum": 1, "maximum": 12, "default": 2},
        "vip": {"type": "boolean", "title": "VIP", "default": False},
        "size": {"type": "string", "title": "Table", "enum": ["small", "large"]},
    },
    "required": ["name"],
}


def tool(name: str, props: dict | None = None) -> types.Tool:
    return types.Tool(
        name=name,
        description=f"The tool {name}.",
        input_schema={"type": "object", "properties": props or {}},
    )


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            tool("book_table", {"day": {"type": "string"}}),
            tool("sign_in"),
            tool("two_rounds"),
            tool("sampler"),
            tool("plain"),
            tool("counter", {"n": {"type": "integer"}, "ms": {"type": "integer"}}),
        ]
    )


def text(s: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=s)], is_error=error)


def form(message: str, schema: dict) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def responses(params) -> dict:
    """The input responses as plain JSON (action, content) by key."""
    out = {}
    for k, v in (params.input_responses or {}).items():
        out[k] = v.model_dump(mode="json", exclude_none=True, by_alias=True) if hasattr(v, "model_dump") else v
    return out


async def call_tool(ctx, params):
    args = params.arguments or {}
    got = responses(params)
    if params.name == "plain":
        return text("plain result")
    if params.name == "counter":
        n = int(args.get("n", 3))
        for i in range(1, n + 1):
            await asyncio.sleep(int(args.get("ms", 50)) / 1000)
            token = (ctx.meta or {}).get("progress_token")
            if token is not None:
                await ctx.session.send_progress_notification(
                    token, i, n, f"counted {i}", related_request_id=ctx.request_id
                )
        return text(f"counted to {n}")
    if params.name == "book_table":
        if not got:
            return types.InputRequiredResult(
                input_requests={"who": form("Who is the table for?", FORM_SCHEMA)},
                request_state=f"book:{args.get('day', '')}",
            )
        who = got.get("who", {})
        action = who.get("action")
        if action != "accept":
            return text(f"not booked: the user chose {action} (state {params.request_state})")
        c = who.get("content") or {}
        return text(
            f"booked for {c.get('name')} on {args.get('day')}: "
            f"{json.dumps(c, sort_keys=True)} (state {params.request_state})"
        )
    if params.name == "sign_in":
        if not got:
            return types.InputRequiredResult(
                input_requests={
                    "login": types.ElicitRequest(
                        params=types.ElicitRequestURLParams(
                            message="Sign in to the booking service",
                            url="https://auth.example.com/start?session=abc",
                        )
                    )
                },
                request_state="signin",
            )
        return text(f"sign-in: {got.get('login', {}).get('action')}")
    if params.name == "two_rounds":
        if "first" not in (params.request_state or ""):
            return types.InputRequiredResult(
                input_requests={"a": form("First?", {"type": "object", "properties": {"x": {"type": "string"}}})},
                request_state="first",
            )
        if "second" not in params.request_state:
            a = (got.get("a", {}).get("content") or {}).get("x")
            return types.InputRequiredResult(
                input_requests={"b": form("Second?", {"type": "object", "properties": {"y": {"type": "string"}}})},
                request_state=f"first,second,a={a}",
            )
        b = (got.get("b", {}).get("content") or {}).get("y")
        return text(f"both: {params.request_state} b={b}")
    if params.name == "sampler":
        return types.InputRequiredResult(
            input_requests={
                "s": types.CreateMessageRequest(
                    params=types.CreateMessageRequestParams(
                        messages=[types.SamplingMessage(role="user", content=types.TextContent(text="hi"))],
                        max_tokens=5,
                    )
                )
            },
            request_state="sampling",
        )
    return text(f"unknown tool {params.name}", error=True)


server = Server("elicit", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
