"""What `probe` shows: bars in the terminal (rich), a Markdown report with a figure (SVG drawn by
matplotlib, the `plots` extra), and the sparkline `logs` draws of accept length."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table

from remotedbg import __version__
from remotedbg.front.output import printable
from remotedbg.front.report import Findings, Verdict
from remotedbg.front.writer import plain, uncut
from remotedbg.local_files import write_text

_BAR_WIDTH = 30
_SPARKS = "▁▂▃▄▅▆▇█"


def bar(value: float | None, full: float, width: int = _BAR_WIDTH) -> str:
    if value is None or full <= 0:
        return ""
    cells = max(0, min(width, round(width * value / full)))
    return "█" * cells + "·" * (width - cells)


def sparkline(values: list[float], low: float | None = None, high: float | None = None) -> str:
    if not values:
        return ""
    low = min(values) if low is None else low
    high = max(values) if high is None else high
    span = (high - low) or 1.0
    return "".join(
        _SPARKS[max(0, min(len(_SPARKS) - 1, int((v - low) / span * (len(_SPARKS) - 1) + 0.5)))]
        for v in values
    )


def _length(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "-"


def server_line(result: dict[str, Any]) -> str:
    server = result["server"]
    where = f"pid {server['pid']}, " if server.get("pid") else ""
    return (
        f"{server['engine']} {server.get('version') or ''} ({where}port {server['port']}), "
        f"model {server.get('model')}, {server.get('algorithm') or 'algorithm ?'}, ceiling "
        f"{server.get('ceiling') or '?'} tokens per verify step"
    )


def not_speculating_line(result: dict[str, Any]) -> str:
    server = result["server"]
    where = f"pid {server['pid']}, " if server.get("pid") else ""
    why = f" ({result['not_speculating']})" if result.get("not_speculating") else ""
    return (
        f"{server['engine']} {server.get('version') or ''} ({where}port {server['port']}) does "
        f"not speculate{why}: its answers carry no draft counts, nothing to measure"
    )


def _rows(table: Table, rows: list[tuple[str, dict[str, Any]]], full: float) -> None:
    for name, figures in rows:
        spread = (
            f"{_length(figures.get('min'))}-{_length(figures.get('max'))}"
            if figures.get("min") is not None
            else "-"
        )
        table.add_row(
            printable(name),
            str(figures["requests"]),
            _length(figures.get("accept_length")),
            bar(figures.get("accept_length"), full),
            spread,
            str(figures.get("tokens_per_s") or "-"),
        )


@dataclass
class ProbeReport:
    """Acceptance measured on one server: verdict, tables by kind of prompt, mode and draft
    position, findings; `figure` is the SVG the Markdown report shows, when one was drawn."""

    result: dict[str, Any]
    verdict: str
    headline: str
    figure: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {**Verdict(self.verdict, self.headline).to_json(), **self.result}

    def to_markdown(self) -> str:
        return probe_markdown(self.result, self.verdict, self.headline, self.figure)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        result = self.result
        if result.get("spec_off"):  # nothing to measure: one line
            yield plain(console, printable(not_speculating_line(result)))
            return
        yield Verdict(self.verdict, self.headline)
        yield plain(console, printable(server_line(result)))
        summary = result["summary"]
        ceiling = summary.get("ceiling") or 0
        overall = summary["overall"]
        full = ceiling or max([overall.get("accept_length") or 1.0, 1.0])
        table = Table(
            "", "req", "accept len", f"of {ceiling or '?'}", "min-max", "tok/s", box=None,
            title="accept length: all requests, then by kind of prompt (raw, greedy)",
            title_justify="left",
        )  # fmt: skip
        _rows(table, [("all", overall)] + sorted(summary["by_category"].items()), full)
        yield from uncut(console, options, table)
        if overall.get("no_drafts"):
            yield plain(
                console,
                f"{overall['no_drafts']} of the {overall['requests']} requests got no draft at "
                f"all ({result['server'].get('algorithm') or 'the method'} proposed nothing for "
                "them); accept length is over the verify steps that had drafts",
            )
        if len(summary["by_mode"]) > 1:
            modes = Table(
                "mode", "req", "accept len", f"of {ceiling or '?'}", "min-max", "tok/s", box=None,
                title="side by side, on the first prompt of each kind", title_justify="left",
            )  # fmt: skip
            by_mode = sorted(summary["by_mode"].items(), key=lambda kv: kv[0] != "greedy")
            _rows(modes, by_mode, full)
            yield from uncut(console, options, modes)
        positions = summary.get("positions")
        if positions:
            curve = Table("position", "accepted", "", box=None,
                          title="acceptance by draft position", title_justify="left")  # fmt: skip
            for index, rate in enumerate(positions):
                curve.add_row(str(index), f"{100 * rate:.1f}%", bar(rate, 1.0))
            yield from uncut(console, options, curve)
        for failed in summary.get("failed") or []:
            yield plain(
                console,
                printable(
                    f"request {failed.get('id')} ({failed.get('category')}): {failed['error']}"
                ),
            )
        own = result.get("engine_figure")
        if own:
            yield plain(
                console,
                f"the engine's own figure: accept length {own['accept_length']:.2f} "
                f"({own['from']})",
            )
        if summary.get("other_traffic_tokens"):
            yield plain(
                console,
                f"other traffic generated {summary['other_traffic_tokens']} tokens during the "
                "probe; its drafts are in the /metrics deltas",
            )
        yield Findings(result["findings"])


@dataclass
class ProbeFleetReport:
    """probe on several hosts: one row each (fleet.HostValue), what differs at a glance."""

    rows: list[Any]

    def to_json(self) -> dict[str, Any]:
        return {"hosts": [{"host": r.host, "exit_code": r.exit_code, "error": r.error,
                           **(r.value or {})} for r in self.rows]}  # fmt: skip

    def to_markdown(self) -> str:
        return "```json\n" + json.dumps(self.to_json(), indent=2, default=str) + "\n```\n"

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rows = self.rows
        table = Table("host", "verdict", "server", "accept len", "of", "position 0", "lowest kind",
                      "findings", box=None, title=f"probe on {len(rows)} hosts",
                      title_justify="left")  # fmt: skip
        for row in rows:
            if row.value is None:
                table.add_row(printable(row.host), "unreachable", "-", "-", "-", "-", "-",
                              printable(row.error or ""))  # fmt: skip
                continue
            result = row.value
            summary = result["summary"]
            kinds = {k: f["accept_length"] for k, f in summary["by_category"].items()
                     if f.get("accept_length") is not None}  # fmt: skip
            low = min(kinds, key=lambda k: kinds[k]) if kinds else None
            positions = summary.get("positions")
            table.add_row(
                printable(row.host),
                result["verdict"],
                f"{result['server']['engine']} {result['server'].get('version') or ''}",
                _length(summary["overall"].get("accept_length")),
                str(summary.get("ceiling") or "?"),
                f"{100 * positions[0]:.0f}%" if positions else "-",
                f"{low} {kinds[low]:.2f}" if low else "-",
                ", ".join(dict.fromkeys(f["id"] for f in result["findings"])) or "-",
            )
        yield from uncut(console, options, table)


def figure_svg(result: dict[str, Any], path: Path) -> str | None:
    """The per-category bars and the per-position curve as one SVG; None (and why) when
    matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no figure: matplotlib is not installed (pip install 'remotedbg[plots]')"
    summary = result["summary"]
    ceiling = summary.get("ceiling")
    categories = sorted(summary["by_category"].items())
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    names = [name for name, _ in categories]
    lengths = [figures.get("accept_length") or 0 for _, figures in categories]
    left.bar(names, lengths, color="#4c72b0")
    if ceiling:
        left.axhline(ceiling, color="#c44e52", linestyle="--", label=f"ceiling {ceiling}")
        left.legend(loc="upper right", fontsize=8)
    left.set_title("accept length by kind of prompt", fontsize=10)
    left.set_ylim(0, max([ceiling or 0] + lengths + [1]) * 1.1)
    positions = summary.get("positions") or []
    right.plot(range(len(positions)), [100 * p for p in positions], marker="o", color="#55a868")
    right.set_ylim(0, 100)
    right.set_xticks(range(len(positions)))
    right.set_xlabel("draft position")
    right.set_title("accepted at each draft position (%)", fontsize=10)
    fig.tight_layout()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    write_text(path, buffer.getvalue())  # as the report: never through a planted symlink
    plt.close(fig)
    return None


def probe_markdown(result: dict[str, Any], verdict: str, headline: str, figure: str | None) -> str:
    summary = result["summary"]
    lines = [
        f"# remotedbg probe on `{result.get('host', '?')}`",
        "",
        Verdict(verdict, headline).to_markdown(),
        "",
        f"- remotedbg {__version__}",
        f"- server: {server_line(result)}",
        f"- load: {result['load']['requests']} requests, at most "
        f"{result['load']['max_new_tokens']} new tokens",
    ]
    own = result.get("engine_figure")
    if own:
        lines.append(f"- the engine's own figure: accept length {own['accept_length']:.2f} "
                     f"({own['from']})")  # fmt: skip
    lines += [
        "",
    ]
    lines += acceptance_markdown(summary, figure)
    lines += ["", "## Findings", "", Findings(result["findings"]).to_markdown(3)]
    return "\n".join(lines) + "\n"


def acceptance_markdown(summary: dict[str, Any], figure: str | None) -> list[str]:
    """The figure (when drawn), then accept length per kind of prompt and per draft position."""
    lines = [f"![acceptance]({figure})", ""] if figure else []
    lines += ["| requests | n | accept length | min | max | tok/s |", "| --- " * 6 + "|"]
    rows = [("all", summary["overall"])]
    rows += [(f"{kind} (raw, greedy)", f) for kind, f in sorted(summary["by_category"].items())]
    if len(summary.get("by_mode") or {}) > 1:
        rows += [(f"mode {mode}", f) for mode, f in sorted(summary["by_mode"].items())]
    for name, f in rows:
        lines.append(
            f"| {name} | {f['requests']} | {_length(f.get('accept_length'))} | "
            f"{_length(f.get('min'))} | {_length(f.get('max'))} | {f.get('tokens_per_s') or '-'} |"
        )
    if summary.get("positions"):
        lines += ["", "| draft position | accepted |", "| --- | --- |"]
        lines += [f"| {i} | {100 * p:.1f}% |" for i, p in enumerate(summary["positions"])]
    return lines
