"""Stamps of sets of files: whether they are as they were, told without reading a byte of them.
A file's path, device, inode, size, mtime and ctime go in: an edit, a new file or a reinstall
changes the stamp."""

from __future__ import annotations

import os


def add_file(digest, path, stat=os.lstat):
    """Put one file's stamp into `digest` (a hashlib object); False when it cannot be stat'ed
    (then it is left out)."""
    try:
        info = stat(path)
    except OSError:
        return False
    digest.update(os.fsencode(path) + b"\0")
    digest.update(b"%d %d %d %d %d\n" % (info.st_dev, info.st_ino, info.st_size,
                                         info.st_mtime_ns, info.st_ctime_ns))  # fmt: skip
    return True
