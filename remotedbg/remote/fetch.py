"""Move a byte range of a remote file here. Only the bytes asked for travel; the sink receives
them in order, in chunks."""

from __future__ import annotations

import shlex
from collections.abc import Callable

from remotedbg.errors import RemoteCommandError
from remotedbg.session import Session

CHUNK = 1 << 20
Sink = Callable[[bytes], None]


def fetch_range(session: Session, path: str, offset: int, length: int, sink: Sink) -> str:
    """Stream `length` bytes at `offset` of remote `path` into `sink`; returns the method used:
    "exec" (tail | head on a channel of its own, the fastest here), or "sftp" pipelined reads
    when the box has no usable tail/head."""
    if length <= 0:
        return "none"
    received = 0

    def count(data: bytes) -> None:
        nonlocal received
        received += len(data)
        sink(data)

    command = f"tail -c +{offset + 1} -- {shlex.quote(path)} | head -c {length}"
    result = session.read_stream(
        command, count, length, label=f"read {length} bytes at {offset} of {path}"
    )
    if received == length:
        return "exec"
    sftp = session.sftp() if received == 0 else None
    if sftp is None:
        reason = result.stderr.strip() or f"got {received} of {length} bytes"
        raise RemoteCommandError(f"reading {path}: {reason}")
    chunks = [
        (start, min(CHUNK, offset + length - start))
        for start in range(offset, offset + length, CHUNK)
    ]
    try:
        with sftp.open(path, "rb") as handle:
            for data in handle.readv(chunks):
                sink(data)
    except (OSError, EOFError, ValueError) as exc:  # the file changed or vanished meanwhile
        raise RemoteCommandError(f"reading {path} over SFTP: {exc or type(exc).__name__}") from None
    return "sftp"
