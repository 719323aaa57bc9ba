"""`cmd | remotedbg run -- ...`: the remote command's input goes out while its output comes back,
on every route (paramiko's executor, OpenSSH's ssh, this machine), as ssh does it (issue 47).
A `cat` of more than the channel's windows and the pipes hold used to stop both ends for good:
the client sent all its input before it read any output."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

ROUTES = {"executor": ["-H", "testbox"], "openssh": ["-H", "testbox", "--transport", "ssh"],
          "local": ["-H", "local"], "daemon": ["-H", "testbox"]}  # fmt: skip
# "daemon": the persistent session serves it; the client hands its stdin over (SCM_RIGHTS)
SIZE = 7 << 20  # far over every window and pipe between


Ran = tuple[subprocess.CompletedProcess, float]


@pytest.fixture
def runner(request, cli):
    """The CLI as the route runs it: the daemon route through a persistent session (served
    there: the daemon's command count says so), the others in the client's own process."""
    route = request.node.callspec.params["route"]
    if route != "daemon":
        return cli
    persistent = request.getfixturevalue("persistent")
    assert persistent("run", "-H", "testbox", "--", "true").returncode == 0  # the daemon up

    def run(*args: str, input: bytes) -> subprocess.CompletedProcess:
        before = _served(persistent)
        done = subprocess.run([sys.executable, "-m", "remotedbg", *args], input=input,
                              capture_output=True, timeout=60, env=persistent.env)  # fmt: skip
        assert _served(persistent) == before + 1, "not served by the daemon"
        return done

    run.env = persistent.env  # type: ignore[attr-defined]
    return run


def _served(persistent) -> int:
    listed = json.loads(persistent("sessions", "--json").stdout)["sessions"]
    return sum(s["commands"] for s in listed)


def _run(cli, route: str, command: list[str], data: bytes) -> Ran:
    start = time.monotonic()
    done = cli("run", *ROUTES[route], "--", *command, input=data)
    return done, time.monotonic() - start


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_input_larger_than_every_window_goes_through_cat_whole(runner, route):
    data = os.urandom(SIZE)
    done, _ = _run(runner, route, ["cat"], data)
    assert done.returncode == 0, done.stderr
    assert hashlib.sha256(done.stdout).hexdigest() == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_command_that_stops_reading_ends_as_it_does_under_ssh(runner, route):
    """The command reads 10 bytes of 7 MiB and exits 3; another never reads and exits 0: their
    status, at once, and the rest of the input dropped."""
    data = os.urandom(SIZE)
    done, took = _run(runner, route, ["sh", "-c", "head -c 10; exit 3"], data)
    assert (done.returncode, done.stdout) == (3, data[:10]), done.stderr
    done, took_true = _run(runner, route, ["true"], data)
    assert done.returncode == 0, done.stderr
    assert took < 15 and took_true < 15


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_input_is_streamed_as_it_arrives(box, isolated_state, runner, route, tmp_path):
    """`tail -f log | remotedbg run -- grep --line-buffered ERR`: each line that reaches the log
    comes back while the input is still open (nothing waits for its end), as with ssh."""
    import select

    log = tmp_path / "server.log"
    log.write_text("")
    env = getattr(runner, "env", None) or dict(
        os.environ, REMOTEDBG_SSH_CONFIG=str(box.ssh_config), XDG_STATE_HOME=str(isolated_state),
        REMOTEDBG_PERSIST="0",
    )  # fmt: skip
    tail = subprocess.Popen(["tail", "-f", str(log)], stdout=subprocess.PIPE)
    client = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", *ROUTES[route], "--", "grep",
         "--line-buffered", "ERR"],
        stdin=tail.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert tail.stdout is not None and client.stdout is not None
    tail.stdout.close()
    try:
        for n in range(3):
            with open(log, "a") as handle:
                handle.write(f"ok {n}\nERR {n}\n")
            ready = select.select([client.stdout], [], [], 20)[0]
            assert ready, (route, "no line within 20 s", client.poll())
            assert client.stdout.readline() == f"ERR {n}\n".encode()
    finally:
        tail.kill()
        tail.wait()
    # the input's end is passed on: grep ends, and its status is the client's
    assert client.wait(timeout=20) == 0, client.stderr.read() if client.stderr else b""


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_input_past_the_old_64_mib_limit_goes_through_tar(runner, route, tmp_path):
    """`tar c dir | remotedbg run -- tar x -C DEST`: 80 MiB of input, no limit, every byte there."""
    source = tmp_path / "src"
    source.mkdir()
    data = os.urandom(1 << 20)
    for n in range(80):
        (source / f"part{n:02d}").write_bytes(data[n:] + data[:n])
    archive = subprocess.run(["tar", "c", "-C", str(source), "."], capture_output=True,
                             check=True).stdout  # fmt: skip
    dest = tmp_path / "dest"
    dest.mkdir()
    done, _ = _run(runner, route, ["tar", "x", "-C", str(dest)], archive)
    assert done.returncode == 0, done.stderr
    for n in (0, 41, 79):
        assert (dest / f"part{n:02d}").read_bytes() == (source / f"part{n:02d}").read_bytes()
    assert len(list(dest.iterdir())) == 80
