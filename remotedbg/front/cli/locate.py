"""locate-eagle: which engine code will load the draft, and what it does with d2t."""
# No `from __future__ import annotations` here: typer reads the Annotated options at runtime.

import json
from dataclasses import dataclass
from typing import Annotated

import typer
from rich.console import Console, ConsoleOptions, RenderResult
from rich.syntax import Syntax
from rich.table import Table

from remotedbg.actions.container_route import unreadable_line
from remotedbg.actions.locate import locate_engines
from remotedbg.analysis.plugins import plugin_lines
from remotedbg.analysis.served_code import drift_line
from remotedbg.engines.profiles import engines_named
from remotedbg.errors import ExitCode
from remotedbg.front.cli.context import CommandContext, remote_command
from remotedbg.front.environment import environment, stderr_console
from remotedbg.front.output import printable
from remotedbg.front.writer import marked, plain, write

HANDLING_STYLE = {"offsets": "green", "direct": "bold red", "none": "dim", "unknown": "yellow"}


@remote_command
def locate_eagle(
    ctx: CommandContext,
    root: Annotated[
        list[str] | None,
        typer.Option(
            "--root",
            help="Engine checkout or package dir to judge with (repeatable); given, nothing "
            "else is searched and other servers are only listed.",
        ),
    ] = None,
    arch: Annotated[
        list[str] | None,
        typer.Option(
            "--arch",
            help="A draft's architectures entry: resolve the file and class that loads "
            "it (repeatable).",
        ),
    ] = None,
    no_home: Annotated[
        bool, typer.Option("--no-home", help="Do not search the home directory.")
    ] = False,
    all_homes: Annotated[
        bool,
        typer.Option("--all-homes", help="Also search every home under /home (other users')."),
    ] = False,
    evidence: Annotated[
        bool,
        typer.Option(
            "--evidence/--no-evidence", help="Show the lines that mention d2t and friends."
        ),
    ] = True,
) -> int:
    """Find SGLang/vLLM installs, their draft-model files, and how each handles d2t.

    Example: remotedbg locate-eagle -H gpu-box"""
    search_home: bool | str = "all" if all_homes else not no_home
    found = locate_engines(
        ctx.remote, root or [], search_home=search_home, architectures=arch or []
    )
    write(LocateReport(found, evidence))
    for server in found["unreadable"]:
        stderr_console().print(printable(unreadable_line(server)), markup=False)
    if not environment().json:
        for line in also_on_box_lines(found.get("also_on_box") or []):
            stderr_console().print(printable(line), markup=False, highlight=False)
    if found["unreadable"]:
        return ExitCode.REMOTE  # a running server's engine code went unread: inconclusive
    return ExitCode.OK if found["engines"] else ExitCode.FINDINGS


def also_on_box_lines(strangers: list[dict]) -> list[str]:
    """Servers outside what was named: listed so nothing is hidden, judged by nothing."""
    if not strangers:
        return []
    lines = [f"also on this box, not judged ({len(strangers)} server(s) outside what was named):"]
    for server in strangers:
        where = f" in container {server['container']}" if server.get("container") else ""
        command = server.get("cmdline") or ""
        command = (command if isinstance(command, str) else " ".join(command))[:160]
        lines.append(f"  pid {server['pid']} {server.get('engine') or '?'}{where}: {command}")
    return lines


def container_line(place: dict) -> str:
    """Where a path of a container is: the container and the path as the container sees it."""
    who = place.get("name") or place.get("id") or "?"
    image = f", image {place['image']}" if place.get("image") else ""
    return printable(
        f"inside {place.get('runtime') or 'a'} container {who}{image}, at "
        f"{place.get('path_in_container') or '?'} there"
        + (f", read through {place.get('runtime')} exec" if place.get("route") == "exec" else "")
    )


@dataclass
class LocateReport:
    """What locate-eagle found: the installs, their draft-model files and d2t handling."""

    found: dict
    show_evidence: bool = True

    def to_json(self) -> dict:
        return self.found

    def to_markdown(self) -> str:
        return "```json\n" + json.dumps(self.found, indent=2, default=str) + "\n```\n"

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from locate_lines(self.found, console, self.show_evidence)


def say_no_install(found: dict) -> None:
    """Where was searched, on stderr, when no install was found."""
    stderr_console().print(f"no {engines_named()} install found. Searched:", markup=False)
    for place in found["searched"][:30]:
        stderr_console().print(f"  {printable(place)}", markup=False)
    stderr_console().print(
        "Point at one with --root DIR (a checkout's python/sglang, or a "
        "site-packages/vllm), or pass --python for the engine's venv.",
        markup=False,
    )


def locate_lines(found: dict, console: Console, show_evidence: bool = True) -> RenderResult:
    if not found["engines"]:
        say_no_install(found)
        return
    yield plain(console, locate_summary(found))
    for engine in found["engines"]:
        running = (
            f"  [bold green]running (pid {', '.join(map(str, engine['running']))})[/]"
            if engine["running"]
            else ""
        )
        heading = (engine.get("label") if engine.get("fork")
                   else f"{engine['name']} {engine.get('version') or '(version unknown)'}")
        yield marked(console, f"\n[bold]{heading}[/] at {printable(engine['path'])}{running}")
        yield plain(console, f"  found by: {', '.join(engine['how_found'])}")
        if engine.get("container"):
            yield plain(console, f"  {container_line(engine['container'])}")
        yield from drift_lines(engine.get("drift"), console)
        for plugin in engine.get("plugins") or []:
            for line in plugin_lines(plugin):
                yield plain(console, printable(f"  {line}"))
        table = Table("draft-model file", "architectures", "d2t handling", box=None)
        models = [m for m in found["draft_models"] if m["install"] == engine["path"]]
        for model in models:
            style = HANDLING_STYLE.get(model["d2t_handling"], "")
            plugin = (f" (plugin {model['plugin']}"
                      + (", not registered here)" if model.get("disabled") else ")")
                      if model.get("plugin") else "")  # fmt: skip
            table.add_row(
                printable(model["relative_path"] + plugin),
                ", ".join(model["architectures"]) or "-",
                f"[{style}]{model['d2t_handling']}[/]",
            )
        yield table
        workers = [w for w in found["workers"] if w["install"] == engine["path"]]
        if workers:
            yield plain(
                console,
                f"  speculative workers: {len(workers)} file(s), e.g. "
                f"{printable(workers[0]['path'])}",
            )
        if show_evidence:
            for model in models:
                if model["d2t_handling"] == "none" or not model["evidence_lines"]:
                    continue
                yield marked(console, f"\n  [bold]{printable(model['path'])}[/]: {model['reason']}")
                for block, lit in _merged_blocks(model["evidence_lines"][:12]):
                    yield Syntax(
                        "\n".join(text for _, text in block),
                        "python",
                        line_numbers=True,
                        start_line=block[0][0],
                        highlight_lines=lit,
                        word_wrap=True,
                    )
    for hit in found.get("resolved", []):
        where = f"{hit.get('path')}:{hit.get('class')}" if hit.get("resolved") else "not found"
        yield plain(
            console,
            f"\narchitecture {hit['architecture']} -> {printable(where)} "
            f"(d2t: {hit.get('d2t_handling')})",
        )


def drift_lines(drift: dict | None, console: Console) -> RenderResult:
    """The install against its release: one line, then each changed file on the speculative
    path with its hunks (numbered as served) and what it does to the draft's inputs."""
    yield plain(console, f"  code: {printable(drift_line(drift))}")
    release = (drift or {}).get("release") or {}
    if release.get("tag") and release.get("at_tag") is False:
        yield plain(console, printable(
            f"  HEAD {str(release.get('head'))[:12]} is not the release tag "
            f"{release['tag']} ({str(release.get('tag_commit'))[:12]})"))  # fmt: skip
    for item in (drift or {}).get("files") or []:
        if not item.get("speculative"):
            continue
        effect = (item.get("capture_change") or {}).get("what")
        yield plain(console, printable(f"  on the speculative path: {item['path']} "
                                       f"({item['change']})" + (f": {effect}" if effect else "")))
        for hunk in item.get("hunks") or []:
            yield plain(console, printable(
                f"    @@ released line {hunk['released_line']}, served line "
                f"{hunk['served_line']} ({hunk.get('function')})"))  # fmt: skip
            for line in hunk["removed"]:
                yield plain(console, printable(f"    - {line}"))
            for line in hunk["added"]:
                yield plain(console, printable(f"    + {line}"))


def locate_summary(found: dict) -> str:
    """The line that matters first: installs, and what their draft loaders do with d2t."""
    engines = found["engines"]
    models = found["draft_models"]
    counts: dict[str, int] = {}
    for model in models:
        counts[model["d2t_handling"]] = counts.get(model["d2t_handling"], 0) + 1
    running = sum(1 for e in engines if e.get("running"))
    parts = [
        f"{len(engines)} install(s)" + (f", {running} serving" if running else ""),
        f"{len(models)} draft-model file(s)",
    ]
    direct = [m for m in models if m["d2t_handling"] == "direct"]
    if direct:
        parts.append(
            f"{len(direct)} loader(s) use d2t as direct ids (an offsets checkpoint is mis-mapped): "
            + ", ".join(printable(m["path"]) for m in direct[:3])  # whose: the install's path
        )
    else:
        parts.append(
            f"d2t read as offsets by {counts.get('offsets', 0)}, not read by "
            f"{counts.get('none', 0)}, unknown in {counts.get('unknown', 0)}; none reads it as "
            "direct ids"
        )
    return "; ".join(parts)


def _merged_blocks(lines: list[dict]) -> list[tuple[list[tuple[int, str]], set[int]]]:
    """Evidence lines with overlapping context become one block with several marked lines."""
    blocks: list[tuple[list[tuple[int, str]], set[int]]] = []
    for line in lines:
        context = line.get("context") or [{"line": line["line"], "text": line["text"]}]
        rows = [(c["line"], c["text"]) for c in context]
        if blocks and rows[0][0] <= blocks[-1][0][-1][0] + 1:
            block, marked = blocks[-1]
            block.extend(row for row in rows if row[0] > block[-1][0])
            marked.add(line["line"])
        else:
            blocks.append((rows, {line["line"]}))
    return blocks
