#!/usr/bin/env bash
# Rows per second into PostgreSQL: a `file → jdbc` storm run (batched multi-row INSERTs, one
# transaction per batch) against `psql \copy` of the same CSV, in one sitting, runs
# interleaved, medians printed. Starts Debian's PostgreSQL 15 in a temp folder (as the
# `postgres` user when root). Usage: scripts/pg_bench.sh [ROWS] [RUNS] [BATCH]
# (defaults 200000 5 1000); uses target/release/storm (cargo build --release first).
set -euo pipefail
rows=${1:-200000}
runs=${2:-5}
batch=${3:-1000}
root=$(cd "$(dirname "$0")/.." && pwd)
storm="$root/target/release/storm"
bin=/usr/lib/postgresql/15/bin
dir=$(mktemp -d)
as_pg() { if [ "$(id -u)" = 0 ]; then setpriv --reuid=postgres --regid=postgres --init-groups "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$dir"
echo bench > "$dir/pw"
as_pg "$bin/initdb" -D "$dir/data" -U storm --auth=scram-sha-256 --pwfile="$dir/pw" -E UTF8 --no-sync >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_pg "$bin/postgres" -D "$dir/data" -p "$port" -k "$dir" -c listen_addresses=127.0.0.1 \
  -c fsync=off -c synchronous_commit=off >"$dir/log" 2>&1 &
pg=$!
# $pg is the subshell running as_pg: stop the postmaster itself (its pid file), then reap.
trap 'kill -QUIT "$(head -1 "$dir/data/postmaster.pid" 2>/dev/null)" 2>/dev/null; wait $pg 2>/dev/null; rm -rf "$dir"' EXIT
export PGPASSWORD=bench
psql_() { psql -h 127.0.0.1 -p "$port" -U storm -d postgres -qAt -v ON_ERROR_STOP=1 "$@"; }
for _ in $(seq 100); do psql_ -c 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
psql_ -c 'create table bench (id bigint, service text, n integer, ratio double precision)'
python3 - "$rows" > "$dir/rows.csv" <<'EOF'
import sys
for i in range(int(sys.argv[1])):
    print(f"{i},svc-{i % 13},{i % 97},{i / 8}")
EOF
cat > "$dir/t.yaml" <<EOF
name: bench
spouts:
  - {id: in, type: file, args: {path: rows.csv, format: csv, columns: [id, service, n, ratio]}}
bolts:
  - {id: out, type: jdbc, args: {url: "postgresql://storm@127.0.0.1:$port/postgres", table: bench, columns: [id, service, n, ratio], batch: $batch}}
streams:
  - {from: in, to: out}
EOF
now() { date +%s.%N; }
storm_rates=(); copy_rates=()
for r in $(seq "$runs"); do
  psql_ -c 'truncate bench'
  t0=$(now); (cd "$dir" && STORM_CONF_DIR="$dir" "$storm" run t.yaml >/dev/null); t1=$(now)
  n=$(psql_ -c 'select count(*) from bench')
  [ "$n" = "$rows" ] || { echo "storm wrote $n rows, not $rows" >&2; exit 1; }
  storm_rates+=("$(python3 -c "print(round($rows/($t1-$t0)))")")
  psql_ -c 'truncate bench'
  t0=$(now); psql_ -c "\\copy bench from '$dir/rows.csv' csv"; t1=$(now)
  copy_rates+=("$(python3 -c "print(round($rows/($t1-$t0)))")")
  echo "run $r: storm ${storm_rates[-1]} rows/s, psql \\copy ${copy_rates[-1]} rows/s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median of $runs ($rows rows, batch $batch): storm jdbc $(median "${storm_rates[@]}") rows/s, psql \\copy $(median "${copy_rates[@]}") rows/s"
