// Interop: the official MCP TypeScript SDK v2 client (`@modelcontextprotocol/client`,
// pinned 2.4.0 in interop/peers-node) against `switchboard gateway` in front of
// several upstreams, over Streamable HTTP.
//
// Usage (run with the pinned Node 22; the SDK is loaded from $SWITCHBOARD_TS_V2_DIR):
//   node ts2_gateway_client.mjs MODE URL/mcp CALLS_JSON
//
// MODE is the SDK's `versionNegotiation.mode`: `auto` (probes with
// `server/discover`, speaks 2026-07-28 when the server offers it) or `legacy`
// (the plain `initialize` handshake). CALLS_JSON is a JSON array of
// {"name", "arguments", "expect"}. Lists every page of tools/list (each name at
// most once), checks that every called name is listed, calls each and checks
// that the result is not isError and that its text contains `expect`. Prints
// `ts2 gateway client ok (MODE, era ERA, version VERSION, ...)` with what the
// SDK says it negotiated (`getProtocolEra()`, `getNegotiatedProtocolVersion()`)
// and exits 0, or prints what went wrong to stderr and exits 1. Bounded: 50 s in
// all. Run by crates/switchboard-cli/tests/gateway_clients.rs and gateway_peers.rs.
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.env.SWITCHBOARD_TS_V2_DIR;
if (!dir) {
  console.error("ts2 gateway client FAILED: SWITCHBOARD_TS_V2_DIR is not set");
  process.exit(1);
}
// The package's own ESM entry point, as its `exports` map names it.
const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
const entry = pkg.exports["."].import.default;
const { Client, StreamableHTTPClientTransport } = await import(
  pathToFileURL(path.join(dir, entry)).href
);

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
  check(mode === "auto" || mode === "legacy", "unknown mode (auto or legacy)", mode);
  const transport = new StreamableHTTPClientTransport(new URL(target));
  const client = new Client(
    { name: "switchboard-ts2-gateway-client", version: "1.0.0" },
    { versionNegotiation: { mode } },
  );
  await client.connect(transport);
  const era = client.getProtocolEra();
  const version = client.getNegotiatedProtocolVersion();

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
    `ts2 gateway client ok (${mode}, era ${era}, version ${version}, ` +
      `${names.length} tools in ${pages} pages, ${calls.length} calls)`,
  );
}

const timer = setTimeout(() => {
  console.error("ts2 gateway client FAILED: timed out after 50 s");
  process.exit(1);
}, 50000);

main(process.argv[2], process.argv[3], JSON.parse(process.argv[4])).then(
  () => {
    clearTimeout(timer);
    process.exit(0);
  },
  (e) => {
    console.error(`ts2 gateway client FAILED: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  },
);
