"""Layer 1: what `--host` names, and one live connection to it reused for every command."""

from __future__ import annotations

from remotedbg.session.base import DEFAULT_MAX_OUTPUT, Session
from remotedbg.session.result import RunResult
from remotedbg.session.target import ConnectOptions

__all__ = ["ConnectOptions", "RunResult", "Session", "open_session"]


def open_session(options: ConnectOptions) -> Session:
    """A session of the kind `options` name (session/kinds.py)."""
    from remotedbg.session.kinds import open_kind

    return open_kind(options, options.max_output or DEFAULT_MAX_OUTPUT)
