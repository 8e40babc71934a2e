# storm's Python 3 compatibility shim for multilang children (our own code, Apache-2.0 like the
# rest of storm). Apache Storm's storm.py adapter was written for Python 2: its `emitBolt` puts
# `map(...)` into the message it serialises, which Python 3's json cannot encode, so a bolt
# written against it cannot emit under Python 3 on any runner. storm.py imports `simplejson`
# when it can; storm puts this module first on the PYTHONPATH of its children, so that import
# finds a `simplejson` whose `dumps` writes iterators (map, filter, generators) as arrays.
#
# When the real simplejson is installed (pystorm, for one, depends on it), this module does not
# stand in for it: it loads the real package under its own name, so `import simplejson` gives
# the package itself, with its submodules and relative imports intact. Its `dumps` is only
# wrapped to retry, writing iterators as arrays, what it would otherwise refuse with a TypeError;
# everything it can encode goes through its own code unchanged. Without the real package, the
# module is the standard json module with that same `dumps`.
import importlib.machinery
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _iterables_as_arrays(default):
    def encode(o):
        if hasattr(o, "__next__") or isinstance(o, (set, frozenset, range)):
            return list(o)
        if default is not None:
            return default(o)
        raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)
    return encode


def _tolerant(dumps):
    """`dumps` as it is, retried with iterators as arrays where it refuses the object."""
    def tolerant_dumps(obj, *args, **kwargs):
        try:
            return dumps(obj, *args, **kwargs)
        except TypeError:
            kwargs["default"] = _iterables_as_arrays(kwargs.get("default"))
            return dumps(obj, *args, **kwargs)
    tolerant_dumps.__wrapped__ = dumps
    tolerant_dumps.__doc__ = dumps.__doc__
    return tolerant_dumps


def _real_spec():
    """Where the real simplejson is, looking everywhere but this shim's own folder."""
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
    spec = importlib.machinery.PathFinder.find_spec("simplejson", path)
    if spec is None or spec.loader is None:
        return None
    return spec


def _become_real(spec):
    """Load the real package as `simplejson`, in place of this module: the import that is
    running hands out whatever `sys.modules` holds when this module's code ends."""
    module = importlib.util.module_from_spec(spec)
    shim = sys.modules.get(__name__)
    sys.modules[__name__] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if shim is not None:
            sys.modules[__name__] = shim
        raise
    module.dumps = _tolerant(module.dumps)


_spec = _real_spec()
if _spec is not None:
    _become_real(_spec)
else:
    import json as _json
    from json import *  # noqa: F401,F403

    dumps = _tolerant(_json.dumps)

    def dump(obj, fp, *args, **kwargs):
        kwargs["default"] = _iterables_as_arrays(kwargs.get("default"))
        return _json.dump(obj, fp, *args, **kwargs)

    def __getattr__(name):
        return getattr(_json, name)
