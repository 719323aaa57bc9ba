"""`cmd | remotedbg run -- ...`: the remote command's input goes out while its output comes back,
on every route (paramiko's executor, OpenSSH's ssh, this machine), as ssh does it (issue 47).
A `cat` of more than the channel's windows and the pipes hold used to stop both ends for good:
the client sent all its input before it read any output."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time

import pytest

ROUTES = {"executor": ["-H", "testbox"], "openssh": ["-H", "testbox", "--transport", "ssh"],
          "local": ["-H", "local"]}  # fmt: skip
SIZE = 7 << 20  # under run's 8 MiB output cap, far over every window and pipe between


Ran = tuple[subprocess.CompletedProcess, float]


def _run(cli, route: str, command: list[str], data: bytes) -> Ran:
    start = time.monotonic()
    done = cli("run", *ROUTES[route], "--", *command, input=data)
    return done, time.monotonic() - start


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_input_larger_than_every_window_goes_through_cat_whole(cli, route):
    data = os.urandom(SIZE)
    done, _ = _run(cli, route, ["cat"], data)
    assert done.returncode == 0, done.stderr
    assert hashlib.sha256(done.stdout).hexdigest() == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_command_that_stops_reading_ends_as_it_does_under_ssh(cli, route):
    """The command reads 10 bytes of 7 MiB and exits 3; another never reads and exits 0: their
    status, at once, and the rest of the input dropped."""
    data = os.urandom(SIZE)
    done, took = _run(cli, route, ["sh", "-c", "head -c 10; exit 3"], data)
    assert (done.returncode, done.stdout) == (3, data[:10]), done.stderr
    done, took_true = _run(cli, route, ["true"], data)
    assert done.returncode == 0, done.stderr
    assert took < 15 and took_true < 15
