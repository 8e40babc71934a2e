#!/usr/bin/env bash
# Run every fuzz target under fuzz/ for a bounded time each (default 60 s): scripts/fuzz.sh [SECONDS]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). cargo-fuzz uses nightly-only compiler flags;
# with only a stable toolchain, RUSTC_BOOTSTRAP=1 lets stable accept them. Each target starts
# from its checked-in seeds (fuzz/corpus/TARGET/seed-*); what it adds to the corpus stays local
# (ignored by git). A crash stops the script with the target's name; the input that caused it
# is under fuzz/artifacts/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${1:-60}"
case "$seconds" in
  ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS]  (whole seconds per target, got '$seconds')" >&2; exit 2 ;;
esac
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz is missing: cargo install cargo-fuzz" >&2; exit 2; }

export RUSTC_BOOTSTRAP=1
# A separate target folder: the fuzz build's flags differ from the main build's.
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$PWD/target}"

cargo fuzz build --release
mkdir -p logs
for t in $(cargo fuzz list); do
  echo "== $t (${seconds}s)"
  # Inputs above 64 KiB only slow the search; topology files are a few kilobytes.
  status=0
  cargo fuzz run --release "$t" -- -max_total_time="$seconds" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 >"logs/$t.log" 2>&1 || status=$?
  grep -E '^(Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY)' "logs/$t.log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 40 "logs/$t.log" >&2
    echo "fuzz target $t failed: the input is under fuzz/artifacts/$t/" >&2
    exit 1
  fi
done
