#!/bin/sh
# bench/egress.sh: egress through corral's proxy (`--net proxy`, the supervisor relaying with
# splice) against a direct loopback transfer and against srt's proxy (npm
# @anthropic-ai/sandbox-runtime: HTTP proxy on the host, socat bridges into a bwrap sandbox), in
# one run, on this machine's loopback:
#   1. throughput of a SIZE download (default 1 GiB) with curl: direct, corral, srt
#   2. added connect latency (p50 / p99): N sequential connect + CONNECT + 1-byte echo round
#      trips through each proxy, minus the same done directly
# Usage: CORRAL=build/corral sh bench/egress.sh [SIZE_MIB] [N]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
CORRAL=${CORRAL:-$top/build/corral}
MIB=${1:-1024}
N=${2:-2000}
work=$top/build/bench/egress
mkdir -p "$work"
chmod 755 "$top/build" "$top/build/bench" "$work"

# The peer, installed with npm at bench time.
srt=$top/build/bench/npm-srt/node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js
if [ ! -f "$srt" ]; then
    mkdir -p "$top/build/bench/npm-srt"
    (cd "$top/build/bench/npm-srt" && npm install --no-audit --no-fund --silent @anthropic-ai/sandbox-runtime >/dev/null) ||
        echo "bench/egress: npm could not install @anthropic-ai/sandbox-runtime; srt is skipped"
fi
srt_version=$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$(dirname "$srt")/../package.json" 2>/dev/null | head -1)

cat >"$work/server.py" <<'PY'
# A download server (sendfile: the server is not what is measured) and a 1-byte echo server.
import socket, threading, sys, os
big, http_port, echo_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
size = os.path.getsize(big)
def serve_http(c):
    try:
        h = b""
        while b"\r\n\r\n" not in h:
            d = c.recv(4096)
            if not d: return
            h += d
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
        with open(big, "rb") as f:
            c.sendfile(f)
    finally:
        c.close()
def serve_echo(c):
    try:
        while True:
            d = c.recv(4096)
            if not d: return
            c.sendall(d)
    finally:
        c.close()
def listen(port, fn):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(512)
    while True:
        c, _ = s.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=fn, args=(c,), daemon=True).start()
threading.Thread(target=listen, args=(http_port, serve_http), daemon=True).start()
threading.Thread(target=listen, args=(echo_port, serve_echo), daemon=True).start()
open(sys.argv[4], "w").write("ready")
threading.Event().wait()
PY

cat >"$work/latency.py" <<'PY'
# N sequential round trips: connect (through the proxy in HTTP_PROXY when set: CONNECT), one
# byte echoed. Prints p50 and p99 in microseconds.
import socket, os, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
proxy = os.environ.get("HTTP_PROXY") or os.environ.get("http_proxy")
ph = pp = None
auth = b""
if proxy and sys.argv[3] == "proxy":
    import urllib.parse, base64
    u = urllib.parse.urlsplit(proxy)
    ph, pp = u.hostname, u.port
    if u.username:   # srt's proxy URL carries credentials
        cred = urllib.parse.unquote(u.username) + ":" + urllib.parse.unquote(u.password or "")
        auth = b"Proxy-Authorization: Basic " + base64.b64encode(cred.encode()) + b"\r\n"
ts = []
for i in range(n + 50):
    t0 = time.perf_counter()
    if ph:
        s = socket.create_connection((ph, int(pp)))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n" % (port, port, auth))
        h = b""
        while b"\r\n\r\n" not in h:
            h += s.recv(4096)
        assert b" 200 " in h.split(b"\r\n")[0], h
    else:
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"x")
    assert s.recv(1) == b"x"
    t1 = time.perf_counter()
    s.close()
    if i >= 50:
        ts.append((t1 - t0) * 1e6)
ts.sort()
print("%.0f %.0f" % (ts[len(ts) // 2], ts[int(len(ts) * 0.99)]))
PY

big=$work/big.bin
if [ ! -f "$big" ] || [ "$(stat -c %s "$big")" -ne $((MIB * 1048576)) ]; then
    head -c $((MIB * 1048576)) /dev/urandom >"$big"
fi
chmod 644 "$big" "$work"/*.py
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HP=$(free_port); EP=$(free_port)
rm -f "$work/ready"
python3 "$work/server.py" "$big" "$HP" "$EP" "$work/ready" &
SRV=$!
trap 'kill $SRV 2>/dev/null' EXIT
i=0; while [ ! -f "$work/ready" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
cat "$big" >/dev/null # page cache

cat >"$work/srt.json" <<JSON
{ "network": { "allowedDomains": ["127.0.0.1:$HP", "127.0.0.1:$EP"], "deniedDomains": [] },
  "filesystem": { "denyRead": [], "allowWrite": ["/tmp"], "denyWrite": [] } }
JSON
URL=http://127.0.0.1:$HP/big
CURL="curl -sS -o /dev/null -w %{speed_download} $URL"
CX="$CORRAL exec --memory 1G --net proxy --allow 127.0.0.1:$HP --allow 127.0.0.1:$EP --ro $work --"
# The proxies are the subject: NO_PROXY's 127.0.0.1 is taken out so curl uses them.
rate() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1048576 }'; }

echo "egress: ${MIB} MiB download over loopback, best of 3 (MiB/s)"
best() { # best of three runs of "$@", printing the highest speed_download
    b=0
    for k in 1 2 3; do
        v=$("$@" 2>/dev/null | tail -1); v=${v%%.*}
        [ -n "$v" ] && [ "$v" -gt "$b" ] 2>/dev/null && b=$v
    done
    echo "$b"
}
direct=$(best sh -c "$CURL")
corral=$(best sh -c "$CX /usr/bin/env NO_PROXY= no_proxy= $CURL")
srt_t=0
if [ -f "$srt" ] && command -v bwrap >/dev/null && command -v socat >/dev/null; then
    srt_t=$(best node "$srt" --settings "$work/srt.json" -c "NO_PROXY= no_proxy= $CURL")
fi
printf '  direct loopback   %6s MiB/s\n' "$(rate "$direct")"
printf '  corral --net proxy %5s MiB/s   %s of direct\n' "$(rate "$corral")" "$(awk -v a="$corral" -v b="$direct" 'BEGIN{printf "%.0f%%", b ? 100*a/b : 0}')"
printf '  srt %-13s %5s MiB/s   %s of direct\n' "$srt_version" "$(rate "$srt_t")" "$(awk -v a="$srt_t" -v b="$direct" 'BEGIN{printf "%.0f%%", b ? 100*a/b : 0}')"
printf '  corral / srt      %6s\n' "$(awk -v a="$corral" -v b="$srt_t" 'BEGIN{ if (b) printf "%.2fx", a/b; else print "n/a" }')"

echo "egress: connect latency, $N sequential connect + CONNECT + 1-byte echo (us, p50 p99)"
d=$(python3 "$work/latency.py" "$EP" "$N" direct)
c=$($CX /usr/bin/env HTTP_PROXY=http://127.0.0.1:3128 python3 "$work/latency.py" "$EP" "$N" proxy)
s="0 0"
if [ -f "$srt" ] && command -v socat >/dev/null; then
    s=$(node "$srt" --settings "$work/srt.json" -c "python3 $work/latency.py $EP $N proxy" 2>/dev/null | tail -1)
    [ -n "$s" ] || s="0 0"
fi
set -- $d $c $s
printf '  direct            p50 %5s  p99 %5s\n' "$1" "$2"
printf '  corral            p50 %5s  p99 %5s   added p50 %5s  p99 %5s\n' "$3" "$4" $(($3 - $1)) $(($4 - $2))
printf '  srt               p50 %5s  p99 %5s   added p50 %5s  p99 %5s\n' "$5" "$6" $(($5 - $1)) $(($6 - $2))
