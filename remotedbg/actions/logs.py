"""logs: which file a server writes its log to (remotedbg.agent.log_follow), chosen the way
probe chooses a server."""

from __future__ import annotations

from typing import Any

from remotedbg.engines.knowledge import server_scan_knowledge
from remotedbg.errors import RemoteCommandError, UsageError
from remotedbg.remote.primitives import Remote

LOGS = "remotedbg.agent.log_follow"


def find_log(remote: Remote, server: str = "", log: str = "") -> dict[str, Any]:
    """{"pid", "engine", "cmdline", "log", "how_found"} of the log to read: `log` as given, else
    the log of the server `server` names (a PID), else of the only server running."""
    if server and not server.isdigit():
        raise UsageError(f"--server {server}: expected a PID")
    found = remote.call(
        f"{LOGS}:server_logs",
        {"pid": int(server) if server else None, "log": log or None,
         "knowledge": server_scan_knowledge()},
    )["servers"]  # fmt: skip
    if not found:
        what = (
            f"no SGLang or vLLM server with PID {server}" if server else "no SGLang or vLLM server"
        )
        raise RemoteCommandError(f"{remote.session.name}: {what} is running; pass --log PATH")
    if len(found) > 1:
        listed = ", ".join(f"pid {s['pid']} ({s['engine']})" for s in found)
        raise UsageError(f"{len(found)} servers are running: {listed}; choose one with --server")
    chosen = found[0]
    if not chosen["log"]:
        raise RemoteCommandError(
            f"{remote.session.name}: server pid {chosen['pid']}: {chosen['note']}"
        )
    return chosen


def read_tail(
    remote: Remote, path: str, lines: int, since_s: float | None = None
) -> dict[str, Any]:
    return remote.call(f"{LOGS}:read_log_tail", {"path": path, "lines": lines, "since_s": since_s})


def read_new(remote: Remote, path: str, offset: int, inode: int) -> dict[str, Any]:
    return remote.call(f"{LOGS}:read_log_from", {"path": path, "offset": offset, "inode": inode})
