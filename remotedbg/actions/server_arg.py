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
