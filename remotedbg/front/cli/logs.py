"""logs: a server's log, tailed or followed, with the engine's acceptance lines picked out and a
sparkline of accept length. Following polls the file from the client (a warm round trip is a few
ms); nothing like `tail -f` is started on the box."""

from __future__ import annotations

import re
import sys
import time
from typing import Annotated, Any

import typer

from remotedbg.actions.logs import (
    AcceptTrend,
    LogTail,
    host_tail,
    not_speculating_why,
    read_new,
    tail_log,
)
from remotedbg.actions.server_arg import parse_server
from remotedbg.agent.server_scan import parse_decode_line
from remotedbg.errors import ExitCode, Interrupted, UsageError
from remotedbg.fleet import map_hosts, parse_hosts, worst_exit
from remotedbg.front.cli.context import CommandContext, ServerOption, remote_command
from remotedbg.front.cli.probe_report import sparkline
from remotedbg.front.environment import environment, note, stdout_console
from remotedbg.front.output import printable
from remotedbg.front.writer import Document, write
from remotedbg.inventory import is_host_list

POLL_S = 0.3
_SINCE = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str) -> float:
    m = _SINCE.match(text.strip())
    if not m:
        raise UsageError(f"--since {text}: expected a duration such as 90s, 10m, 2h or 1d")
    return float(m.group(1)) * _UNIT[m.group(2)]


def trend_line(trend: AcceptTrend) -> str:
    """The accept figures so far on one line, with a sparkline of the last 40."""
    if not trend.values:
        return "no accept-length lines yet"
    recent = trend.values[-40:]
    mean = sum(trend.values) / len(trend.values)
    text = (
        f"accept length {sparkline(recent)}  last {trend.values[-1]:.2f}, mean {mean:.2f} "
        f"over {len(trend.values)} lines"
    )
    if trend.per_position is not None:
        text += "; per position " + " ".join(f"{p:.2f}" for p in trend.per_position)
    if trend.tokens["drafted"]:
        accepted, drafted = trend.tokens["accepted"], trend.tokens["drafted"]
        text += f"; {accepted} of {drafted} drafted tokens accepted ({accepted / drafted:.1%})"
    return text


def _line(line: str, spec_only: bool) -> None:
    """One line of the log, an accept-length line highlighted (--spec-only: those only)."""
    parsed = parse_decode_line(line)
    if spec_only and not parsed:
        return
    stdout_console().print(printable(line), markup=False, style="bold cyan" if parsed else None)


def _show(line: str, trend: AcceptTrend, spec_only: bool) -> None:
    trend.add(line)
    _line(line, spec_only)


@remote_command
def logs(
    ctx: CommandContext,
    server: ServerOption = "",
    log: Annotated[
        str,
        typer.Option(
            "--log", help="Read this file instead of the server's own log.", metavar="PATH"
        ),
    ] = "",  # fmt: skip
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing lines as they are written.")
    ] = False,
    since: Annotated[
        str,
        typer.Option(
            "--since", help="Lines written in the last DURATION (90s, 10m, 2h).", metavar="DURATION"
        ),
    ] = "",  # fmt: skip
    lines: Annotated[int, typer.Option("--lines", "-n", min=0, help="Last N lines.")] = 40,
    spec_only: Annotated[
        bool, typer.Option("--spec-only", help="Only the decode and SpecDecoding metric lines.")
    ] = False,
) -> int:
    """Tail (or follow) a server's log: the file its stdout/stderr go to, found through
    wrappers such as nohup, runuser or bash -c. Accept-length lines are highlighted and summed
    up in a sparkline.

    Example: remotedbg logs -H gpu-box -f --spec-only"""
    parse_server(server)  # a bad --server is said before anything is done
    since_s = parse_since(since) if since else None
    if is_host_list(ctx.options.host):
        if follow:
            raise UsageError("--follow follows one host's log; give one --host")
        return _on_hosts(ctx, server, log, lines, since_s, spec_only)
    got = tail_log(ctx.remote, server, log, lines, since_s)
    chosen = got.chosen
    why = "" if got.trend.values else not_speculating_why(chosen)

    def shown() -> None:
        where = f"pid {chosen['pid']} " if chosen.get("pid") else ""
        taken = f"; {chosen['taken_because']}" if chosen.get("taken_because") else ""
        note(f"{where}log {chosen['log']} ({chosen['how_found']}{taken})")
        for line in got.tail["lines"]:
            _line(line, spec_only)
        if got.died and not follow:
            stdout_console().print(
                f"the engine died: {got.died['exception']}", markup=False, style="bold"
            )
        elif why:  # no figure will ever come: say why, once
            stdout_console().print(f"pid {chosen['pid']} does not speculate ({why}): its log "
                                   "has no accept-length lines", markup=False,
                                   style="bold")  # fmt: skip
        elif not follow:
            stdout_console().print(trend_line(got.trend), style="dim", markup=False)

    write(Document(got.document(spec_only), shown))
    streaming = follow and not environment().json  # --json is one document: it never follows
    if got.died and not streaming:
        return ExitCode.REMOTE
    if why or not streaming:
        return ExitCode.OK
    return _follow(ctx, got, spec_only)


def _follow(ctx: CommandContext, got: LogTail, spec_only: bool) -> int:
    """Lines as they are written, the figures after each batch on a terminal; Ctrl-C stops."""
    chosen, trend = got.chosen, got.trend
    last = got.tail
    shown = 0
    try:
        while True:
            time.sleep(POLL_S)
            new = read_new(ctx.remote, chosen, last)
            if new["rotated"]:
                note(f"{chosen['log']} was rotated or truncated: reading it from the start")
            last = new
            for line in new["lines"]:
                _show(line, trend, spec_only)
            if trend.values and len(trend.values) != shown and sys.stdout.isatty():
                stdout_console().print(trend_line(trend), style="dim", markup=False)
            shown = len(trend.values)
    except KeyboardInterrupt:  # as `tail -f`: the figures so far, then the exit of Ctrl-C
        stdout_console().print(trend_line(trend), style="dim", markup=False)
        return Interrupted.exit_code


def _on_hosts(
    ctx: CommandContext, server: str, log: str, lines: int, since_s: float | None, spec_only: bool
) -> int:
    """Each host's tail under its name, in the order given, with its own sparkline."""

    def work(remote: Any) -> dict[str, Any]:
        return host_tail(remote, server, log, lines, since_s)

    rows = map_hosts(parse_hosts(ctx.options.host, None, options=ctx.options), ctx.options, work)
    out = [{"host": row.host, "error": row.error, "exit_code": row.exit_code,
            **(row.value or AcceptTrend().figures())} for row in rows]  # fmt: skip

    def shown() -> None:
        for row in rows:
            stdout_console().print(f"== {printable(row.host)}", style="bold", markup=False)
            if row.value is None:
                stdout_console().print(printable(row.error or ""), markup=False)
                continue
            trend = AcceptTrend()
            for line in row.value["lines"]:
                _show(line, trend, spec_only)
            stdout_console().print(trend_line(trend), style="dim", markup=False)

    write(Document({"hosts": out}, shown))
    return worst_exit([r.exit_code for r in rows])
