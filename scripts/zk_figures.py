#!/usr/bin/env python3
"""Figures for docs/zookeeper.md: nimbus leader fail-over time, and submit-to-running time with
the embedded tree vs a ZooKeeper server. Needs Debian's zookeeper package (Java) and a built
`storm` (default target/debug/storm, or $STORM). Prints each run and the median.

    python3 scripts/zk_figures.py [RUNS]
"""

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

STORM = os.environ.get("STORM", os.path.join(os.path.dirname(__file__), "..", "target", "debug", "storm"))
ZK_JAR = "/usr/share/java/zookeeper.jar"
TOPOLOGY = """\
name: figures
config:
  topology.workers: 1
  topology.acker.executors: 0
spouts:
  - id: gen
    type: generate
    args: { count: 100000000, rate: 50, values: [[a]] }
bolts:
  - id: count
    type: count
    args: { fields: [word] }
streams:
  - from: gen
    to: count
    grouping: shuffle
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_zookeeper(root):
    port = free_port()
    data = os.path.join(root, "zk")
    os.makedirs(data)
    conf = os.path.join(root, "zoo.cfg")
    with open(conf, "w") as f:
        f.write(f"tickTime=200\ndataDir={data}\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
                "minSessionTimeout=400\nmaxSessionTimeout=4000\nadmin.enableServer=false\n"
                "4lw.commands.whitelist=srvr\n")
    proc = subprocess.Popen(["java", "-cp", ZK_JAR, "org.apache.zookeeper.server.quorum.QuorumPeerMain", conf],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    until(lambda: b"Mode: " in four_letters(port, b"srvr"))
    return proc, port


def four_letters(port, word):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(word)
            return s.recv(4096)
    except OSError:
        return b""


def until(check, limit=60.0, step=0.02):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if check():
            return time.monotonic()
        time.sleep(step)
    raise SystemExit("timed out")


def storm(*args):
    return subprocess.run([STORM, *args], capture_output=True, text=True)


def daemon(*args):
    return subprocess.Popen([STORM, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def zk_options(port):
    return ["-c", f'storm.zookeeper.servers=["127.0.0.1:{port}"]',
            "-c", "storm.zookeeper.session.timeout=2000"]


def failover(root, zk_port):
    """SIGKILL the leading nimbus; seconds until the standby answers `storm list`."""
    a, b = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    na = daemon("nimbus", "--listen", a, "--data", tempfile.mkdtemp(dir=root), *zk_options(zk_port))
    until(lambda: storm("list", "--nimbus", a).returncode == 0)
    nb = daemon("nimbus", "--listen", b, "--data", tempfile.mkdtemp(dir=root), *zk_options(zk_port))
    until(lambda: "not the leader" in storm("list", "--nimbus", b).stderr)
    na.send_signal(signal.SIGKILL)
    na.wait()
    start = time.monotonic()
    end = until(lambda: storm("list", "--nimbus", b).returncode == 0)
    nb.terminate()
    nb.wait()
    return end - start


def submit_to_running(root, options):
    """Seconds from `storm submit` to the first task heartbeat in the tree."""
    nimbus = f"127.0.0.1:{free_port()}"
    n = daemon("nimbus", "--listen", nimbus, "--data", tempfile.mkdtemp(dir=root), *options)
    until(lambda: storm("list", "--nimbus", nimbus).returncode == 0)
    s = daemon("supervisor", "--nimbus", nimbus, "--slots", str(free_port()), *options)
    until(lambda: "/storm/supervisors/" in storm("zk", "dump", "--nimbus", nimbus).stdout)
    file = os.path.join(root, "figures.yaml")
    with open(file, "w") as f:
        f.write(TOPOLOGY)
    start = time.monotonic()
    topology_id = storm("submit", file, "--nimbus", nimbus).stdout.strip()
    end = until(lambda: f"/storm/taskbeats/{topology_id}/" in storm("zk", "dump", "--nimbus", nimbus).stdout)
    storm("kill", "figures", "--wait", "0", "--nimbus", nimbus)
    s.terminate()
    s.wait()
    n.terminate()
    n.wait()
    return end - start


def report(name, values):
    shown = ", ".join(f"{v:.2f}" for v in values)
    print(f"{name}: median {statistics.median(values):.2f} s ({shown})", flush=True)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    root = tempfile.mkdtemp()
    zk, port = start_zookeeper(root)
    try:
        report("leader fail-over (session timeout 2 s)", [failover(root, port) for _ in range(runs)])
        report("submit to running, embedded tree", [submit_to_running(root, []) for _ in range(runs)])
        report("submit to running, ZooKeeper",
               [submit_to_running(root, zk_options(port)) for _ in range(runs)])
    finally:
        zk.kill()
        zk.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
