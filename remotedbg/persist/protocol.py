"""What the persistent-session client and daemon share (the standard library and `host_spec`
only: the client imports this and nothing heavier before it knows whether a daemon will serve
it).

Frames both ways over the Unix socket: 1 byte kind, 8 bytes request id, 4 bytes length
(big-endian), payload. The client picks a random id for its command; every frame of it, both
ways, carries that id (a frame with another id is a broken daemon's: the client stops reading).
  client -> daemon:  R {"argv", "cwd", "env", "stdout_tty", "stderr_tty"}   K interrupt (Ctrl-C)
                     S status   Q quit
  daemon -> client:  A accepted: the command starts now (from here on it may have run)
                     O stdout bytes   E stderr bytes   X {"exit"}
                     B {"reason"}: refused before it started (the client runs it itself)
                     I {status}
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import struct
import subprocess
from typing import Any

from remotedbg.connection_options import KEY_FLAGS, flags_of
from remotedbg.host_spec import split_host_spec

FRAME = struct.Struct("!BQI")
MAX_FRAME = 64 << 20
SOCKET_SUFFIX = ".sock"
#: The root options typed before a command (`remotedbg -q COMMAND`): they do not name one.
ROOT_FLAGS = frozenset({"-q", "--quiet", "-v", "--verbose"})
#: Commands a daemon never runs: they need the local terminal or run no remote command.
LOCAL_COMMANDS = {"repl", "demo", "config", "help", "history", "sessions", "--help", "-h",
                  "--version"}  # fmt: skip
#: Options that decide which connection serves a command line (part of the socket's key).
USER_OPTIONS = flags_of("user")  # ssh's -l; grep's -l is its own (files with matches)
PORT_OPTIONS = flags_of("port")
KEY_OPTIONS = KEY_FLAGS


#: What the client may do when its command's outcome is not known.
RERUN = "rerun"  # the daemon never started it: the client runs it itself
LOST = "lost"  # it may have run: never run again, say so (exit LOST_EXIT)
LOST_EXIT = 5
LOST_MESSAGE = (
    "remotedbg: the persistent session ended mid-command: it may have run; its output was lost"
    " (not run again)"
)
BROKEN_STDOUT_EXIT = 141  # as remotedbg.errors.StdoutClosed, without importing it


SSH_FAILURE_EXIT = 255  # `run` is ssh: remotedbg's own failures are 255 (errors.ExitCode)


def _command(words: list[str]) -> str | None:
    return next((w for w in words if not w.startswith("-")), None)


def lost_exit(words: list[str]) -> int:
    """The exit of a command the daemon lost mid-way: `run` passes the remote status through,
    so its own failure is 255, as ssh's; other commands say LOST_EXIT."""
    return SSH_FAILURE_EXIT if _command(words) == "run" else LOST_EXIT


def unknown_outcome(accepted: bool) -> str:
    """At most once: after the daemon's A the command may have started on the box, so the
    client never runs it again; before it, the daemon has not started it."""
    return LOST if accepted else RERUN


def send(sock: socket.socket, kind: str, payload: bytes = b"", rid: int = 0) -> None:
    sock.sendall(FRAME.pack(ord(kind), rid, len(payload)) + payload)


def send_json(sock: socket.socket, kind: str, value: Any, rid: int = 0) -> None:
    send(sock, kind, json.dumps(value).encode("utf-8"), rid)


MAX_FDS = 4  # descriptors a daemon takes with a request (one is used: the client's stdin)


def send_json_with_fd(sock: socket.socket, kind: str, value: Any, rid: int, fd: int) -> None:
    """A frame whose first byte carries `fd` (SCM_RIGHTS), as OpenSSH's mux client hands its
    descriptors to the master: the daemon reads the client's stdin itself."""
    payload = json.dumps(value).encode("utf-8")
    frame = FRAME.pack(ord(kind), rid, len(payload)) + payload
    socket.send_fds(sock, [frame[:1]], [fd])
    sock.sendall(frame[1:])


class Frames:
    """Frames (kind, request id, payload) read from a socket; `next()` is None at end of
    stream."""

    def __init__(self, sock: socket.socket, take_fds: bool = False) -> None:
        self.sock = sock
        self.buffer = b""
        self.take_fds = take_fds  # descriptors passed with the bytes (SCM_RIGHTS) are kept
        self.fds: list[int] = []

    def next(self) -> tuple[str, int, bytes] | None:
        while True:
            if len(self.buffer) >= FRAME.size:
                kind, rid, length = FRAME.unpack_from(self.buffer)
                if length > MAX_FRAME:
                    raise ValueError("frame too large")
                if len(self.buffer) >= FRAME.size + length:
                    payload = self.buffer[FRAME.size : FRAME.size + length]
                    self.buffer = self.buffer[FRAME.size + length :]
                    return chr(kind), rid, payload
            if self.take_fds:
                chunk, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, MAX_FDS)
                self.fds += fds
            else:
                chunk = self.sock.recv(1 << 16)
            if not chunk:
                return None
            self.buffer += chunk


def runtime_dir(create: bool = True) -> str | None:
    """The per-user directory of daemon sockets: $REMOTEDBG_RUNTIME_DIR, else
    $XDG_RUNTIME_DIR/remotedbg, else /tmp/remotedbg-UID; 0700 and ours, or None (then no
    persistence: a directory another user could write to would let them plant a socket)."""
    base = os.environ.get("REMOTEDBG_RUNTIME_DIR")
    if not base:
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        base = os.path.join(xdg, "remotedbg") if xdg else f"/tmp/remotedbg-{os.getuid()}"
    if create:
        try:
            os.makedirs(base, mode=0o700, exist_ok=True)
        except OSError:
            return None
    try:
        info = os.lstat(base)
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and not info.st_mode & 0o077
    return base if private and info.st_uid == os.getuid() else None


def option_value(words: list[str], *names: str) -> str | None:
    """The value of the last of `names` (`--name value`, `--name=value`, `-Hvalue`) before `--`."""
    found = None
    for index, word in enumerate(words):
        if word == "--":
            break
        for name in names:
            if word == name and index + 1 < len(words):
                found = words[index + 1]
            elif word.startswith(name + "="):
                found = word[len(name) + 1 :]
            elif len(name) == 2 and word.startswith(name) and len(word) > 2:
                found = word[2:]
    return found


def _typed_first(words: list[str], first: tuple[str, ...], then: tuple[str, ...]) -> bool:
    """Was an option of `first` typed before every one of `then` (before `--`)?"""

    def at(names: tuple[str, ...]) -> int:
        for index, word in enumerate(words):
            if word == "--":
                break
            if any(word == n or word.startswith(n + "=") or (len(n) == 2 and word.startswith(n))
                   for n in names):  # fmt: skip
                return index
        return len(words)

    return at(first) < at(then)


def command_words(words: list[str]) -> list[str]:
    """The command line from its command on: the root options before it left out."""
    start = 0
    while start < len(words) and words[start] in ROOT_FLAGS:
        start += 1
    return words[start:]


def host_named(words: list[str]) -> str:
    """The --host/-H value of a command line ('' when it names none)."""
    return option_value(words, "-H", "--host") or ""


def reads_stdin(words: list[str]) -> bool:
    """Whether the command line reads its stdin: `run` does (its input goes to the remote
    command) unless `-n`/`--no-stdin` says not; every other command leaves it alone."""
    command = command_words(words)
    return bool(command) and command[0] == "run" and not has_flag(words, "-n", "--no-stdin")


def has_flag(words: list[str], *flags: str) -> bool:
    before = words[: words.index("--")] if "--" in words else words
    return any(word in flags for word in before)


def resolved_config(
    host: str, ssh_config: str | None, user: str | None = None, port: str | None = None
) -> bytes:
    """`ssh -G`'s answer for the host, with the user and port the command line gives: any
    change to what ssh_config says about it makes another key, so a daemon connected under
    the old settings is never reused; `-H u@box` and `-H box --user u` get the same."""
    argv = ["ssh", "-G"] + (["-F", ssh_config] if ssh_config else [])
    argv += (["-l", user] if user else []) + (["-p", port] if port else []) + ["--", host]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return b""
    return done.stdout if done.returncode == 0 else b""


def code_stamp() -> int:
    """The newest modification time of remotedbg's own files: a daemon started before the
    code changed (an upgrade, an edit of an editable install) is not reused."""
    newest = 0
    for folder, _, files in os.walk(os.path.dirname(os.path.dirname(__file__))):
        for name in files:
            if name.endswith(".py"):
                newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
    return newest


def family_key(words: list[str], host: str, ssh_config: str | None) -> str:
    """What the user asked to connect to, as typed: the host and the connection options.
    Daemons of one family that another code stamp or ssh_config made are stale: the daemon
    started for the family's current key stops them (daemon.py)."""
    digest = hashlib.sha256(f"{os.getuid()}\0{host}\0{ssh_config or ''}\0".encode())
    for name in KEY_OPTIONS:
        if name != "-l" or _command(words) != "grep":
            digest.update(f"{name}={option_value(words, name)}\0".encode())
    return digest.hexdigest()[:32]


def socket_key(words: list[str], host: str, ssh_config: str | None, version: str) -> str:
    """The name of the socket that serves this command line: the user, remotedbg's version
    and code, the connection as ssh_config resolves it (the host's user and port applied, so
    two spellings of one connection share a daemon), and the other connection options."""
    # a host none of --host's forms: the command reports it; the key is the host as typed
    typed_user, name, typed_port = split_host_spec(host) or (None, host, None)
    user_options = ("--user",) if _command(words) == "grep" else USER_OPTIONS
    user = option_value(words, *user_options) or typed_user
    port = option_value(words, *PORT_OPTIONS) or (str(typed_port) if typed_port else None)
    # ssh's first obtained value: `-H me@box -l other` is `me` (target.command_line_user)
    if typed_user and _typed_first(words, ("--host", "-H"), user_options):
        user = typed_user
    if typed_port and _typed_first(words, ("--host", "-H"), PORT_OPTIONS):
        port = str(typed_port)
    digest = hashlib.sha256()
    digest.update(f"{os.getuid()}\0{version}\0{code_stamp()}\0".encode())
    digest.update(f"{ssh_config or ''}\0".encode())
    for option in KEY_OPTIONS:
        if option not in USER_OPTIONS + PORT_OPTIONS:
            digest.update(f"{option}={option_value(words, option)}\0".encode())
    # without an ssh client, the host as typed stands for what it resolves to
    resolved = resolved_config(name, ssh_config, user, port)
    digest.update(resolved or f"{user}@{name}:{port}".encode())
    digest.update(config_files_stamp(ssh_config))
    return digest.hexdigest()[:32]


def config_files_stamp(ssh_config: str | None) -> bytes:
    """The bytes of the ssh_config files themselves: without a local `ssh` (no `ssh -G`), or
    when it fails, an edited config must still make another key."""
    stamp = hashlib.sha256()
    for path in (ssh_config or os.path.expanduser("~/.ssh/config"), "/etc/ssh/ssh_config"):
        try:
            with open(path, "rb") as handle:
                stamp.update(path.encode() + b"\0" + handle.read() + b"\0")
        except OSError:
            stamp.update(path.encode() + b"\0-\0")
    return stamp.digest()
