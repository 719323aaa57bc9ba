"""Sessions whose agent calls go to a resident executor (agent/executor.py) on the target: the
paramiko and system-ssh kinds, and a container entered through either. One call path for all
of them; each kind says where its executor is and what it forgets when a call times out."""

from __future__ import annotations

import os
import time
from abc import abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING

from remotedbg.errors import RemoteCommandError, RemotedbgError, RemoteTimeout
from remotedbg.session import transcript
from remotedbg.session.base import Session
from remotedbg.session.result import RunResult
from remotedbg.session.send_env import EnvLearning, command_env
from remotedbg.session.ssh_pipe import LOGIN_BUDGET

if TYPE_CHECKING:  # executor_client brings paramiko, which a one-shot system-ssh run never needs
    from remotedbg.session.executor_client import ExecutorChannel
    from remotedbg.session.ssh_pipe import ProcessChannel, ProcessTransport


class ResidentSession(Session):
    supports_agent_call = True
    _where = ""  # said after an agent call's timeout: where it ran, when the name does not say
    _env_learning: EnvLearning | None = None

    # -- SendEnv / SetEnv (session/send_env.py) --------------------------------------------
    def _sends_env(self) -> bool:
        target = getattr(self, "target", None)
        return target is not None and bool(target.send_env or target.set_env)

    def _command_env(self) -> dict[str, str]:
        """What ssh would send for a command typed now: read from this process's environment,
        which a persistent session's daemon sets to each client's for its command."""
        if not self._sends_env():
            return {}
        target = self.target  # type: ignore[attr-defined]
        return command_env(target.send_env, target.set_env, os.environ)

    @property
    def env_learning(self) -> EnvLearning:
        if self._env_learning is None:
            self._env_learning = EnvLearning()
        return self._env_learning

    def _env_for_executor(self, env: dict[str, str]) -> dict[str, str] | None:
        """The values a command run by the executor gets (None: the target sets none)."""
        return self.env_learning.for_command(env) if self._sends_env() else None

    def _executor_stale(self, env: dict[str, str]) -> bool:
        """The executor's start channel never tried one of these names: a fresh one must
        (sshd tells whether it accepts a name only on the channel that starts a command)."""
        return self._sends_env() and self.env_learning.unknown(env)

    def _learn_env(self, sent: dict[str, str], executor: ExecutorChannel | None) -> None:
        if executor is not None and self._sends_env():
            self.env_learning.learn(sent, executor.env_arrived)

    def _agent_call(
        self, entry: str, args: dict, timeout: float | None, cwd: str | None
    ) -> dict | None:
        from remotedbg.session.executor_client import ExecutorGone  # paramiko: when first used

        executor = self._resident(timeout)
        if executor is None:
            return None
        try:
            return executor.call(entry, args, timeout, cwd)
        except TimeoutError:
            self._call_timed_out(executor)
            raise RemoteTimeout(f"{entry} timed out after {timeout or 0:g}s{self._where}") from None
        except ExecutorGone as gone:
            raise self._executor_failed(gone) from None

    def read_file(
        self, path: str, offset: int, length: int, sink: Callable[[bytes], None], label: str
    ) -> RunResult | None:
        """Through the executor, which sends the file's bytes raw from a child of its own: no
        login shell starts for the read, and the box's CPU per byte is sendfile's."""
        from remotedbg.session.executor_client import ExecutorGone

        executor = self._resident(None)
        if executor is None:
            return None
        start = time.monotonic()
        stall = self.default_timeout
        try:
            got = executor.read_file(path, offset, length, sink, stall)
        except TimeoutError:
            raise RemoteTimeout(
                f"{self.name}: {label}: no data for {stall or 0:g}s (the remote read was stopped)"
            ) from None
        except ExecutorGone as gone:
            raise self._executor_failed(gone) from None
        if got is None:
            return None
        why = got[1]
        result = RunResult(label, 1 if why else 0, b"", why.encode(), time.monotonic() - start)
        transcript.record(self.name, label, result)
        self.commands_run += 1
        return result

    def start_resident(self) -> None:
        try:
            self._resident(None)
        except RemotedbgError:
            pass  # the first agent call starts it again, and says why it cannot

    @abstractmethod
    def _resident(self, timeout: float | None) -> ExecutorChannel | None:
        """The executor agent calls go to (started within `timeout`); None when the target has
        none (no python3 there)."""

    def _call_timed_out(self, executor: ExecutorChannel) -> None:
        """After an agent call's timeout: what the kind forgets of `executor` (nothing here:
        an executor whose request did not end is replaced before its next one)."""
        return None

    def _executor_failed(self, error: Exception) -> RemotedbgError:
        return RemoteCommandError(f"{self.name}: the remote executor stopped: {error}")


class ProcessResidentSession(ResidentSession):
    """A kind whose executor runs behind a local process's pipes (`self._processes`): `local`
    (a shell here) and the system ssh client. Without python3 there, a process per command."""

    _processes: ProcessTransport

    def __init__(self, name: str, default_timeout: float | None, max_output: int) -> None:
        super().__init__(name, default_timeout, max_output)
        self._executor: ExecutorChannel | None = None
        self._executor_unavailable = False

    def executor(self) -> ExecutorChannel | None:
        env = self._command_env()
        if self._executor is not None and self._executor.settled():
            if not self._executor_stale(env):
                return self._executor
        if self._executor is not None:
            self._executor.close()
        self._executor = None
        if self._executor_unavailable:
            return None
        from remotedbg.session import agent_bundle
        from remotedbg.session.executor_client import ExecutorChannel

        executor, _why = ExecutorChannel.start_or_why(
            self._processes,
            agent_bundle.boot_command(agent_bundle.DEFAULT_PYTHON),
            agent_bundle.executor_bundle,
            self._start_budget(),
            env=env,
        )
        self._learn_env(env, executor)
        if executor is None:
            if self._processes.last is not None:
                self._no_executor(self._processes.last)
            self._executor_unavailable = True
        self._executor = executor
        return executor

    def _start_budget(self) -> float:
        """Seconds the executor's start may take (a login shell's rc files included)."""
        return LOGIN_BUDGET

    def _no_executor(self, channel: ProcessChannel) -> None:
        """The process that did not become an executor: closed (a kind may raise instead)."""
        channel.close()

    def _resident(self, timeout: float | None) -> ExecutorChannel | None:
        return self.executor()

    def _call_timed_out(self, executor: ExecutorChannel) -> None:
        if executor.channel.closed:
            self._executor = None
