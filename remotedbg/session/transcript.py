"""Append-only JSONL record of every remote command, with secrets redacted."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

from platformdirs import user_state_path

from remotedbg.session.result import RunResult

_SECRET_NAME = (
    r"[A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|PASS|API_?KEY|ACCESS_?KEY|CREDENTIALS?)"
)
_REDACTIONS = [
    # NAME=value where NAME looks like a secret (env assignments, --flag=value)
    (re.compile(rf"(?i)(\b{_SECRET_NAME}\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)"), r"\1***"),
    # --token VALUE, --password VALUE
    (re.compile(r"(?i)(--[a-z0-9-]*(?:token|password|secret|api-key)\s+)(\S+)"), r"\1***"),
    # scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)"), r"\1***\3"),
    # Authorization: Bearer xxx
    (re.compile(r"(?i)(bearer\s+)([A-Za-z0-9._~+/=-]+)"), r"\1***"),
    # well-known token shapes (Hugging Face, GitHub, OpenAI-style)
    (re.compile(r"\b(hf_|ghp_|gho_|github_pat_|sk-)[A-Za-z0-9_-]{8,}"), r"\1***"),
]


def redact(text: str) -> str:
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    return text


def transcript_path() -> Path:
    override = os.environ.get("REMOTEDBG_TRANSCRIPT")
    if override:
        return Path(override)
    return user_state_path("remotedbg") / "transcript.jsonl"


def record(target: str, label: str, result: RunResult) -> None:
    entry = {
        "ts": round(time.time(), 3),
        "target": target,
        "command": redact(label),
        "exit_status": result.exit_status,
        "duration_ms": round(result.duration * 1000, 2),
        "stdout_bytes": len(result.stdout_bytes),
        "stderr_bytes": len(result.stderr_bytes),
        "truncated": result.truncated,
        "timed_out": result.timed_out,
    }
    path = transcript_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
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
