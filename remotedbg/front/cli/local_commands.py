"""Commands that work on this machine only: the persistent sessions and the settings."""

from typing import Annotated

import typer

from remotedbg import settings
from remotedbg.front.cli.context import json_command
from remotedbg.front.environment import stdout_console
from remotedbg.front.output import printable
from remotedbg.front.writer import Document, write


@json_command
def sessions_command(
    stop: Annotated[
        bool, typer.Option("--stop", help="Stop them now (their connections close).")
    ] = False,
) -> None:
    """The persistent sessions (background connections) of this user: host as typed, the
    connection options that differ from the defaults, commands served, idle time.

    Example: remotedbg sessions --stop"""
    from remotedbg.persist import client

    found = client.sessions(stop=stop)

    def shown() -> None:
        if not found:
            stdout_console().print("no persistent sessions", markup=False)
        for entry in found:
            stdout_console().print(printable(session_line(entry, stop)), markup=False)

    write(Document({"sessions": found, "stopped": stop}, shown))


def session_line(entry: dict, stopping: bool) -> str:
    """One daemon, as `sessions` lists it."""
    options = " ".join(
        f"{flag} {' '.join(map(str, value)) if isinstance(value, list) else value}"
        if value is not True
        else flag
        for flag, value in entry.get("options", {}).items()
    )
    served = entry["commands"]
    head = f"{entry['host'] or '(starting)'}{'  ' + options if options else ''}  "
    head += f"{served} command{'' if served == 1 else 's'}"
    if stopping:
        state = "stopped" if entry.get("stopped") else "stopping after its running command"
    elif entry["busy"]:
        state = "busy"
    else:
        state = f"idle {entry['idle_s']:g} s (stops at {entry['idle_limit_s']:g} s)"
    return f"{head}  {state}  pid {entry['pid']}"


@json_command
def config_command() -> None:
    """The defaults in effect and where each comes from: a REMOTEDBG_* variable, the config
    file (~/.config/remotedbg/config.toml, or REMOTEDBG_CONFIG), or built in. A flag given on
    a command line beats all three.

    Example: remotedbg config   (with a config.toml of: host = "gpu-box", timeout = 300)"""
    from rich.table import Table

    rows = settings.effective(settings.load_config())

    def shown() -> None:
        table = Table("setting", "value", "from", box=None)
        for key, value, source in rows:
            table.add_row(key, str(value), source)
        stdout_console().print(table)
        stdout_console().print(f"config file: {settings.config_file()}", markup=False)

    document = {
        "file": str(settings.config_file()),
        "settings": [{"key": k, "value": v, "source": src} for k, v, src in rows],
    }
    write(Document(document, shown))


def help_command(
    topic: Annotated[
        list[str] | None,
        typer.Argument(help="'connection', or a command (remotedbg help tensors pull)."),
    ] = None,
) -> None:
    """Help on a topic: `connection` lists every connection option with its value, default
    and variable; a command's name shows its --help; nothing shows the command list.

    Example: remotedbg help connection"""
    from remotedbg.errors import UsageError
    from remotedbg.front.cli import run_words

    words = list(topic or [])
    if words == ["connection"]:
        connection_help()
        return
    from remotedbg.front.cli import COMMANDS

    if words and words[0] not in COMMANDS:
        error = UsageError(f"help {words[0]!r}: no such topic; try 'connection' or a command")
        raise typer.Exit(_fail(error))
    raise typer.Exit(run_words([*words, "--help"]))


@json_command
def explain_command(
    finding_id: Annotated[
        str | None, typer.Argument(help="A finding id (d2t-absolute-ids); none lists them all.")
    ] = None,
) -> None:
    """What a finding id means and how to fix it.

    Each entry: its meaning, the engine code it rests on, the fix and an example (the same
    entries as docs/findings.md); without an id, every id with its severities.

    Example: remotedbg explain context-exceeds-draft"""
    from dataclasses import asdict

    from remotedbg.engines import finding_catalog
    from remotedbg.errors import UsageError

    if finding_id is None:
        entries = list(finding_catalog.CATALOG.values())

        def listed() -> None:
            width = max(len(entry.id) for entry in entries)
            for entry in entries:
                line = f"{entry.id:<{width}}  {'/'.join(entry.severities):<21} {entry.reported_by}"
                stdout_console().print(line, markup=False, highlight=False)

        write(Document({"findings": [asdict(entry) for entry in entries]}, listed))
        return
    entry = finding_catalog.entry_for(finding_id.strip())
    if entry is None:
        close = finding_catalog.close_ids(finding_id)
        hint = f"; did you mean {', '.join(close)}?" if close else "; remotedbg explain lists them"
        raise UsageError(f"no finding id {finding_id!r}{hint}")
    from rich.markdown import Markdown

    page = finding_catalog.as_markdown(entry)
    write(Document(asdict(entry), lambda: stdout_console().print(Markdown(page)), page))


def _fail(error: Exception) -> int:
    from remotedbg.front.environment import error_line

    error_line(str(error))
    return 2


def connection_help() -> None:
    """Every connection option: flags, value, meaning, default and variable."""
    from rich.table import Table

    from remotedbg.front.cli.context import CONNECTION_PARAMETERS
    from remotedbg.front.cli.help_text import value_name

    table = Table("option", "meaning", "default", "variable", box=None, show_lines=False)
    for parameter in CONNECTION_PARAMETERS:
        info = parameter.annotation.__metadata__[0]
        # with Annotated, typer keeps the first flag where a default would go
        first = [info.default] if str(info.default).startswith("-") else []
        flags = ", ".join(sorted([*first, *info.param_decls], key=len))
        kind = parameter.annotation.__origin__
        if kind is not bool:
            many = "list" in str(kind)
            flags += " " + (info.metavar or value_name(parameter.name, kind, many))
        default = parameter.default
        if default in (None, False, ""):
            default = ""
        elif isinstance(default, (int, float)) and not isinstance(default, bool):
            default = f"{default:g}"
        table.add_row(flags, info.help or "", str(default), info.envvar or "")
    stdout_console().print(
        "Connection options, on every command that takes -H (a flag beats its variable, "
        "which beats ~/.config/remotedbg/config.toml; see remotedbg config):",
        markup=False, highlight=False,
    )  # fmt: skip
    stdout_console().print(table)
