"""Move a byte range of a remote file here: SFTP pipelined reads, or an exec channel without SFTP.

Only the bytes asked for travel; the sink receives them in order, in chunks."""

from __future__ import annotations

import shlex
from collections.abc import Callable

from remotedbg.errors import RemoteCommandError
from remotedbg.session import Session

CHUNK = 1 << 20
Sink = Callable[[bytes], None]


def fetch_range(session: Session, path: str, offset: int, length: int, sink: Sink) -> str:
    """Stream `length` bytes at `offset` of remote `path` into `sink`; returns the method used."""
    if length <= 0:
        return "none"
    sftp = session.sftp() if hasattr(session, "sftp") else None
    if sftp is not None:
        chunks = [
            (start, min(CHUNK, offset + length - start))
            for start in range(offset, offset + length, CHUNK)
        ]
        with sftp.open(path, "rb") as handle:
            for data in handle.readv(chunks):
                sink(data)
        return "sftp"
    received = 0

    def count(name: str, data: bytes) -> None:
        nonlocal received
        if name == "stdout":
            received += len(data)
            sink(data)

    command = f"tail -c +{offset + 1} -- {shlex.quote(path)} | head -c {length}"
    result = session.run(
        command,
        stream=count,
        capture=False,
        max_output=length,
        label=f"read {length} bytes at {offset} of {path}",
        timeout=None,
    )
    if result.exit_status != 0 or received != length:
        reason = result.stderr.strip() or f"got {received} of {length} bytes"
        raise RemoteCommandError(f"reading {path}: {reason}")
    return "exec"
