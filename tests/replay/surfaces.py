#!/usr/bin/env python3
"""tests/replay/surfaces.py: replays a deterministic set of hostile tools/call argument sets
(wrong types, missing and extra keys, huge numbers, empty strings, nested objects, path
escapes) and every tools/list against the four tool surfaces, through the real pipe
(`corral exec --workspace DIR --policy P --role R -- rpc_script @raw ...`), and prints the
answers whole, one per line, with times and durations blanked. Two binaries' transcripts are
diffed to prove a change kept every answer byte for byte (issue 11; docs/tools.md).

usage: surfaces.py CORRAL AGENTS_DIR [SURFACE...] > transcript
With REPLAY_RULES=1 the roles also set the tool rules (read_before_write on every write tool,
needs_approval on the second), so the refusals of the gate are replayed too.
"""
import json, os, re, shutil, subprocess, sys, tempfile

CORRAL, AGENTS = sys.argv[1], sys.argv[2]
SURFACES = sys.argv[3:] or ["wap", "file", "voltagent", "kward"]
INIT = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
BATCH = 400

HOSTILE = [None, True, False, 0, -1, 1.5, 1e308, -1e308, 9007199254740993, "", " ", "x",
           "../../etc/passwd", "/etc/passwd", "..", "~/.ssh/id_rsa", "sub/../../x", "a\u0000b",
           "a" * 5000, {}, {"a": {"b": [1, {"c": None}]}}, [], [1, "x"], [[[]]], ["../x"],
           {"path": "../x"}, "notes.txt", "sub", "*", "[", "(?", "\\", "%s%n"]
NOT_OBJECTS = [None, "x", 1, [], [{}], True]


def valid(name, schema):
    t = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if t == "string":
        if "path" in name.lower() or name in ("file", "directory", "dir", "cwd"):
            return "notes.txt"
        return "x"
    if t == "integer" or t == "number":
        return max(1, schema.get("minimum", 1))
    if t == "boolean":
        return False
    if t == "array":
        return []
    if t == "object":
        return {}
    return "x"


def cases(tools):
    out = []
    for t in tools:
        name = t["name"]
        sch = t.get("inputSchema", {})
        props = sch.get("properties", {})
        req = sch.get("required", [])
        base = {k: valid(k, props[k]) for k in req if k in props}
        for v in NOT_OBJECTS:
            out.append((name, v))
        out.append((name, {}))
        out.append((name, dict(base)))
        out.append((name, dict(base, extra_key_zz=1)))
        for k in props:
            for v in HOSTILE:
                out.append((name, dict(base, **{k: v})))
            missing = {kk: vv for kk, vv in base.items() if kk != k}
            out.append((name, missing))
    return out


POLICY = {"version": 1, "roles": {
    s: {"extends": "worker", "surface": s, "authority": {"write": True, "commands": True}}
    for s in ["wap", "file", "voltagent", "kward"]}}
RULES = {"wap": (["writeFile", "modifyFile"], "modifyFile"),
         "file": (["file.write", "file.patch", "file.delete"], "file.patch"),
         "voltagent": (["write_file", "edit_file", "delete_file"], "edit_file"),
         "kward": (["write_file", "edit_file"], "edit_file")}
if os.environ.get("REPLAY_RULES") == "1":
    for s, (rbw, appr) in RULES.items():
        POLICY["roles"][s]["tools"] = {"read_before_write": rbw, "needs_approval": [appr]}


def workspace(root):
    ws = os.path.join(root, "ws")
    os.makedirs(os.path.join(ws, "sub"))
    with open(os.path.join(ws, "notes.txt"), "w") as f:
        f.write("alpha beta\ngamma beta\ndelta\n")
    with open(os.path.join(ws, "sub", "in.txt"), "w") as f:
        f.write("inside\n")
    for dp, dn, fn in os.walk(ws):
        for n in dn + fn:
            os.utime(os.path.join(dp, n), (1700000000, 1700000000))
            os.chown(os.path.join(dp, n), 65534, 65534)
    os.utime(ws, (1700000000, 1700000000))
    os.chown(ws, 65534, 65534)
    return ws


TIME = re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?')
NUMS = re.compile(r'"(durationMs|duration_ms|elapsedMs|elapsed_ms|mtime|modified|modifiedAt|createdAt|'
                  r'lastModified|executionTime|atime|ctime|birthtime|time)(\\?"):\s*[0-9.e+]+')


DURATION = re.compile(r'Duration: \d+ ms')


def norm(line):
    line = TIME.sub("<time>", DURATION.sub("Duration: <n> ms", line))
    return NUMS.sub(lambda m: '"%s%s:<n>' % (m.group(1), m.group(2)), line)


def talk(surface, steps, root, n):
    ws = workspace(os.path.join(root, "%s%d" % (surface, n)))
    pol = os.path.join(root, "policy.json")
    with open(pol, "w") as f:
        json.dump(POLICY, f)
    p = subprocess.run([CORRAL, "exec", "--timeout", "600", "--policy", pol, "--role", surface,
                        "--workspace", ws, "--", os.path.join(AGENTS, "rpc_script"), INIT, "@raw"] + steps,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
    return [norm(l[6:]) for l in p.stderr.splitlines() if l.startswith("< RAW ")]


def main():
    root = tempfile.mkdtemp(prefix="corral-replay.")
    try:
        for s in SURFACES:
            lst = talk(s, ['{"jsonrpc":"2.0","id":1,"method":"tools/list"}'], root, 0)
            print("== %s tools/list" % s)
            for l in lst:
                print(l)
            tools = json.loads(lst[-1])["result"]["tools"]
            cs = cases(tools)
            print("== %s %d calls" % (s, len(cs)))
            for b in range(0, len(cs), BATCH):
                steps = []
                for i, (tool, args) in enumerate(cs[b:b + BATCH]):
                    steps.append(json.dumps({"jsonrpc": "2.0", "id": b + i + 2, "method": "tools/call",
                                             "params": {"name": tool, "arguments": args}}))
                for l in talk(s, steps, root, b + 1):
                    print(l)
    finally:
        shutil.rmtree(root)


main()
