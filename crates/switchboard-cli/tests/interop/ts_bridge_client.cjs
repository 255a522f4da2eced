// Interop: the official MCP TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned
// 1.32.2 in interop/peers-node) against `switchboard bridge` in front of
// `switchboard example-server`.
//
// Usage (run with the pinned Node 22; the SDK is loaded from $SWITCHBOARD_PEERS_NODE):
//   node ts_bridge_client.cjs http http://127.0.0.1:PORT/mcp   (StreamableHTTPClientTransport)
//   node ts_bridge_client.cjs sse  http://127.0.0.1:PORT/sse   (SSEClientTransport, 2024-11-05)
//
// Checks the handshake (serverInfo.name `switchboard-example`), tools/list (`progress`
// offered), then `progress {seconds: 0.3, steps: 3}` with an onprogress callback: at
// least one notification, progress increasing and at most the total 3 (the example
// server sends 1, 2, 3 of 3; all three are checked), and the result `done: 3 steps
// ...`. Prints `ts bridge client ok (MODE, ...)` and exits 0, or prints what went wrong
// to stderr and exits 1. Bounded: 30 s in all.
// Run by crates/switchboard-cli/tests/bridge_peers.rs.
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const peers = process.env.SWITCHBOARD_PEERS_NODE;
if (!peers) {
  console.error("ts bridge client FAILED: SWITCHBOARD_PEERS_NODE is not set");
  process.exit(1);
}
const peerRequire = createRequire(path.join(peers, "package.json"));
const { Client } = peerRequire("@modelcontextprotocol/sdk/client/index.js");
const { SSEClientTransport } = peerRequire("@modelcontextprotocol/sdk/client/sse.js");
const {
  StreamableHTTPClientTransport,
} = peerRequire("@modelcontextprotocol/sdk/client/streamableHttp.js");

function check(cond, what, value) {
  if (!cond) {
    throw new Error(`${what}: ${JSON.stringify(value)}`);
  }
}

function textOf(result) {
  return (result.content || [])
    .map((block) => (block.type === "text" ? block.text : ""))
    .join("");
}

async function main(mode, target) {
  let transport;
  if (mode === "http") {
    transport = new StreamableHTTPClientTransport(new URL(target));
  } else if (mode === "sse") {
    transport = new SSEClientTransport(new URL(target));
  } else {
    throw new Error(`unknown mode ${mode} (http or sse)`);
  }
  const client = new Client({ name: "switchboard-ts-bridge-client", version: "1.0.0" });
  await client.connect(transport);

  const info = client.getServerVersion();
  check(info && info.name === "switchboard-example", "serverInfo", info);
  if (mode === "http") {
    check(typeof transport.sessionId === "string" && transport.sessionId.length > 0,
      "Mcp-Session-Id", transport.sessionId);
  }

  const tools = await client.listTools();
  const names = tools.tools.map((t) => t.name);
  check(names.includes("progress"), "tools/list", names);

  const seen = [];
  const result = await client.callTool(
    { name: "progress", arguments: { seconds: 0.3, steps: 3 } },
    undefined,
    {
      onprogress: (p) => seen.push(p),
      timeout: 20000,
    },
  );
  check(!result.isError && textOf(result).startsWith("done: 3 steps"), "progress result", result);
  check(seen.length >= 1, "progress count", seen);
  check(seen.every((p, i) => p.total === 3 && p.progress <= p.total
    && (i === 0 || p.progress > seen[i - 1].progress)), "progress increasing", seen);
  // The TypeScript SDK runs notification handlers a microtask later but settles a
  // response at once: a progress notification read in the same chunk as the
  // response is dropped on its side (see crates/switchboard/tests/interop/ts_client.cjs).
  // So the last ones may be missing, never the first, and those seen are in order.
  check(seen.length <= 3 && seen.every((p, i) => p.progress === i + 1), "progress values", seen);

  if (mode === "http") {
    await transport.terminateSession();
  }
  await client.close();
  const progress = seen.map((p) => p.progress).join(",");
  console.log(`ts bridge client ok (${mode}, protocol ${transport.protocolVersion || "-"}, progress ${progress})`);
}

const timer = setTimeout(() => {
  console.error("ts bridge client FAILED: timed out after 30 s");
  process.exit(1);
}, 30000);

main(process.argv[2], process.argv[3]).then(
  () => {
    clearTimeout(timer);
    process.exit(0);
  },
  (e) => {
    console.error(`ts bridge client FAILED: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  },
);
