"""Interop: the official MCP Python SDK 1.x client (`mcp` on PyPI, pinned 1.30.0,
interop/requirements-py1.txt) against `switchboard bridge` in front of a stdio
server that speaks only 2024-11-05 (`switchboard example-server
--protocol-version 2024-11-05`).

Usage: python3 python1_bridge_client.py http://127.0.0.1:PORT/mcp

`mcp.client.streamable_http.streamablehttp_client`: `initialize` (the server
answers 2024-11-05, which the client then names in `MCP-Protocol-Version` on
`notifications/initialized`, its GET stream, every request and the session's
DELETE), tools/list offers `echo`, `tools/call echo` returns the text, and on
leaving the client DELETEs the session: no "Session termination failed" warning
is logged, and a POST naming the session afterwards gets 404. Exits 0 printing
`python1 bridge client ok (...)`; prints what went wrong to stderr and exits 1
otherwise. Bounded: 30 s. Run by crates/switchboard-cli/tests/bridge_peers.rs.
"""

import asyncio
import logging
import sys

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


class Warnings(logging.Handler):
    """Keeps the SDK's warnings (a refused DELETE is only logged)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.seen = []

    def emit(self, record):
        self.seen.append(record.getMessage())


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


async def main(url: str) -> None:
    warnings = Warnings()
    logging.getLogger().addHandler(warnings)
    async with streamablehttp_client(url) as (read, write, session_id):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.protocolVersion == "2024-11-05", init.protocolVersion
            tools = await session.list_tools()
            names = {t.name for t in tools.tools}
            assert "echo" in names, names
            result = await session.call_tool("echo", {"text": "from py1"})
            assert not result.isError, result
            assert text_of(result) == "from py1", result
            sid = session_id()
            assert sid, "the bridge gave a session id"
    failed = [w for w in warnings.seen if "termination" in w.lower()]
    assert not failed, failed
    async with httpx.AsyncClient(timeout=10) as http:
        after = await http.post(
            url,
            headers={
                "accept": "application/json, text/event-stream",
                "content-type": "application/json",
                "mcp-session-id": sid,
                "mcp-protocol-version": "2024-11-05",
            },
            json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
        )
        assert after.status_code == 404, (after.status_code, after.text)
    print(
        f"python1 bridge client ok (protocol {init.protocolVersion}, "
        f"tools {sorted(names)[:3]}..., session deleted)"
    )


if __name__ == "__main__":
    try:
        asyncio.run(asyncio.wait_for(main(sys.argv[1]), timeout=30))
    except Exception as e:  # noqa: BLE001 - report anything, fail the test
        print(f"python1 bridge client FAILED: {e!r}", file=sys.stderr)
        sys.exit(1)
