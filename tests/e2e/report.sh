#!/bin/sh
# tests/e2e/report.sh: `corral trail report` through the real binary and a real browser. The
# demo's run (examples/demo.sh) and a hostile run, whose agents wrote HTML and script into every
# field they control (task names and descriptions, tool arguments, file content, checkpoint
# intents, envelope payloads and addresses, signal reasons, a workspace's agent name, stderr),
# are each made into a page and opened in headless Chromium (tests/report/browse.py, over the
# DevTools pipe): no console error, no request but the file itself, no injected element or
# script run, with the page's CSP and without it (escaping alone holds), and a control page
# that does inject proves the detector sees it. The demo's screenshot is kept in build/ and
# checked to show the tree, the graph and the timeline.
. "$TOP/tests/lib.sh"
if ! command -v chromium >/dev/null 2>&1; then
    fail "report: chromium is not installed (make deps installs it)"
    exit 1
fi
BROWSE="python3 $TOP/tests/report/browse.py"
mkdir -p "$TOP/build"
SHOT=$TOP/build/report-demo.png

# fact PAGE_JSON PYTHON_EXPR: evaluates EXPR with d = the browse.py result; prints it
fact() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# expect_fact NAME PAGE_JSON EXPR: EXPR is true
expect_fact() {
    v=$(fact "$2" "$3" 2>&1)
    if [ "$v" = True ]; then ok "$1"; else fail "$1" "$3 is $v" "errors: $(fact "$2" 'd.get("errors")' 2>&1 | head -c 1500)"; fi
}
browse() { # HTML OUT.json [--screenshot PNG]
    page=$1 json=$2; shift 2
    if $BROWSE "$page" "$@" >"$json" 2>"$json.err"; then ok "chromium opened $(basename "$page")"
    else fail "chromium opened $(basename "$page")" "$(head -c 2000 "$json.err")"; echo '{}' >"$json"; fi
}

# ---- the demo's run
demo=$T_TMP/demo
run_capture out err rc env DEMO_DIR="$demo" sh "$TOP/examples/demo.sh"
expect_status "the demo runs" 0 "$rc" "$(printf '%s' "$err" | tail -5)"
expect_match "the demo ends by saying where its report is" "report: .*$demo/report.html" "$out"
run_capture out err rc "$CORRAL" trail report --db "$demo/trail.db" --output "$T_TMP/demo.html"
expect_status "corral trail report writes the demo's page" 0 "$rc" "$err"
mode=$(stat -c %a "$T_TMP/demo.html" 2>/dev/null)
[ "$mode" = 600 ] && ok "the page is its owner's only, like the trail (0600)" || fail "the page is its owner's only, like the trail (0600)" "mode $mode"
nocdn=$(grep -Eio '(src|href)=["'"'"']?(https?:)?//[^"'"'"' >]*' "$T_TMP/demo.html" | head -3)
[ -z "$nocdn" ] && ok "the page names no outside resource" || fail "the page names no outside resource" "$nocdn"
browse "$T_TMP/demo.html" "$T_TMP/demo.json" --screenshot "$SHOT"
J=$T_TMP/demo.json
expect_fact "demo: no console error, exception or CSP violation" "$J" 'd["errors"] == []'
expect_fact "demo: no request but the file itself" "$J" 'd["requests"] == [d["url"]]'
expect_fact "demo: the script ran (it marks the page ready)" "$J" 'd["facts"]["ready"] == "1"'
expect_fact "demo: summary says the trail verified, with its head" "$J" '"trail verify: ok" in d["facts"]["verify"] and "head" in d["facts"]["verify"]'
expect_fact "demo: summary names policy and owner" "$J" '"examples/policies/demo.json" in d["facts"]["text"] and "uid:0" in d["facts"]["text"]'
expect_fact "demo: the tree has the 4 workspaces" "$J" 'd["facts"]["tree_rows"] == 4'
expect_fact "demo: the tree shows budgets used against granted" "$J" '"256.0 MiB" in d["facts"]["text"] and "/ 300 s" in d["facts"]["text"]'
expect_fact "demo: the graph has the 3 tasks and their 2 dependencies" "$J" 'd["facts"]["graph_nodes"] == 3 and d["facts"]["graph_edges"] == 2'
expect_fact "demo: the graph shows task names" "$J" 'all(n in d["facts"]["text"] for n in ("add-median", "test-median", "document"))'
expect_fact "demo: the timeline has a lane per workspace and the system's" "$J" 'd["facts"]["lanes"] == 5'
expect_fact "demo: the timeline has marks" "$J" 'd["facts"]["marks"] > 50'
expect_fact "demo: clicking a tool call shows its body in the panel" "$J" 'd["interact"]["body_is_mark"] and "tool" in d["interact"]["head"] and "readFile" in d["interact"]["body"]'
expect_fact "demo: zoom in spreads the marks" "$J" 'd["interact"]["x1"] > 2 * d["interact"]["x0"] and d["interact"]["w1"] > 2 * d["interact"]["w0"]'
expect_fact "demo: the message toggle shows protocol messages" "$J" 'd["interact"]["messages_shown_when_toggled"] > 0'
# The screenshot: a real picture of the whole page, in which the tree's state badges, the
# graph's node fill and the timeline's tool-call colour can be found (tests/report/pngcheck.py).
if python3 "$TOP/tests/report/pngcheck.py" "$SHOT" d8f3dc b7e4c7 2f80ed >"$T_TMP/png.out" 2>&1; then
    ok "demo: the screenshot ($SHOT) shows the tree, the graph and the timeline: $(cat "$T_TMP/png.out")"
else
    fail "demo: the screenshot ($SHOT) shows the tree, the graph and the timeline" "$(cat "$T_TMP/png.out")"
fi

# ---- a hostile run: HTML and script in every field the agents control
# P goes into fields without a length limit; S (under 100 bytes) into task names (1-200 bytes).
P='<script>window.__corral_pwned=1</script><img src=x onerror="window.__corral_pwned=2"><svg onload="window.__corral_pwned=3"></svg><iframe src="http://127.0.0.1:9/leak"></iframe>'"'"'"></textarea></pre></title></style>--><a href="javascript:window.__corral_pwned=4">x</a>&amp;\N\G{x}'
S='<script>__corral_pwned=1</script><img src=x onerror=__corral_pwned=2><svg onload=__corral_pwned=3>'"'"'"&amp;\N'
d=$T_TMP/hostile
mkdir -p "$d/ws"
echo base >"$d/ws/base.txt"
chown -R 65534:65534 "$d/ws"
python3 - "$d/policy.json" "$AGENTS/wacp_script" "$P" "$S" <<'PY'
import json, sys
out, script, p, s = sys.argv[1:5]
q = lambda v: json.dumps(v)
worker_steps = [
    "tools/call " + q({"name": "readFile", "arguments": {"path": p}}),
    "tools/call " + q({"name": "readFile", "arguments": {"path": "../../" + p}}),
    "tools/call " + q({"name": "writeFile", "arguments": {"path": "x.txt", "content": p}}),
    "wacp/checkpoint.create " + q({"type": "artifact", "intent": p, "status": "final", "confidence": "high",
                                   "parent": None, "files": ["x.txt"]}),
    "wacp/envelope.send " + q({"to": "{{directive.from}}", "type": "query", "payload": {"p": p, p: p}}),
    "wacp/signal.emit " + q({"type": "blocked", "reason": p}),
    "@log:" + p,
    "@hold",
]
coord = [
    "t=wacp/task.create " + q({"name": s, "description": p}),
    "wacp/task.create " + q({"tasks": [{"ref": "a", "name": s + "a", "description": p},
                                       {"ref": "b", "name": s + "b", "depends_on": ["a"]}]}),
    "w=wacp/workspace.create " + q({"agent": "w", "task": "{{t.task_id}}", "directive": {"p": p, "steps": worker_steps}}),
    "wacp/workspace.create " + q({"agent": p, "directive": {"p": p}}),
    "wacp/envelope.send " + q({"to": p, "type": "directive", "payload": {"p": p}}),
    "@raw:" + p,
    "@log:" + p,
    "@until:blocked",
    "wacp/signal.emit " + q({"type": "complete"}),
]
worker = {"authority": {"write": True, "commands": False}, "budgets": {"memory": "256M", "pids": 32, "wall_time": "2m"}}
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"coordinator": {"budgets": {"wall_time": "2m"}}, "worker": worker},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}},
          open(out, "w"), indent=1)
PY
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$d/ws" --run-dir "$d/run" --trail "$d/trail.db" --timeout 60
[ -f "$d/trail.db" ] && ok "the hostile run left a trail (corral run status $rc)" || fail "the hostile run left a trail" "$err"
# every field got the payload into the trail: otherwise this test would prove less than it says
for ty in task_created tool_call checkpoint_created signal_emitted envelope_rejected protocol_message; do
    n=$("$CORRAL" trail --db "$d/trail.db" --type "$ty" --json | grep -c '__corral_pwned')
    [ "$n" -gt 0 ] && ok "hostile: the payload is in the trail's $ty entries" || fail "hostile: the payload is in the trail's $ty entries"
done
grep -q '__corral_pwned' "$d"/run/logs/*.log && ok "hostile: the payload is in the agents' stderr logs" || fail "hostile: the payload is in the agents' stderr logs"
run_capture out err rc "$CORRAL" trail report --db "$d/trail.db" --output "$d/report.html"
expect_status "corral trail report writes the hostile run's page" 0 "$rc" "$err"
browse "$d/report.html" "$d/page.json"
J=$d/page.json
expect_fact "hostile: no console error, exception or CSP violation" "$J" 'd["errors"] == []'
expect_fact "hostile: no request but the file itself" "$J" 'd["requests"] == [d["url"]]'
expect_fact "hostile: no injected script ran" "$J" 'd["facts"]["pwned"] is None and d["interact"]["pwned"] is None'
expect_fact "hostile: one script, one style, no injected element" "$J" 'd["facts"]["scripts"] == 1 and d["facts"]["styles"] == 1 and d["facts"]["foreign"] == 0'
expect_fact "hostile: no event-handler or URL attribute anywhere" "$J" 'd["facts"]["on_attrs"] == [] and d["facts"]["url_attrs"] == []'
expect_fact "hostile: the payload is shown as text" "$J" 'd["facts"]["text"].count("__corral_pwned=1</script>") >= 5'
expect_fact "hostile: the graph drew the hostile task names" "$J" 'd["facts"]["graph_nodes"] == 3 and d["facts"]["graph_edges"] >= 1'
expect_fact "hostile: denials are grouped by rule" "$J" 'd["facts"]["denial_rows"] >= 2'
expect_fact "hostile: the panel shows a hostile body as text" "$J" 'd["interact"]["body_is_mark"] and d["interact"]["new_elements"] <= 0'
# Escaping alone must hold: the same page without its Content-Security-Policy.
grep -v 'http-equiv="Content-Security-Policy"' "$d/report.html" >"$d/nocsp.html"
browse "$d/nocsp.html" "$d/nocsp.json"
J=$d/nocsp.json
expect_fact "hostile, no CSP: no injected script ran" "$J" 'd["facts"]["pwned"] is None and d["interact"]["pwned"] is None'
expect_fact "hostile, no CSP: no injected element or attribute" "$J" 'd["facts"]["foreign"] == 0 and d["facts"]["on_attrs"] == [] and d["facts"]["scripts"] == 1'
expect_fact "hostile, no CSP: no request but the file itself" "$J" 'd["requests"] == [d["url"]]'
# The detector sees an injection when there is one (else the checks above could not fail).
printf '<!DOCTYPE html><html><head><meta charset="utf-8"><title>x</title></head><body><section id="tl"></section>%s<script>document.documentElement.setAttribute("data-ready","1")</script></body></html>\n' "$P" >"$d/control.html"
browse "$d/control.html" "$d/control.json"
J=$d/control.json
expect_fact "control page: the detector sees the injected script run" "$J" 'd["facts"]["pwned"] is not None'
expect_fact "control page: the detector sees the injected elements and the request" "$J" 'd["facts"]["foreign"] > 0 and len(d["requests"]) > 1'

# ---- a corral exec trail (no workspace_created, no supervisor_started): seccomp denials by rule
run_capture out err rc "$CORRAL" exec --trail "$T_TMP/exec.db" -- /bin/sh -c 'unshare -U true; exit 3'
expect_status "corral exec with a denied syscall" 3 "$rc" "$err"
run_capture out err rc "$CORRAL" trail report --db "$T_TMP/exec.db" --output "$T_TMP/exec.html"
expect_status "corral trail report of an exec trail" 0 "$rc" "$err"
page=$(cat "$T_TMP/exec.html")
expect_match "exec trail: the command is the program's argv" 'command</dt><dd>exec: /bin/sh -c unshare -U true; exit 3' "$page"
expect_match "exec trail: the seccomp denial under its rule" '<tr><td>always denied</td><td>1</td><td>seccomp</td>.*unshare' "$page"
expect_match "exec trail: the workspace ended with the program's status" '<td>exit 3</td></tr>' "$page"

# ---- a trail that fails verification still gives a page, which says so
cp "$demo/trail.db" "$T_TMP/bad.db"
python3 - "$T_TMP/bad.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for (name,) in c.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
    c.execute('DROP TRIGGER "%s"' % name)
c.execute("""UPDATE entries SET body='{"forged":true}' WHERE seq=10""")
c.commit()
PY
run_capture out err rc "$CORRAL" trail report --db "$T_TMP/bad.db" --output "$T_TMP/bad.html"
expect_status "a changed trail still gives a page" 0 "$rc" "$err"
expect_match "its page says verification failed, at the changed entry" 'trail verify FAILED.*entry 10' "$(grep -o 'id="verify">[^<]*' "$T_TMP/bad.html")"

# ---- usage and errors
run_capture out err rc "$CORRAL" trail report --output "$T_TMP/x.html"
expect_status "no --db: usage error" 2 "$rc" "$err"
run_capture out err rc "$CORRAL" trail report --db "$T_TMP/none.db"
expect_status "a missing trail: usage error" 2 "$rc" "$err"
echo "not a trail" >"$T_TMP/junk.db"
run_capture out err rc "$CORRAL" trail report --db "$T_TMP/junk.db" --output "$T_TMP/junk.html"
expect_status "a file that is not a trail: usage error, one line" 2 "$rc" "$err"
[ ! -e "$T_TMP/junk.html" ] && ls "$T_TMP" | grep -q 'junk.html.tmp' && fail "no page and no temporary left behind" || ok "no page and no temporary left behind"
run_capture out err rc "$CORRAL" trail report --db "$demo/trail.db" --output /proc/nonexistent/x.html
expect_status "an output that cannot be written: 125" 125 "$rc" "$err"
run_capture out err rc "$CORRAL" trail report --db "$demo/trail.db"
expect_match "without --output the page goes to stdout" '^<!DOCTYPE html>' "$out"
