"""connect: the host app closes stdin while a request of the remote's (elicitation/create,
sent for the host's tools/call) is unanswered. README: on closing stdin 'the answers to the
requests it already sent are still written to stdout (for up to 10 s)'; connect.rs: 'a request
of the remote's then gets an error at once (no one can answer it)'. Expected: the pending
elicitation is refused at once, so the tool's answer comes back quickly. Observed: only
requests that arrive *after* EOF are refused; the one already delivered is never answered,
so the host's tools/call gets no answer and connect waits the whole 10 s grace.
Usage: python eof_with_pending_server_request.py URL  (bridge in front of server-everything)"""
import sys, time, subprocess, json
B = "/work/wt-break-target/debug/switchboard"
p = subprocess.Popen([B, "connect", sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(m): p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "raw", "version": "1"}}})
p.stdout.readline(); send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "trigger-elicitation-request", "arguments": {}}})
while True:
    m = json.loads(p.stdout.readline())
    if m.get("method") == "elicitation/create": break
t = time.time(); p.stdin.close()
rest = [json.loads(l) for l in p.stdout]
p.wait(); dt = time.time() - t
answered = any(m.get("id") == 1 for m in rest)
print(f"connect exited {dt:.1f}s after EOF; tools/call answered: {answered}; got {[str(m)[:80] for m in rest]}")
print("OK" if answered and dt < 3 else "PROBLEM")
