"""Append-only JSONL record of every remote command, with secrets redacted."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from platformdirs import user_state_path

from remotedbg.agent.redact import redact_text
from remotedbg.session.result import RunResult

MAX_BYTES = 8 << 20  # a transcript past this is rotated to transcript.jsonl.1


def transcript_path() -> Path:
    override = os.environ.get("REMOTEDBG_TRANSCRIPT")
    if override:
        return Path(override)
    return user_state_path("remotedbg") / "transcript.jsonl"


def record(target: str, label: str, result: RunResult) -> None:
    entry = {
        "ts": round(time.time(), 3),
        "target": target,
        "command": redact_text(label),
        "exit_status": result.exit_status,
        "duration_ms": round(result.duration * 1000, 2),
        "stdout_bytes": len(result.stdout_bytes),
        "stderr_bytes": len(result.stderr_bytes),
        "truncated": result.truncated,
        "timed_out": result.timed_out,
    }
    path = transcript_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if path.parent.stat().st_mode & 0o077:
            os.chmod(path.parent, 0o700)  # made 0755 by an earlier version
        if path.exists() and path.stat().st_size > MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
        # private to the user: commands name hosts, paths and (redacted) arguments
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
    except OSError:
        pass  # a transcript that cannot be written must never stop the investigation


def recent(limit: int) -> Iterator[dict]:
    path = transcript_path()
    if not path.exists():
        return iter(())
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-limit:]
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    return iter(entries)
