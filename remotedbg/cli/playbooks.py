"""playbook list | show NAME | NAME --host H [--var K=V]... [--report FILE.md]"""
# No `from __future__ import annotations` here: typer reads the Annotated options at runtime.

import dataclasses
import re
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperGroup

from remotedbg.cli import output
from remotedbg.cli.context import CommandContext, remote_command, run_guarded
from remotedbg.cli.locate import render_locate
from remotedbg.cli.output import emit_json, note, printable, stderr_console, stdout_console
from remotedbg.contract import VERDICT_EXIT
from remotedbg.errors import ExitCode, UsageError
from remotedbg.fleet import HostResult, differences, parse_hosts, run_fleet, worst_exit
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
from remotedbg.report import findings_markdown, render_findings, render_verdict


class PlaybookGroup(TyperGroup):
    """`remotedbg playbook NAME ...` is `remotedbg playbook run NAME ...`."""

    def resolve_command(self, ctx: typer.Context, args: list[str]):  # type: ignore[override]
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


def first_sentence(text: str) -> str:
    """A description's opening question or sentence, whole (never cut mid-word)."""
    match = re.match(r"(.+?[.?!])(\s|$)", text.strip(), re.S)
    return " ".join((match.group(1) if match else text).split())


@app.command("list")
def list_command(
    playbook_path: PathOpt = None, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """The playbooks available: --playbook-path, ~/.config/remotedbg/playbooks, shipped ones.

    Example: remotedbg playbook list"""

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
            stdout_console.print(table)
        return ExitCode.OK

    run_guarded(body, as_json)


@app.command("show")
def show_command(
    name: str,
    playbook_path: PathOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """A playbook's variables and steps.

    Example: remotedbg playbook show vocab-audit"""

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
    variables = bind_variables(playbook, _parse_vars(var or []))
    if hosts_file is not None or group or is_host_list(ctx.options.host):
        hosts = parse_hosts(ctx.options.host, hosts_file, group)
        return run_fleet_command(ctx, playbook, variables, allow_write, hosts, report)
    outcome = execute(ctx, playbook, variables, allow_write)
    document = outcome_document(outcome)
    if ctx.json:
        emit_json(document)
    else:
        render_outcome(outcome)
    if report:
        report.write_text(outcome_markdown(outcome), encoding="utf-8")
        if not ctx.json:
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
    if ctx.json:
        results = run_fleet(hosts, ctx.options, playbook, variables, allow_write)
    else:
        with _progress() as progress:
            tasks = {host: progress.add_task(f"{host}: {playbook.name}", total=1) for host in hosts}

            def done(result: HostResult) -> None:
                state = result.outcome.verdict if result.outcome else "unreachable"
                progress.update(
                    tasks[result.host], description=f"{result.host}: {state}", completed=1
                )

            results = run_fleet(hosts, ctx.options, playbook, variables, allow_write, done)
    diff = differences(results)
    code = worst_exit([r.exit_code for r in results])
    if ctx.json:
        emit_json(
            {
                "playbook": playbook.name,
                "exit_code": code,
                "differences": diff,
                "hosts": [_host_document(r) for r in results],
            }
        )
    else:
        render_fleet(playbook.name, results, diff)
    if report:
        report.write_text(fleet_markdown(playbook.name, results, diff), encoding="utf-8")
    return code


def _host_document(result: HostResult) -> dict:
    document = (
        outcome_document(result.outcome)
        if result.outcome
        else {"host": result.host, "verdict": "unreachable", "findings": []}
    )
    document.update(
        exit_code=result.exit_code, error=result.error, fingerprints=result.fingerprints
    )
    return document


def _fleet_rows(results: list[HostResult]) -> tuple[list[str], list[list[str]]]:
    ids = sorted(
        {
            f["id"]
            for r in results
            if r.outcome
            for f in r.outcome.findings
            if f["severity"] != "info"
        }
    )
    rows = []
    for result in results:
        if result.outcome is None:
            rows.append([result.host, "unreachable", str(result.exit_code)] + ["?"] * len(ids))
            continue
        severities = {}
        for item in result.outcome.findings:
            severities.setdefault(item["id"], item["severity"])
        rows.append(
            [result.host, result.outcome.verdict, str(result.exit_code)]
            + [severities.get(i, "-") for i in ids]
        )
    return ids, rows


def render_fleet(name: str, results: list[HostResult], diff: dict) -> None:
    ids, rows = _fleet_rows(results)
    table = Table(title=f"{name} on {len(results)} hosts", title_justify="left", box=None)
    # host and verdict are what a reader scans for: never cut; finding columns fold instead
    table.add_column("host", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("exit", no_wrap=True)
    for finding_id in ids:
        table.add_column(finding_id, overflow="fold")
    for row in rows:
        table.add_row(*[printable(cell) for cell in row])
    stdout_console.print(table)
    for result in results:
        if result.error:
            stdout_console.print(f"{result.host}: {result.error}", markup=False)
    if diff:
        stdout_console.print("\n[bold]differences between hosts[/]")
        for fact, values in diff.items():
            spread = ", ".join(f"{host}={value}" for host, value in values.items())
            stdout_console.print(f"  {fact}: {spread}", markup=False)
    else:
        stdout_console.print("no differences between the reachable hosts", markup=False)


def fleet_markdown(name: str, results: list[HostResult], diff: dict) -> str:
    ids, rows = _fleet_rows(results)
    lines = [
        f"# remotedbg {name} on {len(results)} hosts",
        "",
        "| host | verdict | exit | " + " | ".join(f"`{i}`" for i in ids) + " |",
        "| --- " * (3 + len(ids)) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    if diff:
        lines += ["", "## Differences", ""]
        lines += [
            f"- **{fact}**: " + ", ".join(f"{h}=`{v}`" for h, v in values.items())
            for fact, values in diff.items()
        ]
    for result in results:
        if result.outcome:
            lines += ["", outcome_markdown(result.outcome, level=2)]
        else:
            lines += ["", f"## {result.host}", "", f"unreachable: {result.error}"]
    return "\n".join(lines) + "\n"


def _progress() -> Progress:
    """Step or host progress on stderr; it disappears when done."""
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=stderr_console,
        transient=True,
        disable=output.quiet or not stderr_console.is_terminal,  # no redraws in a log or pipe
    )


def execute(ctx: CommandContext, playbook: Any, variables: dict, allow_write: bool) -> RunOutcome:
    if ctx.json:
        return run_playbook(playbook, ctx.remote, variables, allow_write)
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
    for line in server_lines(outcome):
        console.print(line, markup=False, highlight=False)
    render_findings(console, outcome.findings)
    located = outcome.results.get("engines")
    if outcome.playbook == "locate-eagle" and located:
        render_locate(located)
    steps = ", ".join(f"{s.id} {s.status} {s.duration_ms:.0f} ms" for s in outcome.steps)
    console.print(f"[dim]steps: {steps}; {outcome.round_trips} remote round trips[/]")


def server_lines(outcome: RunOutcome) -> list[str]:
    """One line per server a spec-audit read: algorithm, ceiling and observed accept length."""
    lines = []
    for server in (outcome.results.get("servers") or {}).get("servers") or []:
        spec = server.get("spec") or {}
        figures = ((server.get("log") or {}).get("figures") or {}).get("accept_length") or {}
        seen = (
            f"accept length last {figures.get('last')} (mean {figures.get('mean')}, "
            f"{figures.get('count')} decode lines)"
            if figures
            else "no decode lines read"
        )
        lines.append(
            f"server {server.get('pid') or server.get('source')}: {server.get('engine')} "
            f"{spec.get('algorithm') or '?'}, steps {spec.get('num_steps')}, ceiling "
            f"{spec.get('ceiling')}; {seen}"
        )
    return lines


def provenance_markdown(outcome: RunOutcome) -> list[str]:
    """How the report came about: the command line (secrets redacted), remotedbg's version, the
    time, and the engine installs the audit read."""
    import datetime

    from remotedbg import __version__
    from remotedbg.agent.redact import redact_text

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    command = redact_text(shlex.join(["remotedbg", *sys.argv[1:]]))
    lines = [f"- command: `{command}`", f"- remotedbg {__version__}, {now}"]
    for engine in (outcome.results.get("engines") or {}).get("engines") or []:
        running = ", running" if engine.get("running") else ""
        lines.append(
            f"- engine: {engine.get('name')} {engine.get('version') or '(version unknown)'} "
            f"at `{engine.get('path')}`{running}"
        )
    return lines


def outcome_markdown(outcome: RunOutcome, level: int = 1) -> str:
    """One host's report; `level` is its title's heading level (2 inside a fleet report)."""
    title, section = "#" * level, "#" * (level + 1)
    lines = [
        f"{title} remotedbg {outcome.playbook} on `{outcome.host}`",
        "",
        f"**Verdict: {outcome.verdict.upper()}**: {outcome.headline}",
        "",
        *provenance_markdown(outcome),
    ]
    for draft in (outcome.results.get("audit") or {}).get("drafts", []):
        vocab = draft.get("vocab") or {}
        loader = draft.get("loader") or {}
        lines += [
            f"- draft `{draft['draft']}`: format `{vocab.get('format')}`, draft vocab "
            f"{vocab.get('draft_vocab')}, target vocab {vocab.get('target_vocab')}, loader "
            f"`{loader.get('path')}` ({loader.get('d2t_handling')})"
        ]
        for evidence in (loader.get("evidence") or [])[:12]:
            text = str(evidence.get("text", "")).strip().replace("`", "'")
            lines.append(f"  - `{loader.get('path')}:{evidence.get('line')}`: `{text}`")
    lines += [
        "",
        f"{section} Findings",
        "",
        findings_markdown(outcome.findings, level + 2),
        f"{section} Steps",
        "",
        "| step | action | status | ms |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {s.id} | {s.action} | {s.status} | {s.duration_ms:.0f} |" for s in outcome.steps]
    return "\n".join(lines) + "\n"


DEMO_SUMMARY = """\
Both drafts have full-size vocabularies (32,000 draft ids into 163,840 target ids). The audit
found the engine install, read which loader serves an Eagle3 draft and what it does with d2t
(target id = draft id + d2t[draft id]), and read only the d2t/t2d bytes of each checkpoint in
place. The first passes; the second would be served without an error while accepting almost no
drafted token, and the finding says why and how to fix the tensor.

Now run it on your box (an ssh_config alias; globs and ~ expand there):
  remotedbg playbook vocab-audit -H gpu-box --var draft='~/models/my-eagle3-draft'
  remotedbg playbook spec-audit -H gpu-box        # the running server, flags, layers, logs
  remotedbg locate-eagle -H gpu-box               # which engine code loads the draft"""


def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Keep the demo box's temp dir.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """vocab-audit on a built-in example box (no GPU machine, no network): a correct EAGLE-3
    draft and one with absolute ids in d2t, full-size vocabularies, audited with --host local.

    Example: remotedbg demo"""
    import shutil

    from remotedbg.demo import build_demo_box, demo_directory
    from remotedbg.session import ConnectOptions

    def body() -> int:
        root = demo_directory()
        try:
            if not as_json:
                note(f"building the demo box in {root} ...")
            box = build_demo_box(root)
            playbook = load_playbook(find_playbook("vocab-audit"))
            documents = {}
            titles = {
                "good": "1/2  a correct EAGLE-3 draft: d2t holds offsets, as the loader expects",
                "bad": "2/2  the same draft, absolute ids in d2t: served silently, accepts ~none",
            }
            for label in ("good", "bad"):
                given = {
                    "draft": str(box[label]),
                    "target": str(box["target"]),
                    "roots": str(box["engine"]),
                    "search_home": "false",
                }
                variables = bind_variables(playbook, given)
                ctx = CommandContext(ConnectOptions(host="local", timeout=120), json=as_json)
                try:
                    if not as_json:
                        stdout_console.rule(titles[label], align="left")
                        stdout_console.print(
                            "$ "
                            + shlex.join(
                                ["remotedbg", "playbook", "vocab-audit", "-H", "local"]
                                + [w for k, v in given.items() for w in ("--var", f"{k}={v}")]
                            ),
                            markup=False,
                            highlight=False,
                        )
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
            if not as_json:
                stdout_console.rule("what you just saw", align="left")
                stdout_console.print(DEMO_SUMMARY, markup=False, highlight=False)
            return ExitCode.OK if expected else ExitCode.FINDINGS
        finally:
            if not keep:
                shutil.rmtree(root, ignore_errors=True)

    run_guarded(body, as_json)
