"""A session inside one container on the box, reached through the container runtime's exec
(`docker exec -i ID` / `podman exec -i ID`) over the host session's connection: the route for
a user the runtime lets in (the docker group, a runtime socket) when the kernel will not let
them read the container's files through /proc/PID/root.

The executor (remotedbg/agent/executor.py) runs inside the container with the container's own
python3 and exits when its stdin closes. The runtimes close an exec's stdin when their client
goes (killed, hung up, its connection dropped), so a dropped connection leaves nothing running
inside the container either.
"""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

import paramiko

from remotedbg.errors import (
    ConnectionFailed,
    ContainerUnreachable,
    RemoteCommandError,
    RemotedbgError,
)
from remotedbg.session.base import Session
from remotedbg.session.entered import EnteredSession
from remotedbg.session.executor_client import ExecutorChannel
from remotedbg.session.target import ConnectOptions

RUNTIMES = ("docker", "podman")
START_TIMEOUT = 30.0


def exec_prefix(runtime: str, container: str, tty: bool = False) -> list[str]:
    return [runtime, "exec", "-it" if tty else "-i", container]


class ContainerSession(EnteredSession):
    """Commands and agent checks inside a container, through the host session's byte channels."""

    kind = "container"
    owns_host = False  # `--container NAME` sets it: closing this session closes the host's

    @classmethod
    def via_options(cls, options: ConnectOptions) -> ConnectOptions:
        """The host's session: the options as given, without the container."""
        return dataclasses.replace(options, container=None)

    @classmethod
    def open(cls, options: ConnectOptions, max_output: int, via: Any) -> ContainerSession:
        """`--container NAME`: the container NAME of the host session `via`."""
        assert isinstance(via, Session) and options.container
        return enter(via, options.container)

    def __init__(self, host: Session, runtime: str, container: str, label: str) -> None:
        if runtime not in RUNTIMES:
            raise ContainerUnreachable(
                f"{host.name}: container {label}: no exec route for runtime {runtime or '?'}"
            )
        super().__init__(f"{host.name}[{label}]", host, f" in {label}")
        self.runtime = runtime
        self.container = container
        self.label = label
        self._executor = self._start()

    def _start(self) -> ExecutorChannel:
        from remotedbg.session import agent_bundle

        channels = self.host.byte_channels()
        if channels is None:
            raise ContainerUnreachable(
                f"{self.host.name}: container {self.label}: the exec route needs an ssh session"
            )
        boot = (
            shlex.join(exec_prefix(self.runtime, self.container))
            + " "
            + (agent_bundle.boot_command(agent_bundle.DEFAULT_PYTHON))
        )
        try:
            # a wedged runtime is given the command's timeout (at least 3 s), then its
            # `exec` is stopped with the session (ExecutorChannel.start signals its group)
            budget = START_TIMEOUT
            if self.host.default_timeout is not None:
                budget = min(budget, max(self.host.default_timeout, 3.0))
            executor, why = ExecutorChannel.start_or_why(
                channels, boot, agent_bundle.executor_bundle, budget
            )
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionFailed(f"{self.host.name}: cannot start a channel: {exc}") from None
        if executor is None:
            raise ContainerUnreachable(
                f"`{self.runtime} exec` into {self.label} failed: {why or 'no answer'}"
            )
        return executor

    def _executor_failed(self, error: Exception) -> RemoteCommandError:
        return RemoteCommandError(f"{self.name}: the executor stopped: {error}")

    def _execute_tty(self, text: str) -> int:
        inner = shlex.join([*exec_prefix(self.runtime, self.container, tty=True), "sh", "-c"])
        return self.host._execute_tty(f"{inner} {shlex.quote(text)}")


def inside(host: Session, runtime: str, container: str, label: str) -> ContainerSession:
    """A session inside one container of the box, through the runtime's exec; opened once per
    host session (a refusal is remembered too) and closed with it. Raises ContainerUnreachable
    with what the runtime said."""
    key = (runtime, container)
    if key not in host.opened_inside:
        try:
            host.opened_inside[key] = ContainerSession(host, runtime, container, label)
        except RemotedbgError as error:
            host.opened_inside[key] = error
    found = host.opened_inside[key]
    if isinstance(found, Exception):
        raise found
    assert isinstance(found, ContainerSession)
    return found


def enter(host: Session, name: str) -> ContainerSession:
    """`--container NAME`: a session inside the container NAME (or id) of the host, through
    whichever runtime knows it; the host's session closes with it."""
    refusals = []
    for runtime in RUNTIMES:
        try:
            opened = inside(host, runtime, name, name)
        except ContainerUnreachable as refused:
            refusals.append(str(refused))
            continue
        opened.owns_host = True
        return opened
    host.close()
    raise ContainerUnreachable(f"{host.name}: no container {name} to enter: " + "; ".join(refusals))
