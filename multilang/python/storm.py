"""Multilang adapter for `storm` shell components (Apache Storm's multilang protocol).

API-compatible with Apache Storm's own ``storm.py``: subclass ``Bolt``, ``BasicBolt`` or
``Spout`` and call ``run()``; inside, use the module functions ``emit``, ``emitDirect``,
``ack``, ``fail``, ``log`` (and ``logInfo`` ...), ``reportError`` and ``rpcMetrics``.

    import storm

    class SplitBolt(storm.BasicBolt):
        def process(self, tup):
            for word in tup.values[0].split():
                storm.emit([word])

    SplitBolt().run()

Protocol: every message is one JSON document followed by a line ``end``, on stdin (from
storm) and stdout (to storm). Anything a component prints must therefore go to stderr, which
storm copies into its log. Written for Python 3, standard library only.
"""

import json
import os
import sys
import traceback
from collections import deque

__all__ = [
    "Tuple", "Bolt", "BasicBolt", "Spout",
    "emit", "emitDirect", "ack", "fail", "sync", "log", "logTrace", "logDebug", "logInfo",
    "logWarn", "logError", "reportError", "rpcMetrics", "readMsg", "sendMsgToParent",
    "initComponent",
]

_stdin = sys.stdin
_stdout = sys.stdout

# Messages read while waiting for something else: storm may send new tuples or commands
# before the task-id list answering an emit, and the other way round. A list is always a
# task-id answer; an object is always a tuple or a command.
_waiting_commands = deque()
_waiting_task_ids = deque()

# What kind of component runs in this process ("bolt" or "spout"), and for a BasicBolt the
# tuple being processed (every emit is anchored to it).
_mode = None
_current_input = None


class StormWentAway(Exception):
    """storm closed our stdin: the component should end quietly."""


def readMsg():
    """Read one message: the lines up to an ``end`` line, joined, parsed as JSON."""
    lines = []
    while True:
        line = _stdin.readline()
        if not line:
            raise StormWentAway()
        line = line.rstrip("\r\n")
        if line == "end":
            return json.loads("\n".join(lines))
        lines.append(line)


def sendMsgToParent(msg):
    # One write per message: with PYTHONUNBUFFERED set, every write is a system call (and a
    # wake-up of storm's reader).
    _stdout.write(json.dumps(msg) + "\nend\n")
    _stdout.flush()


def _read_command():
    if _waiting_commands:
        return _waiting_commands.popleft()
    while True:
        msg = readMsg()
        if isinstance(msg, list):
            _waiting_task_ids.append(msg)
        else:
            return msg


def _read_task_ids():
    if _waiting_task_ids:
        return _waiting_task_ids.popleft()
    while True:
        msg = readMsg()
        if isinstance(msg, list):
            return msg
        _waiting_commands.append(msg)


def sync():
    sendMsgToParent({"command": "sync"})


def _id_of(anchor):
    return anchor.id if isinstance(anchor, Tuple) else anchor


def emit(tup, stream=None, anchors=None, directTask=None, id=None, need_task_ids=True):
    """Emit ``tup`` (a list of values). Returns the receiving task ids, unless the emit is
    direct or ``need_task_ids`` is false (then ``None``).

    Bolts: ``anchors`` is a list of input tuples (or their ids); a ``BasicBolt`` anchors to
    the current input. Spouts: ``id`` makes the tuple reliable (acked or failed later)."""
    msg = {"command": "emit", "tuple": list(tup)}
    if stream is not None:
        msg["stream"] = stream
    if directTask is not None:
        msg["task"] = directTask
    if _mode == "bolt":
        if _current_input is not None:
            anchors = [_current_input]
        msg["anchors"] = [_id_of(a) for a in (anchors or [])]
    elif id is not None:
        msg["id"] = id
    wants_ids = need_task_ids and directTask is None
    if not wants_ids:
        msg["need_task_ids"] = False
    sendMsgToParent(msg)
    return _read_task_ids() if wants_ids else None


def emitDirect(task, tup, stream=None, anchors=None, id=None):
    """Emit to one chosen task (the stream must use a direct grouping)."""
    emit(tup, stream=stream, anchors=anchors, directTask=task, id=id)


def ack(tup):
    sendMsgToParent({"command": "ack", "id": _id_of(tup)})


def fail(tup):
    sendMsgToParent({"command": "fail", "id": _id_of(tup)})


def reportError(msg):
    sendMsgToParent({"command": "error", "msg": str(msg)})


def log(msg, level=2):
    """Write to storm's log: level 0 trace, 1 debug, 2 info, 3 warn, 4 error."""
    sendMsgToParent({"command": "log", "msg": str(msg), "level": level})


def logTrace(msg):
    log(msg, 0)


def logDebug(msg):
    log(msg, 1)


def logInfo(msg):
    log(msg, 2)


def logWarn(msg):
    log(msg, 3)


def logError(msg):
    log(msg, 4)


def rpcMetrics(name, params):
    sendMsgToParent({"command": "metrics", "name": name, "params": params})


def initComponent():
    """The handshake: read the setup, leave a pid file, answer with our pid."""
    setup = readMsg()
    pid = os.getpid()
    with open(os.path.join(setup["pidDir"], str(pid)), "w"):
        pass
    sendMsgToParent({"pid": pid})
    return [setup["conf"], setup["context"]]


class Tuple(object):
    """An input tuple: its id, source component, stream and task, and its values."""

    __slots__ = ("id", "component", "stream", "task", "values")

    def __init__(self, id, component, stream, task, values):
        self.id = id
        self.component = component
        self.stream = stream
        self.task = task
        self.values = values

    def is_heartbeat_tuple(self):
        return self.task == -1 and self.stream == "__heartbeat"

    def is_tick_tuple(self):
        return self.component == "__system" and self.stream == "__tick"

    def is_finish_tuple(self):
        """storm's end-of-input extension (``finish: true`` on the component)."""
        return self.component == "__system" and self.stream == "__finish"

    def __repr__(self):
        return "<Tuple id=%r component=%r stream=%r task=%r values=%r>" % (
            self.id, self.component, self.stream, self.task, self.values)


def _read_tuple():
    m = _read_command()
    return Tuple(m["id"], m["comp"], m["stream"], m["task"], m["tuple"])


def _main(body):
    """Run a component's loop: end quietly when storm goes away; on an exception, report it
    and exit with status 1 (so storm restarts us rather than taking it for a clean end)."""
    try:
        body()
    except StormWentAway:
        sys.exit(0)
    except Exception:
        try:
            reportError(traceback.format_exc())
        except Exception:
            pass
        traceback.print_exc()
        sys.exit(1)


class Bolt(object):
    """A bolt that acks (or fails) its inputs itself with ``ack(tup)`` / ``fail(tup)``."""

    def initialize(self, stormconf, context):
        pass

    def process(self, tup):
        pass

    def finish(self):
        """Called once after the last input when the component has ``finish: true``: emit
        what is left (a window, a total). Storm's own adapters never call it."""
        pass

    def run(self):
        global _mode
        _mode = "bolt"

        def loop():
            conf, context = initComponent()
            self.initialize(conf, context)
            while True:
                tup = _read_tuple()
                if tup.is_heartbeat_tuple():
                    sync()
                elif tup.is_finish_tuple():
                    self.finish()
                    ack(tup)
                else:
                    self.process(tup)

        _main(loop)


class BasicBolt(Bolt):
    """A bolt whose emits are anchored to the current input, which is acked after
    ``process`` returns, or failed (and the error reported) if it raises."""

    def run(self):
        global _mode, _current_input
        _mode = "bolt"

        def loop():
            global _current_input
            conf, context = initComponent()
            self.initialize(conf, context)
            while True:
                tup = _read_tuple()
                if tup.is_heartbeat_tuple():
                    sync()
                    continue
                if tup.is_finish_tuple():
                    self.finish()
                    ack(tup)
                    continue
                _current_input = tup
                try:
                    self.process(tup)
                except Exception:
                    reportError(traceback.format_exc())
                    fail(tup)
                else:
                    ack(tup)
                finally:
                    _current_input = None

        _main(loop)


class Spout(object):
    """A spout: ``nextTuple`` emits (with ``emit(values, id=...)`` for reliable tuples);
    ``ack`` and ``fail`` receive those ids. Exiting the process (``sys.exit(0)``) tells storm
    there is no more input."""

    def initialize(self, conf, context):
        pass

    def ack(self, id):
        pass

    def fail(self, id):
        pass

    def nextTuple(self):
        pass

    def activate(self):
        pass

    def deactivate(self):
        pass

    def run(self):
        global _mode
        _mode = "spout"

        def loop():
            conf, context = initComponent()
            self.initialize(conf, context)
            while True:
                msg = _read_command()
                command = msg.get("command")
                if command == "next":
                    self.nextTuple()
                elif command == "ack":
                    self.ack(msg.get("id"))
                elif command == "fail":
                    self.fail(msg.get("id"))
                elif command == "activate":
                    self.activate()
                elif command == "deactivate":
                    self.deactivate()
                sync()

        _main(loop)
