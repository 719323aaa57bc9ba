"""The bootstrap passed as `python3 -c`: reads a length-prefixed zlib'd JSON bundle of agent
modules from stdin (unbuffered, so a long-lived entry such as the executor can keep reading its
own requests from fd 0), serves them to `import` from memory, calls the entry function and prints
its JSON result."""

import sys

# Before anything an older Python cannot parse is compiled: the agent modules need 3.8. Written
# without f-strings so that Python 3.5 still reads this far; the client names the exit status.
if sys.version_info < (3, 8):
    sys.stderr.write("remotedbg: python %d.%d\n" % sys.version_info[:2])
    sys.exit(86)

import importlib.machinery  # noqa: E402 (importlib.util costs 40 ms: contextlib...)
import json  # noqa: E402
import os  # noqa: E402
import struct  # noqa: E402
import traceback  # noqa: E402
import zlib  # noqa: E402

sys.path[:] = [p for p in sys.path if p not in ("", ".")]  # no shadowing from the remote cwd


def _read_exactly(count):
    data = b""
    while len(data) < count:
        chunk = os.read(0, count - len(data))
        if not chunk:
            raise SystemExit("remotedbg agent: truncated bundle on stdin")
        data += chunk
    return data


_bundle = json.loads(zlib.decompress(_read_exactly(struct.unpack("!Q", _read_exactly(8))[0])))
_sources = _bundle["modules"]


class _BundleFinder:  # finder and loader by their methods: importlib.abc costs 30 ms to import
    def find_spec(self, name, path=None, target=None):
        if name in _sources or name + ".__init__" in _sources:
            return importlib.machinery.ModuleSpec(
                name, self, is_package=name + ".__init__" in _sources
            )
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__
        key = name if name in _sources else name + ".__init__"
        if key.endswith(".__init__"):
            module.__path__ = []
        exec(compile(_sources[key], "<remotedbg:" + key + ">", "exec"), module.__dict__)


sys.meta_path.insert(0, _BundleFinder())
try:
    _module_name, _func_name = _bundle["entry"].split(":")
    _func = getattr(importlib.import_module(_module_name), _func_name)
    _result = {"ok": True, "value": _func(_bundle["args"])}
except Exception as _exc:  # reported to the caller as a one-line error, traceback on stderr
    traceback.print_exc()
    _result = {"ok": False, "error": "%s: %s" % (type(_exc).__name__, _exc)}
# after the marker only: whatever the login printed on stdout before us is skipped by the client
sys.stdout.write("\x1eRDBG-ANSWER\x1e" + json.dumps(_result))
sys.stdout.flush()
