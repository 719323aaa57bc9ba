"""An `ssh` process that looks like a paramiko channel: the subset of paramiko's Channel and
Transport that session/executor_client.py and session/container.py use, over the process's
stdin, stdout and stderr pipes."""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import time
from collections.abc import Callable

LOGIN_BUDGET = 30.0  # seconds a login may take before the executor answers
CLOSE_WAIT = 2.0  # seconds an ssh process gets to end after its stdin closed


def _nonblocking(fd: int) -> None:
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


class ProcessChannel:
    """`exec_command` starts `ssh ... command`; stdout, stderr and stdin are its pipes. The
    subset of paramiko's Channel that session/executor_client.py and container.py use."""

    def __init__(self, argv_for: Callable[[str], list[str]]) -> None:
        self.argv_for = argv_for
        self.process: subprocess.Popen | None = None
        self.eof_received = False
        self.stderr_tail = b""  # what ssh (and the login) said on stderr, the last 64 KiB
        self._pending = b""
        self._stderr_new = b""  # stderr not yet taken by recv_stderr
        self._closed = False
        self._timeout: float | None = None

    def exec_command(self, command: str | bytes) -> None:
        text = command.decode("utf-8", "surrogateescape") if isinstance(command, bytes) else command
        self.process = subprocess.Popen(
            self.argv_for(text),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            bufsize=0,
        )
        for pipe in (self.process.stdout, self.process.stderr, self.process.stdin):
            _nonblocking(pipe.fileno())  # type: ignore[union-attr]

    # stdout
    def fileno(self) -> int:
        return self.process.stdout.fileno()  # type: ignore[union-attr]

    def _read_stdout(self) -> None:
        try:
            data = os.read(self.fileno(), 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._pending += data
        else:
            self.eof_received = True

    def recv_ready(self) -> bool:
        self.recv_stderr_ready()  # keeps ssh's stderr pipe from filling
        if self._closed:
            return bool(self._pending)
        if not self._pending and not self.eof_received and self.process is not None:
            if select.select([self.fileno()], [], [], 0)[0]:
                self._read_stdout()
        return bool(self._pending)

    def recv(self, size: int) -> bytes:
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        while not self._pending and not self.eof_received:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise TimeoutError
            readable = select.select([self.fileno(), self._stderr_fd()], [], [], wait)[0]
            if self._stderr_fd() in readable:
                self.recv_stderr_ready()
            if self.fileno() in readable:
                self._read_stdout()
        data, self._pending = self._pending[:size], self._pending[size:]
        return data

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout

    # stderr
    def _stderr_fd(self) -> int:
        return self.process.stderr.fileno()  # type: ignore[union-attr]

    def recv_stderr_ready(self) -> bool:
        if self.process is None or self.process.stderr is None or self.process.stderr.closed:
            return bool(self._stderr_new)
        try:
            data = os.read(self._stderr_fd(), 65536)
        except (BlockingIOError, OSError):
            data = b""
        if data:
            self.stderr_tail = (self.stderr_tail + data)[-65536:]
            self._stderr_new = (self._stderr_new + data)[-65536:]
        return bool(self._stderr_new)

    def recv_stderr(self, size: int) -> bytes:
        data, self._stderr_new = self._stderr_new[:size], self._stderr_new[size:]
        return data

    # stdin
    def send_ready(self) -> bool:
        """ssh's stdin takes bytes now (paramiko's: its window has room)."""
        if self.process is None or self.process.stdin is None or self.process.stdin.closed:
            return False
        return bool(select.select([], [self.process.stdin.fileno()], [], 0)[1])

    def send(self, data: bytes) -> int:
        """What of `data` the pipe takes now, without waiting (0 when full)."""
        assert self.process is not None and self.process.stdin is not None
        try:
            return os.write(self.process.stdin.fileno(), data)
        except BlockingIOError:
            return 0

    def sendall(self, data: bytes, budget: float = LOGIN_BUDGET) -> None:
        """Write all of `data`; OSError when ssh is gone or takes none of it for `budget` s."""
        assert self.process is not None and self.process.stdin is not None
        view, fd = memoryview(data), self.process.stdin.fileno()
        deadline = time.monotonic() + budget
        while view:
            try:
                view = view[os.write(fd, view) :]
                continue
            except BlockingIOError:
                pass
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise OSError(f"ssh took no input for {budget:g}s")
            select.select([], [fd], [], min(remaining, 1.0))
            self.recv_stderr_ready()

    def shutdown_write(self) -> None:
        if self.process is not None and self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass

    # the end
    @property
    def closed(self) -> bool:
        if self._closed:
            return True
        return self.process is not None and self.eof_received and self.process.poll() is not None

    def exit_status_ready(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def recv_exit_status(self) -> int:
        assert self.process is not None
        return self.process.wait()

    def close(self) -> None:
        """stdin closed first: the remote executor (or command) sees EOF and ends, and ssh with
        it; an ssh that does not end within CLOSE_WAIT is terminated."""
        if self._closed or self.process is None:
            self._closed = True
            return
        self._closed = True
        self.shutdown_write()
        try:
            self.process.wait(CLOSE_WAIT)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(CLOSE_WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.recv_stderr_ready()
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


class ProcessTransport:
    """What ExecutorChannel.start and ContainerSession take as a transport: a new ssh process
    for every channel."""

    def __init__(self, argv_for: Callable[[str], list[str]]) -> None:
        self.argv_for = argv_for
        self.last: ProcessChannel | None = None

    def open_session(self, timeout: float | None = None) -> ProcessChannel:
        self.last = ProcessChannel(self.argv_for)
        return self.last

    def is_active(self) -> bool:
        return True
