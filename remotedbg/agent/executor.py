"""A long-lived command executor on the remote, one per session, spoken to over one channel.

sshd runs every exec request through the user's login shell, and bash reads ~/.bashrc for SSH
commands: on boxes with `conda init` or `pyenv init` that alone costs 100-500 ms a command. The
executor starts once (paying that once), then runs each command as a child in its own process
group, streams its output back in frames, and stops the group on request. It exits, stopping any
running command, when its stdin closes: a dropped connection leaves nothing behind.

Frames both ways: 1 byte kind, 4 bytes big-endian length, payload.
  to executor:   X exec {"cmd", "stdin": bool}   I stdin bytes   J end of stdin   K kill
                 C call {"entry", "args", "cwd"}
  from executor: P {"pid"}   O stdout bytes   E stderr bytes   S {"exit"}
                 R {"ok", "value"|"error"}
"""

from __future__ import annotations

import importlib
import json
import os
import pwd
import selectors
import signal
import struct
import subprocess
import time
import traceback

HEADER = struct.Struct("!BI")
CHUNK = 65536
KILL_GRACE = 0.5


def _login_shell():
    try:
        shell = pwd.getpwuid(os.getuid()).pw_shell
    except KeyError:
        shell = ""
    return shell if shell and os.access(shell, os.X_OK) else "/bin/sh"


class _Frames:
    """Incremental frame parser over fd 0."""

    def __init__(self):
        self.buffer = b""

    def feed(self, data):
        self.buffer += data
        frames = []
        while len(self.buffer) >= HEADER.size:
            kind, length = HEADER.unpack_from(self.buffer)
            if len(self.buffer) < HEADER.size + length:
                break
            payload = self.buffer[HEADER.size : HEADER.size + length]
            self.buffer = self.buffer[HEADER.size + length :]
            frames.append((chr(kind), payload))
        return frames


def _send(kind, payload=b""):
    data = HEADER.pack(ord(kind), len(payload)) + payload
    view = memoryview(data)
    while view:
        written = os.write(1, view)
        view = view[written:]


def _send_json(kind, value):
    _send(kind, json.dumps(value).encode("utf-8"))


def _stop_group(process):
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + KILL_GRACE
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        time.sleep(0.02)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass


class Executor:
    def __init__(self):
        self.shell = _login_shell()
        self.frames = _Frames()
        self.selector = selectors.DefaultSelector()
        self.selector.register(0, selectors.EVENT_READ, "control")
        self.process = None
        self.open_pipes = 0
        self.running = True

    # -- control frames ------------------------------------------------------------------
    def on_frame(self, kind, payload):
        if kind == "X":
            self.start(json.loads(payload.decode("utf-8")))
        elif kind == "I" and self.process is not None:
            self.write_stdin(payload)
        elif kind == "J" and self.process is not None:
            self.close_stdin()
        elif kind == "K" and self.process is not None:
            _stop_group(self.process)
        elif kind == "C":
            self.call(json.loads(payload.decode("utf-8")))

    def call(self, request):
        home = os.getcwd()
        try:
            if request.get("cwd"):
                os.chdir(os.path.expanduser(request["cwd"]))
            module_name, func_name = request["entry"].split(":")
            func = getattr(importlib.import_module(module_name), func_name)
            answer = {"ok": True, "value": func(request["args"])}
        except Exception as exc:  # the caller gets a one-line error
            traceback.print_exc()
            answer = {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
        finally:
            os.chdir(home)
        _send_json("R", answer)

    def start(self, request):
        command = request["cmd"].encode("utf-8", "surrogateescape")
        try:
            self.process = subprocess.Popen(
                [self.shell, "-c", command],
                stdin=subprocess.PIPE if request.get("stdin") else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                cwd=os.path.expanduser("~"),
            )
        except OSError as exc:  # e.g. the login shell vanished, or no more processes
            _send("E", ("remotedbg executor: cannot start %s: %s\n" % (self.shell, exc)).encode())
            _send_json("S", {"exit": 127})
            return
        _send_json("P", {"pid": self.process.pid})
        for stream, name in ((self.process.stdout, "O"), (self.process.stderr, "E")):
            os.set_blocking(stream.fileno(), False)
            self.selector.register(stream, selectors.EVENT_READ, name)
        self.open_pipes = 2

    def write_stdin(self, data):
        try:
            self.process.stdin.write(data)
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def close_stdin(self):
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass

    # -- the loop ------------------------------------------------------------------------
    def on_output(self, key):
        try:
            data = os.read(key.fileobj.fileno(), CHUNK)
        except BlockingIOError:
            return
        if data:
            _send(key.data, data)
            return
        self.selector.unregister(key.fileobj)
        key.fileobj.close()
        self.open_pipes -= 1
        if self.open_pipes == 0:
            status = self.process.wait()
            _send_json("S", {"exit": status if status >= 0 else 128 - status})
            self.process = None

    def serve(self):
        while self.running:
            for key, _ in self.selector.select():
                if key.data == "control":
                    data = os.read(0, CHUNK)
                    if not data:
                        self.running = False  # client gone: stop everything, leave nothing
                        break
                    for kind, payload in self.frames.feed(data):
                        self.on_frame(kind, payload)
                else:
                    self.on_output(key)
        if self.process is not None:
            _stop_group(self.process)


def serve(args):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # The login shell that started us already read its rc files, and its environment is ours.
    # bash exec'd us with SHLVL decremented to 0, so a child bash would read ~/.bashrc again
    # (it does so for SSH sessions at shell level 1); at level 2 it does not.
    if os.environ.get("SHLVL", "0") in ("", "0"):
        os.environ["SHLVL"] = "1"
    _send_json("P", {"pid": os.getpid(), "ready": True})
    Executor().serve()
    os._exit(0)
