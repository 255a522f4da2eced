"""Interop: the official MCP Python SDK client (`mcp` on PyPI, pinned 2.3.0) against
`switchboard gateway` in front of several upstreams.

Usage: python3 python_gateway_client.py http URL/mcp CALLS_JSON
       python3 python_gateway_client.py sse  URL/sse CALLS_JSON

CALLS_JSON is a JSON array of {"name": ..., "arguments": {...}, "expect": TEXT}.
`http` uses `streamable_http_client`, `sse` uses `sse_client` (legacy HTTP+SSE).
Lists every page of tools/list (each name at most once), checks that every
called name is listed, calls each and checks that the result is not `isError`
and that its text contains `expect`. Exits 0 printing `python gateway client ok
(MODE, ...)`; prints what went wrong to stderr and exits 1 otherwise. Bounded:
50 s. Run by crates/switchboard-cli/tests/gateway_peers.rs.
"""

import asyncio
import json
import sys
from contextlib import asynccontextmanager

from mcp import ClientSession, types
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


@asynccontextmanager
async def streams(mode: str, url: str):
    if mode == "http":
        async with streamable_http_client(url) as (read, write, *_):
            yield read, write
    elif mode == "sse":
        async with sse_client(url) as (read, write):
            yield read, write
    else:
        raise ValueError(f"unknown mode {mode!r} (http or sse)")


async def main(mode: str, url: str, calls: list) -> None:
    async with streams(mode, url) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()

            names = []
            cursor = None
            pages = 0
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                pages += 1
                names.extend(t.name for t in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
                assert pages < 50, "the cursor never ends"
            assert len(names) == len(set(names)), sorted(names)
            for call in calls:
                assert call["name"] in names, (call["name"], sorted(names))

            for call in calls:
                result = await session.call_tool(call["name"], call["arguments"])
                assert not result.is_error, (call["name"], result)
                text = text_of(result)
                assert call["expect"] in text, (call["name"], call["expect"], text)

    print(
        f"python gateway client ok ({mode}, protocol {init.protocol_version}, "
        f"{len(names)} tools in {pages} pages, {len(calls)} calls)"
    )


if __name__ == "__main__":
    try:
        asyncio.run(
            asyncio.wait_for(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])), timeout=50)
        )
    except Exception as e:  # noqa: BLE001 - report anything, fail the test
        print(f"python gateway client FAILED: {e!r}", file=sys.stderr)
        sys.exit(1)
