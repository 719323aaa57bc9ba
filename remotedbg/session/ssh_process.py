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

import fcntl
import math
import os
import re
import select
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from remotedbg.errors import (
    ConnectionFailed,
    HostKeyError,
    RemoteCommandError,
    RemotedbgError,
    RemoteTimeout,
    StdoutClosed,
    UsageError,
)
from remotedbg.session import transcript
from remotedbg.session.base import OutputCollector, Session, kill_group_script
from remotedbg.session.result import RunResult
from remotedbg.session.ssh_words import missing_identities, unresolved
from remotedbg.session.target import (
    ConnectOptions,
    ResolvedTarget,
    parse_host_spec,
    user_known_hosts,
)

if TYPE_CHECKING:  # imported where used: it brings paramiko, which a one-shot run never needs
    from remotedbg.session.executor_client import ExecutorChannel

BULK_BYTES = 16 << 20  # as in session/ssh.py: larger reads get an ssh process of their own
LOGIN_BUDGET = 30.0  # seconds a login may take before the executor answers
CLOSE_WAIT = 2.0  # seconds an ssh process gets to end after its stdin closed
SSH_FAILED = 255  # ssh's own exit status for a failure of its own
TRANSPORTS = ("auto", "ssh", "paramiko")
_BULK_PID = "RDBG-PGID:"
_BULK_PID_LINE = re.compile(rb"RDBG-PGID:(\d+)\n")


# -- pure: which transport, which argv, which error ---------------------------------------------
def choose_transport(requested: str, targets: list[ResolvedTarget], ssh: str | None) -> str:
    """'ssh' or 'paramiko' for a host (its jump hosts in `targets` too): auto picks the system
    client when the config needs what paramiko cannot do and an ssh client is installed."""
    if requested not in TRANSPORTS:
        raise UsageError(f"--transport {requested!r}: expected one of {', '.join(TRANSPORTS)}")
    needs = any(t.needs_system_ssh for t in targets)
    if requested == "ssh" or (requested == "auto" and needs and ssh):
        if not ssh:
            raise UsageError("--transport ssh: no OpenSSH client (ssh) on PATH")
        return "ssh"
    return "paramiko"


def ssh_argv(
    ssh: str, target: ResolvedTarget, options: ConnectOptions, command: str, tty: bool = False
) -> list[str]:
    """The ssh command line that runs `command` on the target."""
    user, host, port = parse_host_spec(target.spec)
    argv = [ssh, "-tt" if tty else "-T"]
    if target.ssh_config_explicit and target.ssh_config:
        argv += ["-F", target.ssh_config]
    settings = [
        "BatchMode=yes",
        # ssh refuses a command line together with RemoteCommand ("Cannot execute command-line
        # and remote command."): ours replaces it, as `ssh -o RemoteCommand=none host cmd`
        "RemoteCommand=none",
        "LogLevel=ERROR",  # errors only: no banner, no "Permanently added" on our stderr
        f"ConnectTimeout={max(1, math.ceil(options.connect_timeout))}",
    ]
    if options.accept_new_host_key and target.strict_host_key_checking not in ("no", "off"):
        settings.append("StrictHostKeyChecking=accept-new")
    settings += target.ssh_overrides
    if target.server_alive_interval == 0:  # a dead peer noticed within ~12 s, as with paramiko
        settings += ["ServerAliveInterval=3", "ServerAliveCountMax=4"]
    for setting in settings:
        argv += ["-o", setting]
    for identity in options.identity:
        argv += ["-i", os.path.expanduser(identity)]
    if options.user or user:
        argv += ["-l", options.user or user or ""]
    if options.port or port:
        argv += ["-p", str(options.port or port)]
    return [*argv, "--", host, command]


_CONNECT = re.compile(r"^ssh: connect to host \S+ port \d+: (.+)$")
_RESOLVE = re.compile(r"^ssh: Could not resolve hostname \S+: (.+)$")
_UNKNOWN_KEY = re.compile(r"^No (\S+) host key is known for (\S+)")
_OFFENDING = re.compile(r"^Offending \S+ key in (\S+:\d+)")
_NEW_KEY = re.compile(r"^The fingerprint for the (\S+) key sent by the remote host is")
_LOST = ("Connection to ", "client_loop:", "Broken pipe", "Connection reset", "Timeout, server")


def ssh_failure(stderr: bytes, target: ResolvedTarget) -> RemotedbgError:
    """What ssh said when it exited 255 before the command started, as the one-line error (and
    exit code) the paramiko transport gives for the same failure."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    where = f"{target.spec} ({target.user}@{target.hostname}:{target.port})"
    for line in lines:
        if match := _RESOLVE.match(line):
            return ConnectionFailed(unresolved(target, match.group(1)))
        if match := _CONNECT.match(line):
            return ConnectionFailed(f"{where}: cannot connect: {match.group(1)}")
        if match := _UNKNOWN_KEY.match(line):
            return HostKeyError(
                f"{target.spec}: unknown host key {match.group(1)} for {match.group(2)}; check "
                f"it, then re-run with --accept-new-host-key to record it in "
                f"{user_known_hosts(target)}"
            )
        if "REMOTE HOST IDENTIFICATION HAS CHANGED" in line:
            offending = [m.group(1) for m in map(_OFFENDING.match, lines) if m]
            at = ", ".join(offending) or "your known_hosts files"
            now = [
                f"{m.group(1)} {after.rstrip('.')}"
                for m, after in zip(map(_NEW_KEY.match, lines), [*lines[1:], ""], strict=True)
                if m
            ]
            return HostKeyError(
                f"{target.spec}: HOST KEY CHANGED for {target.known_hosts_key}"
                f"{f' (now {now[0]})' if now else ''}; refusing to connect. If the change is "
                f"expected, remove the old entry at {at}"
            )
        if line.startswith("Host key verification failed"):
            return HostKeyError(f"{where}: host key verification failed (ssh: {line})")
        if "Permission denied" in line:
            return ConnectionFailed(
                f"{where}: authentication failed: {line}{missing_identities(target)}"
            )
    for line in lines:
        if "banner exchange" in line:
            return ConnectionFailed(f"{where}: cannot connect: {line.split(': ')[-1]}")
        if line.startswith("kex_exchange_identification"):
            return ConnectionFailed(f"{where}: cannot connect: Connection closed by remote host")
    detail = lines[-1] if lines else "ssh exited 255 and said nothing"
    return ConnectionFailed(f"{where}: cannot connect: {detail}")


def lost_connection(stderr: bytes) -> bool:
    """Did ssh end (255) because the connection dropped, not because the command exited 255?"""
    tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
    return bool(tail) and tail[0].strip().startswith(_LOST)


# -- an ssh process that looks like a paramiko channel to ExecutorChannel ------------------
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


# -- the session -----------------------------------------------------------------------------
class SystemSSHSession(Session):
    """A session whose byte streams go through the system ssh client."""

    def __init__(self, options: ConnectOptions, target: ResolvedTarget, max_output: int) -> None:
        super().__init__(options.host, options.timeout, max_output)
        self.options = options
        self.target = target
        self.ssh = shutil.which("ssh") or "ssh"
        self._executor: ExecutorChannel | None = None
        self._executor_unavailable = False
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

    def _transport(self) -> ProcessTransport:
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
    def executor(self) -> ExecutorChannel | None:
        if self._executor is not None and self._executor.settled():
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
            max(self.options.connect_timeout, LOGIN_BUDGET),
        )
        if executor is None:
            channel = self._processes.last
            assert channel is not None
            channel.close()
            if channel.process is not None and channel.process.returncode == SSH_FAILED:
                raise self._failed(channel)
            self._executor_unavailable = True  # no python3 there: a process per command
        self._executor = executor
        return executor

    def _executor_failed(self, error: Exception) -> ConnectionFailed | RemoteCommandError:
        from remotedbg.session.executor_client import connection_lost

        channel = self._executor.channel if self._executor is not None else None
        self._executor = None
        if isinstance(channel, ProcessChannel):
            channel.close()
            if channel.process is not None and channel.process.returncode == SSH_FAILED:
                return connection_lost(self.name, "")
        return RemoteCommandError(f"{self.name}: the remote executor stopped: {error}")

    def _agent_call(
        self, entry: str, args: dict, timeout: float | None, cwd: str | None = None
    ) -> dict | None:
        from remotedbg.session.executor_client import ExecutorGone

        executor = self.executor()
        if executor is None:
            return None
        try:
            return executor.call(entry, args, timeout, cwd)
        except TimeoutError:
            if executor.channel.closed:
                self._executor = None
            raise RemoteTimeout(f"{entry} timed out after {timeout:g}s") from None
        except ExecutorGone as gone:
            raise self._executor_failed(gone) from None

    # -- running ------------------------------------------------------------------------
    def _execute(
        self, text: str, stdin: bytes | None, collector: OutputCollector, timeout: float | None
    ) -> tuple[int | None, bool]:
        if not (self.one_shot and self._executor is None):
            executor = self.executor()
            if executor is not None:
                from remotedbg.session.executor_client import ExecutorGone

                try:
                    return executor.execute(text, stdin, collector, timeout)
                except ExecutorGone as gone:
                    raise self._executor_failed(gone) from None
        return self._execute_in_process(text, stdin, collector, timeout)

    def _execute_in_process(
        self, text: str, stdin: bytes | None, collector: OutputCollector, timeout: float | None
    ) -> tuple[int | None, bool]:
        """One ssh process for one command (a box without python3, or a one-shot `run`)."""
        channel = self._start(text)
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

    @staticmethod
    def _feed_stdin(channel: ProcessChannel, stdin: bytes | None) -> None:
        try:
            if stdin:
                channel.sendall(stdin, budget=float("inf"))
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
