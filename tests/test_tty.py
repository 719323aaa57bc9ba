"""`run -t`: a remote program gets a terminal like `ssh -t` gives it, driven through a real
pseudo-terminal on this side (as a user's terminal emulator drives remotedbg) and the real sshd."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.procs import pids_with_argv, wait_for

PROGRAM = (
    "import os, sys\n"
    "print('size', tuple(os.get_terminal_size(0)), 'tty', os.isatty(0), flush=True)\n"
    "input('resize? ')\n"
    "print('size', tuple(os.get_terminal_size(0)), flush=True)\n"
    "print('got', input('name? '), flush=True)\n"
    "sys.exit(7)\n"
)


def _set_size(fd: int, columns: int, lines: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))


class Terminal:
    """remotedbg running on a pty of our own, as in a terminal emulator."""

    def __init__(self, argv: list[str], env: dict[str, str], columns: int, lines: int) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # pragma: no cover - the child
            _set_size(0, columns, lines)
            os.execve(sys.executable, [sys.executable, "-m", "remotedbg", *argv], env)
        self.pid, self.fd, self.seen = pid, fd, b""

    def wait_for(self, text: bytes, timeout: float = 20, after: int = 0) -> bytes:
        """Read the screen until `text` shows up (past offset `after`)."""
        deadline = time.monotonic() + timeout
        while text not in self.seen[after:]:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no {text!r} in {self.seen!r}"
            if select.select([self.fd], [], [], remaining)[0]:
                try:
                    self.seen += os.read(self.fd, 65536)
                except OSError:  # the child closed its side
                    break
        return self.seen

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def exit_status(self, timeout: float = 20) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with_status = os.waitpid(self.pid, os.WNOHANG)
            if with_status[0]:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(with_status[1])
            if select.select([self.fd], [], [], 0.05)[0]:
                try:
                    self.seen += os.read(self.fd, 65536)
                except OSError:
                    pass
        raise AssertionError(f"still running; screen so far: {self.seen!r}")


def _env(box, isolated_state) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "REMOTEDBG_SSH_CONFIG": str(box.ssh_config),
        "XDG_STATE_HOME": str(isolated_state),
        "TERM": "xterm",
        "REMOTEDBG_CONFIG": str(isolated_state / "no-config.toml"),
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    }


def test_run_t_gives_a_sized_terminal_keys_resizes_and_the_exit_status(box, isolated_state):
    term = Terminal(
        ["run", "-t", "-H", "testbox", "--", "python3", "-c", PROGRAM],
        _env(box, isolated_state),
        columns=101,
        lines=33,
    )
    term.wait_for(b"resize? ")
    assert b"size (101, 33) tty True" in term.seen
    _set_size(term.fd, 77, 19)  # the window is resized: the kernel signals remotedbg
    time.sleep(0.3)
    term.type(b"\r")
    term.wait_for(b"name? ")
    assert b"size (77, 19)" in term.seen
    term.type(b"hello\r")
    term.wait_for(b"got hello")
    assert term.exit_status() == 7


def test_ctrl_c_reaches_the_remote_program_and_nothing_stays(box, isolated_state):
    term = Terminal(
        ["run", "-t", "-H", "testbox", "--", "sh", "-c", "echo ready; exec sleep 31.7"],
        _env(box, isolated_state),
        columns=80,
        lines=24,
    )
    term.wait_for(b"ready")
    assert wait_for(lambda: pids_with_argv("sleep", "31.7"))
    term.type(b"\x03")  # raw mode: Ctrl-C is a byte for the remote terminal, as with ssh -t
    assert term.exit_status() != 0
    assert wait_for(lambda: not pids_with_argv("sleep", "31.7"))


def test_closing_the_terminal_leaves_nothing_running(box, isolated_state):
    term = Terminal(
        ["run", "-t", "-H", "testbox", "--", "sh", "-c", "echo ready; exec sleep 32.3"],
        _env(box, isolated_state),
        columns=80,
        lines=24,
    )
    term.wait_for(b"ready")
    assert wait_for(lambda: pids_with_argv("sleep", "32.3"))
    os.kill(term.pid, 9)  # the local side dies without a word
    os.waitpid(term.pid, 0)
    os.close(term.fd)
    assert wait_for(lambda: not pids_with_argv("sleep", "32.3"), timeout=15)


def test_repl_gives_a_terminal_to_programs_that_need_one(box, isolated_state):
    env = dict(_env(box, isolated_state), PROMPT_TOOLKIT_NO_CPR="1")  # we answer no queries
    term = Terminal(["repl", "-H", "testbox"], env, columns=90, lines=30)
    term.wait_for(b"testbox:~$")
    term.type(b"python3\r")  # alone, it prompts: it gets a terminal
    term.wait_for(b">>> ")
    term.type(b"import os; print('cols', os.get_terminal_size(0).columns)\r")
    term.wait_for(b"cols 90")
    mark = len(term.seen)
    term.type(b"exit()\r")
    term.wait_for(b"testbox:~$", after=mark)  # typed before the prompt, keys go to python
    mark = len(term.seen)
    term.type(b"python3 -c 'import os; print(\"piped\", os.isatty(0))'\r")
    term.wait_for(b"piped False")  # with arguments it is a plain line, as before
    assert b">>> " not in term.seen[mark:]
    term.type(b"exit\r")
    assert term.exit_status() == 0


def test_repl_lines_get_the_users_term_as_ssh_gives_it(box, isolated_state):
    """At a terminal, the REPL's lines see the user's TERM, as `ssh -t box` passes it (asked
    in the same test): `clear` and `tput` work instead of "TERM environment variable not
    set."; an exported TERM wins."""
    env = dict(_env(box, isolated_state), PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
    ssh = subprocess.run(["ssh", "-tt", "-F", str(box.ssh_config), "testbox", "echo $TERM"],
                         capture_output=True, timeout=30, env=env)  # fmt: skip
    assert ssh.stdout.strip() == b"xterm"
    term = Terminal(["repl", "-H", "testbox"], env, columns=90, lines=30)
    term.wait_for(b"testbox:~$")
    # quotes split the words, so what is waited for is the output, not the typed line's echo
    term.type(b'echo "te""rm=$TERM"; tput cols; clear; echo "clea""red=$?"\r')
    term.wait_for(b"cleared=")
    assert b"term=xterm" in term.seen and b"cleared=0" in term.seen
    assert b"TERM environment variable not set" not in term.seen
    mark = len(term.seen)
    term.type(b"export TERM=vt100\r")
    term.wait_for(b"testbox:~$", after=mark)
    mark = len(term.seen)
    term.type(b'echo "te""rm=$TERM"\r')
    term.wait_for(b"term=vt100", after=mark)
    term.type(b"exit\r")
    assert term.exit_status() == 0


def test_which_lines_want_a_terminal():
    from remotedbg.front.repl import wants_terminal

    wanted = [["top"], ["/usr/bin/htop"], ["python3"], ["nvidia-smi", "-l", "1"], ["less", "x"]]
    plain = [["python3", "x.py"], ["nvidia-smi"], ["ls", "-la"], ["bash", "-c", "true"], []]
    assert all(wants_terminal(words) for words in wanted)
    assert not any(wants_terminal(words) for words in plain)


def _cooked(fd: int) -> bool:
    lflag = termios.tcgetattr(fd)[3]
    return bool(lflag & termios.ICANON) and bool(lflag & termios.ECHO)


def _terminated(term: Terminal, signum: int) -> tuple[int, bool]:
    """Send `signum` to remotedbg; its exit status, and whether the terminal it leaves is back
    in the mode it found (read through the pty master, which shares the slave's termios)."""
    os.kill(term.pid, signum)
    deadline = time.monotonic() + 20
    while not (done := os.waitpid(term.pid, os.WNOHANG))[0]:
        assert time.monotonic() < deadline, term.seen
        if select.select([term.fd], [], [], 0.05)[0]:
            try:
                term.seen += os.read(term.fd, 65536)
            except OSError:
                pass
    cooked = _cooked(term.fd)
    os.close(term.fd)
    return os.waitstatus_to_exitcode(done[1]), cooked


def test_sigterm_in_run_t_restores_the_terminal_and_leaves_nothing(box, isolated_state):
    term = Terminal(
        ["run", "-t", "-H", "testbox", "--", "sh", "-c", "echo ready; exec sleep 33.1"],
        _env(box, isolated_state),
        columns=80,
        lines=24,
    )
    assert _cooked(term.fd)
    term.wait_for(b"ready")
    assert not _cooked(term.fd)  # raw while the remote program runs
    code, cooked = _terminated(term, 15)
    assert (code, cooked) == (128 + 15, True), term.seen
    assert wait_for(lambda: not pids_with_argv("sleep", "33.1"), timeout=15)


def test_sigterm_in_an_idle_repl_restores_the_terminal(box, isolated_state):
    env = dict(_env(box, isolated_state), PROMPT_TOOLKIT_NO_CPR="1")
    term = Terminal(["repl", "-H", "testbox"], env, columns=90, lines=30)
    term.wait_for(b"testbox:~$")
    time.sleep(0.3)
    assert not _cooked(term.fd)  # prompt_toolkit reads keys raw
    code, cooked = _terminated(term, 15)
    assert (code, cooked) == (128 + 15, True), term.seen
