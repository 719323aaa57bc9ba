"""The Session contract shared by SSH and local targets, and the pieces both run loops use.

Every command runs as the leader of a process group of its own, started by a process of ours
that knows its id (the remote executor, agent/executor.py; the local runner), so a timeout, an
output cap or Ctrl-C can stop the whole group and leave no orphans. Only the fallback for a box
without Python (a bare exec channel) learns the group from a marker line the shell prints.
"""

from __future__ import annotations

import re
import shlex
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from remotedbg.errors import Interrupted, RemoteTimeout
from remotedbg.local_stdin import Input
from remotedbg.session import transcript
from remotedbg.session.result import RunResult

if TYPE_CHECKING:
    from remotedbg.session.target import ConnectOptions

DEFAULT_MAX_OUTPUT = 8 * 1024 * 1024
NO_OUTPUT_CAP = 1 << 62  # output that streams and is not captured: no cap, as ssh has none
KEPT_STDERR = 1 << 20  # of stderr not captured: what an error line needs, memory bounded
StreamCallback = Callable[[str, bytes], None]  # ("stdout" | "stderr", chunk)

_PID_MARKER = re.compile(rb"\x1eRDBG(\d+)\n")
_MARKER_START = b"\x1eRDBG"
PID_PREFIX = "printf '\\036RDBG%s\\n' \"$$\"; "  # for a path that reads the marker


_PRECEDED_LIMIT = 1 << 16  # local output held back before giving up on the marker


def _preceded_marker(head: bytes) -> re.Match[bytes] | None:
    """The marker at the start of a line of `head`, after this machine's own output."""
    match = _PID_MARKER.search(head)
    while match and match.start() and head[match.start() - 1 : match.start()] != b"\n":
        match = _PID_MARKER.search(head, match.end())
    return match


def _may_be_marker(head: bytes) -> bool:
    starts = _MARKER_START.startswith(head) or head.startswith(_MARKER_START)
    return starts and b"\n" not in head and len(head) < 32


def build_command(
    command: str | Sequence[str],
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """A shell command line: argv lists are quoted word by word; a string is used as written."""
    text = command if isinstance(command, str) else shlex.join(command)
    if env:
        assignments = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
        text = f"export {assignments}; {text}"
    if cwd:
        text = f"cd -- {shlex.quote(cwd)} && {text}"
    return text


def kill_group_script(pid: int, grace: float = 0.5) -> str:
    """A command line that TERMs process group `pid`, waits up to `grace` s, then KILLs what is
    left. It runs in `sh` whatever the login shell (one single-quoted word with no quote,
    backslash, `!` or newline in it reads the same in sh, bash, zsh, fish, tcsh and mksh), and
    names the group as `-PGID` without `--`, which dash's kill rejects."""
    steps = max(1, int(grace / 0.1))
    script = (
        f"kill -TERM -{pid} 2>/dev/null || exit 0; "
        f"i=0; while [ $i -lt {steps} ]; do kill -0 -{pid} 2>/dev/null || exit 0; "
        f"sleep 0.1; i=$((i+1)); done; kill -KILL -{pid} 2>/dev/null; exit 0"
    )
    return f"sh -c '{script}'"


class OutputCollector:
    """Collects stdout/stderr up to a cap, strips the PID marker and forwards live chunks."""

    def __init__(
        self, max_output: int, stream: StreamCallback | None, capture: bool = True
    ) -> None:
        self.max_output = max_output
        self.stream = stream
        self.capture = capture
        self.counts = {"stdout": 0, "stderr": 0}
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.pid: int | None = None
        self._head = bytearray()  # stdout bytes before the marker has been seen
        self._marker_done = True  # expect_marker() for a command prefixed with PID_PREFIX
        self._preceded = False
        self.overflowed = False

    def expect_marker(self, preceded: bool = False) -> None:
        """The command's first line is its pid marker; `preceded`: output of this machine's own
        may come first on the same stream (ssh's LocalCommand writes to ssh's stdout before the
        remote command starts): it passes through and the marker is looked for after it."""
        self._marker_done = False
        self._preceded = preceded

    @property
    def marker_settled(self) -> bool:
        """The marker was read, or the output showed it will not come."""
        return self._marker_done

    def feed(self, name: str, data: bytes) -> None:
        if name == "stdout" and not self._marker_done:
            self._head += data
            match = _PID_MARKER.match(self._head)
            if self._preceded and not match:
                match = _preceded_marker(bytes(self._head))
            if match:
                self.pid = int(match.group(1))
                data = bytes(self._head[: match.start()] + self._head[match.end() :])
            elif _may_be_marker(bytes(self._head)) or self._waits_behind_local_output():
                return  # the marker may still be arriving
            else:
                data = bytes(self._head)
            self._marker_done = True
            self._head.clear()
            if not data:
                return
        room = self.max_output - self.counts[name]
        if room < len(data):
            self.overflowed = True
            data = data[: max(room, 0)]
        self.counts[name] += len(data)
        if self.capture:
            (self.stdout if name == "stdout" else self.stderr).extend(data)
        elif name == "stderr" and len(self.stderr) < KEPT_STDERR:
            self.stderr.extend(data[: KEPT_STDERR - len(self.stderr)])
        if self.stream and data:
            self.stream(name, data)

    def _waits_behind_local_output(self) -> bool:
        return self._preceded and len(self._head) < _PRECEDED_LIMIT

    def finish(self) -> None:
        if not self._marker_done and self._head:
            self._marker_done = True
            head, self._head = bytes(self._head), bytearray()
            self.feed("stdout", head)


class ByteChannels(Protocol):
    """Opens byte channels to the target: paramiko's Transport, ssh_pipe's ProcessTransport."""

    def open_session(self, timeout: float | None = None) -> Any: ...


class Session(ABC):
    """One live connection to a target, reused for every command of a run.

    A kind (session/kinds.py) declares what it can do here rather than callers probing for it:
    `supports_agent_call` (a resident executor runs agent calls, session/resident.py; without
    one each call boots its own python), `byte_channels()` (raw channels for an executor of
    another's, e.g. one inside a container; None when the kind has none), `sftp()`."""

    kind: ClassVar[str]
    supports_agent_call: ClassVar[bool] = False

    def __init__(self, name: str, default_timeout: float | None, max_output: int) -> None:
        self.name = name
        self.default_timeout = default_timeout
        self.max_output = max_output
        self.commands_run = 0
        self.opened_inside: dict[tuple[str, str], Session | Exception] = {}
        # a session opened for one command: that command does not wait for an executor to
        # boot when an exec channel of its own is cheaper (set by the command that knows)
        self.one_shot = False

    def run(
        self,
        command: str | Sequence[str],
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: Input | None = None,
        stream: StreamCallback | None = None,
        max_output: int | None = None,
        label: str | None = None,
        capture: bool = True,
    ) -> RunResult:
        """Run a command on the target. Raises RemoteTimeout, Interrupted or ConnectionFailed.

        With `capture=False` stdout goes only to `stream` (large binary pulls)."""
        text = build_command(command, cwd, env)
        effective_timeout = self.default_timeout if timeout is None else timeout
        collector = OutputCollector(max_output or self.max_output, stream, capture)
        start = time.monotonic()
        status: int | None = None
        timed_out = False
        try:
            status, timed_out = self._execute(text, stdin, collector, effective_timeout)
        except KeyboardInterrupt:
            result = self._result(text, None, collector, start, timed_out=False)
            transcript.record(self.name, label or text, result)
            raise Interrupted("interrupted: the remote command was stopped") from None
        result = self._result(text, status, collector, start, timed_out)
        self.commands_run += 1
        transcript.record(self.name, label or text, result)
        if timed_out:
            error = RemoteTimeout(
                f"remote command timed out after {effective_timeout:g}s and was stopped"
            )
            error.result = result  # type: ignore[attr-defined]
            raise error
        return result

    @staticmethod
    def _result(
        text: str, status: int | None, collector: OutputCollector, start: float, timed_out: bool
    ) -> RunResult:
        collector.finish()
        return RunResult(
            command=text,
            exit_status=None if collector.overflowed else status,
            stdout_bytes=bytes(collector.stdout),
            stderr_bytes=bytes(collector.stderr),
            duration=time.monotonic() - start,
            truncated=collector.overflowed,
            timed_out=timed_out,
        )

    @abstractmethod
    def _execute(
        self, text: str, stdin: Input | None, collector: OutputCollector, timeout: float | None
    ) -> tuple[int | None, bool]:
        """Run `text`, feed the collector; return (exit status, timed out).

        Must stop the remote process group when the collector overflows, on timeout, and on
        KeyboardInterrupt (then re-raise it).
        """

    def read_stream(
        self, command: str, sink: Callable[[bytes], None], limit: int, label: str
    ) -> RunResult:
        """Run a command whose stdout is bulk data (up to `limit` bytes) and hand it to `sink`."""
        return self.run(
            command,
            stream=lambda name, data: name == "stdout" and sink(data),
            capture=False,
            max_output=limit,
            label=label,
        )

    def read_file(
        self, path: str, offset: int, length: int, sink: Callable[[bytes], None], label: str
    ) -> RunResult | None:
        """`length` bytes at `offset` of the target's regular file `path` into `sink`, by the
        kind's own means (a resident executor's file read); None when it has none, or `path` is
        no regular file: the caller then runs a read command (read_stream). The result is
        ok only when every byte came as it was in the file."""
        return None

    on_host: ClassVar[bool] = False  # entered through a session of another kind (kinds.py)

    @classmethod
    def via_options(cls, options: ConnectOptions) -> ConnectOptions:
        """For a kind `on_host`: the options of the session it is entered through."""
        raise NotImplementedError(cls.kind)

    @classmethod
    def open(cls, options: ConnectOptions, max_output: int, via: Any) -> Session:
        """The session `options` name; `via` as session/kinds.py finds it. A kind's constructor
        takes the same three unless it says otherwise here."""
        return cls(options, max_output, via)  # type: ignore[call-arg]

    def byte_channels(self) -> ByteChannels | None:
        return None

    def start_resident(self) -> None:
        """Start now what the first agent call would start (a kind's resident executor), so
        that a caller overlaps it with work of its own; a failure is left for that call."""
        return None

    def sftp(self) -> Any:
        """An SFTP client (paramiko's) for reads the shell cannot do; None when there is none."""
        return None

    def agent_call(
        self, entry: str, args: dict, timeout: float | None, label: str, cwd: str | None = None
    ) -> dict | None:
        """Run an agent function in the session's resident executor (in `cwd` when given);
        None when there is none."""
        if not self.supports_agent_call:
            return None
        start = time.monotonic()
        timeout = self.default_timeout if timeout is None else timeout
        answer = self._agent_call(entry, args, timeout, cwd)
        if answer is not None:
            self.commands_run += 1
            transcript.record(
                self.name,
                label,
                RunResult(label, 0 if answer.get("ok") else 1, b"", b"", time.monotonic() - start),
            )
        return answer

    def _agent_call(
        self, entry: str, args: dict, timeout: float | None, cwd: str | None
    ) -> dict | None:
        """The call's answer frame; None when no resident executor runs it (resident.py)."""
        return None

    def run_tty(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        label: str | None = None,
    ) -> int:
        """Run a command on a pseudo-terminal sized like the local one, relaying keys and
        output until it exits (as `ssh -t`); returns its exit status."""
        text = build_command(command, cwd, env)
        start = time.monotonic()
        status = self._execute_tty(text)
        self.commands_run += 1
        transcript.record(
            self.name, label or text, RunResult(text, status, b"", b"", time.monotonic() - start)
        )
        return status

    @abstractmethod
    def _execute_tty(self, text: str) -> int: ...

    def close_inside(self) -> None:
        for opened in self.opened_inside.values():
            if isinstance(opened, Session):
                opened.close()
        self.opened_inside.clear()

    @abstractmethod
    def close(self) -> None: ...

    @property
    def has_sftp(self) -> bool:
        return False

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
