"""playbook list | show NAME | NAME --host H [--var K=V]... [--report FILE.md]"""
# No `from __future__ import annotations` here: typer reads the Annotated options at runtime.

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperGroup

from remotedbg.cli.context import CommandContext, remote_command, run_guarded
from remotedbg.cli.locate import render_locate
from remotedbg.cli.output import emit_json, printable, stderr_console, stdout_console
from remotedbg.errors import ExitCode, UsageError
from remotedbg.playbook import (
    RunOutcome,
    Step,
    bind_variables,
    find_playbook,
    list_playbooks,
    load_playbook,
    run_playbook,
)
from remotedbg.report import findings_markdown, render_findings, render_verdict

VERDICT_EXIT = {"ok": ExitCode.OK, "defect": ExitCode.FINDINGS, "inconclusive": ExitCode.REMOTE}


class PlaybookGroup(TyperGroup):
    """`remotedbg playbook NAME ...` is `remotedbg playbook run NAME ...`."""

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[override]
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().resolve_command(ctx, args)


app = typer.Typer(
    cls=PlaybookGroup,
    no_args_is_help=True,
    help="Declarative investigations: list, show, or run one by name.",
)
PathOpt = Annotated[
    list[str] | None,
    typer.Option("--playbook-path", help="Extra folder of playbooks (repeatable)."),
]


@app.command("list")
def list_command(
    playbook_path: PathOpt = None, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """The playbooks available: --playbook-path, ~/.config/remotedbg/playbooks, shipped ones."""

    def body() -> int:
        rows = []
        for name, path in list_playbooks(playbook_path).items():
            try:
                description = load_playbook(path).description
            except UsageError as error:
                description = f"(invalid: {error})"
            rows.append({"name": name, "path": str(path), "description": description})
        if as_json:
            emit_json({"playbooks": rows})
        else:
            table = Table("name", "description", "file", box=None)
            for row in rows:
                table.add_row(row["name"], row["description"][:90], row["path"])
            stdout_console.print(table)
        return ExitCode.OK

    run_guarded(body, as_json)


@app.command("show")
def show_command(
    name: str,
    playbook_path: PathOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """A playbook's variables and steps."""

    def body() -> int:
        playbook = load_playbook(find_playbook(name, playbook_path))
        if as_json:
            emit_json(
                {
                    "name": playbook.name,
                    "description": playbook.description,
                    "path": str(playbook.path),
                    "variables": playbook.variables,
                    "steps": [dataclasses.asdict(s) for s in playbook.steps],
                }
            )
            return ExitCode.OK
        stdout_console.print(f"[bold]{playbook.name}[/]  ({playbook.path})")
        stdout_console.print(playbook.description, markup=False)
        variables = Table(
            "variable", "default", "description", box=None, title="variables", title_justify="left"
        )
        for var, spec in playbook.variables.items():
            variables.add_row(var, repr(spec.get("default")), str(spec.get("description", "")))
        stdout_console.print(variables)
        steps = Table(
            "step", "action", "writes", "description", box=None, title="steps", title_justify="left"
        )
        for step in playbook.steps:
            steps.add_row(step.id, step.action, "yes" if step.writes else "no", step.description)
        stdout_console.print(steps)
        return ExitCode.OK

    run_guarded(body, as_json)


def _parse_vars(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise UsageError(f"--var {pair!r}: expected KEY=VALUE")
        out[key] = value
    return out


@app.command("run")
@remote_command
def run_command(
    ctx: CommandContext,
    name: Annotated[str, typer.Argument(help="Playbook name (or a .yaml file).")],
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
) -> int:
    """Run a playbook against a host; exit 0 ok, 1 defect, 4 inconclusive."""
    playbook = load_playbook(find_playbook(name, playbook_path))
    variables = bind_variables(playbook, _parse_vars(var or []))
    outcome = execute(ctx, playbook, variables, allow_write)
    document = outcome_document(outcome)
    if ctx.json:
        emit_json(document)
    else:
        render_outcome(outcome)
    if report:
        report.write_text(outcome_markdown(outcome), encoding="utf-8")
        if not ctx.json:
            stderr_console.print(f"report written to {report}", markup=False)
    return VERDICT_EXIT[outcome.verdict]


def execute(ctx: CommandContext, playbook: Any, variables: dict, allow_write: bool) -> RunOutcome:
    if ctx.json:
        return run_playbook(playbook, ctx.remote, variables, allow_write)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=stderr_console,
        transient=True,
    ) as progress:
        tasks: dict[str, Any] = {}

        def hook(step: Step, status: str) -> None:
            if status == "start":
                tasks[step.id] = progress.add_task(f"{step.id}: {step.description or step.action}")
            else:
                progress.update(
                    tasks[step.id], description=f"{step.id}: {status}", completed=1, total=1
                )

        return run_playbook(playbook, ctx.remote, variables, allow_write, progress=hook)


def outcome_document(outcome: RunOutcome) -> dict:
    audit = outcome.results.get("audit") or {}
    return {
        "playbook": outcome.playbook,
        "host": outcome.host,
        "verdict": outcome.verdict,
        "headline": outcome.headline,
        "findings": outcome.findings,
        "drafts": audit.get("drafts", []),
        "inconclusive": outcome.inconclusive,
        "steps": [dataclasses.asdict(s) for s in outcome.steps],
        "round_trips": outcome.round_trips,
        "results": outcome.results,
    }


def render_outcome(outcome: RunOutcome) -> None:
    console = stdout_console
    render_verdict(console, outcome.verdict, outcome.headline)
    for draft in (outcome.results.get("audit") or {}).get("drafts", []):
        vocab = draft.get("vocab") or {}
        loader = draft.get("loader") or {}
        console.print(
            f"[bold]draft[/] {printable(draft['draft'])}: format "
            f"{vocab.get('format', '?')}, {vocab.get('draft_vocab', '?')} -> "
            f"{vocab.get('target_vocab', '?')} ids; loader "
            f"{printable(str(loader.get('path', 'not resolved')))}"
            f" ({loader.get('d2t_handling', '-')})",
            highlight=False,
        )
    render_findings(console, outcome.findings)
    located = outcome.results.get("engines")
    if outcome.playbook == "locate-eagle" and located:
        render_locate(located)
    steps = ", ".join(f"{s.id} {s.status} {s.duration_ms:.0f} ms" for s in outcome.steps)
    console.print(f"[dim]steps: {steps}; {outcome.round_trips} remote round trips[/]")


def outcome_markdown(outcome: RunOutcome) -> str:
    lines = [
        f"# remotedbg {outcome.playbook} on `{outcome.host}`",
        "",
        f"**Verdict: {outcome.verdict.upper()}**: {outcome.headline}",
        "",
    ]
    for draft in (outcome.results.get("audit") or {}).get("drafts", []):
        vocab = draft.get("vocab") or {}
        loader = draft.get("loader") or {}
        lines += [
            f"- draft `{draft['draft']}`: format `{vocab.get('format')}`, draft vocab "
            f"{vocab.get('draft_vocab')}, target vocab {vocab.get('target_vocab')}, loader "
            f"`{loader.get('path')}` ({loader.get('d2t_handling')})"
        ]
    lines += [
        "",
        "## Findings",
        "",
        findings_markdown(outcome.findings),
        "## Steps",
        "",
        "| step | action | status | ms |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {s.id} | {s.action} | {s.status} | {s.duration_ms:.0f} |" for s in outcome.steps]
    return "\n".join(lines) + "\n"


def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Keep the demo box's temp dir.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """vocab-audit on a built-in example box (no GPU machine, no network): a correct EAGLE-3
    draft and one with absolute ids in d2t, full-size vocabularies, audited with --host local."""
    import shutil

    from remotedbg.demo import build_demo_box, demo_directory
    from remotedbg.session import ConnectOptions

    def body() -> int:
        root = demo_directory()
        try:
            if not as_json:
                stderr_console.print(f"building the demo box in {root} ...", markup=False)
            box = build_demo_box(root)
            playbook = load_playbook(find_playbook("vocab-audit"))
            documents = {}
            for label in ("good", "bad"):
                variables = bind_variables(
                    playbook,
                    {
                        "draft": str(box[label]),
                        "target": str(box["target"]),
                        "roots": str(box["engine"]),
                    },
                )
                ctx = CommandContext(ConnectOptions(host="local", timeout=120), json=as_json)
                try:
                    if not as_json:
                        stdout_console.rule(f"vocab-audit --host local --var draft={box[label]}")
                    outcome = execute(ctx, playbook, variables, allow_write=False)
                finally:
                    ctx.close()
                documents[label] = outcome_document(outcome)
                if not as_json:
                    render_outcome(outcome)
            expected = (documents["good"]["verdict"], documents["bad"]["verdict"]) == (
                "ok",
                "defect",
            )
            if as_json:
                emit_json(
                    {
                        "box": {k: str(v) for k, v in box.items()},
                        "audits": documents,
                        "as_expected": expected,
                    }
                )
            return ExitCode.OK if expected else ExitCode.FINDINGS
        finally:
            if not keep:
                shutil.rmtree(root, ignore_errors=True)

    run_guarded(body, as_json)
