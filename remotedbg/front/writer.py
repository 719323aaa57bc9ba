"""The one writer of the front end: a command hands it its result and the writer chooses how it
shows (httpie's single writer is the model): the --json document on stdout, else the terminal
rendering; and a Markdown report into the file `--report` names. No command prints its own
document: `run`, `cat` and `grep` stream their bytes as they come and hand the writer only what
--json holds.

A result implements remotedbg.contract.Result (`__rich_console__`, `to_json`, `to_markdown`). A
listing that must reach a pipe byte for byte (names from the box, as `ls` prints them) is a
`Document` whose terminal side writes those bytes itself."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment
from rich.text import Text

from remotedbg.contract import Result
from remotedbg.front.environment import environment
from remotedbg.front.output import emit_json


def write(result: Result, report: Path | None = None) -> None:
    """Show `result` as this command line asked (--json or the terminal); with `report`, also
    its Markdown into that file."""
    env = environment()
    if env.json:
        emit_json(result.to_json())
    elif isinstance(result, Document):
        result.show()
    else:
        env.stdout.print(result)
    if report is not None:
        from remotedbg.local_files import write_text

        write_text(report, result.to_markdown())


@dataclass
class Document:
    """A result that is its JSON document, shown in a terminal by `terminal` (nothing when
    None: the command streamed its output already, or has only the document to give)."""

    value: Any
    terminal: Callable[[], None] | None = None
    markdown: str = ""

    def to_json(self) -> Any:
        return self.value

    def to_markdown(self) -> str:
        return self.markdown

    def show(self) -> None:
        if self.terminal is not None:
            self.terminal()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Nothing: a document's terminal side writes bytes, through `write` only."""
        return iter(())


# What a result's __rich_console__ yields, each as its own `console.print` of it would show.


def plain(console: Console, text: str, style: str | None = None) -> Text:
    """`text` as `console.print(text, markup=False)` shows it."""
    return console.render_str(text, markup=False, highlight=False, style=style or "")


def marked(console: Console, text: str) -> Text:
    """`text` with rich markup, as `console.print(text)` shows it."""
    return console.render_str(text, highlight=False)


def styled(
    console: Console, options: ConsoleOptions, renderable: RenderableType, style: str
) -> Iterator[Segment]:
    """`renderable` as `console.print(renderable, style=style)` shows it."""
    return Segment.apply_style(console.render(renderable, options), console.get_style(style))


def uncut(console: Console, options: ConsoleOptions, table: Any) -> Iterator[Segment]:
    """A table as SafeConsole.print shows it into a pipe or file: no column cut."""
    measure = getattr(console, "uncut_width", None)
    width = measure(table) if measure and not console.is_terminal else 0
    if width > options.max_width:
        options = options.update_width(width)
    return console.render(table, options)
