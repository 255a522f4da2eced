"""Interop: the official MCP Python SDK client (`mcp` on PyPI, pinned 2.3.0)
reads a tool result over 1 MiB over Streamable HTTP (a 2025 session).

Usage: python3 python_big_result.py URL/mcp TOOL BYTES

Calls TOOL with `{"text": BYTES}` and checks that the answer's text ends with
BYTES `x`. The SDK caps one SSE event at 1 MiB: such a result must come as a
JSON body. Exits 0 printing `python big result ok (N bytes)`; prints what went
wrong to stderr and exits 1 otherwise. Bounded: 50 s. Run by
crates/switchboard-cli/tests/gateway_peers.rs.
"""

import asyncio
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, tool: str, size: int) -> None:
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(tool, {"text": str(size)})
            assert not result.is_error, result
            text = "".join(getattr(b, "text", "") for b in result.content)
            assert text.endswith("x" * size), (len(text), text[:80])
    print(f"python big result ok ({len(text)} bytes)")


if __name__ == "__main__":
    try:
        asyncio.run(
            asyncio.wait_for(main(sys.argv[1], sys.argv[2], int(sys.argv[3])), timeout=50)
        )
    except Exception as e:  # noqa: BLE001 - report anything, fail the test
        print(f"python big result failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
