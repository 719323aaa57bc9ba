"""Ship agent code to the remote Python and get JSON back, in one round trip."""

from __future__ import annotations

import functools
import json
import shlex
import struct
import zlib
from pathlib import Path
from typing import Any

from remotedbg.errors import RemoteCommandError
from remotedbg.session import Session

AGENT_DIR = Path(__file__).resolve().parent.parent / "agent"
DEFAULT_PYTHON = "python3"
MISSING_PYTHON_STATUS = 127


@functools.lru_cache(maxsize=1)
def _sources() -> dict[str, str]:
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
            "modules": _sources(),
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


def call(
    session: Session,
    entry: str,
    args: dict[str, Any],
    *,
    python: str | None = None,
    timeout: float | None = None,
    cwd: str | None = None,
) -> Any:
    """Run `module:function(args)` on the remote Python and return its JSON value.

    `entry` is like "remotedbg.agent.fsops:glob_paths". Raises RemoteCommandError with the agent's
    one-line error when the function raised, or when no usable Python was found.
    """
    interpreter = python or DEFAULT_PYTHON
    label = f"{interpreter} <agent {entry}> {json.dumps(args, default=str)[:500]}"
    if python is None:
        answer = session.agent_call(entry, args, timeout, label, cwd)
        if answer is not None:
            return _unwrap(session, entry, answer)
    bundle = {"modules": _sources(), "entry": entry, "args": args}
    result = session.run(
        boot_command(interpreter),
        stdin=bundle_bytes(bundle),
        timeout=timeout,
        label=label,
        cwd=cwd,
    )
    if result.truncated:
        raise RemoteCommandError(f"{entry}: the agent's answer passed the output cap")
    if result.exit_status == MISSING_PYTHON_STATUS:
        raise RemoteCommandError(
            f"no Python at {interpreter!r} on {session.name} (pass --python PATH)"
        )
    try:
        answer = json.loads(result.stdout_bytes.rsplit(ANSWER_MARKER, 1)[1])
    except (ValueError, IndexError):
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise RemoteCommandError(f"{entry} failed on {session.name}: {last}") from None
    return _unwrap(session, entry, answer)


def _unwrap(session: Session, entry: str, answer: dict[str, Any]) -> Any:
    if not answer.get("ok"):
        raise RemoteCommandError(f"{entry} failed on {session.name}: {answer.get('error')}")
    return answer["value"]
