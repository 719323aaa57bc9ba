"""Output helpers shared by the front ends: JSON on stdout, people-facing text via rich."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

# C0 and C1 control characters and DEL: what a terminal acts on instead of showing
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LAYOUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\e"}


def _escape_char(match: re.Match) -> str:
    char = match.group(0)
    return _NAMED.get(char, f"\\x{ord(char):02x}")


def printable(text: str) -> str:
    """A name from the box, safe for a terminal on one line: undecodable bytes (carried as
    surrogates) and control characters (ESC sequences that retitle or clear the terminal, a
    newline that forges a table row) are shown escaped, as GNU ls does."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _CONTROL.sub(_escape_char, text)


class SafeConsole(Console):
    """A rich console that never passes control characters through from the strings it is
    given (its own styling is added after): every remote-sourced string is covered, whatever
    the print site. Newlines and tabs of multi-line text stay."""

    def render_str(self, text: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return super().render_str(_CONTROL_BUT_LAYOUT.sub(_escape_char, text), *args, **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Into a pipe or file a table is never cut to the terminal's width (`mo…`): each
        column is at least as wide as its longest word (its longest cell, when it does not
        wrap), and the console widened to that when it is narrower. Text still wraps at words;
        on a terminal, rich fits the table to the screen."""
        module = sys.modules.get("rich.table")  # not imported: no table to print (and no cost)
        tables = [o for o in objects if module and isinstance(o, module.Table)]
        if not tables or self.is_terminal:
            return super().print(*objects, **kwargs)
        widest = max(self._uncut(table) for table in tables)
        if widest <= self.width:
            return super().print(*objects, **kwargs)
        before = self.width
        self.width = widest
        try:
            super().print(*objects, **kwargs)
        finally:
            self.width = before

    def _uncut(self, table: Any) -> int:
        """Give each column of `table` a minimum width that nothing of it is cut at (its
        longest cell when it does not wrap, else its longest word); the width the table then
        needs. A column that folds (`overflow="fold"`, wrapping) loses nothing and may fold."""
        from copy import copy

        from rich.measure import Measurement

        unbounded = self.options.update_width(_UNBOUNDED)
        kept = [c for c in table.columns if c.no_wrap or c.overflow != "fold"]
        for column in kept:
            sizes = [Measurement.get(self, unbounded, c) for c in (column.header, *column.cells)]
            need = max(size.maximum if column.no_wrap else size.minimum for size in sizes)
            column.min_width = max(column.min_width or 0, need)
        probe = copy(table)
        probe.columns = kept
        folding = len(table.columns) - len(kept)
        return Measurement.get(self, unbounded, probe).minimum + folding * _FOLD_ROOM


_FOLD_ROOM = 12  # columns a folding column is given, at least, beside the others
_UNBOUNDED = 1 << 20  # columns: wider than any table a command prints


_CONSOLE_ARGS = ({"highlight": False, "soft_wrap": True},
                 {"stderr": True, "highlight": False, "soft_wrap": True})  # fmt: skip
stdout_console = SafeConsole(**_CONSOLE_ARGS[0])
stderr_console = SafeConsole(**_CONSOLE_ARGS[1])


def refresh_consoles() -> None:
    """Decide colour, width and terminal again, from the current sys.stdout/sys.stderr and
    environment (rich decides them once, when a console is made): a persistent-session daemon
    serves each command for a different terminal. The objects stay the ones every module
    imported."""
    for console, args in zip((stdout_console, stderr_console), _CONSOLE_ARGS, strict=True):
        Console.__init__(console, **args)


def write_raw(text: str) -> None:
    """Write text to stdout: byte-exact into a pipe or file (undecodable names come out as the
    original bytes); on a terminal with its control characters escaped."""
    if sys.stdout.isatty():
        text = "\n".join(printable(line) for line in text.split("\n"))
    sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
    sys.stdout.buffer.flush()


def emit_json(value: Any) -> None:
    """The one JSON document of a command; a document (a dict) says which remotedbg made it."""
    if isinstance(value, dict) and "remotedbg_version" not in value:
        from remotedbg import __version__

        value = {**value, "remotedbg_version": __version__}
    sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")
    sys.stdout.flush()


#: The words of the command line being run, as the user typed them (a persistent-session
#: daemon runs its clients' lines: its own argv is not what was typed). Set by run_words.
command_words: list[str] | None = None


def typed_option(*names: str) -> bool:
    """Whether the user typed one of these options on the command line (not a default from
    the config file or a variable): a default host must not join a --hosts-file fleet. Words
    after `--` are the remote command's, not ours."""
    words = command_words or []
    ours = words[: words.index("--")] if "--" in words else words
    for word in ours:
        for name in names:
            attached = len(name) == 2 and word.startswith(name) and word != name
            if word == name or word.startswith(name + "=") or attached:
                return True
    return False


#: `remotedbg -q`: notes (what was written, where output stopped, progress) are left out;
#: errors, and the reasons for a nonzero exit status, still show.
quiet = False


TRANSFER_PROGRESS_THRESHOLD = 8 << 20  # smaller transfers finish before a bar would help


def transfer_progress(total: int, wanted: bool = True) -> Any:
    """A byte-transfer bar on stderr (rich Progress), or None: for small transfers, under -q,
    with --json (`wanted` False) or when stderr is not a terminal."""
    if not wanted or quiet or total < TRANSFER_PROGRESS_THRESHOLD:
        return None
    if not stderr_console.is_terminal:
        return None
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=stderr_console,
        transient=True,
    )


def note(message: str) -> None:
    """An informational line on stderr, unless -q."""
    if not quiet:
        stderr_console.print(message, markup=False, highlight=False)


def error_line(message: str) -> None:
    stderr_console.print(
        f"[bold red]remotedbg:[/] {escape(printable(message))}",
        markup=True,
        highlight=False,
        emoji=False,
    )
