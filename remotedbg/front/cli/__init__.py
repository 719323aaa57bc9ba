"""Layer 6: the command line. Each module registers one group of commands."""

import importlib
import shlex
import sys
import time
from typing import Annotated

import typer

from remotedbg import __version__, settings
from remotedbg.errors import UsageError
from remotedbg.front import ssh_habits
from remotedbg.front.cli import gnu_spelling, help_text
from remotedbg.front.environment import (
    Environment,
    entered,
    environment,
    error_line,
    stderr_console,
)
from remotedbg.front.output import printable
from remotedbg.persist.protocol import ROOT_FLAGS, host_named
from remotedbg.session import transcript

# name -> (module in remotedbg.front.cli, attribute, registration keywords), in --help's order; a
# typer sub-app ("group") is added whole. Only the module of the command being run is imported.
COMMANDS: dict[str, tuple[str, str, dict]] = {
    "diagnose": ("diagnose", "diagnose", {}),
    "run": ("files", "run", {"context_settings": {"allow_interspersed_args": False}}),
    "glob": ("files", "glob", {}),
    "find": ("files", "find", {}),
    "grep": ("files", "grep", {}),
    "cat": ("files", "cat", {}),
    "get": ("get", "get", {}),
    "history": ("files", "history", {}),
    "tensors": ("tensors", "app", {"group": True}),
    "playbook": ("playbooks", "app", {"group": True}),
    "demo": ("demo", "demo", {}),
    "repl": ("repl", "repl_command", {}),
    "locate-eagle": ("locate", "locate_eagle", {}),
    "vocab-check": ("tensors", "vocab_check", {}),
    "probe": ("probe", "probe", {}),
    "logs": ("logs", "logs", {}),
    "sessions": ("local_commands", "sessions_command", {}),
    "config": ("local_commands", "config_command", {}),
    "help": ("local_commands", "help_command", {}),
    "explain": ("local_commands", "explain_command", {}),
}
ROOT_HELP = """Remote debugging over SSH for speculative-decoding deployments (SGLang, vLLM).

Examples:
  remotedbg diagnose -H gpu-box              why acceptance is low
  remotedbg playbook vocab-audit -H gpu-box  is the vocab map at fault?
  remotedbg probe -H gpu-box                 acceptance measured live
  remotedbg run -H gpu-box -- nvidia-smi     a command, as ssh runs it
  remotedbg repl -H gpu-box                  a shell on the box
  remotedbg help connection                  -H, -l, -p, -i, timeouts
  remotedbg -H gpu-box run -- nvidia-smi     the same: options may come first, as in ssh

Each command: remotedbg COMMAND --help."""


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"remotedbg {__version__}")
        raise typer.Exit()


def _print_round_trip(entry: dict) -> None:
    status = "timeout" if entry.get("timed_out") else f"exit {entry.get('exit_status')}"
    line = (
        f"[{entry['duration_ms']:8.1f} ms] {entry['target']}: {entry['command'][:200]} ({status})"
    )
    stderr_console().print(printable(line), markup=False, highlight=False, style="dim")


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
    environment().quiet = quiet


def build_app(only: str | None = None) -> typer.Typer:
    """The command tree: every command, or only the one named (with the root options), so a
    command line imports just the module it runs."""
    app = typer.Typer(
        name="remotedbg",
        help=ROOT_HELP,
        add_completion=True,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    for name, (module, attribute, keywords) in COMMANDS.items():
        if only not in (None, name):
            continue
        found = getattr(importlib.import_module(f"remotedbg.front.cli.{module}"), attribute)
        if keywords.get("group"):
            app.add_typer(found, name=name)
        else:
            app.command(name, **keywords)(found)
    return app


def command_named(words: list[str]) -> str | None:
    """The command a command line runs, when it is one of ours (past the root's flags)."""
    for word in words:
        if word not in ROOT_FLAGS:
            return word if word in COMMANDS else None
    return None


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # the whole tree, for completion, the REPL and the tests
        globals()["app"] = built = build_app()
        return built
    raise AttributeError(name)


def worth_recording(words: list[str]) -> bool:
    """Command lines `history` shows: not help, version, or history itself."""
    before_dashes = words[: words.index("--")] if "--" in words else words
    quiet = {"-h", "--help", "--version", "history"}
    return bool(words) and not quiet.intersection(before_dashes)


def _aliases() -> list[str]:
    """The ssh_config's aliases (a lone `remotedbg gpu-box` is ssh's `ssh gpu-box`)."""
    from remotedbg.front.cli.context import complete_hosts

    return complete_hosts("")


def run_words(words: list[str]) -> int:
    """Run one command line in this process, in an environment of its own (consoles for the
    terminal of this moment, the words as typed); its exit code (a persistent-session daemon
    runs its clients' command lines through here too). Ctrl-C propagates as KeyboardInterrupt.
    Connection options typed before the command (`-H box run ...`) are read as after it."""
    mistaken = ssh_habits.mistaken_form(words, list(COMMANDS), ROOT_FLAGS, _aliases)
    words = ssh_habits.options_after_command(words, ROOT_FLAGS)
    with entered(Environment(words=list(words))):
        return _run_words(words, mistaken)


def _run_words(words: list[str], mistaken: str | None = None) -> int:
    command = typer.main.get_command(build_app(command_named(words)))
    help_text.name_values(command)
    help_text.tidy(command)
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
        if mistaken:  # `remotedbg gpu-box nvidia-smi`, `remotedbg ls`: the form that works
            error_line(mistaken)
            status = UsageError.exit_code
            return status
        try:
            given = gnu_spelling.typed_as_ours(command, words, ROOT_FLAGS)
        except UsageError as error:
            error_line(str(error))
            status = error.exit_code
            return status
        command(prog_name="remotedbg", args=given, default_map=defaults)
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
