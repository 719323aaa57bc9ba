"""A session entered through another (the host's) session: its executor is booted by a command
the host runs (`docker exec -i`, `srun --overlap`), so every request goes to that executor over
the host's byte channels. The container and Slurm kinds fill in how to boot it and what its end
means (`_start`, `_executor_failed`); the rest is here once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from remotedbg.errors import RemotedbgError
from remotedbg.local_stdin import Input
from remotedbg.session.base import OutputCollector, Session
from remotedbg.session.resident import ResidentSession

if TYPE_CHECKING:  # executor_client brings paramiko: imported when the executor starts
    from remotedbg.session.executor_client import ExecutorChannel


class EnteredSession(ResidentSession):
    on_host = True
    #: closing this session closes the host's too
    owns_host = True

    def __init__(self, name: str, host: Session, where: str) -> None:
        super().__init__(name, host.default_timeout, host.max_output)
        self.host = host
        self._closed = False
        self._where = where

    def _start(self) -> ExecutorChannel:
        raise NotImplementedError

    def _executor_failed(self, error: Exception) -> RemotedbgError:
        raise NotImplementedError

    def _ready(self) -> ExecutorChannel:
        """The executor, replaced when a request of it did not end (or it closed)."""
        if not self._executor.settled():
            self._executor.close()
            self._executor = self._start()
        return self._executor

    def _resident(self, timeout: float | None) -> ExecutorChannel:
        return self._ready()

    def _execute(
        self, text: str, stdin: Input | None, collector: OutputCollector, timeout: float | None
    ) -> tuple[int | None, bool]:
        from remotedbg.session.executor_client import ExecutorGone

        try:
            return self._ready().execute(text, stdin, collector, timeout)
        except ExecutorGone as gone:
            raise self._executor_failed(gone) from None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._executor.close()
        if self.owns_host:
            self.host.close()
