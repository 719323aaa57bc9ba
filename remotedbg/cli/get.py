"""get: files down from the host (globs expanded there), resumable, never overwriting unless
asked. Bytes travel through the same range reader as `tensors pull`."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress

from remotedbg.cli.context import CommandContext, remote_command
from remotedbg.cli.output import emit_json, note, printable, stderr_console, transfer_progress
from remotedbg.errors import ExitCode, RemotedbgError, UsageError
from remotedbg.local_signals import Terminated
from remotedbg.remote.fetch import fetch_range

PART = ".part"  # a download in progress; the next `get` resumes from it
RECORD = ".json"  # beside NAME.part: the remote file's path, size and mtime when it was begun


@dataclass
class Download:
    remote: str
    size: int
    local: Path
    status: str = "pending"  # done | resumed | exists | failed | skipped
    detail: str = ""
    moved: int = 0
    mtime: float | None = None
    partial: Path | None = None  # the .part being written


def plan(files: list[dict], dest: Path, force: bool) -> list[Download]:
    """Where each remote file goes: into `dest` when it is a directory (or several files come),
    else to `dest` itself. Two files with one name, or a file already there, are refused."""
    into_dir = dest.is_dir() or len(files) > 1 or str(dest).endswith(os.sep)
    if len(files) > 1 and dest.exists() and not dest.is_dir():
        raise UsageError(f"{dest}: several files go into a directory, and this is a file")
    downloads, taken = [], {}
    for entry in files:
        local = dest / Path(entry["path"]).name if into_dir else dest
        item = Download(entry["path"], entry["size"], local, mtime=entry.get("mtime"))
        if local in taken:
            item.status, item.detail = "skipped", f"same name as {taken[local]}"
        elif local.exists() and not force:
            item.status, item.detail = "exists", "kept (--force replaces it)"
        taken.setdefault(local, entry["path"])
        downloads.append(item)
    return downloads


def _fetch(ctx: CommandContext, item: Download, progress: Progress | None) -> None:
    item.local.parent.mkdir(parents=True, exist_ok=True)
    partial = item.local.with_name(item.local.name + PART)
    record = item.local.with_name(item.local.name + PART + RECORD)
    start, why = _resumable(ctx, item, partial, record)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if start else os.O_TRUNC)
    fd = os.open(partial, flags, 0o644)
    if not start:
        try:
            _write_record(record, item)
        except OSError:
            os.close(fd)
            raise
    item.partial = partial
    task = (
        progress.add_task(item.local.name, total=item.size, completed=start) if progress else None
    )
    with os.fdopen(fd, "ab" if start else "wb") as out:

        def sink(data: bytes) -> None:
            out.write(data)
            item.moved += len(data)
            if progress is not None and task is not None:
                progress.advance(task, len(data))

        fetch_range(ctx.session, item.remote, start, item.size - start, sink)
    os.replace(partial, item.local)
    item.partial = None
    record.unlink(missing_ok=True)
    item.status = "resumed" if start else "done"
    item.detail = f"{item.size:,} bytes" + (f", {item.size - start:,} of them now" if start else "")
    if why:
        item.detail += f" (started over: {why})"


def _resumable(ctx: CommandContext, item: Download, partial: Path, record: Path) -> tuple[int, str]:
    """How many bytes of the .part file to keep, and why none when there is one: its bytes are
    kept only when the sha256 of the remote file's first bytes, computed on the box, is the
    .part's own, and the remote file still has the size and mtime it had when the .part was
    begun (its record; a .part without one, from an earlier version, is judged by the hash)."""
    try:
        held = os.lstat(partial)
    except FileNotFoundError:
        return 0, ""
    if not stat.S_ISREG(held.st_mode) or held.st_size == 0:
        return 0, ""
    began = _read_record(record)
    if began is not None and began.get("remote") != item.remote:
        return 0, "the .part came from another remote file"
    if began is not None and (began.get("size"), began.get("mtime")) != (item.size, item.mtime):
        return 0, "the remote file changed since the .part was begun"
    if held.st_size > item.size:
        return 0, "the .part is longer than the remote file"
    there = ctx.remote.sha256_range(item.remote, held.st_size)
    if (there["size"], there["mtime"]) != (item.size, item.mtime) or there["short"]:
        return 0, "the remote file changed since it was listed"
    if there["sha256"] != _local_sha256(partial):
        return 0, f"its first {held.st_size:,} bytes differ from the .part's"
    return held.st_size, ""


def _local_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_record(record: Path) -> dict | None:
    try:
        with os.fdopen(os.open(record, os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
            value = json.loads(handle.read(4096))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _write_record(record: Path, item: Download) -> None:
    """What the .part is a prefix of (path, size, mtime on the box), for a later resume."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    with os.fdopen(os.open(record, flags, 0o600), "w", encoding="utf-8") as handle:
        json.dump({"remote": item.remote, "size": item.size, "mtime": item.mtime}, handle)


@remote_command
def get(
    ctx: CommandContext,
    sources: Annotated[list[str], typer.Argument(help="Remote files or globs.", metavar="REMOTE")],
    dest: Annotated[Path, typer.Argument(help="Local file, or directory for several.")],
    force: Annotated[bool, typer.Option("--force", help="Replace local files.")] = False,
) -> int:
    """Copy files from the host. Globs and ~ expand there; an interrupted copy resumes from
    its .part file; an existing local file is kept unless --force.

    Example: remotedbg get -H gpu-box '~/logs/*.log' ./logs/"""
    found = ctx.remote.glob(sources)
    missing = [entry for entry in found if not entry["matches"]]
    for entry in missing:
        stderr_console.print(f"no match for {printable(entry['pattern'])}", markup=False)
    paths = list(dict.fromkeys(p for entry in found for p in entry["matches"]))
    files, skipped = [], []
    for info in ctx.remote.stat(paths, follow=True) if paths else []:
        if info.get("exists") and info["type"] == "f":
            files.append(info)
        else:
            skipped.append(Download(info["path"], 0, dest, "skipped", _not_a_file(info)))
    downloads = plan(files, dest, force)
    total = sum(d.size for d in downloads if d.status == "pending")
    progress = transfer_progress(total, wanted=not ctx.json)
    with progress or contextlib.nullcontext():
        for item in downloads:
            if item.status != "pending":
                continue
            try:
                _fetch(ctx, item, progress)
            except (RemotedbgError, OSError) as error:
                item.status, item.detail = "failed", str(error)
            except (KeyboardInterrupt, Terminated):
                if item.partial is not None and item.partial.exists():
                    held = item.partial.stat().st_size
                    stderr_console.print(
                        f"interrupted: {printable(str(item.partial))} kept ({held:,} bytes); "
                        "the same get resumes from it",
                        markup=False,
                    )
                raise
    every = skipped + downloads
    if ctx.json:
        emit_json(
            {
                "files": [
                    {
                        "remote": d.remote,
                        "local": str(d.local),
                        "size": d.size,
                        "status": d.status,
                        "detail": d.detail,
                        "bytes_moved": d.moved,
                    }
                    for d in every
                ]
            }
        )
    else:
        for d in every:
            line = f"{d.status:8} {printable(d.remote)} -> {printable(str(d.local))}: {d.detail}"
            if d.status in ("done", "resumed"):
                note(line)
            else:  # why the exit status is not 0
                stderr_console.print(line, markup=False)
    if any(d.status == "failed" for d in every):
        return ExitCode.REMOTE
    if missing or any(d.status in ("exists", "skipped") for d in every):
        return ExitCode.FINDINGS
    return ExitCode.OK


def _not_a_file(info: dict) -> str:
    if not info.get("exists"):
        return info.get("error") or "gone"
    return "a directory (not copied)" if info["type"] == "d" else "not a regular file"
