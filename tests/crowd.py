"""A crowd of other people's engine servers on the box, as on a shared GPU machine.

`crowd(count)` starts `count` SGLang servers as a scan sees them (`python -m
sglang.launch_server --model-path ... --enable-metrics --port P`, a shim package as in
tests/test_server_identity.py) of another user when run as root (`runuser`), else of this user.
Each listens on its port and never answers: the worst a scan meets on a busy box (a hung server,
a stopped one, a port some other program holds), since every request waits its whole timeout.
Used by tests/test_server_scan.py and bench/scan_crowd.py.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.unprivileged import shared_dir, throwaway_user

HUNG = """\
import socket, sys, time
port = int(sys.argv[sys.argv.index("--port") + 1])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(64)
time.sleep(3600)
"""


@dataclass
class Crowd:
    pids: list[int]  # the servers' own (python) PIDs
    ports: list[int]
    uid: int  # whose servers they are


def _free_ports(count: int) -> list[int]:
    """`count` distinct free ports: each held until all are chosen (a port closed and asked for
    again can come back, and two servers on one port leave one dead, which a scan rightly
    misses)."""
    with ExitStack() as held:
        ports = []
        for _ in range(count):
            sock = held.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
        return ports


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _server_pid(process: subprocess.Popen) -> int:
    """The python process under `runuser` (its child), or the process itself."""
    if not Path(f"/proc/{process.pid}/cmdline").read_bytes().startswith(b"runuser"):
        return process.pid
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = children.read_text().split()
        if found:
            return int(found[0])
        time.sleep(0.02)
    raise RuntimeError("a crowd server did not start")


@contextmanager
def crowd(count: int, log_mib: int = 0) -> Iterator[Crowd]:
    """`log_mib`: the servers' stdout goes to one log of that many MiB of access lines (a
    server without speculation writes only those), which a scan reads back to its cap."""
    with ExitStack() as stack:
        place = stack.enter_context(shared_dir())
        shim = place / "shim" / "sglang"
        shim.mkdir(parents=True)
        (shim / "__init__.py").write_text("")
        (shim / "launch_server.py").write_text(HUNG)
        prefix: list[str] = []
        python = sys.executable
        uid = os.getuid()
        if os.geteuid() == 0:
            user = stack.enter_context(throwaway_user("rdbgcr", place))  # killed with its user
            prefix, uid = ["runuser", "-u", user.pw_name, "--"], user.pw_uid
            python = "/usr/bin/python3"  # a pyenv under /root is not theirs to run
        out: int | None = subprocess.DEVNULL
        if log_mib:
            log = place / "access.log"
            line = b'INFO:     127.0.0.1:5555 - "POST /generate HTTP/1.1" 200 OK\n'
            log.write_bytes(line * ((log_mib << 20) // len(line)))
            out = stack.enter_context(open(log, "ab")).fileno()
        started: list[subprocess.Popen] = []
        servers: list[int] = []
        stack.callback(_stop, started, servers)
        ports = _free_ports(count)
        for index, port in enumerate(ports):
            argv = [*prefix, "env", f"PYTHONPATH={place / 'shim'}", python, "-m",
                    "sglang.launch_server", "--model-path", f"/nonexistent/crowd-{index}",
                    "--speculative-algorithm", "EAGLE3", "--enable-metrics",
                    "--port", str(port)]  # fmt: skip
            started.append(subprocess.Popen(argv, cwd=place, stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True))  # fmt: skip
        deadline = time.monotonic() + 30
        while not all(_listening(port) for port in ports):
            if time.monotonic() > deadline:
                raise RuntimeError("the crowd's servers did not listen within 30 s")
            time.sleep(0.1)
        servers += [_server_pid(p) for p in started]
        dead = [p.args[-1] for p in started if p.poll() is not None]
        if dead:  # another program took its port before it listened
            raise RuntimeError(f"crowd servers on ports {dead} did not start")
        yield Crowd(list(servers), ports, uid)


def _stop(started: list[subprocess.Popen], servers: list[int]) -> None:
    """Each server, then its runuser (which ends with it): none is left for userdel to refuse."""
    for pid in servers:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for process in started:
        process.kill()
        process.wait()
