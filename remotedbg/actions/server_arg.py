"""`--server PID|PORT`, read one way for every command that takes it (probe, logs, diagnose,
and the REPL's :probe, :logs, :diagnose): a positive decimal number, a server's PID or the
port it serves on."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any

from remotedbg.errors import UsageError

MAX_PORT = 65535


def parse_server(text: str) -> int | None:
    """The number `--server` names, None when it names none; a one-line usage error for
    anything else (a name, a sign, non-ASCII digits, 0)."""
    text = text.strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or int(text) == 0:
        raise UsageError(f"--server {text}: expected a PID or a port number")
    return int(text)


def may_be_port(number: int) -> bool:
    """A number that is no server's PID is tried as a port when it can be one."""
    return number <= MAX_PORT


def _spec_port(server: dict) -> Any:
    return (server.get("spec") or {}).get("port")


def servers_named(
    servers: list[dict], number: int, port_of: Callable[[dict], Any] = _spec_port
) -> list[dict]:
    """The running servers `--server NUMBER` names: the one whose PID or worker's PID it is,
    else the one listening on that port (the socket table), else those whose launch serves on
    it (`port_of`: its --port, or the engine's default)."""
    live = [s for s in servers if s.get("pid") is not None]
    by_pid = [s for s in live if s["pid"] == number or number in (s.get("children") or [])]
    if by_pid or not may_be_port(number):
        return by_pid[:1]
    listening = [s for s in live if number in (s.get("listening") or [])]
    return listening or [s for s in live if port_of(s) == number]


def the_server_named(
    servers: list[dict],
    number: int,
    port_of: Callable[[dict], Any] = _spec_port,
    flag: str = "--server",
) -> dict | None:
    """The one server `--server NUMBER` names (servers_named), None when none; when several
    serve on that port (each in a network namespace or container of its own), a usage error
    that lists them, for the user to choose one by PID: never one taken silently."""
    named = servers_named(servers, number, port_of)
    if len(named) > 1:
        listed = "; ".join(server_line(s) for s in named)
        given, choose = (f"{flag}{number}", f"{flag}PID") if flag.endswith("=") else \
            (f"{flag} {number}", f"{flag} PID")  # fmt: skip
        raise UsageError(f"{given}: {len(named)} servers serve on port {number}: {listed}; "
                         f"choose one with {choose}")  # fmt: skip
    return named[0] if named else None


def server_line(server: dict, width: int = 80) -> str:
    """`pid 123 (yours, on the host): python -m sglang.launch_server ...`: which one, whose,
    where and what it runs, for a user to tell servers apart by."""
    owner = "yours" if server.get("own") else "another user's"
    container = server.get("container") or {}
    where = (f"in {container.get('runtime') or 'container'} container "
             f"{container.get('name') or str(container.get('id') or '?')[:12]}"
             if container else "on the host")  # fmt: skip
    words = str(server.get("cmdline") or "").split()
    command = " ".join([posixpath.basename(words[0]), *words[1:]] if words else [])
    if len(command) > width:
        command = command[: width - 3] + "..."
    return f"pid {server.get('pid')} ({owner}, {where}): {command}"


def the_one_server(live: list[dict], label: Callable[[dict], str]) -> dict:
    """The server a command takes without --server: the only one running, else the user's only
    own server on a shared box (marked `taken_because`); else a usage error listing them, the
    user's own first."""
    if len(live) == 1:
        return live[0]
    own = [s for s in live if s.get("own")]
    if len(own) == 1:
        return dict(own[0], taken_because=f"the only server of yours among {len(live)} running")
    ordered = own + [s for s in live if not s.get("own")]
    listed = ", ".join(label(s) + (" yours" if s.get("own") and len(own) < len(live) else "")
                       for s in ordered)  # fmt: skip
    raise UsageError(f"{len(live)} servers are running: {listed}; choose one with --server")
