"""Verdicts and findings for people: each renders itself in the terminal (rich's renderable
protocol), as Markdown for bug reports and as its part of a --json document."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from remotedbg.front.output import md_inline

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
VERDICT_STYLE = {"ok": "bold green", "defect": "bold red", "inconclusive": "bold yellow"}


def sorted_findings(findings: list[dict]) -> list[dict]:
    return sorted(findings, key=lambda f: SEVERITY_ORDER.get(f["severity"], 9))


def _value(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Verdict:
    """A verdict and the reason for it: a boxed line in the terminal, a bold line in Markdown."""

    verdict: str
    headline: str

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        style = VERDICT_STYLE.get(self.verdict, "bold")
        panel = Panel(f"[{style}]{self.verdict.upper()}[/]  {escape(self.headline)}", expand=False)
        # the reason is what a reader needs: it wraps inside the box (the consoles soft-wrap,
        # which would crop a panel's line at the terminal's edge)
        yield from console.render(panel, options.update(no_wrap=None, overflow=None))

    def to_markdown(self) -> str:
        return f"**Verdict: {self.verdict.upper()}**: {md_inline(self.headline)}"

    def to_json(self) -> dict[str, str]:
        return {"verdict": self.verdict, "headline": self.headline}


@dataclass(frozen=True)
class Findings:
    """Findings, the most severe first: a line each and its detail and evidence indented in the
    terminal, a heading each in Markdown."""

    items: list[dict]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self.items:
            yield console.render_str("[green]no findings[/]")
            return
        for item in sorted_findings(self.items):
            style = SEVERITY_STYLE.get(item["severity"], "")
            yield console.render_str(
                f"[{style}]{item['severity'].upper():7}[/] [bold]{escape(item['id'])}[/]: "
                f"{escape(item['title'])}"
            )
            if item.get("detail"):
                yield console.render_str(f"         {escape(item['detail'])}")
            for label, value in item.get("evidence", {}).items():
                yield console.render_str(
                    f"         [dim]{escape(str(label))}:[/] {escape(_value(value))}"
                )

    def to_markdown(self, level: int = 3) -> str:
        if not self.items:
            return "No findings.\n"
        lines = []
        for item in sorted_findings(self.items):
            heading = (f"{md_inline(item['severity']).upper()} `{md_inline(item['id'])}`: "
                       f"{md_inline(item['title'])}")  # fmt: skip
            lines.append(f"{'#' * level} {heading}\n")
            if item.get("detail"):
                lines.append(md_inline(item["detail"]) + "\n")
            for label, value in item.get("evidence", {}).items():
                lines.append(f"- **{md_inline(label)}**: `{md_inline(_value(value, 400))}`")
            lines.append("")
        return "\n".join(lines) + "\n"

    def to_json(self) -> list[dict]:
        return self.items


def summary_table(title: str, rows: list[tuple[str, Any]]) -> Table:
    table = Table(title=title, show_header=False, box=None, title_justify="left")
    table.add_column(style="dim")
    table.add_column()
    for label, value in rows:
        table.add_row(label, escape(_value(value, 200)))
    return table
