// Interop: an MCP server written with the official TypeScript SDK
// (`@modelcontextprotocol/sdk`, pinned 1.32.2 in interop/peers-node; `McpServer` +
// `StdioServerTransport`), for a Switchboard client to call over stdio.
//
// Usage (run with the pinned Node 22; the SDK is loaded from $SWITCHBOARD_PEERS_NODE):
//   node ts_server.cjs
//
// serverInfo {name: "ts-interop-server", version: "1.0.0"}. Tools:
// - `echo {text}`: one text block, `text`;
// - `progress {steps}`: when the request carries `_meta.progressToken`, sends
//   `notifications/progress {progressToken, progress: i, total: steps, message}` for
//   i = 1..=steps through `extra.sendNotification`, then returns the text
//   `counted to STEPS with token TOKEN` (TOKEN is JSON, `none` when absent).
// Logs only to stderr. Run by crates/switchboard/tests/e2e_ts.rs.
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const peers = process.env.SWITCHBOARD_PEERS_NODE;
if (!peers) {
  console.error("ts_server: SWITCHBOARD_PEERS_NODE is not set");
  process.exit(1);
}
const peerRequire = createRequire(path.join(peers, "package.json"));
const { McpServer } = peerRequire("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = peerRequire("@modelcontextprotocol/sdk/server/stdio.js");
const { z } = peerRequire("zod");

const server = new McpServer({ name: "ts-interop-server", version: "1.0.0" });

server.registerTool(
  "echo",
  { description: "Returns its text argument.", inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: "text", text }] }),
);

server.registerTool(
  "progress",
  {
    description: "Reports progress 1..steps of steps, then says how far it counted.",
    inputSchema: { steps: z.number().int().min(1).max(100) },
  },
  async ({ steps }, extra) => {
    const token = extra._meta ? extra._meta.progressToken : undefined;
    if (token !== undefined) {
      for (let i = 1; i <= steps; i++) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress: i, total: steps, message: `step ${i}` },
        });
      }
    }
    const shown = token === undefined ? "none" : JSON.stringify(token);
    return { content: [{ type: "text", text: `counted to ${steps} with token ${shown}` }] };
  },
);

server.connect(new StdioServerTransport()).catch((e) => {
  console.error(`ts_server: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
