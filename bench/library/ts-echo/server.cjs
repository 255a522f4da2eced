// The library benchmark's TypeScript SDK echo server (bench/library/run): the
// smallest idiomatic stateful Streamable HTTP server of @modelcontextprotocol/sdk
// 1.x (McpServer + StreamableHTTPServerTransport on node:http), one tool
// `echo {text}` answering {"content":[{"type":"text","text":text}]}.
//
//   node server.cjs [PORT]      # or PORT=...; 0 or absent: a free port
//
// MCP_NODE_PEERS names the folder whose node_modules holds the SDK and zod
// (default: .peers/peers-node of the repo, installed by scripts/install-peers).
// As in the SDK's own stateful example: one transport (sessionIdGenerator
// randomUUID, SSE replies) and one McpServer per session, kept in a map by
// Mcp-Session-Id; a POST without a session id must be `initialize`. Listens on
// 127.0.0.1 only; prints `listening on http://127.0.0.1:PORT/mcp` on stdout.
'use strict';
const http = require('node:http');
const path = require('node:path');
const { randomUUID } = require('node:crypto');
const { createRequire } = require('node:module');

const peers = process.env.MCP_NODE_PEERS || path.join(__dirname, '..', '..', '..', '.peers', 'peers-node');
const load = createRequire(path.join(peers, 'package.json'));
const { McpServer } = load('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = load('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { isInitializeRequest } = load('@modelcontextprotocol/sdk/types.js');
const z = load('zod');

function newServer() {
  const server = new McpServer({ name: 'ts-sdk-echo', version: '0.1.0' });
  server.registerTool(
    'echo',
    { description: 'Returns its text argument.', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  return server;
}

const transports = new Map();

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function jsonError(res, status, message) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

async function handle(req, res) {
  if (new URL(req.url, 'http://localhost').pathname !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  const sessionId = req.headers['mcp-session-id'];
  if (req.method === 'POST') {
    let body;
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      jsonError(res, 400, 'Parse error');
      return;
    }
    let transport = sessionId && transports.get(sessionId);
    if (!transport) {
      if (sessionId || !isInitializeRequest(body)) {
        jsonError(res, sessionId ? 404 : 400, sessionId ? 'Session not found' : 'No valid session ID provided');
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId) transports.delete(transport.sessionId);
      };
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
    return;
  }
  if (req.method === 'GET' || req.method === 'DELETE') {
    const transport = sessionId && transports.get(sessionId);
    if (!transport) {
      jsonError(res, sessionId ? 404 : 400, 'Invalid or missing session ID');
      return;
    }
    await transport.handleRequest(req, res);
    return;
  }
  res.writeHead(405, { allow: 'GET, POST, DELETE' }).end();
}

const port = Number(process.argv[2] || process.env.PORT || 0);
const server = http.createServer((req, res) => {
  handle(req, res).catch((e) => {
    if (!res.headersSent) jsonError(res, 500, String(e));
  });
});
server.listen(port, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}/mcp`);
});
process.on('SIGTERM', () => process.exit(0));
