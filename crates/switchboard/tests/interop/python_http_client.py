"""Interop: the official MCP Python SDK client (`mcp` on PyPI, pinned 2.3.0) against a
Switchboard server over Streamable HTTP (`Server::serve_http` with the example tools
of crates/switchboard/examples/echo_server.rs).

Usage: python3 python_http_client.py http://127.0.0.1:PORT/mcp

Opens a session (`streamable_http_client` + `ClientSession.initialize`, the legacy
handshake), checks serverInfo, tools/list, `echo`, `slow_progress` with a progress
callback (1, 2, 3 of 3 in order) and `fail` (isError), then closes, which ends the
session with DELETE. Exits 0 printing `python http interop ok ...`; prints what went
wrong to stderr and exits 1 otherwise. Bounded: 30 s.
Run by crates/switchboard/tests/e2e_python_server.rs.
"""

import asyncio
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


async def main(url: str) -> None:
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "echo-server", init.server_info

            tools = await session.list_tools()
            names = {t.name for t in tools.tools}
            assert {"echo", "slow_progress", "fail"} <= names, names

            result = await session.call_tool("echo", {"text": "hello over http"})
            assert not result.is_error, result
            assert text_of(result) == "hello over http", result

            seen = []

            async def on_progress(progress, total, message=None):
                seen.append((progress, total, message))

            result = await session.call_tool(
                "slow_progress",
                {"steps": 3, "delay_ms": 10},
                progress_callback=on_progress,
            )
            assert text_of(result) == "done", result
            assert [p for p, _, _ in seen] == [1, 2, 3], seen
            assert all(t == 3 for _, t, _ in seen), seen

            result = await session.call_tool("fail", {})
            assert result.is_error, result

    print(f"python http interop ok (protocol {init.protocol_version}, progress {seen})")


if __name__ == "__main__":
    try:
        asyncio.run(asyncio.wait_for(main(sys.argv[1]), timeout=30))
    except Exception as e:  # noqa: BLE001 - report anything, fail the test
        print(f"python http interop FAILED: {e!r}", file=sys.stderr)
        sys.exit(1)
