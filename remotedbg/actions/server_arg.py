"""`--server PID|PORT`, read one way for every command that takes it (probe, logs, diagnose,
and the REPL's :probe, :logs, :diagnose): a positive decimal number, a server's PID or the
port it serves on."""

from __future__ import annotations

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


def servers_named(servers: list[dict], number: int) -> list[dict]:
    """The running servers `--server NUMBER` names: the one whose PID or worker's PID it is,
    else those that serve on that port (its launch's --port, or the engine's default)."""
    live = [s for s in servers if s.get("pid") is not None]
    by_pid = [s for s in live if s["pid"] == number or number in (s.get("children") or [])]
    if by_pid or not may_be_port(number):
        return by_pid[:1]
    return [s for s in live if (s.get("spec") or {}).get("port") == number]
