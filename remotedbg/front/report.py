"""Findings for people: rich terminal rendering and Markdown for bug reports."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
VERDICT_STYLE = {"ok": "bold green", "defect": "bold red", "inconclusive": "bold yellow"}


def sorted_findings(findings: list[dict]) -> list[dict]:
    return sorted(findings, key=lambda f: SEVERITY_ORDER.get(f["severity"], 9))


def _value(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_findings(console: Console, findings: list[dict]) -> None:
    if not findings:
        console.print("[green]no findings[/]")
        return
    for item in sorted_findings(findings):
        style = SEVERITY_STYLE.get(item["severity"], "")
        console.print(
            f"[{style}]{item['severity'].upper():7}[/] [bold]{escape(item['id'])}[/]: "
            f"{escape(item['title'])}"
        )
        if item.get("detail"):
            console.print(f"         {escape(item['detail'])}", soft_wrap=True)
        for label, value in item.get("evidence", {}).items():
            console.print(f"         [dim]{escape(str(label))}:[/] {escape(_value(value))}")


def render_verdict(console: Console, verdict: str, headline: str) -> None:
    style = VERDICT_STYLE.get(verdict, "bold")
    # the reason is what a reader needs: it wraps inside the box (the consoles soft-wrap, which
    # would crop a panel's line at the terminal's edge)
    console.print(
        Panel(f"[{style}]{verdict.upper()}[/]  {escape(headline)}", expand=False),
        soft_wrap=False,
    )


def summary_table(title: str, rows: list[tuple[str, Any]]) -> Table:
    table = Table(title=title, show_header=False, box=None, title_justify="left")
    table.add_column(style="dim")
    table.add_column()
    for label, value in rows:
        table.add_row(label, escape(_value(value, 200)))
    return table


def findings_markdown(findings: list[dict], level: int = 3) -> str:
    if not findings:
        return "No findings.\n"
    lines = []
    for item in sorted_findings(findings):
        lines.append(f"{'#' * level} {item['severity'].upper()} `{item['id']}`: {item['title']}\n")
        if item.get("detail"):
            lines.append(item["detail"] + "\n")
        for label, value in item.get("evidence", {}).items():
            lines.append(f"- **{label}**: `{_value(value, 400)}`")
        lines.append("")
    return "\n".join(lines) + "\n"
