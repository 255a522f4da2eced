"""Interop: the official MCP Python SDK client (`mcp` on PyPI, pinned 2.3.0) against
`switchboard bridge` in front of `switchboard example-server`.

Usage: python3 python_bridge_client.py http http://127.0.0.1:PORT/mcp
       python3 python_bridge_client.py sse  http://127.0.0.1:PORT/sse

`http` uses `mcp.client.streamable_http.streamable_http_client` (Streamable HTTP, a
session with `Mcp-Session-Id`); `sse` uses `mcp.client.sse.sse_client` (the legacy
HTTP+SSE transport, 2024-11-05). Either way: `initialize` (serverInfo
`switchboard-example`), tools/list offers `progress`, then `progress {seconds: 0.3, steps:
3}` with a progress callback: at least one notification, the progress values
increasing and at most the total 3 (the example server sends 1, 2, 3 of 3; all three
are checked), and the result `done: 3 steps ...`. Exits 0 printing `python bridge
client ok (MODE, ...)`; prints what went wrong to stderr and exits 1 otherwise.
Bounded: 30 s. Run by crates/switchboard-cli/tests/bridge_peers.rs.
"""

import asyncio
import sys
from contextlib import asynccontextmanager

from mcp import ClientSession
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


async def main(mode: str, url: str) -> None:
    async with streams(mode, url) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "switchboard-example", init.server_info

            tools = await session.list_tools()
            names = {t.name for t in tools.tools}
            assert {"progress", "echo"} <= names, names

            seen = []

            async def on_progress(progress, total, message=None):
                seen.append((progress, total, message))

            result = await session.call_tool(
                "progress",
                {"seconds": 0.3, "steps": 3},
                progress_callback=on_progress,
            )
            assert not result.is_error, result
            assert text_of(result).startswith("done: 3 steps"), result
            assert len(seen) >= 1, seen
            values = [p for p, _, _ in seen]
            assert values == sorted(set(values)), seen
            assert all(t == 3 and p <= t for p, t, _ in seen), seen
            assert values == [1, 2, 3], seen

    print(
        f"python bridge client ok ({mode}, protocol {init.protocol_version}, "
        f"progress {[p for p, _, _ in seen]})"
    )


if __name__ == "__main__":
    try:
        asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), timeout=30))
    except Exception as e:  # noqa: BLE001 - report anything, fail the test
        print(f"python bridge client FAILED: {e!r}", file=sys.stderr)
        sys.exit(1)
