"""Whether this process was given input on stdin (a pipe or a file, as in `cmd | remotedbg run`
or `remotedbg run -- bash -s < script`), and reading it as it arrives. Standard library only:
the persistent session's client asks too (it hands a command's stdin to the daemon, which
reads it through STDIN_FD)."""

from __future__ import annotations

import os
import select
import stat
from collections.abc import Iterator
from contextvars import ContextVar

#: The descriptor that is this command's stdin: 0, or the client's own handed to the
#: persistent session's daemon (SCM_RIGHTS) for the command it serves.
STDIN_FD: ContextVar[int] = ContextVar("stdin_fd", default=0)


def has_piped_input() -> bool:
    """stdin is a pipe, a socket or a regular file (not a terminal, not /dev/null, not closed)."""
    try:
        mode = os.fstat(STDIN_FD.get()).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)


class InputStream:
    """Input read as it arrives, never whole (`tail -f log | run -- grep`, `tar c . | run --
    tar x`): what a remote command's stdin is fed from."""

    def __init__(self, fd: int = 0) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def read_ready(self, size: int) -> bytes | None:
        """The bytes there are now (b"" at the end of the input), None when none has come."""
        if not select.select([self.fd], [], [], 0)[0]:
            return None
        return self.read(size)

    def read(self, size: int) -> bytes:
        """Up to `size` bytes, waiting for them; b"" at the end (or an unreadable stdin)."""
        try:
            return os.read(self.fd, size)
        except OSError:
            return b""


#: What a command's stdin is given: all of it, or a stream read as it arrives.
Input = bytes | InputStream


def piped_input() -> InputStream | None:
    """stdin as a stream when it has piped input; None otherwise (nothing is read)."""
    return InputStream(STDIN_FD.get()) if has_piped_input() else None


def input_chunks(given: Input, size: int = 1 << 16) -> Iterator[bytes]:
    """The input in pieces, each waited for (a writer thread's loop); ends with the input."""
    if isinstance(given, bytes):
        view = memoryview(given)
        for start in range(0, len(view), size):
            yield bytes(view[start : start + size])
        return
    while True:
        chunk = given.read(size)
        if not chunk:
            return
        yield chunk
