"""Output helpers shared by the front ends: JSON on stdout, people-facing text via rich (a
command line's consoles are its environment's: front/environment.py)."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from rich.console import Console

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


def one_line(name: str) -> str:
    """A name for a line-per-name listing: control characters escaped (`\\n`: a newline in a
    name is not two entries), undecodable bytes left as they are (the name's own bytes)."""
    return _CONTROL.sub(_escape_char, name)


def md_inline(value: object) -> str:
    """Text for one line of a Markdown report: what `printable` shows (a newline from the box
    cannot start a forged `# Verdict` heading or a table row), with table pipes escaped and
    backticks turned to quotes (a name cannot close the code span it sits in)."""
    return printable(str(value)).replace("|", "\\|").replace("`", "'")


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

    def uncut_width(self, table: Any) -> int:
        """The width `table` needs for no column to be cut (see print)."""
        return self._uncut(table)

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
