# tests/e2e/egress_proxy.sh: `network: "proxy"` from inside real sandboxes (issue 14). Servers
# started here on the host's 127.0.0.1 (plain HTTP, TLS with a throwaway CA made by openssl, a
# raw TCP echo, a UDP sink); names resolve to them through --add-host / egress.hosts. Every
# client runs inside `corral exec --net proxy`: curl through the proxy variables, curl with them
# unset (transparent: DNS stub + capture), Python's urllib, curl as a SOCKS5 client.
. "$TOP/tests/lib.sh"

for tool in curl openssl python3; do
    command -v $tool >/dev/null || { fail "$tool is installed (make deps)"; exit 0; }
done
D=$T_TMP
chmod 755 "$D"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HTTP_PORT=$(free_port); TLS_PORT=$(free_port); ECHO_PORT=$(free_port); UDP_PORT=$(free_port)
CLOSED_PORT=$(free_port) # nothing listens there
echo "hello-egress" >"$D/index.html"

# --- a throwaway CA and a certificate for tls.test, made here
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=corral test CA" -keyout "$D/ca.key" \
    -out "$D/ca.pem" >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -subj "/CN=tls.test" -keyout "$D/srv.key" -out "$D/srv.csr" >/dev/null 2>&1
printf 'subjectAltName=DNS:tls.test\n' >"$D/san.ext"
openssl x509 -req -in "$D/srv.csr" -CA "$D/ca.pem" -CAkey "$D/ca.key" -CAcreateserial -days 2 \
    -extfile "$D/san.ext" -out "$D/srv.pem" >/dev/null 2>&1
chmod 644 "$D"/*.pem "$D"/*.key

cat >"$D/servers.py" <<'PY'
import http.server, socketserver, ssl, socket, sys, threading, os
d, http_port, tls_port, echo_port, udp_port = sys.argv[1], *map(int, sys.argv[2:6])
os.chdir(d)
class Q(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 512
h = S(("127.0.0.1", http_port), Q)
t = S(("127.0.0.1", tls_port), Q)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(d + "/srv.pem", d + "/srv.key")
t.socket = ctx.wrap_socket(t.socket, server_side=True)
class E(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            b = self.request.recv(65536)
            if not b: return
            self.request.sendall(b)
class ES(socketserver.ThreadingTCPServer):
    daemon_threads = True; allow_reuse_address = True; request_queue_size = 512
e = ES(("127.0.0.1", echo_port), E)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", udp_port))
def udp():
    while True:
        b, a = u.recvfrom(2048)
        open(d + "/udp.got", "ab").write(b + b"\n")
for srv in (h, t, e):
    threading.Thread(target=srv.serve_forever, daemon=True).start()
threading.Thread(target=udp, daemon=True).start()
open(d + "/servers.ready", "w").write("ok")
threading.Event().wait()
PY
python3 "$D/servers.py" "$D" "$HTTP_PORT" "$TLS_PORT" "$ECHO_PORT" "$UDP_PORT" &
SRV=$!
trap 'kill $SRV 2>/dev/null; rm -rf "$T_TMP"' EXIT
i=0; while [ ! -f "$D/servers.ready" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done

# The names the tests use, all on the host's loopback. Address rules name 127.0.0.1 on the
# servers' ports, so those names may reach a private address; priv.test is allowed by name on a
# port no address rule names, so its private address is refused.
H="--add-host web.test:127.0.0.1 --add-host tls.test:127.0.0.1 --add-host echo.test:127.0.0.1 \
   --add-host priv.test:127.0.0.1 --add-host a.wild.test:127.0.0.1 --add-host wild.test:127.0.0.1 \
   --add-host bad.wild.test:127.0.0.1"
A="--allow web.test:$HTTP_PORT --allow tls.test:$TLS_PORT --allow echo.test:$ECHO_PORT \
   --allow 127.0.0.1:$HTTP_PORT --allow 127.0.0.1:$TLS_PORT --allow 127.0.0.1:$ECHO_PORT \
   --allow 127.0.0.1:$CLOSED_PORT --allow localhost:$HTTP_PORT --allow localhost:$UDP_PORT \
   --allow priv.test:$UDP_PORT --allow *.wild.test:$HTTP_PORT --deny bad.wild.test:$HTTP_PORT"
DB="$D/trail.db"
px() { # px SHELL-SCRIPT: run it in a proxy sandbox with the test's rules, recorded
    # shellcheck disable=SC2086
    "$CORRAL" exec --timeout 120 --trail "$DB" --net proxy $H $A --ro "$D" -- /bin/sh -c "$1"
}
NOPX='env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY -u ALL_PROXY -u all_proxy'

# --- the policy and the command line refuse what they cannot mean
cat >"$D/bad.json" <<'JSON'
{ "version": 1,
  "roles": { "worker": { "authority": { "network": true }, "sandbox": { "network": "proxy",
    "egress": { "allow": ["ok.test", "bad host", "*.x*.test", "a.test:99999"], "deny": ["10.0.0.0/40"],
                "privat": true, "hosts": { "h.test": "not-an-ip" } } } } } }
JSON
run_capture out err rc "$CORRAL" policy check "$D/bad.json"
expect_status "policy check: bad egress rules are problems" 1 "$rc" "$out $err"
expect_match "policy check: a bad rule is named at its line" 'bad.json:3:[0-9]+: roles.worker.sandbox.egress.allow\[1\]: .bad host. is not a rule' "$out $err"
expect_match "policy check: a misplaced wildcard" "allow\\[2\\]: '\\*\\.x\\*\\.test' is not a rule: a wildcard is only" "$out $err"
expect_match "policy check: a port out of range" 'allow\[3\]: .a.test:99999. is not a rule: the port' "$out $err"
expect_match "policy check: a bad CIDR" 'deny\[0\]: .10.0.0.0/40. is not a rule' "$out $err"
expect_match "policy check: a typo in a key" "unknown key 'privat'.*did you mean 'private'" "$out $err"
expect_match "policy check: a pinned host must be an address" 'hosts.h.test: must map a host name to an IP address' "$out $err"
printf '{ "version": 1, "roles": { "worker": { "authority": { "network": false }, "sandbox": { "network": "proxy" } } } }' >"$D/noauth.json"
run_capture out err rc "$CORRAL" policy check "$D/noauth.json"
expect_match "policy check: proxy needs network authority" 'network is "proxy" but role .worker. has no network authority' "$out $err"
run_capture out err rc "$CORRAL" exec --allow web.test -- /bin/true
expect_status "exec: --allow without --net proxy is a usage error" 2 "$rc" "$err"
run_capture out err rc "$CORRAL" exec --net proxy --allow 'bad host' -- /bin/true
expect_status "exec: a bad --allow is a usage error" 2 "$rc" "$err"
expect_match "exec: ... naming the rule" "--allow bad host: not a host name" "$err"

# --- allowed, end to end, four ways
run_capture out err rc px "curl -sS http://web.test:$HTTP_PORT/index.html"
expect_match "http proxy (HTTP_PROXY): allowed name fetched" '^hello-egress *$' "$out $err"
run_capture out err rc px "curl -sS --cacert $D/ca.pem https://tls.test:$TLS_PORT/index.html"
expect_match "http proxy CONNECT: TLS verified against the throwaway CA" '^hello-egress *$' "$out $err"
run_capture out err rc px "$NOPX curl -sS http://web.test:$HTTP_PORT/index.html; $NOPX curl -sS --cacert $D/ca.pem https://tls.test:$TLS_PORT/index.html"
expect_match "transparent (variables unset): plain HTTP through DNS stub + capture" '^hello-egress *$' "$(echo "$out" | head -1) $err"
expect_match "transparent: TLS verified" '^hello-egress *$' "$(echo "$out" | sed -n 2p)"
run_capture out err rc px "$NOPX getent hosts web.test"
expect_match "transparent: the stub hands out a fake loopback address" '^127\.128\.[0-9]+\.[0-9]+ +web\.test' "$out"
run_capture out err rc px "python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://web.test:$HTTP_PORT/index.html\").read().decode().strip())'"
expect_match "python urllib through the proxy variables" '^hello-egress *$' "$out $err"
run_capture out err rc px "curl -sS --socks5-hostname 127.0.0.1:1080 http://web.test:$HTTP_PORT/index.html"
expect_match "SOCKS5 (names resolved by the supervisor)" '^hello-egress *$' "$out $err"

# The system resolver (getaddrinfo on the supervisor's threads, no pinned name): localhost is
# loopback on the host; on $HTTP_PORT the rule 127.0.0.1:$HTTP_PORT names that address, on
# $UDP_PORT no rule does.
run_capture out err rc px "curl -sS --noproxy '' -x http://127.0.0.1:3128 http://localhost:$HTTP_PORT/index.html; curl -sS -i --noproxy '' -x http://127.0.0.1:3128 http://localhost:$UDP_PORT/"
expect_match "system resolver: a name looked up by the supervisor, its address checked" '^hello-egress *$' "$out $err"
expect_match "system resolver: a name resolving to loopback is refused without an address rule" 'localhost:[0-9]+ the host resolved to a private address' "$out"

# --- refused, each with its rule
run_capture out err rc px "curl -sS -i http://other.test:$HTTP_PORT/"
expect_match "unlisted name: HTTP 403 with a one-line reason" '403 Forbidden' "$out"
expect_match "unlisted name: the reason says why" 'other.test:[0-9]+ no egress allow rule' "$out"
run_capture out err rc px "curl -sS -i http://bad.wild.test:$HTTP_PORT/; curl -sS -i http://a.wild.test:$HTTP_PORT/index.html; curl -sS -i http://wild.test:$HTTP_PORT/"
expect_match "deny beats allow: 403 naming the deny rule" "bad.wild.test:$HTTP_PORT denied by an egress deny rule \(rule: bad.wild.test:$HTTP_PORT\)" "$out"
expect_match "wildcard: a subdomain is allowed" '^hello-egress' "$out"
expect_match "wildcard: the bare parent is not" "wild.test:$HTTP_PORT no egress allow rule" "$out"
run_capture out err rc px "curl -sS -i http://priv.test:$UDP_PORT/"
expect_match "a name resolving to a private address is refused (private: false)" 'resolved to a private address' "$out"
run_capture out err rc px "curl -sS -i --noproxy '' http://127.0.0.2:$HTTP_PORT/"
expect_match "an IP literal not listed is refused" '127.0.0.2:[0-9]+ no egress allow rule names this address' "$out"
run_capture out err rc px "curl -sS --socks5-hostname 127.0.0.1:1080 http://other.test:$HTTP_PORT/"
expect_match "SOCKS5: refused by the ruleset" 'not allowed|ruleset|rejected|97' "$out $err $rc"
run_capture out err rc px "$NOPX curl -sS http://other.test:$HTTP_PORT/"
expect_match "transparent: an unlisted name is refused (reset)" '^(7|56) *$' "$rc"

run_capture out err rc px "curl -sS -i --noproxy '' http://127.0.0.1:$CLOSED_PORT/; curl -sS --noproxy '' --socks5 127.0.0.1:1080 http://127.0.0.1:$CLOSED_PORT/"
expect_match "allowed but nobody listens: HTTP 502 saying why" '502 Bad Gateway' "$out"
expect_match "allowed but nobody listens: SOCKS5 connection refused" 'refused|\(97\)' "$err"

# --- the trail: every decision, before the connection, and its end
tr=$("$CORRAL" trail --db "$DB" --type network_connect --json)
expect_match "trail: an allowed network_connect names host, port, address and rule" \
    "\"address\":\"127.0.0.1\".*\"decision\":\"allowed\",\"host\":\"web.test\",\"port\":$HTTP_PORT,\"proxy\":\"http\".*\"rule\":\"127.0.0.1:$HTTP_PORT\"" "$tr"
expect_match "trail: a refusal is recorded too" '"decision":"refused","host":"other.test"' "$tr"
expect_match "trail: transparent connections are recorded" '"proxy":"transparent"' "$tr"
den=$("$CORRAL" trail --db "$DB" --type denial --json)
expect_match "trail: the deny rule is in a denial" "\"kind\":\"network\".*\"rule\":\"bad.wild.test:$HTTP_PORT\",\"subject\":\"bad.wild.test:$HTTP_PORT\"" "$den"
expect_match "trail: the private refusal names egress.private" '"rule":"egress.private","subject":"priv.test' "$den"
cl=$("$CORRAL" trail --db "$DB" --type network_closed --json)
expect_match "trail: network_closed has bytes each way and a duration" '"bytes_in":[1-9][0-9]*,"bytes_out":[1-9][0-9]*,"conn":[0-9]+,"duration_ms":[0-9.e+-]+' "$cl"
seqs=$("$CORRAL" trail --db "$DB" --json | python3 -c '
import sys, json
c = {}
for l in sys.stdin:
    e = json.loads(l); b = e.get("body") or {}
    if e["type"] in ("network_connect", "network_closed") and b.get("conn") is not None:
        c.setdefault((e["workspace"], b.get("sandbox"), b["conn"]), []).append(e["type"])
print("bad" if any(v[0] != "network_connect" for v in c.values()) else "ok")')
expect_match "trail: each connection's decision precedes its end" '^ok$' "$seqs"
run_capture out err rc "$CORRAL" trail verify --db "$DB"
expect_status "trail verifies" 0 "$rc" "$out $err"

# --- no way out but the proxies
cat >"$D/noroute.py" <<PY
import socket, sys
r = []
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.sendto(b"from-sandbox-lo", ("127.0.0.1", $UDP_PORT))   # the sandbox's own lo: nobody there
try:
    u.sendto(b"from-sandbox-real", (sys.argv[1], $UDP_PORT)); r.append("udp-real:sent")
except OSError as e: r.append("udp-real:" + e.__class__.__name__ + ":" + str(e.errno))
s = socket.socket()
try:
    s.connect((sys.argv[1], $HTTP_PORT)); r.append("tcp-real:connected")
except OSError as e: r.append("tcp-real:" + str(e.errno))
print(" ".join(r))
PY
host_ip=$(hostname -I 2>/dev/null | awk '{print $1}')
[ -n "$host_ip" ] || host_ip=10.255.255.1
run_capture out err rc px "python3 $D/noroute.py $host_ip"
expect_match "UDP to a real address has no route" 'udp-real:OSError:101|udp-real:[A-Za-z]*Error:101' "$out $err"
expect_match "TCP to the host's real address has no route (ENETUNREACH)" 'tcp-real:101' "$out $err"
sleep 0.3
if [ -s "$D/udp.got" ]; then fail "UDP out does not leave the sandbox" "the host's UDP sink got: $(cat "$D/udp.got")"
else ok "UDP out does not leave the sandbox"; fi

# --- 200 connections in parallel, each through CONNECT to the echo server, all relayed intact
cat >"$D/par.py" <<PY
import socket, threading, os, sys, hashlib
N = int(sys.argv[1]); ok = []; bad = []
def one(i):
    try:
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(b"CONNECT echo.test:$ECHO_PORT HTTP/1.1\r\nHost: echo.test\r\n\r\n")
        h = b""
        while b"\r\n\r\n" not in h:
            c = s.recv(1)
            if not c: raise Exception("closed in head")
            h += c
        if b" 200 " not in h.split(b"\r\n")[0]: raise Exception(h)
        data = os.urandom(65536 + i)
        threading.Thread(target=s.sendall, args=(data,)).start()
        got = b""
        while len(got) < len(data):
            c = s.recv(65536)
            if not c: break
            got += c
        (ok if got == data else bad).append(i)
        s.close()
    except Exception as e:
        bad.append((i, str(e)[:80]))
ts = [threading.Thread(target=one, args=(i,)) for i in range(N)]
[t.start() for t in ts]; [t.join() for t in ts]
print("relayed", len(ok), "bad", len(bad), bad[:3])
PY
run_capture out err rc px "python3 $D/par.py 200"
expect_match "200 parallel connections all relay correctly" '^relayed 200 bad 0' "$out $err"

# --- budgets from a policy file: the connection cap holds, a slow loris ties up nothing else
cat >"$D/cap.json" <<JSON
{
  "version": 1,
  "roles": {
    "netter": {
      "extends": "worker",
      "authority": { "write": false, "commands": true, "network": true },
      "sandbox": {
        "network": "proxy",
        "egress": { "allow": ["web.test:$HTTP_PORT", "127.0.0.1:$HTTP_PORT"], "max_connections": 4,
                    "hosts": { "web.test": "127.0.0.1" } }
      }
    }
  }
}
JSON
cat >"$D/cap.py" <<'PY'
import socket, subprocess, sys
held = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(4)]  # silent: head pending
r = subprocess.run(["curl", "-sS", "http://web.test:%s/index.html" % sys.argv[1]], capture_output=True, text=True)
print("at-cap:", r.returncode, r.stdout.strip())
for s in held: s.close()
# The proxy frees the slots when it sees the closes: try until one is free (bounded).
import time
for _ in range(200):
    r = subprocess.run(["curl", "-sS", "http://web.test:%s/index.html" % sys.argv[1]], capture_output=True, text=True)
    if r.returncode == 0:
        break
    time.sleep(0.1)
print("after:", r.returncode, r.stdout.strip())
PY
run_capture out err rc "$CORRAL" exec --policy "$D/cap.json" --role netter --trail "$D/cap.db" --ro "$D" -- /bin/sh -c "python3 $D/cap.py $HTTP_PORT"
expect_match "connection cap: the fifth connection is refused" '^at-cap: (7|52|56) *$' "$out $err"
expect_match "connection cap: a slot freed is usable again" '^after: 0 hello-egress *$' "$out $err"
den=$("$CORRAL" trail --db "$D/cap.db" --type denial --json)
expect_match "connection cap: the refusal names egress.max_connections" '"rule":"egress.max_connections"' "$den"

sed 's/"max_connections": 4/"max_bytes": "1M"/' "$D/cap.json" >"$D/bytes.json"
head -c 4194304 /dev/urandom >"$D/big.bin"
run_capture out err rc "$CORRAL" exec --policy "$D/bytes.json" --role netter --trail "$D/bytes.db" --ro "$D" -- /bin/sh -c "curl -sS -o /tmp/big http://web.test:$HTTP_PORT/big.bin; echo curl=\$?; wc -c </tmp/big; curl -sS -i http://web.test:$HTTP_PORT/index.html | head -1"
expect_match "byte budget: the download is cut short" '^curl=(18|56)' "$out $err"
got=$(echo "$out" | sed -n 2p)
if [ -n "$got" ] && [ "$got" -le 1048576 ]; then ok "byte budget: no more than max_bytes got through"; else fail "byte budget: no more than max_bytes got through" "got $got bytes"; fi
expect_match "byte budget: new connections are refused once it is spent" '403 Forbidden' "$out"
b=$("$CORRAL" trail --db "$D/bytes.db" --type budget_exceeded --json)
expect_match "byte budget: budget_exceeded egress_bytes in the trail" '"budget_dimension":"egress_bytes","consumed":[0-9]+,"limit":1048576' "$b"

cat >"$D/loris.py" <<'PY'
import socket, subprocess, sys, time
slow = []
for i in range(100):
    s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(b"GET http://web"); slow.append(s)
for i in range(3):                     # dribble: a byte each, never a whole head
    for s in slow: s.sendall(b"x")
r = subprocess.run(["curl", "-sS", "http://web.test:%s/index.html" % sys.argv[1]], capture_output=True, text=True)
print("beside 100 slow-loris clients:", r.returncode, r.stdout.strip())
PY
run_capture out err rc px "python3 $D/loris.py $HTTP_PORT"
expect_match "slow loris: 100 dribbling clients tie up nothing else" '^beside 100 slow-loris clients: 0 hello-egress *$' "$out $err"
cat >"$D/loris_end.py" <<'PY'
import socket
s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(b"GET http://web")
s.settimeout(60)
try:
    print("slow client:", "closed by the proxy" if s.recv(100) == b"" else "answered")
except socket.timeout:
    print("slow client: still open after 60 s")
PY
run_capture out err rc px "python3 $D/loris_end.py"
expect_match "slow loris: a head never finished is dropped (head timeout)" '^slow client: closed by the proxy' "$out $err"

# --- a half-open flood against the proxies while the same supervisor serves tool calls
mkdir -p "$D/ws"
cat >"$D/flood_agent.py" <<'PY'
import socket, sys, json
conns = []
for i in range(240):                   # half-open: connected, a partial head, never finished
    try:
        s = socket.create_connection(("127.0.0.1", 3128 if i % 2 else 1080)); s.sendall(b"CONNECT x" if i % 2 else b"\x05")
        conns.append(s)
    except OSError:
        pass
answers = 0
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}) + "\n"); sys.stdout.flush()
sys.stdin.readline()
for i in range(1, 51):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}) + "\n"); sys.stdout.flush()
    if json.loads(sys.stdin.readline()).get("id") == i: answers += 1
sys.stderr.write("flood %d, tool answers %d of 50\n" % (len(conns), answers))
PY
run_capture out err rc "$CORRAL" exec --timeout 60 --net proxy $H $A --ro "$D" --workspace "$D/ws" -- /usr/bin/python3 "$D/flood_agent.py"
expect_match "half-open flood: every tool call of the agent is still answered" 'flood 240, tool answers 50 of 50' "$err"

# --- command sandboxes of a proxy agent: proxies of their own, the same rules, the same trail
mkdir -p "$D/cmdws"
cat >"$D/cmd_agent.py" <<PY
import sys, json
def call(i, method, params):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n"); sys.stdout.flush()
    return json.loads(sys.stdin.readline())
call(0, "initialize", {"protocolVersion": "2025-06-18"})
for i, cmd in enumerate(["curl -sS http://web.test:$HTTP_PORT/index.html",
                         "curl -sS -i http://other.test:$HTTP_PORT/ | head -1",
                         "env -u http_proxy -u HTTP_PROXY -u ALL_PROXY -u all_proxy curl -sS http://web.test:$HTTP_PORT/index.html"], 1):
    r = call(i, "tools/call", {"name": "executeCommand", "arguments": {"command": cmd}})
    sys.stderr.write("cmd%d: %s\n" % (i, json.dumps(r.get("result", {}).get("structuredContent", r))))
PY
run_capture out err rc "$CORRAL" exec --timeout 60 --trail "$D/cmd.db" --net proxy $H $A --ro "$D" --workspace "$D/cmdws" -- /usr/bin/python3 "$D/cmd_agent.py"
expect_match "command sandbox: fetches an allowed host through its own proxy" '^cmd1: .*hello-egress' "$err"
expect_match "command sandbox: an unlisted host is refused (403)" '^cmd2: .*403 Forbidden' "$err"
expect_match "command sandbox: transparent mode too" '^cmd3: .*hello-egress' "$err"
tr=$("$CORRAL" trail --db "$D/cmd.db" --type network_connect --json)
expect_match "command sandbox: its connections are in the agent's trail, labelled" '"decision":"allowed","host":"web.test".*"sandbox":"command-1"' "$tr"

# --- corral run: a coordinator with network "proxy"; `corral ps` shows its connections
mkdir -p "$D/runws"
cat >"$D/run_agent.py" <<PY
import urllib.request, sys, time
try:
    print("fetched:", urllib.request.urlopen("http://web.test:$HTTP_PORT/index.html").read().decode().strip(), file=sys.stderr)
except Exception as e:
    print("fetch failed:", e, file=sys.stderr)
try:
    urllib.request.urlopen("http://other.test:$HTTP_PORT/")
except Exception as e:
    print("refused:", e, file=sys.stderr)
sys.stderr.flush()
time.sleep(600) # until the test, done with corral ps, ends the run
PY
cat >"$D/run.json" <<JSON
{ "version": 1,
  "roles": { "coordinator": { "authority": { "network": true }, "sandbox": { "network": "proxy",
      "egress": { "allow": ["web.test:$HTTP_PORT", "127.0.0.1:$HTTP_PORT"], "hosts": { "web.test": "127.0.0.1" } } } } },
  "agents": { "lead": { "binary": "/usr/bin/python3", "args": ["-u", "$D/run_agent.py"], "role": "coordinator" } } }
JSON
rdb=$D/run.db
"$CORRAL" run "$D/run.json" --workspace "$D/runws" --trail "$rdb" --run-dir "$D/run" >"$D/run.out" 2>"$D/run.err" &
rpid=$!
# ps once the agent's two fetches are done (its log says so) and the hub has counted both
# closed (0 open): poll for that state, as long as the run lasts, then end the run.
i=0; while ! grep -qs '^refused:' "$D"/run/logs/*.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
i=0; while [ $i -lt 100 ]; do
    run_capture ps psErr psRc "$CORRAL" ps --db "$rdb"
    printf '%s\n' "$ps" | grep -Eq ' 0/1/1 ' && break
    sleep 0.1; i=$((i + 1))
done
kill -TERM $rpid
wait $rpid
log=$(cat "$D"/run/logs/*.log 2>/dev/null)
expect_match "corral run: a proxy agent fetches an allowed host" '^fetched: hello-egress' "$log"
expect_match "corral run: ... and is refused an unlisted one (403)" '^refused: HTTP Error 403' "$log"
expect_match "corral ps: the agent's egress counters (open/allowed/refused)" ' 0/1/1 [0-9.]+[BKM]/[0-9.]+[BKM]' "$ps $psErr"
tr=$("$CORRAL" trail --db "$rdb" --type network_connect)
expect_match "corral run: its connections are in the trail" 'network_connect.*"decision":"allowed","host":"web.test"' "$tr"
