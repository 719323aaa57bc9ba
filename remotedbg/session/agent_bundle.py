"""The agent code shipped to the remote Python: the bundle of agent modules, the bootstrap that
serves them to `import` from memory, and the executor's bundle (session layer: starting the
resident executor needs it, and the remote primitives build on it)."""

from __future__ import annotations

import functools
import json
import re
import shlex
import struct
import zlib
from pathlib import Path
from typing import Any

from remotedbg import agent

AGENT_DIR = Path(__file__).resolve().parent.parent / "agent"
# module names on the box, from the package's own: the agent's entries are named in
# remote/calls.py only; the executor's (the bundle's entry, below that layer) here
AGENT = agent.__name__
EXECUTOR = f"{AGENT}.executor"
DEFAULT_PYTHON = "python3"
MISSING_PYTHON_STATUS = 127
NOT_EXECUTABLE_STATUS = 126  # the shell found it but may not run it (a pyenv under /root)
OLD_PYTHON_STATUS = 86  # agent/_boot.py: the remote interpreter is older than the agent needs


@functools.lru_cache(maxsize=1)
def sources() -> dict[str, str]:
    sources = {"remotedbg.__init__": "", f"{AGENT}.__init__": ""}
    for path in sorted(AGENT_DIR.glob("*.py")):
        if path.name not in ("__init__.py", "_boot.py"):
            sources[f"{AGENT}.{path.stem}"] = path.read_text(encoding="utf-8")
    return sources


@functools.lru_cache(maxsize=1)
def _boot_code() -> str:
    return (AGENT_DIR / "_boot.py").read_text(encoding="utf-8")


ANSWER_MARKER = b"\x1eRDBG-ANSWER\x1e"  # written by agent/_boot.py before its JSON answer


def executor_bundle(marker: str = "", sent_env: dict[str, str] | None = None) -> bytes:
    """Every agent module, with the executor as entry; `marker` is written before its first
    frame, so the client can skip whatever the login printed; `sent_env`: the env requests
    (SendEnv/SetEnv) sent on its channel, whose arrival it reports (session/send_env.py)."""
    return bundle_bytes(
        {
            "modules": sources(),
            "entry": f"{EXECUTOR}:serve",
            "args": {"marker": marker, "sent_env": sent_env or {}},
        }
    )


def command_bundle(marker: str = "", sent_env: dict[str, str] | None = None) -> bytes:
    """The executor alone, for a session that only runs commands (no checks): a tenth of the
    bytes of executor_bundle."""
    modules = {
        name: code
        for name, code in sources().items()
        if not name.startswith(f"{AGENT}.") or name in (f"{AGENT}.__init__", EXECUTOR)
    }
    entry = f"{EXECUTOR}:serve"
    args = {"marker": marker, "sent_env": sent_env or {}}
    return bundle_bytes({"modules": modules, "entry": entry, "args": args})


def bundle_bytes(bundle: dict[str, Any]) -> bytes:
    """The boot's stdin: its code line, an 8-byte big-endian length, the zlib'd JSON bundle."""
    packed = zlib.compress(json.dumps(bundle).encode("utf-8"), 6)
    return boot_stdin() + struct.pack("!Q", len(packed)) + packed


# The login shell (whatever it is: sh, bash, zsh, fish, tcsh, mksh, rbash) parses only this line:
# one double-quoted word without `$`, `!`, backquotes or backslashes, which every one of them
# reads the same way. The boot code itself comes as the first line of stdin (read a byte at a
# time, so nothing of the bundle after it is taken), never through any shell's quoting.
BOOT_LINE = "import sys;exec(sys.stdin.buffer.raw.readline())"
AGENT_TAG = "RDBG-AGENT"  # the agent's argv[1]: how `ps` (and the tests) tell its processes
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./+-]+")
_QUOTABLE = re.compile(r'[^"$`!\\\n]+')


def quote_for_any_shell(word: str) -> str:
    """`word` as every login shell reads it; a word no quoting is shared for (a `$` in an
    interpreter's path) gets sh's quoting: it then goes through the executor's sh only."""
    if _PLAIN_WORD.fullmatch(word):
        return word
    if _QUOTABLE.fullmatch(word):
        return f'"{word}"'
    return shlex.quote(word)


def boot_command(interpreter: str) -> str:
    """The ssh command line that starts the agent in `interpreter`; stdin must begin with
    boot_stdin(). `-S`: the agent needs the standard library only, and `site` with the .pth
    files of a full environment costs 50-200 ms a start (85 ms of this machine's 187 ms); a
    check that wants numpy or torch adds site-packages then (agent/safetensors_file.py)."""
    return f'{quote_for_any_shell(interpreter)} -S -c "{BOOT_LINE}" {AGENT_TAG}'


@functools.lru_cache(maxsize=1)
def boot_stdin() -> bytes:
    """The first line the boot command reads: the bootstrap, as one line of Python."""
    return f"exec({_boot_code()!r})\n".encode()
