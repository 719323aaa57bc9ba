"""The REPL against the real loopback sshd: script mode as a user pipes it, interactive features
through prompt_toolkit's pipe input, and the pieces (word splitting, env dumps) on their own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from remotedbg.front.repl import Repl, env_difference, history_path, parse_startup
from remotedbg.front.repl_completion import quote_path, split_words
from tests.procs import parent_of, pids_with_argv, wait_for


def _repl_argv() -> list[str]:
    return [sys.executable, "-m", "remotedbg", "repl"]


def _env(box, state: Path) -> dict[str, str]:
    return dict(
        os.environ,
        REMOTEDBG_SSH_CONFIG=str(box.ssh_config),
        XDG_STATE_HOME=str(state),
        COLUMNS="200",
    )


@pytest.fixture
def repl_script(box, isolated_state):
    """Run `remotedbg repl -H testbox` with the given lines on stdin (script mode)."""

    def run(
        *lines: str, timeout: float = 60, options: tuple[str, ...] = ()
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*_repl_argv(), "-H", "testbox", *options],
            input="".join(line + "\n" for line in lines).encode(),
            capture_output=True,
            timeout=timeout,
            env=_env(box, isolated_state),
        )

    return run


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "models" / "sub dir").mkdir(parents=True)
    for name in ["llama_eagle3.py", "llama.py", "qwen2_eagle.py"]:
        (root / "models" / name).write_text(f"# {name}\nd2t = 1\n")
    (root / "models" / ".hidden").write_text("")
    (root / "notes.txt").write_text("hello\n")
    return root


# -- script mode -------------------------------------------------------------------------


def test_script_cd_pwd_glob_and_last_status(repl_script, tree):
    result = repl_script(
        f"cd {tree}",
        "pwd",
        ":glob models/*eagle*.py",
        "cd models",
        "pwd",
        "cd -",
        "pwd",
        "cd",
        "pwd",
        "false",
    )
    out = result.stdout.decode().splitlines()
    assert out == [
        str(tree),
        "models/llama_eagle3.py",
        "models/qwen2_eagle.py",
        f"{tree}/models",
        str(tree),
        str(Path.home()),
    ], result.stderr.decode()
    assert result.returncode == 1


def test_script_exit_status_is_the_last_lines(repl_script):
    assert repl_script("false", "sh -c 'exit 7'").returncode == 7
    assert repl_script("false", "true", "", "# a comment").returncode == 0
    stopped = repl_script("echo one", "exit 3", "echo never")
    assert stopped.returncode == 3 and stopped.stdout == b"one\n"
    assert repl_script(":glob /definitely/not/here*").returncode == 1  # the CLI's code


def test_dollar_question_is_the_last_lines_status_as_in_a_shell(repl_script, box):
    """`$?` is the status of the line before, as in the shell `ssh box sh` gives (run in the
    same test with the same lines); a `:` command's status counts too."""
    lines = ["sh -c 'exit 3'", "echo $?", "echo $?", "false", "echo $? $?", "sh -c 'exit 300'",
             "echo $?"]  # fmt: skip
    theirs = subprocess.run(["ssh", "-F", str(box.ssh_config), "testbox", "sh"],
                            input="".join(f"{line}\n" for line in lines).encode(),
                            capture_output=True, timeout=60)  # fmt: skip
    ours = repl_script(*lines)
    assert ours.stdout == theirs.stdout == b"3\n0\n1 1\n44\n", (ours.stdout, ours.stderr)
    colon = repl_script(":glob /definitely/not/here*", "echo status $?")
    assert colon.stdout.endswith(b"status 1\n"), colon.stdout


def test_stop_on_error_ends_the_script_at_the_first_failure(repl_script, box, isolated_state):
    lines = ("echo one", "sh -c 'exit 5'", "echo never")
    stopped = repl_script(*lines, options=("--stop-on-error",))
    assert stopped.returncode == 5 and stopped.stdout == b"one\n"
    assert stopped.stderr.decode() == "remotedbg: stopped at line \"sh -c 'exit 5'\": status 5\n"
    assert repl_script(*lines).stdout == b"one\nnever\n"  # without it, a script goes on
    page = subprocess.run(
        [*_repl_argv(), "--help"], capture_output=True, env=_env(box, isolated_state), timeout=60
    )
    assert b"--stop-on-error" in page.stdout and b"--json" not in page.stdout


def test_a_shell_syntax_error_quotes_the_users_line_only(repl_script):
    result = repl_script("if then fi", "echo after")
    errors = result.stderr.decode()
    assert "`if then fi'" in errors and "RDBG" not in errors and "export" not in errors
    assert result.stdout == b"after\n"


def test_cd_to_a_missing_directory_fails_and_keeps_the_cwd(repl_script, tree):
    result = repl_script(f"cd {tree}", "cd no-such-dir", "pwd", "cd notes.txt", "pwd")
    assert result.stdout.decode().splitlines() == [str(tree), str(tree)]
    err = result.stderr.decode()
    assert "no-such-dir: No such file or directory" in err
    assert "notes.txt: Not a directory" in err
    assert result.returncode == 0


def test_colon_commands_print_what_the_cli_prints(repl_script, cli, tree):
    models = tree / "models"
    for args in (["glob", "*.py"], ["find", ".", "--name", "*eagle*"], ["grep", "d2t", "."]):
        from_repl = repl_script(f"cd {models}", ":" + " ".join(f"'{a}'" for a in args))
        from_cli = cli(
            args[0], "-H", "testbox", *[str(models / a) if a == "." else a for a in args[1:]]
        )
        if args[0] == "glob":
            from_cli = cli("glob", "-H", "testbox", str(models / "*.py"))
            expected = [str(models / line) for line in from_repl.stdout.decode().splitlines()]
            assert expected == from_cli.stdout.decode().splitlines()
        else:
            relative = from_repl.stdout.decode().replace("./", f"{models}/")
            assert sorted(relative.splitlines()) == sorted(from_cli.stdout.decode().splitlines())
        assert from_repl.returncode == from_cli.returncode == 0
    # relative paths resolve against the remote cwd; a missing file gives the CLI's code
    cat = repl_script(f"cd {tree}", ":cat notes.txt", ":cat missing.txt")
    assert cat.stdout == b"hello\n" and cat.returncode == 1


def test_colon_commands_refuse_connection_options_and_unknown_names(repl_script):
    result = repl_script(":glob --host other /tmp", ":frobnicate", ":repl")
    err = result.stderr.decode()
    assert "connection options are set once" in err
    assert "no command :frobnicate" in err and "already in the REPL" in err
    assert result.returncode == 2


def test_export_is_remembered_and_the_login_environment_applies(repl_script):
    result = repl_script("export RDBG_X=a$((1+1)) RDBG_Y='b c'", "echo $RDBG_X/$RDBG_Y")
    assert result.stdout == b"a2/b c\n"


def _start_repl(box, state: Path, script: bytes) -> subprocess.Popen:
    lines = state.parent / "script.txt"
    lines.write_bytes(script)
    with open(lines, "rb") as stdin:
        return subprocess.Popen(
            [*_repl_argv(), "-H", "testbox"],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(box, state),
        )


def _sshd_ancestor(pid: int) -> int | None:
    """The sshd process serving the connection that runs `pid` (None for an orphan)."""
    while pid > 1:
        pid = parent_of(pid)
        with open(f"/proc/{pid}/comm") as handle:
            if handle.read().startswith("sshd"):
                return pid
    return None


def _connection_running(*argv: str) -> int | None:
    for pid in pids_with_argv(*argv):
        try:
            found = _sshd_ancestor(pid)
        except OSError:
            continue
        if found:
            return found
    return None


def _unique_seconds(base: int) -> str:
    """A sleep argument no other run uses, so leftovers of an earlier run cannot be mistaken."""
    return f"{base}.{os.getpid() % 10000:04d}{int(time.time() * 1000) % 1000:03d}"


def test_dropped_connection_is_reported_and_reestablished(box, isolated_state):
    seconds = _unique_seconds(38)
    script = f"cd /tmp\nsleep {seconds}\npwd\necho back\n".encode()
    process = _start_repl(box, isolated_state, script)
    try:
        assert wait_for(lambda: _connection_running("sleep", seconds), 20)
        connection = _connection_running("sleep", seconds)
        assert connection is not None
        os.kill(connection, signal.SIGKILL)  # the connection's sshd, not the listener
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
        for pid in pids_with_argv("sleep", seconds):
            os.kill(pid, signal.SIGKILL)
    assert "connection lost" in err.decode() and "re-established" in err.decode()
    assert out.decode().splitlines() == ["/tmp", "back"]  # the cwd survived the reconnect
    assert process.returncode == 0


def test_ctrl_c_in_script_mode_stops_the_remote_command(box, isolated_state):
    seconds = _unique_seconds(39)
    process = _start_repl(box, isolated_state, f"sleep {seconds}\necho never\n".encode())
    try:
        assert wait_for(lambda: bool(pids_with_argv("sleep", seconds)), 20)
        start = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        process.kill()
    assert time.monotonic() - start < 2
    assert process.returncode == 130 and b"never" not in out
    assert wait_for(lambda: not pids_with_argv("sleep", seconds))


# -- interactive features, in-process ----------------------------------------------------


@pytest.fixture
def repl(box):
    session = box.session()
    shell = Repl(session, "testbox")
    shell.start()
    yield shell
    session.close()


def _complete(repl: Repl, text: str) -> list[str]:
    completer = repl.completer()
    document = Document(text, len(text))
    return [c.text for c in completer.get_completions(document, CompleteEvent(True))]


def _apply(text: str, repl: Repl) -> str:
    completer = repl.completer()
    completions = list(completer.get_completions(Document(text, len(text)), CompleteEvent(True)))
    assert len(completions) == 1, [c.text for c in completions]
    return text[: len(text) + completions[0].start_position] + completions[0].text


def test_start_learns_home_cwd_and_login_environment(repl):
    assert repl.home == str(Path.home()) and repl.cwd == str(Path.home())
    assert repl.login_env_ok
    assert repl.prompt_text() == "testbox:~$ "


def test_completes_colon_commands_and_their_options(repl):
    assert _complete(repl, ":gl") == [":glob"]
    assert {":grep", ":glob"} <= set(_complete(repl, ":g"))
    assert ":quit" in _complete(repl, ":q")
    assert ":repl" not in _complete(repl, ":")
    assert _complete(repl, ":grep --ig") == ["--ignore-case"]
    assert "--host" not in _complete(repl, ":grep --")
    assert "--json" in _complete(repl, ":grep --")
    assert _complete(repl, ":tensors s") == ["show"]
    assert _complete(repl, ":tensors show --he") == ["--head", "--help"]
    assert _complete(repl, ":help gl") == ["glob"]


def test_completes_remote_paths(repl, tree):
    repl.execute(f"cd {tree}")
    assert _apply("cat mod", repl) == "cat models/"
    assert _apply("cat models/llama_e", repl) == "cat models/llama_eagle3.py"
    assert _apply(f":grep d2t {tree}/models/q", repl) == f":grep d2t {tree}/models/qwen2_eagle.py"
    assert _apply("ls models/su", repl) == "ls 'models/sub dir/'"
    assert _apply("cd models/", repl) == "cd 'models/sub dir/'"  # cd: directories only
    names = _complete(repl, "ls models/")
    assert "models/.hidden" not in names and "models/llama.py" in names
    assert _complete(repl, "ls models/.h") == ["models/.hidden"]
    assert _complete(repl, "ls nothing-here/") == []


def test_path_listing_is_cached_and_never_blocks_past_the_deadline(repl, tree):
    repl.execute(f"cd {tree}")
    before = repl.lister.fetches
    _complete(repl, "cat models/l")
    _complete(repl, "cat models/q")
    assert repl.lister.fetches == before + 1
    # a host that hangs: the Tab returns at the deadline, the listing keeps coming
    release = threading.Event()
    original = repl.lister._fetch
    repl.lister._fetch = lambda directory: (release.wait(5), original(directory))[1]
    repl.lister.invalidate()
    start = time.monotonic()
    assert _complete(repl, "cat models/l") == []
    assert time.monotonic() - start < repl.lister.deadline + 0.3
    release.set()
    assert wait_for(lambda: repl.lister.cached(f"{tree}/models/") is not None)
    assert "models/llama.py" in _complete(repl, "cat models/l")


def test_completes_playbook_names_when_playbooks_exist(repl):
    from remotedbg import playbook

    assert ":playbook" in _complete(repl, ":pl")
    names = sorted(playbook.list_playbooks())
    assert names, "the package ships playbooks"
    assert set(names) <= set(_complete(repl, ":playbook "))


def _drive(repl: Repl, keys: list[str], pause: float = 0.4) -> int:
    """Type `keys` (chunks, with a pause between for the threaded completer) into the prompt."""
    with create_pipe_input() as pipe:

        def typist() -> None:
            # the next keys only once the listings a Tab asked for have come (then the pause
            # lets the threaded completer apply them), so a loaded box is not a wrong key order
            for chunk in keys:
                time.sleep(pause)
                pipe.send_text(chunk)
                time.sleep(pause)  # the keys reach the completer, whose listing may start
                wait_for(repl.lister.idle, timeout=60)
            time.sleep(pause)
            pipe.close()

        thread = threading.Thread(target=typist, daemon=True)
        thread.start()
        code = repl.run_interactive(input=pipe, output=DummyOutput())
        thread.join()
    return code


def test_interactive_completion_history_and_cwd(repl, tree, capfd):
    repl.execute(f"cd {tree}")
    # a Tab waits for its listing however long a loaded box takes (what a slow host does to a
    # Tab, the deadline, is test_path_listing_is_cached_and_never_blocks_past_the_deadline's)
    repl.lister.deadline = 60.0
    capfd.readouterr()
    code = _drive(repl, [":gl\t", " mod\t", "llama_e\t", "\r", "cd mod\t", "\r", "pwd\r"])
    assert code == 0
    out = capfd.readouterr().out
    assert "models/llama_eagle3.py" in out and f"{tree}/models\n" in out
    lines = [
        line[1:]
        for line in history_path().read_text().splitlines()
        if line.startswith("+")  # FileHistory's format
    ]
    assert lines == [":glob models/llama_eagle3.py", "cd models/", "pwd"]
    # the history is there for the next run: Up recalls the last line
    capfd.readouterr()
    _drive(repl, ["\x1b[A\r"])
    assert f"{tree}/models\n" in capfd.readouterr().out


def test_ctrl_c_stops_the_remote_command_and_returns_to_the_prompt(repl, capfd):
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    _drive(repl, ["sleep 40.5\r", "echo after\r"], pause=0.2)
    assert time.monotonic() - start < 4
    captured = capfd.readouterr()
    assert "interrupted" in captured.err and "after" in captured.out
    assert wait_for(lambda: not pids_with_argv("sleep", "40.5"))


def test_quit_and_exit_leave_with_a_status(repl):
    assert _drive(repl, [":quit\r", "echo never\r"]) == 0
    assert _drive(repl, ["false\r", "exit\r"]) == 1
    assert _drive(repl, ["exit 5\r"]) == 5


# -- the pieces ------------------------------------------------------------------------


def test_split_words_handles_quotes_and_open_words():
    words, fresh = split_words("cat 'a b'/c\\ d \"e")
    assert [w.value for w in words] == ["cat", "a b/c d", "e"] and not fresh
    assert words[1].start == 4
    words, fresh = split_words("ls ")
    assert [w.value for w in words] == ["ls"] and fresh


def test_quote_path_keeps_tilde_expandable():
    assert quote_path("~/models/a b") == "~'/models/a b'"
    assert quote_path("plain/path.py") == "plain/path.py"


def test_startup_dump_and_env_difference():
    dump = (
        b"/home/u\0/home/u\0PATH=/usr/bin\0HOME=/home/u\0SHLVL=1\0"
        b"\x1eRDBGLOGIN\0motd noise\x1eRDBGENV\0PATH=/opt/conda/bin:/usr/bin\0"
        b"HOME=/home/u\0SHLVL=2\0CUDA_HOME=/usr/local/cuda\0BASH_FUNC_x%%=() { :; }\0"
    )
    home, cwd, plain, login = parse_startup(dump)
    assert (home, cwd) == ("/home/u", "/home/u")
    assert env_difference(login, plain) == {
        "PATH": "/opt/conda/bin:/usr/bin",
        "CUDA_HOME": "/usr/local/cuda",
    }
    assert parse_startup(b"/h\0/h\0A=1\0\x1eRDBGLOGIN\0")[3] is None  # no login shell


def _no_new_sessions(options):
    raise AssertionError("a :command opened its own session")


def test_colon_commands_borrow_the_repl_session(repl, tree, capfd, monkeypatch):
    from remotedbg.front.cli import context

    monkeypatch.setattr(context, "open_session", _no_new_sessions)
    before = repl.session.commands_run
    assert repl.execute(f"cd {tree}/models") == 0
    assert repl.execute(":glob llama*.py") == 0
    assert repl.session.commands_run == before + 2  # cd, then the agent: same connection
    assert capfd.readouterr().out == "llama.py\nllama_eagle3.py\n"
    assert repl.execute("true") == 0  # the session is still open afterwards


def test_repl_lines_are_history_with_their_calls(repl, isolated_state):
    from remotedbg.session import transcript

    assert repl.execute("echo typed-line | tr a-z A-Z") == 0
    typed = list(transcript.recent(10, calls=False))
    assert [(e["command"], e["target"], e["exit_status"]) for e in typed] == [
        ("echo typed-line | tr a-z A-Z", "testbox", 0)
    ]
    calls = [e for e in transcript.recent(50) if e["kind"] == "call"]
    assert any("echo typed-line" in e["command"] for e in calls)
