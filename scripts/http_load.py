#!/usr/bin/env python3
"""Throughput of the `http` spout: records/s accepted with kept-alive clients.

usage: scripts/http_load.py STORM_BINARY [CLIENTS] [RECORDS_PER_REQUEST] [SECONDS] [ack]

Starts `storm run -e 'http(listen=127.0.0.1:PORT, format=json, fields=[id, level]) | discard'`
(with `ack=true` when asked), then CLIENTS processes each post NDJSON bodies of
RECORDS_PER_REQUEST records on one kept-alive connection (Python's http.client) for SECONDS,
retrying a 429 at once. Records answered 200 are counted; the queue in front of the topology
is bounded, so at a steady state what is accepted is what the topology takes. Prints one
JSON line: records/s, requests/s, MB/s of bodies, and the 429s seen.
"""
import http.client, json, multiprocessing, os, socket, subprocess, sys, tempfile, time

exe = sys.argv[1]
clients = int(sys.argv[2]) if len(sys.argv) > 2 else 4
per = int(sys.argv[3]) if len(sys.argv) > 3 else 100
seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 10
ack = len(sys.argv) > 5 and sys.argv[5] == "ack"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def client(port, until, out):
    body = "".join(
        '{"id": %d, "level": "info", "message": "a record of a typical size for a log line"}\n' % i
        for i in range(per)
    ).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    ok = too_many = 0
    while time.time() < until:
        conn.request("POST", "/", body=body, headers={"Content-Type": "application/x-ndjson"})
        r = conn.getresponse()
        r.read()
        if r.status == 200:
            ok += 1
        elif r.status == 429:
            too_many += 1
        else:
            raise SystemExit("status %d" % r.status)
    out.put((ok, too_many, len(body)))


def main():
    port = free_port()
    args = "format=json, fields=[id, level]" + (", ack=true" if ack else "")
    topology = 'http(listen="127.0.0.1:%d", %s) | discard' % (port, args)
    env = dict(os.environ, STORM_LOG="error", STORM_CONF_DIR=tempfile.mkdtemp())
    run = subprocess.Popen([exe, "run", "-e", topology], env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                raise SystemExit("the spout did not come up")
            time.sleep(0.05)
        out = multiprocessing.Queue()
        start = time.time()
        until = start + seconds
        procs = [multiprocessing.Process(target=client, args=(port, until, out)) for _ in range(clients)]
        for p in procs:
            p.start()
        results = [out.get() for _ in procs]
        elapsed = time.time() - start
        for p in procs:
            p.join()
        ok = sum(r[0] for r in results)
        print(json.dumps({
            "clients": clients, "records_per_request": per, "ack": ack,
            "records_per_s": round(ok * per / elapsed),
            "requests_per_s": round(ok / elapsed),
            "body_mb_per_s": round(ok * results[0][2] / elapsed / 1e6, 1),
            "429s": sum(r[1] for r in results),
        }))
    finally:
        run.terminate()
        run.wait()


if __name__ == "__main__":
    main()
