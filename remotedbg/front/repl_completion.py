"""Tab completion for the REPL: remote paths, `:` commands and their options, playbook names.

Remote directory listings go through the REPL's session in a background thread, are cached for a
few seconds, and are waited for only up to a deadline, so a slow host never freezes typing: a
listing that arrives late is used by the next Tab.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

LIST_TTL = 5.0  # seconds a directory listing stays fresh
LIST_DEADLINE = 0.8  # seconds a Tab waits for a listing before giving up (it keeps arriving)
LIST_TIMEOUT = 5.0  # seconds the remote listing itself may take

# Lists a directory on the host, NUL-separated, directories with a trailing '/'. POSIX sh only.
LIST_SCRIPT = (
    'cd -- "$1" 2>/dev/null || exit 1; '
    'for f in * .[!.]* ..?*; do [ -e "$f" ] || [ -L "$f" ] || continue; '
    'if [ -d "$f" ]; then printf \'%s/\\0\' "$f"; else printf \'%s\\0\' "$f"; fi; done'
)


def list_command(directory: str) -> str:
    return f"sh -c {shlex.quote(LIST_SCRIPT)} sh {shlex.quote(directory)}"


class RemoteLister:
    """Directory listings from the host: cached, fetched in the background, waited for briefly.

    `fetch(directory)` returns the entry names (directories end in '/') or None when the
    directory cannot be listed; it runs in a worker thread.
    """

    def __init__(
        self,
        fetch: Callable[[str], list[str] | None],
        ttl: float = LIST_TTL,
        deadline: float = LIST_DEADLINE,
    ) -> None:
        self._fetch = fetch
        self.ttl = ttl
        self.deadline = deadline
        self._cache: dict[str, tuple[float, list[str] | None]] = {}
        self._pending: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self.fetches = 0

    def invalidate(self) -> None:
        with self._lock:
            self._cache.clear()

    def _fresh(self, directory: str) -> tuple[float, list[str] | None] | None:
        """The cached listing if younger than the ttl; call with the lock held."""
        hit = self._cache.get(directory)
        return hit if hit and time.monotonic() - hit[0] < self.ttl else None

    def cached(self, directory: str) -> list[str] | None:
        with self._lock:
            hit = self._fresh(directory)
        return hit[1] if hit else None

    def idle(self) -> bool:
        """No listing is being fetched."""
        with self._lock:
            return not self._pending

    def list(self, directory: str, wait: float | None = None) -> list[str] | None:
        """The entries of `directory`, or None when not known within the deadline."""
        with self._lock:
            hit = self._fresh(directory)
            if hit:
                return hit[1]
            done = self._pending.get(directory)
            if done is None:
                done = threading.Event()
                self._pending[directory] = done
                worker = threading.Thread(
                    target=self._work, args=(directory, done), daemon=True, name="repl-ls"
                )
                worker.start()
        done.wait(self.deadline if wait is None else wait)
        with self._lock:
            hit = self._cache.get(directory)
        return hit[1] if hit else None

    def _work(self, directory: str, done: threading.Event) -> None:
        try:
            self.fetches += 1
            entries = self._fetch(directory)
        except Exception:  # noqa: BLE001 - a failed listing only means no completions
            entries = None
        with self._lock:
            self._cache[directory] = (time.monotonic(), entries)
            self._pending.pop(directory, None)
        done.set()


def parse_listing(data: bytes) -> list[str]:
    names = data.decode("utf-8", "surrogateescape").split("\0")
    return sorted(name for name in names if name and name not in ("./", "../"))


# -- the words of an unfinished line --------------------------------------------------------


@dataclass
class Word:
    start: int  # index in the line where the word starts (its quotes included)
    value: str  # the word with quotes and backslashes removed


def split_words(text: str) -> tuple[list[Word], bool]:
    """Shell words of an unfinished line, and whether the cursor starts a new (empty) word."""
    words: list[Word] = []
    current: str | None = None
    start = 0
    quote: str | None = None
    i = 0
    while i < len(text):
        char = text[i]
        if quote == "'":
            if char == "'":
                quote = None
            else:
                current = (current or "") + char
        elif quote == '"':
            if char == '"':
                quote = None
            elif char == "\\" and i + 1 < len(text) and text[i + 1] in '"\\$`':
                i += 1
                current = (current or "") + text[i]
            else:
                current = (current or "") + char
        elif char.isspace():
            if current is not None:
                words.append(Word(start, current))
                current = None
        else:
            if current is None:
                current, start = "", i
            if char in "'\"":
                quote = char
            elif char == "\\" and i + 1 < len(text):
                i += 1
                current += text[i]
            else:
                current += char
        i += 1
    if current is not None:
        words.append(Word(start, current))
        return words, False
    return words, True


def quote_path(path: str) -> str:
    """Quote a completed path for the shell, keeping a leading `~/` expandable."""
    prefix = ""
    if path == "~" or path.startswith("~/"):
        prefix, path = "~", path[1:]
    if not path:
        return prefix
    return prefix + (path if shlex.quote(path) == path else shlex.quote(path))


# -- what can follow a ':' -------------------------------------------------------------------


@dataclass
class CommandSpec:
    name: str
    help: str = ""
    options: list[str] = field(default_factory=list)
    subcommands: dict[str, CommandSpec] = field(default_factory=dict)


class ReplCompleter(Completer):
    """Completes `:` commands, their options and subcommands, playbook names and remote paths."""

    def __init__(
        self,
        commands: dict[str, CommandSpec],
        lister: RemoteLister,
        cwd: Callable[[], str],
        home: Callable[[], str],
        playbooks: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        self.commands = commands
        self.lister = lister
        self.cwd = cwd
        self.home = home
        self.playbooks = playbooks

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        text = document.text_before_cursor
        words, fresh = split_words(text)
        current = Word(len(text), "") if fresh else words.pop()
        replace = len(text) - current.start
        if text.lstrip().startswith(":"):
            yield from self._colon(words, current, replace)
        elif not words:
            if "/" in current.value:  # ./script.sh, /opt/x/bin/tool
                yield from self._paths(current.value, replace, dirs_only=False)
        else:
            dirs_only = words[0].value in ("cd", "pushd")
            yield from self._paths(current.value, replace, dirs_only)

    # -- ':' commands ----------------------------------------------------------------------
    def _colon(self, words: list[Word], current: Word, replace: int) -> Iterator[Completion]:
        if not words:  # the command name itself
            typed = current.value.lstrip(":")
            for name in sorted(self.commands):
                if name.startswith(typed):
                    yield Completion(
                        ":" + name,
                        -replace,
                        display=":" + name,
                        display_meta=self.commands[name].help,
                    )
            return
        spec = self.commands.get(words[0].value.lstrip(":"))
        if spec is None:
            return
        if spec.name == "help" and len(words) == 1:
            yield from self._words(sorted(self.commands), current.value, replace)
            return
        if spec.subcommands:
            if len(words) == 1 and not current.value.startswith("-"):
                yield from self._words(sorted(spec.subcommands), current.value, replace)
                if spec.name == "playbook":
                    yield from self._words(self._playbook_names(), current.value, replace)
                return
            sub = spec.subcommands.get(words[1].value) if len(words) > 1 else None
            if sub is not None:
                spec = sub
        if current.value.startswith("-"):
            yield from self._words(spec.options, current.value, replace)
            return
        if spec.name in ("playbook", "show") and self._is_playbook(words):
            if len(words) <= 2:
                yield from self._words(self._playbook_names(), current.value, replace)
            return
        if spec.name in ("help", "quit", "exit", "history"):
            return
        yield from self._paths(current.value, replace, dirs_only=False)

    def _is_playbook(self, words: list[Word]) -> bool:
        return bool(words) and words[0].value.lstrip(":") == "playbook"

    def _playbook_names(self) -> list[str]:
        if self.playbooks is None:
            return []
        try:
            return sorted(self.playbooks())
        except Exception:  # noqa: BLE001 - a broken playbook dir must not break typing
            return []

    @staticmethod
    def _words(choices: Iterable[str], typed: str, replace: int) -> Iterator[Completion]:
        for choice in choices:
            if choice.startswith(typed):
                yield Completion(choice, -replace)

    # -- remote paths ----------------------------------------------------------------------
    def _directory_of(self, typed: str) -> tuple[str, str, str]:
        """(directory to list on the host, the typed directory part, the basename prefix)."""
        head, _, prefix = typed.rpartition("/")
        typed_dir = head + "/" if "/" in typed else ""
        if typed == "~":
            return self.home(), "~/", ""
        if typed_dir.startswith("/"):
            where = typed_dir
        elif typed_dir == "~/" or typed_dir.startswith("~/"):
            where = self.home().rstrip("/") + "/" + typed_dir[2:]
        elif typed_dir.startswith("~"):
            return "", typed_dir, prefix  # ~user: not supported
        else:
            where = self.cwd().rstrip("/") + "/" + typed_dir
        return where, typed_dir, prefix

    def _paths(self, typed: str, replace: int, dirs_only: bool) -> Iterator[Completion]:
        if "$" in typed or "*" in typed:
            return  # the remote shell expands these; guessing would mislead
        where, typed_dir, prefix = self._directory_of(typed)
        if not where:
            return
        entries = self.lister.list(where)
        for entry in entries or []:
            if not entry.startswith(prefix):
                continue
            if entry.startswith(".") and not prefix.startswith("."):
                continue
            if dirs_only and not entry.endswith("/"):
                continue
            yield Completion(quote_path(typed_dir + entry), -replace, display=entry)
