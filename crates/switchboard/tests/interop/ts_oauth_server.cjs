// Interop: an MCP server protected by MCP authorization, built with the official
// TypeScript SDK (`@modelcontextprotocol/sdk`, pinned 1.32.2 in interop/peers-node):
// the SDK's authorization server (`mcpAuthRouter`: RFC 8414 metadata, RFC 7591
// registration, /authorize, /token with its PKCE check) over its demo in-memory
// provider (which approves at once: /authorize redirects with a code), and its
// resource server (`requireBearerAuth` with `expectedResource`, Protected Resource
// Metadata at /.well-known/oauth-protected-resource/mcp) in front of a stateless
// Streamable HTTP `McpServer`. One origin, listening on 127.0.0.1 (a free port).
//
// Usage (the pinned Node 22; the SDK is loaded from $SWITCHBOARD_PEERS_NODE):
//   node ts_oauth_server.cjs
// prints one line `{"url": "http://127.0.0.1:PORT/mcp"}` on stdout when ready, then
// serves until stdin closes. Tool `whoami`: the text `client <client_id> scopes
// <scopes>` of the token the SDK verified. Refuses a token whose resource (RFC 8707)
// is not exactly the MCP URL, at the token endpoint and at the resource server.
// Logs only to stderr. Run by crates/switchboard/tests/client_oauth.rs.
"use strict";

const path = require("node:path");

const peers = process.env.SWITCHBOARD_PEERS_NODE;
if (!peers) {
  console.error("ts_oauth_server: SWITCHBOARD_PEERS_NODE is not set");
  process.exit(1);
}
const sdk = path.join(peers, "node_modules/@modelcontextprotocol/sdk/dist/cjs");
const express = require(path.join(peers, "node_modules/express"));
const { McpServer } = require(path.join(sdk, "server/mcp.js"));
const { StreamableHTTPServerTransport } = require(path.join(sdk, "server/streamableHttp.js"));
const { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } = require(
  path.join(sdk, "server/auth/router.js"),
);
const { requireBearerAuth } = require(path.join(sdk, "server/auth/middleware/bearerAuth.js"));
const { DemoInMemoryAuthProvider } = require(
  path.join(sdk, "examples/server/demoInMemoryOAuthProvider.js"),
);

const app = express();
const listener = app.listen(0, "127.0.0.1", () => {
  const base = `http://127.0.0.1:${listener.address().port}`;
  const mcpUrl = new URL(`${base}/mcp`);
  const provider = new DemoInMemoryAuthProvider(
    (resource) => resource !== undefined && resource.toString() === mcpUrl.toString(),
  );
  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(base),
      resourceServerUrl: mcpUrl,
      scopesSupported: ["mcp:tools"],
    }),
  );
  const auth = requireBearerAuth({
    verifier: provider,
    requiredScopes: [],
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl),
    expectedResource: mcpUrl,
  });
  app.post("/mcp", express.json(), auth, async (req, res) => {
    const server = new McpServer({ name: "ts-oauth-server", version: "1.0.0" });
    server.registerTool("whoami", { description: "The verified token's client." }, async (extra) => ({
      content: [
        {
          type: "text",
          text: `client ${extra.authInfo.clientId} scopes ${extra.authInfo.scopes.join(" ")}`,
        },
      ],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  process.stdout.write(JSON.stringify({ url: mcpUrl.toString() }) + "\n");
});

process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
