"""The agent code shipped to the remote Python: the bundle of agent modules, the bootstrap that
serves them to `import` from memory, and the executor's bundle (session layer: starting the
resident executor needs it, and the remote primitives build on it)."""

from __future__ import annotations

import functools
import json
import shlex
import struct
import zlib
from pathlib import Path
from typing import Any

AGENT_DIR = Path(__file__).resolve().parent.parent / "agent"
DEFAULT_PYTHON = "python3"
MISSING_PYTHON_STATUS = 127
NOT_EXECUTABLE_STATUS = 126  # the shell found it but may not run it (a pyenv under /root)
OLD_PYTHON_STATUS = 86  # agent/_boot.py: the remote interpreter is older than the agent needs


@functools.lru_cache(maxsize=1)
def sources() -> dict[str, str]:
    sources = {"remotedbg.__init__": "", "remotedbg.agent.__init__": ""}
    for path in sorted(AGENT_DIR.glob("*.py")):
        if path.name not in ("__init__.py", "_boot.py"):
            sources[f"remotedbg.agent.{path.stem}"] = path.read_text(encoding="utf-8")
    return sources


@functools.lru_cache(maxsize=1)
def _boot_code() -> str:
    return (AGENT_DIR / "_boot.py").read_text(encoding="utf-8")


ANSWER_MARKER = b"\x1eRDBG-ANSWER\x1e"  # written by agent/_boot.py before its JSON answer


def executor_bundle(marker: str = "") -> bytes:
    """Every agent module, with the executor as entry; `marker` is written before its first
    frame, so the client can skip whatever the login printed."""
    return bundle_bytes(
        {
            "modules": sources(),
            "entry": "remotedbg.agent.executor:serve",
            "args": {"marker": marker},
        }
    )


def bundle_bytes(bundle: dict[str, Any]) -> bytes:
    """The boot's stdin: 8-byte big-endian length, then the zlib'd JSON bundle."""
    packed = zlib.compress(json.dumps(bundle).encode("utf-8"), 6)
    return struct.pack("!Q", len(packed)) + packed


def boot_command(interpreter: str) -> str:
    return f"{shlex.quote(interpreter)} -c {shlex.quote(_boot_code())}"
