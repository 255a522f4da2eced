"""Interop: an MCP server written with the official MCP Python SDK (`mcp` on PyPI,
pinned 2.3.0; `mcp.server.mcpserver.MCPServer`, the 2.x name of FastMCP), for a
Switchboard client to call over stdio.

Usage: python3 python_server.py

serverInfo {name: "python-interop-server", version: "1.0.0"}. Tools:
- `echo(text)`: returns `text`;
- `progress(steps)`: reports progress 1..steps of steps through its context
  (`Context.report_progress`, sent only when the request carries a progressToken),
  then returns `counted to STEPS`.
Logs only to stderr. Run by crates/switchboard/tests/e2e_python_server.rs.
"""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("python-interop-server", version="1.0.0", log_level="WARNING")


@server.tool(description="Returns its text argument.")
def echo(text: str) -> str:
    return text


@server.tool(description="Reports progress 1..steps of steps, then says how far it counted.")
async def progress(steps: int, ctx: Context) -> str:
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return f"counted to {steps}"


if __name__ == "__main__":
    server.run("stdio")
