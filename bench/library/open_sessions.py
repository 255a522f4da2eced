#!/usr/bin/env python3
"""Resident memory per open session of a Streamable HTTP MCP server (bench/library/run).

    open_sessions.py URL PID [N] [held|closed]     # N idle sessions, default 200 held

Standard library only. Against the server at URL (process PID, read from
/proc/PID/status VmRSS, KiB): opens one warm-up session and makes one
`tools/call echo` on it (so one-time costs such as lazily loaded code are not
counted), reads VmRSS ("before"), then opens N sessions, each on its own
keep-alive HTTP/1.1 connection: `initialize` (protocol 2025-11-25) and
`notifications/initialized` only (MCP 2025-11-25, "Lifecycle" and "Transports →
Streamable HTTP"). `held` (default): the N connections stay open, as a connected
client keeps them; `closed`: each connection is closed once its session is open
(the session stays open on the server until DELETE or expiry), which leaves the
cost of the session alone. Waits BENCH_SETTLE seconds (default 2) and reads
VmRSS ("open"), then checks that the last session still answers a `tools/call`
(over a new connection in `closed` mode) and closes everything.

Prints one JSON object: n (sessions opened), mode, rss_before_kib, rss_open_kib,
kib_per_session = (open - before) / n, errors. Exit 0 when it measured, 2 when it
could not.
"""

import http.client
import json
import os
import sys
import time
import urllib.parse

SETTLE = float(os.environ.get("BENCH_SETTLE", "2"))
VERSION = "2025-11-25"


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def messages(content_type, body):
    """The JSON-RPC messages of a reply body (JSON or SSE `data:` events)."""
    text = body.decode("utf-8")
    if (content_type or "").startswith("text/event-stream"):
        out = []
        for event in text.replace("\r\n", "\n").split("\n\n"):
            data = [l[5:].lstrip(" ") if l.startswith("data:") else None for l in event.split("\n")]
            data = [d for d in data if d is not None]
            if data and "".join(data).strip():
                out.append(json.loads("\n".join(data)))
        return out
    return [json.loads(text)] if text.strip() else []


class Session:
    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.path = u.path or "/"
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        self.host = u.netloc
        self.sid = None

    def post(self, payload):
        headers = {
            "Host": self.host,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
        }
        if self.sid:
            headers["Mcp-Session-Id"] = self.sid
        self.conn.request("POST", self.path, body=json.dumps(payload), headers=headers)
        r = self.conn.getresponse()
        body = r.read()
        return r.status, r.getheader("mcp-session-id"), messages(r.getheader("content-type"), body)

    def open(self):
        status, sid, msgs = self.post({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": VERSION, "capabilities": {},
                       "clientInfo": {"name": "open-sessions", "version": "0"}},
        })
        if status != 200 or not sid or not any("result" in m for m in msgs):
            raise RuntimeError(f"initialize: HTTP {status}, session {sid!r}, {msgs!r}")
        self.sid = sid
        status, _, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if status not in (200, 202):
            raise RuntimeError(f"notifications/initialized: HTTP {status}")
        return self

    def call(self, text):
        status, _, msgs = self.post({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}},
        })
        reply = next((m for m in msgs if m.get("id") == 1), None)
        content = (reply or {}).get("result", {}).get("content")
        if status != 200 or content != [{"type": "text", "text": text}]:
            raise RuntimeError(f"tools/call: HTTP {status}, {msgs!r}")


def main():
    if len(sys.argv) not in (3, 4, 5) or (len(sys.argv) == 5 and sys.argv[4] not in ("held", "closed")):
        print(__doc__, file=sys.stderr)
        return 2
    url, pid = sys.argv[1], int(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) >= 4 else 200
    mode = sys.argv[4] if len(sys.argv) == 5 else "held"
    try:
        Session(url).open().call("warm-up")
        time.sleep(SETTLE)
        before = vm_rss_kib(pid)
        sessions, errors = [], []
        for _ in range(n):
            try:
                s = Session(url).open()
                if mode == "closed":
                    s.conn.close()
                sessions.append(s)
            except Exception as e:  # noqa: BLE001 - counted and reported
                errors.append(str(e)[:200])
        time.sleep(SETTLE)
        opened = vm_rss_kib(pid)
        if sessions:
            try:
                sessions[-1].call("still-open")
            except Exception as e:  # noqa: BLE001 - counted and reported
                errors.append(f"the last session no longer answers: {e}"[:200])
        for s in sessions:
            s.conn.close()
    except Exception as e:  # noqa: BLE001
        print(f"open_sessions.py: {e}", file=sys.stderr)
        return 2
    k = len(sessions)
    print(json.dumps({
        "n": k,
        "mode": mode,
        "rss_before_kib": before,
        "rss_open_kib": opened,
        "kib_per_session": (opened - before) / k if k else None,
        "errors": len(errors),
        "error_samples": errors[:5],
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
