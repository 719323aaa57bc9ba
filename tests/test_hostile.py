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
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.checkpoints import write_eagle3_checkpoint
from tests.procs import wait_for
from tests.sshd import make_sshd, write_client_config

BANNER = "Welcome to GPU box (shared cluster, be nice)"


def _agent_processes() -> list[int]:
    """Processes of remotedbg's agent on this machine (the box): its tag is in argv."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if b"RDBG-AGENT" in raw:
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
    before = set(_agent_processes())
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
    assert wait_for(lambda: not (set(_agent_processes()) - before), timeout=3.0), (
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
    assert found.returncode == 0 and b"f\x1b[2Jx.py" in found.stdout  # a pipe gets the bytes


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_nothing_outlives_a_killed_or_interrupted_client(box, tmp_path, how):
    """The client killed with SIGKILL, or interrupted (Ctrl-C), while a check blocks on the box:
    the box is clean within a few seconds."""
    import signal

    fifo = tmp_path / "shard.safetensors"
    os.mkfifo(fifo)
    before = set(_agent_processes())
    client = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "tensors", "ls", "-H", "testbox", str(fifo)],
        env=dict(os.environ, REMOTEDBG_SSH_CONFIG=str(box.ssh_config)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # the check is running on the box: its child of the executor exists
        assert wait_for(lambda: len(set(_agent_processes()) - before) >= 2, timeout=20)
        client.send_signal(getattr(signal, how))
        client.wait(timeout=15)
        start = time.monotonic()
        assert wait_for(lambda: not (set(_agent_processes()) - before), timeout=5.0), (
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
    HostKeyAlias. A setting remotedbg does not implement is refused in one line."""
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
             "-H", "refused", "--", "true"],
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


def test_a_stalled_bulk_pull_obeys_timeout_and_stops_the_remote_pipeline(ssh_world, tmp_path):
    """A box whose `tail` hangs (a wedged NFS read): a bulk pull gives up after --timeout with
    one line, exit 4, and the remote `tail | head` pipeline is stopped, not left behind."""
    import numpy as np
    from safetensors.numpy import save_file

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "tail").write_text(
        f"#!/bin/sh\nexec {sys.executable} -c 'import time; time.sleep(3600)' wedged-tail-$$\n"
    )
    (fake / "tail").chmod(0o755)
    server = make_sshd(
        tmp_path / "sshd",
        ssh_world.user_key,
        extra_config=(f"SetEnv PATH={fake}:/usr/local/bin:/usr/bin:/bin",),
    )
    try:
        config = write_client_config(tmp_path / "ssh_config", {"wedged": server}, tmp_path / "kh")
        ckpt = tmp_path / "big"
        ckpt.mkdir()
        save_file({"w": np.zeros(20 << 18, dtype=np.float32)}, str(ckpt / "model.safetensors"))
        start = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "remotedbg", "tensors", "pull", "--ssh-config", str(config),
             "-H", "wedged", "--timeout", "3", str(ckpt), "w", "-o", str(tmp_path / "w.st")],
            capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
            env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state")),
        )  # fmt: skip
        assert result.returncode == 4, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert time.monotonic() - start < 3 + 10
        assert not (tmp_path / "w.st").exists()

        def wedged() -> list[int]:
            return [
                int(p)
                for p in os.listdir("/proc")
                if p.isdigit() and b"wedged-tail-" in _read_cmdline(p)
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
