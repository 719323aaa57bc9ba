"""What a playbook run shows: the terminal rendering, the --json document and the Markdown
report, for one host or a fleet."""

import dataclasses
import shlex
import sys
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table

from remotedbg.fleet import HostResult, worst_exit
from remotedbg.front.cli.locate import also_on_box_lines, locate_lines
from remotedbg.front.environment import environment
from remotedbg.front.output import md_inline, printable
from remotedbg.front.report import Findings, Verdict
from remotedbg.front.writer import marked, plain, styled, uncut
from remotedbg.playbook import RunOutcome


def host_document(result: HostResult) -> dict:
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
            rows.append([result.host, "unreachable", str(result.exit_code)] + ["?"] * len(ids)
                        + [str(result.error or "")])  # fmt: skip
            continue
        severities = {}
        for item in result.outcome.findings:
            severities.setdefault(item["id"], item["severity"])
        reason = "" if result.outcome.verdict == "ok" else result.outcome.headline
        rows.append(
            [result.host, result.outcome.verdict, str(result.exit_code)]
            + [severities.get(i, "-") for i in ids]
            + [reason]
        )
    return ids, rows


@dataclass
class FleetReport:
    """A playbook on several hosts: a row per host, what differs between them."""

    name: str
    results: list[HostResult]
    diff: dict

    @property
    def exit_code(self) -> int:
        return worst_exit([r.exit_code for r in self.results])

    def to_json(self) -> dict:
        return {
            "playbook": self.name,
            "exit_code": self.exit_code,
            "differences": self.diff,
            "hosts": [host_document(r) for r in self.results],
        }

    def to_markdown(self) -> str:
        return fleet_markdown(self.name, self.results, self.diff)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        ids, rows = _fleet_rows(self.results)
        table = Table(
            title=f"{self.name} on {len(self.results)} hosts", title_justify="left", box=None
        )
        # host and verdict are what a reader scans for: never cut; finding columns fold instead
        table.add_column("host", no_wrap=True)
        table.add_column("verdict", no_wrap=True)
        table.add_column("exit", no_wrap=True)
        for finding_id in ids:
            table.add_column(finding_id, overflow="fold")
        table.add_column("reason", overflow="fold")  # the headline of each host that is not ok
        for row in rows:
            table.add_row(*[printable(cell) for cell in row])
        # columns fold: a reason is never cut (not the consoles' soft wrap)
        yield from uncut(console, options.update(no_wrap=None, overflow=None), table)
        if self.diff:
            yield marked(console, "\n[bold]differences between hosts[/]")
            for fact, values in self.diff.items():
                spread = ", ".join(f"{host}={value}" for host, value in values.items())
                yield plain(console, f"  {fact}: {spread}")
        else:
            yield plain(console, "no differences between the reachable hosts")


def fleet_markdown(name: str, results: list[HostResult], diff: dict) -> str:
    ids, rows = _fleet_rows(results)
    lines = [
        f"# remotedbg {name} on {len(results)} hosts",
        "",
        "| host | verdict | exit | " + "".join(f"`{i}` | " for i in ids) + "reason |",
        "| --- " * (4 + len(ids)) + "|",
    ]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
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


def outcome_document(outcome: RunOutcome) -> dict:
    audit = outcome.section("drafts")
    return {
        "playbook": outcome.playbook,
        "host": outcome.host,
        **Verdict(outcome.verdict, outcome.headline).to_json(),
        "findings": Findings(outcome.findings).to_json(),
        "drafts": audit.get("drafts", []),
        "inconclusive": outcome.inconclusive,
        "also_on_box": also_on_box(outcome),
        "steps": [dataclasses.asdict(s) for s in outcome.steps],
        "round_trips": outcome.round_trips,
        "results": outcome.results,
    }


@dataclass
class RunReport:
    """One playbook run on one host: verdict, drafts, servers, findings, steps."""

    outcome: RunOutcome

    def to_json(self) -> dict:
        return outcome_document(self.outcome)

    def to_markdown(self) -> str:
        return outcome_markdown(self.outcome)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        outcome = self.outcome
        yield Verdict(outcome.verdict, outcome.headline)
        for draft in outcome.section("drafts").get("drafts", []):
            vocab = draft.get("vocab") or {}
            loader = draft.get("loader") or {}
            yield marked(
                console,
                f"[bold]draft[/] {printable(draft['draft'])}: format "
                f"{vocab.get('format', '?')}, {vocab.get('draft_vocab', '?')} -> "
                f"{vocab.get('target_vocab', '?')} ids; loader "
                f"{printable(str(loader.get('path', 'not resolved')))}"
                f" ({loader.get('d2t_handling', '-')})",
            )
            for other in (draft.get("loaders") or [])[1:]:  # a draft no server runs: each install
                yield plain(
                    console,
                    f"  also judged with {printable(str(other.get('path')))} "
                    f"({other.get('d2t_handling', '-')})",
                )
        for line in server_lines(outcome):
            yield plain(console, line)
        yield Findings(outcome.findings)
        for line in also_on_box_lines(also_on_box(outcome)):
            yield from styled(console, options, plain(console, printable(line)), "dim")
        located = outcome.section("locate")
        if located:
            yield from locate_lines(located, console)
        steps = ", ".join(f"{s.id} {s.status} {s.duration_ms:.0f} ms" for s in outcome.steps)
        yield marked(console, f"[dim]steps: {steps}; {outcome.round_trips} remote round trips[/]")


def also_on_box(outcome: RunOutcome) -> list[dict]:
    """Servers outside what the user named (`--var draft/roots/args/log`): every step lists
    them, none judges them. One entry per server, by pid."""
    seen: dict[str, dict] = {}
    for result in outcome.results.values():
        if not isinstance(result, dict):
            continue
        for server in result.get("also_on_box") or []:
            seen.setdefault(str(server.get("pid")), dict(server))
        for row in result.get("other_servers") or []:
            seen.setdefault(str(row.get("server")), {"pid": row.get("server")})
    for server in outcome.section("servers").get("servers") or []:
        known = seen.get(str(server.get("pid")))
        if known is not None:
            known.setdefault("engine", server.get("engine"))
            known.setdefault("cmdline", server.get("cmdline"))
    return list(seen.values())


def server_lines(outcome: RunOutcome) -> list[str]:
    """One line per server a spec-audit judged: algorithm, ceiling and observed accept length."""
    lines = []
    outside = {str(s.get("pid")) for s in also_on_box(outcome)}
    for server in outcome.section("servers").get("servers") or []:
        if str(server.get("pid")) in outside:
            continue
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
    words = environment().words
    typed = words if words is not None else sys.argv[1:]
    command = redact_text(shlex.join(["remotedbg", *typed]))
    lines = [f"- command: `{md_inline(command)}`", f"- remotedbg {__version__}, {now}"]
    for engine in outcome.section("engines").get("engines") or []:
        running = ", running" if engine.get("running") else ""
        lines.append(
            f"- engine: {md_inline(engine.get('name'))} "
            f"{md_inline(engine.get('version') or '(version unknown)')} "
            f"at `{md_inline(engine.get('path'))}`{running}"
        )
    return lines


def outcome_markdown(outcome: RunOutcome, level: int = 1) -> str:
    """One host's report; `level` is its title's heading level (2 inside a fleet report)."""
    title, section = "#" * level, "#" * (level + 1)
    lines = [
        f"{title} remotedbg {md_inline(outcome.playbook)} on `{md_inline(outcome.host)}`",
        "",
        Verdict(outcome.verdict, outcome.headline).to_markdown(),
        "",
        *provenance_markdown(outcome),
    ]
    for draft in outcome.section("drafts").get("drafts", []):
        vocab = draft.get("vocab") or {}
        loader = draft.get("loader") or {}
        lines += [
            f"- draft `{md_inline(draft['draft'])}`: format `{md_inline(vocab.get('format'))}`, "
            f"draft vocab {md_inline(vocab.get('draft_vocab'))}, target vocab "
            f"{md_inline(vocab.get('target_vocab'))}, loader `{md_inline(loader.get('path'))}` "
            f"({md_inline(loader.get('d2t_handling'))})"
        ]
        for evidence in (loader.get("evidence") or [])[:12]:
            text = md_inline(str(evidence.get("text", "")).strip())
            lines.append(f"  - `{md_inline(loader.get('path'))}:{md_inline(evidence.get('line'))}`"
                         f": `{text}`")  # fmt: skip
    lines += [
        "",
        f"{section} Findings",
        "",
        Findings(outcome.findings).to_markdown(level + 2),
        f"{section} Steps",
        "",
        "| step | action | status | ms |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {md_inline(s.id)} | {md_inline(s.action)} | {md_inline(s.status)} | "
              f"{s.duration_ms:.0f} |" for s in outcome.steps]  # fmt: skip
    return "\n".join(lines) + "\n"
