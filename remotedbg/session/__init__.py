"""Layer 1: what `--host` names, and one live connection to it reused for every command."""

from __future__ import annotations

from remotedbg.session.base import DEFAULT_MAX_OUTPUT, Session
from remotedbg.session.result import RunResult
from remotedbg.session.target import LOCAL, ConnectOptions

__all__ = ["ConnectOptions", "RunResult", "Session", "open_session"]


def open_session(options: ConnectOptions) -> Session:
    max_output = options.max_output or DEFAULT_MAX_OUTPUT
    if options.host == LOCAL:
        from remotedbg.session.local import LocalSession

        return LocalSession(options.timeout, max_output)
    from remotedbg.session.ssh import SSHSession

    return SSHSession(options, max_output)
