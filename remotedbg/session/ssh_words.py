"""paramiko's and the socket layer's failures in OpenSSH's words ("Connection refused",
"Connection timed out during banner exchange", ...), which users know and search for. Pure."""

from __future__ import annotations

import errno
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from remotedbg.session.target import ResolvedTarget

#: errno -> the words ssh prints after "ssh: connect to host H port P: "
ERRNO_WORDS = {
    errno.ECONNREFUSED: "Connection refused",
    errno.ETIMEDOUT: "Connection timed out",
    errno.EHOSTUNREACH: "No route to host",
    errno.ENETUNREACH: "Network is unreachable",
    errno.ECONNRESET: "Connection reset by peer",
}


def connect_failure(exc: BaseException) -> str:
    """What ssh would say for this failure to connect (the exception's own text otherwise)."""
    errors = getattr(exc, "errors", None)  # paramiko NoValidConnectionsError: {addr: OSError}
    if isinstance(errors, dict) and errors:
        for error in errors.values():
            words = ERRNO_WORDS.get(getattr(error, "errno", None) or -1)
            if words:
                return words
    if isinstance(exc, OSError) and exc.errno in ERRNO_WORDS:
        return ERRNO_WORDS[exc.errno]
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "Connection timed out"
    text = str(exc)
    if "protocol banner" in text or text == "No existing session":
        # the port answered but no SSH server spoke: what ssh says when the banner never comes
        return "Connection timed out during banner exchange"
    if isinstance(exc, EOFError) or "Connection reset" in text:
        return "Connection closed by remote host"
    return text or type(exc).__name__


def missing_identities(target: ResolvedTarget) -> str:
    """The tail of an authentication failure: the IdentityFiles the config names that do not
    exist."""
    files = target.missing_identity_files
    return f" (ssh_config names {', '.join(files)}, which does not exist)" if files else ""


def unresolved(target: ResolvedTarget, strerror: str) -> str:
    """'cannot resolve' naming what was looked up, with near ssh_config aliases for a typo."""
    from remotedbg.session.target import near_aliases, parse_host_spec

    typed = parse_host_spec(target.spec)[1]
    message = f"{target.spec}: cannot resolve host name {target.hostname!r} ({strerror})"
    if typed != target.hostname:  # an alias whose HostName does not resolve
        return message
    near = near_aliases(typed, target.ssh_config)
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    return f"{message}; no alias {typed!r} in {target.ssh_config or 'ssh_config'}{hint}"
