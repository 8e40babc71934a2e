#!/usr/bin/env python3
"""A Storm multilang bolt: splits each sentence (first tuple value) into words.

Self-contained: it carries its own few lines of Storm's multilang protocol (JSON messages
each followed by a line "end"), so it runs under `storm` and under Apache Storm alike.
"""
import json
import os
import sys


def read_message():
    lines = []
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)  # the parent closed our stdin: the topology is shutting down
        line = line.rstrip("\n")
        if line == "end":
            return json.loads("\n".join(lines))
        lines.append(line)


def send(message):
    sys.stdout.write(json.dumps(message) + "\nend\n")
    sys.stdout.flush()


def handshake():
    setup = read_message()
    pid = os.getpid()
    open(os.path.join(setup["pidDir"], str(pid)), "w").close()
    send({"pid": pid})


def main():
    handshake()
    while True:
        msg = read_message()
        if isinstance(msg, list):
            continue  # task ids answering one of our emits
        if msg.get("stream") == "__heartbeat":
            send({"command": "sync"})
            continue
        if msg.get("stream") == "__tick":
            send({"command": "ack", "id": msg["id"]})
            continue
        sentence = msg["tuple"][0] if msg["tuple"] else ""
        for word in str(sentence).split():
            send({"command": "emit", "anchors": [msg["id"]], "tuple": [word],
                  "need_task_ids": False})
        send({"command": "ack", "id": msg["id"]})


if __name__ == "__main__":
    main()
