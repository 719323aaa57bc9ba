"""Persistent sessions (remotedbg.persist): the first command to a host leaves a daemon holding
the connection; later commands are served by it over a Unix socket. Everything here runs the
installed CLI as a user does, against the loopback sshd; every daemon a test starts is stopped
and checked gone at its end."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.procs import persist_daemons as _daemons
from tests.procs import pids_with_argv, wait_for
from tests.unprivileged import call_unprivileged


def _alive(pid: int) -> bool:
    """Running (an exited daemon waits as a zombie until whatever adopted it reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_second_command_is_served_warm_with_the_same_output_and_exit(persistent, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    first = persistent("run", "-H", "testbox", "--", "echo", "one")
    assert first.returncode == 0 and first.stdout == b"one\n"
    [daemon] = _daemons(persistent.runtime)
    # served by the daemon: same bytes, exit codes and error lines as without it
    for args in (["run", "-H", "testbox", "--", "sh", "-c", "echo out; echo err >&2; exit 7"],
                 ["cat", "-H", "testbox", str(tmp_path / "notes.txt")],
                 ["cat", "-H", "testbox", str(tmp_path / "missing.txt")],
                 ["glob", "-H", "testbox", "--json", str(tmp_path / "*.txt")]):  # fmt: skip
        warm = persistent(*args)
        cold = persistent(*args, "--no-persist")
        assert (warm.returncode, warm.stdout, warm.stderr) == (
            cold.returncode, cold.stdout, cold.stderr), args  # fmt: skip
    assert persistent("run", "-H", "testbox", "--", "sh", "-c", "exit 7").returncode == 7
    assert _daemons(persistent.runtime) == [daemon]
    listed = json.loads(persistent("sessions", "--json").stdout)["sessions"]
    assert [(s["pid"], s["host"]) for s in listed] == [(daemon, "testbox")]
    assert listed[0]["commands"] >= 5
    # the history the user reads has the served commands too
    history = persistent("history", "--json")
    assert "echo one" in history.stdout.decode()


def test_root_options_before_the_command_are_served_by_the_daemon_too(persistent):
    """`remotedbg -q COMMAND`, `remotedbg -v COMMAND`: the root's options come before the
    command word, and the command is still served warm (it ran on its own every time, a new
    connection each, because the line began with a dash), with the same output."""
    first = persistent("-q", "run", "-H", "testbox", "--", "echo", "one")
    assert first.returncode == 0 and first.stdout == b"one\n"
    [daemon] = _daemons(persistent.runtime)
    verbose = persistent("-v", "run", "-H", "testbox", "--", "echo", "two")
    assert verbose.returncode == 0 and verbose.stdout == b"two\n"
    assert b"(exit 0)" in verbose.stderr  # -v: the round trip, said by the daemon
    assert _daemons(persistent.runtime) == [daemon]
    [listed] = json.loads(persistent("sessions", "--json").stdout)["sessions"]
    assert listed["pid"] == daemon and listed["commands"] == 2


def test_the_socket_is_private_and_another_user_is_refused(persistent):
    persistent("run", "-H", "testbox", "--", "true")
    [sock] = list(persistent.runtime.iterdir())
    assert stat.S_IMODE(persistent.runtime.stat().st_mode) == 0o700
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600 and stat.S_ISSOCK(sock.stat().st_mode)
    if os.geteuid() != 0:
        return  # no other user to be here; the modes above are what keeps them out
    # even with the modes opened up (a careless chmod), the daemon answers nobody else
    persistent.runtime.chmod(0o755)
    sock.chmod(0o666)
    for parent in persistent.runtime.parents:
        if parent == Path("/tmp"):
            break
        parent.chmod(parent.stat().st_mode | 0o005)

    def ask(path: str) -> bytes:
        client = socket.socket(socket.AF_UNIX)
        client.connect(path)
        client.settimeout(5)
        try:
            client.sendall(b"S\0\0\0\0")
            return client.recv(100)
        except (BrokenPipeError, ConnectionResetError):  # closed before or after the request:
            return b""  # refused just the same

    assert call_unprivileged(ask, str(sock)) == b""  # closed without a word
    assert persistent("run", "-H", "testbox", "--", "true").returncode == 0


def test_idle_daemon_exits_and_leaves_nothing(persistent):
    assert persistent("run", "-H", "testbox", "--persist", "1", "--", "true").returncode == 0
    [daemon] = _daemons(persistent.runtime)
    assert wait_for(lambda: not _daemons(persistent.runtime), timeout=10)
    assert not list(persistent.runtime.iterdir())  # its socket went with it
    assert not _alive(daemon)


def test_a_killed_daemon_is_replaced_cleanly(persistent):
    persistent("run", "-H", "testbox", "--", "true")
    [daemon] = _daemons(persistent.runtime)
    os.kill(daemon, signal.SIGKILL)
    assert wait_for(lambda: not _alive(daemon), timeout=5)
    after = persistent("run", "-H", "testbox", "--", "echo", "still")
    assert after.returncode == 0 and after.stdout == b"still\n" and after.stderr == b""
    [replacement] = _daemons(persistent.runtime)
    assert replacement != daemon


def test_a_changed_ssh_config_gets_a_new_session_and_the_stale_one_stops(persistent, tmp_path):
    """The old daemon can serve no command line any more (its key names the old config): the
    new daemon of the same host and options stops it instead of leaving it idle 600 s."""
    config = tmp_path / "ssh_config"
    config.write_text(Path(persistent.env["REMOTEDBG_SSH_CONFIG"]).read_text())
    persistent("run", "-H", "testbox", "--", "true", REMOTEDBG_SSH_CONFIG=str(config))
    [before] = _daemons(persistent.runtime)
    config.write_text(
        config.read_text().replace("Host testbox", "Host testbox\n  ConnectTimeout 7")
    )
    persistent("run", "-H", "testbox", "--", "true", REMOTEDBG_SSH_CONFIG=str(config))
    assert wait_for(lambda: len(_daemons(persistent.runtime)) == 1, timeout=10)
    [after] = _daemons(persistent.runtime)
    assert after != before and not _alive(before)
    assert len(list(persistent.runtime.iterdir())) == 1


def test_a_first_connection_that_fails_leaves_no_daemon(persistent, box, tmp_path):
    """A typo'd host, a port nobody listens on: the command fails as without a daemon, and
    no daemon stays behind (as ssh's ControlMaster leaves no master for a failed connect)."""
    from tests.sshd import free_port

    closed = str(free_port())
    cases = [(["run", "-H", "testbx", "--", "true"], 255),
             (["cat", "-H", "testbx", "/etc/hostname"], 3),
             (["run", "-H", "testbox", "--port", closed, "--", "true"], 255)]  # fmt: skip
    for args, code in cases:
        served = persistent(*args)
        assert served.returncode == code, served.stderr
        assert served.stderr == persistent(args[0], "--no-persist", *args[1:]).stderr
        assert wait_for(lambda: not _daemons(persistent.runtime), timeout=10), args
        assert not list(persistent.runtime.iterdir())
    master = tmp_path / "cm.sock"
    ssh = subprocess.run(["ssh", "-F", str(box.ssh_config), "-o", "ControlMaster=auto",
                          "-o", f"ControlPath={master}", "-o", "ControlPersist=600",
                          "-p", closed, "testbox", "true"],
                         capture_output=True, timeout=30, stdin=subprocess.DEVNULL)  # fmt: skip
    assert ssh.returncode == 255 and not master.exists()


def test_spellings_of_one_connection_share_one_daemon(persistent, box):
    """`-H testbox`, `-H USER@testbox`, `--user USER`, `-l USER` connect the same way (ssh -G says
    so): one daemon serves them all, whatever the command."""
    user, port = box.server.user, str(box.server.port)
    for args in (["run", "-H", "testbox", "--", "true"],
                 ["run", "-H", f"{user}@testbox", "--", "true"],
                 ["run", "-H", "testbox", "--user", user, "--", "true"],
                 ["cat", "-H", "testbox", "/etc/hostname"],
                 ["glob", "-H", f"ssh://{user}@testbox", "/etc/host*"],
                 ["run", "-l", user, "-p", port, "-H", "testbox", "--", "true"]):  # fmt: skip
        assert persistent(*args).returncode == 0, args
    assert len(_daemons(persistent.runtime)) == 1
    [listed] = json.loads(persistent("sessions", "--json").stdout)["sessions"]
    assert listed["commands"] == 6
    # another user is another connection: its own daemon, gone when its login fails
    assert persistent("run", "-H", "testbox", "--user", "nobody", "--", "true").returncode == 255
    assert wait_for(lambda: len(_daemons(persistent.runtime)) == 1, timeout=10)


def test_ctrl_c_reaches_the_remote_command_through_the_daemon(persistent, tmp_path):
    persistent("run", "-H", "testbox", "--", "true")
    marker = f"sleep-{os.getpid()}-{time.monotonic_ns()}"
    client = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", "-H", "testbox", "--shell", "--",
         f"exec -a {marker} sleep 30"],
        env=persistent.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip

    def remote_sleep() -> bool:
        return bool(pids_with_argv(marker, "30"))  # the box's sleep, not the client's argv

    assert wait_for(remote_sleep, timeout=15)
    started = time.monotonic()
    client.send_signal(signal.SIGINT)
    out, err = client.communicate(timeout=15)
    assert client.returncode == 130, err
    assert time.monotonic() - started < 5
    assert wait_for(lambda: not remote_sleep(), timeout=5)
    # the daemon lived through it and serves the next command
    assert len(_daemons(persistent.runtime)) == 1
    assert persistent("run", "-H", "testbox", "--", "echo", "ok").stdout == b"ok\n"


def test_ctrl_c_while_the_daemon_starts_is_exit_130_and_one_line(persistent, tmp_path):
    """Ctrl-C before any daemon has taken the command (here one whose start takes a minute:
    a sitecustomize that sleeps in the daemon's process only): 130 and one line, not Python's
    death by SIGINT (-2) that an uncaught KeyboardInterrupt ends in."""
    slow = tmp_path / "slow-start"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text(
        "import sys, time\n"
        "if any(word.endswith('.sock') for word in sys.argv):  # the daemon's: its socket\n"
        "    time.sleep(60)\n"
    )
    client = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", "-H", "testbox", "--", "true"],
        env=dict(persistent.env, PYTHONPATH=str(slow)), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert wait_for(lambda: bool(_daemons(persistent.runtime)), timeout=15)
        time.sleep(0.2)  # the client waits for the socket now
        client.send_signal(signal.SIGINT)
        out, err = client.communicate(timeout=15)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    assert client.returncode == 130, err
    assert err.decode().strip().splitlines() == ["remotedbg: interrupted"] and out == b""


def test_a_busy_daemon_queues_the_next_command_then_sends_it_to_run_itself(persistent):
    """A command waits behind the running one for QUEUE_WAIT_S (the stress tests queue
    hundreds); past that it runs in its own process, never waiting for a long command."""
    from remotedbg.persist.daemon import QUEUE_WAIT_S

    persistent("run", "-H", "testbox", "--", "true")
    slow = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", "-H", "testbox", "--", "sleep", "9"],
        env=persistent.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    time.sleep(0.8)
    started = time.monotonic()
    meanwhile = persistent("run", "-H", "testbox", "--", "echo", "meanwhile")
    assert meanwhile.returncode == 0 and meanwhile.stdout == b"meanwhile\n"
    assert QUEUE_WAIT_S <= time.monotonic() - started and slow.poll() is None
    assert slow.wait(timeout=30) == 0


def test_sessions_lists_options_and_stop_ends_them_at_once(persistent, box):
    persistent("run", "-H", "testbox", "--", "true")
    key = str(box.server.user_key)
    persistent("run", "-H", "testbox", "-i", key, "--", "true")
    persistent("run", "-H", "testbox", "-i", key, "--", "true")
    lines = persistent("sessions").stdout.decode().splitlines()
    config = f"--ssh-config {box.ssh_config}"
    assert len(lines) == 2, lines
    assert any(line.startswith(f"testbox  {config}  1 command  idle ") for line in lines), lines
    assert any(line.startswith(f"testbox  {config} --identity {key}  2 commands  idle ")
               for line in lines), lines  # fmt: skip
    stopped = persistent("sessions", "--stop")
    assert stopped.stdout.decode().count("  stopped  pid ") == 2, stopped.stdout
    assert not _daemons(persistent.runtime) and not list(persistent.runtime.iterdir())
    assert "no persistent sessions" in persistent("sessions").stdout.decode()


def test_a_dropped_connection_is_reconnected_by_the_next_command(persistent):
    """The connection a daemon holds dies (its sshd killed mid-command): that command fails
    as a dropped connection does (run: exit 255), the next one reconnects through the same
    daemon."""
    from tests.test_session import _session_sshd_of

    persistent("run", "-H", "testbox", "--", "true")
    [daemon] = _daemons(persistent.runtime)
    doomed = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", "-H", "testbox", "--", "sleep", "34.6"],
        env=persistent.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.kill(_session_sshd_of(("sleep", "34.6")), signal.SIGKILL)
    _, err = doomed.communicate(timeout=30)
    assert doomed.returncode == 255, err
    for pid in pids_with_argv("sleep", "34.6"):
        os.kill(pid, signal.SIGKILL)
    back = persistent("run", "-H", "testbox", "--", "echo", "back")
    assert back.returncode == 0 and back.stdout == b"back\n", back.stderr
    assert _daemons(persistent.runtime) == [daemon]


def test_a_report_records_the_command_line_the_user_typed(persistent, tmp_path):
    """Through the daemon, the report's command line is the client's, not the daemon's argv."""
    persistent("run", "-H", "testbox", "--", "true")  # the daemon now serves what follows
    report = tmp_path / "r.md"
    words = ["playbook", "locate-eagle", "-H", "testbox", "--var", "search_home=false",
             "--report", str(report)]  # fmt: skip
    persistent(*words)
    assert _daemons(persistent.runtime)
    typed = shlex.join(["remotedbg", *words])
    assert f"- command: `{typed}`" in report.read_text()


def test_each_client_is_served_in_an_environment_of_its_own(persistent, tmp_path):
    """The daemon runs each client's line in an environment of its own (its consoles, -q, the
    words typed): one client's -q leaves the next client's notes alone."""
    source = tmp_path / "notes.txt"
    source.write_text("hello\n")
    quiet = persistent("-q", "get", "-H", "testbox", str(source), str(tmp_path / "quiet.txt"))
    assert quiet.returncode == 0 and quiet.stderr == b""
    [daemon] = _daemons(persistent.runtime)
    loud = persistent("get", "-H", "testbox", str(source), str(tmp_path / "loud.txt"))
    assert loud.returncode == 0 and b"loud.txt" in loud.stderr  # its note: not quieted
    assert (tmp_path / "loud.txt").read_text() == "hello\n"
    assert _daemons(persistent.runtime) == [daemon]
    [listed] = json.loads(persistent("sessions", "--json").stdout)["sessions"]
    assert listed["commands"] == 2  # both lines were served by the one daemon


# -- the first command's connection, opened while the daemon loads the command's code ---------
@pytest.mark.parametrize(
    "how, expected",
    [
        ("defaults", "used"),
        ("flag", "used"),  # --connect-timeout on the command line
        ("variable", "used"),  # REMOTEDBG_CONNECT_TIMEOUT, read as the CLI reads it
        ("config-file", "used"),  # connect_timeout in config.toml
        ("identity", "none"),  # -i: an option the client does not read, so nothing is guessed
    ],
)
def test_the_first_command_finds_its_connection_opened_ahead(
    persistent, box, tmp_path, how, expected
):
    """The daemon starts the first command's connection and executor from the options the
    client read, while it loads the command's code; the command is then served on it (one
    connection, not two), its output as without it."""
    extra: list[str] = []
    env: dict[str, str] = {}
    if how == "flag":
        extra = ["--connect-timeout", "7"]
    elif how == "variable":
        env = {"REMOTEDBG_CONNECT_TIMEOUT": "7"}
    elif how == "config-file":
        (tmp_path / "config.toml").write_text("connect_timeout = 7\n")
        env = {"REMOTEDBG_CONFIG": str(tmp_path / "config.toml")}
    elif how == "identity":
        extra = ["-i", str(box.server.user_key)]
    first = persistent("run", "-H", "testbox", *extra, "--", "echo", "hello", **env)
    assert first.returncode == 0 and first.stdout == b"hello\n", first.stderr
    [listed] = json.loads(persistent("sessions", "--json", **env).stdout)["sessions"]
    assert listed["opened_ahead"] == expected and listed["commands"] == 1
    again = persistent("run", "-H", "testbox", *extra, "--", "echo", "again", **env)
    assert again.stdout == b"again\n"
    assert len(_daemons(persistent.runtime)) == 1


def _local_executors() -> list[int]:
    """This process's children that are remotedbg executors (a `local` session's), whichever
    thread started them (the keeper opens ahead in a thread of its own: its children are
    listed under that thread's task, not the main thread's)."""
    children = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            children += (task / "children").read_text().split()
        except OSError:
            continue  # a thread that ended meanwhile
    return [int(c) for c in children if b"RDBG-AGENT" in _cmdline(int(c))]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_a_connection_opened_ahead_serves_only_the_options_it_was_opened_with():
    """Keeper: the session opened ahead is the command's when the options agree (the
    per-command --timeout aside), its executor already started; with other options it is
    closed (its executor gone) and the command gets a session of its own."""
    from remotedbg.persist.daemon import Keeper
    from remotedbg.session import ConnectOptions

    before = set(_local_executors())
    keeper = Keeper()
    try:
        keeper.open_ahead(ConnectOptions(host="local"))
        ahead = keeper.ahead
        session = keeper(ConnectOptions(host="local", timeout=5))
        assert keeper.ahead_outcome == "used" and session is ahead.session
        assert len(set(_local_executors()) - before) == 1  # started ahead, before any call
        assert session.run("echo kept").stdout == "kept\n"
    finally:
        keeper.close()
    assert wait_for(lambda: not set(_local_executors()) - before, timeout=5)

    keeper = Keeper()
    try:
        keeper.open_ahead(ConnectOptions(host="local", connect_timeout=3))
        ahead = keeper.ahead
        session = keeper(ConnectOptions(host="local"))
        assert keeper.ahead_outcome == "closed" and session is not ahead.session
        assert wait_for(lambda: not set(_local_executors()) - before, timeout=5)  # closed
        assert session.run("echo own").stdout == "own\n"
    finally:
        keeper.close()


def test_a_connection_opened_ahead_that_failed_fails_its_command_as_opening_it_would():
    from remotedbg.errors import ConnectionFailed
    from remotedbg.persist.daemon import Keeper
    from remotedbg.session import ConnectOptions, open_session
    from tests.sshd import free_port

    refused = ConnectOptions(host=f"127.0.0.1:{free_port()}", connect_timeout=2)
    with pytest.raises(ConnectionFailed) as direct:
        open_session(refused)
    keeper = Keeper()
    keeper.open_ahead(refused)
    with pytest.raises(ConnectionFailed) as served:
        keeper(refused)
    assert keeper.ahead_outcome == "failed" and str(served.value) == str(direct.value)
    assert not keeper.sessions


def test_a_script_with_stdin_a_pipe_or_a_file_is_served_by_the_daemon(persistent, tmp_path):
    """From a script stdin is a pipe or a file (xargs, cron, subprocess): every command that does
    not read stdin is served by the daemon all the same (issue 47), and so is `run` given
    input: its stdin itself is handed to the daemon (SCM_RIGHTS), and the remote command gets
    every byte."""
    (tmp_path / "notes.txt").write_text("hello\n")
    fed = tmp_path / "fed.txt"
    fed.write_bytes(b"abc\n" * 1000)

    def with_stdin(args: list[str], how: str) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "remotedbg", *args]
        if how == "pipe":
            return subprocess.run(argv, input=fed.read_bytes(), capture_output=True,
                                  timeout=60, env=persistent.env)  # fmt: skip
        with open(fed, "rb") as handle:
            return subprocess.run(argv, stdin=handle, capture_output=True, timeout=60,
                                  env=persistent.env)  # fmt: skip

    def served() -> int:
        listed = json.loads(persistent("sessions", "--json").stdout)["sessions"]
        return sum(s["commands"] for s in listed)

    assert persistent("run", "-H", "testbox", "--", "true").returncode == 0
    count = served()
    for args in (["cat", "-H", "testbox", str(tmp_path / "notes.txt")],
                 ["run", "-H", "testbox", "-n", "--", "echo", "x"],
                 ["glob", "-H", "testbox", str(tmp_path / "*.txt")]):  # fmt: skip
        cold = persistent(args[0], "--no-persist", *args[1:])
        for how in ("pipe", "file"):
            done = with_stdin(args, how)
            assert (done.returncode, done.stdout) == (cold.returncode, cold.stdout), (args, how)
            assert served() == count + 1, (args, how, "not served by the daemon")
            count += 1
    # `run` reads its input: the client hands its stdin to the daemon, which streams it
    for how in ("pipe", "file"):
        counted = with_stdin(["run", "-H", "testbox", "--", "wc", "-c"], how)
        assert counted.returncode == 0 and counted.stdout.split() == [b"4000"], how
        assert served() == count + 1, (how, "not served by the daemon")
        count += 1
