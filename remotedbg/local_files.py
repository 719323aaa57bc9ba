"""Files remotedbg writes on this machine (reports, figures): written to a new temporary file
beside the destination (an unpredictable name, created exclusively, so no symlink or file
planted there is followed), then renamed over it: a symlink at the destination is replaced,
never written through, and a reader never sees half a file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: Path, text: str) -> None:
    data = text.encode("utf-8")
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
