"""A persistent daemon under many clients at once (issue 28): results never cross, a command
that may have run is never run again by the client, and Ctrl-C stops only its own command.
Over the loopback sshd, with the CLI run as a user runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.procs import persist_daemons as _daemons
from tests.procs import pids_with_argv, wait_for

COMMANDS = 200
CLIENTS = 16


def _cli(env: dict, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "remotedbg", *args], capture_output=True,
                          timeout=timeout, env=env, stdin=subprocess.DEVNULL)  # fmt: skip


def _wrong(results: dict[str, subprocess.CompletedProcess]) -> dict[str, tuple]:
    """The commands whose exit, stdout or stderr is not exactly `echo TOKEN`'s."""
    return {
        token: (done.returncode, done.stdout[:80], done.stderr[-200:])
        for token, done in results.items()
        if (done.returncode, done.stdout, done.stderr) != (0, f"{token}\n".encode(), b"")
    }


def test_hundreds_of_concurrent_commands_each_get_their_own_output(persistent):  # noqa: F811
    assert persistent("run", "-H", "testbox", "--", "true").returncode == 0
    [daemon] = _daemons(persistent.runtime)
    tokens = [f"r{os.getpid()}-c{n}" for n in range(COMMANDS)]
    started = time.monotonic()
    with ThreadPoolExecutor(CLIENTS) as pool:
        outcomes = pool.map(
            lambda token: _cli(persistent.env, "run", "-H", "testbox", "--", "echo", token),
            tokens,
        )
        done = dict(zip(tokens, outcomes, strict=True))
    elapsed = time.monotonic() - started
    assert _wrong(done) == {}
    assert elapsed < 240
    assert _daemons(persistent.runtime) == [daemon]  # it lived through the burst
    [status] = json.loads(persistent("sessions", "--json").stdout)["sessions"]
    served = status["commands"] - 1  # the rest waited past the queue and ran themselves
    print(f"{COMMANDS} commands from {CLIENTS} clients in {elapsed:.1f}s, {served} by the daemon")


@pytest.mark.parametrize("how", ["--persist=600", "--no-persist"])
def test_a_broken_stdout_stops_the_command_never_runs_it_twice(persistent, tmp_path, how):  # noqa: F811
    counter = tmp_path / "ctr"
    assert persistent("run", "-H", "testbox", "--", "true").returncode == 0
    command = f"echo run >> {counter}; seq 1 300000"
    line = (f"{sys.executable} -m remotedbg run -H testbox {how} --shell -- '{command}' | head -1;"
            " echo \"client=${PIPESTATUS[0]}\" >&2")  # fmt: skip
    done = subprocess.run(["bash", "-c", line], capture_output=True, timeout=60,
                          env=persistent.env, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.stdout == b"1\n"
    time.sleep(1.0)  # a second run, were there one, would have appended by now
    assert counter.read_text() == "run\n", done.stderr
    assert done.stderr == b"client=141\n", done.stderr  # silent, as ssh: 141 says it


def test_a_daemon_lost_mid_command_is_reported_never_rerun(persistent, tmp_path):  # noqa: F811
    counter = tmp_path / "ctr"
    assert persistent("run", "-H", "testbox", "--", "true").returncode == 0
    [daemon] = _daemons(persistent.runtime)
    client = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", "-H", "testbox", "--shell", "--",
         f"echo run >> {counter}; sleep 20; echo done"],
        env=persistent.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert wait_for(lambda: counter.exists() and counter.read_text(), timeout=20)
    os.kill(daemon, signal.SIGKILL)
    out, err = client.communicate(timeout=30)
    assert client.returncode == 255, err  # run is ssh: its own failures are 255
    assert b"may have run; its output was lost" in err
    assert out == b""
    time.sleep(1.0)
    assert counter.read_text() == "run\n"


def _full_pipe() -> tuple[int, int]:
    """A pipe already full: a process writing to it waits until the test reads."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    try:
        while True:
            os.write(write_end, b"x" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(write_end, True)
    return read_end, write_end


def test_ctrl_c_stops_only_its_own_command_among_concurrent_ones(persistent):  # noqa: F811
    """The interrupted client lingers (its stderr is full) and goes away only while the next
    command runs: its going away must not interrupt that command, nor the one queued."""
    assert persistent("run", "-H", "testbox", "--", "true").returncode == 0
    [daemon] = _daemons(persistent.runtime)
    marker = f"sleep-{os.getpid()}-{time.monotonic_ns()}"
    read_end, write_end = _full_pipe()
    victim = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", "-H", "testbox", "--shell", "--",
         f"exec -a {marker} sleep 30"],
        env=persistent.env, stdout=subprocess.PIPE, stderr=write_end, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(write_end)
    assert wait_for(lambda: bool(pids_with_argv(marker, "30")), timeout=20)

    def start(script: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "remotedbg", "run", "-H", "testbox", "--", "sh", "-c", script],
            env=persistent.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    queued = start("echo one; sleep 1; echo one-done")
    time.sleep(0.3)
    stopped = time.monotonic()
    victim.send_signal(signal.SIGINT)
    assert wait_for(lambda: not pids_with_argv(marker, "30"), timeout=5)
    assert time.monotonic() - stopped < 5
    after = start("sleep 1.5; echo two-done")
    time.sleep(0.8)  # it runs (or waits its turn) as the interrupted client goes away
    with os.fdopen(read_end, "rb") as stderr:
        victim_err = stderr.read()
    assert victim.wait(timeout=20) == 130
    assert b"interrupted" in victim_err
    for client, expected in ((queued, b"one\none-done\n"), (after, b"two-done\n")):
        out, err = client.communicate(timeout=60)
        assert (client.returncode, out, err) == (0, expected, b"")
    assert _daemons(persistent.runtime) == [daemon]


def test_a_ticket_is_started_or_refused_once_and_interrupted_only_while_it_runs():
    from remotedbg.persist import protocol
    from remotedbg.persist.daemon import Ticket

    refused = Ticket(1)
    assert not refused.interrupt()  # queued: a Ctrl-C withdraws it instead
    assert refused.refuse() and not refused.start() and not refused.interrupt()
    ticket = Ticket(2)
    assert ticket.start() and not ticket.refuse()
    assert ticket.interrupt() and not ticket.interrupt()  # at most once
    late = Ticket(3)
    late.start()
    late.finish()
    assert not late.interrupt()  # after its end an interrupt stops nothing
    # at most once: a client reruns a command only when the daemon never accepted it
    assert protocol.unknown_outcome(accepted=False) == protocol.RERUN
    assert protocol.unknown_outcome(accepted=True) == protocol.LOST


CLOSED_PIPE_RUNS = 200  # the hang came 1 run in ~80: 200 in a row catch it 92 times in 100


def test_closed_pipe_runs_in_a_row_beside_a_cpu_hog_never_wedge_the_daemon(persistent):  # noqa: F811
    """`run -- seq 1 2000000 | head -1` again and again, two CPU hogs beside: each ends at once
    with `1` (issue 47). The closed stdout interrupts the daemon's main thread; raised inside
    lock machinery it left a lock held that paramiko's transport thread then waited on, and the
    daemon served nothing more (1 run in ~80 hung before; 1,000 in a row pass now)."""
    assert persistent("run", "-H", "testbox", "--", "true").returncode == 0
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
    try:
        for n in range(CLOSED_PIPE_RUNS):
            piped = subprocess.run(
                f"{sys.executable} -m remotedbg run -H testbox -- seq 1 2000000 | head -1",
                shell=True, capture_output=True, timeout=30, env=persistent.env,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
            assert piped.stdout == b"1\n", (n, piped.stderr[-300:])
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    # and the daemon serves on
    assert persistent("run", "-H", "testbox", "--", "echo", "after").stdout == b"after\n"


def test_an_interrupt_inside_lock_machinery_is_deferred():
    """Where an interrupt may not be raised: the frames of threading's Condition, paramiko's
    locking, the chunk pipe; anywhere else it is raised at once."""
    import threading
    import types

    import paramiko.buffered_pipe

    from remotedbg.local_signals import in_lock_code
    from remotedbg.session import chunk_pipe

    def frame_of(code: types.CodeType) -> object:
        return types.SimpleNamespace(f_code=code)

    assert in_lock_code(frame_of(threading.Condition.__enter__.__code__))
    assert in_lock_code(frame_of(paramiko.buffered_pipe.BufferedPipe.feed.__code__))
    assert in_lock_code(frame_of(chunk_pipe.ChunkPipe.read_ready.__code__))
    assert not in_lock_code(frame_of(_wrong.__code__))
