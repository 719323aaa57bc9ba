"""A newcomer's first hour (issue 50): what ssh users type, as they type it, each answered with
what works (or works already), in one line, with the README's exit codes."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from tests.procs import wait_for


def _piped(line: str, box, isolated_state) -> subprocess.CompletedProcess:
    """`line` run by bash, the left command's exit status appended to stderr."""
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(box.ssh_config),
               XDG_STATE_HOME=str(isolated_state))  # fmt: skip
    return subprocess.run(["bash", "-c", line + '; echo "status=${PIPESTATUS[0]}" >&2'],
                          capture_output=True, timeout=60, env=env,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def test_a_closed_pipe_is_silent_as_with_ssh_and_exits_141(box, isolated_state):
    """`run -- cmd | head -1`: ssh prints nothing on stderr; neither does remotedbg, and its
    exit status (141, as a shell reports SIGPIPE) says the reader left. ssh's own status races
    (255 when its write fails first, 0 when the remote end closes first), so only its silence
    is the baseline."""
    ssh = _piped(f"ssh -F {box.ssh_config} testbox seq 1 300000 | head -1", box, isolated_state)
    assert ssh.stdout == b"1\n", ssh.stderr
    assert ssh.stderr in (b"status=255\n", b"status=0\n"), ssh.stderr
    ours = _piped(f"{sys.executable} -m remotedbg run -H testbox -- seq 1 300000 | head -1",
                  box, isolated_state)  # fmt: skip
    assert ours.stdout == b"1\n"
    assert ours.stderr == b"status=141\n", ours.stderr


def test_connection_options_before_the_command_work_as_after_it(cli, box, tmp_path):
    """ssh users type the host first (`ssh -l me -p 22 box cmd`): `remotedbg -H box run -- cmd`
    runs as `remotedbg run -H box -- cmd` does, on every command and in every spelling."""
    user, port = box.server.user, str(box.server.port)
    first = cli("-H", "testbox", "run", "--", "echo", "typed first")
    assert (first.returncode, first.stdout) == (0, b"typed first\n"), first.stderr
    ssh = cli("-l", user, "-q", f"-p{port}", "--host=testbox", "run", "whoami")
    assert (ssh.returncode, ssh.stdout) == (0, f"{user}\n".encode()), ssh.stderr
    (tmp_path / "a.py").write_text("hot_token_id = d2t\n")
    # ssh's -l USER, moved onto grep, stays the user (grep's own -l lists files)
    grep = cli("-l", user, "-H", "testbox", "grep", "-rn", "d2t", str(tmp_path))
    assert grep.stdout.decode() == f"{tmp_path}/a.py:1:hot_token_id = d2t\n", grep.stderr
    status = cli("-H", "testbox", "run", "--", "sh", "-c", "exit 7")
    assert status.returncode == 7  # run's own status passing, unchanged
    root = cli("--help").stdout.decode()
    assert "remotedbg -H gpu-box run -- nvidia-smi     the same: options may come first" in root


def test_typed_first_through_the_persistent_session(persistent):
    """The persistent-session client reads the moved options too: the command is served by a
    daemon, as `run -H box` is."""
    from tests.procs import persist_daemons

    done = persistent("-H", "testbox", "run", "--", "echo", "warm")
    assert (done.returncode, done.stdout) == (0, b"warm\n"), done.stderr
    assert persist_daemons(persistent.runtime), "served by a daemon"


def test_the_options_moved_are_the_connection_options():
    """ssh_habits keeps its own list (the client reads it before typer is imported): it is
    the connection options, every spelling of each."""
    import typer

    from remotedbg.front.cli import app
    from remotedbg.front.cli.context import CONNECTION_PARAMETERS
    from remotedbg.front.ssh_habits import CONNECTION_FLAGS, CONNECTION_VALUES

    run = typer.main.get_command(app).commands["run"]
    names = {p.name for p in CONNECTION_PARAMETERS}
    params = [p for p in run.params if p.name in names]
    assert len(params) == len(names)
    assert CONNECTION_VALUES == {o for p in params if not p.is_flag for o in p.opts}
    assert CONNECTION_FLAGS == {o for p in params if p.is_flag for o in p.opts}


def _said(cli, *words: str) -> str:
    done = cli(*words)
    assert done.returncode == 2 and not done.stdout, done
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_ssh_forms_are_answered_with_the_form_that_works(cli):
    """`remotedbg HOST CMD` as ssh takes it: exit 2 (usage), one line with the command to type."""
    assert _said(cli, "gpu-box", "nvidia-smi", "-L") == (
        "remotedbg: no command 'gpu-box'; to run a command on a host (ssh gpu-box CMD): "
        "remotedbg run -H gpu-box -- nvidia-smi -L")  # fmt: skip
    assert _said(cli, "user@box", "ls") == (
        "remotedbg: no command 'user@box'; to run a command on a host (ssh user@box CMD): "
        "remotedbg run -H user@box -- ls")  # fmt: skip
    assert _said(cli, "-p", "2222", "user@box", "ls", "-l", "/tmp") == (  # ssh -p 2222 user@box
        "remotedbg: no command 'user@box'; to run a command on a host (ssh user@box CMD): "
        "remotedbg run -p 2222 -H user@box -- ls -l /tmp")  # fmt: skip
    assert _said(cli, "user@box") == (
        "remotedbg: no command 'user@box'; for a shell on a host (ssh user@box): "
        "remotedbg repl -H user@box")  # fmt: skip
    assert _said(cli, "-H", "gpu-box", "nvidia-smi") == (
        "remotedbg: no command 'nvidia-smi' (remotedbg --help lists them); to run it on "
        "gpu-box: remotedbg run -H gpu-box -- nvidia-smi")  # fmt: skip
    assert _said(cli, "-H", "gpu-box", "--", "uptime") == (
        "remotedbg: no command given; to run one on the box: remotedbg run -H gpu-box -- uptime")
    assert _said(cli, "-H", "gpu-box") == (
        "remotedbg: -H gpu-box: name the command, e.g. remotedbg run -H gpu-box -- CMD "
        "(remotedbg --help lists the commands)")  # fmt: skip
    assert _said(cli, "testbox") == (  # an alias of the ssh_config, alone: `ssh testbox`
        "remotedbg: no command 'testbox'; for a shell on a host (ssh testbox): "
        "remotedbg repl -H testbox")  # fmt: skip
    typo = cli("dignose", "-H", "gpu-box")  # a typo of ours: click's own suggestion stays
    assert typo.returncode == 2 and "Did you mean 'diagnose'?" in typo.stderr.decode()


def test_ls_points_at_glob_and_find_and_the_advice_works(cli, tmp_path):
    tmp_path = tmp_path / "dir"
    tmp_path.mkdir()
    (tmp_path / "listed.txt").write_text("x")
    assert _said(cli, "ls") == (
        "remotedbg: no command 'ls'; to list files on the box: remotedbg glob -H HOST 'PATH/*' "
        "(or remotedbg find -H HOST PATH --max-depth 1)")  # fmt: skip
    line = _said(cli, "ls", "-H", "testbox", "-l", str(tmp_path))
    advice = line.split("on the box: ", 1)[1].split(" (or ")[0]
    assert advice == f"remotedbg glob -H testbox '{tmp_path}/*'"
    listed = cli(*shlex.split(advice)[1:])
    assert listed.stdout.decode() == f"{tmp_path}/listed.txt\n", listed.stderr
    assert _said(cli, "cp", "-H", "testbox", "/var/log/x.log", ".") == (
        "remotedbg: no command 'cp'; to copy files from the box: "
        "remotedbg get -H testbox /var/log/x.log ./")  # fmt: skip


def test_a_tilde_the_local_shell_expanded_is_named_when_nothing_matches(cli):
    """`grep -rn d2t ~/sglang -H box` unquoted: the shell hands remotedbg the local home's path;
    when it matches nothing on the box, the hint says so and how to mean the box's home."""
    home = os.path.expanduser("~")
    hint = (f"  your shell expanded ~ to {home}; quote it ('~/no-such-sglang-50') to mean the "
            "box's home")  # fmt: skip
    for words in (["grep", "-rn", "d2t", f"{home}/no-such-sglang-50", "-H", "testbox"],
                  ["find", "-H", "testbox", f"{home}/no-such-sglang-50", "-name", "*.py"],
                  ["get", "-H", "testbox", f"{home}/no-such-sglang-50", "/tmp/"]):  # fmt: skip
        done = cli(*words)
        assert done.returncode == 1, (words, done.stderr)
        assert hint in done.stderr.decode().splitlines(), (words, done.stderr)
    elsewhere = cli("glob", "-H", "testbox", "/no-such-dir-50/x")  # not under the local home
    assert elsewhere.returncode == 1 and "expanded ~" not in elsewhere.stderr.decode()


def test_a_port_several_servers_listen_on_is_never_taken_silently(cli, standin, tmp_path):
    """Two servers listening on the same port number, one in a network namespace of its own
    (as in two containers): `--server PORT` lists both (PID, owner, where, command) and asks for
    a PID, exit 2, in every command that takes it (spec-audit's `--var server=`: in its verdict,
    inconclusive); `--server PID` then takes that one."""
    first = standin("sglang")
    argv = Path(f"/proc/{first.pid}/cmdline").read_bytes().split(b"\0")[:-1]
    launch_env = dict(item.split(b"=", 1) for item in
                      Path(f"/proc/{first.pid}/environ").read_bytes().split(b"\0") if b"=" in item)
    env = dict(os.environ, PYTHONPATH=launch_env[b"PYTHONPATH"].decode(),
               STANDIN_SCRIPT=launch_env[b"STANDIN_SCRIPT"].decode())  # fmt: skip
    log = tmp_path / "netns.log"
    with open(log, "wb") as out:
        second = subprocess.Popen(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"',
                                   "sh", *argv], stdout=out, stderr=subprocess.STDOUT, env=env,
                                  stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        assert wait_for(lambda: b"serving on" in log.read_bytes(), timeout=15), log.read_text()
        port = str(first.port)
        for flag, words, code in (
            ("--server ", ["logs", "-H", "testbox", "--server", port], 2),
            ("--server ", ["diagnose", "-H", "testbox", "--server", port, "--no-probe"], 2),
            # drafts searched only where the test made none: a planted draft another test
            # left in this user's home would make the audit a defect whatever the step said
            # a playbook says a step's failure in its verdict: inconclusive, exit 4
            ("--var server=", ["playbook", "spec-audit", "-H", "testbox", "--var",
                               f"server={port}", "--var", f"search={tmp_path}",
                               "--var", "search_home=false"], 4),
        ):  # fmt: skip
            done = cli(*words, timeout=180)
            said = " ".join((done.stdout + done.stderr).decode().replace("│", " ").split())
            assert done.returncode == code, (words, said)
            assert f"{flag}{port}: 2 servers serve on port {port}: " in said, said
            for pid in (first.pid, second.pid):
                assert f"pid {pid} (yours, on the host): " in said, said
            assert f"choose one with {flag}PID" in said, said
            assert " -m sglang.launch_server" in said  # what each runs (python or python3)
        chosen = cli("logs", "-H", "testbox", "--server", str(second.pid), "--json")
        assert chosen.returncode == 0, chosen.stderr
        assert json.loads(chosen.stdout)["server"]["pid"] == second.pid
    finally:
        os.killpg(second.pid, signal.SIGKILL)
        second.wait()
