"""probe: how many draft tokens does the running server accept, on which kinds of prompt, and at
which draft position does it fall apart. Measured live, from the box, with a stated load."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from remotedbg.actions.probe import (
    DEFAULT_BUDGET_S,
    ProbePlan,
    compared,
    prepare_probe,
    probe_host,
    probe_plan,
    probe_server,
)
from remotedbg.actions.server_arg import parse_server
from remotedbg.contract import exit_code, verdict
from remotedbg.errors import ExitCode, UsageError
from remotedbg.fleet import HostValue, map_hosts, parse_hosts, worst_exit
from remotedbg.front.cli.context import CommandContext, ServerOption, remote_command
from remotedbg.front.cli.probe_report import ProbeFleetReport, ProbeReport, figure_svg
from remotedbg.front.environment import note, stderr_console
from remotedbg.front.writer import Document, write
from remotedbg.inventory import is_host_list
from remotedbg.remote.primitives import Remote


@remote_command
def probe(
    ctx: CommandContext,
    server: ServerOption = "",
    prompts: Annotated[
        str,
        typer.Option(
            "--prompts",
            help='\'builtin\', or a JSONL file of {"prompt", "category"}.',
            metavar="FILE|builtin",
        ),
    ] = "builtin",  # fmt: skip
    per_category: Annotated[
        int, typer.Option("-n", "--per-category", min=1, help="Prompts of each kind.")
    ] = 2,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=2, max=4096, help="New tokens per request.")
    ] = 128,
    compare: Annotated[
        str,
        typer.Option(
            "--compare",
            metavar="LIST",
            help="Side by side on one prompt of each kind: sampled (temperature 0.8), "
            "chat (template applied), thinking (on vs off); comma-separated, or none.",
        ),
    ] = "sampled",  # fmt: skip
    api_key: Annotated[
        str,
        typer.Option(
            "--api-key",
            envvar="REMOTEDBG_API_KEY",
            show_envvar=False,
            help="The server's API key, if its own --api-key cannot be read.",
        ),
    ] = "",  # fmt: skip
    budget: Annotated[
        float, typer.Option("--budget", min=1.0, help="Seconds the probe may take on the box.")
    ] = DEFAULT_BUDGET_S,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the load and the requests; send nothing.")
    ] = False,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Also write a Markdown report (and its SVG figure)."),
    ] = None,
) -> int:
    """Measure acceptance live: send a bounded set of prompts (chat, code, math, Chinese, long
    context; greedy and sampled) from the box to the server's loopback port and read the
    engine's own draft counts. Reports accept length against its ceiling per kind of prompt,
    acceptance per draft position, and what the shape means. The load is stated first.

    Example: remotedbg probe -H gpu-box --max-tokens 64"""
    parse_server(server)  # a bad --server is said before anything is done
    plan = probe_plan(prompts, per_category, max_tokens, compare)
    long = "long" in compared(compare)
    if is_host_list(ctx.options.host):
        if report is not None or dry_run:
            raise UsageError("--report and --dry-run take one host; give one --host")
        hosts = parse_hosts(ctx.options.host, None, options=ctx.options)
        pair = ", and 2 around each host's draft position limit" if long else ""
        note(f"sending {plan.describe()}{pair}, to each of {len(hosts)} hosts")

        def on_host(remote: Remote) -> dict:
            return probe_host(remote, server, plan, long, max_tokens, api_key, budget)

        return _fleet(map_hosts(hosts, ctx.options, on_host))
    if dry_run and not long:  # nothing to read on the box: the plan is all there is
        _show_plan(plan)
        return ExitCode.OK
    target, plan = prepare_probe(ctx.remote, server, plan, long, max_tokens)
    taken = (target.server or {}).get("taken_because")
    if taken:
        note(f"server pid {target.server['pid']}: {taken}")  # type: ignore[index]
    if long and not target.draft_context:
        note("--compare long: the served draft's config was not readable; the pair is left out")
    if dry_run:
        _show_plan(plan)
        return ExitCode.OK
    note(f"sending {plan.describe()}")
    result = probe_server(ctx.remote, target, plan, api_key, budget)
    result["host"] = ctx.session.name
    decided, headline = verdict(result["findings"], result["inconclusive"])
    shown = ProbeReport(result, decided, headline)
    if report is not None:
        figure = report.with_suffix(".svg")
        why_not = figure_svg(result, figure)
        if why_not:
            note(why_not)
        else:
            shown.figure = figure.name
    write(shown, report)
    if report is not None:
        note(f"report written to {report}" + (f" (figure {figure})" if shown.figure else ""))
    return exit_code(decided)


def _show_plan(plan: ProbePlan) -> None:
    def shown() -> None:
        stderr_console().print(f"would send {plan.describe()}", markup=False)
        for r in plan.requests:
            text = r["prompt"][:60].replace("\n", " ")
            stderr_console().print(
                f"  {r['id']:2} {r['category']:8} {r['mode']:7} {text!r}", markup=False
            )

    write(Document({"load": plan.describe(), "requests": plan.requests}, shown))


def _fleet(rows: list[HostValue]) -> int:
    """One row per host; the exit status is the worst host's."""
    for row in rows:
        if row.value is not None:
            decided, headline = verdict(row.value["findings"], row.value["inconclusive"])
            row.value.update(verdict=decided, headline=headline)
            row.exit_code = exit_code(decided)
    write(ProbeFleetReport(rows))
    return worst_exit([r.exit_code for r in rows])
