"""Sessions whose agent calls go to a resident executor (agent/executor.py) on the target: the
paramiko and system-ssh kinds, and a container entered through either. One call path for all
of them; each kind says where its executor is and what it forgets when a call times out."""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING

from remotedbg.errors import RemoteCommandError, RemotedbgError, RemoteTimeout
from remotedbg.session.base import Session

if TYPE_CHECKING:  # executor_client brings paramiko, which a one-shot system-ssh run never needs
    from remotedbg.session.executor_client import ExecutorChannel


class ResidentSession(Session):
    supports_agent_call = True
    _where = ""  # said after an agent call's timeout: where it ran, when the name does not say

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
