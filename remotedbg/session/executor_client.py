"""The local end of the remote executor (remotedbg/agent/executor.py): one channel per session
carries every command and agent call as frames, so the login shell's start-up is paid once.

Each request (command or call) gets the next id of the channel, and every frame carries its
request's id. A request left without its end frame (an exception in the middle, Ctrl-C landing
at an odd moment) is *open*: before the next request the channel is settled, the open one
stopped and its frames drained to its end, or the channel is given up (`settled()` is False)
and the session starts another executor. One request's frames are never read as another's."""

from __future__ import annotations

import json
import secrets
import select
import struct
import time
from collections.abc import Callable
from typing import Any

import paramiko

from remotedbg.errors import ConnectionFailed, StdoutClosed
from remotedbg.session import answers
from remotedbg.session.base import OutputCollector

HEADER = struct.Struct("!BII")  # kind, request id, length
STOP_WAIT = 2.0  # seconds to wait for the executor to report a stopped command
EXECUTOR = "the remote executor"  # who a malformed answer came from


class ExecutorGone(Exception):
    """The executor channel closed; the caller reconnects or falls back."""


class ExecutorChannel:
    def __init__(self, channel: paramiko.Channel) -> None:
        self.channel = channel
        self.buffer = b""
        self.stderr_tail = b""
        self.ready_fd = channel.fileno()
        self.pid: int | None = None  # the executor's pid on the remote
        self.last_id = 0
        self.open_id: int | None = None  # the request whose end frame is not read yet
        self.open_end = ""  # that end frame's kind: S for a command, R for a call

    @classmethod
    def start(
        cls,
        transport: paramiko.Transport,
        boot: str,
        bundle_for: Callable[[str], bytes],
        timeout: float,
    ) -> ExecutorChannel | None:
        """Start the executor; None when the remote cannot run it (no Python there)."""
        return cls.start_or_why(transport, boot, bundle_for, timeout)[0]

    @classmethod
    def start_or_why(
        cls,
        transport: paramiko.Transport,
        boot: str,
        bundle_for: Callable[[str], bytes],
        timeout: float,
    ) -> tuple[ExecutorChannel | None, str]:
        """The executor, or None and the last line its command wrote to stderr. The executor
        writes a fresh random marker before its first frame: whatever the login printed before
        it (banners, MOTDs) is skipped, and the time a slow login takes is paid here once,
        within `timeout`."""
        marker = "\x1eRDBG" + secrets.token_hex(12) + "\x1e"
        channel = transport.open_session(timeout=timeout)
        channel.exec_command(boot)
        executor = cls(channel)
        try:
            channel.sendall(bundle_for(marker))
            executor.skip_to(marker.encode("ascii"), time.monotonic() + timeout)
            kind, _, payload = executor.next_frame(time.monotonic() + timeout)
        except (ExecutorGone, TimeoutError, OSError, EOFError):
            channel.close()
            return None, executor.why()
        try:
            hello = json.loads(payload) if kind == "P" else {}
        except (ValueError, RecursionError):
            hello = {}
        if not isinstance(hello, dict) or not hello.get("ready"):
            channel.close()
            return None, executor.why()
        try:
            executor.pid = answers.checked(hello, answers.HELLO, EXECUTOR)["pid"]
        except answers.AgentAnswerError:
            channel.close()
            raise
        return executor, ""

    def why(self) -> str:
        """The last line the executor's command wrote to stderr (why it did not start)."""
        while self.channel.recv_stderr_ready():
            self.stderr_tail = (self.stderr_tail + self.channel.recv_stderr(65536))[-4096:]
        lines = self.stderr_tail.decode("utf-8", "replace").strip().splitlines()
        return lines[-1].strip() if lines else ""

    # -- frames ---------------------------------------------------------------------------
    def send(self, kind: str, payload: bytes = b"", rid: int = 0) -> None:
        try:
            self.channel.sendall(HEADER.pack(ord(kind), rid, len(payload)) + payload)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise ExecutorGone(str(exc)) from None

    def send_json(self, kind: str, value: Any, rid: int = 0) -> None:
        self.send(kind, json.dumps(value).encode("utf-8"), rid)

    def _parse(self) -> tuple[str, int, bytes] | None:
        if len(self.buffer) < HEADER.size:
            return None
        kind, rid, length = HEADER.unpack_from(self.buffer)
        if len(self.buffer) < HEADER.size + length:
            return None
        payload = self.buffer[HEADER.size : HEADER.size + length]
        self.buffer = self.buffer[HEADER.size + length :]
        return chr(kind), rid, payload

    def skip_to(self, marker: bytes, deadline: float) -> None:
        """Drop everything before `marker` (and the marker)."""
        while marker not in self.buffer:
            self._fill(deadline)
            if len(self.buffer) > (1 << 20) + len(marker):
                self.buffer = self.buffer[-len(marker) :]  # a login that prints megabytes
        self.buffer = self.buffer.split(marker, 1)[1]

    def _fill(self, deadline: float | None) -> None:
        while self.channel.recv_stderr_ready():
            self.stderr_tail = (self.stderr_tail + self.channel.recv_stderr(65536))[-4096:]
        if self.channel.recv_ready():
            data = self.channel.recv(1 << 20)
            if data:
                self.buffer += data
                return
        if self.channel.closed or self.channel.eof_received:
            if not self.channel.recv_ready():
                raise ExecutorGone(self.stderr_tail.decode("utf-8", "replace")[-300:])
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise TimeoutError
        select.select([self.ready_fd], [], [], 1.0 if remaining is None else min(remaining, 1.0))

    def next_frame(self, deadline: float | None) -> tuple[str, int, bytes]:
        """The next frame; TimeoutError at the deadline, ExecutorGone when the channel ends."""
        while True:
            frame = self._parse()
            if frame:
                return frame
            self._fill(deadline)

    def _frame_of(self, rid: int, deadline: float | None) -> tuple[str, bytes]:
        """The next frame of request `rid`; those of ended requests are dropped, and the end
        frame closes the request."""
        while True:
            kind, of, payload = self.next_frame(deadline)
            if of != rid:
                continue
            if kind == self.open_end:
                self.open_id = None
            return kind, payload

    # -- requests -------------------------------------------------------------------------
    def _begin(self, end: str) -> int:
        if self.open_id is not None and not self.settled():
            raise ExecutorGone("the previous request did not end")
        self.last_id = self.last_id % 0xFFFFFFFF + 1
        self.open_id, self.open_end = self.last_id, end
        return self.last_id

    def settled(self) -> bool:
        """No request open: an open one is stopped and drained first; False (and the channel
        closed) when it does not end within STOP_WAIT."""
        if self.open_id is None:
            return not self.channel.closed
        rid, deadline = self.open_id, time.monotonic() + STOP_WAIT
        try:
            self.send("K", b"", rid)
            while self.open_id == rid:
                self._frame_of(rid, deadline)
        except (TimeoutError, ExecutorGone, KeyboardInterrupt):
            self.close()
            return False
        return True

    def execute(
        self, text: str, stdin: bytes | None, collector: OutputCollector, timeout: float | None
    ) -> tuple[int | None, bool]:
        deadline = None if timeout is None else time.monotonic() + timeout
        rid = self._begin("S")
        try:
            self.send_json("X", {"cmd": text, "stdin": stdin is not None}, rid)
            if stdin is not None:
                for start in range(0, len(stdin), 1 << 16):
                    self.send("I", stdin[start : start + (1 << 16)], rid)
                self.send("J", b"", rid)
            stopping = False
            while True:
                try:
                    kind, payload = self._frame_of(rid, deadline)
                except TimeoutError:
                    self._stop(rid)
                    return None, True
                if kind == "O":
                    collector.feed("stdout", payload)
                elif kind == "E":
                    collector.feed("stderr", payload)
                elif kind == "S":
                    status = answers.exit_status(_decode(payload), EXECUTOR)
                    return (None if stopping else status), False
                if collector.overflowed and not stopping:
                    stopping = True
                    self.send("K", b"", rid)
        except (KeyboardInterrupt, StdoutClosed):
            self._stop(rid)
            raise

    def _stop(self, rid: int) -> None:
        """Kill the request's group and wait for the executor to confirm; an unresponsive
        channel is closed (settled()), which makes the executor exit and stop the group."""
        if self.open_id == rid:
            self.settled()

    def call(
        self,
        entry: str,
        args: dict[str, Any],
        timeout: float | None,
        cwd: str | None = None,
        memory: int | None = None,
    ) -> dict:
        """Run an agent check in the executor's child. The executor stops the check's process
        group at the deadline (and answers); the client only waits a moment longer, then
        closes the channel, which stops the executor and the check just as well."""
        request = {"entry": entry, "args": args, "cwd": cwd, "timeout": timeout}
        if memory:
            request["memory"] = memory
        rid = self._begin("R")
        deadline = None if timeout is None else time.monotonic() + timeout + STOP_WAIT
        try:
            self.send_json("C", request, rid)
            while True:
                kind, payload = self._frame_of(rid, deadline)
                if kind == "R":
                    answer = answers.call_answer(_decode(payload), EXECUTOR)
                    if not answer["ok"] and "deadline" in str(answer.get("error")):
                        raise TimeoutError
                    return answer
        except TimeoutError:
            if deadline is not None and time.monotonic() >= deadline:
                self.close()
            raise
        except KeyboardInterrupt:
            self._stop(rid)
            raise

    def close(self) -> None:
        try:
            self.channel.close()
        except (OSError, EOFError, paramiko.SSHException):
            pass


def _decode(payload: bytes) -> dict:
    """A frame's JSON; a corrupted one ends the executor (the caller reports one line)."""
    try:
        value = json.loads(payload)
    except (ValueError, RecursionError):
        raise ExecutorGone("the remote executor sent a malformed frame") from None
    if not isinstance(value, dict):
        raise ExecutorGone("the remote executor sent a malformed frame")
    return value


def connection_lost(name: str, detail: str) -> ConnectionFailed:
    return ConnectionFailed(
        f"{name}: connection lost while a remote command was running"
        + (f" ({detail})" if detail else "")
    )
