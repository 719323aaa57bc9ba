"""Session behaviour against a real sshd: reuse, timeouts, caps, drops, SFTP-less servers."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from remotedbg.errors import ConnectionFailed, Interrupted, RemoteTimeout
from remotedbg.remote import calls
from remotedbg.session import ConnectOptions, open_session
from tests.procs import parent_of, pids_with_argv, wait_for
from tests.sshd import make_sshd, write_client_config


def test_one_connection_serves_many_commands(box):
    with box.session() as session:
        first = session._connection.client.get_transport()
        results = [session.run(["echo", str(i)]) for i in range(5)]
        assert [r.stdout for r in results] == [f"{i}\n" for i in range(5)]
        assert session._connection.client.get_transport() is first
        assert all(r.exit_status == 0 and r.duration > 0 for r in results)


def test_exit_status_stdout_stderr_are_separate(box):
    with box.session() as session:
        result = session.run("echo out; echo err >&2; exit 7")
    assert (result.exit_status, result.stdout, result.stderr) == (7, "out\n", "err\n")
    assert result.stdout_bytes == b"out\n"


def test_cwd_and_env_are_quoted(box, tmp_path):
    odd = tmp_path / "dir with 'quotes' and $x"
    odd.mkdir()
    with box.session() as session:
        result = session.run('pwd; printf %s "$WEIRD"', cwd=str(odd), env={"WEIRD": "a b;$(c)"})
    assert result.stdout == f"{odd}\na b;$(c)"


def test_streaming_delivers_chunks_live(box):
    chunks = []
    with box.session() as session:
        session.run("echo one; sleep 0.3; echo two", stream=lambda n, c: chunks.append((n, c)))
    assert b"".join(c for _, c in chunks) == b"one\ntwo\n"
    assert len(chunks) >= 2


def test_timeout_stops_the_remote_process(box):
    with box.session() as session:
        start = time.monotonic()
        with pytest.raises(RemoteTimeout):
            session.run(["sh", "-c", "sleep 31.25 & sleep 31.5; wait"], timeout=1)
        assert time.monotonic() - start < 2.5
    assert wait_for(
        lambda: not pids_with_argv("sleep", "31.25") and not pids_with_argv("sleep", "31.5")
    )


def test_output_cap_truncates_and_stops(box):
    with box.session(max_output=100_000) as session:
        result = session.run(["yes", "remotedbg-cap"])
    assert result.truncated and result.exit_status is None
    assert len(result.stdout_bytes) == 100_000
    assert wait_for(lambda: not pids_with_argv("yes", "remotedbg-cap"))


def test_keyboard_interrupt_stops_the_remote_process(box):
    with box.session() as session:
        timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        start = time.monotonic()
        with pytest.raises(Interrupted):
            session.run(["sleep", "32.5"])
        assert time.monotonic() - start < 2
    assert wait_for(lambda: not pids_with_argv("sleep", "32.5"))


@pytest.fixture
def private_box(ssh_world, tmp_path):
    """An sshd of this test's own, which the test may kill."""
    server = make_sshd(tmp_path / "sshd", ssh_world.user_key)
    config = write_client_config(tmp_path / "config", {"mine": server}, tmp_path / "known_hosts")
    yield server, ConnectOptions(host="mine", ssh_config=str(config), timeout=30)
    server.stop()


def _session_sshd_of(argv: tuple[str, ...]) -> int:
    """The sshd process serving the session that runs `argv` (walk up from the command)."""
    pids = []
    assert wait_for(lambda: bool(pids.extend(pids_with_argv(*argv)) or pids))
    pid = pids[0]
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if handle.read().startswith(b"sshd"):
                return pid
        pid = parent_of(pid)
    raise AssertionError("no sshd above the command")


def test_killed_sshd_mid_command_fails_fast(private_box):
    server, options = private_box
    session = open_session(options)
    killer = threading.Thread(target=lambda: os.kill(_session_sshd_of(("sleep", "33.5")), 9))
    killer.start()
    start = time.monotonic()
    with pytest.raises(ConnectionFailed):
        session.run(["sleep", "33.5"])
    killer.join()
    assert time.monotonic() - start < 5
    session.close()
    for pid in pids_with_argv("sleep", "33.5"):  # orphaned by the killed sshd, as on a real box
        os.kill(pid, 9)


def test_dropped_transport_reconnects_on_next_command(private_box):
    server, options = private_box
    session = open_session(options)
    assert session.run("true").exit_status == 0
    old = session._connection.client.get_transport()

    # drop the connection from the server side between two commands
    def doomed() -> None:
        with pytest.raises(ConnectionFailed):
            session.run(["sleep", "34.5"], timeout=10)

    thread = threading.Thread(target=doomed)
    thread.start()
    os.kill(_session_sshd_of(("sleep", "34.5")), 9)
    thread.join()
    for pid in pids_with_argv("sleep", "34.5"):
        os.kill(pid, 9)
    assert session.run(["echo", "back"]).stdout == "back\n"
    assert session._connection.client.get_transport() is not old
    session.close()


def test_server_without_sftp_still_runs_commands(ssh_world):
    with ssh_world.nosftp.session() as session:
        assert not session.has_sftp
        assert session.run(["echo", "fine"]).stdout == "fine\n"


def test_server_with_sftp_offers_it(box):
    with box.session() as session:
        assert session.has_sftp


def test_local_target_uses_the_same_contract(tmp_path):
    with open_session(ConnectOptions(host="local", timeout=5)) as session:
        result = session.run("echo $((6*7)); exit 3", cwd=str(tmp_path))
        assert (result.exit_status, result.stdout) == (3, "42\n")
        with pytest.raises(RemoteTimeout):
            session.run(["sleep", "35.5"], timeout=0.5)
    assert wait_for(lambda: not pids_with_argv("sleep", "35.5"))


def test_local_agent_calls_share_one_executor_that_leaves_with_the_session():
    """--host local ships the agent once: every call of the session goes to one executor (the
    sweep's audits made a process and sent the bundle for each), which ends with the session."""
    from remotedbg.remote import pyagent

    session = open_session(ConnectOptions(host="local", timeout=30))
    info = pyagent.call(session, calls.Describe())
    executor = session.executor()
    assert info["python"] and executor is not None and os.path.exists(f"/proc/{executor.pid}")
    assert pyagent.call(session, calls.Describe()) == info
    assert session.executor() is executor
    session.close()
    assert wait_for(lambda: not os.path.exists(f"/proc/{executor.pid}"))


def test_unreachable_host_is_a_connection_failure(tmp_path):
    with pytest.raises(ConnectionFailed) as error:
        open_session(ConnectOptions(host="127.0.0.1:1", ssh_config=None, connect_timeout=3))
    assert "cannot connect" in str(error.value)


def test_resident_executor_serves_commands_and_calls_then_leaves(box):
    from remotedbg.remote import pyagent

    session = box.session()
    assert session.run(["echo", "one"]).stdout == "one\n"
    executor = session.executor()
    assert executor is not None and os.path.exists(f"/proc/{executor.pid}")
    info = pyagent.call(session, calls.Describe())
    assert info["python"] and session.run(["echo", "two"]).stdout == "two\n"
    assert session.executor() is executor  # reused, not restarted
    session.close()
    assert wait_for(lambda: not os.path.exists(f"/proc/{executor.pid}"))


def test_without_a_remote_python_commands_use_plain_channels(box, monkeypatch):
    from remotedbg.session import agent_bundle

    monkeypatch.setattr(agent_bundle, "DEFAULT_PYTHON", "no-such-python3")
    with box.session() as session:
        result = session.run("echo fallback; exit 4")
        assert (result.exit_status, result.stdout) == (4, "fallback\n")
        assert session.executor() is None
        with pytest.raises(RemoteTimeout):
            session.run(["sleep", "38.5"], timeout=0.5)
    assert wait_for(lambda: not pids_with_argv("sleep", "38.5"))


def test_agent_calls_obey_the_session_timeout(box, tmp_path):
    from remotedbg.remote.primitives import Remote

    with box.session(timeout=0.5) as session:
        start = time.monotonic()
        with pytest.raises(RemoteTimeout):
            Remote(session).call(calls.Snippet(code="import time; time.sleep(3)"))
        assert time.monotonic() - start < 2
        assert session.run(["echo", "still", "usable"]).stdout == "still usable\n"


def test_aes_gcm_is_negotiated_first_when_the_server_offers_it(box, tmp_path):
    """OpenSSH offers aes128-gcm@openssh.com by default (sshd_config(5) Ciphers); paramiko lists
    it last, remotedbg first (bulk reads move about twice the bytes per CPU second). A server
    that does not offer it still connects, with the next cipher."""
    with box.session() as session:
        transport = session._transport()
        assert transport.local_cipher == transport.remote_cipher == "aes128-gcm@openssh.com"
    from tests.sshd import make_sshd, write_client_config

    server = make_sshd(tmp_path / "ctr", box.server.user_key,
                       extra_config=("Ciphers aes128-ctr,aes256-ctr",))  # fmt: skip
    try:
        config = write_client_config(tmp_path / "ssh_config", {"ctrbox": server},
                                     tmp_path / "known_hosts")  # fmt: skip
        from remotedbg.session import ConnectOptions, open_session

        with open_session(ConnectOptions(host="ctrbox", ssh_config=str(config))) as session:
            assert session.run("echo ok").stdout == "ok\n"
            assert session._transport().local_cipher == "aes128-ctr"
    finally:
        server.stop()


# Python 3.6 as the boot meets it: the real interpreter, its version_info set to 3.6 before the
# boot code runs (no 3.6 is installed here; the boot's check is all that differs).
OLD_PYTHON = """#!/bin/sh
while [ "$1" != -c ]; do shift; done
exec python3 -c 'import sys; sys.version_info = (3, 6, 15, "final", 0); exec(sys.argv[1])' "$2"
"""


def test_an_old_remote_python_is_named_with_the_version_needed(cli, tmp_path):
    fake = tmp_path / "python3.6"
    fake.write_text(OLD_PYTHON)
    fake.chmod(0o755)
    result = cli("tensors", "ls", "-H", "testbox", "--python", str(fake), str(tmp_path))
    lines = result.stderr.decode().strip().splitlines()
    assert result.returncode == 2, lines
    assert lines == [
        f"remotedbg: testbox: remote {fake} is 3.6; remotedbg needs 3.8+; pass --python PATH"
    ]
