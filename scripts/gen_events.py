#!/usr/bin/env python3
"""Benchmark events written by DuckDB itself (issue 31's data): N events as JSON lines and as CSV
with a header, both from one `SELECT ... FROM range(N)`, so storm and DuckDB read the same bytes.

usage: gen_events.py N OUTDIR      (writes OUTDIR/ev.jsonl and OUTDIR/ev.csv)

Needs the duckdb Python package (scripts/bench.sh makes a virtualenv for it, as .ci/run does).
Fields: ts (RFC 3339 UTC with milliseconds, rising about 1 ms an event), level (3% error, 7% warn,
20% debug, the rest info), service (40, skewed), endpoint (20, skewed), status (int; errors mostly
5xx), latency_ms (float), user (int, skewed), msg (text with spaces and quotes, so CSV quotes it and
JSON escapes it). Every value is a hash of the event's number: the files are the same on every run.
"""
import os
import sys

import duckdb

# u(k): a uniform double in [0, 1) from the event number i and a salt k (deterministic).
U = "((hash(i, {k}) % 1000003)::double / 1000003)"

SELECT = f"""
SELECT
  strftime(TIMESTAMP '2026-11-02 08:00:00' + to_microseconds(i * 1000 + (hash(i, 0) % 800)::bigint),
           '%Y-%m-%dT%H:%M:%S.%gZ') AS ts,
  CASE WHEN {U.format(k=1)} < 0.03 THEN 'error'
       WHEN {U.format(k=1)} < 0.10 THEN 'warn'
       WHEN {U.format(k=1)} < 0.30 THEN 'debug'
       ELSE 'info' END AS level,
  'svc-' || lpad(floor(pow({U.format(k=2)}, 3) * 40)::int::varchar, 2, '0') AS service,
  '/api/v' || (1 + floor(pow({U.format(k=3)}, 2) * 20)::int % 3)::varchar || '/' ||
    ['users', 'orders', 'items', 'cart', 'login', 'logout', 'search', 'feed', 'pay', 'refund',
     'stock', 'ship', 'track', 'notify', 'profile', 'settings', 'upload', 'download', 'report',
     'audit'][1 + floor(pow({U.format(k=3)}, 2) * 20)::int] AS endpoint,
  CASE WHEN {U.format(k=1)} < 0.03 AND {U.format(k=4)} < 0.9
         THEN [500, 502, 503, 504][1 + floor({U.format(k=5)} * 4)::int]
       ELSE [200, 200, 200, 200, 200, 200, 200, 201, 204, 304, 400, 404, 500]
            [1 + floor({U.format(k=5)} * 13)::int] END AS status,
  round(exp(3.0 + 0.8 * (({U.format(k=6)} + {U.format(k=7)} + {U.format(k=8)}) - 1.5) * 2), 3)
    AS latency_ms,
  floor(pow({U.format(k=9)}, 4) * 100000)::int AS "user",
  ['cache miss', 'retry after timeout', 'ok', 'said "hello", then left', 'path=/x done',
   'user not found', 'slow query, 3 joins'][1 + floor({U.format(k=10)} * 7)::int] AS msg
FROM range({{n}}) t(i)
ORDER BY i
"""


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    n, out = int(sys.argv[1]), sys.argv[2]
    os.makedirs(out, exist_ok=True)
    con = duckdb.connect()
    query = SELECT.format(n=n)
    con.sql(f"COPY ({query}) TO '{out}/ev.jsonl' (FORMAT json)")
    con.sql(f"COPY ({query}) TO '{out}/ev.csv' (FORMAT csv, HEADER true)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
