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
    host = _remote_session(options, max_output)
    if not options.container:
        return host
    from remotedbg.session.container import enter

    return enter(host, options.container)


def _remote_session(options: ConnectOptions, max_output: int) -> Session:
    """paramiko's session, or the system ssh client's when the config needs what paramiko
    cannot do (certificates, PKCS#11, FIDO keys, RemoteCommand, ...) or --transport ssh."""
    import shutil

    from remotedbg.session.ssh_command import choose_transport
    from remotedbg.session.target import resolve

    target = resolve(options)
    hops = [
        resolve(ConnectOptions(host=hop, ssh_config=options.ssh_config), hop)
        for hop in (target.proxy_jump or "").split(",")
        if hop and options.transport == "auto"
    ]
    if choose_transport(options.transport, [target, *hops], shutil.which("ssh")) == "ssh":
        from remotedbg.session.ssh_process import SystemSSHSession

        return SystemSSHSession(options, target, max_output)
    from remotedbg.session.ssh import SSHSession

    return SSHSession(options, max_output, target)
