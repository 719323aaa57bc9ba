"""The daemon of a persistent session: started by the first command to a host (remotedbg.persist
.client), it listens on a Unix socket (0600, in the user's 0700 runtime directory), keeps the
sessions its commands open (connection and remote executor), and runs each client's command
line with the client's environment, working directory and terminal, its output framed back. It
answers only its own user (SO_PEERCRED), and exits, closing its sessions (so the remote
executors exit too), after `idle` seconds without a command, on `remotedbg sessions --stop`,
or when its socket is removed or replaced.

One command runs at a time, in the main thread (commands swap the process's stdout, cwd and
environment). Each client connection has a thread of its own: it queues the command as a
`Ticket`, and while the command waits it watches for Ctrl-C; a command not started within
QUEUE_WAIT_S is refused (B) and its client runs it itself. Once started (A sent), the thread
relays the client's Ctrl-C, or its going away, as an interrupt of that command only: the
main thread's SIGINT handler raises KeyboardInterrupt only while the command it was meant for
is the one running, so an interrupt arriving late stops nothing. The connection is closed by
its thread only after the command ended and its last frame was sent, so a later client never
gets a socket number an earlier command still writes to.

    python -m remotedbg.persist.daemon SOCKET IDLE_SECONDS [FAMILY HOST]
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import queue
import select
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from remotedbg import local_gc
from remotedbg.local_signals import in_lock_code
from remotedbg.local_stdin import STDIN_FD
from remotedbg.persist import protocol
from remotedbg.session import ConnectOptions, Session, open_session
from remotedbg.session.kinds import import_ssh_kinds

MAX_KEPT = 4
CHECK_EVERY_S = 2.0
_NO_INPUT = -1  # a descriptor that is none: has_piped_input() is False
INTERRUPT_RETRY_S = 0.01  # an interrupt that landed inside lock machinery comes again after
QUEUE_WAIT_S = 3.0  # a command waits this long behind others before its client runs it itself
MAX_QUEUE = 64


class Ticket:
    """One command's passage through the daemon: queued, then started or refused (exactly
    one of the two, whichever thread asks first), then finished; interrupted at most once,
    and only while started. `released` is set once the main thread is done with the
    client's socket (its thread closes it then)."""

    def __init__(self, rid: int) -> None:
        self.rid = rid
        self.state = "queued"
        self.interrupted = False
        self._lock = threading.Lock()
        self.decided = threading.Event()
        self.released = threading.Event()

    def _move(self, before: str, after: str) -> bool:
        with self._lock:
            if self.state != before:
                return False
            self.state = after
        return True

    def start(self) -> bool:
        moved = self._move("queued", "started")
        self.decided.set()
        return moved

    def refuse(self) -> bool:
        moved = self._move("queued", "refused")
        self.decided.set()
        return moved

    def finish(self) -> None:
        self._move("started", "finished")

    def interrupt(self) -> bool:
        """True the first time, while it runs: the caller then interrupts it."""
        with self._lock:
            if self.state != "started" or self.interrupted:
                return False
            self.interrupted = True
        return True


class _FrameWriter(io.RawIOBase):
    """A file whose bytes go to the client as frames of one kind and request; closed at the
    command's end, after which nothing more reaches the client's socket."""

    def __init__(
        self, conn: socket.socket, kind: str, rid: int, tty: bool, lock: threading.Lock
    ) -> None:
        self.conn, self.kind, self.rid, self.tty, self.lock = conn, kind, rid, tty, lock
        self.gone = False

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.tty

    def write(self, data: Any) -> int:
        data = bytes(data)
        with self.lock:
            if data and not self.gone:
                try:
                    protocol.send(self.conn, self.kind, data, self.rid)
                except OSError:
                    self.gone = True  # the client went away: its thread interrupts the command
        return len(data)

    def hang_up(self) -> None:
        with self.lock:
            self.gone = True


def _stream(raw: _FrameWriter) -> io.TextIOWrapper:
    return io.TextIOWrapper(
        io.BufferedWriter(raw), encoding="utf-8", errors="surrogateescape", line_buffering=True
    )


class Ahead:
    """The connection the daemon's first command will most likely ask for (its options as
    the client read them), opened with its executor in a thread of its own while the daemon
    loads that command's code: the two overlap instead of adding up."""

    def __init__(self, options: ConnectOptions) -> None:
        self.options = options
        self.session: Session | None = None
        self.error: Exception | None = None
        import_ssh_kinds()  # here, not in the thread: the command's code imports paramiko too
        self.thread = threading.Thread(target=self._open, daemon=True)
        self.thread.start()

    def _open(self) -> None:
        try:
            session = open_session(self.options)
        except Exception as error:  # noqa: BLE001 - the command that asks for it meets it
            self.error = error
            return
        try:
            session.start_resident()
        except Exception:  # noqa: BLE001 - a fault here: the command opens its own session
            session.close()
            return
        self.session = session


class Keeper:
    """The sessions this daemon keeps, by connection options (the per-command --timeout
    aside); a command with other options gets a session of its own (None)."""

    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self.host = ""
        self.options: ConnectOptions | None = None  # the first kept session's
        self.ahead: Ahead | None = None
        # none (no options to open ahead), opening, used, closed (other options were asked
        # for), failed (its error was the command's)
        self.ahead_outcome = "none"

    def open_ahead(self, options: ConnectOptions) -> None:
        self.ahead = Ahead(options)
        self.ahead_outcome = "opening"

    def settle(self, cancelled: Callable[[], bool]) -> None:
        """Wait for the connection opened ahead to be done with the process's environment and
        directory, which a command then changes to its client's; `cancelled` ends the wait."""
        while self.ahead is not None and self.ahead.thread.is_alive() and not cancelled():
            self.ahead.thread.join(0.05)

    def _take_ahead(self, key: str) -> Session | None:
        """The session opened ahead when it has these options (its error raised, as opening it
        now would); one with other options is closed: no command asked for it."""
        ahead, self.ahead = self.ahead, None
        if ahead is None:
            return None
        ahead.thread.join()
        if self._key(ahead.options) != key:
            self.ahead_outcome = "closed"
            if ahead.session is not None:
                ahead.session.close()
            return None
        if ahead.error is not None:
            self.ahead_outcome = "failed"
            raise ahead.error
        self.ahead_outcome = "used"
        return ahead.session

    @staticmethod
    def _key(options: ConnectOptions) -> str:
        return json.dumps(dataclasses.asdict(dataclasses.replace(options, timeout=None)))

    def __call__(self, options: ConnectOptions) -> Session | None:
        key = self._key(options)
        session = self.sessions.get(key)
        if session is None:
            if len(self.sessions) >= MAX_KEPT or "," in options.host:
                return None
            session = self._take_ahead(key) or open_session(options)
            self.sessions[key] = session
            self.host = self.host or options.host
            self.options = self.options or options
        session.default_timeout = options.timeout
        return session

    def differing(self) -> dict[str, Any]:
        """The kept connection's options that differ from the defaults, by their flags."""
        if self.options is None:
            return {}
        default = ConnectOptions(host=self.options.host)
        return {
            "--" + name.replace("_", "-"): value
            for name, value in dataclasses.asdict(self.options).items()
            if name not in ("host", "timeout", "max_output") and value != getattr(default, name)
        }

    def close(self) -> None:
        ahead, self.ahead = self.ahead, None
        unclaimed = [ahead.session] if ahead is not None and ahead.session is not None else []
        # one still opening is ended by the daemon's exit
        for session in [*self.sessions.values(), *unclaimed]:
            try:
                session.close()
            except Exception:  # noqa: BLE001 - closing on the way out; nothing to report to
                pass
        self.sessions.clear()


class Daemon:
    def __init__(
        self,
        path: str,
        idle: float,
        family: str = "",
        host: str = "",
        ahead: ConnectOptions | None = None,
    ) -> None:
        self.path = path
        self.ahead = ahead
        self.idle = idle
        self.family = family
        self.typed_host = host
        self.keeper = Keeper()
        self.requests: queue.Queue = queue.Queue()
        self.quit = threading.Event()
        self.started = time.time()
        self.last_used = time.time()
        self.commands = 0
        self.running: int | None = None  # the request id of the command running now
        self.cancelled: set[int] = set()  # ids whose client asked for an interrupt
        self.main_thread = threading.get_ident()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket file is created 0600
        try:
            self.listener.bind(path)
        finally:
            os.umask(old)
        self.inode = os.stat(path).st_ino
        self.listener.listen(64)

    # -- accepting (a thread, and one per client) ----------------------------------------------
    def accept_forever(self) -> None:
        while not self.quit.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    def _client(self, conn: socket.socket) -> None:
        try:
            self._admit(conn)
        except (OSError, ValueError):
            pass
        finally:
            conn.close()

    def _admit(self, conn: socket.socket) -> None:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", creds)
        if uid != os.getuid():
            return  # another user's process: never served, never answered
        conn.settimeout(10)
        frames = protocol.Frames(conn, take_fds=True)  # the client's stdin may come with it
        try:
            frame = frames.next()
            frames.take_fds = False
            conn.settimeout(None)
            if frame is not None:
                self._answer(conn, frames, frame)
        finally:
            for fd in frames.fds:  # the command has ended (or never started): ours to close
                os.close(fd)

    def _answer(
        self, conn: socket.socket, frames: protocol.Frames, frame: tuple[str, int, bytes]
    ) -> None:
        kind, rid, payload = frame
        if kind == "S":
            protocol.send_json(conn, "I", self.status())
        elif kind == "Q":
            protocol.send_json(conn, "I", self.status())
            self.quit.set()
            self.requests.put(None)
        elif kind == "R" and self.requests.qsize() < MAX_QUEUE:
            request = json.loads(payload)
            # its input: the descriptor the client handed over, read here as it arrives
            request["stdin_fd"] = frames.fds[0] if request.get("stdin") and frames.fds else None
            self._command(conn, frames, Ticket(rid), request)
        else:
            protocol.send_json(conn, "B", {"reason": "busy"}, rid)

    def _command(
        self, conn: socket.socket, frames: protocol.Frames, ticket: Ticket, request: dict
    ) -> None:
        """The client's side of its command: queued until started (or refused), then its
        Ctrl-C relayed until the command has ended."""
        self.requests.put((ticket, conn, request))
        deadline = time.monotonic() + QUEUE_WAIT_S
        while not ticket.decided.wait(0.05):
            if time.monotonic() >= deadline or select.select([conn], [], [], 0)[0]:
                break  # waited long enough, or the client spoke (Ctrl-C) or left
        if ticket.refuse():
            protocol.send_json(conn, "B", {"reason": "busy"}, ticket.rid)
            return
        try:
            while True:
                frame = frames.next()
                if frame is None:
                    break
                if frame[0] == "K" and frame[1] == ticket.rid:
                    self._interrupt(ticket)
        except (OSError, ValueError):
            pass
        self._interrupt(ticket)  # the client left mid-command (once finished, a no-op)
        ticket.released.wait()

    def _interrupt(self, ticket: Ticket) -> None:
        if ticket.interrupt():
            self.cancelled.add(ticket.rid)
            signal.pthread_kill(self.main_thread, signal.SIGINT)

    def _on_sigint(self, signum: int, frame: object) -> None:
        """In the main thread: stop the running command if its own client asked; inside lock
        machinery the interrupt is sent again a moment later (raised there, it would leave a
        lock held that the connection's transport thread then waits on for good)."""
        running = self.running
        if running is not None and running in self.cancelled:
            if in_lock_code(frame):
                timer = threading.Timer(INTERRUPT_RETRY_S, signal.pthread_kill,
                                        (self.main_thread, signal.SIGINT))  # fmt: skip
                timer.daemon = True
                timer.start()
                return
            self.cancelled.discard(running)
            raise KeyboardInterrupt

    def status(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "host": self.typed_host or self.keeper.host,
                "options": self.keeper.differing(), "family": self.family,
                "started": self.started,
                "idle_s": round(time.time() - self.last_used, 1), "commands": self.commands,
                "busy": self.running is not None, "queued": self.requests.qsize(),
                "opened_ahead": self.keeper.ahead_outcome,
                "idle_limit_s": self.idle}  # fmt: skip

    # -- serving (the main thread) -------------------------------------------------------------
    def serve(self) -> None:
        signal.signal(signal.SIGINT, self._on_sigint)
        threading.Thread(target=self.accept_forever, daemon=True).start()
        threading.Thread(target=self.stop_stale, daemon=True).start()
        if self.ahead is not None:
            self.keeper.open_ahead(self.ahead)
        try:
            while not self.quit.is_set():
                try:
                    item = self.requests.get(timeout=CHECK_EVERY_S)
                except queue.Empty:
                    if time.time() - self.last_used > self.idle or not self._socket_is_ours():
                        return
                    continue
                if item is None:
                    return
                ticket, conn, request = item
                if not ticket.start():
                    continue  # refused while it waited: its client runs it
                try:
                    self._serve_one(ticket, conn, request)
                except KeyboardInterrupt:
                    pass  # an interrupt for this command, landing after its end
                finally:
                    self.running = None
                    ticket.finish()
                    ticket.released.set()
                    self.cancelled.discard(ticket.rid)
                self.last_used = time.time()
                if not self.keeper.sessions:
                    return  # its first connection failed, or it needed none: nothing to keep
        finally:
            self.shutdown()

    def stop_stale(self) -> None:
        """Stop this family's other daemons: they were started for what the user typed
        before the code or the ssh_config changed, so no command can reach them any more."""
        from remotedbg.persist import client

        directory = os.path.dirname(self.path)
        for name in os.listdir(directory):
            other = os.path.join(directory, name)
            if not name.endswith(protocol.SOCKET_SUFFIX) or other == self.path or not self.family:
                continue
            status = client._ask(other, "S")
            if status is not None and status.get("family") == self.family:
                client._ask(other, "Q")

    def _socket_is_ours(self) -> bool:
        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def _serve_one(self, ticket: Ticket, conn: socket.socket, request: dict) -> None:
        from remotedbg.front.cli import run_words
        from remotedbg.front.cli.context import SESSION_KEEPER

        rid = ticket.rid
        lock = threading.Lock()
        try:
            protocol.send(conn, "A", b"", rid)
        except OSError:
            return  # the client left before its command started: nothing ran
        self.keeper.settle(lambda: rid in self.cancelled)
        out = _FrameWriter(conn, "O", rid, request.get("stdout_tty", False), lock)
        err = _FrameWriter(conn, "E", rid, request.get("stderr_tty", False), lock)
        saved = (sys.stdout, sys.stderr, sys.stdin, dict(os.environ), os.getcwd())
        code = 1
        try:
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            if request.get("columns") and "COLUMNS" not in os.environ:
                os.environ["COLUMNS"] = str(request["columns"])
            sys.stdout, sys.stderr = _stream(out), _stream(err)
            sys.stdin = io.TextIOWrapper(io.BytesIO(b""))
            # no input unless the client handed its stdin over (the daemon's own is /dev/null)
            given = request.get("stdin_fd")
            stdin_token = STDIN_FD.set(given if given is not None else _NO_INPUT)
            token = SESSION_KEEPER.set(self.keeper)
            try:
                self.running = rid
                if rid in self.cancelled:  # Ctrl-C between "accepted" and now
                    raise KeyboardInterrupt
                code = run_words(list(request["argv"]))
            except KeyboardInterrupt:
                code = 130
            except Exception:  # noqa: BLE001 - a fault in one command must not end the daemon
                traceback.print_exc()  # on the client's stderr, as the command run alone shows it
                code = 1
            finally:
                self.running = None
                ticket.finish()
                SESSION_KEEPER.reset(token)
                STDIN_FD.reset(stdin_token)
            self.commands += 1
        except OSError as error:  # the client's directory vanished, or the client did
            code = 1
            err.write(f"remotedbg: {error}\n".encode())
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            sys.stdout, sys.stderr, sys.stdin = saved[0], saved[1], saved[2]
            os.environ.clear()
            os.environ.update(saved[3])
            os.chdir(saved[4])
            with lock:
                try:
                    protocol.send_json(conn, "X", {"exit": code}, rid)
                except OSError:
                    pass
            out.hang_up()
            err.hang_up()
            try:
                conn.shutdown(socket.SHUT_RDWR)  # wakes the client's thread, which closes it
            except OSError:
                pass

    def shutdown(self) -> None:
        self.quit.set()
        if self._socket_is_ours():
            try:
                os.unlink(self.path)
            except OSError:
                pass
        self.listener.close()
        self.keeper.close()


def main(argv: list[str]) -> None:
    path, idle = argv[0], float(argv[1])
    family, host = (argv[2], argv[3]) if len(argv) >= 4 else ("", "")
    guess = json.loads(argv[4]) if len(argv) >= 5 else None
    os.chdir("/")  # each command runs in its client's directory; none is held open here
    local_gc.tune()
    try:
        daemon = Daemon(path, idle, family, host, ConnectOptions(**guess) if guess else None)
    except OSError:
        return  # another daemon took the socket first: it serves
    daemon.serve()


if __name__ == "__main__":
    main(sys.argv[1:])
