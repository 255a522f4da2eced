"""Interop: the official MCP Python SDK's authorization discovery (`mcp`, pinned
in interop/requirements.txt) against a Switchboard server with MCP
authorization on: what the SDK reads from our 401
(`extract_resource_metadata_from_www_auth`, `extract_scope_from_www_auth`),
our Protected Resource Metadata at the URLs it tries in order
(`build_protected_resource_metadata_discovery_urls`, answers judged by
`handle_protected_resource_response`), and the authorization server's
metadata (`build_oauth_authorization_server_metadata_discovery_urls`,
`handle_auth_metadata_response`).

Usage: python python_discovery.py http://127.0.0.1:PORT/mcp
Prints one JSON line of what was found, then `python discovery ok`, exit 0; or
what went wrong on stderr, exit 1. Bounded: 20 s in all.
Run by crates/switchboard/tests/resource_oidc.rs.
"""

import asyncio
import json
import sys

import httpx2 as httpx
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    handle_auth_metadata_response,
    handle_protected_resource_response,
)


async def first_prm(client, urls):
    for url in urls:
        found = await handle_protected_resource_response(await client.get(url))
        if found is not None:
            return url, found
    raise RuntimeError(f"no Protected Resource Metadata at {urls}")


async def main(url):
    async with httpx.AsyncClient(timeout=10) as client:
        res = await client.post(
            url,
            headers={"accept": "application/json, text/event-stream"},
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "py", "version": "0"},
                },
            },
        )
        metadata_url = extract_resource_metadata_from_www_auth(res)
        scope = extract_scope_from_www_auth(res)
        used, prm = await first_prm(client, build_protected_resource_metadata_discovery_urls(metadata_url, url))
        fallback_url, fallback = await first_prm(client, build_protected_resource_metadata_discovery_urls(None, url))
        as_url = str(prm.authorization_servers[0])
        asm = None
        for candidate in build_oauth_authorization_server_metadata_discovery_urls(as_url, url):
            go_on, asm = await handle_auth_metadata_response(await client.get(candidate))
            if asm is not None or not go_on:
                break
        if asm is None:
            raise RuntimeError(f"no authorization server metadata for {as_url}")
        print(
            json.dumps(
                {
                    "status": res.status_code,
                    "resource_metadata": metadata_url,
                    "scope": scope,
                    "resource": str(prm.resource),
                    "prm_url": used,
                    "fallback_url": fallback_url,
                    "fallback_resource": str(fallback.resource),
                    "authorization_server": as_url,
                    "issuer": str(asm.issuer),
                    "token_endpoint": str(asm.token_endpoint),
                }
            )
        )
        print("python discovery ok")


try:
    asyncio.run(asyncio.wait_for(main(sys.argv[1]), 20))
except Exception as e:  # noqa: BLE001 - report anything
    print(f"python discovery FAILED: {e!r}", file=sys.stderr)
    sys.exit(1)
