"""Commands that work on this machine only: the persistent sessions and the settings."""

from typing import Annotated

import typer

from remotedbg import settings
from remotedbg.cli.output import emit_json, printable, stdout_console


def sessions_command(
    stop: Annotated[
        bool, typer.Option("--stop", help="Stop them (their connections close).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """The persistent sessions (background connections) of this user: host, pid, commands
    served, idle time. A command leaves one per host unless --no-persist or --persist 0.

    Example: remotedbg sessions --stop"""
    from remotedbg.persist import client

    found = client.sessions(stop=stop)
    if as_json:
        emit_json({"sessions": found, "stopped": stop})
        return
    if not found:
        stdout_console.print("no persistent sessions", markup=False)
    for entry in found:
        state = "stopped" if stop else ("busy" if entry["busy"] else f"idle {entry['idle_s']:g} s")
        stdout_console.print(
            printable(f"{entry['host'] or '(no command yet)'}  pid {entry['pid']}  "
                      f"{entry['commands']} command(s)  {state} (exits after "
                      f"{entry['idle_limit_s']:g} s idle)"),
            markup=False,
        )  # fmt: skip


def config_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """The defaults in effect and where each comes from: a REMOTEDBG_* variable, the config
    file (~/.config/remotedbg/config.toml, or REMOTEDBG_CONFIG), or built in. A flag given on
    a command line beats all three.

    Example: remotedbg config   (with a config.toml of: host = "gpu-box", timeout = 300)"""
    from rich.table import Table

    rows = settings.effective(settings.load_config())
    if as_json:
        emit_json(
            {
                "file": str(settings.config_file()),
                "settings": [{"key": k, "value": v, "source": src} for k, v, src in rows],
            }
        )
        return
    table = Table("setting", "value", "from", box=None)
    for key, value, source in rows:
        table.add_row(key, str(value), source)
    stdout_console.print(table)
    stdout_console.print(f"config file: {settings.config_file()}", markup=False)
