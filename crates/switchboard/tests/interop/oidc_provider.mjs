// Interop: a real OAuth 2.1 / OpenID authorization server for the resource
// server tests: `oidc-provider` (npm, pinned in interop/peers-node), issuing
// RFC 9068 JWT access tokens (ES256) for whatever resource the client names
// (RFC 8707 `resource`, the `resourceIndicators` feature: `aud` is that
// resource) through the client credentials grant. Its keys are made at start;
// its metadata is at /.well-known/openid-configuration (jwks_uri, token and
// introspection endpoints).
//
// Confidential clients, each its own subject (`sub` = client id), scope mcp:tools:
//   machine-a / secret-a, machine-b / secret-b   JWT access tokens
//   machine-o / secret-o                         opaque access tokens (for RFC 7662)
//   rs / secret-rs                               the resource server, to introspect
//
// Usage (the pinned Node 22; oidc-provider is loaded from $SWITCHBOARD_PEERS_NODE):
//   node oidc_provider.mjs
// listens on 127.0.0.1 (a free port), prints one line
// `{"issuer": "http://127.0.0.1:PORT", "port": PORT}` on stdout when ready, then
// serves until stdin closes. Logs only to stderr. Run by
// crates/switchboard/tests/resource_oidc.rs.
import crypto from "node:crypto";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";
import util from "node:util";

// Stdout carries the ready line only (the test stops reading after it, so a
// later write there would fail): whatever oidc-provider prints goes to stderr.
for (const name of ["log", "info", "warn", "debug"]) {
  console[name] = (...args) => process.stderr.write(`${util.format(...args)}\n`);
}

const peers = process.env.SWITCHBOARD_PEERS_NODE;
if (!peers) {
  console.error("oidc_provider: SWITCHBOARD_PEERS_NODE is not set");
  process.exit(1);
}
const entry = path.join(peers, "node_modules/oidc-provider/lib/index.js");
const { default: Provider } = await import(pathToFileURL(entry).href);

const server = http.createServer();
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = server.address().port;
const issuer = `http://127.0.0.1:${port}`;

const key = (type, options, alg) => ({
  ...crypto.generateKeyPairSync(type, options).privateKey.export({ format: "jwk" }),
  kid: `${alg.toLowerCase()}-${crypto.randomUUID().slice(0, 8)}`,
  use: "sig",
  alg,
});

const machine = (id, secret) => ({
  client_id: id,
  client_secret: secret,
  grant_types: ["client_credentials"],
  redirect_uris: [],
  response_types: [],
  scope: "mcp:tools",
});

const provider = new Provider(issuer, {
  clients: [
    machine("machine-a", "secret-a"),
    machine("machine-b", "secret-b"),
    machine("machine-o", "secret-o"),
    machine("rs", "secret-rs"),
  ],
  jwks: {
    keys: [
      key("ec", { namedCurve: "P-256" }, "ES256"),
      key("rsa", { modulusLength: 2048 }, "RS256"),
    ],
  },
  scopes: ["mcp:tools"],
  ttl: { ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL || 300 },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource, client) =>
        client.clientId === "machine-o"
          ? { scope: "mcp:tools", audience: resource, accessTokenTTL: 300, accessTokenFormat: "opaque" }
          : {
              scope: "mcp:tools",
              audience: resource,
              accessTokenTTL: 300,
              accessTokenFormat: "jwt",
              jwt: { sign: { alg: "ES256" } },
            },
    },
  },
});
provider.on("server_error", (_ctx, err) => console.error("oidc_provider: server_error", err));
server.on("request", provider.callback());

process.stdout.write(`${JSON.stringify({ issuer, port })}\n`);
process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
