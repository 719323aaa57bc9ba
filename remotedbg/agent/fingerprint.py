"""Fingerprints that should agree across the hosts of a fleet: file hashes, tensor-byte hashes."""

from __future__ import annotations

import hashlib
import os

from remotedbg.agent.checkpoint import CheckpointError, open_checkpoint

BLOCK = 1 << 20


def _hash_range(path, offset, length):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        handle.seek(offset)
        remaining = length
        while remaining > 0:
            block = handle.read(min(BLOCK, remaining))
            if not block:
                break
            digest.update(block)
            remaining -= len(block)
    return digest.hexdigest()


def fingerprints(args):
    """{"files": {path: sha256|error}, "tensors": {checkpoint: {name: sha256|error}}}.

    Only the named tensors' bytes are hashed, never whole shards."""
    files = {}
    for path in args.get("files", []):
        full = os.path.expanduser(path)
        try:
            files[path] = _hash_range(full, 0, os.path.getsize(full))
        except OSError as exc:
            files[path] = "error: %s" % (exc.strerror or exc)
    tensors = {}
    for checkpoint, names in (args.get("tensors") or {}).items():
        out = tensors.setdefault(checkpoint, {})
        try:
            opened = open_checkpoint(checkpoint)
        except CheckpointError as exc:
            out["error"] = str(exc)
            continue
        for name in names:
            try:
                info = opened.info(name)
                out[name] = _hash_range(info["file"], info["offset"], info["bytes"])
            except (CheckpointError, OSError, KeyError) as exc:
                out[name] = "error: %s" % exc
    return {"files": files, "tensors": tensors}
