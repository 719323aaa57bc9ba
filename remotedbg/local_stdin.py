"""Whether this process was given input on stdin (a pipe or a file, as in `cmd | remotedbg run`
or `remotedbg run -- bash -s < script`), and reading it. Standard library only: the persistent
session's client asks too (a command with input is run here, where the input is)."""

from __future__ import annotations

import os
import stat
import sys

#: Input larger than this is refused: `run` is for commands, not for moving files.
MAX_STDIN_BYTES = 64 << 20


def has_piped_input() -> bool:
    """stdin is a pipe, a socket or a regular file (not a terminal, not /dev/null, not closed)."""
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)


def read_piped_input(limit: int = MAX_STDIN_BYTES) -> bytes | None:
    """All of stdin when it has piped input (None otherwise); raises ValueError past `limit`."""
    if not has_piped_input():
        return None
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"stdin holds more than {limit >> 20} MiB")
    return data
