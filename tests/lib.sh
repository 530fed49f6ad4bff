# tests/lib.sh: TAP helpers for end-to-end tests (sourced). Each check prints "ok - NAME" or
# "not ok - NAME" with the evidence, so tests/run.sh can count them.
: "${CORRAL:?CORRAL must name the corral binary}"
T_TMP=$(mktemp -d /tmp/corral-e2e.XXXXXX)
trap 'rm -rf "$T_TMP"' EXIT

ok()   { echo "ok - $1"; }
fail() { echo "not ok - $1"; shift; for l in "$@"; do echo "#   $l"; done; }

# expect_status NAME WANT GOT [evidence...]
expect_status() {
    if [ "$3" -eq "$2" ]; then ok "$1"; else n=$1 w=$2 g=$3; shift 3; fail "$n" "want status $w, got $g" "$@"; fi
}
# expect_match NAME PATTERN TEXT: TEXT contains the extended regex PATTERN
expect_match() {
    if printf '%s\n' "$3" | grep -Eq -- "$2"; then ok "$1"; else fail "$1" "no match for /$2/ in:" "$(printf '%s' "$3" | head -c 2000)"; fi
}
expect_nomatch() {
    if printf '%s\n' "$3" | grep -Eq -- "$2"; then fail "$1" "unexpected match for /$2/ in:" "$(printf '%s' "$3" | head -c 2000)"; else ok "$1"; fi
}
# run_capture VAR_OUT VAR_ERR VAR_RC cmd...: runs cmd, capturing stdout, stderr, status
# checkpoint_object DB: the name of the object (under RUN_DIR/objects) that holds the first file
# of the newest checkpoint recorded in the trail DB (empty if none yet). A run's objects directory
# also holds the objects of its workspaces' bases (workspace_created.base), so "the first object
# there" is not the checkpoint's.
checkpoint_object() {
    python3 - "$1" <<'PY' 2>/dev/null
import json, sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
row = db.execute("SELECT body FROM entries WHERE type = 'checkpoint_created' ORDER BY seq DESC LIMIT 1").fetchone()
print(json.loads(row[0])["files"][0]["blake2b"] if row else "")
PY
}
run_capture() {
    _o=$1 _e=$2 _r=$3; shift 3
    "$@" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
    eval "$_r=\$?"
    eval "$_o=\$(cat \"\$T_TMP/out\")"
    eval "$_e=\$(cat \"\$T_TMP/err\")"
}
