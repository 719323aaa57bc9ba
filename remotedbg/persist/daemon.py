"""The daemon of a persistent session: started by the first command to a host (remotedbg.persist
.client), it listens on a Unix socket (0600, in the user's 0700 runtime directory), keeps the
sessions its commands open (connection and remote executor), and runs each client's command
line with the client's environment, working directory and terminal, its output framed back. It
serves one command at a time (a client arriving meanwhile runs its command itself), answers
only its own user (SO_PEERCRED), and exits, closing its sessions (so the remote executors exit
too), after `idle` seconds without a command, on `remotedbg sessions --stop`, or when its socket
is removed or replaced.

    python -m remotedbg.persist.daemon SOCKET IDLE_SECONDS
"""

from __future__ import annotations

import _thread
import dataclasses
import io
import json
import os
import queue
import socket
import struct
import sys
import threading
import time
from typing import Any

from remotedbg.persist import protocol
from remotedbg.session import ConnectOptions, Session, open_session

MAX_KEPT = 4
CHECK_EVERY_S = 2.0


class _FrameWriter(io.RawIOBase):
    """A file whose bytes go to the client as frames of one kind."""

    def __init__(self, conn: socket.socket, kind: str, tty: bool, lock: threading.Lock) -> None:
        self.conn, self.kind, self.tty, self.lock = conn, kind, tty, lock
        self.gone = False

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.tty

    def write(self, data: Any) -> int:
        data = bytes(data)
        if data and not self.gone:
            try:
                with self.lock:
                    protocol.send(self.conn, self.kind, data)
            except OSError:
                self.gone = True  # the client went away: the command is interrupted
        return len(data)


def _stream(conn: socket.socket, kind: str, tty: bool, lock: threading.Lock) -> io.TextIOWrapper:
    raw = _FrameWriter(conn, kind, tty, lock)
    return io.TextIOWrapper(
        io.BufferedWriter(raw), encoding="utf-8", errors="surrogateescape", line_buffering=True
    )


class Keeper:
    """The sessions this daemon keeps, by connection options (the per-command --timeout
    aside); a command with other options gets a session of its own (None)."""

    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self.host = ""

    @staticmethod
    def _key(options: ConnectOptions) -> str:
        return json.dumps(dataclasses.asdict(dataclasses.replace(options, timeout=None)))

    def __call__(self, options: ConnectOptions) -> Session | None:
        key = self._key(options)
        session = self.sessions.get(key)
        if session is None:
            if len(self.sessions) >= MAX_KEPT or "," in options.host:
                return None
            session = open_session(options)
            self.sessions[key] = session
            self.host = self.host or options.host
        session.default_timeout = options.timeout
        return session

    def close(self) -> None:
        for session in self.sessions.values():
            try:
                session.close()
            except Exception:  # noqa: BLE001 - closing on the way out; nothing to report to
                pass
        self.sessions.clear()


class Daemon:
    def __init__(self, path: str, idle: float) -> None:
        self.path = path
        self.idle = idle
        self.keeper = Keeper()
        self.requests: queue.Queue = queue.Queue()
        self.busy = threading.Event()
        self.quit = threading.Event()
        self.started = time.time()
        self.last_used = time.time()
        self.commands = 0
        self.running = False
        self.running_lock = threading.Lock()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket file is created 0600
        try:
            self.listener.bind(path)
        finally:
            os.umask(old)
        self.inode = os.stat(path).st_ino
        self.listener.listen(16)

    # -- accepting (a thread) ----------------------------------------------------------------
    def accept_forever(self) -> None:
        while not self.quit.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            try:
                self._admit(conn)
            except (OSError, ValueError):
                conn.close()

    def _admit(self, conn: socket.socket) -> None:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", creds)
        if uid != os.getuid():
            conn.close()  # another user's process: never served, never answered
            return
        conn.settimeout(10)
        frames = protocol.Frames(conn)
        frame = frames.next()
        conn.settimeout(None)
        if frame is None:
            conn.close()
            return
        kind, payload = frame
        if kind == "S":
            protocol.send_json(conn, "I", self.status())
            conn.close()
        elif kind == "Q":
            protocol.send_json(conn, "I", self.status())
            conn.close()
            self.quit.set()
            self.requests.put(None)
        elif kind == "R" and not self.busy.is_set():
            self.busy.set()
            self.requests.put((conn, frames, json.loads(payload)))
        else:
            protocol.send_json(conn, "B", {"reason": "busy"})
            conn.close()

    def status(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "host": self.keeper.host, "started": self.started,
                "idle_s": round(time.time() - self.last_used, 1), "commands": self.commands,
                "busy": self.busy.is_set(), "idle_limit_s": self.idle}  # fmt: skip

    # -- serving (the main thread) -------------------------------------------------------------
    def serve(self) -> None:
        threading.Thread(target=self.accept_forever, daemon=True).start()
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
                self._serve_one(*item)
                self.last_used = time.time()
        finally:
            self.shutdown()

    def _socket_is_ours(self) -> bool:
        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def _serve_one(self, conn: socket.socket, frames: protocol.Frames, request: dict) -> None:
        from remotedbg.cli import output, run_words
        from remotedbg.cli.context import SESSION_KEEPER

        lock = threading.Lock()
        saved = (sys.stdout, sys.stderr, sys.stdin, dict(os.environ), os.getcwd())
        code = 1
        try:
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            if request.get("columns") and "COLUMNS" not in os.environ:
                os.environ["COLUMNS"] = str(request["columns"])
            sys.stdout = _stream(conn, "O", request.get("stdout_tty", False), lock)
            sys.stderr = _stream(conn, "E", request.get("stderr_tty", False), lock)
            sys.stdin = io.TextIOWrapper(io.BytesIO(b""))
            output.refresh_consoles()
            watcher = threading.Thread(target=self._watch, args=(frames,), daemon=True)
            with self.running_lock:
                self.running = True
            watcher.start()
            token = SESSION_KEEPER.set(self.keeper)
            try:
                code = run_words(list(request["argv"]))
            except KeyboardInterrupt:
                code = 130
            finally:
                SESSION_KEEPER.reset(token)
                with self.running_lock:
                    self.running = False
            self.commands += 1
        except OSError as error:  # the client's directory vanished, or the client did
            code = 1
            try:
                protocol.send(conn, "E", f"remotedbg: {error}\n".encode())
            except OSError:
                pass
        finally:
            try:
                for stream in (sys.stdout, sys.stderr):
                    stream.flush()
            except (OSError, ValueError, KeyboardInterrupt):
                pass
            sys.stdout, sys.stderr, sys.stdin = saved[0], saved[1], saved[2]
            os.environ.clear()
            os.environ.update(saved[3])
            os.chdir(saved[4])
            try:
                with lock:
                    protocol.send_json(conn, "X", {"exit": code})
            except OSError:
                pass
            conn.close()
            self.busy.clear()

    def _watch(self, frames: protocol.Frames) -> None:
        """Ctrl-C from the client (or the client gone) stops the running command, as Ctrl-C
        stops it in a command run in the terminal."""
        while True:
            try:
                frame = frames.next()
            except (OSError, ValueError):
                frame = None
            if frame is None or frame[0] == "K":
                with self.running_lock:
                    if self.running:
                        _thread.interrupt_main()
                if frame is None:
                    return

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
    os.chdir("/")  # each command runs in its client's directory; none is held open here
    try:
        daemon = Daemon(path, idle)
    except OSError:
        return  # another daemon took the socket first: it serves
    daemon.serve()


if __name__ == "__main__":
    main(sys.argv[1:])
