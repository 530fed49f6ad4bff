#!/bin/sh
# tests/package/deb.sh: the Debian packages `make deb` built (build/deb/) install on this
# machine, work from the installed files alone (no source tree, a bare environment), and purge
# cleanly, leaving the machine as it was. Run by `make test-package` (tests/package/run.sh).
# It refuses to run where corral is already installed: it would not leave that install alone.
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
CORRAL=/usr/bin/corral
. "$TOP/tests/lib.sh"
debs=$(ls "$TOP"/build/deb/corral_*.deb "$TOP"/build/deb/corral-agent-dev_*.deb 2>/dev/null)
if [ -z "$debs" ]; then fail "packages are built (run make deb)"; exit 1; fi
for p in corral corral-agent-dev; do
    if dpkg -s "$p" >/dev/null 2>&1; then
        fail "$p is not installed before the test" "purge it (apt-get purge $p) or test elsewhere"
        exit 1
    fi
done
had_state=no; [ -e /var/lib/corral ] && had_state=yes
# every command from here on: a bare environment, outside the tree
E="env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=$T_TMP LANG=C.UTF-8"
cd "$T_TMP"
purge() {
    apt-get purge -y -qq -o DPkg::Lock::Timeout=300 corral corral-agent-dev >"$T_TMP/purge.log" 2>&1
}
trap 'purge; rm -rf "$T_TMP"' EXIT

# shellcheck disable=SC2086
run_capture out err rc apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 $debs
expect_status "apt-get installs corral and corral-agent-dev" 0 "$rc" "$(printf '%s' "$err" | tail -5)"
dpkg -L corral corral-agent-dev >"$T_TMP/files" 2>/dev/null
for f in /usr/bin/corral /usr/share/man/man1/corral.1.gz /usr/include/corral_agent.h \
         /usr/lib/python3/dist-packages/corral_agent.py /usr/share/corral/policy.schema.json \
         /usr/share/bash-completion/completions/corral /lib/systemd/system/corral-run@.service \
         /usr/share/doc/corral/examples/policies/demo.json /usr/share/doc/corral/examples/agents/explore_edit_run.c; do
    grep -qx "$f" "$T_TMP/files" && [ -e "$f" ] && ok "installed: $f" || fail "installed: $f"
done
lib=$(grep '/libcorral-agent\.a$' "$T_TMP/files"); pc=$(grep '/corral-agent\.pc$' "$T_TMP/files")
[ -n "$lib" ] && [ -n "$pc" ] && ok "installed: $lib, $pc" || fail "installed: the SDK library and its pkg-config file"

run_capture out err rc $E corral exec -- /bin/true
expect_status "installed corral exec -- /bin/true" 0 "$rc" "$err"
run_capture out err rc $E corral --version
expect_match "installed corral --version" '^corral [0-9]' "$out"

# the C example agent, built against the installed SDK only
cp /usr/share/doc/corral/examples/agents/explore_edit_run.c "$T_TMP/agent.c"
run_capture out err rc $E sh -c 'cc -o agent agent.c $(pkg-config --cflags --libs corral-agent)'
expect_status "the C example compiles with pkg-config --cflags --libs corral-agent" 0 "$rc" "$err"
run_capture out err rc $E pkg-config --modversion corral-agent
expect_match "pkg-config knows corral-agent's version" '^[0-9]+\.[0-9]+' "$out"
for kind in c py; do
    ws=$T_TMP/ws-$kind
    mkdir -p "$ws/src"
    echo 'print(1)' >"$ws/src/m.py"
    chown -R 65534:65534 "$ws"
    if [ $kind = c ]; then
        run_capture out err rc $E corral exec --timeout 60 --workspace "$ws" -- "$T_TMP/agent"
        want='edited by C'
    else
        run_capture out err rc $E corral exec --timeout 60 --workspace "$ws" -- \
            /usr/bin/python3 /usr/share/doc/corral/examples/agents/explore_edit_run.py
        want='WorLD'
    fi
    expect_status "installed $kind example agent runs under corral exec --workspace" 0 "$rc" "$err"
    expect_match "installed $kind example agent's command ran" 'command exit 0' "$err"
    expect_match "installed $kind example agent's edit is in the workspace" "$want" "$(cat "$ws/notes/hello.txt" 2>/dev/null)"
done
run_capture out err rc $E /usr/bin/python3 -I -c 'import corral_agent; print(corral_agent.__file__)'
expect_match "Debian's python3 imports the installed module" '^/usr/lib/python3/dist-packages/corral_agent.py$' "$out"

run_capture out err rc $E corral policy check /usr/share/doc/corral/examples/policies/demo.json
expect_status "the installed example policy checks" 0 "$rc" "$err"
run_capture out err rc $E python3 -c 'import json; json.load(open("/usr/share/corral/policy.schema.json"))'
expect_status "the installed schema is JSON" 0 "$rc" "$err"
run_capture out err rc $E bash -c '. /usr/share/bash-completion/bash_completion; . /usr/share/bash-completion/completions/corral
    COMP_WORDS=(corral trail re); COMP_CWORD=2; COMP_LINE="corral trail re"; COMP_POINT=${#COMP_LINE}; _corral; echo "${COMPREPLY[*]}"'
expect_match "bash completion completes corral trail re -> report" '^report$' "$out"

# systemd-analyze verify (offline: no running systemd needed). Without man-db the unit's
# Documentation=man:corral(1) cannot be looked up, so --man=no then.
if command -v systemd-analyze >/dev/null 2>&1; then
    mkdir -p "$T_TMP/units"
    ln -s /lib/systemd/system/corral-run@.service "$T_TMP/units/corral-run@demo.service"
    man=; command -v man >/dev/null 2>&1 || man=--man=no
    run_capture out err rc $E systemd-analyze verify $man "$T_TMP/units/corral-run@demo.service"
    expect_status "systemd-analyze verify accepts corral-run@demo.service" 0 "$rc" "$err"
    expect_nomatch "systemd-analyze has no complaint about it" 'corral-run' "$err"
    # and it would say so: the same unit with Delegate misspelt and a relative ExecStart
    sed -e 's/^Delegate=yes/Delegate=maybe/' -e 's|^ExecStart=/usr/bin/corral|ExecStart=corral-nowhere|' \
        /lib/systemd/system/corral-run@.service >"$T_TMP/units/corral-run@broken.service"
    run_capture out err rc $E systemd-analyze verify $man "$T_TMP/units/corral-run@broken.service"
    expect_match "systemd-analyze verify does reject a broken copy" 'corral-run@broken' "$err"
    grep -q '^Delegate=yes' /lib/systemd/system/corral-run@.service && grep -q '^StateDirectory=corral' /lib/systemd/system/corral-run@.service \
        && grep -q '^ExecStart=/usr/bin/corral run /etc/corral/%i.json' /lib/systemd/system/corral-run@.service \
        && ok "the unit delegates its cgroup, keeps state in /var/lib/corral, runs /etc/corral/%i.json" \
        || fail "the unit delegates its cgroup, keeps state in /var/lib/corral, runs /etc/corral/%i.json"
else
    fail "systemd-analyze is there (apt-get install systemd)"
fi

# purge: nothing of the packages is left
purge; rc=$?
expect_status "apt-get purge removes both packages" 0 "$rc" "$(tail -5 "$T_TMP/purge.log")"
dpkg -s corral >/dev/null 2>&1 && fail "corral is no longer known to dpkg" || ok "corral is no longer known to dpkg"
left=$(while read -r f; do [ ! -d "$f" ] && { [ -f "$f" ] || [ -L "$f" ]; } && echo "$f"; done <"$T_TMP/files")
[ -z "$left" ] && ok "every file the packages installed is gone" || fail "every file the packages installed is gone" "$left"
[ "$had_state" = yes ] || [ ! -e /var/lib/corral ] && ok "no /var/lib/corral left behind" || fail "no /var/lib/corral left behind"
