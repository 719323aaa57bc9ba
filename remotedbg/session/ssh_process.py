"""The system OpenSSH client as the transport, for hosts whose ssh_config needs what paramiko
cannot do (certificates, PKCS#11 and FIDO keys, Kerberos, RemoteCommand, ...).

Every "channel" is an `ssh -T` process (as Ansible's ssh connection and mitogen do): the resident
executor (remotedbg/agent/executor.py) speaks its frames over one of them, bulk reads and the
stop of a command get one each, `run -t` is `ssh -tt`. ssh does its own resolution, host-key
checking and authentication, so whatever works for `ssh` works here; its failures are mapped to
the same one-line errors and exit codes as paramiko's (`ssh_failure`).

`BatchMode yes` always: a passphrase, PIN or password prompt on a terminal remotedbg draws on
(or in the background daemon, which has none) would hang; ssh-agent and a ControlMaster need no
prompt and are used as configured. The ssh processes run in sessions of their own, so a Ctrl-C
reaches remotedbg (which stops the remote command) and not ssh (which would leave it running).
"""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import sys
import threading
import time

from remotedbg.errors import (
    ConnectionFailed,
    RemoteCommandError,
    RemotedbgError,
    RemoteTimeout,
    StdoutClosed,
)
from remotedbg.local_stdin import Input, input_chunks
from remotedbg.session import transcript
from remotedbg.session.base import PID_PREFIX, OutputCollector, kill_group_script
from remotedbg.session.resident import ProcessResidentSession
from remotedbg.session.result import RunResult
from remotedbg.session.ssh_command import lost_connection, ssh_argv, ssh_failure
from remotedbg.session.ssh_pipe import LOGIN_BUDGET, ProcessChannel, ProcessTransport
from remotedbg.session.target import ConnectOptions, ResolvedTarget

BULK_BYTES = 16 << 20  # as in session/ssh.py: larger reads get an ssh process of their own
SSH_FAILED = 255  # ssh's own exit status for a failure of its own
_BULK_PID = "RDBG-PGID:"
_BULK_PID_LINE = re.compile(rb"RDBG-PGID:(\d+)\n")


class SystemSSHSession(ProcessResidentSession):
    """A session whose byte streams go through the system ssh client."""

    kind = "ssh-binary"

    def __init__(self, options: ConnectOptions, max_output: int, target: ResolvedTarget) -> None:
        super().__init__(options.host, options.timeout, max_output)
        self.options = options
        self.target = target
        self.ssh = shutil.which("ssh") or "ssh"
        self._processes = ProcessTransport(self.argv)
        if transcript.echo is not None:  # -v: which transport, and why
            why = (
                f"--transport {options.transport}"
                if options.transport != "auto"
                else f"ssh_config sets {target.needs_system_ssh[0]}"
                if target.needs_system_ssh
                else "a jump host's ssh_config needs it"
            )
            print(f"remotedbg: {self.name}: through the system ssh client ({why})", file=sys.stderr)

    def argv(self, command: str, tty: bool = False) -> list[str]:
        return ssh_argv(self.ssh, self.target, self.options, command, tty)

    def byte_channels(self) -> ProcessTransport:
        return self._processes

    def _start(self, command: str) -> ProcessChannel:
        channel = self._processes.open_session()
        try:
            channel.exec_command(command)
        except OSError as exc:
            raise ConnectionFailed(f"{self.name}: cannot start ssh: {exc}") from None
        return channel

    def _failed(self, channel: ProcessChannel) -> RemotedbgError:
        channel.close()
        return ssh_failure(channel.stderr_tail, self.target)

    # -- the executor -------------------------------------------------------------------
    def _start_budget(self) -> float:
        return max(self.options.connect_timeout, LOGIN_BUDGET)

    def _no_executor(self, channel: ProcessChannel) -> None:
        channel.close()
        if channel.process is not None and channel.process.returncode == SSH_FAILED:
            raise self._failed(channel)

    def _executor_failed(self, error: Exception) -> ConnectionFailed | RemoteCommandError:
        from remotedbg.session.executor_client import connection_lost

        channel = self._executor.channel if self._executor is not None else None
        self._executor = None
        if isinstance(channel, ProcessChannel):
            channel.close()
            if channel.process is not None and channel.process.returncode == SSH_FAILED:
                return connection_lost(self.name, "")
        return RemoteCommandError(f"{self.name}: the remote executor stopped: {error}")

    # -- running ------------------------------------------------------------------------
    def _execute(
        self, text: str, stdin: Input | None, collector: OutputCollector, timeout: float | None
    ) -> tuple[int | None, bool]:
        if not (self.one_shot and self._executor is None):
            executor = self.executor()
            if executor is not None:
                from remotedbg.session.executor_client import ExecutorGone

                env = self._env_for_executor(self._command_env())
                try:
                    return executor.execute(text, stdin, collector, timeout, env)
                except ExecutorGone as gone:
                    raise self._executor_failed(gone) from None
        return self._execute_in_process(text, stdin, collector, timeout)

    def _execute_in_process(
        self, text: str, stdin: Input | None, collector: OutputCollector, timeout: float | None
    ) -> tuple[int | None, bool]:
        """One ssh process for one command (a box without python3, or a one-shot `run`); the
        command's first line on stdout is its pid, the group _stop() stops."""
        # ssh runs a LocalCommand before the remote command, onto the same stdout
        local = any(s.startswith("localcommand ") for s in self.target.needs_system_ssh)
        collector.expect_marker(preceded=local)
        channel = self._start(PID_PREFIX + text)
        deadline = None if timeout is None else time.monotonic() + timeout
        early = bytearray()  # stderr before the command's marker: maybe ssh's own failure
        writer = threading.Thread(target=self._feed_stdin, args=(channel, stdin), daemon=True)
        writer.start()
        out_fd, err_fd = channel.fileno(), channel._stderr_fd()
        open_fds = [out_fd, err_fd]
        try:
            while open_fds:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    self._stop(collector.pid, channel)
                    return None, True
                readable = select.select(open_fds, [], [], 1.0 if remaining is None
                                         else min(remaining, 1.0))[0]  # fmt: skip
                for fd in readable:
                    try:
                        data = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if not data:
                        open_fds.remove(fd)
                    elif fd == out_fd:
                        collector.feed("stdout", data)
                    else:
                        channel.stderr_tail = (channel.stderr_tail + data)[-65536:]
                        if collector.pid is None:
                            early += data
                        else:
                            collector.feed("stderr", data)
                if collector.pid is not None and early:
                    collector.feed("stderr", bytes(early))
                    early.clear()
                if collector.overflowed:
                    self._stop(collector.pid, channel)
                    return None, False
            status = channel.recv_exit_status()
        except (KeyboardInterrupt, StdoutClosed):
            if collector.pid is None:
                self._await_marker(out_fd, collector)
            self._stop(collector.pid, channel)
            raise
        finally:
            channel.close()
        if status == SSH_FAILED and collector.pid is None:
            raise ssh_failure(bytes(early), self.target)
        if early:
            collector.feed("stderr", bytes(early))
        if status == SSH_FAILED and lost_connection(channel.stderr_tail):
            raise ConnectionFailed(
                f"{self.name}: connection lost while a remote command was running"
            )
        return status, False

    def _await_marker(self, out_fd: int, collector: OutputCollector) -> None:
        """Ctrl-C before the pid line was read: the command runs already once the box wrote
        that line, which may still be on its way. It is read (connect_timeout at most, a second
        Ctrl-C stops waiting) so that _stop() stops the group it names, not nothing."""
        deadline = time.monotonic() + self.options.connect_timeout
        try:
            while not collector.marker_settled:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                if not select.select([out_fd], [], [], min(remaining, 0.5))[0]:
                    continue
                try:
                    data = os.read(out_fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not data:
                    return
                collector.feed("stdout", data)
        except (KeyboardInterrupt, OSError):
            pass

    @staticmethod
    def _feed_stdin(channel: ProcessChannel, stdin: Input | None) -> None:
        try:
            for chunk in input_chunks(stdin) if stdin is not None else ():
                channel.sendall(chunk, budget=float("inf"))
        except OSError:
            pass  # the command ended without reading it all
        channel.shutdown_write()

    def _execute_tty(self, text: str) -> int:
        """`ssh -tt`: ssh sets the terminal raw, relays keys and resizes; closing the
        channel hangs up the remote terminal and the program with it."""
        try:
            return subprocess.call(self.argv(text, tty=True))
        except OSError as exc:
            raise ConnectionFailed(f"{self.name}: cannot start ssh: {exc}") from None

    def _stop(self, pid: int | None, channel: ProcessChannel | None = None) -> None:
        """Stop the remote process group through a second ssh (sshd forwards no signal to a
        command without a terminal, and ending our ssh alone leaves the command running)."""
        if pid is not None:
            try:
                subprocess.run(
                    self.argv(kill_group_script(pid)),
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=self.options.connect_timeout + 5,
                    start_new_session=True,
                )
            except (OSError, subprocess.TimeoutExpired):
                pass  # connection gone: sshd hangs up and the command gets EPIPE
        if channel is not None:
            channel.close()

    # -- files --------------------------------------------------------------------------
    def read_stream(self, command: str, sink, limit: int, label: str) -> RunResult:
        """Small reads through the executor; bulk data from an ssh process of its own."""
        if limit < BULK_BYTES and self.executor() is not None:
            return super().read_stream(command, sink, limit, label)
        start = time.monotonic()
        stall = self.default_timeout
        channel = self._start(f"printf '{_BULK_PID}%s\\n' \"$$\" >&2; {command}")
        channel.shutdown_write()
        channel.settimeout(stall)
        received = 0
        try:
            while received < limit:
                data = channel.recv(min(1 << 20, limit - received))
                if not data:
                    break
                received += len(data)
                sink(data)
            channel.settimeout(None)
            status = channel.recv_exit_status()
        except (KeyboardInterrupt, TimeoutError) as exc:
            channel.recv_stderr_ready()
            match = _BULK_PID_LINE.search(channel.stderr_tail)
            self._stop(int(match.group(1)) if match else None, channel)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise RemoteTimeout(
                f"{self.name}: {label}: no data for {stall:g}s (the remote read was stopped)"
            ) from None
        finally:
            channel.close()
        if status == SSH_FAILED and not _BULK_PID_LINE.search(channel.stderr_tail):
            raise ssh_failure(channel.stderr_tail, self.target)
        stderr = _BULK_PID_LINE.sub(b"", channel.stderr_tail)
        result = RunResult(command, status, b"", stderr, time.monotonic() - start)
        transcript.record(self.name, label, result)
        self.commands_run += 1
        return result

    def close(self) -> None:
        self.close_inside()
        if self._executor is not None:
            self._executor.close()
            self._executor = None
