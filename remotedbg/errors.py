"""Errors that end a command, each with the exit code the CLI contract assigns to it."""

from __future__ import annotations


class ExitCode:
    OK = 0
    FINDINGS = 1  # defects found, or nothing matched
    USAGE = 2
    CONNECTION = 3  # connection, authentication or host-key failure
    REMOTE = 4  # remote command failed or timed out; inconclusive audit
    RUN_FAILED = 255  # `run` only: remotedbg's own failure, as ssh's (the remote's status is 0-254)


class RemotedbgError(Exception):
    """Base class: `str(err)` is the one-line message shown to the user."""

    exit_code = ExitCode.REMOTE


class LocalFileKept(RemotedbgError):
    """A local file that exists is kept (`--force` replaces it): nothing was written, exit 1 as
    `get`'s kept file."""

    exit_code = ExitCode.FINDINGS


class UsageError(RemotedbgError):
    exit_code = ExitCode.USAGE


class LocalFileUnwritable(UsageError):
    """The local output could not be written (full disk, file size limit, no permission):
    nothing is left of it."""


class ConnectionFailed(RemotedbgError):
    """Could not connect, authenticate, or verify the host key; or the transport dropped."""

    exit_code = ExitCode.CONNECTION


class HostKeyError(ConnectionFailed):
    pass


class RemoteCommandError(RemotedbgError):
    exit_code = ExitCode.REMOTE


class RemoteInputMissing(RemoteCommandError):
    """A path or tensor the user named is not on the host: reported like a glob that matched
    nothing (exit 1), with near names when there are any."""

    exit_code = ExitCode.FINDINGS


class RemoteTimeout(RemoteCommandError):
    pass


class ContainerUnreachable(RemoteCommandError):
    """A container's runtime refused its exec (not in the docker group, no such container,
    no python3 inside)."""


class StdoutClosed(RemotedbgError):
    """What reads our stdout went away (`| head`): the remote command is stopped, as a local
    one is by SIGPIPE, and never run again."""

    exit_code = 141  # 128 + SIGPIPE, as a shell reports a command a closed pipe ended

    def __init__(self) -> None:
        super().__init__("stdout closed; the remote command was stopped")


class Interrupted(RemoteCommandError):
    """Ctrl-C stopped a remote command (the remote process was stopped too)."""

    exit_code = 130
