#!/usr/bin/env python3
"""The small clients of the gateway benchmark (bench/gateway). Standard library
only; Streamable HTTP sessions from bench/library/open_sessions.py.

    gateway_probe.py first-list URL START TIMEOUT NAME...
    gateway_probe.py first-list-go READY GO TIMEOUT NAME...
    gateway_probe.py memory URL PID N TOOL

first-list: polls URL until one session's `tools/list` (every page, following
`nextCursor`) names every NAME (e.g. a__echo b__echo c__echo), then checks that
the first NAME answers a `tools/call` with its text. A try that fails (no
connection yet, an HTTP error, a list without some NAME) is retried 50 ms later
on a new session; the whole wait is bounded by TIMEOUT seconds. Prints one JSON
object: first_list_s, the seconds from START (a Unix time, taken by the caller
just before it started the server's first process) to the end of the first
complete list; tools (the number listed), tries, and error (null, or the last
failure when TIMEOUT ran out). Exit 0 when the list was complete, 2 otherwise.

first-list-go: the same, with this interpreter started (and its modules
loaded) before the server: it creates the file READY, then waits (bounded by
TIMEOUT) for the file GO to hold `START URL` (written by the caller once the
server listens), and measures from START as above. Without it the Python
start (about 0.15 s here) was counted in every target's first-list time.

memory: resident memory per open downstream session, as open_sessions.py
measures it (held mode): one warm-up session makes one `tools/call TOOL`, VmRSS
of PID ("before") and the summed VmRSS of its descendants are read; then N
sessions are opened, each on its own keep-alive connection (`initialize` and
`notifications/initialized` only) and held; after BENCH_SETTLE s (2) the same
are read again ("open"), the last session must still answer a `tools/call
TOOL`, and everything is closed. Prints one JSON object: n, rss_before_kib,
rss_open_kib, kib_per_session (PID's growth / N), descendants before and open
(count, KiB), descendants_kib_per_session, stateless (the server gave no
Mcp-Session-Id), errors and error_samples. Exit 0 when it measured, 2 when not.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "library"))
from open_sessions import VERSION, Session, vm_rss_kib  # noqa: E402

SETTLE = float(os.environ.get("BENCH_SETTLE", "2"))


def open_session(url, timeout=30):
    """An initialized session; a server without Mcp-Session-Id (stateless) is
    accepted, its requests then go without one."""
    s = Session(url)
    s.conn.timeout = timeout
    status, sid, msgs = s.post({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": VERSION, "capabilities": {},
                   "clientInfo": {"name": "gateway-probe", "version": "0"}},
    })
    if status != 200 or not any("result" in m for m in msgs):
        raise RuntimeError(f"initialize: HTTP {status}, {msgs!r}"[:300])
    s.sid = sid
    status, _, _ = s.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    if status not in (200, 202, 204):
        raise RuntimeError(f"notifications/initialized: HTTP {status}")
    return s


def list_tools(s):
    names, cursor, page = [], None, 0
    while True:
        page += 1
        params = {"cursor": cursor} if cursor else {}
        status, _, msgs = s.post({"jsonrpc": "2.0", "id": 100 + page,
                                  "method": "tools/list", "params": params})
        reply = next((m for m in msgs if m.get("id") == 100 + page), None)
        if status != 200 or not reply or "result" not in reply:
            raise RuntimeError(f"tools/list: HTTP {status}, {msgs!r}"[:300])
        names += [t.get("name") for t in reply["result"].get("tools", [])]
        cursor = reply["result"].get("nextCursor")
        if not cursor or page > 100:
            return names


def call(s, tool, text, rid=1):
    status, _, msgs = s.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                              "params": {"name": tool, "arguments": {"text": text}}})
    reply = next((m for m in msgs if m.get("id") == rid), None)
    content = (reply or {}).get("result", {}).get("content")
    if status != 200 or content != [{"type": "text", "text": text}]:
        raise RuntimeError(f"tools/call {tool}: HTTP {status}, {msgs!r}"[:300])


def first_list(url, start, timeout, names):
    deadline = time.time() + timeout
    tries, error, listed = 0, None, []
    while time.time() < deadline:
        tries += 1
        s = None
        try:
            s = open_session(url, timeout=max(1.0, deadline - time.time()))
            listed = list_tools(s)
            if all(n in listed for n in names):
                done = time.time()
                call(s, names[0], "first-list-check")
                print(json.dumps({"first_list_s": round(done - start, 3), "tools": len(listed),
                                  "tries": tries, "error": None}))
                return 0
            error = f"listed {sorted(listed)!r}, want {names!r}"[:300]
        except Exception as e:  # noqa: BLE001 - retried, the last one reported
            error = f"{type(e).__name__}: {e}"[:300]
        finally:
            if s is not None:
                s.conn.close()
        time.sleep(0.05)
    print(json.dumps({"first_list_s": None, "tools": len(listed), "tries": tries, "error": error}))
    return 2


def descendants(pid):
    """(count, summed VmRSS KiB) of PID's descendant processes."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            kids = []
        out += kids
        todo += kids
    kib = 0
    for p in out:
        try:
            kib += vm_rss_kib(p)
        except (OSError, RuntimeError):
            pass  # gone meanwhile, or a zombie
    return len(out), kib


def memory(url, pid, n, tool):
    errors = []
    warm = open_session(url)
    call(warm, tool, "warm-up")
    time.sleep(SETTLE)
    before, d_before = vm_rss_kib(pid), descendants(pid)
    sessions = []
    for _ in range(n):
        try:
            sessions.append(open_session(url))
        except Exception as e:  # noqa: BLE001 - counted and reported
            errors.append(str(e)[:200])
            if len(errors) > 20:
                break
    time.sleep(SETTLE)
    opened, d_open = vm_rss_kib(pid), descendants(pid)
    if sessions:
        try:
            call(sessions[-1], tool, "still-open")
        except Exception as e:  # noqa: BLE001
            errors.append(f"the last session no longer answers: {e}"[:200])
    for s in sessions + [warm]:
        s.conn.close()
    k = len(sessions)
    print(json.dumps({
        "n": k, "rss_before_kib": before, "rss_open_kib": opened,
        "kib_per_session": round((opened - before) / k, 2) if k else None,
        "descendants_before": d_before[0], "descendants_open": d_open[0],
        "descendants_rss_before_kib": d_before[1], "descendants_rss_open_kib": d_open[1],
        "descendants_kib_per_session": round((d_open[1] - d_before[1]) / k, 2) if k else None,
        "stateless": warm.sid is None,
        "errors": len(errors), "error_samples": errors[:3],
    }))
    return 0 if k == n else 2


def first_list_go(ready, go, timeout, names):
    open(ready, "w").close()
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(go) as f:
                parts = f.read().split()
            if len(parts) == 2:
                return first_list(parts[1], float(parts[0]), timeout, names)
        except FileNotFoundError:
            pass
        time.sleep(0.001)
    print(json.dumps({"first_list_s": None, "tools": 0, "tries": 0,
                      "error": "the server never listened"}))
    return 2


def main(argv):
    if len(argv) >= 5 and argv[1] == "first-list-go":
        return first_list_go(argv[2], argv[3], float(argv[4]), argv[5:])
    if len(argv) >= 5 and argv[1] == "first-list":
        return first_list(argv[2], float(argv[3]), float(argv[4]), argv[5:])
    if len(argv) == 6 and argv[1] == "memory":
        return memory(argv[2], int(argv[3]), int(argv[4]), argv[5])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
