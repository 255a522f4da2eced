"""Interop: an MCP server protected by MCP authorization, built with the official
Python SDK (`mcp` 2.3.0): `MCPServer` with `auth_server_provider` and
`AuthSettings`, so the SDK serves the authorization server (RFC 8414 metadata,
RFC 7591 registration, /authorize with its PKCE and resource checks, /token with
the authorization_code and refresh_token grants) and the resource server
(Protected Resource Metadata, bearer checks, the token's resource compared with
the MCP URL, RFC 7009 revocation) on one origin. The provider below is
in memory and approves at once (/authorize redirects with a code); it issues
refresh tokens.

Usage (run with $SWITCHBOARD_PYTHON):
    python python_oauth_server.py
prints one line `{"url": "http://127.0.0.1:PORT/mcp"}` on stdout when listening on
127.0.0.1 (a free port), then serves until stdin closes. Tools:
- `whoami`: `client <client_id> refreshed <n>` for the verified token (n: how many
  refresh_token grants the server has answered);
- `revoke_access`: forgets every access token (refresh tokens stay), so the next
  request gets 401.
Logs only to stderr. Run by crates/switchboard/tests/client_oauth.rs and
crates/switchboard-cli/tests/auth_login.rs.
"""

import asyncio
import json
import secrets
import socket
import sys
import time

import uvicorn
from pydantic import AnyHttpUrl

from mcp.server.auth.handlers import revoke
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import (
    AuthSettings,
    ClientRegistrationOptions,
    RevocationOptions,
)
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthToken


class RevocationRequest(revoke.RevocationRequest):
    """The SDK's revocation form (mcp 2.3.0) requires a `client_secret` member
    even from a client that authenticates with HTTP Basic, as its registration
    said, so such a client can never revoke; here it is optional (RFC 7009 §2.1
    leaves client authentication to the method)."""

    client_secret: str | None = None


revoke.RevocationRequest = RevocationRequest


class Provider:
    """An in-memory authorization server that approves every request."""

    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}
        self.refreshes = 0

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params):
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def issue(self, client_id, scopes, resource):
        access = "at-" + secrets.token_urlsafe(16)
        refresh = "rt-" + secrets.token_urlsafe(16)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + 3600,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=3600,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )

    async def exchange_authorization_code(self, client, authorization_code):
        del self.codes[authorization_code.code]
        return self.issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        self.refreshes += 1
        del self.refresh[refresh_token.token]
        return self.issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        return self.access.get(token)

    async def revoke_token(self, token):
        self.access.pop(getattr(token, "token", None), None)
        self.refresh.pop(getattr(token, "token", None), None)


async def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = Provider()
    server = MCPServer(
        "python-oauth-server",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(base),
            resource_server_url=AnyHttpUrl(f"{base}/mcp"),
            client_registration_options=ClientRegistrationOptions(enabled=True),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=[],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """The verified token's client and how many refreshes were answered."""
        token = get_access_token()
        return f"client {token.client_id} refreshed {provider.refreshes}"

    @server.tool()
    def revoke_access() -> str:
        """Forgets every access token."""
        provider.access.clear()
        return "revoked"

    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning")
    http = uvicorn.Server(config)
    serving = asyncio.create_task(http.serve(sockets=[sock]))
    while not http.started:
        await asyncio.sleep(0.02)
    print(json.dumps({"url": f"{base}/mcp"}), flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    http.should_exit = True
    await serving


asyncio.run(main())
