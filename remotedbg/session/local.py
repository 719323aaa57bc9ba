"""`--host local`: the same command strings and loops, run on this machine by the login shell.
Agent calls go to one resident executor (remotedbg/agent/executor.py, the one an ssh session
runs) over the pipes of a local process: the agent bundle is sent and Python started once per
session, not once per call; each call still runs in a forked child under the executor's limits.
"""

from __future__ import annotations

import os
import pwd
import selectors
import shlex
import signal
import subprocess
import threading
import time
from typing import Any

from remotedbg.errors import RemoteCommandError
from remotedbg.local_stdin import Input, input_chunks
from remotedbg.session.base import OutputCollector
from remotedbg.session.resident import ProcessResidentSession
from remotedbg.session.ssh_pipe import ProcessTransport
from remotedbg.session.target import ConnectOptions

#: Shells that refuse a login: a service account's (nobody) can still run commands locally.
NO_LOGIN_SHELLS = ("nologin", "false")


def _login_shell() -> str:
    try:
        shell = pwd.getpwuid(os.getuid()).pw_shell
    except KeyError:
        shell = ""
    if not shell or os.path.basename(shell) in NO_LOGIN_SHELLS or not os.access(shell, os.X_OK):
        return "/bin/sh"
    return shell


class LocalSession(ProcessResidentSession):
    """Agent calls go to a resident executor over a local process's pipes (started in the
    home, as sshd would); commands run by the login shell; no byte channels."""

    kind = "local"

    def __init__(self, options: ConnectOptions, max_output: int, via: None = None) -> None:
        super().__init__("local", options.timeout, max_output)
        self._shell = _login_shell()
        home = os.path.expanduser("~")
        # a service account's home may not exist (nobody's is /nonexistent): start in / then,
        # as sshd does
        self._cwd = home if os.path.isdir(home) else "/"
        self._processes = ProcessTransport(
            lambda command: [self._shell, "-c", f"cd {shlex.quote(self._cwd)} && {command}"]
        )

    # -- the executor -------------------------------------------------------------------
    def _executor_failed(self, error: Exception) -> RemoteCommandError:
        self._executor = None
        return RemoteCommandError(f"{self.name}: the executor stopped: {error}")

    def _execute(
        self, text: str, stdin: Input | None, collector: OutputCollector, timeout: float | None
    ) -> tuple[int | None, bool]:
        process = subprocess.Popen(
            [self._shell, "-c", text],
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # own process group, like an sshd session
            cwd=self._cwd,
        )
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            if stdin is not None:  # written beside the output's reading: a `cat` of more
                # than the pipes hold would otherwise stop both ends
                threading.Thread(target=_feed, args=(process.stdin, stdin), daemon=True).start()
            with selectors.DefaultSelector() as selector:
                assert process.stdout is not None and process.stderr is not None
                selector.register(process.stdout, selectors.EVENT_READ, "stdout")
                selector.register(process.stderr, selectors.EVENT_READ, "stderr")
                open_streams = 2
                while open_streams:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        self._stop(process)
                        return None, True
                    for key, _ in selector.select(remaining):
                        chunk = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
                        if not chunk:
                            selector.unregister(key.fileobj)
                            open_streams -= 1
                            continue
                        collector.feed(key.data, chunk)
                        if collector.overflowed:
                            self._stop(process)
                            return None, False
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0)
            try:
                return process.wait(remaining), False
            except subprocess.TimeoutExpired:
                self._stop(process)
                return None, True
        except KeyboardInterrupt:
            self._stop(process)
            raise
        finally:
            for pipe in (process.stdout, process.stderr):
                if pipe:
                    pipe.close()

    def _execute_tty(self, text: str) -> int:
        """Locally the terminal is already there: the program inherits it."""
        status = subprocess.call([self._shell, "-c", text], cwd=self._cwd)
        return 128 - status if status < 0 else status

    @staticmethod
    def _stop(process: subprocess.Popen[bytes], grace: float = 0.5) -> None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.close()
            self._executor = None


def _feed(stream: Any, given: Input) -> None:
    try:
        for chunk in input_chunks(given):
            stream.write(chunk)
            stream.flush()
        stream.close()
    except (BrokenPipeError, OSError, ValueError):
        pass
