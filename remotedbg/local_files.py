"""Files remotedbg writes on this machine (reports, figures): written to a new temporary file
beside the destination (an unpredictable name, created exclusively, so no symlink or file
planted there is followed), then renamed over it: a symlink at the destination is replaced,
never written through, and a reader never sees half a file."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from remotedbg.errors import LocalFileUnwritable


def umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: Path, text: str) -> None:
    """Write a report or figure. A destination that is a device, a FIFO or a socket
    (`/dev/stdout`, a pipe) is written into, as a shell's `>` would; anything else is written
    beside and renamed over (a symlink is replaced, never written through). A failure (a full
    disk, a read-only or missing folder) is one line, LocalFileUnwritable (exit 2)."""
    data = text.encode("utf-8")
    try:
        if path.exists() and not path.is_file():
            if path.is_dir():
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            with open(path, "wb") as stream:
                stream.write(data)
            return
        _replace(path, data)
    except OSError as error:
        raise LocalFileUnwritable(f"cannot write {path}: {error.strerror or error}") from None


def _replace(path: Path, data: bytes) -> None:
    handle = tempfile.NamedTemporaryFile(
        "wb", dir=path.parent, prefix=f".{path.name}.", suffix=".partial", delete=False
    )
    partial = Path(handle.name)
    try:
        with handle:
            handle.write(data)
        os.chmod(partial, 0o666 & ~umask())  # the mode a plain open() would give
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
