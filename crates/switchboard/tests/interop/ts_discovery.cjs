// Interop: the official MCP TypeScript SDK's authorization discovery
// (`@modelcontextprotocol/sdk`, pinned 1.32.2 in interop/peers-node) against a
// Switchboard server with MCP authorization on: what the SDK reads from our 401
// (`extractWWWAuthenticateParams`), our Protected Resource Metadata
// (`discoverOAuthProtectedResourceMetadata`, from the challenge's URL and by
// the well-known fallback) and, from its `authorization_servers`, the
// authorization server's metadata (`discoverAuthorizationServerMetadata`).
//
// Usage (the pinned Node 22; the SDK is loaded from $SWITCHBOARD_PEERS_NODE):
//   node ts_discovery.cjs http://127.0.0.1:PORT/mcp
// Prints one JSON line of what was found, then `ts discovery ok`, exit 0; or
// what went wrong on stderr, exit 1. Bounded: 20 s in all.
// Run by crates/switchboard/tests/resource_oidc.rs.
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const peers = process.env.SWITCHBOARD_PEERS_NODE;
if (!peers) {
  console.error("ts discovery FAILED: SWITCHBOARD_PEERS_NODE is not set");
  process.exit(1);
}
const peerRequire = createRequire(path.join(peers, "package.json"));
const {
  extractWWWAuthenticateParams,
  discoverOAuthProtectedResourceMetadata,
  discoverAuthorizationServerMetadata,
} = peerRequire("@modelcontextprotocol/sdk/client/auth.js");

const timer = setTimeout(() => {
  console.error("ts discovery FAILED: timed out");
  process.exit(1);
}, 20000);

async function main() {
  const url = process.argv[2];
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "ts", version: "0" } },
    }),
  });
  const params = extractWWWAuthenticateParams(res);
  const prm = await discoverOAuthProtectedResourceMetadata(url, {
    resourceMetadataUrl: params.resourceMetadataUrl,
  });
  const fallback = await discoverOAuthProtectedResourceMetadata(url);
  const as = await discoverAuthorizationServerMetadata(prm.authorization_servers[0]);
  console.log(
    JSON.stringify({
      status: res.status,
      resource_metadata: params.resourceMetadataUrl && params.resourceMetadataUrl.href,
      scope: params.scope,
      resource: prm.resource,
      fallback_resource: fallback.resource,
      authorization_server: prm.authorization_servers[0],
      issuer: as && as.issuer,
      token_endpoint: as && as.token_endpoint,
    }),
  );
  console.log("ts discovery ok");
}

main().then(
  () => {
    clearTimeout(timer);
    process.exit(0);
  },
  (e) => {
    console.error("ts discovery FAILED:", e && e.stack ? e.stack : e);
    process.exit(1);
  },
);
