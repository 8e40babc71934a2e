#!/usr/bin/env bash
# Followed-file throughput (docs/connectors.md, `file` with `follow`): a file of N access-log
# lines and a last line `END`; storm follows it from the beginning through
# `file(follow) | filter | count` (the filter drops every line but END, so the count is of one
# key) and the time until END is counted is taken; the anchor is `tail -n +1 -f | grep -m1 END`,
# the same bytes through the system's own follower. Runs interleaved, medians printed; CPU from
# the process's /proc stat at the moment END came out.
# Usage: scripts/follow_bench.sh [N] [RUNS]   (uses target/release/storm)
set -euo pipefail
N=${1:-2000000}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STORM=${STORM:-$ROOT/target/release/storm}
W=$(mktemp -d)
trap 'rm -rf "$W"; kill $(jobs -p) 2>/dev/null || true' EXIT
python3 - "$N" "$W/app.log" <<'PY'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    for i in range(n):
        f.write('10.0.%d.%d - - [02/Nov/2026:08:00:%02d +0000] "GET /api/v1/users?u=%d HTTP/1.1" %d 512\n'
                % (i % 7, i % 200, i % 60, i, (200, 404, 500)[i % 3]))
    f.write("END\n")
PY
BYTES=$(stat -c %s "$W/app.log")
cpu() { awk '{print ($14+$15)/100}' "/proc/$1/stat"; }
until_end() { # command… ; prints seconds and cpu seconds when END is printed
  local t0 t1 pid line
  t0=$(date +%s.%N)
  coproc RUN { exec "$@" 2>/dev/null; }
  pid=$RUN_PID
  while read -r line <&"${RUN[0]}"; do
    case "$line" in *END*) break ;; esac
  done
  t1=$(date +%s.%N)
  local c; c=$(cpu "$pid" 2>/dev/null || echo 0)
  pkill -KILL -P "$pid" 2>/dev/null || true; kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  python3 -c "print('%.2f %.2f' % ($t1-$t0, $c))"
}
for r in $(seq 1 "$RUNS"); do
  s=$(until_end "$STORM" run -q -e "file(path=\"$W/app.log\", follow=true) | filter('line == \"END\"') | count(line, emit=update) | stdout")
  t=$(until_end sh -c "tail -n +1 -f '$W/app.log' | grep --line-buffered -m1 END")
  echo "run $r storm $s tail $t"
done | tee "$W/runs"
python3 - "$W/runs" "$N" "$BYTES" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
n, b = int(sys.argv[2]), int(sys.argv[3])
sw = st.median(float(r[3]) for r in rows); sc = st.median(float(r[4]) for r in rows)
tw = st.median(float(r[6]) for r in rows)
print(f"storm follow: {sw:.2f} s wall, {n/sw:,.0f} lines/s, {b/sw/1e6:.0f} MB/s, {sc/n*1e6:.2f} CPU s per million lines")
print(f"tail -f | grep: {tw:.2f} s wall, {n/tw:,.0f} lines/s, {b/tw/1e6:.0f} MB/s")
PY
