#!/usr/bin/env python3
"""Opening sessions while many are held open (bench/sessions): what a spawn
costs a bridge that starts one child per session, as its sessions grow.

    held_sessions.py URL PID CHECKPOINTS     # e.g. "10 1000 2000"

Standard library only. Against the Streamable HTTP server at URL (process PID):
opens sessions one after another up to the largest checkpoint, each on its own
keep-alive HTTP/1.1 connection, held open (`initialize`, protocol 2025-11-25,
then `notifications/initialized`; bench/library/open_sessions.py's client). At
each checkpoint N (N sessions open) it records:

- open_s: the seconds spent opening the sessions so far (the checkpoints'
  own probes excluded), and ms_per_session over the segment since the last
  checkpoint;
- initialize_ms: the latency of one more session's `initialize` (request sent
  to result read, a new connection made beforehand), the median of
  BENCH_PROBES (default 11) probes, each probe session then ended (DELETE) so
  that N stay open;
- cpu_ms_per_session: the server process's CPU time (its threads' run times
  from /proc schedstat, children excluded; see cpu_ms) per session opened over
  the segment, and cpu_ms_per_probe over the probes: on a shared machine the
  figures to trust, as latencies move with the other work;
- the server process's RSS (KiB), open descriptors and child processes.

At the end it checks that the first and the last session still answer a
`tools/call echo`, and closes every connection. Prints one JSON object per
checkpoint (a line each), with `errors` (so far) and `error_samples`. Exit 0
when every checkpoint was measured, 2 otherwise.
"""

import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "library"))
from open_sessions import Session, vm_rss_kib  # noqa: E402

PROBES = int(os.environ.get("BENCH_PROBES", "11"))


def cpu_ms(pid):
    """The CPU time of the process's threads alive now, children excluded, in
    ms: the sum of their /proc schedstat run times (ns), which, unlike the
    10 ms ticks of /proc/PID/stat, resolves a segment of ten sessions; where
    schedstat is missing, utime+stime from /proc/PID/stat."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except FileNotFoundError:
                pass  # the thread ended meanwhile
        return total / 1e6
    except OSError:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return len(f.read().split())
    except OSError:
        return None


def probe_initialize(url):
    """One more session: the `initialize` latency in ms (the connection made
    first), then DELETE."""
    s = Session(url)
    s.conn.connect()
    start = time.monotonic()
    status, sid, msgs = s.post({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "held-sessions-probe", "version": "0"}},
    })
    elapsed = (time.monotonic() - start) * 1000
    if status != 200 or not sid or not any("result" in m for m in msgs):
        raise RuntimeError(f"probe initialize: HTTP {status}, {msgs!r}"[:200])
    s.conn.request("DELETE", s.path, headers={
        "Host": s.host, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
    s.conn.getresponse().read()
    s.conn.close()
    return elapsed


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    url, pid = sys.argv[1], int(sys.argv[2])
    checkpoints = sorted({int(n) for n in sys.argv[3].split()})
    sessions, errors = [], []
    opening = 0.0
    segment_start, segment_from = 0.0, 0
    segment_cpu = cpu_ms(pid)
    measured = 0
    for target in checkpoints:
        while len(sessions) < target:
            start = time.monotonic()
            try:
                sessions.append(Session(url).open())
            except Exception as e:  # noqa: BLE001 - counted and reported
                errors.append(str(e)[:200])
                if len(errors) > 20:
                    break
            opening += time.monotonic() - start
        if len(sessions) < target:
            break
        opened_cpu = cpu_ms(pid)
        try:
            latencies = [probe_initialize(url) for _ in range(PROBES)]
        except Exception as e:  # noqa: BLE001
            errors.append(str(e)[:200])
            break
        probes_cpu = cpu_ms(pid)
        segment = len(sessions) - segment_from
        print(json.dumps({
            "sessions": len(sessions),
            "open_s": round(opening, 3),
            "ms_per_session": round((opening - segment_start) * 1000 / segment, 3) if segment else None,
            "initialize_ms": round(statistics.median(latencies), 2),
            "initialize_ms_max": round(max(latencies), 2),
            "cpu_ms_per_session": round((opened_cpu - segment_cpu) / segment, 3) if segment else None,
            "cpu_ms_per_probe": round((probes_cpu - opened_cpu) / PROBES, 3),
            "rss_kib": vm_rss_kib(pid),
            "fds": fds(pid),
            "children": children(pid),
            "errors": len(errors),
            "error_samples": errors[:3],
        }), flush=True)
        measured += 1
        segment_start, segment_from = opening, len(sessions)
        segment_cpu = cpu_ms(pid)
    for s in (sessions[:1] + sessions[-1:]) if sessions else []:
        try:
            s.call("still-open")
        except Exception as e:  # noqa: BLE001
            errors.append(f"a held session no longer answers: {e}"[:200])
    for s in sessions:
        s.conn.close()
    if errors:
        print(f"held_sessions.py: {len(errors)} errors, e.g. {errors[:3]}", file=sys.stderr)
    return 0 if measured == len(checkpoints) and not errors else 2


if __name__ == "__main__":
    sys.exit(main())
