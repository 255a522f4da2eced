// Interop: the official MCP TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned
// 1.32.2 in interop/peers-node) against `switchboard gateway` in front of several
// upstreams.
//
// Usage (run with the pinned Node 22; the SDK is loaded from $SWITCHBOARD_PEERS_NODE):
//   node ts_gateway_client.cjs http URL/mcp CALLS_JSON   (StreamableHTTPClientTransport)
//   node ts_gateway_client.cjs sse  URL/sse CALLS_JSON   (SSEClientTransport, 2024-11-05)
//
// CALLS_JSON is a JSON array of {"name", "arguments", "expect"}. Lists every page of
// tools/list (each name at most once), checks that every called name is listed,
// calls each and checks that the result is not isError and that its text contains
// `expect`. Prints `ts gateway client ok (MODE, ...)` and exits 0, or prints what
// went wrong to stderr and exits 1. Bounded: 50 s in all.
// Run by crates/switchboard-cli/tests/gateway_peers.rs.
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const peers = process.env.SWITCHBOARD_PEERS_NODE;
if (!peers) {
  console.error("ts gateway client FAILED: SWITCHBOARD_PEERS_NODE is not set");
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

async function main(mode, target, calls) {
  let transport;
  if (mode === "http") {
    transport = new StreamableHTTPClientTransport(new URL(target));
  } else if (mode === "sse") {
    transport = new SSEClientTransport(new URL(target));
  } else {
    throw new Error(`unknown mode ${mode} (http or sse)`);
  }
  const client = new Client({ name: "switchboard-ts-gateway-client", version: "1.0.0" });
  await client.connect(transport);

  const names = [];
  let cursor;
  let pages = 0;
  for (;;) {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    pages += 1;
    for (const t of page.tools) names.push(t.name);
    cursor = page.nextCursor;
    if (!cursor) break;
    check(pages < 50, "the cursor never ends", pages);
  }
  check(new Set(names).size === names.length, "a tool listed twice", names);
  for (const call of calls) {
    check(names.includes(call.name), `${call.name} not listed`, names);
  }
  for (const call of calls) {
    const result = await client.callTool({ name: call.name, arguments: call.arguments });
    check(!result.isError, `${call.name} failed`, result);
    const text = textOf(result);
    check(text.includes(call.expect), `${call.name}: ${call.expect} not in`, text);
  }
  await client.close();
  console.log(
    `ts gateway client ok (${mode}, ${names.length} tools in ${pages} pages, ${calls.length} calls)`,
  );
}

const timer = setTimeout(() => {
  console.error("ts gateway client FAILED: timed out after 50 s");
  process.exit(1);
}, 50000);

main(process.argv[2], process.argv[3], JSON.parse(process.argv[4])).then(
  () => {
    clearTimeout(timer);
    process.exit(0);
  },
  (e) => {
    console.error(`ts gateway client FAILED: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  },
);
