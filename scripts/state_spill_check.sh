#!/usr/bin/env bash
# Keyed state larger than memory, measured: N distinct keys (default 20 million) through a
# stateful `count` and a stateful `aggregate`, each run twice, one at a time, with the release
# build:
#   spill   under an address-space cap (default 1.5 GB, `prlimit --as`), with a state dir, so
#           keyed state past topology.state.memory.limit (by default a quarter of the cap)
#           spills to DIR/spill/;
#   memory  without a cap and with the limit off (topology.state.memory.limit=0): every key
#           in memory, as before spilling existed.
# Every run's output is checked against the known answer (key kI comes once, twice when I is
# a multiple of 10): every key once, in byte order, with its exact count. The table gives the
# wall time, the peak RSS (/usr/bin/time -v), the state dir's size at the end and the spill
# file's size before it was removed.
#
# Usage: scripts/state_spill_check.sh [N]
#   env: CAP bytes; LIMIT bytes of topology.state.memory.limit on the spill runs (default:
#   unset, a quarter of CAP); RUNS="spill memory" (which runs); WORK dir; STORM binary.
set -euo pipefail

N=${1:-20000000}
CAP=${CAP:-1610612736}
WORK=${WORK:-$(mktemp -d /tmp/state-spill.XXXXXX)}
cd "$(dirname "$0")/.."
if [[ -z "${STORM:-}" ]]; then
    cargo build --release --quiet
    STORM=$PWD/target/release/storm
fi
for tool in prlimit /usr/bin/time awk; do
    command -v "$tool" >/dev/null || { echo "error: $tool is needed" >&2; exit 2; }
done

mkdir -p "$WORK"
input=$WORK/keys.txt
if [[ ! -s $input ]]; then
    echo "writing $N keys to $input" >&2
    awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) print "k" i; for (i = 0; i < n; i += 10) print "k" i }' >"$input"
fi

# Check `key TAB n` lines: N of them, keys strictly rising in byte order, n as known.
check() {
    LC_ALL=C awk -v n="$N" -F '\t' '
        { k = substr($1, 2) + 0; want = (k % 10 == 0) ? 2 : 1
          if ($2 != want) { print "wrong count at line " NR ": " $0; bad = 1; exit 1 }
          if (NR > 1 && !($1 > prev)) { print "out of order at line " NR ": " $0; bad = 1; exit 1 }
          prev = $1 }
        END { if (!bad && NR != n) { print NR " lines, not " n; exit 1 } }' "$1"
}

declare -a rows
run() { # name bolt mode
    local name=$1 bolt=$2 mode=$3 dir=$WORK/state-$1-$3 out=$WORK/out-$1-$3.txt log=$WORK/log-$1-$3.txt
    rm -rf "$dir"
    local cmd=("$STORM" run -e "file($input) | $bolt | stdout" -c topology.stateful=true --state-dir "$dir")
    if [[ $mode == spill ]]; then
        [[ -n "${LIMIT:-}" ]] && cmd+=(-c "topology.state.memory.limit=$LIMIT")
        cmd=(prlimit --as="$CAP" -- "${cmd[@]}")
    else
        cmd+=(-c topology.state.memory.limit=0)
    fi
    echo "running $name ($mode)" >&2
    local rc=0
    STORM_LOG=storm::state::spill=info /usr/bin/time -v "${cmd[@]}" >"$out" 2>"$log" || rc=$?
    local secs rss store spill verdict
    secs=$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$log")
    rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f MB", $2 / 1024 }' "$log")
    store=$(du -sm "$dir" 2>/dev/null | awk '{ print $1 " MB" }')
    spill=$({ grep -o '[0-9]* bytes$' "$log" || true; } | awk '{ s += $1 } END { printf "%.0f MB", s / 1048576 }')
    if [[ $rc -ne 0 ]]; then
        verdict="exit $rc: $(grep -m1 -i 'error' "$log" || tail -1 "$log")"
    elif verdict=$(check "$out"); then
        verdict=exact
    fi
    rows+=("$(printf '%-10s %-7s %-5s %10s %10s %10s %10s  %s' "$name" "$mode" "$rc" "$secs" "$rss" "$store" "$spill" "$verdict")")
    rm -f "$out"
}

for mode in ${RUNS:-spill memory}; do
    run count count "$mode"
done
for mode in ${RUNS:-spill memory}; do
    run aggregate "aggregate(by=[line], ops=[count])" "$mode"
done

printf '%s keys (%s lines), cap %s bytes on the spill runs, logs in %s\n' "$N" "$(wc -l <"$input")" "$CAP" "$WORK"
printf '%-10s %-7s %-5s %10s %10s %10s %10s  %s\n' bolt run exit time "peak RSS" "state dir" "spill file" output
printf '%s\n' "${rows[@]}"
