#!/usr/bin/env bash
# Throughput of the `file` and `http` sinks (docs/connectors.md): a file of N JSON lines
# (~75 bytes) read by a `file` spout as raw lines and written by the sink as `raw` lines (the
# sink's own work: no parsing), against the same pipeline into `discard`; then the `http` sink
# into the Python receiver of the tests (steady, no failures). Prints one line per run:
#   name seconds MB/s records/s
# Usage: STORM=target/release/storm scripts/sink_bench.sh [N] [RUNS]
set -euo pipefail
STORM=${STORM:-target/release/storm}
N=${1:-2000000}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
python3 -c "
import sys
with open('$W/in.jsonl', 'w') as f:
    for i in range($N):
        f.write('{\"id\":%d,\"service\":\"svc%d\",\"level\":\"info\",\"msg\":\"request served\"}\n' % (i, i % 8))
"
BYTES=$(stat -c %s "$W/in.jsonl")
run() { # name, sink yaml, extra args…
  local name=$1 sink=$2; shift 2
  for r in $(seq 1 "$RUNS"); do
    rm -rf "$W/out" "$W/state"
    cat > "$W/t.yaml" <<YAML
name: bench
spouts:
  - {id: in, type: file, args: {path: in.jsonl}}
bolts:
  - {id: out, $sink}
streams:
  - {from: in, to: out}
YAML
    local t0=$(date +%s.%N)
    "$STORM" run "$W/t.yaml" "$@" > /dev/null
    local t1=$(date +%s.%N)
    python3 -c "s=$t1-$t0; print('$name run $r: %.2f s  %.1f MB/s  %.0f records/s' % (s, $BYTES/s/1e6, $N/s))"
  done
}
run discard "type: discard"
run file "type: file, args: {path: out/x.log, format: raw, field: line, rotate: {size: 64MB}}"
run file-stateful "type: file, stateful: true, args: {path: out/x.log, format: raw, field: line, rotate: {size: 64MB}}" --state-dir "$W/state"
run file-gzip "type: file, args: {path: out/x.log.gz, format: raw, field: line, compression: gzip}"
run file-zstd "type: file, args: {path: out/x.log.zst, format: raw, field: line, compression: zstd}"
exec 3< <(tail -f /dev/null)
python3 "$ROOT/tests/fixtures/http_sink/receiver.py" "$W/received.jsonl" quiet <&3 > "$W/port" &
RX=$!
for _ in $(seq 1 100); do [ -s "$W/port" ] && break; sleep 0.1; done
PORT=$(head -1 "$W/port")
run http "type: http, args: {url: \"http://127.0.0.1:$PORT/in\", batch: {max_records: 1000}, concurrency: 4}"
kill "$RX"
