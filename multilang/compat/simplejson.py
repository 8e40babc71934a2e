# storm's Python 3 compatibility shim for multilang children (our own code, Apache-2.0 like the
# rest of storm). Apache Storm's storm.py adapter was written for Python 2: its `emitBolt` puts
# `map(...)` into the message it serialises, which Python 3's json cannot encode, so a bolt
# written against it cannot emit under Python 3 on any runner. storm.py imports `simplejson`
# when it can; storm puts this module first on the PYTHONPATH of its children, so that import
# finds a `simplejson` whose `dumps` writes iterators (map, filter, generators) as arrays.
# Everything else is the real simplejson when it is installed, else the standard json module.
import importlib.machinery
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _load_real():
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
    spec = importlib.machinery.PathFinder.find_spec("simplejson", path)
    if spec is None or spec.loader is None:
        import json
        return json
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_real = _load_real()


def _iterables_as_arrays(default):
    def encode(o):
        if hasattr(o, "__next__") or isinstance(o, (set, frozenset, range)):
            return list(o)
        if default is not None:
            return default(o)
        raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)
    return encode


def dumps(obj, *args, **kwargs):
    kwargs["default"] = _iterables_as_arrays(kwargs.get("default"))
    return _real.dumps(obj, *args, **kwargs)


def dump(obj, fp, *args, **kwargs):
    kwargs["default"] = _iterables_as_arrays(kwargs.get("default"))
    return _real.dump(obj, fp, *args, **kwargs)


def __getattr__(name):
    return getattr(_real, name)
