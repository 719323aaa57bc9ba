"""Engine source files and their classification results, kept by content: a file identical in
two installs, on two hosts of a fleet, or unchanged since the last run is analysed once, and
crosses the wire once (the engine scan answers sha256s first; `fill_sources` asks for the
files whose text is not kept here). Kept in
memory for the process and on disk in the user's cache dir (`$REMOTEDBG_CACHE_DIR`, else
platformdirs' cache dir for remotedbg), keyed by the sha256 of the analyser's own code and the
file's text, so a new remotedbg never reads an old answer. A cache that cannot be read or
written is skipped, never an error. The hosts of a fleet run in threads of one process and
start together: a content one thread is classifying or reading is waited for by the others,
not done again by each (a fleet of identical hosts reads and classifies each file once)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import remotedbg
from remotedbg.local_fork import map_forked
from remotedbg.remote.primitives import Remote

_PATH = "\x00path\x00"  # the file's path stands here in a stored result
_memory: dict[str, str] = {}
_lock = threading.Lock()
_analyser: str | None = None
_inflight: dict[str, threading.Event] = {}  # key -> set when the thread working on it is done
_forking = threading.Lock()  # held by the one prefill whose children run


def cache_dir() -> Path:
    given = os.environ.get("REMOTEDBG_CACHE_DIR")
    if given:
        return Path(given)
    import platformdirs

    return Path(platformdirs.user_cache_dir("remotedbg")) / "analysis"


def analyser_version() -> str:
    """sha256 of the code that decides a classification (analysis/ and engines/)."""
    global _analyser
    if _analyser is None:
        _analyser = code_digest(Path(remotedbg.__file__).parent, ("analysis", "engines"))
    return _analyser


def code_digest(package: Path, folders: tuple[str, ...]) -> str:
    """sha256 of every Python file below these folders of `package`, subpackages included,
    each with its path relative to the package."""
    digest = hashlib.sha256()
    for folder in folders:
        for source in sorted((package / folder).rglob("*.py")):
            name = source.relative_to(package).as_posix()
            digest.update(name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def _key(kind: str, text: str) -> str:
    digest = hashlib.sha256(f"{analyser_version()}\0{kind}\0".encode())
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _load(key: str) -> str | None:
    with _lock:
        if key in _memory:
            return _memory[key]
    raw = read_private(cache_dir() / key[:2] / f"{key}.json")
    try:
        stored = raw.decode("utf-8") if raw is not None else None
    except UnicodeDecodeError:
        stored = None
    if stored is None:
        return None
    with _lock:
        _memory[key] = stored
    return stored


def read_private(path: Path) -> bytes | None:
    """A cache file's bytes when only this user could have written them: the cache folder
    and the file are this user's and writable by no one else, and the file is no link. An
    entry another user planted (a shared $REMOTEDBG_CACHE_DIR, a folder made by someone else)
    is not read: it could turn a defect into OK (issue 46)."""
    if not _private_folder(cache_dir()):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


_private: dict[Path, bool] = {}


def _private_folder(folder: Path) -> bool:
    """The folder and those above it are this user's or root's and writable by no one else
    (a root-owned sticky folder such as /tmp may sit above it); a missing folder counts as
    private (it is made 0700). Checked once per process."""
    if folder not in _private:
        ok, current = True, folder
        while True:
            try:
                info = os.stat(current)
            except FileNotFoundError:
                current = current.parent
                continue
            except OSError:
                ok = False
                break
            others_write = info.st_mode & 0o022
            if info.st_uid == os.getuid() and not others_write:
                if current == Path.home() or current.parent == current:
                    break
                current = current.parent
                continue
            sticky = bool(info.st_mode & stat.S_ISVTX) and current != folder
            ok = info.st_uid == 0 and (not others_write or sticky)
            break  # root's from here up, or another user's
        _private[folder] = ok
    return _private[folder]


def _store(key: str, stored: str) -> None:
    with _lock:
        _memory[key] = stored
    _write(cache_dir() / key[:2] / f"{key}.json", stored.encode("utf-8"))


_made: set[Path] = set()  # cache folders this process made or found


def _write(path: Path, data: bytes) -> None:
    """Put `data` at `path` whole or not at all (a reader never sees half a file); a cache that
    cannot be written is skipped. A cold audit writes some 350 files: 350 writes through
    tempfile.mkstemp and a mkdir each take 0.20 s on ext4 here, these 0.04 s."""
    if not _private_folder(cache_dir()):
        return  # a folder others may write to: nothing kept there is read again either
    temp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    try:
        for again in (False, True):  # again: the cache was cleared while this process ran
            if again or path.parent not in _made:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                _made.add(path.parent)
            try:
                fd = os.open(temp, flags, 0o600)
                break
            except FileNotFoundError:
                if again:
                    raise
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(temp, path)
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass


def _claim(key: str) -> threading.Event | None:
    """None when this thread is now the one working on `key` (it must `_release` it), else the
    event of the thread that is."""
    with _lock:
        event = _inflight.get(key)
        if event is None:
            _inflight[key] = threading.Event()
        return event


def _release(key: str) -> None:
    with _lock:
        event = _inflight.pop(key, None)
    if event is not None:
        event.set()


def cached_by_content(
    kind: str, compute: Callable[[str, str], dict[str, Any]]
) -> Callable[[str, str], dict[str, Any]]:
    """`compute(text, path)` whose result depends on the path only by naming it."""

    def run(text: str, path: str) -> dict[str, Any]:
        key = _key(kind, text)
        while (stored := _load(key)) is None:
            other = _claim(key)
            if other is not None:
                other.wait()  # then its answer is kept, or it failed and this thread tries
                continue
            try:
                if (stored := _load(key)) is None:  # kept between the load and the claim
                    stored = json.dumps(compute(text, _PATH))
                    _store(key, stored)
            finally:
                _release(key)
        return json.loads(stored.replace(json.dumps(_PATH)[1:-1], json.dumps(path)[1:-1]))

    def stored_or_blank(text: str) -> str:
        try:
            return json.dumps(compute(text, _PATH))
        except Exception:  # noqa: BLE001 - left for run(), which raises it where it always did
            return ""

    def prefill(texts: list[str]) -> None:
        """Compute the results not kept yet for all of `texts` at once, on the client's cores
        (remotedbg.local_fork); `run` then finds them. Texts another thread is working on are
        left to it; while another prefill forks, `run` computes them as before."""
        claimed: dict[str, str] = {}
        try:
            for text in texts:
                key = _key(kind, text)
                if key not in claimed and _load(key) is None and _claim(key) is None:
                    claimed[key] = text
            if len(claimed) < 2 or not _forking.acquire(blocking=False):
                return
            try:
                results = map_forked(stored_or_blank, list(claimed.values()))
            finally:
                _forking.release()
            for key, stored in zip(claimed, results, strict=True):
                if stored:
                    _store(key, stored)
        finally:
            for key in claimed:
                _release(key)

    run.prefill = prefill  # type: ignore[attr-defined]
    return run


SOURCE_CAP = 2 << 20
READ_BYTES = 4 << 20  # of sources per round trip: well inside an agent answer's 8 MiB


def _source_path(sha: str) -> Path:
    return cache_dir() / "sources" / sha[:2] / f"{sha}.py"  # bytes as the box has them


def kept_source(sha: str, errors: str = "replace") -> str | None:
    """The text of a file with this sha256, when one was kept: decoded as the engine scan
    decodes it, or with `errors="surrogateescape"` as read_text does (kept_read)."""
    key = f"source:{sha}" if errors == "replace" else f"source:{errors}:{sha}"
    with _lock:
        if key in _memory:
            return _memory[key]
    try:
        raw = _source_path(sha).read_bytes()
    except OSError:
        return None
    if hashlib.sha256(raw).hexdigest() != sha:
        return None  # damaged: read again from the box
    text = raw.decode("utf-8", errors)
    with _lock:
        _memory[key] = text
    return text


def keep_source(raw: bytes) -> str:
    """Keep a file's bytes by their sha256; its text as the engine scan decodes it."""
    sha = hashlib.sha256(raw).hexdigest()
    text = raw.decode("utf-8", "replace")
    with _lock:
        _memory[f"source:{sha}"] = text
    _write(_source_path(sha), raw)
    return text


def remembered(kind: str, key: str) -> Any:
    """What `remember(kind, key, value)` kept (None: nothing), by this analyser version."""
    stored = _load(_key(kind, key))
    return None if stored is None else json.loads(stored)


def remember(kind: str, key: str, value: Any) -> None:
    _store(_key(kind, key), json.dumps(value))


def _last_read_file(path: str) -> Path:
    key = hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()
    return cache_dir() / "last-read" / key[:2] / key


def last_read(path: str) -> str | None:
    """The sha256 of the bytes last read at `path` (on any host) whose text is still kept:
    what `read_text(known=...)` offers, so an unchanged file is answered without its text."""
    with _lock:
        sha = _memory.get(f"last-read:{path}")
    if sha is None:
        raw = read_private(_last_read_file(path))
        try:
            sha = raw.decode("ascii").strip() if raw is not None else None
        except UnicodeDecodeError:
            sha = None
        if sha is None:
            return None
    return sha if len(sha) == 64 and kept_read(sha) is not None else None


def kept_read(sha: str) -> str | None:
    """The text (decoded as read_text decodes it) of bytes kept with this sha256."""
    return kept_source(sha, "surrogateescape")


def keep_read(path: str, text: str) -> None:
    """Keep a text read whole at `path` (its bytes by sha256, as keep_source) and remember
    that `path` held it."""
    raw = text.encode("utf-8", "surrogateescape")
    sha = hashlib.sha256(raw).hexdigest()
    with _lock:
        key = f"source:surrogateescape:{sha}"
        known = _memory.get(f"last-read:{path}") == sha and key in _memory
        _memory[key] = text
        _memory[f"last-read:{path}"] = sha
    if known:
        return
    keep_source(raw)
    _write(_last_read_file(path), sha.encode("ascii"))


def fill_sources(remote: Remote, installs: list[dict]) -> dict[str, int]:
    """Put the text of every file an engine scan answered by sha256 (`hashes_first`) into its
    entry: from the kept sources, else read from the box (one path per content, in round
    trips of at most READ_BYTES) and kept. A file that changed between the scan and the read
    is taken as read. Returns counts."""
    wanted: dict[str, tuple[str, int, list[dict]]] = {}  # sha -> (a path, size, entries)
    claimed: list[str] = []
    try:
        kept, read = _fill_from(remote, installs, wanted, claimed)
    finally:
        _release_all(claimed)
    return {"kept": kept, "read": read}


def _release_all(claimed: list[str]) -> None:
    for sha in claimed:
        _release(f"source:{sha}")
    claimed.clear()


def _fill_from(
    remote: Remote,
    installs: list[dict],
    wanted: dict[str, tuple[str, int, list[dict]]],
    claimed: list[str],
) -> tuple[int, int]:
    """fill_sources' work: the files another thread is reading are waited for after this one's
    own reads (its claims released first, so two threads never wait on each other), and read
    here only if that thread did not keep them. Returns (kept, read here)."""
    kept = 0
    others: dict[str, threading.Event] = {}
    for install in installs:
        base = install["path"].rstrip("/")
        files = [(base, f) for f in list(install.get("draft_files") or [])
                 + [install.get("registry") or {}]]  # fmt: skip
        files += [(p["site"].rstrip("/"), f) for p in install.get("plugins") or []
                  for f in p.get("files") or []]  # fmt: skip
        for base, entry in files:
            sha = entry.get("sha256")
            if not sha or entry.get("source") is not None:
                continue
            text = kept_source(sha)
            if text is not None:
                entry["source"] = text
                kept += 1
                continue
            if sha not in wanted and sha not in claimed and sha not in others:
                other = _claim(f"source:{sha}")
                if other is not None:
                    others[sha] = other
                elif (text := kept_source(sha)) is not None:  # kept since the look above
                    _release(f"source:{sha}")
                    entry["source"] = text
                    kept += 1
                    continue
                else:
                    claimed.append(sha)
            path = f"{base}/{entry['path']}"
            wanted.setdefault(sha, (path, int(entry.get("size") or 0), []))[2].append(entry)
    read = _read_into(remote, {sha: w for sha, w in wanted.items() if sha not in others})
    _release_all(claimed)
    rest = {}
    for sha, event in others.items():
        event.wait()
        text = kept_source(sha)
        if text is None:
            rest[sha] = wanted[sha]
            continue
        for entry in wanted[sha][2]:
            entry["source"] = text
    return kept + len(others) - len(rest), read + _read_into(remote, rest)


def _read_into(remote: Remote, wanted: dict[str, tuple[str, int, list[dict]]]) -> int:
    """Read each wanted content from the box once (one of its paths), keep it, fill its entries;
    returns how many contents were asked for."""
    batches: list[list[str]] = [[]]
    budget = 0
    # a batch keeps to one route: a container read through its runtime's exec, or the host
    for path, size, _ in sorted(wanted.values(), key=lambda w: remote.route_of(w[0])):
        if batches[-1] and (
            budget + size > READ_BYTES or remote.route_of(batches[-1][0]) != remote.route_of(path)
        ):
            batches.append([])
            budget = 0
        batches[-1].append(path)
        budget += size
    by_path = {path: entries for path, _, entries in wanted.values()}
    for batch in batches if wanted else []:
        for answer in remote.read_text(batch, SOURCE_CAP):
            if "text" not in answer or answer.get("truncated"):
                continue
            text = keep_source(answer["text"].encode("utf-8", "surrogateescape"))
            for entry in by_path.get(answer.get("pattern") or answer.get("path"), []):
                entry["source"] = text
    return len(wanted)
