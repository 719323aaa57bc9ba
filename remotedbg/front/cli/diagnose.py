"""diagnose: one command from "acceptance is low" to the root cause, ranked, with what was ruled
out and what could not be checked."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from remotedbg.actions.server_arg import parse_server
from remotedbg.analysis.diagnosis import Diagnosis
from remotedbg.contract import exit_code
from remotedbg.diagnose import DEFAULT_BUDGET_S, diagnose_host
from remotedbg.errors import UsageError
from remotedbg.fleet import HostValue, map_hosts, parse_hosts, worst_exit
from remotedbg.front.cli.context import CommandContext, ServerOption, parse_vars, remote_command
from remotedbg.front.cli.probe_report import acceptance_markdown, figure_svg
from remotedbg.front.environment import note, stdout_console
from remotedbg.front.output import md_inline, printable
from remotedbg.front.report import Verdict
from remotedbg.front.writer import Document, write
from remotedbg.inventory import is_host_list
from remotedbg.local_files import write_text
from remotedbg.remote.primitives import Remote


@remote_command
def diagnose(
    ctx: CommandContext,
    server: ServerOption = "",
    var: Annotated[
        list[str] | None,
        typer.Option(
            "--var",
            help="KEY=VALUE as for spec-audit: draft, target, args, log, "
            "train_layers (repeatable).",
        ),
    ] = None,  # fmt: skip
    budget: Annotated[
        float,
        typer.Option("--budget", min=1.0, help="Seconds the live probe may take on the box."),
    ] = DEFAULT_BUDGET_S,
    no_probe: Annotated[
        bool,
        typer.Option("--no-probe", help="Send the server no request (static checks and logs)."),
    ] = False,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report", metavar="FILE.md", help="Also write a bug-report-ready Markdown file."
        ),
    ] = None,
) -> int:
    """Why is acceptance low? Finds the server, the install it imports, its draft and target,
    runs every static check (vocab map, algorithm, layers, fc, weights, tokenizer, context...),
    reads its log and sends a short greedy probe (within --budget; --no-probe for none), then
    ranks the causes, shows what was ruled out and what could not be checked.

    Example: remotedbg diagnose -H gpu-box"""
    parse_server(server)  # a bad --server is said before anything is done
    given = parse_vars(var or [])
    if is_host_list(ctx.options.host):
        if report is not None:
            raise UsageError("--report takes one host; give one --host")

        def on_host(remote: Remote) -> dict:
            return diagnose_host(remote, server, given, budget, not no_probe)

        hosts = parse_hosts(ctx.options.host, None, options=ctx.options)
        return _fleet(map_hosts(hosts, ctx.options, on_host))
    if not no_probe:
        note(f"a short greedy probe follows the static checks (at most {budget:g} s on the box)")
    found = diagnose_host(ctx.remote, server, given, budget, not no_probe)
    result: Diagnosis = found["diagnosis"]
    document = {"host": ctx.session.name, "server": found["server"],
                "engines": found["engines"], "probe_note": found["probe_note"],
                **result.document()}  # fmt: skip
    write(Document(document, lambda: render(document)))
    if report is not None:
        figure, why_not = _figure(found.get("probe"), report)
        write_text(report, markdown(document, found.get("probe"), figure))
        note(f"report written to {report}" + (f" (figure {report.with_suffix('.svg')})"
                                               if figure else ""))  # fmt: skip
        if why_not:
            note(why_not)
    return exit_code(result.verdict)


def _fleet(rows: list[HostValue]) -> int:
    documents = []
    for row in rows:
        if row.value is None:
            documents.append({"host": row.host, "verdict": "unreachable", "error": row.error,
                              "exit_code": row.exit_code})  # fmt: skip
            continue
        result: Diagnosis = row.value["diagnosis"]
        row.exit_code = exit_code(result.verdict)
        first = result.causes[0].id if result.causes else None
        documents.append({"host": row.host, "exit_code": row.exit_code, "first_cause": first,
                          **result.document()})  # fmt: skip
    code = worst_exit([r.exit_code for r in rows])

    def shown() -> None:
        table = Table(title=f"diagnose on {len(rows)} hosts", title_justify="left", box=None)
        for name in ("host", "verdict", "exit"):
            table.add_column(name, no_wrap=True)
        table.add_column("first cause / reason", overflow="fold")
        for doc in documents:
            why = doc.get("error") or doc.get("headline") or ""
            table.add_row(
                printable(doc["host"]), doc["verdict"], str(doc["exit_code"]), printable(why)
            )
        stdout_console().print(table, soft_wrap=False)

    write(Document({"hosts": documents, "exit_code": code}, shown))
    return code


def _evidence_lines(evidence: dict[str, Any], limit: int = 5) -> list[str]:
    return [f"{k}: {printable(str(v))[:160]}" for k, v in list(evidence.items())[:limit]]


def render(doc: dict[str, Any]) -> None:
    console = stdout_console()
    console.print(Verdict(doc["verdict"], doc["headline"]))
    server = doc.get("server")
    if server:
        console.print(
            printable(
                f"server pid {server['pid']} ({server.get('engine')}, port {server.get('port')}),"
                f" {server.get('algorithm') or '?'}, draft {server.get('draft')}, target "
                f"{server.get('target')}"
                + (f" ({server['taken_because']})" if server.get("taken_because") else "")
            ),
            markup=False,
            highlight=False,
        )
    for engine in doc.get("engines") or []:
        if engine.get("running"):
            console.print(
                printable(f"install: {engine['name']} {engine.get('version')} at {engine['path']}"),
                markup=False,
                highlight=False,
            )
    measured = measured_line(doc.get("measured") or {})
    if measured:
        console.print(f"measured: {measured}", markup=False, highlight=False)
    if doc.get("probe_note"):
        console.print(f"probe: {printable(doc['probe_note'])}", markup=False, highlight=False)
    if doc["causes"]:
        console.print("\n[bold]causes, most direct first[/]")
    for number, cause in enumerate(doc["causes"], 1):
        console.print(
            f"{number:2}. {cause['severity'].upper():7} {cause['id']}: {printable(cause['title'])}"
            f" [{cause['source']}]",
            markup=False,
            highlight=False,
        )
        for line in _evidence_lines(cause["evidence"]):
            console.print(f"      {line}", markup=False, highlight=False)
        for line in hanging("      fix: ", printable(cause["fix"]), console.width):
            console.print(line, markup=False, highlight=False)
    if doc["ruled_out"]:
        console.print("\n[bold]ruled out[/]")
    for item in doc["ruled_out"]:
        console.print(
            printable(f"  - {item['hypothesis']}: {item['how']} ({item['check']})"),
            markup=False,
            highlight=False,
        )
    if doc["unknown"]:
        console.print("\n[bold]could not be checked[/]")
    for item in doc["unknown"]:
        console.print(printable(f"  - {item['check']}: {item['reason']}"), markup=False)


def hanging(head: str, text: str, width: int) -> list[str]:
    """`head` and `text` wrapped at words to `width` columns, the lines after the first indented
    under the text: whole on any terminal (the console's own soft wrap would break words and
    indentation where the terminal ends). A word longer than the width stays whole."""
    import textwrap

    return textwrap.wrap(text, width=max(width, len(head) + 20), initial_indent=head,
                         subsequent_indent=" " * len(head), break_long_words=False,
                         break_on_hyphens=False) or [head.rstrip()]  # fmt: skip


def measured_line(measured: dict[str, Any]) -> str:
    length = measured.get("accept_length")
    if not isinstance(length, (int, float)):
        return ""
    parts = [f"accept length {length:.2f}"
             + (f" of {measured['ceiling']}" if measured.get("ceiling") else "")
             + f" ({measured.get('from')})"]  # fmt: skip
    kinds = measured.get("by_category") or {}
    if kinds:
        parts.append("by kind: " + ", ".join(
            f"{k} {v:.2f}" for k, v in kinds.items() if isinstance(v, (int, float))))  # fmt: skip
    if measured.get("positions"):
        parts.append("per position: " + ", ".join(f"{p:.2f}" for p in measured["positions"]))
    own = measured.get("engine_figure") or {}
    if own.get("accept_length") is not None:
        parts.append(f"the engine's own figure {own['accept_length']:.2f} ({own.get('from')})")
    return "; ".join(parts)


def _figure(probed: dict | None, report: Path) -> tuple[str | None, str | None]:
    """The probe's figure beside the report: (its file name, None), or (None, why not)."""
    if not probed or not (probed.get("summary") or {}).get("overall"):
        return None, None
    why_not = figure_svg(probed, report.with_suffix(".svg"))
    return (None, why_not) if why_not else (report.with_suffix(".svg").name, None)


def markdown(doc: dict[str, Any], probed: dict | None = None, figure: str | None = None) -> str:
    import datetime

    from remotedbg import __version__

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    m = md_inline
    lines = [f"# remotedbg diagnose on `{m(doc['host'])}`", "",
             Verdict(doc["verdict"], doc["headline"]).to_markdown(), "",
             f"- remotedbg {__version__}, {now}"]  # fmt: skip
    server = doc.get("server")
    if server:
        lines.append(f"- server: pid {m(server['pid'])}, {m(server.get('engine'))}, port "
                     f"{m(server.get('port'))}, {m(server.get('algorithm'))}, draft "
                     f"`{m(server.get('draft'))}`, target `{m(server.get('target'))}`")  # fmt: skip
    for engine in doc.get("engines") or []:
        running = ", running" if engine.get("running") else ""
        lines.append(f"- engine: {m(engine['name'])} {m(engine.get('version'))} at "
                     f"`{m(engine['path'])}`{running}")  # fmt: skip
    measured = measured_line(doc.get("measured") or {})
    if measured:
        lines.append(f"- measured: {m(measured)}")
    if probed and (probed.get("summary") or {}).get("overall"):
        lines += ["", "## Acceptance measured by the probe", ""]
        lines += acceptance_markdown(probed["summary"], figure)
    lines += ["", "## Causes, most direct first", ""]
    for number, cause in enumerate(doc["causes"], 1):
        lines.append(f"{number}. **{m(cause['id'])}** ({m(cause['severity'])}, {m(cause['source'])}"
                     f"): {m(cause['title'])}")  # fmt: skip
        lines += [f"   - {m(line)}" for line in _evidence_lines(cause["evidence"], 8)]
        lines.append(f"   - fix: {m(cause['fix'])}")
    if not doc["causes"]:
        lines.append("None.")
    lines += ["", "## Ruled out", ""]
    lines += [f"- {m(i['hypothesis'])}: {m(i['how'])} (`{m(i['check'])}`)"
              for i in doc["ruled_out"]]  # fmt: skip
    lines += ["", "## Could not be checked", ""]
    lines += [f"- `{m(i['check'])}`: {m(i['reason'])}" for i in doc["unknown"]] or ["Nothing."]
    return "\n".join(lines) + "\n"
