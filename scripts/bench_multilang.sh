#!/usr/bin/env bash
# Multilang benchmark: N tuples through a Python pass-through bolt (generate -> shell -> discard,
# acking on), with the task-id answer Apache Storm's storm.py waits for after every emit, and
# without it (need_task_ids false), and with task ids and a count after the bolt (its emits
# then cross a queue to another executor). For each: tuples/s, CPU seconds of storm and of its child,
# and each as a share of one core over the run (from `storm run --stats`); then the child alone,
# fed the same messages from a file: the fastest it can go. Medians of RUNS runs.
# Needs only python3 (and cargo, unless STORM names a built binary).
#   scripts/bench_multilang.sh [RUNS] [N]
# STORM and BOLT may each list several, comma-separated: every combination is measured, the
# runs interleaved (to compare builds or adapters in one sitting on a noisy machine).
#   STORM=/tmp/storm-before,target/release/storm scripts/bench_multilang.sh 5
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
N=${2:-100000}
if [ -z "${STORM:-}" ]; then
  cargo build --release --quiet
  STORM=target/release/storm
fi
BOLT=${BOLT:-multilang/examples/passthrough.py}
export STORM BOLT RUNS N
exec python3 - <<'PY'
import json, os, resource, statistics, subprocess, tempfile, time

storms = os.environ["STORM"].split(",")
bolts = os.environ["BOLT"].split(",")
runs, n = int(os.environ["RUNS"]), int(os.environ["N"])
work = tempfile.mkdtemp()


def run_storm(storm, bolt, ids, hop=False):
    stats = os.path.join(work, "stats.json")
    then = "count(word) | discard" if hop else "discard"
    topo = f"generate(count={n}) | shell(python3, {bolt}) fields=[word] | {then}"
    env = dict(os.environ, NEED_TASK_IDS="1" if ids else "0")
    subprocess.run([storm, "run", "-q", "--stats", stats, "-e", topo], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    with open(stats) as f:
        s = json.load(f)
    secs = s["elapsed_secs"]
    return {"rate": n / secs, "secs": secs, "storm": s["cpu_secs"]["storm"],
            "child": s["cpu_secs"]["children"]}


# The child alone: the handshake, then every tuple (and, when it wants them, its task-id
# answer) already in a file, its output thrown away.
def feed(ids):
    path = os.path.join(work, f"feed{int(ids)}")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(json.dumps({"pidDir": work, "conf": {}, "context": {}}) + "\nend\n")
            words = ["bertels", "mike", "bertels", "nathan", "jackson", "golda"]
            for i in range(n):
                f.write(json.dumps({"id": str(i + 1), "comp": "generate", "stream": "default",
                                    "task": 2, "tuple": [words[i % len(words)]]}) + "\nend\n")
                if ids:
                    f.write("[4]\nend\n")
    return path


def run_alone(bolt, ids):
    env = dict(os.environ, NEED_TASK_IDS="1" if ids else "0")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    with open(feed(ids)) as inp:
        subprocess.run(["python3", bolt], stdin=inp, stdout=subprocess.DEVNULL, env=env,
                       check=True)
    secs = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"rate": n / secs, "secs": secs, "storm": None, "child": cpu}


cases = []
for bolt in bolts:
    tag = f" [{bolt}]" if len(bolts) > 1 else ""
    for storm in storms:
        stag = f" [{storm}]" if len(storms) > 1 else ""
        for ids in (True, False):
            mode = "task ids" if ids else "need_task_ids false"
            cases.append((f"storm, {mode}{stag}{tag}",
                          lambda s=storm, b=bolt, i=ids: run_storm(s, b, i)))
        # A count after the bolt: its emits cross a queue to another executor.
        cases.append((f"storm, task ids, then a count{stag}{tag}",
                      lambda s=storm, b=bolt: run_storm(s, b, True, hop=True)))
    for ids in (True, False):
        mode = "task ids" if ids else "need_task_ids false"
        cases.append((f"child alone, {mode}{tag}", lambda b=bolt, i=ids: run_alone(b, i)))
results = {name: [] for name, _ in cases}
for _ in range(runs):
    for name, f in cases:
        results[name].append(f())

unbuffered = " (PYTHONUNBUFFERED is set)" if os.environ.get("PYTHONUNBUFFERED") else ""
print(f"{n} tuples, generate -> python3 pass-through bolt -> discard, acking on; medians of "
      f"{runs} runs; {os.cpu_count()} cores{unbuffered}")
print(f"{'':34} {'tuples/s':>9} {'secs':>6} {'storm CPU-s':>12} {'storm %core':>12} "
      f"{'child CPU-s':>12} {'child %core':>12}")
for name, rs in results.items():
    med = lambda k: statistics.median(r[k] for r in rs)
    share = lambda k: statistics.median(100 * r[k] / r["secs"] for r in rs)
    storm_cols = (f"{med('storm'):12.2f} {share('storm'):11.0f}%" if rs[0]["storm"] is not None
                  else f"{'-':>12} {'-':>12}")
    print(f"{name}\n{'':34} {med('rate'):9.0f} {med('secs'):6.2f} {storm_cols} "
          f"{med('child'):12.2f} {share('child'):11.0f}%")
    rates = " ".join(f"{r['rate']:.0f}" for r in rs)
    print(f"{'':34} runs: {rates}")
PY
