"""Layer 6: the command line. Each module registers one group of commands."""

import shlex
import sys
import time
from typing import Annotated

import typer

from remotedbg import __version__, settings
from remotedbg.cli import (
    demo,
    files,
    get,
    help_text,
    locate,
    logs,
    output,
    playbooks,
    probe,
    repl,
    tensors,
)
from remotedbg.cli.output import emit_json, error_line, printable, stderr_console, stdout_console
from remotedbg.errors import UsageError
from remotedbg.persist.protocol import host_named
from remotedbg.session import transcript

app = typer.Typer(
    name="remotedbg",
    help="Remote debugging over SSH for speculative-decoding deployments (SGLang, vLLM).",
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"remotedbg {__version__}")
        raise typer.Exit()


def _print_round_trip(entry: dict) -> None:
    status = "timeout" if entry.get("timed_out") else f"exit {entry.get('exit_status')}"
    line = (
        f"[{entry['duration_ms']:8.1f} ms] {entry['target']}: {entry['command'][:200]} ({status})"
    )
    stderr_console.print(printable(line), markup=False, highlight=False, style="dim")


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Leave out notes and progress on stderr; errors and why an exit is nonzero stay.",
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Print each remote round trip with its time on stderr (remotedbg -v COMMAND).",
        ),
    ] = False,
) -> None:
    """Remote debugging over SSH for speculative-decoding deployments (SGLang, vLLM)."""
    transcript.echo = _print_round_trip if verbose else None
    output.quiet = quiet


app.command("run", context_settings={"allow_interspersed_args": False})(files.run)
app.command("glob")(files.glob)
app.command("find")(files.find)
app.command("grep")(files.grep)
app.command("cat")(files.cat)
app.command("get")(get.get)
app.command("history")(files.history)
app.add_typer(tensors.app, name="tensors")
app.add_typer(playbooks.app, name="playbook")
app.command("demo")(demo.demo)
app.command("repl")(repl.repl_command)
app.command("locate-eagle")(locate.locate_eagle)
app.command("vocab-check")(tensors.vocab_check)
app.command("probe")(probe.probe)
app.command("logs")(logs.logs)


@app.command("sessions")
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


@app.command("config")
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


def worth_recording(words: list[str]) -> bool:
    """Command lines `history` shows: not help, version, or history itself."""
    before_dashes = words[: words.index("--")] if "--" in words else words
    quiet = {"-h", "--help", "--version", "history"}
    return bool(words) and not quiet.intersection(before_dashes)


def run_words(words: list[str]) -> int:
    """Run one command line in this process; its exit code (a persistent-session daemon runs
    its clients' command lines through here too). Ctrl-C propagates as KeyboardInterrupt."""
    command = typer.main.get_command(app)
    help_text.name_values(command)
    started = time.time()
    status: int = 1
    try:
        try:
            config = settings.load_config()
        except UsageError as error:
            error_line(str(error))
            status = error.exit_code
            return status
        defaults = settings.default_map(command, config)
        command(prog_name="remotedbg", args=words, default_map=defaults)
        status = 0
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except KeyboardInterrupt:
        status = 130
        raise
    finally:
        if worth_recording(words):
            line = shlex.join(["remotedbg", *words])
            transcript.record_typed(line, host_named(words), status, started)
    return status


def main() -> None:
    raise SystemExit(run_words(sys.argv[1:]))
