"""Find draft checkpoints on the box, and read the config facts an audit needs, in place."""

from __future__ import annotations

import json
import os
import re
import struct
import time

from remotedbg.agent.checkpoint import CheckpointError, read_model_config

DRAFT_ARCH = re.compile(r"eagle|mtp|nextn|medusa", re.I)
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".cache_tmp", "proc", "sys", "dev"}
HEADER_PEEK = 1 << 20


def _config_architectures(path):
    try:
        with open(path, "rb") as handle:
            config = json.loads(handle.read(1 << 20).decode("utf-8", "replace"))
    except (OSError, ValueError):
        return []
    arch = config.get("architectures") if isinstance(config, dict) else None
    return [a for a in arch if isinstance(a, str)] if isinstance(arch, list) else []


def _header_has_d2t(path):
    try:
        with open(path, "rb") as handle:
            raw = handle.read(8)
            if len(raw) != 8:
                return False
            (length,) = struct.unpack("<Q", raw)
            if length > HEADER_PEEK:
                return False
            return b'd2t"' in handle.read(length)
    except OSError:
        return False


def find_drafts(args):
    """Bounded search of `roots` for checkpoints whose config names an Eagle/MTP architecture or
    whose safetensors header has a d2t tensor. Returns [{path, reason, architectures}]."""
    roots = [os.path.expanduser(r) for r in args.get("roots", [])]
    max_depth = int(args.get("max_depth", 6))
    deadline = time.monotonic() + float(args.get("time_limit", 3.0))
    budget = int(args.get("max_entries", 100000))
    found, seen, searched = [], set(), []
    for root in roots:
        if not os.path.isdir(root):
            continue
        searched.append(root)
        base_depth = root.rstrip(os.sep).count(os.sep)
        for directory, dirs, files in os.walk(root):
            budget -= len(dirs) + len(files)
            if budget < 0 or time.monotonic() > deadline:
                break
            depth = directory.rstrip(os.sep).count(os.sep) - base_depth
            dirs[:] = sorted(
                d for d in dirs if d not in SKIP_DIRS and not d.startswith(".") or d in (".cache",)
            )
            if depth >= max_depth:
                dirs[:] = []
            real = os.path.realpath(directory)
            if real in seen:
                continue
            reason, arch = None, []
            if "config.json" in files:
                arch = _config_architectures(os.path.join(directory, "config.json"))
                if any(DRAFT_ARCH.search(a) for a in arch):
                    reason = "config architectures " + ", ".join(arch)
            if reason is None:
                for name in sorted(files):
                    if name.endswith(".safetensors") and _header_has_d2t(
                        os.path.join(directory, name)
                    ):
                        reason = "weights contain d2t (" + name + ")"
                        break
            if reason:
                seen.add(real)
                found.append({"path": directory, "reason": reason, "architectures": arch})
    return {"drafts": found, "searched": searched}


def read_configs(args):
    """config.json of each model path (a dir, an HF cache folder or the file itself):
    {path: config | {"error": ...}}."""
    out = {}
    for path in args["paths"]:
        try:
            out[path] = read_model_config(path)[0]
        except CheckpointError as exc:
            out[path] = {"error": str(exc)}
    return out
