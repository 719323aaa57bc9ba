"""Layer 1: what `--host` names, and one live connection to it reused for every command."""

from __future__ import annotations

from remotedbg.errors import UsageError
from remotedbg.session.base import DEFAULT_MAX_OUTPUT, Session
from remotedbg.session.result import RunResult
from remotedbg.session.target import LOCAL, ConnectOptions

__all__ = ["ConnectOptions", "RunResult", "Session", "open_session"]


def open_session(options: ConnectOptions) -> Session:
    if not options.host:
        raise UsageError("--host is required (an ssh_config alias, user@host[:port] or 'local')")
    if "," in options.host:
        raise UsageError(f"--host {options.host}: several hosts are for playbooks only")
    max_output = options.max_output or DEFAULT_MAX_OUTPUT
    if options.host == LOCAL:
        if options.container:
            raise UsageError("--container works through an ssh host; give --host")
        from remotedbg.session.local import LocalSession

        return LocalSession(options.timeout, max_output)
    from remotedbg.session.ssh import SSHSession

    host = SSHSession(options, max_output)
    if not options.container:
        return host
    from remotedbg.session.container import enter

    return enter(host, options.container)
