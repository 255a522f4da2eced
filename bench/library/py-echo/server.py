"""The library benchmark's Python SDK echo server (bench/library/run).

The smallest idiomatic stateful Streamable HTTP server of the official Python SDK
(`mcp` 2.x: MCPServer, formerly FastMCP), one tool `echo {text}` answering
{"content":[{"type":"text","text":text}]}:

    python server.py [PORT]      # or PORT=...; 0 or absent: a free port

The SDK's defaults (stateful sessions, SSE replies, uvicorn as `run` starts it)
on 127.0.0.1, at /mcp. Two choices: `structured_output=False` so the result is
the text block alone (no `structuredContent` copy), and log level WARNING so
uvicorn does not log every request (the other servers log nothing either).
Prints `listening on http://127.0.0.1:PORT/mcp` on stdout once bound.
"""

import os
import socket
import sys

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("python-sdk-echo", log_level="WARNING")


@mcp.tool(description="Returns its text argument.", structured_output=False)
def echo(text: str) -> str:
    return text


def main() -> None:
    port = int(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PORT", "0"))
    if port == 0:
        # uvicorn does not report a port it chose: pick a free one first.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    mcp.run(transport="streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
