"""paramiko's and the socket layer's failures in OpenSSH's words ("Connection refused",
"Connection timed out during banner exchange", ...), which users know and search for. Pure."""

from __future__ import annotations

import errno
import socket

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
