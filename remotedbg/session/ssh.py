"""SSH sessions: fabric for the connection (gateways, auth), our own command path for speed.

fabric's `run` polls with sleeps (~46 ms a command on loopback) and leaves remote processes
running after a timeout. Here commands go to the session's resident executor (one channel, see
remotedbg/agent/executor.py), or, on a box without python3, each to a paramiko exec channel of
its own; either way we wait on the channel's readiness pipe, never on a sleep.
"""

from __future__ import annotations

import logging
import os
import re
import select
import socket
import sys
import time
from typing import Any

import fabric
import paramiko

from remotedbg.errors import (
    ConnectionFailed,
    HostKeyError,
    RemoteCommandError,
    RemoteTimeout,
    StdoutClosed,
)
from remotedbg.local_stdin import Input, InputStream
from remotedbg.session import hostkeys, terminal, transcript
from remotedbg.session.base import PID_PREFIX, OutputCollector, kill_group_script
from remotedbg.session.chunk_pipe import ChunkPipe
from remotedbg.session.executor_client import (
    ExecutorChannel,
    ExecutorGone,
    NotStarted,
    connection_lost,
    signal_session,
)
from remotedbg.session.resident import ResidentSession
from remotedbg.session.result import RunResult
from remotedbg.session.send_env import env_request_bytes
from remotedbg.session.ssh_words import connect_failure, missing_identities, unresolved
from remotedbg.session.target import (
    ConnectOptions,
    ResolvedTarget,
    refuse_beyond_paramiko,
    resolve,
    user_known_hosts,
)

KEEPALIVE_INTERVAL = 3  # seconds between SSH keepalives; with TCP_USER_TIMEOUT a dead peer is
DEAD_PEER_TIMEOUT_MS = 10_000  # noticed within ~10 s instead of the kernel's ~15 minutes
# paramiko logs a traceback for a peer that is not an SSH server before raising; the one-line
# error remotedbg prints is all a user should see
logging.getLogger("paramiko").addHandler(logging.NullHandler())
logging.getLogger("paramiko").propagate = False

_BULK_PID = "RDBG-PGID:"
_BULK_PID_LINE = re.compile(rb"RDBG-PGID:(\d+)\n")
# login shells that read the bulk read's `printf ... "$$" >&2; tail | head` line as sh does
# (not rbash, which refuses `>&2`; not fish or csh): any other reads through the executor
_SH_READERS = {"sh", "dash", "bash", "ash", "ksh", "mksh", "lksh", "zsh", "yash", "busybox"}


def _reads_sh(login_shell: str) -> bool:
    return os.path.basename(login_shell) in _SH_READERS


def _marker_pid(channel: paramiko.Channel, collector: OutputCollector) -> int | None:
    """The command's pid from its marker line, waiting a moment for it (a command stopped
    right after it started may not have printed it yet)."""
    deadline = time.monotonic() + KILL_GRACE * 2
    try:
        while collector.pid is None and not collector.marker_settled and not channel.closed:
            if channel.recv_ready():
                collector.feed("stdout", channel.recv(65536))
            elif time.monotonic() >= deadline:
                break
            else:
                select.select([channel], [], [], 0.05)
    except (OSError, EOFError, paramiko.SSHException):
        pass
    return collector.pid


def _bulk_pid(channel: paramiko.Channel, seen: bytes) -> int | None:
    """The pipeline's process group, from the first line of its stderr."""
    data = seen
    try:
        while channel.recv_stderr_ready() and len(data) < 4096:
            data += channel.recv_stderr(4096)
    except (OSError, EOFError, paramiko.SSHException):
        pass
    match = _BULK_PID_LINE.search(data)
    return int(match.group(1)) if match else None


BULK_BYTES = 16 << 20  # reads this large pay a shell start-up for a channel of their own
# A bulk channel asks for large packets and a large window: sshd then sends as much as its pipe
# read returns (64 KiB) per packet instead of 32 KiB, and never waits on a window adjust; fewer
# packets is less Python per byte on the client (bench/tensor_pull.py: client CPU per MiB).
BULK_WINDOW = 64 << 20
BULK_PACKET = 256 << 10
# The executor's channel carries file reads too (agent/executor.py, F), sent by sendfile as
# fast as the box's page cache gives them: with a 64 MiB window sshd, not the client, became
# the bottleneck in most first reads of a session (a full core against the client's 35-40%)
# and a cold 1 GiB pull took ~1.4x as long as with 8 MiB (loopback, `--no-persist`, medians
# of 4); 8 MiB is still 4x the window OpenSSH's own client grants.
EXECUTOR_WINDOW = 8 << 20
KILL_GRACE = 0.5  # seconds a TERMed command has before KILL
LOGIN_BUDGET = 30.0  # seconds a login (rc files, MOTD) may take before the executor answers
# ... or the command's timeout, when shorter; but never less than this
LOGIN_FLOOR = 3.0
# the boot's exit when the box has no usable python3 (not found, not executable, older than
# 3.8: agent_bundle): then commands get exec channels of their own
NO_EXECUTOR_STATUSES = (127, 126, 86)


def _tune_socket(sock: object) -> None:
    if not isinstance(sock, socket.socket):
        return  # a channel through a jump host: the first hop's socket is tuned instead
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (
        ("TCP_KEEPIDLE", 5),
        ("TCP_KEEPINTVL", 2),
        ("TCP_KEEPCNT", 3),
        ("TCP_USER_TIMEOUT", DEAD_PEER_TIMEOUT_MS),
    ):
        option = getattr(socket, name, None)
        if option is not None:
            sock.setsockopt(socket.IPPROTO_TCP, option, value)


def _transport_factory(sock: Any, disabled_algorithms: Any = None) -> paramiko.Transport:
    """paramiko's transport with AES-GCM offered first: an AEAD cipher needs no separate MAC
    pass, and on bulk reads moves about twice the bytes per CPU second of paramiko's default
    AES-CTR with HMAC (bench/tensor_pull.py: 690 against 360 MiB/s on loopback). A server
    without it negotiates the next cipher, as before."""
    transport = paramiko.Transport(sock, disabled_algorithms=disabled_algorithms)
    options = transport.get_security_options()
    ciphers = tuple(options.ciphers)
    options.ciphers = tuple(c for c in ciphers if "-gcm" in c) + tuple(
        c for c in ciphers if "-gcm" not in c
    )
    return transport


class SSHSession(ResidentSession):
    kind = "ssh"

    def __init__(
        self, options: ConnectOptions, max_output: int, target: ResolvedTarget | None = None
    ) -> None:
        super().__init__(options.host, options.timeout, max_output)
        self.options = options
        self.target: ResolvedTarget = target or resolve(options)
        self._connection: fabric.Connection | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self._sftp_missing = False
        self._executor: ExecutorChannel | None = None
        self._executor_unavailable = False
        self._executor_commands_only = False
        self.connect()

    # -- connecting -----------------------------------------------------------------------
    def _make_connection(
        self, target: ResolvedTarget, gateway: fabric.Connection | None
    ) -> fabric.Connection:
        timeout = self.options.connect_timeout
        connection = fabric.Connection(
            host=target.hostname,
            user=target.user,
            port=target.port,
            # ProxyCommand wins over ProxyJump, as in ssh (fabric runs it as paramiko's
            # ProxyCommand: the byte stream goes through it, never directly)
            gateway=target.proxy_command or gateway,
            connect_timeout=max(1, round(timeout)),
            # An explicit empty ssh_config: we resolved the target already (with `ssh -G`).
            config=fabric.Config(ssh_config=paramiko.SSHConfig()),
            connect_kwargs={
                "key_filename": target.identity_files,
                "look_for_keys": target.look_for_keys,
                "allow_agent": target.allow_agent,
                "banner_timeout": timeout,
                "auth_timeout": timeout,
                "channel_timeout": timeout,
                "transport_factory": _transport_factory,
            },
        )
        hostkeys.load_known_hosts(connection.client, target.known_hosts_files)
        if target.host_key_alias:
            hostkeys.alias_keys(connection.client, target.known_hosts_key, target.connect_key)
        connection.client.set_missing_host_key_policy(
            hostkeys.StrictPolicy(
                self.options.accept_new_host_key,
                user_known_hosts(target),
                target.spec,
                target.host_key_alias,
                hashed=target.hash_known_hosts,
            )
        )
        return connection

    def _open(self, target: ResolvedTarget, gateway: fabric.Connection | None) -> fabric.Connection:
        why = "--transport paramiko" if self.options.transport == "paramiko" else "no ssh client"
        refuse_beyond_paramiko(target, why)
        connection = self._make_connection(target, gateway)
        where = f"{target.spec} ({target.user}@{target.hostname}:{target.port})"
        try:
            connection.open()
        except HostKeyError:
            raise
        except paramiko.BadHostKeyException as exc:
            raise hostkeys.changed_key_error(
                target.spec, target.known_hosts_key, exc, target.known_hosts_files
            ) from None
        except paramiko.AuthenticationException as exc:
            raise ConnectionFailed(
                f"{where}: authentication failed: {exc}{_missing(target)}"
            ) from None
        except socket.gaierror as exc:
            raise ConnectionFailed(_unresolved(target, exc)) from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            if str(exc) == "No authentication methods available":
                message = (
                    f"{where}: authentication failed: no key or agent to offer{_missing(target)}"
                )
                raise ConnectionFailed(message) from None
            raise ConnectionFailed(f"{where}: cannot connect: {connect_failure(exc)}") from None
        transport = connection.client.get_transport()
        assert transport is not None
        _tune_socket(transport.sock)
        transport.set_keepalive(KEEPALIVE_INTERVAL)
        # paramiko's own rekey after 512 MiB races with large reads (paramiko issue #822,
        # "Key-exchange timed out"); leave rekeying to the server, whose RekeyLimit applies.
        transport.packetizer.REKEY_BYTES = transport.packetizer.REKEY_PACKETS = 1 << 40
        return connection

    def connect(self) -> None:
        gateway = None
        if self.target.proxy_jump:
            for hop in self.target.proxy_jump.split(","):
                # Like `ssh -J`, command-line user/port/identity apply to the final host only.
                hop_options = ConnectOptions(
                    host=hop,
                    ssh_config=self.options.ssh_config,
                    connect_timeout=self.options.connect_timeout,
                    accept_new_host_key=self.options.accept_new_host_key,
                )
                gateway = self._open(resolve(hop_options), gateway)
        self._connection = self._open(self.target, gateway)

    def _transport(self) -> paramiko.Transport:
        """The live transport; reconnects once when the previous one has dropped."""
        transport = self._connection.client.get_transport() if self._connection else None
        if transport is None or not transport.is_active():
            self.close()
            self.connect()
            transport = self._connection.client.get_transport()  # type: ignore[union-attr]
        assert transport is not None
        return transport

    def byte_channels(self) -> paramiko.Transport:
        return self._transport()

    def _open_channel(self, **sizes: int) -> paramiko.Channel:
        """`sizes`: paramiko's window_size and max_packet_size for this channel."""
        try:
            return self._transport().open_session(timeout=self.options.connect_timeout, **sizes)
        except (paramiko.SSHException, OSError, EOFError):
            # The transport died between commands without us noticing: reconnect once.
            self.close()
            self.connect()
            try:
                return self._transport().open_session(timeout=self.options.connect_timeout, **sizes)
            except (paramiko.SSHException, OSError, EOFError) as exc:
                raise ConnectionFailed(f"{self.name}: cannot open a channel: {exc}") from None

    # -- the executor -----------------------------------------------------------------------
    def executor(
        self, budget: float | None = None, commands_only: bool = False
    ) -> ExecutorChannel | None:
        """The session's remote executor, started on first use; None when the box cannot run
        it (no python3 there), and then every command gets its own exec channel instead.
        `budget`: seconds the login may take (the command's timeout; RemoteTimeout past it).
        `commands_only`: the executor without the agent's checks (a session for one command)."""
        env = self._command_env()
        current = self._executor
        if current is not None and current.settled():
            if (commands_only or not self._executor_commands_only) and not self._executor_stale(
                env
            ):
                return current
        if current is not None:
            current.close()  # a request of it did not end, or it lacks the checks: a fresh one
        self._executor = None
        if self._executor_unavailable:
            return None
        from remotedbg.session import agent_bundle

        login = max(self.options.connect_timeout, LOGIN_BUDGET)
        if budget is not None:
            login = min(login, max(budget, LOGIN_FLOOR))
        transport = self._transport()
        bundle = agent_bundle.command_bundle if commands_only else agent_bundle.executor_bundle
        try:
            self._executor = ExecutorChannel.start(
                transport,
                agent_bundle.boot_command(agent_bundle.DEFAULT_PYTHON),
                bundle,
                login,
                env=env,
                window_size=EXECUTOR_WINDOW,
                max_packet_size=BULK_PACKET,
            )
        except NotStarted as refused:
            missing = "not found" in str(refused).lower()  # tcsh says so, and exits 1
            if refused.status not in NO_EXECUTOR_STATUSES and not missing:
                # the login ran something else than our command (a ForceCommand wrapper, a
                # shell that ignores -c): no command can be trusted to have run
                said = f": {refused}" if str(refused) else ""
                raise RemoteCommandError(
                    f"{self.name}: the login did not run remotedbg's executor (exit "
                    f"{refused.status}; a ForceCommand or an unusual login shell?){said}"
                ) from None
            self._executor_unavailable = True
            return None
        except TimeoutError:
            raise RemoteTimeout(
                f"{self.name}: the login did not finish within {login:g}s"
                " (remotedbg's executor never answered)"
            ) from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionFailed(f"{self.name}: cannot start a channel: {exc}") from None
        self._executor_commands_only = commands_only
        self._learn_env(env, self._executor)
        return self._executor

    def _executor_failed(self, error: ExecutorGone) -> ConnectionFailed | RemoteCommandError:
        self._executor = None
        transport = self._connection.client.get_transport() if self._connection else None
        if transport is None or self._transport_dies(transport):
            return connection_lost(self.name, "")
        return RemoteCommandError(f"{self.name}: the remote executor stopped: {error}")

    def _resident(self, timeout: float | None) -> ExecutorChannel | None:
        return self.executor(timeout)

    def _call_timed_out(self, executor: ExecutorChannel) -> None:
        if executor.channel.closed:
            self._executor = None
        self._drop_if_wedged(executor)

    # -- running --------------------------------------------------------------------------
    def _execute(
        self, text: str, stdin: Input | None, collector: OutputCollector, timeout: float | None
    ) -> tuple[int | None, bool]:
        # Every command runs under the executor, which owns its process group and stops it on
        # a timeout, Ctrl-C, or a client that went silent or away; an exec channel of its own
        # only on a box without python3.
        deadline = None if timeout is None else time.monotonic() + timeout
        executor = self.executor(timeout, commands_only=self.one_shot)
        if executor is None:
            return self._execute_on_channel(text, stdin, collector, timeout)
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        env = self._env_for_executor(self._command_env())
        try:
            status, timed_out = executor.execute(text, stdin, collector, remaining, env)
        except ExecutorGone as gone:
            raise self._executor_failed(gone) from None
        self._drop_if_wedged(executor)
        return status, timed_out

    def _drop_if_wedged(self, executor: ExecutorChannel) -> None:
        """An executor that did not answer a kill: close the connection, so the next command
        connects afresh (a stopped sshd child keeps TCP alive, and would wedge every command)."""
        if executor.unresponsive:
            self._executor = None
            self.close()

    def _execute_on_channel(
        self, text: str, stdin: Input | None, collector: OutputCollector, timeout: float | None
    ) -> tuple[int | None, bool]:
        channel = self._open_channel()
        transport = channel.get_transport()
        deadline = None if timeout is None else time.monotonic() + timeout
        collector.expect_marker()
        try:
            self._send_env(channel)
            channel.exec_command((PID_PREFIX + text).encode("utf-8", "surrogateescape"))
            # input goes out as the window takes it, between reads of the output: a `cat` of
            # more than both windows hold would otherwise stop both ends
            stream = stdin if isinstance(stdin, InputStream) else None
            unsent = memoryview(stdin if isinstance(stdin, bytes) else b"")
            more = stream is not None  # input still to come from the stream
            if not unsent and not more:
                channel.shutdown_write()
            ready = channel.fileno()
            while True:
                if more and not unsent:
                    chunk = stream.read_ready(1 << 16)  # type: ignore[union-attr]
                    if chunk == b"":
                        more = False
                        channel.shutdown_write()
                    elif chunk:
                        unsent = memoryview(chunk)
                while unsent and channel.send_ready():
                    unsent = unsent[channel.send(bytes(unsent[: 1 << 18])) :]
                    if not unsent and not more:
                        channel.shutdown_write()
                while channel.recv_ready():
                    collector.feed("stdout", channel.recv(65536))
                while channel.recv_stderr_ready():
                    collector.feed("stderr", channel.recv_stderr(65536))
                if collector.overflowed:
                    self._stop(channel, _marker_pid(channel, collector))
                    return None, False
                if channel.closed or (channel.eof_received and channel.exit_status_ready()):
                    if not (channel.recv_ready() or channel.recv_stderr_ready()):
                        break
                    continue
                if not transport.is_active():
                    raise ConnectionFailed(
                        f"{self.name}: connection lost while a remote command was running"
                    )
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    self._stop(channel, _marker_pid(channel, collector))
                    return None, True
                wait = 1.0 if remaining is None else min(remaining, 1.0)
                waiting = [ready] + ([stream.fileno()] if more and not unsent else [])  # type: ignore[union-attr]
                select.select(waiting, [], [], min(wait, 0.005) if unsent else wait)
            status = channel.recv_exit_status() if channel.exit_status_ready() else -1
            if status < 0 and self._transport_dies(transport):
                raise ConnectionFailed(
                    f"{self.name}: connection lost while a remote command was running"
                )
            return (255 if status < 0 else status), False  # 255 for a signal, like ssh
        except (KeyboardInterrupt, StdoutClosed):
            self._stop(channel, _marker_pid(channel, collector))
            raise
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionFailed(f"{self.name}: connection lost: {exc}") from None
        finally:
            channel.close()

    def _execute_tty(self, text: str) -> int:
        """A pty channel: keys from the local terminal (raw) go to the program, its output to
        stdout, window resizes follow. When the channel closes, sshd hangs up the pty and the
        program with it, so nothing stays behind."""
        channel = self._open_channel()
        transport = channel.get_transport()
        in_fd, out_fd = sys.stdin.fileno(), sys.stdout.fileno()
        columns, lines = terminal.size()
        try:
            channel.get_pty(os.environ.get("TERM") or "xterm-256color", columns, lines)
            self._send_env(channel)
            channel.exec_command(text.encode("utf-8", "surrogateescape"))
            with terminal.raw_mode(in_fd) as keys, terminal.on_resize(channel.resize_pty):
                watched: list[Any] = [channel, in_fd] if keys else [channel]
                while True:
                    readable, _, _ = select.select(watched, [], [], 1.0)
                    if channel in readable or channel.recv_ready():
                        data = channel.recv(65536)
                        if not data:
                            break
                        terminal.write_all(out_fd, data)
                    if in_fd in readable:
                        typed = os.read(in_fd, 4096)
                        if typed:
                            channel.sendall(typed)
                        else:
                            watched = [channel]
                    if not transport.is_active():
                        raise ConnectionFailed(f"{self.name}: connection lost")
            status = channel.recv_exit_status()
            return 255 if status < 0 else status
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionFailed(f"{self.name}: connection lost: {exc}") from None
        finally:
            channel.close()

    def _send_env(self, channel: paramiko.Channel) -> None:
        """SendEnv/SetEnv as env requests on a command's own channel, as ssh sends them (no
        reply asked: sshd keeps what its AcceptEnv allows)."""
        env = self._command_env()
        if env:
            channel.update_environment(env_request_bytes(env))

    @staticmethod
    def _transport_dies(transport: paramiko.Transport, within: float = 0.5) -> bool:
        """A channel closed without an exit status: was it the whole connection?"""
        deadline = time.monotonic() + within
        while transport.is_active() and time.monotonic() < deadline:
            time.sleep(0.01)  # off the hot path: only after an abnormal close
        return not transport.is_active()

    def _stop(self, channel: paramiko.Channel, pid: int | None = None) -> None:
        """Stop the command of `channel` with its whole process group: a kill of group `pid`
        through a second channel when the command told us its pid (sshd does not forward
        signals to a command without a pty), else, or when no second channel opens
        (MaxSessions 1), sshd's "signal" request, TERM then KILL (OpenSSH 7.9+ signals the
        session's group; it refuses for some logins, root's among them)."""
        if pid is not None:
            try:
                stopper = self._transport().open_session(timeout=2)
                stopper.exec_command(kill_group_script(pid))
                stopper.shutdown_write()
                stopper.recv_exit_status()
                stopper.close()
                return
            except (paramiko.SSHException, OSError, EOFError, ConnectionFailed):
                pass  # no second channel: the signal request below
        for name in ("TERM", "KILL"):
            signal_session(channel, name)
            deadline = time.monotonic() + KILL_GRACE
            while time.monotonic() < deadline:
                if channel.exit_status_ready() or channel.closed:
                    return
                select.select([channel], [], [], 0.05)
                while channel.recv_ready():
                    channel.recv(65536)  # what the dying command still writes
                while channel.recv_stderr_ready():
                    channel.recv_stderr(65536)

    # -- files ----------------------------------------------------------------------------
    def read_stream(self, command: str, sink, limit: int, label: str) -> RunResult:
        """Small reads go through the executor (no shell start-up); bulk data gets a channel of
        its own, read in large blocks: as fast as scp here (~200 MiB/s on loopback) and about
        twice paramiko's SFTP."""
        executor = self.executor()
        if executor is not None and (limit < BULK_BYTES or not _reads_sh(executor.login_shell)):
            return super().read_stream(command, sink, limit, label)
        start = time.monotonic()
        sizes = {"window_size": BULK_WINDOW, "max_packet_size": BULK_PACKET}
        try:
            channel = self._transport().open_session(
                timeout=self.options.connect_timeout, **sizes
            )
        except paramiko.ChannelException:
            # the server allows one session per connection (MaxSessions 1), the executor's
            if self._executor is not None:
                return super().read_stream(command, sink, limit, label)
            channel = self._open_channel(**sizes)
        except (paramiko.SSHException, OSError, EOFError):
            channel = self._open_channel(**sizes)
        channel.in_buffer = ChunkPipe()  # before any data: the packets' bytes kept as they come
        received, stderr = 0, b""
        stall = self.default_timeout
        # the shell sshd starts leads its process group: its pid (on stderr, before any data)
        # stops the whole `tail | head` pipeline where sshd refuses the signal request
        wrapped = f"printf '{_BULK_PID}%s\\n' \"$$\" >&2; {command}"
        try:
            channel.exec_command(wrapped.encode("utf-8", "surrogateescape"))
            channel.shutdown_write()
            channel.settimeout(stall)
            while received < limit:
                data = channel.recv(limit - received)
                if not data:
                    break
                received += len(data)
                sink(data)
            channel.settimeout(None)
            while channel.recv_stderr_ready():
                stderr += channel.recv_stderr(65536)
            status = channel.recv_exit_status()
        except (KeyboardInterrupt, TimeoutError) as exc:
            channel.settimeout(None)
            self._stop(channel, _bulk_pid(channel, stderr))
            channel.close()
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise RemoteTimeout(
                f"{self.name}: {label}: no data for {stall:g}s (the remote read was stopped)"
            ) from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionFailed(f"{self.name}: connection lost: {exc}") from None
        finally:
            channel.close()
        stderr = _BULK_PID_LINE.sub(b"", stderr)
        result = RunResult(command, status, b"", stderr, time.monotonic() - start)
        transcript.record(self.name, label, result)
        self.commands_run += 1
        return result

    def sftp(self) -> paramiko.SFTPClient | None:
        """An SFTP client, or None when the server has no SFTP subsystem."""
        if self._sftp is None and not self._sftp_missing:
            try:
                self._sftp = paramiko.SFTPClient.from_transport(self._transport())
            except (paramiko.SSHException, OSError, EOFError):
                self._sftp_missing = True
        return self._sftp

    @property
    def has_sftp(self) -> bool:
        return self.sftp() is not None

    def close(self) -> None:
        self.close_inside()
        if self._executor is not None:
            self._executor.close()
            self._executor = None
        if self._sftp is not None:
            self._sftp.close()
            self._sftp = None
        if self._connection is not None:
            gateway = self._connection.gateway
            self._connection.close()
            while isinstance(gateway, fabric.Connection):
                gateway.close()
                gateway = gateway.gateway
            self._connection = None


def _missing(target: ResolvedTarget) -> str:
    return missing_identities(target)


def _unresolved(target: ResolvedTarget, exc: socket.gaierror) -> str:
    return unresolved(target, exc.strerror or str(exc))
