"""The test box is this machine: look for leftover processes through /proc."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path


def pids_where(test: Callable[[bytes], bool]) -> list[int]:
    """The processes whose raw /proc cmdline (NUL-separated arguments) passes `test`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if test(handle.read()):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def pids_with_argv(*argv: str) -> list[int]:
    wanted = "\0".join(argv).encode() + b"\0"
    return pids_where(lambda cmdline: cmdline == wanted)


def wait_for(predicate, timeout: float = 15.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (field 3 on); the name may hold spaces."""
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()


def parent_of(pid: int) -> int:
    return int(_stat(pid)[1])


def start_time(pid: int) -> str | None:
    """When the process started (field 22), None if it is gone: a PID reused later starts
    later, so (pid, start) names one process."""
    try:
        return _stat(pid)[19]
    except (OSError, IndexError):
        return None


def persist_daemons(runtime: Path) -> list[int]:
    """PIDs of the daemons serving sockets in this test's runtime dir."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"remotedbg.persist.daemon" in argv and any(str(runtime).encode() in a for a in argv):
            found.append(int(entry))
    return found
