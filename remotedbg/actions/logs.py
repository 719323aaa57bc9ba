"""logs: which file a server writes its log to (remotedbg.agent.log_follow), chosen the way
probe chooses a server."""

from __future__ import annotations

from typing import Any

from remotedbg.actions import runtime_logs
from remotedbg.actions.server_arg import (
    may_be_port,
    parse_server,
    the_one_server,
    the_server_named,
)
from remotedbg.agent.redact import redact_text
from remotedbg.analysis.crosscheck import launch_spec
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
        return remote.call(
            calls.ServerLogs(pid=pid, log=log or None, knowledge=server_scan_knowledge())
        )["servers"]

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
    return _redacted(remote.call(calls.ReadLogTail(args)))


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
    return _redacted(remote.call(calls.ReadLogFrom(args)))
