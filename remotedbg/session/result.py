"""What one remote command returned."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RunResult:
    command: str
    exit_status: int | None  # None when the command was stopped (timeout, cap, Ctrl-C)
    stdout_bytes: bytes
    stderr_bytes: bytes
    duration: float  # seconds
    truncated: bool = False  # output passed the capture cap and the command was stopped
    timed_out: bool = False

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", errors="replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", errors="replace")

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.truncated
