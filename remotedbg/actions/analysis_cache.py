"""Classification results of engine source files, cached by content: a file identical in two
installs, on two hosts of a fleet, or unchanged since the last run is analysed once. Kept in
memory for the process and on disk in the user's cache dir (`$REMOTEDBG_CACHE_DIR`, else
platformdirs' cache dir for remotedbg), keyed by the sha256 of the analyser's own code and the
file's text, so a new remotedbg never reads an old answer. A cache that cannot be read or
written is skipped, never an error."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import remotedbg

_PATH = "\x00path\x00"  # the file's path stands here in a stored result
_memory: dict[str, str] = {}
_lock = threading.Lock()
_analyser: str | None = None


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
        digest = hashlib.sha256()
        package = Path(remotedbg.__file__).parent
        for folder in ("analysis", "engines"):
            for source in sorted((package / folder).glob("*.py")):
                digest.update(source.name.encode() + b"\0" + source.read_bytes())
        _analyser = digest.hexdigest()
    return _analyser


def _key(kind: str, text: str) -> str:
    digest = hashlib.sha256(f"{analyser_version()}\0{kind}\0".encode())
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _load(key: str) -> str | None:
    with _lock:
        if key in _memory:
            return _memory[key]
    try:
        stored = (cache_dir() / key[:2] / f"{key}.json").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    with _lock:
        _memory[key] = stored
    return stored


def _store(key: str, stored: str) -> None:
    with _lock:
        _memory[key] = stored
    folder = cache_dir() / key[:2]
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temp = tempfile.mkstemp(dir=folder, suffix=".part")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(stored)
        os.replace(temp, folder / f"{key}.json")
    except OSError:
        pass


def cached_by_content(
    kind: str, compute: Callable[[str, str], dict[str, Any]]
) -> Callable[[str, str], dict[str, Any]]:
    """`compute(text, path)` whose result depends on the path only by naming it."""

    def run(text: str, path: str) -> dict[str, Any]:
        key = _key(kind, text)
        stored = _load(key)
        if stored is None:
            result = compute(text, _PATH)
            stored = json.dumps(result)
            _store(key, stored)
        return json.loads(stored.replace(json.dumps(_PATH)[1:-1], json.dumps(path)[1:-1]))

    return run
