"""Files down from the host, the work of `get`: globs expanded there, directories walked,
where each file goes (never outside the destination, never over a local file unless asked),
and the copies, resumable from a .part file. Bytes travel through the same range reader as
`tensors pull`. Runs here, on the user's machine; `front/cli/get.py` only shows it."""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from remotedbg.errors import ExitCode, LocalFileUnwritable, RemotedbgError, UsageError
from remotedbg.remote.fetch import fetch_range
from remotedbg.remote.primitives import Remote

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


def into_directory(dest: str | Path, sources: int) -> bool:
    """Whether copies go into `dest` (as cp and scp decide): it is a directory, several
    sources come, or it is written with a trailing slash."""
    return Path(dest).is_dir() or sources > 1 or str(dest).endswith(os.sep)


def tree_place(root: str, path: str, into_dir: bool) -> str | None:
    """Where a file found below the remote directory `root` goes, relative to the destination:
    under the directory's own name when copies go into a directory (`cp -r dir into/`), else
    at the destination itself. None for a name that would leave the destination (the walk's
    answer is data from the box)."""
    rel = posixpath.relpath(path, root)
    parts = rel.split("/")
    if rel.startswith("/") or any(part in ("", ".", "..") for part in parts):
        return None
    return posixpath.join(_root_name(root), rel) if into_dir else rel


def _root_name(root: str) -> str:
    """The copied directory's name below the destination: its last component once `.` and `..`
    are resolved (`~/tree/sub/..` is `tree`, as the directory it names), never `..`."""
    name = posixpath.basename(posixpath.normpath(root))
    return name if name not in ("", ".", "..", "/") else "root"


def below(dest: Path, rel: str) -> Path | None:
    """`dest / rel` when `rel` is a relative path that stays below `dest` (no `..`, no
    absolute, no empty part); None otherwise. Every place the box names goes through here:
    what it answers (a stat, a glob, a walk) decides nothing about where a file is written."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(part in ("", ".", "..") for part in parts):
        return None
    return dest.joinpath(*parts)


def plan(
    files: list[dict], dest: Path, force: bool, into_dir: bool | None = None
) -> list[Download]:
    """Where each remote file goes: into `dest` when it is a directory (or several files come),
    else to `dest` itself; a file of a directory tree (`rel` set) to its place below `dest`.
    Two files with one name, or a file already there, are refused."""
    into_dir = into_directory(dest, len(files)) if into_dir is None else into_dir
    if into_dir and dest.exists() and not dest.is_dir():
        raise UsageError(f"{dest}: several files go into a directory, and this is a file")
    downloads, taken = [], {}
    for entry in files:
        if entry.get("rel"):
            placed = below(dest, entry["rel"])
        else:
            placed = below(dest, posixpath.basename(entry["path"])) if into_dir else dest
        local = placed if placed is not None else dest
        size = entry["size"] if isinstance(entry.get("size"), int) and entry["size"] >= 0 else 0
        item = Download(entry["path"], size, local, mtime=entry.get("mtime"))
        if placed is None:
            item.status, item.detail = "skipped", "unsafe name (it would leave the destination)"
        elif not isinstance(entry.get("size"), int) or entry["size"] < 0:
            item.status, item.detail = "skipped", f"the box answered size {entry.get('size')!r}"
        elif local in taken:
            item.status, item.detail = "skipped", f"same name as {taken[local]}"
        elif local.exists() and not force:
            item.status, item.detail = "exists", "kept (--force replaces it)"
        if placed is not None:
            taken.setdefault(local, entry["path"])
        downloads.append(item)
    return downloads


def make_dirs(top: Path, directory: Path) -> None:
    """Create `directory` below `top` one level at a time, following no link on the way: a
    link planted below the destination would send the copies elsewhere."""
    current = top
    for part in directory.relative_to(top).parts:
        current = current / part
        try:
            os.mkdir(current, 0o755)
        except FileExistsError:
            if os.path.islink(current) or not current.is_dir():
                raise OSError(f"{current} is a link or not a directory; not followed") from None


def _fetch(remote: Remote, item: Download, progress: Any, top: Path | None) -> None:
    if top is None:
        item.local.parent.mkdir(parents=True, exist_ok=True)
    else:
        make_dirs(top, item.local.parent)
    partial = item.local.with_name(item.local.name + PART)
    record = item.local.with_name(item.local.name + PART + RECORD)
    start, why = _resumable(remote, item, partial, record)
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
            try:
                out.write(data)
            except OSError as exc:  # the local file's, not the connection's
                raise LocalFileUnwritable(f"{item.local}: {exc.strerror or exc}") from None
            item.moved += len(data)
            if progress is not None and task is not None:
                progress.advance(task, len(data))

        fetch_range(remote.session, item.remote, start, item.size - start, sink)
    os.replace(partial, item.local)
    item.partial = None
    record.unlink(missing_ok=True)
    item.status = "resumed" if start else "done"
    item.detail = f"{item.size:,} bytes" + (f", {item.size - start:,} of them now" if start else "")
    if why:
        item.detail += f" (started over: {why})"


def _resumable(remote: Remote, item: Download, partial: Path, record: Path) -> tuple[int, str]:
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
    there = remote.sha256_range(item.remote, held.st_size)
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


@dataclass
class Tree:
    """What a -r walk of one remote directory found: files to copy (with their place `rel`
    below the destination), directories to make, what it skipped, whether a bound cut it."""

    files: list[dict]
    dirs: list[tuple[str, str]]  # (place below the destination, remote path)
    skipped: list[Download]
    truncated: bool


def walk_tree(remote: Remote, root: str, dest: Path, into_dir: bool, limit: int) -> Tree:
    """A remote directory's files, everything walked (nothing pruned), links to files
    followed as `get` follows them, links to directories named and not followed (as find)."""
    # `root` exists (stat said so): a name that exists as typed is that name (agent/pathglob.py)
    found = remote.find(root, limit=limit, prune=[])
    tree = Tree([], [], [], bool(found["truncated"]))
    if into_dir:  # the directory itself, even when empty (else it is the destination)
        tree.dirs.append((_root_name(root), root))
    candidates = []
    for entry in found["results"]:
        rel = tree_place(root, entry["path"], into_dir)
        if rel is None:
            tree.skipped.append(Download(entry["path"], 0, dest, "skipped", "unsafe name"))
        elif entry["type"] == "d":
            tree.dirs.append((rel, entry["path"]))
        elif entry["type"] in ("f", "l"):
            candidates.append(entry["path"])
        else:
            tree.skipped.append(Download(entry["path"], 0, dest / rel, "skipped",
                                         "not a regular file"))  # fmt: skip
    for info in remote.stat(candidates, follow=True) if candidates else []:
        rel = tree_place(root, info["path"], into_dir)
        if info.get("exists") and info["type"] == "f" and rel is not None:
            tree.files.append({**info, "rel": rel})
        else:
            detail = "a link to a directory (not followed)" if info.get("type") == "d" else (
                _not_a_file(info))  # fmt: skip
            tree.skipped.append(Download(info["path"], 0, dest / (rel or ""), "skipped", detail))
    return tree




def _not_a_file(info: dict) -> str:
    if not info.get("exists"):
        return info.get("error") or "gone"
    if info["type"] == "d":
        return "a directory (not copied; -r copies it)"
    return "not a regular file"


@dataclass
class GetPlan:
    """What a `get` will do: the globs that matched nothing or were cut, each file's
    destination (or why it is skipped), the directory trees walked."""

    dest: Path
    missing: list[dict]
    cut_globs: list[dict]
    downloads: list[Download]
    skipped: list[Download]
    trees: list[tuple[str, Tree]]

    @property
    def cut(self) -> list[str]:
        """The directories whose walk stopped at the limit."""
        return [root for root, tree in self.trees if tree.truncated]

    @property
    def every(self) -> list[Download]:
        return self.skipped + self.downloads

    @property
    def pending_bytes(self) -> int:
        return sum(d.size for d in self.downloads if d.status == "pending")

    def exit_code(self) -> int:
        """4 a copy failed; 1 something was not copied (no match, kept, skipped, cut)."""
        if any(d.status == "failed" for d in self.every):
            return ExitCode.REMOTE
        kept = any(d.status in ("exists", "skipped") for d in self.every)
        if self.missing or self.cut or self.cut_globs or kept:
            return ExitCode.FINDINGS
        return ExitCode.OK

    def document(self) -> dict:
        return {
            "files": [
                {
                    "remote": d.remote,
                    "local": str(d.local),
                    "size": d.size,
                    "status": d.status,
                    "detail": d.detail,
                    "bytes_moved": d.moved,
                }
                for d in self.every
            ],
            "truncated": bool(self.cut or self.cut_globs),
        }


def plan_get(
    remote: Remote, sources: list[str], given: str, force: bool, recursive: bool, limit: int
) -> GetPlan:
    """Expand `sources` on the box, walk the directories (-r), and place every file below
    `given` (the destination's directories made, as mkdir -p and cp -r make them)."""
    dest = Path(given)
    found = remote.glob(sources, limit)
    missing = [entry for entry in found if not entry["matches"]]
    cut_globs = [entry for entry in found if entry.get("truncated")]
    paths = list(dict.fromkeys(p for entry in found for p in entry["matches"]))
    infos = remote.stat(paths, follow=True) if paths else []
    copied = [
        i for i in infos if i.get("exists") and (i["type"] == "f" or recursive and i["type"] == "d")
    ]
    into_dir = into_directory(given, len(copied))
    files, skipped, trees = [], [], []
    for info in infos:
        if info.get("exists") and info["type"] == "f":
            files.append(info)
        elif recursive and info.get("exists") and info["type"] == "d":
            trees.append((info["path"], walk_tree(remote, info["path"], dest, into_dir, limit)))
        else:
            skipped.append(Download(info["path"], 0, dest, "skipped", _not_a_file(info)))
    for _, tree in trees:
        files.extend(tree.files)
        skipped.extend(tree.skipped)
    downloads = plan(files, dest, force, into_dir)
    if trees:
        dest.mkdir(parents=True, exist_ok=True)  # the user's own path, as mkdir -p
    for _, tree in trees:
        for rel, where in tree.dirs:
            place = below(dest, rel)
            if place is None:
                skipped.append(Download(where, 0, dest, "skipped", "unsafe name"))
                continue
            try:
                make_dirs(dest, place)
            except OSError as error:
                skipped.append(Download(where, 0, dest / rel, "failed", str(error)))
    return GetPlan(dest, missing, cut_globs, downloads, skipped, trees)


def fetch_all(remote: Remote, planned: GetPlan, progress: Any = None) -> None:
    """Copy every pending file; a failed one is said in its status. Ctrl-C (or SIGTERM) stops
    the copies: the file being written keeps its .part (`Download.partial`) to resume from."""
    top = planned.dest if planned.trees else None
    for item in planned.downloads:
        if item.status != "pending":
            continue
        try:
            _fetch(remote, item, progress, top)
        except (RemotedbgError, OSError) as error:
            item.status, item.detail = "failed", str(error)
