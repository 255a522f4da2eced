"""Interop: the official MCP Python SDK's legacy HTTP+SSE client (`mcp` on PyPI,
written against 2.3.0, `mcp.client.sse.sse_client`) against a Switchboard server
serving the example tools on its legacy endpoint (2024-11-05 transport).

Usage: python3 python_sse_client.py http://127.0.0.1:PORT/sse

Calls `echo` and `slow_progress` (with a progress callback) and `fail`, and checks
the answers. Exits 0 on success; prints what went wrong and exits 1 otherwise.
Run by `tests/e2e_legacy_sse.rs`.
"""

import asyncio
import sys

from mcp import ClientSession
from mcp.client.sse import sse_client


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


async def main(url: str) -> None:
    session_ids = []
    async with sse_client(url, on_session_created=session_ids.append) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "echo-server", init.server_info
            assert len(session_ids) == 1 and len(session_ids[0]) == 32, session_ids

            tools = await session.list_tools()
            names = sorted(t.name for t in tools.tools)
            assert names == ["ask_sampling", "echo", "fail", "slow_progress"], names

            result = await session.call_tool("echo", {"text": "hello over sse"})
            assert not result.is_error, result
            assert text_of(result) == "hello over sse", result

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

    print(f"python sse interop ok (protocol {init.protocol_version}, progress {seen})")


if __name__ == "__main__":
    try:
        asyncio.run(asyncio.wait_for(main(sys.argv[1]), timeout=30))
    except Exception as e:  # noqa: BLE001 - report anything, fail the test
        print(f"python sse interop FAILED: {e!r}", file=sys.stderr)
        sys.exit(1)
