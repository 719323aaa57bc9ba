"""Every login shell a box may give its users (sh/dash, bash, rbash, zsh, fish, tcsh, mksh): a
command's exit status and output come through exactly, login noise never reaches stdout, the
checks work, and nothing of a command outlives it, however the client ends (timeout, Ctrl-C,
SIGTERM, SIGKILL, or a connection gone silent).

Each shell gets a user of its own on a real sshd (tests/unprivileged.py), whose start-up files
print a banner on stdout and stderr: bash reads ~/.bashrc for an ssh command (bash's shell.c,
run_startup_files: "running under sshd"), zsh reads ~/.zshenv for every shell (zsh's init.c,
run_init_scripts), fish its config.fish for every shell, tcsh ~/.tcshrc for every shell
(tcsh's sh.c, srccat of .tcshrc unless -f); dash and mksh read nothing for `-c`.
The shells come from the apt line of tests/run.sh; a shell this machine lacks fails its tests.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.procs import wait_for
from tests.sshd import make_sshd
from tests.unprivileged import processes_of, shared_dir, throwaway_user

SHELLS = ["dash", "bash", "rbash", "zsh", "fish", "tcsh", "mksh"]
BANNER = "WELCOME-TO-THE-GPU-BOX"
RC_FILES = {
    "bash": [".bashrc"],
    "rbash": [".bashrc"],
    "zsh": [".zshenv"],
    "fish": [".config/fish/config.fish"],
    "tcsh": [".tcshrc"],
}
SILENCE_LIMIT = 15.0  # remotedbg/agent/executor.py CLIENT_SILENCE


def _shell_path(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/bin:/usr/bin")
    assert found, f"{name} is not installed (tests/run.sh installs it)"
    return found


@pytest.fixture(scope="module")
def shells(ssh_world):
    """One sshd, one user per login shell, an ssh_config alias `as-SHELL` for each."""
    if os.geteuid() != 0:
        pytest.fail("users of their own need root (the suite's machine runs as root)")
    with shared_dir() as root, _users(root) as users:
        server = make_sshd(root / "sshd", ssh_world.user_key)
        (root / "sshd").chmod(0o755)  # sshd reads authorized_keys as the user logging in
        blocks = []
        for name, user in users.items():
            blocks.append(
                "\n".join(
                    [
                        f"Host as-{name}",
                        "  HostName 127.0.0.1",
                        f"  Port {server.port}",
                        f"  User {user.pw_name}",
                        f"  IdentityFile {ssh_world.user_key}",
                        f"  UserKnownHostsFile {root / 'known_hosts'}",
                        "  StrictHostKeyChecking yes",
                        "  BatchMode yes",
                    ]
                )
            )
        config = root / "ssh_config"
        config.write_text("\n\n".join(blocks) + "\n")
        (root / "known_hosts").write_text(server.host_key_line)
        try:
            yield {"config": config, "users": users, "root": root, "server": server}
        finally:
            server.stop()


class _users:
    """A throwaway user per shell, with start-up files that print the banner."""

    def __init__(self, homes: Path) -> None:
        self.homes = homes
        self.contexts: list = []

    def __enter__(self) -> dict:
        users = {}
        for index, name in enumerate(SHELLS):
            context = throwaway_user(f"rsh{index}", self.homes, _shell_path(name))
            user = context.__enter__()
            self.contexts.append(context)
            home = Path(user.pw_dir)
            for rc in RC_FILES.get(name, []):
                path = home / rc
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"echo {BANNER}\necho {BANNER}-ERR >&2\n")
                for part in [path, *path.relative_to(home).parents]:
                    os.chown(home / part, user.pw_uid, user.pw_gid)
            users[name] = user
        # a login that takes 40 s in its ~/.bashrc (a hung NFS home, a slow conda init)
        context = throwaway_user("rshslow", self.homes, _shell_path("bash"))
        slow = context.__enter__()
        self.contexts.append(context)
        rc = Path(slow.pw_dir) / ".bashrc"
        rc.write_text("sleep 40\n")
        os.chown(rc, slow.pw_uid, slow.pw_gid)
        users["slow"] = slow
        return users

    def __exit__(self, *exc: object) -> None:
        for context in reversed(self.contexts):
            context.__exit__(None, None, None)


def _env(shells, tmp_path) -> dict:
    return dict(
        os.environ,
        REMOTEDBG_SSH_CONFIG=str(shells["config"]),
        XDG_STATE_HOME=str(tmp_path / "state"),
        REMOTEDBG_PERSIST="0",
        COLUMNS="200",
    )


def _cli(shells, tmp_path, *args, timeout=60, input=None):
    return subprocess.run(
        [sys.executable, "-m", "remotedbg", *args],
        capture_output=True,
        timeout=timeout,
        env=_env(shells, tmp_path),
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


def _sleeps(uid: int, token: str) -> list[str]:
    return [line for line in processes_of(uid) if token in line]


@pytest.mark.parametrize("shell", SHELLS)
def test_exit_status_and_output_come_through_exactly(shells, tmp_path, shell):
    failed = _cli(shells, tmp_path, "run", "-H", f"as-{shell}", "--", "false")
    assert failed.returncode == 1, failed.stderr
    said = _cli(
        shells, tmp_path, "run", "-H", f"as-{shell}", "--",
        "sh", "-c", "echo \"it's $1\"; echo to-err >&2; exit 3", "x", "a b",
    )  # fmt: skip
    assert said.returncode == 3, said.stderr
    assert said.stdout == b"it's a b\n"  # no banner, no marker line
    assert BANNER.encode() not in said.stderr
    piped = _cli(shells, tmp_path, "run", "-H", f"as-{shell}", "--", "cat", input=b"in\n")
    assert (piped.returncode, piped.stdout) == (0, b"in\n"), piped.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_checks_run_on_every_login_shell(shells, tmp_path, shell):
    import json

    folder = Path(shells["root"]) / f"files-{shell}"
    folder.mkdir(exist_ok=True)
    (folder / "a.py").write_text("")
    folder.chmod(0o755)
    found = _cli(shells, tmp_path, "glob", "-H", f"as-{shell}", "--json", str(folder / "*.py"))
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["matches"] == [str(folder / "a.py")]


def _start_sleep(shells, tmp_path, shell, token, *extra):
    uid = shells["users"][shell].pw_uid
    client = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", *extra, "-H", f"as-{shell}", "--",
         "sh", "-c", f"sleep 300; echo {token}"],
        env=_env(shells, tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert wait_for(lambda: _sleeps(uid, token), timeout=20), "the remote command never started"
    return client, uid


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("how", ["timeout", "SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"])
def test_nothing_outlives_the_command(shells, tmp_path, shell, how):
    token = f"rdbg-{how}-{shell}-{os.getpid()}"
    extra = ("--timeout", "2") if how == "timeout" else ()
    client, uid = _start_sleep(shells, tmp_path, shell, token, *extra)
    try:
        if how == "timeout":
            client.wait(timeout=20)  # the deadline passed: measured from the client's exit
        else:
            client.send_signal(getattr(signal, how))
        ended = time.monotonic()
        assert wait_for(lambda: not _sleeps(uid, token), timeout=5.0, interval=0.005), (
            f"the remote command outlived the client ({how}, {shell})"
        )
        seconds = time.monotonic() - ended
        print(f"{shell} {how}: box clean {seconds:.3f} s after the {how}")
        client.wait(timeout=20)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    stderr = client.stderr.read()
    if how == "timeout":
        assert client.returncode == 255
        assert len(stderr.strip().splitlines()) == 1 and b"timed out" in stderr
    if how == "SIGINT":
        assert client.returncode == 130


@pytest.mark.parametrize("shell", ["dash", "tcsh"])
def test_a_silent_client_is_taken_for_a_cut_connection(shells, tmp_path, shell):
    """A stopped client sends nothing, as a cut cable does (sshd does not notice: no
    ClientAliveInterval): the executor stops the command once it has heard nothing for
    CLIENT_SILENCE seconds."""
    token = f"rdbg-cut-{shell}-{os.getpid()}"
    client, uid = _start_sleep(shells, tmp_path, shell, token)
    try:
        client.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        assert wait_for(lambda: not _sleeps(uid, token), timeout=SILENCE_LIMIT + 10)
        seconds = time.monotonic() - stopped
        print(f"{shell} silent client: box clean {seconds:.2f} s after it went silent")
        assert seconds >= SILENCE_LIMIT - 1  # not stopped while the client was still there
    finally:
        client.kill()
        client.send_signal(signal.SIGCONT)
        client.wait()


def test_a_deleted_working_directory_is_no_traceback(shells, tmp_path):
    """Run from a directory removed under it, with persistent sessions on: the command runs
    (without a daemon, which could not enter that directory), no FileNotFoundError."""
    gone = tmp_path / "gone"
    gone.mkdir()
    env = _env(shells, tmp_path) | {
        "REMOTEDBG_PERSIST": "600",
        "REMOTEDBG_RUNTIME_DIR": str(tmp_path / "run"),
    }
    script = f"import os, runpy, sys; os.chdir({str(gone)!r}); os.rmdir({str(gone)!r}); " \
        "sys.argv = ['remotedbg', 'run', '-H', 'as-dash', '--', 'echo', 'ran']; " \
        "runpy.run_module('remotedbg', run_name='__main__')"  # fmt: skip
    try:
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, env=env, timeout=60,
            stdin=subprocess.DEVNULL, cwd=tmp_path,
        )  # fmt: skip
        assert (result.returncode, result.stdout) == (0, b"ran\n"), result.stderr
        assert b"Traceback" not in result.stderr
    finally:
        subprocess.run(
            [sys.executable, "-m", "remotedbg", "sessions", "--stop"], env=env,
            capture_output=True, timeout=30, cwd=tmp_path,
        )  # fmt: skip


def _sshd_children(listener: int) -> list[int]:
    """The sshd processes serving connections of the listener (its descendants named sshd)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and Path(f"/proc/{entry}/comm").read_text().strip() == "sshd":
                parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().split()[3])
        except (OSError, ValueError, IndexError):
            continue
    found, frontier = [], {listener}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier}
        found += sorted(frontier)
    return found


def test_a_stopped_sshd_costs_one_timeout_then_the_daemon_reconnects(shells, tmp_path):
    """The sshd serving a persistent session's connection SIGSTOPped (TCP stays up, nothing
    answers): the next command gives up at its --timeout, and the one after it gets a fresh
    connection instead of the wedged one."""
    env = _env(shells, tmp_path) | {
        "REMOTEDBG_PERSIST": "600",
        "REMOTEDBG_RUNTIME_DIR": str(tmp_path / "run"),
    }

    def run(*words: str) -> tuple[subprocess.CompletedProcess, float]:
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "remotedbg", "run", "-H", "as-dash", "--timeout", "5",
             "--connect-timeout", "5", "--", *words],
            capture_output=True, env=env, timeout=90, stdin=subprocess.DEVNULL, cwd=tmp_path,
        )  # fmt: skip
        return done, time.monotonic() - start

    stopped: list[int] = []
    try:
        first, _ = run("echo", "a")
        assert (first.returncode, first.stdout) == (0, b"a\n"), first.stderr
        stopped = _sshd_children(shells["server"].process.pid)
        assert stopped, "no sshd serving the daemon's connection"
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        wedged, seconds = run("echo", "b")
        print(f"wedged sshd: the command gave up after {seconds:.1f} s")
        assert wedged.returncode == 255 and len(wedged.stderr.strip().splitlines()) == 1
        assert seconds < 5 + 2 + 3  # --timeout, the kill's STOP_WAIT, start-up
        again, seconds = run("echo", "c")
        print(f"next command, reconnected: {seconds:.1f} s")
        assert (again.returncode, again.stdout) == (0, b"c\n"), again.stderr
        assert seconds < 5 + 3
    finally:
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        subprocess.run(
            [sys.executable, "-m", "remotedbg", "sessions", "--stop"], env=env,
            capture_output=True, timeout=30, cwd=tmp_path,
        )  # fmt: skip


def test_a_slow_login_is_held_to_the_timeout_and_stopped(shells, tmp_path):
    """A 40 s login with --timeout 3: one line, exit 255, about 3 s, and the login's own
    `sleep 40` stopped with it (sshd's "signal" request reaches the session's group)."""
    uid = shells["users"]["slow"].pw_uid
    start = time.monotonic()
    _cli(shells, tmp_path, "run", "-H", "as-dash", "--", "true")
    baseline = time.monotonic() - start  # start-up, connection, a command: on this machine
    start = time.monotonic()
    result = _cli(shells, tmp_path, "run", "-H", "as-slow", "--timeout", "3", "--", "echo", "x")
    seconds = time.monotonic() - start
    print(f"40 s login, --timeout 3: gave up after {seconds:.1f} s ({baseline:.1f} s a command)")
    assert result.returncode == 255 and len(result.stderr.strip().splitlines()) == 1
    assert b"within 3s" in result.stderr
    assert seconds < baseline + 3 + 2
    assert wait_for(lambda: not _sleeps(uid, "sleep 40"), timeout=3.0), "the login lived on"


def test_pulls_work_on_a_server_with_one_session_per_connection(ssh_world, tmp_path):
    """`MaxSessions 1` (sshd_config(5)): the executor holds the connection's only session, so
    a bulk pull's channel of its own is refused (ChannelException 'Connect failed'); the pull
    goes through the executor instead, every time, byte for byte."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    from tests.sshd import write_client_config

    server = make_sshd(tmp_path / "sshd", ssh_world.user_key, extra_config=("MaxSessions 1",))
    try:
        config = write_client_config(tmp_path / "ssh_config", {"one": server}, tmp_path / "kh")
        ckpt = tmp_path / "big"
        ckpt.mkdir()
        weights = np.arange(5 << 20, dtype=np.float32)  # 20 MiB: past the bulk threshold
        save_file({"w": weights}, str(ckpt / "model.safetensors"))
        for attempt in range(3):
            out = tmp_path / f"w{attempt}.safetensors"
            result = subprocess.run(
                [sys.executable, "-m", "remotedbg", "tensors", "pull", "--ssh-config",
                 str(config), "-H", "one", str(ckpt), "w", "-o", str(out)],
                capture_output=True, timeout=120, stdin=subprocess.DEVNULL,
                env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"),
                         REMOTEDBG_PERSIST="0"),
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
            assert np.array_equal(load_file(str(out))["w"], weights)
    finally:
        server.stop()


def test_an_edited_ssh_config_makes_another_daemon_without_a_local_ssh(tmp_path, monkeypatch):
    """No OpenSSH client on PATH (no `ssh -G` to resolve the host): editing the ssh_config's
    User still gives the command line another daemon's socket, never the old connection's."""
    from remotedbg.persist import protocol

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert shutil.which("ssh") is None
    config = tmp_path / "ssh_config"
    config.write_text("Host box\n  HostName 127.0.0.1\n  User alice\n")
    words = ["run", "-H", "box", "--", "true"]
    before = protocol.socket_key(words, "box", str(config), "1")
    assert protocol.socket_key(words, "box", str(config), "1") == before
    config.write_text("Host box\n  HostName 127.0.0.1\n  User bob\n")
    assert protocol.socket_key(words, "box", str(config), "1") != before


def test_a_forcecommand_that_ignores_the_command_is_one_line_never_0(ssh_world, tmp_path):
    """`ForceCommand` (sshd_config(5)) runs its own program instead of ours: remotedbg says so
    in one line and exits 255 (`run`) or 4 (a check), never 0 as if the command had run."""
    from tests.sshd import write_client_config

    server = make_sshd(
        tmp_path / "sshd", ssh_world.user_key, extra_config=("ForceCommand echo restricted",)
    )
    try:
        config = write_client_config(tmp_path / "ssh_config", {"forced": server}, tmp_path / "kh")
        env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), REMOTEDBG_PERSIST="0")
        for words, code in ((["run", "--", "false"], 255), (["glob", str(tmp_path / "*")], 4)):
            result = subprocess.run(
                [sys.executable, "-m", "remotedbg", words[0], "--ssh-config", str(config),
                 "-H", "forced", *words[1:]],
                capture_output=True, timeout=60, stdin=subprocess.DEVNULL, env=env,
            )  # fmt: skip
            assert result.returncode == code, result.stderr
            assert len(result.stderr.strip().splitlines()) == 1
            assert b"ForceCommand" in result.stderr
    finally:
        server.stop()


FLOODER = r'''#!/usr/bin/python3
# A remote "python3" that answers like remotedbg's executor, then, asked to run a command,
# announces a frame of MODE bytes and floods: 4 GiB (length 0xFFFFFFFF), or endless small
# frames of another request ("small").
import json, os, struct, sys, zlib
def exactly(n):
    data = b""
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data
line = b""
while not line.endswith(b"\n"):
    line += exactly(1)
bundle = json.loads(zlib.decompress(exactly(struct.unpack("!Q", exactly(8))[0])))
out = os.fdopen(1, "wb", buffering=0)
out.write(bundle["args"]["marker"].encode())
hello = json.dumps({"pid": os.getpid(), "ready": True}).encode()
out.write(struct.pack("!BII", ord("P"), 0, len(hello)) + hello)
kind, rid, length = struct.unpack("!BII", exactly(9))
exactly(length)
try:
    if os.environ.get("RDBG_FLOOD") == "small":
        frame = struct.pack("!BII", ord("O"), rid + 1000, 65536) + bytes(65536)
        while True:
            out.write(frame)
    out.write(struct.pack("!BII", ord("O"), rid, 0xFFFFFFFF))
    while True:
        out.write(bytes(1 << 16))
except OSError:
    pass
'''


@pytest.mark.parametrize("flood", ["huge", "small"])
def test_a_flooding_executor_is_bounded_in_time_and_memory(ssh_world, tmp_path, flood):
    """The remote end of the protocol announces a 4 GiB frame and floods, or floods endless
    frames of another request: `run --timeout 5` ends within its deadline with one line, and
    the client never holds more than a frame's bound (MAX_FRAME) of it."""
    import dataclasses

    with shared_dir() as root, throwaway_user("rshfl", root, "/bin/sh") as user:
        fake = root / "bin"  # first on the PATH of a user whose login reads no rc file
        fake.mkdir()
        (fake / "python3").write_text(FLOODER)
        (fake / "python3").chmod(0o755)
        server = make_sshd(
            root / "sshd",
            ssh_world.user_key,
            extra_config=(f"SetEnv PATH={fake}:/usr/bin:/bin RDBG_FLOOD={flood}",),
        )
        (root / "sshd").chmod(0o755)
        try:
            _flood(dataclasses.replace(server, user=user.pw_name), tmp_path, flood)
        finally:
            server.stop()


def _flood(server, tmp_path, flood):
    """`run --timeout 5` against the flooder, watched from a process of its own (peak RSS)."""
    from tests.sshd import write_client_config

    config = write_client_config(tmp_path / "ssh_config", {"flood": server}, tmp_path / "kh")
    code = (
        "import resource, subprocess, sys, time; start = time.monotonic(); "
        f"done = subprocess.run([sys.executable, '-m', 'remotedbg', 'run', '--ssh-config', "
        f"{str(config)!r}, '-H', 'flood', '--timeout', '5', '--', 'echo', 'hi'], "
        "capture_output=True, stdin=subprocess.DEVNULL); "
        "print(done.returncode, round(time.monotonic() - start, 2), "
        "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "sys.stderr.buffer.write(done.stderr)"
    )
    watcher = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=90,
        env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), REMOTEDBG_PERSIST="0"),
    )  # fmt: skip
    status, seconds, peak_kib = watcher.stdout.decode().split()
    print(f"{flood} flood: exit {status} after {float(seconds):.1f} s, peak {peak_kib} KiB")
    assert int(status) == 255, watcher.stderr
    assert len(watcher.stderr.strip().splitlines()) == 1
    # --timeout, the kill's wait, start-up on this loaded box; the old client flooded on > 60 s
    assert float(seconds) < 30
    assert int(peak_kib) < 200 * 1024  # MAX_FRAME is 64 MiB; the old client took ~400 MB


@pytest.mark.parametrize("shell", ["dash", "rbash", "fish", "tcsh"])
def test_a_bulk_pull_works_on_every_login_shell(shells, tmp_path, shell):
    """A 20 MiB tensor (past the bulk threshold): its own channel under an sh-like login
    shell, through the executor under rbash (no `>&2`), fish and tcsh; byte for byte."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    ckpt = Path(shells["root"]) / f"pull-{shell}"
    ckpt.mkdir(exist_ok=True)
    weights = np.arange(5 << 20, dtype=np.float32)
    save_file({"w": weights}, str(ckpt / "model.safetensors"))
    ckpt.chmod(0o755)
    (ckpt / "model.safetensors").chmod(0o644)
    out = tmp_path / "w.safetensors"
    result = _cli(
        shells, tmp_path, "tensors", "pull", "-H", f"as-{shell}", str(ckpt), "w", "-o", str(out)
    )
    assert result.returncode == 0, result.stderr
    assert np.array_equal(load_file(str(out))["w"], weights)
