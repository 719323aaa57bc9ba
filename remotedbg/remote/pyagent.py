"""Ship agent code to the remote Python and get JSON back, in one round trip."""

from __future__ import annotations

import functools
import json
import shlex
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


def call(
    session: Session,
    entry: str,
    args: dict[str, Any],
    *,
    python: str | None = None,
    timeout: float | None = None,
) -> Any:
    """Run `module:function(args)` on the remote Python and return its JSON value.

    `entry` is like "remotedbg.agent.fsops:glob_paths". Raises RemoteCommandError with the agent's
    one-line error when the function raised, or when no usable Python was found.
    """
    interpreter = python or DEFAULT_PYTHON
    bundle = {"modules": _sources(), "entry": entry, "args": args}
    payload = zlib.compress(json.dumps(bundle).encode("utf-8"), 6)
    command = f"{shlex.quote(interpreter)} -c {shlex.quote(_boot_code())}"
    label = f"{interpreter} <agent {entry}> {json.dumps(args, default=str)[:500]}"
    result = session.run(command, stdin=payload, timeout=timeout, label=label)
    if result.truncated:
        raise RemoteCommandError(f"{entry}: the agent's answer passed the output cap")
    if result.exit_status == MISSING_PYTHON_STATUS:
        raise RemoteCommandError(
            f"no Python at {interpreter!r} on {session.name} (pass --python PATH)"
        )
    try:
        answer = json.loads(result.stdout_bytes)
    except ValueError:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise RemoteCommandError(f"{entry} failed on {session.name}: {last}") from None
    if not answer.get("ok"):
        raise RemoteCommandError(f"{entry} failed on {session.name}: {answer.get('error')}")
    return answer["value"]
