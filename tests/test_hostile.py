"""Boxes that behave badly: a login that prints a banner (or takes seconds), a shard that is a
FIFO. Each gives the right output or a one-line error with its exit code, and leaves no process
of remotedbg behind on the box.

The banner comes from the login's shell start-up, as a `~/.bashrc` `echo` does on shared
clusters: sshd's `SetEnv BASH_ENV=...` makes every bash it starts read the test's script, which
prints only in the shell sshd starts, the one that reads `.bashrc`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.checkpoints import write_eagle3_checkpoint
from tests.procs import wait_for
from tests.sshd import make_sshd, write_client_config

BANNER = "Welcome to GPU box (shared cluster, be nice)"


def _agent_processes(box, port: int | None = None) -> list[int]:
    """Processes of remotedbg's agent (its tag is in argv) that a connection to this test's sshd
    (or the one on `port`) started: their SSH_CONNECTION names its port, also once they are
    orphans. Another suite's agents on the same machine are strangers, never counted."""
    port = f" {box.server.port if port is None else port}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/cmdline").read_bytes()
            if b"RDBG-AGENT" not in raw:
                continue
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(v.startswith(b"SSH_CONNECTION=") and v.endswith(port) for v in environ):
            found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def hostile(ssh_world, tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    login = root / "login.sh"
    # only the shell sshd starts prints, once, as only it reads ~/.bashrc (the scripts it execs,
    # such as a pyenv shim, get BASH_ENV too, but never read .bashrc)
    login.write_text(
        'if [ -z "$RDBG_TEST_LOGIN_DONE" ] && [ "$(cat /proc/$PPID/comm)" = sshd ]; then\n'
        "  export RDBG_TEST_LOGIN_DONE=1\n"
        f'  echo "{BANNER}"\n'
        '  echo "Last login: yesterday" >&2\n'
        '  [ -n "$RDBG_TEST_SLOW_LOGIN" ] && sleep "$RDBG_TEST_SLOW_LOGIN"\n'
        "fi\n"
        "true\n"
    )
    banner = make_sshd(
        root / "banner", ssh_world.user_key, extra_config=(f"SetEnv BASH_ENV={login}",)
    )
    slow = make_sshd(
        root / "slow",
        ssh_world.user_key,
        extra_config=(f"SetEnv BASH_ENV={login} RDBG_TEST_SLOW_LOGIN=3",),
    )
    config = write_client_config(
        root / "ssh_config", {"bannerbox": banner, "slowbox": slow}, root / "known_hosts"
    )
    try:
        yield {"root": root, "config": config}
    finally:
        banner.stop()
        slow.stop()


def _cli(hostile, *args, timeout=90):
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(hostile["config"]), COLUMNS="200")
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "remotedbg", *args],
        capture_output=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    return result, time.monotonic() - start


def test_a_login_banner_never_reaches_the_output_or_the_protocol(hostile, tmp_path):
    result, _ = _cli(hostile, "run", "-H", "bannerbox", "--", "echo", "hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"hello\n"
    (tmp_path / "a.py").write_text("x = 1\n")
    found, _ = _cli(hostile, "glob", "-H", "bannerbox", "--json", str(tmp_path / "*.py"))
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["matches"] == [str(tmp_path / "a.py")]
    draft = write_eagle3_checkpoint(tmp_path / "draft", 100, 1000, hidden=8)
    check, _ = _cli(hostile, "vocab-check", "-H", "bannerbox", "--json", str(draft))
    assert check.returncode == 0 and json.loads(check.stdout)["summary"]["format"] == "offsets"


def test_a_slow_login_is_paid_once_per_session(hostile, tmp_path):
    """A 3 s login: one CLI invocation runs a 2-command playbook step set within one login."""
    (tmp_path / "b.py").write_text("y = 2\n")
    result, seconds = _cli(hostile, "glob", "-H", "slowbox", "--json", str(tmp_path / "*.py"))
    assert result.returncode == 0, result.stderr
    assert 3 <= seconds < 3 + 5  # the login once, not once per command
    assert BANNER.encode() not in result.stdout


def test_a_fifo_shard_times_out_and_leaves_nothing_running(hostile, box, tmp_path):
    draft = tmp_path / "fifo-draft"
    draft.mkdir()
    (draft / "config.json").write_text('{"architectures": ["LlamaForCausalLMEagle3"]}')
    os.mkfifo(draft / "model.safetensors")  # a read blocks forever: nobody writes
    before = set(_agent_processes(box))
    env_cli = {"REMOTEDBG_SSH_CONFIG": str(box.ssh_config)}
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "remotedbg", "tensors", "ls", "-H", "testbox", "--timeout", "3",
         str(draft / "model.safetensors")],
        capture_output=True, timeout=60, env=dict(os.environ, **env_cli), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    elapsed = time.monotonic() - start
    assert result.returncode == 4, result.stderr
    assert b"timed out" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert elapsed < 3 + 6
    assert wait_for(lambda: not (set(_agent_processes(box)) - before), timeout=3.0), (
        "a remotedbg process was left running on the box"
    )


def test_names_with_escape_sequences_and_newlines_cannot_drive_the_terminal(cli, tmp_path):
    """A tensor and a file named to retitle/clear the terminal or forge a row: shown escaped;
    --json keeps the exact name (escaped as JSON does)."""
    import numpy as np
    from safetensors.numpy import save_file

    evil = "w\x1b]0;pwned\x07\x1b[2J\nforged  F32  [1]"
    ckpt = tmp_path / "evil"
    ckpt.mkdir()
    save_file({evil: np.zeros(1, dtype=np.float32)}, str(ckpt / "model.safetensors"))
    shown = cli("tensors", "ls", "-H", "testbox", str(ckpt))
    assert shown.returncode == 0, shown.stderr
    assert b"\x1b" not in shown.stdout and b"\x07" not in shown.stdout
    assert b"\\e]0;pwned\\x07\\e[2J\\nforged" in shown.stdout
    assert len([line for line in shown.stdout.splitlines() if b"forged" in line]) == 1
    exact = cli("tensors", "ls", "-H", "testbox", "--json", str(ckpt))
    assert json.loads(exact.stdout)["tensors"][0]["name"] == evil
    (tmp_path / "f\x1b[2Jx.py").write_text("")
    found = cli("glob", "-H", "testbox", str(tmp_path / "f*.py"))
    # a listing, even into a pipe, cannot drive whatever terminal it ends on; --json is exact
    assert found.returncode == 0 and b"\x1b" not in found.stdout, found.stderr
    assert found.stdout.splitlines() == [str(tmp_path).encode() + b"/f\\e[2Jx.py"]
    exact = cli("glob", "-H", "testbox", "--json", str(tmp_path / "f*.py"))
    assert json.loads(exact.stdout)["results"][0]["matches"] == [str(tmp_path / "f\x1b[2Jx.py")]


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_nothing_outlives_a_killed_or_interrupted_client(box, tmp_path, how):
    """The client killed with SIGKILL, or interrupted (Ctrl-C), while a check blocks on the box:
    the box is clean within a few seconds."""
    import signal

    fifo = tmp_path / "shard.safetensors"
    os.mkfifo(fifo)
    before = set(_agent_processes(box))
    client = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "tensors", "ls", "-H", "testbox", str(fifo)],
        env=dict(os.environ, REMOTEDBG_SSH_CONFIG=str(box.ssh_config)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # the check is running on the box: its child of the executor exists
        assert wait_for(lambda: len(set(_agent_processes(box)) - before) >= 2, timeout=20)
        client.send_signal(getattr(signal, how))
        client.wait(timeout=15)
        start = time.monotonic()
        assert wait_for(lambda: not (set(_agent_processes(box)) - before), timeout=5.0), (
            f"remotedbg processes left on the box after {how}"
        )
        print(f"box clean {time.monotonic() - start:.2f} s after {how}")
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    if how == "SIGINT":
        assert client.returncode == 130
        assert len(client.stderr.read().strip().splitlines()) == 1


def test_a_huge_declared_d2t_is_judged_from_its_header_not_loaded(cli, tmp_path):
    """A d2t header declaring 10^8 entries (an 800 MB sparse file): never read into memory."""
    from tests.realshape import write_safetensors

    for name, vocab in (("with-vocab", 163840), ("no-vocab", None)):
        ckpt = tmp_path / name
        ckpt.mkdir()
        write_safetensors(ckpt / "model.safetensors", {"d2t": ("I64", [10**8], None)})
        config = {"architectures": ["LlamaForCausalLMEagle3"], "draft_vocab_size": 32000}
        if vocab:
            config["vocab_size"] = vocab
        (ckpt / "config.json").write_text(json.dumps(config))
    start = time.monotonic()
    judged = cli("vocab-check", "-H", "testbox", "--json", str(tmp_path / "with-vocab"))
    assert time.monotonic() - start < 15
    doc = json.loads(judged.stdout)
    assert judged.returncode == 1 and [f["id"] for f in doc["findings"]] == ["d2t-out-of-range"]
    unread = cli("vocab-check", "-H", "testbox", "--json", str(tmp_path / "no-vocab"))
    doc = json.loads(unread.stdout)
    assert unread.returncode == 4 and "more than any vocab" in doc["unknown"][0]["reason"]


def test_a_service_that_is_not_ssh_is_one_line_and_exit_255(tmp_path):
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def answer() -> None:
        for _ in range(3):
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            conn.close()

    threading.Thread(target=answer, daemon=True).start()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "remotedbg", "run", "-H", f"u@127.0.0.1:{port}", "--", "true"],
            capture_output=True, timeout=30, stdin=subprocess.DEVNULL,
            env=dict(os.environ, XDG_STATE_HOME=str(tmp_path)),
        )  # fmt: skip
    finally:
        listener.close()
    assert result.returncode == 255
    assert len(result.stderr.strip().splitlines()) == 1 and b"Traceback" not in result.stderr


def test_a_corrupted_known_hosts_line_is_skipped_like_openssh_does(ssh_world, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_bytes(b"[127.0.0.1]:1 ssh-ed25519 \xff\xfe not utf-8\n" + b"garbage line\n")
    config = write_client_config(tmp_path / "ssh_config", {"kh": ssh_world.box.server}, known)
    result = subprocess.run(
        [sys.executable, "-m", "remotedbg", "run", "--ssh-config", str(config), "-H", "kh", "--",
         "echo", "ok"],
        capture_output=True, timeout=30, stdin=subprocess.DEVNULL,
        env=dict(os.environ, XDG_STATE_HOME=str(tmp_path)),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"ok\n"


def test_proxycommand_and_hostkeyalias_are_honoured(ssh_world, tmp_path):
    """The target's HostName does not resolve: only the ProxyCommand (ssh -W through the first
    box) reaches it, so a direct connection cannot pass. Its key is known only under the
    HostKeyAlias. A setting paramiko cannot do is refused in one line with --transport paramiko
    (without it, such a host goes through the system ssh client: tests/test_system_ssh.py)."""
    hidden = make_sshd(tmp_path / "hidden", ssh_world.user_key)
    try:
        base = write_client_config(
            tmp_path / "base_config", {"jump": ssh_world.box.server}, tmp_path / "known_hosts"
        )
        kind, blob = hidden.host_key.with_suffix(".pub").read_text().split()[:2]
        with open(tmp_path / "known_hosts", "a") as handle:
            handle.write(f"hidden-alias {kind} {blob}\n")
        config = tmp_path / "ssh_config"
        config.write_text(
            base.read_text()
            + "\nHost viaproxy\n  HostName target.invalid\n"
            + f"  Port {hidden.port}\n  User {hidden.user}\n  IdentityFile {hidden.user_key}\n"
            + f"  UserKnownHostsFile {tmp_path / 'known_hosts'}\n  StrictHostKeyChecking yes\n"
            + f"  ProxyCommand ssh -F {base} -W 127.0.0.1:%p jump\n"
            + "  HostKeyAlias hidden-alias\n"
            + "\nHost refused\n  HostName 127.0.0.1\n  RemoteCommand uptime\n"
        )
        env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
        through = subprocess.run(
            [sys.executable, "-m", "remotedbg", "run", "--ssh-config", str(config),
             "-H", "viaproxy", "--", "echo", "through the proxy"],
            capture_output=True, timeout=60, stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        assert through.returncode == 0, through.stderr
        assert through.stdout == b"through the proxy\n"
        refused = subprocess.run(
            [sys.executable, "-m", "remotedbg", "run", "--ssh-config", str(config),
             "-H", "refused", "--transport", "paramiko", "--", "true"],
            capture_output=True, timeout=60, stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        assert refused.returncode == 2 and b"remotecommand" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    finally:
        hidden.stop()


def test_a_recursive_glob_through_symlink_loops_ends_at_once(cli, tmp_path):
    """`**` below directories that link back to their parents: each file found once, quickly;
    symlinked directories are not a way down (as in find)."""
    tree = tmp_path / "loops"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "model.py").write_text("")
    (tree / "top.py").write_text("")
    for name, target in (("a/b/up", ".."), ("a/self", "."), ("a/b/root", str(tree))):
        (tree / name).symlink_to(target)
    start = time.monotonic()
    result = cli("glob", "-H", "testbox", "--json", str(tree / "**" / "*.py"))
    assert time.monotonic() - start < 10
    assert result.returncode == 0, result.stderr
    [entry] = json.loads(result.stdout)["results"]
    assert entry["matches"] == [str(tree / "a" / "b" / "model.py"), str(tree / "top.py")]


def _file_readers(box, port: int | None = None) -> list[int]:
    """The executor's file-read children (agent/executor.py FILE_READER) of this test's sshd."""
    found = []
    for pid in _agent_processes(box, port):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "remotedbg-read":
                found.append(pid)
        except OSError:
            continue
    return found


def test_a_stalled_file_read_obeys_timeout_and_leaves_nothing_on_the_box(box, tmp_path):
    """A bulk pull whose read stops on the box (a wedged NFS read: here the executor's reading
    child is stopped with SIGSTOP) gives up after --timeout with one line, exit 4, no output
    file, and the stopped reader is killed: nothing of remotedbg is left on the box."""
    from tests.realshape import write_safetensors

    ckpt = tmp_path / "big"
    ckpt.mkdir()
    write_safetensors(ckpt / "model.safetensors", {"w": ("BOOL", [1 << 30], None)})  # sparse
    before = set(_agent_processes(box))
    start = time.monotonic()
    client = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "tensors", "pull", "-H", "testbox", "--timeout",
         "3", str(ckpt), "w", "-o", str(tmp_path / "w.st")],
        env=dict(os.environ, REMOTEDBG_SSH_CONFIG=str(box.ssh_config),
                 XDG_STATE_HOME=str(tmp_path / "state")),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert wait_for(lambda: _file_readers(box), timeout=30, interval=0.005)
        stopped = _file_readers(box)
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        _, stderr = client.communicate(timeout=60)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    assert client.returncode == 4, stderr
    assert len(stderr.strip().splitlines()) == 1 and b"no data for 3s" in stderr, stderr
    assert time.monotonic() - start < 3 + 20
    assert not (tmp_path / "w.st").exists()
    assert wait_for(lambda: not (set(_agent_processes(box)) - before), timeout=5.0), (
        "the stopped reader (or its executor) was left on the box"
    )


def test_a_stalled_read_command_obeys_timeout_and_stops_the_remote_pipeline(ssh_world, tmp_path):
    """Where the session has no executor to read with (no python3 on the box), a bulk read is
    `dd` (or `tail | head`) on a channel of its own: when that read hangs, the read gives up
    after the timeout and the remote pipeline is stopped, not left behind."""
    from remotedbg.errors import RemoteTimeout
    from remotedbg.remote.fetch import fetch_range
    from remotedbg.session import ConnectOptions, open_session

    fake = tmp_path / "bin"
    fake.mkdir()
    for reader in ("dd", "tail"):
        (fake / reader).write_text(
            f"#!/bin/sh\nexec {sys.executable} -c 'import time; time.sleep(3600)' wedged-read-$$\n"
        )
        (fake / reader).chmod(0o755)
    server = make_sshd(
        tmp_path / "sshd",
        ssh_world.user_key,
        extra_config=(f"SetEnv PATH={fake}:/usr/local/bin:/usr/bin:/bin",),
    )
    try:
        config = write_client_config(tmp_path / "ssh_config", {"wedged": server}, tmp_path / "kh")
        shard = tmp_path / "shard.bin"
        shard.write_bytes(bytes(20 << 20))
        options = ConnectOptions(host="wedged", ssh_config=str(config), timeout=3)
        start = time.monotonic()
        with open_session(options) as session:
            session.read_file = lambda *args: None  # as on a box without python3
            with pytest.raises(RemoteTimeout, match="no data for 3s"):
                fetch_range(session, str(shard), 0, 20 << 20, lambda data: None)
        assert time.monotonic() - start < 3 + 10

        def wedged() -> list[int]:
            return [
                int(p)
                for p in os.listdir("/proc")
                if p.isdigit() and b"wedged-read-" in _read_cmdline(p)
            ]

        assert wait_for(lambda: not wedged(), timeout=5.0), "the remote pipeline was left running"
    finally:
        server.stop()


def _read_cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_an_interpreter_that_corrupts_its_answers_gives_one_line(box, tmp_path):
    """--python names a wrapper whose stdout turns every `{` into `<` (a conda activation hook
    gone wrong): the answers keep their length but not their JSON. One line, exit 4, no
    traceback."""
    fake = tmp_path / "bin"
    fake.mkdir()
    corrupt = tmp_path / "corrupt.py"
    corrupt.write_text(
        "import os\n"
        "while True:\n"
        "    data = os.read(0, 65536)\n"
        "    if not data:\n"
        "        break\n"
        "    os.write(1, data.replace(b'{', b'<'))\n"
    )
    (fake / "python3").write_text(
        f'#!/bin/sh\n"{sys.executable}" "$@" | "{sys.executable}" "{corrupt}"\n'
    )
    (fake / "python3").chmod(0o755)
    (tmp_path / "draft").mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "remotedbg", "tensors", "ls", "-H", "testbox", "--python",
         str(fake / "python3"), "--timeout", "10", str(tmp_path / "draft")],
        capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
        env=dict(os.environ, REMOTEDBG_SSH_CONFIG=str(box.ssh_config),
                 XDG_STATE_HOME=str(tmp_path / "state")),
    )  # fmt: skip
    assert result.returncode == 4, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert b"Traceback" not in result.stderr


def test_a_malformed_executor_frame_ends_the_executor_not_the_client():
    from remotedbg.session.executor_client import HEADER, ExecutorGone, _decode

    with pytest.raises(ExecutorGone):
        _decode(b"<'ok': true>")
    with pytest.raises(ExecutorGone):
        _decode(b"[1, 2]")
    assert _decode(b'{"ok": true}') == {"ok": True}
    assert HEADER.size == 9  # kind, request id, length


# -- hostile answers: a python3 on the box whose answers have the wrong shape -------------------
# A `json` on the box's PYTHONPATH (set by its sshd; read with `python3 -S` too, which the agent
# starts with, where a sitecustomize is not) loads the standard library's and patches
# `json.dumps`, which the agent's executor (remotedbg/agent/executor.py) and its one-shot boot
# write every answer with: what it answers is read from a mode file the test rewrites, so one
# executor (and one daemon) meets several hostile answers in a row.
HOSTILE_SITE = """\
import json, os
_dumps, _loads, _entry = json.dumps, json.loads, [None]

def _mode():
    try:
        with open(os.environ["RDBG_HOSTILE"]) as handle:
            return _loads(handle.read())
    except (OSError, ValueError, KeyError):
        return {}

def loads(text, *args, **kwargs):
    value = _loads(text, *args, **kwargs)
    if isinstance(value, dict) and isinstance(value.get("entry"), str):
        _entry[0] = value["entry"].rpartition(":")[2]  # the call being answered
    return value

def dumps(value, *args, **kwargs):
    mode = _mode()
    if isinstance(value, dict) and list(value) == ["exit"] and "exit" in mode:
        value = mode["exit"]
    elif isinstance(value, dict) and value.get("ok") is True and _entry[0] in mode:
        value = {"ok": True, "value": mode[_entry[0]]}
    return _dumps(value, *args, **kwargs)

json.dumps, json.loads = dumps, loads
"""
JSON_SHADOW = (
    "import sys\n"
    "_site = __path__[0].rpartition('/')[0]\n"
    "sys.path.remove(_site)\n"
    "del sys.modules['json']\n"
    "import json  # the standard library's, which the import of this one then returns\n"
    "sys.path.insert(0, _site)\n"
) + HOSTILE_SITE


@pytest.fixture(scope="module")
def liar(ssh_world, tmp_path_factory):
    root = tmp_path_factory.mktemp("liar")
    (root / "site" / "json").mkdir(parents=True)
    (root / "site" / "json" / "__init__.py").write_text(JSON_SHADOW)
    mode = root / "mode.json"
    mode.write_text("{}")
    # a `tail` and a `dd` that pass 64 KiB per 50 ms, as a slow disk would (remote/fetch.py
    # reads with them when the box has no executor; dd's own probe, which writes to `of=`,
    # runs as it is)
    (root / "bin").mkdir()
    (root / "throttle.py").write_text(
        "import os, time\n"
        "while True:\n"
        "    data = os.read(0, 65536)\n"
        "    if not data:\n"
        "        break\n"
        "    os.write(1, data)\n"
        "    time.sleep(0.05)\n"
    )
    (root / "bin" / "tail").write_text(
        f'#!/bin/sh\n"{shutil.which("tail")}" "$@" | "{sys.executable}" "{root / "throttle.py"}"\n'
    )
    (root / "bin" / "tail").chmod(0o755)
    dd = shutil.which("dd")
    (root / "bin" / "dd").write_text(
        f'#!/bin/sh\ncase "$*" in *of=*) exec "{dd}" "$@";; esac\n'
        f'"{dd}" "$@" | "{sys.executable}" "{root / "throttle.py"}"\n'
    )
    (root / "bin" / "dd").chmod(0o755)
    path = f"{root / 'bin'}:{os.environ['PATH']}"
    sshd = make_sshd(
        root / "sshd",
        ssh_world.user_key,
        extra_config=(f"SetEnv PYTHONPATH={root / 'site'} RDBG_HOSTILE={mode} PATH={path}",),
    )
    config = write_client_config(root / "ssh_config", {"liarbox": sshd}, root / "known_hosts")
    try:
        yield {"root": root, "config": config, "mode": mode, "port": sshd.port}
    finally:
        sshd.stop()


def _lie(liar, **answers):
    liar["mode"].write_text(json.dumps(answers))


def _one_line_error(result) -> str:
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and b"Traceback" not in result.stderr, result.stderr.decode()
    return lines[0]


HUGE = 2**70


@pytest.fixture
def warm(liar, tmp_path):
    """The CLI with persistence on: a plain `run` goes through the daemon's resident executor,
    whose exit frames carry the status (a one-shot `run` reads it from the SSH channel, which
    holds 32 bits)."""
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(liar["config"]), REMOTEDBG_PERSIST="120",
               REMOTEDBG_RUNTIME_DIR=str(tmp_path / "run"))  # fmt: skip

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "remotedbg", *args], capture_output=True,
                              timeout=60, env=env, stdin=subprocess.DEVNULL)  # fmt: skip

    try:
        yield cli
    finally:
        cli("sessions", "--stop")


HOSTILE_EXITS = [{"exit": HUGE}, {"status": 0}, {"exit": "0"}, {"exit": -3}, {"exit": True}]


def test_a_hostile_exit_status_is_one_line_not_a_traceback(liar, warm):
    """`run` passes the remote status through, so its own failure is 255 (README, exit codes);
    one daemon meets each hostile exit frame in turn, and an honest one after each."""
    _lie(liar)
    assert warm("run", "-H", "liarbox", "--", "true").returncode == 0
    for exit_frame in HOSTILE_EXITS:
        _lie(liar, exit=exit_frame)
        result = warm("run", "-H", "liarbox", "--", "true")
        assert result.returncode == 255, exit_frame
        assert "malformed answer from the box" in _one_line_error(result)
        _lie(liar)
        honest = warm("run", "-H", "liarbox", "--", "sh", "-c", "exit 7")
        assert honest.returncode == 7, honest.stderr


@pytest.mark.parametrize(
    ("command", "answers", "fault"),
    [
        (["glob"], {"glob_paths": {"not": "a list"}}, "expected a list, got an object"),
        (["glob"], {"glob_paths": [{"pattern": "x", "matches": 5, "count": 1}]}, "[0].matches"),
        (["glob"], {"glob_paths": [{"pattern": "x", "count": HUGE, "matches": []}]}, "64 bits"),
        (["glob"], {"glob_paths": [{"matches": []}]}, "[0].pattern: missing"),
        (["tensors", "ls"], {"list_tensors": {"path": "/d", "tensors": [{"name": 1}]}}, "name"),
        (["cat"], {"read_text": [{"pattern": "p", "size": HUGE}]}, "64 bits"),
        (
            ["vocab-check"],
            {"vocab_check": {"findings": [{"id": 3}], "unknown": [], "summary": {}}},
            "findings[0].id: expected a string",
        ),
        (["locate-eagle", "--root"], {"scan": {"installs": 5}}, "installs: expected a list"),
    ],
)
def test_a_hostile_agent_answer_is_one_line_and_exit_4(liar, tmp_path, command, answers, fault):
    (tmp_path / "f.txt").write_text("x\n")
    target = tmp_path / "f.txt"
    if command[0] in ("tensors", "vocab-check"):  # the honest answer would read its tensors
        target = write_eagle3_checkpoint(tmp_path / "draft", 100, 1000, hidden=8)
    _lie(liar, **answers)
    result, _ = _cli(liar, *command, str(target), "-H", "liarbox")
    assert result.returncode == 4
    line = _one_line_error(result)
    assert "malformed answer from the box" in line and fault in line, line


def test_get_of_a_file_whose_size_is_past_64_bits_is_refused(liar, tmp_path):
    (tmp_path / "f.bin").write_bytes(b"abc")
    real = subprocess.run(
        [sys.executable, "-c", "import os,sys; s=os.stat(sys.argv[1]); print(s.st_mtime)",
         str(tmp_path / "f.bin")], capture_output=True, text=True, check=True,
    )  # fmt: skip
    stat_answer = [{"path": str(tmp_path / "f.bin"), "exists": True, "type": "f", "size": HUGE,
                    "mtime": float(real.stdout)}]  # fmt: skip
    _lie(liar, stat_paths=stat_answer)
    result, _ = _cli(liar, "get", "-H", "liarbox", str(tmp_path / "f.bin"), str(tmp_path / "out"))
    assert result.returncode == 4
    assert "64 bits" in _one_line_error(result)
    assert not list(tmp_path.glob("out*")) and not list(tmp_path.glob(".out*"))


def test_the_persistent_daemon_outlives_a_hostile_answer(liar, warm, tmp_path):
    _lie(liar)
    assert warm("run", "-H", "liarbox", "--", "true").returncode == 0
    [before] = json.loads(warm("sessions", "--json").stdout)["sessions"]
    _lie(liar, glob_paths=[{"pattern": 1}], exit={"exit": HUGE})
    assert warm("glob", "-H", "liarbox", str(tmp_path / "*")).returncode == 4
    assert warm("run", "-H", "liarbox", "--", "true").returncode == 255
    _lie(liar)
    after = warm("run", "-H", "liarbox", "--", "echo", "still here")
    assert (after.returncode, after.stdout) == (0, b"still here\n")
    [same] = json.loads(warm("sessions", "--json").stdout)["sessions"]
    assert same["pid"] == before["pid"] and same["commands"] == before["commands"] + 3


# -- local files: resume only what is still a prefix of the remote file; signals clean up ---------
def _get_interrupted(liar, source: Path, dest: Path, signum=signal.SIGTERM):
    """A `get` of `source` stopped by `signum` halfway: the box's reader is stopped (SIGSTOP)
    as soon as it starts, so the .part holds what was under way (a few MiB: the channel's
    window), then the client gets the signal."""
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(liar["config"]))
    part = dest.with_name(dest.name + ".part")
    process = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "get", "-H", "liarbox", str(source), str(dest)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    assert wait_for(lambda: _file_readers(None, liar["port"]), timeout=30, interval=0.002)
    readers = _file_readers(None, liar["port"])

    def signal_readers(signum: int) -> None:
        for pid in readers:
            os.kill(pid, signum)

    def under_way() -> bool:
        return part.exists() and part.stat().st_size >= 256 << 10

    signal_readers(signal.SIGSTOP)
    deadline = time.monotonic() + 60
    # on a loaded machine the reader can be stopped before it sent anything: let it run a moment
    while not wait_for(under_way, timeout=1):
        assert time.monotonic() < deadline, "the box's reader never got 256 KiB under way"
        signal_readers(signal.SIGCONT)
        time.sleep(0.005)
        signal_readers(signal.SIGSTOP)
    time.sleep(0.5)  # what was under way lands
    process.send_signal(signum)
    _, err = process.communicate(timeout=30)
    return process.returncode, err.decode(), part


def test_get_resumes_after_sigterm_and_starts_over_when_the_remote_file_changed(liar, tmp_path):
    size = 64 << 20  # past what the channel lets be under way when the box's reader stops
    _lie(liar)
    source, dest = tmp_path / "big.bin", tmp_path / "here" / "big.bin"
    dest.parent.mkdir()
    source.write_bytes(os.urandom(size))
    code, err, part = _get_interrupted(liar, source, dest)
    assert code == 128 + signal.SIGTERM
    assert f"interrupted: {part} kept" in err and "Traceback" not in err, err
    held = part.stat().st_size
    assert 0 < held < size and part.read_bytes() == source.read_bytes()[:held]
    resumed, _ = _cli(liar, "get", "-H", "liarbox", "--json", str(source), str(dest))
    [entry] = json.loads(resumed.stdout)["files"]
    assert (resumed.returncode, entry["status"]) == (0, "resumed")
    assert entry["bytes_moved"] == size - held  # only the rest travelled
    assert dest.read_bytes() == source.read_bytes() and not part.exists()
    assert list(dest.parent.iterdir()) == [dest]  # the .part and its record are gone

    # interrupted again, then the remote file is rewritten (same size, new bytes and mtime)
    dest.unlink()
    code, _, part = _get_interrupted(liar, source, dest, signal.SIGHUP)
    assert code == 128 + signal.SIGHUP and part.exists()
    source.write_bytes(os.urandom(size))
    again, _ = _cli(liar, "get", "-H", "liarbox", "--json", str(source), str(dest))
    [entry] = json.loads(again.stdout)["files"]
    assert (again.returncode, entry["status"]) == (0, "done")
    assert "started over: the remote file changed" in entry["detail"]
    assert entry["bytes_moved"] == size
    assert dest.read_bytes() == source.read_bytes()


def test_get_starts_over_when_a_part_is_not_a_prefix_of_the_remote_file(liar, tmp_path):
    """A .part without its record (an earlier version's) is judged by the hash of its bytes,
    computed on the box over the same range."""
    _lie(liar)
    source, dest = tmp_path / "f.bin", tmp_path / "f.out"
    source.write_bytes(os.urandom(200_000))
    (tmp_path / "f.out.part").write_bytes(os.urandom(100_000))
    result, _ = _cli(liar, "get", "-H", "liarbox", "--json", str(source), str(dest))
    [entry] = json.loads(result.stdout)["files"]
    assert (result.returncode, entry["status"]) == (0, "done")
    assert "first 100,000 bytes differ" in entry["detail"]
    assert dest.read_bytes() == source.read_bytes()
    # a true prefix without a record is resumed
    (tmp_path / "f.out").unlink()
    (tmp_path / "f.out.part").write_bytes(source.read_bytes()[:150_000])
    result, _ = _cli(liar, "get", "-H", "liarbox", "--json", str(source), str(dest))
    [entry] = json.loads(result.stdout)["files"]
    assert entry["status"] == "resumed" and entry["bytes_moved"] == 50_000
    assert dest.read_bytes() == source.read_bytes()


@pytest.mark.parametrize("persist", ["0", "120"])
def test_sigterm_of_tensors_pull_leaves_no_partial_file(liar, tmp_path, persist):
    """Without a daemon remotedbg unwinds itself (exit 143); with one, the client dies of the
    signal, and the daemon, seeing its client leave, stops the command as for Ctrl-C."""
    from tests import realshape

    _lie(liar)
    # the lm_head of a 32,000-id head for a 7168-wide target, sparse (458 MB): the pull cannot
    # be over before the signal lands (a 2 MB one was, once reads went through dd)
    lm_head = ("BF16", [32000, 7168], None)
    draft = realshape.write_checkpoint(tmp_path / "draft", {}, {"lm_head.weight": lm_head})
    out = tmp_path / "out" / "lm.safetensors"
    out.parent.mkdir()
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(liar["config"]), REMOTEDBG_PERSIST=persist,
               REMOTEDBG_RUNTIME_DIR=str(tmp_path / "run"))  # fmt: skip
    if persist != "0":  # the daemon is up before the pull
        subprocess.run([sys.executable, "-m", "remotedbg", "run", "-H", "liarbox", "--", "true"],
                       env=env, check=True, capture_output=True, timeout=60)  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "tensors", "pull", "-H", "liarbox", str(draft),
         "lm_head.weight", "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip

    def partial_grew() -> bool:
        return any(p.stat().st_size >= 256 << 10 for p in out.parent.iterdir())

    try:
        assert wait_for(partial_grew, timeout=30)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
        expected = 128 + signal.SIGTERM if persist == "0" else -signal.SIGTERM
        assert process.returncode == expected, err
        assert wait_for(lambda: list(out.parent.iterdir()) == [], timeout=10), sorted(
            (p.name, p.stat().st_size) for p in out.parent.iterdir()
        )
    finally:
        if persist != "0":
            subprocess.run([sys.executable, "-m", "remotedbg", "sessions", "--stop"], env=env,
                           capture_output=True, timeout=60)  # fmt: skip


def test_get_follows_no_link_planted_at_its_destination_part_or_record(liar, tmp_path):
    _lie(liar)
    source = tmp_path / "f.bin"
    source.write_bytes(os.urandom(50_000))
    victim = tmp_path / "victim"
    victim.write_bytes(b"untouched")
    here = tmp_path / "here"
    here.mkdir()
    (here / "f.bin.part").symlink_to(victim)  # a link where the .part goes
    refused, _ = _cli(liar, "get", "-H", "liarbox", str(source), str(here / "f.bin"))
    assert refused.returncode == 4 and b"f.bin" in refused.stderr
    assert sorted(p.name for p in here.iterdir()) == ["f.bin.part"]  # no record of a copy
    (here / "f.bin.part").unlink()
    (here / "f.bin.part.json").symlink_to(victim)  # a link where its record goes
    refused, _ = _cli(liar, "get", "-H", "liarbox", str(source), str(here / "f.bin"))
    assert refused.returncode == 4
    (here / "f.bin.part.json").unlink()
    (here / "f.bin").symlink_to(tmp_path / "nowhere")  # a dangling link at the destination
    copied, _ = _cli(liar, "get", "-H", "liarbox", str(source), str(here / "f.bin"))
    assert copied.returncode == 0, copied.stderr
    assert not (here / "f.bin").is_symlink()
    assert (here / "f.bin").read_bytes() == source.read_bytes()
    assert victim.read_bytes() == b"untouched" and not (tmp_path / "nowhere").exists()


def test_the_shapes_accept_what_the_agent_itself_answers(tmp_path):
    """The shape table (session/answers.py) against the real agent functions' answers, so the
    two cannot drift apart; and the rules an honest answer never meets."""
    from remotedbg.agent import checkpoint, draft_search, engine_scan, fsops, server_scan, vocabmap
    from remotedbg.engines.knowledge import knowledge, server_scan_knowledge
    from remotedbg.remote import calls as typed
    from remotedbg.session import answers

    draft = write_eagle3_checkpoint(tmp_path / "draft", 100, 1000, hidden=8)
    (tmp_path / "a.txt").write_text("hot_token_id = d2t\nx\n")
    calls = {
        "fsops:glob_paths": (fsops.glob_paths, {"patterns": [str(tmp_path / "*"), "/nope*"]}),
        "fsops:stat_paths": (fsops.stat_paths, {"paths": [str(tmp_path / "a.txt"), "/nope"]}),
        "fsops:find": (fsops.find, {"root": str(tmp_path), "names": ["*"]}),
        "fsops:grep": (fsops.grep, {"pattern": "d2t", "paths": [str(tmp_path)], "context": 1}),
        "fsops:read_text": (fsops.read_text, {"paths": [str(tmp_path / "*.txt"), "/nope"]}),
        "fsops:sha256": (fsops.sha256, {"paths": [str(tmp_path / "a.txt"), "/nope"]}),
        "fsops:sha256_range": (fsops.sha256_range, {"path": str(tmp_path / "a.txt"), "length": 5}),
        "checkpoint:list_tensors": (checkpoint.list_tensors, {"path": str(draft)}),
        "checkpoint:tensor_ranges": (
            checkpoint.tensor_ranges,
            {"path": str(draft), "names": ["d2t", "t2d"]},
        ),
        "checkpoint:tensor_stats": (checkpoint.tensor_stats, {"path": str(draft), "name": "d2t"}),
        "vocabmap:vocab_check": (vocabmap.vocab_check, {"path": str(draft)}),
        "draft_search:find_drafts": (draft_search.find_drafts, {"roots": [str(tmp_path)]}),
        "draft_search:read_configs": (draft_search.read_configs, {"paths": [str(draft), "/x"]}),
        "engine_scan:scan": (
            engine_scan.scan,
            {"knowledge": knowledge(), "search_home": False, "search_system": False},
        ),
        "server_scan:scan_servers": (
            server_scan.scan_servers,
            {"metrics": False, "knowledge": server_scan_knowledge()},
        ),
    }
    for entry, (function, args) in calls.items():
        value = json.loads(json.dumps(function(args)))
        request = typed.BY_ENTRY[f"{typed.AGENT}.{entry}"]()
        assert request.check(value, entry) == value
        assert request.shape is not object, entry
    with pytest.raises(answers.AgentAnswerError, match="expected an integer, got a bool"):
        answers.exit_status({"exit": True}, "x")
    with pytest.raises(answers.AgentAnswerError, match="64 bits"):
        typed.Snippet().check({"deep": [{"n": -(2**63) - 1}]}, "x")
    assert answers.exit_status({"exit": None}, "x") is None


def test_a_lying_glob_or_stat_cannot_overflow_limit_or_leave_dest(liar, tmp_path):
    """A box whose agent answers 300,000 names for `--limit 5`, a stat that names the file
    `..` or gives a size of -5 (issue 46): five names printed and said to be cut; nothing
    written outside DEST, the lie skipped with its reason."""
    names = [f"/x/{i}" for i in range(300_000)]
    _lie(liar, glob_paths=[{"pattern": "/x/*", "matches": names, "count": len(names)}])
    listed, _ = _cli(liar, "glob", "-H", "liarbox", "--limit", "5", "/x/*")
    assert listed.stdout.decode().splitlines() == names[:5]
    assert listed.returncode == 1 and b"--limit N prints more" in listed.stderr
    (tmp_path / "f.bin").write_bytes(b"abc")
    dest = tmp_path / "out" / "dest"
    dest.mkdir(parents=True)
    for lie in ({"path": str(tmp_path / ".."), "size": 3}, {"path": str(tmp_path / "f.bin"),
                                                              "size": -5}):  # fmt: skip
        _lie(liar, stat_paths=[{**lie, "exists": True, "type": "f", "mtime": 0.0}])
        result, _ = _cli(liar, "get", "-H", "liarbox", str(tmp_path / "f.bin"), f"{dest}/")
        assert result.returncode == 1, result.stderr
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["dest"]
        assert list(dest.iterdir()) == []
