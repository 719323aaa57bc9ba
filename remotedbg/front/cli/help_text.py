"""Help pages that name values by what they are (HOST, PATH, SECONDS, N) instead of by their
Python type (<str>, <list[str]>, <bool>), which is what typer prints by default."""

from __future__ import annotations

import copy
import inspect
import re
from typing import Any

from typer.core import TyperArgument, TyperOption

#: Parameter names whose values are files or directories on one side of the wire or the other.
PATH_NAMES = {"ssh_config", "identity", "output", "python", "hosts_file", "prompts", "target"}


def value_name(name: str, annotation: Any, many: bool) -> str:
    """What a parameter's value is, in capitals, from its name and annotation."""
    name = name.lower()
    if "timeout" in name:
        return "SECONDS"
    if name in ("port", "identity"):
        return {"port": "PORT", "identity": "KEY"}[name]
    if annotation in (int, float, int | None, float | None):
        return "N"
    if name in PATH_NAMES or "path" in name or "dir" in name:
        return "PATH"
    return name.upper()[:-1] if many and name.endswith("s") else name.upper()


def _annotation(param: Any) -> Any:
    """The parameter's Python type: typer 0.29 keeps it (`type_descriptor`); before, only its
    click type says whether the value is a number."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:
        return descriptor.annotation
    number = type(param.type).__name__
    return {"IntParamType": int, "IntRange": int, "FloatParamType": float,
            "FloatRange": float}.get(number, str)  # fmt: skip


def _no_type_column(argument: TyperArgument) -> None:
    """Instance attributes: typer has no setting for the type column of argument rows. 0.29
    asks `display_type_rich`; before, the click type's `get_metavar` (a copy of the type, so
    the types other parameters share keep theirs; parsing uses it unchanged)."""
    argument.display_type_rich = lambda ctx: None  # type: ignore[attr-defined]
    own = copy.copy(argument.type)
    own.get_metavar = lambda *args, **kwargs: ""  # type: ignore[method-assign]
    argument.type = own


def name_values(command: Any) -> None:
    """Give every parameter of the command tree a value name where it has none; flags get none
    at all. Arguments show their name only: typer's type column beside it says nothing new."""
    for param in command.params:
        if isinstance(param, TyperOption) and (param.is_flag or param.count):
            param.metavar = ""
        elif isinstance(param, (TyperOption, TyperArgument)) and param.metavar is None:
            many = param.nargs != 1 or bool(getattr(param, "multiple", False))
            param.metavar = value_name(param.name or "value", _annotation(param), many)
        if isinstance(param, TyperArgument):
            _no_type_column(param)
    help_option = command.get_help_option

    def flag_help_option(ctx: Any) -> Any:
        option = help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = flag_help_option
    for sub in getattr(command, "commands", {}).values():
        name_values(sub)


CONNECTION_PANEL = "Connection"
_SENTENCE_END = re.compile(r"[.?!](?=\s+[A-Z(`]|\s*$)")
POINTER = "remotedbg help connection"


def first_sentence(text: str, limit: int = 90) -> str:
    """A command's line in a listing: its first sentence, or, when that is long, its head up
    to the first ': ' or '; ' outside brackets and backquotes."""
    text = " ".join(text.split())
    end = _SENTENCE_END.search(text)
    sentence = text[: end.end()] if end else text
    if len(sentence) <= limit:
        return sentence
    depth, quoted = 0, False
    for index, char in enumerate(sentence):
        if char == "`":
            quoted = not quoted
        elif not quoted and char in "([{":
            depth += 1
        elif not quoted and char in ")]}":
            depth -= 1
        elif not quoted and depth == 0 and sentence[index : index + 2] in (": ", "; "):
            return sentence[:index]
    return sentence


def _is_example(paragraph: str) -> bool:
    return paragraph.lstrip("\b\n").startswith(("Example", "remotedbg "))


def connection_line(options: list[Any]) -> str:
    """The one line a command's help gives its connection options (all: help connection)."""
    shown = []
    for option in options:
        flag = min((o for o in option.opts if o.startswith("-")), key=len)
        if option.name in ("host", "user", "port", "identity"):
            shown.append(f"{flag} {option.metavar}" if option.metavar else flag)
    return f"Connection: {' '.join(shown)} ... (every option and variable: {POINTER})"


def tidy(command: Any) -> None:
    """Short help pages: a command's examples first, its prose as paragraphs that the
    terminal wraps (never broken where the source line ended), its connection options
    hidden behind one line that names `remotedbg help connection`, and a one-sentence line
    in its group's listing. Run after name_values (the line shows the value names)."""
    text = inspect.cleandoc(command.help or "")
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    examples = ["\b\n" + p if "\n" in p else p for p in paragraphs if _is_example(p)]
    prose = [" ".join(p.split()) for p in paragraphs if not _is_example(p)]
    panel = [
        p for p in command.params
        if isinstance(p, TyperOption) and p.rich_help_panel == CONNECTION_PANEL
    ]  # fmt: skip
    if panel:
        _hide_in_help(command, panel)
    if prose and not command.short_help:
        command.short_help = first_sentence(prose[0])
    command.help = "\n\n".join(examples + prose + ([connection_line(panel)] if panel else []))
    for sub in getattr(command, "commands", {}).values():
        tidy(sub)


def _hide_in_help(command: Any, options: list[Any]) -> None:
    """Leave `options` out of the command's help page only: shell completion still offers
    them (click completes no hidden option)."""
    original = command.format_help

    def format_help(ctx: Any, formatter: Any) -> Any:
        for option in options:
            option.hidden = True
        try:
            return original(ctx, formatter)
        finally:
            for option in options:
                option.hidden = False

    command.format_help = format_help
