"""Move a byte range of a remote file here. Only the bytes asked for travel; the sink receives
them in order, in chunks."""

from __future__ import annotations

import shlex
from collections.abc import Callable

from remotedbg.errors import RemoteCommandError
from remotedbg.session import Session

CHUNK = 1 << 20
Sink = Callable[[bytes], None]


# GNU dd reads and writes the range in 1 MiB blocks; `tail -c | head -c` copy it in 8 KiB ones,
# two processes and a pipe between them: ~5x the box's CPU per byte (bench/tensor_pull.py), which
# on a busy box is what sets the rate. A dd without byte counts (busybox, BSD) is found by
# asking it to copy nothing first, before any byte is read.
_DD_FLAGS = "iflag=skip_bytes,count_bytes status=none"


def read_command(path: str, offset: int, length: int) -> str:
    """The shell line that writes `length` bytes at `offset` of `path` to stdout."""
    quoted = shlex.quote(path)
    return (
        f"if dd if=/dev/null of=/dev/null {_DD_FLAGS} 2>/dev/null; "
        f"then dd if={quoted} bs=1M skip={offset} count={length} {_DD_FLAGS}; "
        f"else tail -c +{offset + 1} -- {quoted} | head -c {length}; fi"
    )


def fetch_range(session: Session, path: str, offset: int, length: int, sink: Sink) -> str:
    """Stream `length` bytes at `offset` of remote `path` into `sink`; returns the method used:
    "exec" (read on the box: by the session's resident executor, sendfile from a child of its
    own, the fastest here; else dd, or tail | head, on a channel of its own), or "sftp"
    pipelined reads when the box can do neither."""
    if length <= 0:
        return "none"
    received = 0

    def count(data: bytes) -> None:
        nonlocal received
        received += len(data)
        sink(data)

    label = f"read {length} bytes at {offset} of {path}"
    result = session.read_file(path, offset, length, count, label)
    if result is None:
        result = session.read_stream(read_command(path, offset, length), count, length, label)
    elif not result.ok and received:  # the file changed under the read
        raise RemoteCommandError(f"reading {path}: {result.stderr}")
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
