#!/usr/bin/env python3
"""A large valid topology for the validation benchmark: N components (1% spouts) and 2N streams.
Usage: gen_big_topology.py N > big.yaml"""
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
rng = random.Random(1)
spouts = max(1, n // 100)
out = ["name: big", "spouts:"]
out += [f"  - {{ id: s{i}, type: generate, args: {{ count: 10 }} }}" for i in range(spouts)]
out.append("bolts:")
kinds = ["split", "chaos"]  # both emit, so any bolt can feed another
out += [f"  - {{ id: b{i}, type: {rng.choice(kinds)} }}" for i in range(n - spouts)]
out.append("streams:")
ids = [f"s{i}" for i in range(spouts)]
for i in range(n - spouts):
    out.append(f"  - {{ from: {rng.choice(ids[-50:])}, to: b{i}, grouping: shuffle }}")
    ids.append(f"b{i}")
for _ in range(2 * n - (n - spouts)):
    out.append(f"  - {{ from: {rng.choice(ids)}, to: b{rng.randrange(n - spouts)}, grouping: shuffle }}")
sys.stdout.write("\n".join(out) + "\n")
