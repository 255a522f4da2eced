// Interop: the official MCP TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned
// 1.32.2 in interop/peers-node) against a Switchboard server serving the example
// tools of crates/switchboard/examples/echo_server.rs.
//
// Usage (run with the pinned Node 22; the SDK is loaded from $SWITCHBOARD_PEERS_NODE):
//   node ts_client.cjs stdio PATH/TO/echo_server   (StdioClientTransport spawns it)
//   node ts_client.cjs http  http://127.0.0.1:PORT/mcp   (StreamableHTTPClientTransport)
//
// Checks the handshake (serverInfo.name `echo-server`), tools/list (echo and
// slow_progress offered), `echo`, `slow_progress` with an onprogress callback (progress
// 1, 2, 3 of 3 sent; at least the first received, in order: see below) and `fail`
// (isError). Prints `ts interop ok ...` and exits 0,
// or prints what went wrong to stderr and exits 1. Bounded: 30 s in all.
// Run by crates/switchboard/tests/e2e_ts.rs.
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const peers = process.env.SWITCHBOARD_PEERS_NODE;
if (!peers) {
  console.error("ts interop FAILED: SWITCHBOARD_PEERS_NODE is not set");
  process.exit(1);
}
const peerRequire = createRequire(path.join(peers, "package.json"));
const { Client } = peerRequire("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = peerRequire("@modelcontextprotocol/sdk/client/stdio.js");
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
  if (mode === "stdio") {
    transport = new StdioClientTransport({ command: target, args: [], stderr: "inherit" });
  } else if (mode === "http") {
    transport = new StreamableHTTPClientTransport(new URL(target));
  } else {
    throw new Error(`unknown mode ${mode} (stdio or http)`);
  }
  const client = new Client({ name: "switchboard-ts-interop", version: "1.0.0" });
  await client.connect(transport);

  const info = client.getServerVersion();
  check(info && info.name === "echo-server", "serverInfo", info);
  if (mode === "http") {
    check(typeof transport.sessionId === "string" && transport.sessionId.length > 0,
      "Mcp-Session-Id", transport.sessionId);
  }

  const tools = await client.listTools();
  const names = tools.tools.map((t) => t.name);
  check(names.includes("echo") && names.includes("slow_progress"), "tools/list", names);

  let result = await client.callTool({ name: "echo", arguments: { text: "hello from ts" } });
  check(!result.isError && textOf(result) === "hello from ts", "echo", result);

  const seen = [];
  result = await client.callTool(
    { name: "slow_progress", arguments: { steps: 3, delay_ms: 100 } },
    undefined,
    {
      onprogress: (p) => seen.push(p),
      timeout: 20000,
    },
  );
  check(textOf(result) === "done", "slow_progress result", result);
  // The server sends 3 notifications, all before the response. The SDK runs
  // notification handlers a microtask later but settles a response at once, so a
  // progress notification read in the same chunk as the response is dropped (it
  // reports "unknown token" to onerror): the last ones may be missing, never the
  // first (100 ms apart, it is read well before the response), and those that arrive
  // are in order.
  check(seen.length >= 1 && seen.length <= 3, "progress count", seen);
  check(seen.every((p, i) => p.progress === i + 1 && p.total === 3), "progress values", seen);

  result = await client.callTool({ name: "fail", arguments: {} });
  check(result.isError === true, "fail isError", result);

  if (mode === "http") {
    await transport.terminateSession();
  }
  await client.close();
  const progress = seen.map((p) => p.progress).join(",");
  console.log(`ts interop ok (${mode}, progress ${progress})`);
}

const timer = setTimeout(() => {
  console.error("ts interop FAILED: timed out after 30 s");
  process.exit(1);
}, 30000);

main(process.argv[2], process.argv[3]).then(
  () => {
    clearTimeout(timer);
    process.exit(0);
  },
  (e) => {
    console.error(`ts interop FAILED: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  },
);
