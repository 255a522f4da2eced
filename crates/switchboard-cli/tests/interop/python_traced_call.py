"""Calls one tool through Streamable HTTP with the Python SDK, with W3C trace
context and a member of the caller's own in `_meta` (the tracing test,
crates/switchboard-cli/tests/gateway_traces.rs):

    python python_traced_call.py URL TOOL TRACEPARENT

Prints the tool's text.
"""
import asyncio
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

URL, TOOL, TRACEPARENT = sys.argv[1:4]


async def main():
    async with streamable_http_client(URL) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            meta = {
                "traceparent": TRACEPARENT,
                "tracestate": "vendor=opaque",
                "example.com/keep": "as sent",
            }
            result = await session.call_tool(TOOL, {"text": "traced"}, meta=meta)
            print("".join(c.text for c in result.content if c.type == "text"))


asyncio.run(main())
