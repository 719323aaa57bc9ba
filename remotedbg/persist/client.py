"""The client side of persistent sessions: hand a command line to the daemon that holds a warm
connection to its host, starting one when there is none, and relay its output and exit code.
Imports only the standard library and remotedbg's settings, so a command served here starts
in the time Python itself takes. Whenever a daemon cannot serve (a terminal command, a fleet,
`--no-persist`, a daemon busy past its queue wait or vanished before it accepted the command,
a directory that is not private) `run()` answers None and the caller runs the command itself,
as if persistence did not exist. Once the daemon has accepted the command it is never run
again here: a lost daemon is reported (exit 5), a closed stdout stops it (exit 141, silently)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

from remotedbg import __version__
from remotedbg.host_spec import is_slurm_selection
from remotedbg.local_stdin import has_piped_input
from remotedbg.persist import protocol

START_WAIT_S = 30.0  # a daemon's first connection may wait on a slow login


def _settings(words: list[str]) -> tuple[str, str | None, float, str] | None:
    """(host, ssh_config, idle seconds, the connection to open ahead as JSON) when this
    command line may be served by a daemon."""
    command = protocol.command_words(words)
    if not command or command[0] in protocol.LOCAL_COMMANDS or command[0].startswith("-"):
        return None
    if protocol.has_flag(words, "--help", "-h", "--tty", "-t", "--no-persist", "--version"):
        return None
    from remotedbg import settings

    try:
        config = settings.load_config()
    except Exception:  # noqa: BLE001 - the command itself reports a broken config file
        return None
    host = settings.chosen("host", protocol.host_named(words), config)
    if not host or host == "local" or _is_fleet(words, host):
        return None
    persist = settings.chosen("persist", protocol.option_value(words, "--persist"), config)
    try:
        idle = float(persist)
    except ValueError:
        return None  # the command reports the bad value
    given = protocol.option_value(words, "--ssh-config")
    named = settings.chosen("ssh_config", given, config, default=None)
    ssh_config = os.path.expanduser(named) if named else named
    ahead = _ahead_options(words, host, named, config)
    return (host, ssh_config, idle, json.dumps(ahead)) if idle > 0 else None


def _ahead_options(
    words: list[str], host: str, named: str | None, config: dict
) -> dict[str, object] | None:
    """The connection options the command will ask for, as the CLI reads them (settings.chosen
    for those a variable or the config file may set), for the daemon to open while it loads
    the command's code; None when the command line names options read here from no one place
    (user, port, identity, container, a new host key), or an ssh_config the daemon's directory
    would change. A wrong answer costs a connection the daemon then closes, never a result."""
    from remotedbg import settings

    others = [o for o in protocol.KEY_OPTIONS if o != "--ssh-config"]
    if protocol.has_flag(words, "--accept-new-host-key") or any(
        protocol.option_value(words, o) is not None for o in others
    ):
        return None
    if named and not named.startswith(("/", "~")):
        return None
    flag = protocol.option_value(words, "--connect-timeout")
    try:
        connect_timeout = float(settings.chosen("connect_timeout", flag, config))
    except ValueError:
        return None
    transport = settings.chosen("transport", protocol.option_value(words, "--transport"), config)
    return {"host": host, "ssh_config": named, "connect_timeout": connect_timeout,
            "transport": transport}  # fmt: skip


def _is_fleet(words: list[str], host: str) -> bool:
    """Several hosts (`a,b`, a hostlist `gpu[01-16]`, `slurm:JOB/*`, a hosts file): never
    through a daemon."""
    hostlist = "[" in host and not host.startswith("[")  # `[::1]:22` is one host
    several = "," in host or hostlist or is_slurm_selection(host)
    return several or protocol.option_value(words, "--hosts-file") is not None


def _connect(path: str) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        return sock
    except OSError:
        sock.close()
        return None


def _start_daemon(
    path: str, idle: float, family: str, host: str, ahead: str
) -> socket.socket | None:
    """A new daemon listening on `path`; the old socket file (its daemon gone) is replaced.
    The daemon stops the stale daemons of its `family` (protocol.family_key) and opens the
    connection `ahead` names (JSON: ConnectOptions' fields, or null)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        return None
    subprocess.Popen(
        [sys.executable, "-m", "remotedbg.persist.daemon", path, str(idle), family, host, ahead],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not in the terminal's process group: Ctrl-C is relayed
        close_fds=True,
    )
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        sock = _connect(path) if os.path.exists(path) else None
        if sock is not None:
            return sock
        time.sleep(0.005)
    return None


def run(words: list[str]) -> int | None:
    """The exit code of the command as a daemon ran it, or None: run it here. Whatever stdin
    is: a command that reads it (`run` with piped input) hands the descriptor itself to the
    daemon, which streams it; any other command gets none there (a pipe in a script, a file
    from cron, `run -n`)."""
    found = _settings(words)
    if found is None:
        return None
    try:
        os.getcwd()
    except OSError:  # run from a deleted directory: the daemon could not enter it either
        return None
    host, ssh_config, idle, ahead = found
    directory = protocol.runtime_dir()
    if directory is None:
        return None
    key = protocol.socket_key(words, host, ssh_config, __version__)
    path = os.path.join(directory, key + protocol.SOCKET_SUFFIX)
    family = protocol.family_key(words, host, ssh_config)
    sock = _connect(path) or _start_daemon(path, idle, family, host, ahead)
    if sock is None:
        return None
    with sock:
        return _relay(sock, words)


def _relay(sock: socket.socket, words: list[str]) -> int | None:
    request = {
        "argv": words,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "stdout_tty": sys.stdout.isatty(),
        "stderr_tty": sys.stderr.isatty(),
        "columns": _columns(),
    }
    # the command's input: stdin itself, handed to the daemon, which reads it as it arrives
    stdin_fd = 0 if protocol.reads_stdin(words) and has_piped_input() else None
    request["stdin"] = stdin_fd is not None
    rid = int.from_bytes(os.urandom(8), "big") or 1
    interrupts = []
    accepted = False
    stdout_broken = False

    def stop() -> None:
        try:
            protocol.send(sock, "K", b"", rid)
        except OSError:
            pass

    def on_interrupt(signum: int, frame: object) -> None:
        if interrupts:
            raise KeyboardInterrupt  # a second Ctrl-C: stop waiting
        interrupts.append(signum)
        stop()

    def unknown() -> int | None:
        """The daemon went away, or broke the protocol, before the command's exit."""
        if interrupts:
            return 130
        if stdout_broken:  # said by the exit status alone, as ssh says it
            return protocol.BROKEN_STDOUT_EXIT
        if protocol.unknown_outcome(accepted) == protocol.RERUN:
            return None
        _say(protocol.LOST_MESSAGE)
        return protocol.lost_exit(words)

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        if stdin_fd is None:
            protocol.send_json(sock, "R", request, rid)
        else:
            protocol.send_json_with_fd(sock, "R", request, rid, stdin_fd)
        frames = protocol.Frames(sock)
        while True:
            frame = frames.next()
            if frame is None or frame[1] != rid:
                return unknown()
            kind, _, payload = frame
            if kind == "A":
                accepted = True
            elif kind == "O" and not stdout_broken:
                try:
                    _write(sys.stdout, payload)
                except OSError:  # `| head`: what reads our output is gone; so is the command
                    stdout_broken = True
                    stop()
            elif kind == "E" and not stdout_broken:  # then its "interrupted" is ours to say
                try:
                    _write(sys.stderr, payload)
                except OSError:
                    pass
            elif kind == "X":
                if stdout_broken:
                    return unknown()
                return int(json.loads(payload)["exit"])
            elif kind == "B":
                return unknown() if accepted else (130 if interrupts else None)
    except KeyboardInterrupt:
        return 130
    except (OSError, ValueError):
        return unknown()
    finally:
        signal.signal(signal.SIGINT, previous)


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _columns() -> int | None:
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError):
        return None


def _write(stream: object, data: bytes) -> None:
    stream.flush()  # type: ignore[attr-defined]
    stream.buffer.write(data)  # type: ignore[attr-defined]
    stream.buffer.flush()  # type: ignore[attr-defined]


def _ask(path: str, kind: str) -> dict | None:
    """A daemon's status ("S"), or its last status as it stops ("Q"); None when nobody
    answers on `path` (then the socket file is a dead daemon's and is removed)."""
    sock = _connect(path)
    if sock is None:
        try:
            os.unlink(path)
        except OSError:
            pass
        return None
    with sock:
        sock.settimeout(10)
        try:
            protocol.send(sock, kind)
            frame = protocol.Frames(sock).next()
        except (OSError, ValueError):
            return None
    return json.loads(frame[2]) if frame and frame[0] == "I" else None


STOP_WAIT_S = 5.0  # a daemon busy with a command ends it first


def _gone(pid: int, path: str) -> bool:
    """The daemon has exited: its socket removed and its process ended (or a zombie)."""
    if os.path.exists(path):
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def sessions(stop: bool = False) -> list[dict]:
    """The daemons of this user, each with its status; with `stop`, each is told to stop and
    waited for (up to STOP_WAIT_S in all), and says whether it is gone ("stopped")."""
    directory = protocol.runtime_dir(create=False)
    if directory is None:
        return []
    found = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(protocol.SOCKET_SUFFIX):
            status = _ask(os.path.join(directory, name), "Q" if stop else "S")
            if status is not None:
                found.append(dict(status, socket=os.path.join(directory, name)))
    deadline = time.monotonic() + STOP_WAIT_S
    for entry in found if stop else []:
        while not _gone(entry["pid"], entry["socket"]) and time.monotonic() < deadline:
            time.sleep(0.02)
        entry["stopped"] = _gone(entry["pid"], entry["socket"])
    return found
