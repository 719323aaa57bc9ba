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
from collections import deque
from collections.abc import Callable
from typing import Any

import paramiko

from remotedbg.errors import ConnectionFailed, StdoutClosed
from remotedbg.local_stdin import Input, InputStream
from remotedbg.session import answers
from remotedbg.session.base import OutputCollector
from remotedbg.session.chunk_pipe import ChunkPipe
from remotedbg.session.send_env import env_request_bytes

HEADER = struct.Struct("!BII")  # kind, request id, length
STOP_WAIT = 2.0  # seconds to wait for the executor to report a stopped command
MAX_FRAME = 64 << 20  # as agent/executor.py: a longer announced frame is a corrupt stream
SEND_STALL = 10.0  # seconds a send may wait for the remote's window before the channel is given up
HEARTBEAT = 1.0  # seconds between frames while a request runs (the executor's CLIENT_SILENCE)
EXECUTOR = "the remote executor"  # who a malformed answer came from


INPUT_POLL = 0.005  # seconds between looks at a full send window while input waits
INPUT_FRAME = 1 << 16  # input bytes a frame


class _InputFeed:
    """A command's input as I frames then J, sent as the channel's window takes them (never a
    blocking send: the command's output must be read meanwhile, or a `cat` of more than the
    windows hold would stop both ends). At most INPUT_AHEAD bytes are framed ahead."""

    INPUT_AHEAD = 1 << 20

    def __init__(self, given: Input, rid: int) -> None:
        self.stream = given if isinstance(given, InputStream) else None
        self.data = memoryview(given if isinstance(given, bytes) else b"")
        self.rid = rid
        self.frames: deque[bytes] = deque()  # whole frames not yet (fully) sent
        self.framed = 0  # their bytes
        self.head_sent = 0  # bytes of frames[0] already sent
        self.ended = False  # J framed
        # descriptors to wait on for more input (none when all of it is here)
        self.fds: list[int] = [self.stream.fileno()] if self.stream else []

    @property
    def pending(self) -> bool:
        return bool(self.frames)

    @property
    def mid_frame(self) -> bool:
        """A frame is partly sent: nothing else may be sent before its end."""
        return self.head_sent > 0

    @property
    def wants_input(self) -> bool:
        return not self.ended

    def _frame(self, kind: str, payload: bytes) -> None:
        self.frames.append(HEADER.pack(ord(kind), self.rid, len(payload)) + payload)
        self.framed += len(self.frames[-1])

    def pump(self, channel: paramiko.Channel) -> bool:
        """Frames more input and sends what the window takes now; True when bytes went."""
        while not self.ended and self.framed < self.INPUT_AHEAD:
            if self.stream is not None:
                chunk = self.stream.read_ready(INPUT_FRAME)
                if chunk is None:
                    break  # nothing more yet: the output is read meanwhile
            else:
                chunk, self.data = self.data[:INPUT_FRAME], self.data[INPUT_FRAME:]
            if chunk:
                self._frame("I", bytes(chunk))
            else:
                self._frame("J", b"")
                self.ended = True
        sent_any = False
        while self.frames and channel.send_ready():
            head = self.frames[0]
            sent = channel.send(head[self.head_sent :])
            if sent <= 0:
                break
            sent_any = True
            self.head_sent += sent
            if self.head_sent == len(head):
                self.frames.popleft()
                self.framed -= len(head)
                self.head_sent = 0
        return sent_any

    def drop(self) -> bytes:
        """Send nothing more: the rest of the frame under way (to be sent whole), or b""."""
        rest = self.frames[0][self.head_sent :] if self.mid_frame else b""
        self.ended, self.data = True, memoryview(b"")
        self.frames.clear()
        self.framed = self.head_sent = 0
        return rest

    def stop_with(self, kind: str) -> None:
        """No more input: the frame under way is finished, then `kind` (a kill) is sent."""
        head = self.frames[0] if self.mid_frame else None
        self.ended, self.data = True, memoryview(b"")
        self.frames.clear()
        self.framed = 0
        if head is not None:
            self.frames.append(head)
            self.framed = len(head)
        else:
            self.head_sent = 0
        self._frame(kind, b"")


class ExecutorGone(Exception):
    """The executor channel closed; the caller reconnects or falls back."""


class NotStarted(Exception):
    """The executor's command ended before it answered: why (its last stderr line) and its
    exit status (None when unknown)."""

    def __init__(self, why: str, status: int | None = None) -> None:
        super().__init__(why)
        self.status = status


class ExecutorChannel:
    def __init__(self, channel: paramiko.Channel) -> None:
        self.channel = channel
        self.buffer = bytearray()
        self.stderr_tail = b""
        self.last_sent = time.monotonic()
        self.pid: int | None = None  # the executor's pid on the remote
        self.login_shell = ""  # the user's login shell there (which parses exec requests)
        self.env_arrived: list[str] = []  # names of the start channel's env requests it got
        self.last_id = 0
        self.open_id: int | None = None  # the request whose end frame is not read yet
        self.open_end = ""  # that end frame's kind: S for a command, R for a call
        self.open_raw = False  # the open request is a file read: raw bytes may be under way
        # it did not answer a kill within STOP_WAIT: the box or the connection is wedged (a
        # stopped sshd), and the session reconnects rather than trust that connection again
        self.unresponsive = False
        channel.settimeout(SEND_STALL)  # recv only ever follows recv_ready(): sends only

    @classmethod
    def start_or_why(
        cls,
        transport: paramiko.Transport,
        boot: str,
        bundle_for: Callable[..., bytes],
        timeout: float,
        env: dict[str, str] | None = None,
    ) -> tuple[ExecutorChannel | None, str]:
        """The executor, or None and the last line its command wrote to stderr (or that it did
        not answer within `timeout`)."""
        try:
            return cls.start(transport, boot, bundle_for, timeout, env=env), ""
        except NotStarted as why:
            return None, str(why)
        except TimeoutError:
            return None, f"no answer within {timeout:g}s"

    @classmethod
    def start(
        cls,
        transport: paramiko.Transport,
        boot: str,
        bundle_for: Callable[..., bytes],
        timeout: float,
        env: dict[str, str] | None = None,
        **sizes: int,
    ) -> ExecutorChannel:
        """The executor; NotStarted (the remote cannot run it: no Python there) with the last
        line its command wrote to stderr, TimeoutError when it has not answered within
        `timeout` (the channel closed). `sizes`: the channel's window_size and max_packet_size
        (paramiko's; file reads want a bulk channel's). The executor writes a fresh random
        marker before its first frame: whatever the login printed before it (banners, MOTDs)
        is skipped, and the time a slow login takes is paid here once. `env`: the SendEnv and
        SetEnv values of the moment, sent as env requests on a paramiko channel (a system ssh
        process sends them itself, from the same config and environment); the executor says
        which arrived (`env_arrived`)."""
        marker = "\x1eRDBG" + secrets.token_hex(12) + "\x1e"
        start = time.monotonic()
        channel = transport.open_session(timeout=timeout, **sizes)
        if isinstance(channel, paramiko.Channel):
            channel.in_buffer = ChunkPipe()  # file reads are bulk: packets kept as they came
        timeout = max(0.1, timeout - (time.monotonic() - start))
        executor = cls(channel)
        try:
            if env and isinstance(channel, paramiko.Channel):
                # no reply asked, as ssh: sshd keeps what its AcceptEnv allows
                channel.update_environment(env_request_bytes(env))
            channel.exec_command(boot)
            channel.sendall(bundle_for(marker, env) if env else bundle_for(marker))
            executor.skip_to(marker.encode("ascii"), time.monotonic() + timeout)
            kind, _, payload = executor.next_frame(time.monotonic() + timeout)
        except TimeoutError:
            signal_session(channel, "KILL")  # a login still in its rc files ends here too
            channel.close()
            raise
        except (ExecutorGone, OSError, EOFError, paramiko.SSHException):
            status = channel.recv_exit_status() if channel.exit_status_ready() else None
            channel.close()
            raise NotStarted(executor.why(), status) from None
        try:
            hello = json.loads(payload) if kind == "P" else {}
        except (ValueError, RecursionError):
            hello = {}
        if not isinstance(hello, dict) or not hello.get("ready"):
            channel.close()
            raise NotStarted(executor.why())
        try:
            executor.pid = answers.checked(hello, answers.HELLO, EXECUTOR)["pid"]
        except answers.AgentAnswerError:
            channel.close()
            raise
        executor.login_shell = str(hello.get("shell") or "")
        arrived = hello.get("env")
        if isinstance(arrived, list):
            executor.env_arrived = [str(name) for name in arrived]
        return executor

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
        self.last_sent = time.monotonic()

    def send_json(self, kind: str, value: Any, rid: int = 0) -> None:
        self.send(kind, json.dumps(value).encode("utf-8"), rid)

    def _parse(self) -> tuple[str, int, bytes] | None:
        if len(self.buffer) < HEADER.size:
            return None
        kind, rid, length = HEADER.unpack_from(self.buffer)
        if length > MAX_FRAME:  # before a byte of it is kept
            raise ExecutorGone(f"the remote executor announced a frame of {length} bytes")
        if len(self.buffer) < HEADER.size + length:
            return None
        payload = bytes(self.buffer[HEADER.size : HEADER.size + length])
        del self.buffer[: HEADER.size + length]
        return chr(kind), rid, payload

    def skip_to(self, marker: bytes, deadline: float) -> None:
        """Drop everything before `marker` (and the marker)."""
        while marker not in self.buffer:
            self._fill(deadline)
            if len(self.buffer) > (1 << 20) + len(marker):
                del self.buffer[: -len(marker)]  # a login that prints megabytes
        del self.buffer[: self.buffer.index(marker) + len(marker)]

    def _fill(self, deadline: float | None, feed: _InputFeed | None = None) -> None:
        """More bytes into the buffer. The deadline is checked first: a peer that floods
        without end still times out. A command's input (`feed`) is sent as the channel's
        window takes it, between reads: its output is read while its input goes out."""
        now = time.monotonic()
        remaining = None if deadline is None else deadline - now
        if remaining is not None and remaining <= 0:
            raise TimeoutError
        if feed is not None and feed.pump(self.channel):
            self.last_sent = now
        mid_frame = feed is not None and feed.mid_frame
        if self.open_id is not None and now - self.last_sent >= HEARTBEAT and not mid_frame:
            self.send("H", b"", self.open_id)
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
        wait = HEARTBEAT if remaining is None else min(remaining, HEARTBEAT)
        readable = [self.channel.fileno()]
        if feed is not None and feed.pending:
            wait = min(wait, INPUT_POLL)  # the window opens without a wake-up: look again soon
        elif feed is not None and feed.wants_input:
            readable += feed.fds
        select.select(readable, [], [], wait)

    def next_frame(
        self, deadline: float | None, feed: _InputFeed | None = None
    ) -> tuple[str, int, bytes]:
        """The next frame; TimeoutError at the deadline, ExecutorGone when the channel ends."""
        while True:
            frame = self._parse()
            if frame:
                return frame
            self._fill(deadline, feed)

    def _frame_of(
        self, rid: int, deadline: float | None, feed: _InputFeed | None = None
    ) -> tuple[str, bytes]:
        """The next frame of request `rid`; those of ended requests are dropped, and the end
        frame closes the request."""
        while True:
            kind, of, payload = self.next_frame(deadline, feed)
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
        self.open_id, self.open_end, self.open_raw = self.last_id, end, False
        return self.last_id

    def settled(self) -> bool:
        """No request open: an open one is stopped and drained first; False (and the channel
        closed) when it does not end within STOP_WAIT."""
        if self.open_id is None:
            return not self.channel.closed
        if self.open_raw:  # its raw bytes cannot be told from frames: nothing to drain
            self.close()
            return False
        rid, deadline = self.open_id, time.monotonic() + STOP_WAIT
        try:
            self.send("K", b"", rid)
            while self.open_id == rid:
                self._frame_of(rid, deadline)
        except (TimeoutError, ExecutorGone, KeyboardInterrupt) as why:
            self.unresponsive = isinstance(why, TimeoutError)
            if self.unresponsive:
                signal_session(self.channel, "TERM")  # the executor stops its groups and exits
            self.close()
            return False
        return True

    def execute(
        self,
        text: str,
        stdin: Input | None,
        collector: OutputCollector,
        timeout: float | None,
        env: dict[str, str] | None = None,
    ) -> tuple[int | None, bool]:
        """`env`: the command's SendEnv/SetEnv values (of the names sshd accepts); the
        executor's own ones from its start are not the command's."""
        deadline = None if timeout is None else time.monotonic() + timeout
        rid = self._begin("S")
        feed = _InputFeed(stdin, rid) if stdin is not None else None
        request: dict[str, Any] = {"cmd": text, "stdin": stdin is not None}
        if env is not None:
            request["env"] = env
        try:
            self.send_json("X", request, rid)
            stopping = False
            while True:
                try:
                    kind, payload = self._frame_of(rid, deadline, feed)
                except TimeoutError:
                    self._stop(rid, feed)
                    return None, True
                if kind == "O":
                    collector.feed("stdout", payload)
                elif kind == "E":
                    collector.feed("stderr", payload)
                elif kind == "S":
                    status = answers.exit_status(_decode(payload), EXECUTOR)
                    self._end_input(feed)
                    return (None if stopping else status), False
                if collector.overflowed and not stopping:
                    stopping = True
                    if feed is not None:  # after the input frame under way, never inside it
                        feed.stop_with("K")
                    else:
                        self.send("K", b"", rid)
        except (KeyboardInterrupt, StdoutClosed):
            self._stop(rid, feed)
            raise

    def _end_input(self, feed: _InputFeed | None) -> None:
        """The command ended before its input did: the frame under way is sent whole (the next
        request's frames must not land inside it; the executor reads again once its command
        ends), nothing after it."""
        rest = feed.drop() if feed is not None else b""
        if not rest:
            return
        try:
            self.channel.sendall(rest)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise ExecutorGone(str(exc)) from None
        self.last_sent = time.monotonic()

    def _stop(self, rid: int, feed: _InputFeed | None = None) -> None:
        """Kill the request's group and wait for the executor to confirm; an unresponsive
        channel is closed (settled()), which makes the executor exit and stop the group. With
        input under way the kill follows its frame, sent as the window takes it, while the
        output is read (a blocking send there would wait on an executor waiting on us)."""
        if self.open_id != rid:
            return
        if feed is None:
            self.settled()
            return
        feed.stop_with("K")
        deadline = time.monotonic() + STOP_WAIT
        try:
            while self.open_id == rid:
                self._frame_of(rid, deadline, feed)
            self._end_input(feed)  # the kill itself may be half sent
        except (TimeoutError, ExecutorGone, KeyboardInterrupt) as why:
            self.unresponsive = isinstance(why, TimeoutError)
            if self.unresponsive:
                signal_session(self.channel, "TERM")  # the executor stops its groups and exits
            self.close()

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
                self.unresponsive = True  # not even the executor's own deadline answer came
                self.close()
            raise
        except KeyboardInterrupt:
            self._stop(rid)
            raise

    def read_file(
        self,
        path: str,
        offset: int,
        length: int,
        sink: Callable[[bytes], None],
        stall: float | None,
    ) -> tuple[int, str] | None:
        """`length` bytes at `offset` of the box's regular file `path` into `sink`, sent raw by
        the executor's child (agent/executor.py, F): no login shell, no frames, no Python copy
        on the box. Returns the bytes received and why the read failed ("" when it did not);
        None when `path` is no regular file (the caller's read command decides what it gives).
        TimeoutError when no byte came for `stall` seconds. A read left in the middle (that, a
        Ctrl-C, a sink that raised) closes the channel, and with it the executor's child."""
        rid = self._begin("R")
        self.open_raw = True
        try:
            self.send_json("F", {"path": path, "offset": offset, "length": length}, rid)
            deadline = None if stall is None else time.monotonic() + stall
            kind, payload = self._frame_of(rid, deadline)
            if kind == "R":
                self.open_raw = False
                answer = answers.call_answer(_decode(payload), EXECUTOR)
                if answer["ok"]:  # an end before any header: not what an executor sends
                    raise answers.AgentAnswerError(
                        f"{EXECUTOR}: malformed answer from the box (a file read without bytes)"
                    )
                if answer.get("fallback"):
                    return None
                return 0, str(answer["error"])
            if kind != "G":
                raise ExecutorGone(f"the remote executor answered a file read with {kind!r}")
            announced = answers.checked(_decode(payload), answers.FILE_HEADER, EXECUTOR)["length"]
            if not 0 <= announced <= length:
                raise answers.AgentAnswerError(
                    f"{EXECUTOR}: malformed answer from the box ({announced} bytes of {length})"
                )
            received = self._raw(announced, sink, stall, rid)
            self.open_raw = False
            kind, payload = self._frame_of(rid, None if stall is None else time.monotonic() + stall)
        except BaseException:
            if self.open_raw:
                self.open_id, self.open_raw = None, False
                self.close()
            raise
        answer = answers.call_answer(_decode(payload) if kind == "R" else {}, EXECUTOR)
        if not answer["ok"]:
            return received, str(answer["error"])
        short = answers.checked(answer["value"], answers.FILE_END, EXECUTOR)["short"]
        if not 0 <= short <= received:
            raise answers.AgentAnswerError(f"{EXECUTOR}: malformed answer from the box ({short=})")
        if short:
            return received - short, f"the file lost {short} of those bytes while it was read"
        return received, ""

    def _raw(
        self, announced: int, sink: Callable[[bytes], None], stall: float | None, rid: int
    ) -> int:
        received = min(len(self.buffer), announced)
        if received:  # what came with the header
            data = bytes(self.buffer[:received])
            del self.buffer[:received]
            sink(data)
        self.channel.settimeout(stall)
        try:
            while received < announced:
                if time.monotonic() - self.last_sent >= HEARTBEAT:
                    self.send("H", b"", rid)  # the executor's CLIENT_SILENCE: we are here
                data = self.channel.recv(min(announced - received, 1 << 20))
                if not data:
                    raise ExecutorGone(self.why() or "the channel closed in the middle of a file")
                received += len(data)
                sink(data)
        finally:
            self.channel.settimeout(SEND_STALL)
        return received

    def close(self) -> None:
        try:
            self.channel.close()
        except (OSError, EOFError, paramiko.SSHException):
            pass


def signal_session(channel: paramiko.Channel, name: str) -> None:
    """RFC 4254's "signal" request: OpenSSH's sshd (7.9+, session.c session_signal_req) sends
    it to the session's whole process group, the login shell and whatever it started, still
    in its start-up files or wedged. A server that does not know it ignores it."""
    message = paramiko.Message()
    message.add_byte(paramiko.common.cMSG_CHANNEL_REQUEST)
    message.add_int(channel.remote_chanid)
    message.add_string("signal")
    message.add_boolean(False)
    message.add_string(name)
    try:
        channel.transport._send_user_message(message)  # noqa: SLF001 - paramiko has no API
    except (OSError, EOFError, paramiko.SSHException, AttributeError):
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
