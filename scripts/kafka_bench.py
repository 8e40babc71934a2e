"""Kafka -> discard throughput against librdkafka's mock cluster, next to the Python client's
raw consume rate (confluent-kafka, the same librdkafka underneath).

    python scripts/kafka_bench.py [RECORDS] [RUNS]

Run it with a Python that has confluent-kafka (the tests' venv: $TMPDIR/storm-it-kafka-venv) after
`cargo build --release`. Per run, interleaved: the Python client consumes every record (rec/s
from its first record to its last); then `storm run -e 'kafka(...) | discard'` reads them with
acking on, in a new consumer group, and its rate is taken from the group's commits (the first
commit to the last, polled every 20 ms; commits come every 500 ms, so short runs read low),
its CPU from /usr/bin/time. Prints each run and the medians. STORM_BIN overrides the binary.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORM = os.environ.get("STORM_BIN") or os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "storm")
TOPIC = "bench"


def start_mock():
    mock = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "tests/fixtures/kafka/mock_cluster.py")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    return mock, mock.stdout.readline().strip()


def produce(brokers, n):
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 20, "batch.num.messages": 10000})
    for i in range(n):
        while True:
            try:
                p.produce(TOPIC, value=f"{i:08d} some fifty bytes of payload, give or take")
                break
            except BufferError:
                p.poll(0.05)
    p.flush(60)


def python_rate(brokers, n):
    c = Consumer({"bootstrap.servers": brokers, "group.id": "bench-py", "enable.auto.commit": False})
    parts = c.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions
    c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in parts])
    seen, start = 0, None
    while seen < n:
        for m in c.consume(10000, 1.0):
            if m.error():
                continue
            if start is None:
                start = time.perf_counter()
            seen += 1
    rate = (n - 1) / (time.perf_counter() - start)
    c.close()
    return rate


def storm_rate(brokers, n, run):
    group = f"bench-storm-{run}-{time.time_ns()}"
    topology = f'name kbench\nkafka(brokers="{brokers}", topics=[{TOPIC}], group={group}, first_poll_offset=earliest) | discard'
    watcher = Consumer({"bootstrap.servers": brokers, "group.id": group})
    parts = watcher.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions
    tps = [TopicPartition(TOPIC, p) for p in parts]
    with tempfile.NamedTemporaryFile("r") as cpu:
        proc = subprocess.Popen(
            ["/usr/bin/time", "-f", "%U %S", "-o", cpu.name, STORM, "run", "-e", topology, "--quiet"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        first = None
        while True:
            done = sum(max(tp.offset, 0) for tp in watcher.committed(tps, timeout=10))
            now = time.perf_counter()
            if done > 0 and first is None:
                first = (now, done)
            if os.environ.get("BENCH_DEBUG"):
                print(done, file=sys.stderr, flush=True)
            if done >= n:
                break
            time.sleep(0.02)
        # SIGINT to storm through its process group (GNU time ignores it while it waits).
        os.killpg(proc.pid, 2)
        proc.wait()
        user, system = (float(x) for x in cpu.read().split())
    watcher.close()
    rate = (n - first[1]) / (now - first[0])
    return rate, (user + system) / n * 1e6


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    mock, brokers = start_mock()
    try:
        produce(brokers, n)
        py, st, cpu = [], [], []
        for run in range(runs):
            py.append(python_rate(brokers, n))
            rate, cpu_per_m = storm_rate(brokers, n, run)
            st.append(rate)
            cpu.append(cpu_per_m)
            print(f"run {run + 1}: python client {py[-1]:,.0f} rec/s; storm kafka -> discard {st[-1]:,.0f} tuples/s, {cpu[-1]:.2f} CPU s per million", flush=True)
        print(f"median of {runs}: python client {statistics.median(py):,.0f} rec/s; "
              f"storm kafka -> discard {statistics.median(st):,.0f} tuples/s, "
              f"{statistics.median(cpu):.2f} CPU s per million records")
    finally:
        mock.stdin.close()
        mock.wait()


if __name__ == "__main__":
    main()
