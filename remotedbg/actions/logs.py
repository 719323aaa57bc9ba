"""logs: which file a server writes its log to (remotedbg.agent.log_follow), chosen the way
probe chooses a server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from remotedbg.actions import runtime_logs
from remotedbg.actions.server_arg import (
    may_be_port,
    parse_server,
    the_one_server,
    the_server_named,
)
from remotedbg.agent.redact import redact_text
from remotedbg.agent.server_scan import parse_decode_line
from remotedbg.analysis.crosscheck import launch_spec
from remotedbg.analysis.engine_log import died_of
from remotedbg.engines.knowledge import not_speculating, server_scan_knowledge
from remotedbg.engines.profiles import engines_named
from remotedbg.errors import RemoteCommandError
from remotedbg.remote import calls
from remotedbg.remote.primitives import Remote


def find_log(remote: Remote, server: str = "", log: str = "") -> dict[str, Any]:
    """{"pid", "engine", "cmdline", "log", "how_found"} of the log to read: `log` as given, else
    the log of the server `server` names (a PID, or a port it serves on, as probe takes), else
    of the only server running."""
    number = parse_server(server)

    def servers(pid: int | None) -> list[dict]:
        return remote.ask(
            calls.ServerLogs(pid=pid, log=log or None, knowledge=server_scan_knowledge())
        ).value["servers"]

    found = servers(number)
    if number is not None and not found and may_be_port(number):  # no server's PID: its port?
        named = the_server_named(servers(None), number, lambda s: launch_spec(s).get("port"))
        found = [named] if named else []
    if not found:
        what = (
            f"no {engines_named()} server with PID {server}" if server
            else f"no {engines_named()} server"
        )
        raise RemoteCommandError(f"{remote.session.name}: {what} is running; pass --log PATH")
    chosen = the_one_server(found, lambda s: f"pid {s['pid']} ({s['engine']})")
    if not chosen["log"]:
        runtime = runtime_logs.runtime_log_of(chosen)
        if runtime is None:
            raise RemoteCommandError(
                f"{remote.session.name}: server pid {chosen['pid']}: {chosen['note']}"
            )
        # the runtime's log file is not readable here: ask the runtime
        chosen.update(log=runtime["how_found"], how_found="the container runtime",
                      runtime_log=runtime)  # fmt: skip
    return chosen


def not_speculating_why(chosen: dict) -> str:
    """Why the chosen server's log can hold no accept-length line ('started without
    --speculative-config'), from its launch line; '' when it speculates or was not found
    running (a --log PATH alone)."""
    if not chosen.get("pid") or not (chosen.get("argv") or chosen.get("cmdline")):
        return ""
    return not_speculating(chosen.get("engine"), launch_spec(chosen))


def read_tail(
    remote: Remote, chosen: dict, lines: int, since_s: float | None = None
) -> dict[str, Any]:
    """The last lines of the chosen log, with where to read on from (`offset`, `inode`,
    `since`)."""
    if chosen.get("runtime_log"):
        return _redacted(runtime_logs.tail(remote, chosen["runtime_log"], lines, since_s))
    args = {"path": chosen["log"], "lines": lines, "since_s": since_s}
    return _redacted(remote.ask(calls.ReadLogTail(args)).value)


def _redacted(read: dict[str, Any]) -> dict[str, Any]:
    """Engines echo their arguments in their logs (SGLang's `server_args=ServerArgs(...,
    api_key='sk-...')`, vLLM's `non-default args: {'api_key': ...}`): every line shown or
    returned has its secrets replaced by *** (the one rule set, agent/redact.py)."""
    return dict(read, lines=[redact_text(line) for line in read.get("lines") or []])


def read_new(remote: Remote, chosen: dict, last: dict) -> dict[str, Any]:
    """The lines written since `last` (the previous read's answer)."""
    if chosen.get("runtime_log"):
        return _redacted(
            runtime_logs.new_lines(remote, chosen["runtime_log"], last["offset"], last["since"])
        )
    args = {"path": chosen["log"], "offset": last["offset"], "inode": last["inode"]}
    return _redacted(remote.ask(calls.ReadLogFrom(args)).value)


#: Lines read back to see how the engine ended: a traceback sits above a short tail.
DEATH_LINES = 400


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


@dataclass
class LogTail:
    """The end of a server's log: the server and its log (`chosen`), the read (`tail`: its
    lines and where to read on from), how the engine died if it did, the accept figures."""

    chosen: dict[str, Any]
    tail: dict[str, Any]
    died: dict[str, Any] | None
    trend: AcceptTrend

    def document(self, spec_only: bool) -> dict[str, Any]:
        lines = self.tail["lines"]
        shown = [ln for ln in lines if parse_decode_line(ln)] if spec_only else lines
        return {"server": self.chosen, "path": self.tail["path"], "lines": shown,
                "died_of": self.died and self.died["exception"],
                "not_speculating": not_speculating_why(self.chosen),
                **self.trend.figures()}  # fmt: skip


def tail_log(
    remote: Remote, server: str, log: str, lines: int, since_s: float | None
) -> LogTail:
    """The last `lines` lines of the log of the server `server` names (or `log`), read far
    enough back to see how the engine ended (its traceback is above a short tail)."""
    chosen = find_log(remote, server, log)
    read = read_tail(remote, chosen, max(lines, DEATH_LINES), since_s)
    tail = dict(read, lines=read["lines"][-lines:] if lines else [])
    trend = AcceptTrend()
    for line in tail["lines"]:
        trend.add(line)
    return LogTail(chosen, tail, died_of(read["lines"]), trend)


def host_tail(
    remote: Remote, server: str, log: str, lines: int, since_s: float | None
) -> dict[str, Any]:
    """One host of a fleet's `logs`: its server, the tail and its accept figures."""
    chosen = find_log(remote, server, log)
    read = {"server": chosen, **read_tail(remote, chosen, lines, since_s)}
    trend = AcceptTrend()
    for line in read.get("lines", []):
        trend.add(line)
    return {**read, **trend.figures()}
