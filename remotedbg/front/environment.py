"""The environment a command line runs in: its two consoles, `-q`, `--json` and the words the
user typed. One is made for each command line (`run_words`: a persistent-session daemon serves
each client's line with that client's terminal, so the consoles are made again from the
sys.stdout and sys.stderr of that moment) and looked up here, in one place, by what prints."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.markup import escape

from remotedbg.front.output import SafeConsole, printable

TRANSFER_PROGRESS_THRESHOLD = 8 << 20  # smaller transfers finish before a bar would help


def _stdout_console() -> SafeConsole:
    return SafeConsole(highlight=False, soft_wrap=True)


def _stderr_console() -> SafeConsole:
    return SafeConsole(stderr=True, highlight=False, soft_wrap=True)


@dataclass
class Environment:
    # rich decides colour, width and whether it writes to a terminal once, when a console is made
    stdout: SafeConsole = field(default_factory=_stdout_console)
    stderr: SafeConsole = field(default_factory=_stderr_console)
    #: the command line's words as the user typed them (a daemon's own argv is not what its
    #: client typed); None outside a command line (the tests, the benches)
    words: list[str] | None = None
    #: `remotedbg -q`: notes (what was written, where output stopped, progress) are left out;
    #: errors, and the reasons for a nonzero exit status, still show
    quiet: bool = False
    #: `--json`: one JSON document on stdout and nothing else there
    json: bool = False

    def typed_option(self, *names: str) -> bool:
        """Whether the user typed one of these options on the command line (not a default from
        the config file or a variable): a default host must not join a --hosts-file fleet.
        Words after `--` are the remote command's, not ours."""
        words = self.words or []
        ours = words[: words.index("--")] if "--" in words else words
        for word in ours:
            for name in names:
                attached = len(name) == 2 and word.startswith(name) and word != name
                if word == name or word.startswith(name + "=") or attached:
                    return True
        return False

    def typed_before(self, first: tuple[str, ...], then: tuple[str, ...]) -> bool:
        """Whether an option of `first` was typed before any of `then` (ssh takes the first
        value it obtains: `-H user@host -l other` is `user`); False when `first` was not
        typed (a default host's user@ gives way to a typed -l)."""
        words = self.words or []
        ours = words[: words.index("--")] if "--" in words else words

        def at(names: tuple[str, ...]) -> int:
            for index, word in enumerate(ours):
                for name in names:
                    attached = len(name) == 2 and word.startswith(name) and word != name
                    if word == name or word.startswith(name + "=") or attached:
                        return index
            return len(ours)

        return at(first) < at(then)

    def note(self, message: str) -> None:
        """An informational line on stderr, unless -q."""
        if not self.quiet:
            self.stderr.print(message, markup=False, highlight=False)

    def error_line(self, message: str) -> None:
        self.stderr.print(
            f"[bold red]remotedbg:[/] {escape(printable(message))}",
            markup=True,
            highlight=False,
            emoji=False,
        )

    def transfer_progress(self, total: int) -> Any:
        """A byte-transfer bar on stderr (rich Progress), or None: for small transfers, under
        -q, with --json or when stderr is not a terminal."""
        if self.json or self.quiet or total < TRANSFER_PROGRESS_THRESHOLD:
            return None
        if not self.stderr.is_terminal:
            return None
        from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

        return Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=self.stderr,
            transient=True,
        )


# The running command line's environment. A plain slot, not a ContextVar: a fleet's worker
# threads print notes for the command that started them, and a new thread starts with an empty
# context. One command line runs at a time in a process (the daemon serves them in turn).
_current: Environment | None = None


def environment() -> Environment:
    """The running command line's environment (outside one, this process's own)."""
    global _current
    if _current is None:
        _current = Environment()
    return _current


@contextmanager
def entered(env: Environment) -> Iterator[Environment]:
    """`env` is the environment while the block runs; the one before it after."""
    global _current
    before, _current = _current, env
    try:
        yield env
    finally:
        _current = before


def note(message: str) -> None:
    environment().note(message)


def error_line(message: str) -> None:
    environment().error_line(message)


def stdout_console() -> SafeConsole:
    return environment().stdout


def stderr_console() -> SafeConsole:
    return environment().stderr
