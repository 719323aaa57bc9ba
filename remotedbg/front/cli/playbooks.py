"""playbook list | show NAME | NAME --host H [--var K=V]... [--report FILE.md]"""
# No `from __future__ import annotations` here: typer reads the Annotated options at runtime.

import dataclasses
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperGroup

from remotedbg.contract import VERDICT_EXIT
from remotedbg.errors import ExitCode, UsageError
from remotedbg.fleet import HostResult, differences, parse_hosts, run_fleet
from remotedbg.front.cli.context import CommandContext, json_command, parse_vars, remote_command
from remotedbg.front.cli.playbook_report import FleetReport, RunReport
from remotedbg.front.environment import environment, note, stdout_console
from remotedbg.front.writer import Document, write
from remotedbg.inventory import is_host_list
from remotedbg.playbook import (
    RunOutcome,
    Step,
    bind_variables,
    find_playbook,
    list_playbooks,
    load_playbook,
    run_playbook,
    search_path,
)


class PlaybookGroup(TyperGroup):
    """`remotedbg playbook NAME ...` is `remotedbg playbook run NAME ...`."""

    def resolve_command(self, ctx: typer.Context, args: list[str]):  # type: ignore[override]
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().resolve_command(ctx, args)


app = typer.Typer(
    cls=PlaybookGroup,
    no_args_is_help=True,
    help="Declarative investigations: list, show, or run one by name. `playbook NAME ...` is short "
    "for `playbook run NAME ...` (e.g. remotedbg playbook vocab-audit -H gpu-box).",
)
PathOpt = Annotated[
    list[str] | None,
    typer.Option("--playbook-path", help="Extra folder of playbooks (repeatable)."),
]


def first_sentence(text: str) -> str:
    """A description's opening question or sentence, whole (never cut mid-word)."""
    match = re.match(r"(.+?[.?!])(\s|$)", text.strip(), re.S)
    return " ".join((match.group(1) if match else text).split())


@app.command("list")
@json_command
def list_command(playbook_path: PathOpt = None) -> int:
    """The playbooks available: --playbook-path, ~/.config/remotedbg/playbooks, shipped ones.

    Example: remotedbg playbook list"""

    rows = []
    for name, path in list_playbooks(playbook_path).items():
        try:
            description = load_playbook(path).description
        except UsageError as error:
            description = f"(invalid: {error})"
        rows.append({"name": name, "path": str(path), "description": description})

    def shown() -> None:
        places = search_path(playbook_path)
        shipped = places[-1] if places else None
        table = Table(box=None)
        table.add_column("name", no_wrap=True, style="bold")
        table.add_column("question it answers (playbook show NAME for the rest)")
        table.add_column("from", overflow="fold")
        for row in rows:
            origin = Path(row["path"]).parent
            table.add_row(
                row["name"],
                first_sentence(row["description"]),
                "shipped" if origin == shipped else row["path"],
            )
        stdout_console().print(table)

    write(Document({"playbooks": rows}, shown))
    return ExitCode.OK


@app.command("show")
@json_command
def show_command(name: str, playbook_path: PathOpt = None) -> int:
    """A playbook's variables and steps.

    Example: remotedbg playbook show vocab-audit"""
    playbook = load_playbook(find_playbook(name, playbook_path))

    def shown() -> None:
        stdout_console().print(f"[bold]{playbook.name}[/]  ({playbook.path})")
        stdout_console().print(playbook.description, markup=False)
        variables = Table(
            "variable", "default", "description", box=None, title="variables", title_justify="left"
        )
        for var, spec in playbook.variables.items():
            variables.add_row(var, repr(spec.get("default")), str(spec.get("description", "")))
        stdout_console().print(variables)
        steps = Table(
            "step", "action", "writes", "description", box=None, title="steps", title_justify="left"
        )
        for step in playbook.steps:
            steps.add_row(step.id, step.action, "yes" if step.writes else "no", step.description)
        stdout_console().print(steps)
        if playbook.report:
            given = ", ".join(f"{section} from {step}" for section, step in playbook.report.items())
            stdout_console().print(f"report: {given}", markup=False)

    document = {
        "name": playbook.name,
        "description": playbook.description,
        "path": str(playbook.path),
        "variables": playbook.variables,
        "steps": [dataclasses.asdict(s) for s in playbook.steps],
        "report": playbook.report,
    }
    write(Document(document, shown))
    return ExitCode.OK


@app.command("run")
@remote_command
def run_command(
    ctx: CommandContext,
    name: Annotated[
        str,
        typer.Argument(
            help="Playbook name (or a .yaml file).",
            autocompletion=lambda incomplete: [
                n for n in list_playbooks() if n.startswith(incomplete)
            ],
        ),
    ],
    var: Annotated[
        list[str] | None,
        typer.Option("--var", help="KEY=VALUE for a playbook variable (repeatable)."),
    ] = None,
    report: Annotated[
        Path | None, typer.Option("--report", help="Also write a Markdown report to this file.")
    ] = None,
    allow_write: Annotated[
        bool, typer.Option("--allow-write", help="Permit steps that may change the remote.")
    ] = False,
    playbook_path: PathOpt = None,
    hosts_file: Annotated[
        Path | None,
        typer.Option(
            "--hosts-file",
            help="Hosts to run on in parallel: one host (or gpu[01-16]) per line, or an "
            "Ansible inventory (INI or YAML).",
        ),
    ] = None,
    group: Annotated[
        str | None, typer.Option("--group", help="Only this group of the --hosts-file inventory.")
    ] = None,
) -> int:
    """Run a playbook against a host, or a fleet; exit 0 ok, 1 defect, 4 inconclusive, 3 host
    unreachable (a fleet exits with its worst host's status).

    Example: remotedbg playbook run spec-audit -H 'gpu[01-04]' --report fleet.md"""
    playbook = load_playbook(find_playbook(name, playbook_path))
    variables = bind_variables(playbook, parse_vars(var or []))
    if hosts_file is not None or group or is_host_list(ctx.options.host):
        # a default host (config file, REMOTEDBG_HOST) is for when no host is given at all
        typed_host = environment().typed_option("--host", "-H")
        typed = ctx.options.host if typed_host or not hosts_file else ""
        hosts = parse_hosts(typed, hosts_file, group, options=ctx.options)
        return run_fleet_command(ctx, playbook, variables, allow_write, hosts, report)
    outcome = execute(ctx, playbook, variables, allow_write)
    write(RunReport(outcome), report)
    if report:
        note(f"report written to {report}")
    return VERDICT_EXIT[outcome.verdict]


def run_fleet_command(
    ctx: CommandContext,
    playbook: Any,
    variables: dict,
    allow_write: bool,
    hosts: list[str],
    report: Path | None,
) -> int:
    with _progress() as progress:
        tasks = {host: progress.add_task(f"{host}: {playbook.name}", total=1) for host in hosts}

        def done(result: HostResult) -> None:
            state = result.outcome.verdict if result.outcome else "unreachable"
            progress.update(tasks[result.host], description=f"{result.host}: {state}", completed=1)

        results = run_fleet(hosts, ctx.options, playbook, variables, allow_write, done)
    fleet = FleetReport(playbook.name, results, differences(results))
    write(fleet, report)
    return fleet.exit_code


def _progress() -> Progress:
    """Step or host progress on stderr; it disappears when done."""
    env = environment()
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=env.stderr,
        transient=True,
        # no redraws in a log or pipe, nor beside --json's one document
        disable=env.quiet or env.json or not env.stderr.is_terminal,
    )


def execute(ctx: CommandContext, playbook: Any, variables: dict, allow_write: bool) -> RunOutcome:
    with _progress() as progress:
        tasks: dict[str, Any] = {}

        def hook(step: Step, status: str) -> None:
            if status == "start":
                tasks[step.id] = progress.add_task(f"{step.id}: {step.description or step.action}")
            else:
                progress.update(
                    tasks[step.id], description=f"{step.id}: {status}", completed=1, total=1
                )

        return run_playbook(playbook, ctx.remote, variables, allow_write, progress=hook)
