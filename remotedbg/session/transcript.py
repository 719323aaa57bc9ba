"""Append-only JSONL record of every remote command, with secrets redacted."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from platformdirs import user_state_path

from remotedbg.agent.redact import redact_text
from remotedbg.session.result import RunResult

MAX_BYTES = 8 << 20  # a transcript past this is rotated to transcript.jsonl.1

#: Called with each remote call's entry as it is recorded (`remotedbg -v`); None: quiet.
echo: Callable[[dict], None] | None = None


def transcript_path() -> Path:
    override = os.environ.get("REMOTEDBG_TRANSCRIPT")
    if override:
        return Path(override)
    return user_state_path("remotedbg") / "transcript.jsonl"


def record(target: str, label: str, result: RunResult) -> None:
    entry = {
        "ts": round(time.time(), 3),
        "kind": "call",
        "pid": os.getpid(),
        "target": target,
        "command": redact_text(label),
        "exit_status": result.exit_status,
        "duration_ms": round(result.duration * 1000, 2),
        "stdout_bytes": len(result.stdout_bytes),
        "stderr_bytes": len(result.stderr_bytes),
        "truncated": result.truncated,
        "timed_out": result.timed_out,
    }
    if echo is not None:
        echo(entry)
    _append(entry)


def record_typed(line: str, target: str, exit_status: int | None, started: float) -> None:
    """What the user typed (a command line, or a REPL line), so `history` shows that rather
    than the remote calls it made; those carry the same pid."""
    _append(
        {
            "ts": round(started, 3),
            "kind": "typed",
            "pid": os.getpid(),
            "target": target,
            "command": redact_text(line),
            "exit_status": exit_status,
            "duration_ms": round((time.time() - started) * 1000, 2),
        }
    )


def _append(entry: dict) -> None:
    path = transcript_path()
    try:
        _private_parent(path)
        if path.exists() and path.stat().st_size > MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
        # private to the user: commands name hosts, paths and (redacted) arguments
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        if os.fstat(fd).st_uid != os.getuid():
            # a file another user planted at the path (a shared REMOTEDBG_TRANSCRIPT folder):
            # the user's commands are not theirs to read
            os.close(fd)
            return
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
    except OSError:
        pass  # a transcript that cannot be written must never stop the investigation


def _private_parent(path: Path) -> None:
    """The transcript's directory: created 0700 when missing. Only remotedbg's own state dir is
    tightened when it exists (made 0755 by an earlier version); a directory named by
    REMOTEDBG_TRANSCRIPT (a shared /tmp, a team's log dir) is someone else's and keeps its mode:
    the file itself is 0600."""
    parent = path.parent
    if not parent.is_dir():
        parent.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(parent, 0o700)
    elif not os.environ.get("REMOTEDBG_TRANSCRIPT") and parent.stat().st_mode & 0o077:
        os.chmod(parent, 0o700)


def recent(
    limit: int,
    *,
    calls: bool = True,
    host: str | None = None,
    since: float | None = None,
) -> Iterator[dict]:
    """The last `limit` entries, oldest first: remote calls only when `calls`, one host's only
    when `host`, none older than the `since` timestamp."""
    path = transcript_path()
    if not path.exists():
        return iter(())
    entries = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if not calls and entry.get("kind") != "typed":
            continue
        if host is not None and entry.get("target") != host:
            continue
        if since is not None and float(entry.get("ts") or 0) < since:
            continue
        entries.append(entry)
    # a typed line is written when it ends, stamped when it started: before its calls
    entries.sort(key=lambda e: float(e.get("ts") or 0))
    return iter(entries[-limit:])
