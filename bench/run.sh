#!/bin/sh
# bench/run.sh: every benchmark, each side by side with its peer in one run (`make bench`).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
status=0
for b in exec_start command_start search roundtrip flood mcp trail run_scale run_flood loop_stall; do
    echo "===== bench/$b.sh"
    sh "$top/bench/$b.sh" || { echo "bench/$b.sh failed"; status=1; }
done
exit $status
