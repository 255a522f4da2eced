"""Interop: the official MCP Python SDK client (`mcp` on PyPI, written against 2.3.0)
against `switchboard example-server` over stdio.

Usage: python3 python_client.py PATH/TO/switchboard

Lists the tools, calls `progress` with a progress callback, `add` (structured
output) and `fail` (isError), and checks the answers. Exits 0 on success; prints
what went wrong and exits 1 otherwise. Run by `tests/example_server.rs`.
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

EXPECTED_TOOLS = sorted([
    "echo", "add", "image", "audio", "embedded_resource", "progress", "log",
    "fail", "sample", "elicit", "bump_counter",
])


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


async def main(switchboard: str) -> None:
    params = StdioServerParameters(command=switchboard, args=["example-server"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "switchboard-example", init.server_info

            tools = await session.list_tools()
            names = sorted(t.name for t in tools.tools)
            assert names == EXPECTED_TOOLS, names

            seen = []

            async def on_progress(progress, total, message=None):
                seen.append((progress, total, message))

            result = await session.call_tool(
                "progress",
                {"seconds": 0.3, "steps": 3},
                progress_callback=on_progress,
            )
            assert not result.is_error, result
            assert text_of(result) == "done: 3 steps in 0.3 s", result
            assert [p for p, _, _ in seen] == [1, 2, 3], seen
            assert all(t == 3 for _, t, _ in seen), seen
            assert seen[-1][2] == "step 3 of 3", seen

            result = await session.call_tool("add", {"a": 20, "b": 22})
            assert result.structured_content == {"sum": 42}, result

            result = await session.call_tool("fail", {})
            assert result.is_error, result

    print(f"python interop ok (protocol {init.protocol_version}, progress {seen})")


if __name__ == "__main__":
    try:
        asyncio.run(asyncio.wait_for(main(sys.argv[1]), timeout=30))
    except Exception as e:  # noqa: BLE001 - report anything, fail the test
        print(f"python interop FAILED: {e!r}", file=sys.stderr)
        sys.exit(1)
