"""logs: a server's log, tailed or followed, with the engine's acceptance lines picked out and a
sparkline of accept length. Following polls the file from the client (a warm round trip is a few
ms); nothing like `tail -f` is started on the box."""

from __future__ import annotations

import re
import sys
import time
from typing import Annotated, Any

import typer

from remotedbg.actions.logs import find_log, not_speculating_why, read_new, read_tail
from remotedbg.actions.server_arg import parse_server
from remotedbg.agent.server_scan import parse_decode_line
from remotedbg.analysis.engine_log import died_of
from remotedbg.errors import ExitCode, Interrupted, UsageError
from remotedbg.fleet import map_hosts, parse_hosts, worst_exit
from remotedbg.front.cli.context import CommandContext, ServerOption, remote_command
from remotedbg.front.cli.probe_report import sparkline
from remotedbg.front.environment import note, stdout_console
from remotedbg.front.output import emit_json, printable
from remotedbg.inventory import is_host_list

POLL_S = 0.3
#: Lines read back to see how the engine ended: a traceback sits above a short tail.
DEATH_LINES = 400
_SINCE = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str) -> float:
    m = _SINCE.match(text.strip())
    if not m:
        raise UsageError(f"--since {text}: expected a duration such as 90s, 10m, 2h or 1d")
    return float(m.group(1)) * _UNIT[m.group(2)]


class AcceptTrend:
    """Accept lengths seen so far, for the sparkline; from vLLM's SpecDecoding lines also the
    last per-position rates and the accepted and drafted tokens summed."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.per_position: list[float] | None = None
        self.tokens = {"accepted": 0, "drafted": 0, "lines": 0}

    def add(self, line: str) -> dict[str, Any] | None:
        parsed = parse_decode_line(line)
        if parsed and "accept_length" in parsed:
            self.values.append(parsed["accept_length"])
        if parsed and parsed.get("per_position"):
            self.per_position = parsed["per_position"]
        if parsed and "accepted_tokens" in parsed and "drafted_tokens" in parsed:
            self.tokens["accepted"] += parsed["accepted_tokens"]
            self.tokens["drafted"] += parsed["drafted_tokens"]
            self.tokens["lines"] += 1
        return parsed

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {"accept_length": self.values}
        if self.per_position is not None:
            out["per_position_last"] = self.per_position
        if self.tokens["lines"]:
            out["spec_tokens"] = dict(self.tokens)
        return out

    def line(self) -> str:
        if not self.values:
            return "no accept-length lines yet"
        recent = self.values[-40:]
        mean = sum(self.values) / len(self.values)
        text = (
            f"accept length {sparkline(recent)}  last {self.values[-1]:.2f}, mean {mean:.2f} "
            f"over {len(self.values)} lines"
        )
        if self.per_position is not None:
            text += "; per position " + " ".join(f"{p:.2f}" for p in self.per_position)
        if self.tokens["drafted"]:
            accepted, drafted = self.tokens["accepted"], self.tokens["drafted"]
            text += f"; {accepted} of {drafted} drafted tokens accepted ({accepted / drafted:.1%})"
        return text


def _show(line: str, trend: AcceptTrend, spec_only: bool) -> None:
    parsed = trend.add(line)
    if spec_only and not parsed:
        return
    stdout_console().print(printable(line), markup=False, style="bold cyan" if parsed else None)


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
    chosen = find_log(ctx.remote, server, log)
    # read far enough back to see how the engine ended (its traceback is above a short tail)
    read = read_tail(ctx.remote, chosen, max(lines, DEATH_LINES), since_s)
    tail = dict(read, lines=read["lines"][-lines:] if lines else [])
    died = died_of(read["lines"])
    trend = AcceptTrend()
    if ctx.json:
        for line in tail["lines"]:
            trend.add(line)
        shown = (
            [ln for ln in tail["lines"] if parse_decode_line(ln)] if spec_only else tail["lines"]
        )
        emit_json({"server": chosen, "path": tail["path"], "lines": shown,
                   "died_of": died and died["exception"],
                   "not_speculating": not_speculating_why(chosen), **trend.figures()})  # fmt: skip
        return ExitCode.REMOTE if died else ExitCode.OK
    where = f"pid {chosen['pid']} " if chosen.get("pid") else ""
    taken = f"; {chosen['taken_because']}" if chosen.get("taken_because") else ""
    note(f"{where}log {chosen['log']} ({chosen['how_found']}{taken})")
    for line in tail["lines"]:
        _show(line, trend, spec_only)
    if died and not follow:
        stdout_console().print(f"the engine died: {died['exception']}", markup=False, style="bold")
        return ExitCode.REMOTE
    why = "" if trend.values else not_speculating_why(chosen)
    if why:  # no figure will ever come: say why, once
        stdout_console().print(f"pid {chosen['pid']} does not speculate ({why}): its log has no "
                             "accept-length lines", markup=False, style="bold")  # fmt: skip
        return ExitCode.OK
    if not follow:
        stdout_console().print(trend.line(), style="dim", markup=False)
        return ExitCode.OK
    last = tail
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
                stdout_console().print(trend.line(), style="dim", markup=False)
            shown = len(trend.values)
    except KeyboardInterrupt:  # as `tail -f`: the figures so far, then the exit of Ctrl-C
        stdout_console().print(trend.line(), style="dim", markup=False)
        return Interrupted.exit_code


def _on_hosts(
    ctx: CommandContext, server: str, log: str, lines: int, since_s: float | None, spec_only: bool
) -> int:
    """Each host's tail under its name, in the order given, with its own sparkline."""

    def work(remote: Any) -> dict[str, Any]:
        chosen = find_log(remote, server, log)
        return {"server": chosen, **read_tail(remote, chosen, lines, since_s)}

    rows = map_hosts(parse_hosts(ctx.options.host, None, options=ctx.options), ctx.options, work)
    if ctx.json:
        out = []
        for row in rows:
            trend = AcceptTrend()
            for line in (row.value or {}).get("lines", []):
                trend.add(line)
            out.append({"host": row.host, "error": row.error, "exit_code": row.exit_code,
                        **(row.value or {}), **trend.figures()})  # fmt: skip
        emit_json({"hosts": out})
    else:
        for row in rows:
            stdout_console().print(f"== {printable(row.host)}", style="bold", markup=False)
            if row.value is None:
                stdout_console().print(printable(row.error or ""), markup=False)
                continue
            trend = AcceptTrend()
            for line in row.value["lines"]:
                _show(line, trend, spec_only)
            stdout_console().print(trend.line(), style="dim", markup=False)
    return worst_exit([r.exit_code for r in rows])
