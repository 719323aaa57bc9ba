"""`remotedbg repl`: an interactive shell on the host over the one warm session.

Plain lines run as remote shell commands in the remembered remote working directory, with the
environment a login on the host gives (captured once at start: `$SHELL -l`), output streamed
live. Lines starting with `:` run remotedbg's own commands in-process, through the same click
app as the CLI (so output and exit codes are the CLI's), borrowing the REPL's session.

When stdin is not a terminal the lines are read from it and run in order (script mode), and the
REPL exits with the status of the last line, like psql or sqlite3.
"""

import io
import os
import re
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

import typer
from platformdirs import user_state_path

from remotedbg.errors import (
    ConnectionFailed,
    ExitCode,
    Interrupted,
    RemotedbgError,
    UsageError,
)
from remotedbg.front.cli import context as cli_context
from remotedbg.front.environment import error_line, stdout_console
from remotedbg.front.repl_completion import (
    LIST_TIMEOUT,
    CommandSpec,
    RemoteLister,
    ReplCompleter,
    list_command,
    parse_listing,
)
from remotedbg.session import Session, transcript

HISTORY_FILE = "repl_history"
STARTUP_TIMEOUT = 20.0
UNLIMITED_OUTPUT = 1 << 62  # plain lines stream and do not capture: no cap, like ssh

_ENV_SENTINEL = b"\x1eRDBGENV\x00"
_LOGIN_SENTINEL = b"\x1eRDBGLOGIN\x00"
# One round trip at start: $HOME, the start directory, the plain exec environment, and the
# environment after the login shell's profile files (after a sentinel: profiles may print).
STARTUP_SCRIPT = (
    "printf '%s\\0' \"$HOME\" \"$(pwd)\"; env -0; printf '\\036RDBGLOGIN\\0'; "
    '"${SHELL:-/bin/sh}" -l -c \'printf "\\036RDBGENV\\0"; env -0\' </dev/null 2>/dev/null'
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VOLATILE = {"_", "SHLVL", "PWD", "OLDPWD", "PS1", "PS2", "PS4", "BASH_EXECUTION_STRING"}
_SHELL_OPERATORS = re.compile(r"[;&|<>\n]")  # a line with these is a pipeline: run as is

#: Programs that draw the screen or read keys: an interactive REPL line that starts with one
#: gets a terminal, as `ssh -t` gives it (a pipeline or a script line never does).
SCREEN_PROGRAMS = {"top", "htop", "btop", "nvtop", "less", "more", "man", "vi", "vim", "nvim"}
SCREEN_PROGRAMS |= {"nano", "watch", "tmux", "screen"}
PROMPT_PROGRAMS = {"python", "python3", "ipython", "bash", "sh", "zsh", "psql", "sqlite3"}


def wants_terminal(words: list[str]) -> bool:
    """Whether a command line runs a full-screen or prompting program (`top`, `python3` alone,
    `nvidia-smi -l 1`): such a program needs a terminal to draw on and to read keys from."""
    if not words:
        return False
    program = words[0].rsplit("/", 1)[-1]
    if program in SCREEN_PROGRAMS:
        return True
    if program in PROMPT_PROGRAMS:
        return len(words) == 1 or words[1:] in (["-i"], ["-q"])
    return program == "nvidia-smi" and any(
        w in ("-l", "-lms") or w.startswith(("--loop", "-l=")) for w in words[1:]
    )


_SHELL_PREFIX = re.compile(r"^[^:\s]+: line \d+: ")  # "bash: line 1: " before an error

REPL_ONLY = {
    "help": "List commands, or `:help CMD` for a command's options.",
    "quit": "Leave the REPL (also :exit, `exit [N]`, Ctrl-D).",
    "exit": "Leave the REPL.",
}
# Fixed for the whole REPL: given on `remotedbg repl`, refused on `:` commands.
FIXED_OPTIONS = {
    "host",
    "ssh_config",
    "identity",
    "user",
    "port",
    "connect_timeout",
    "timeout",
    "accept_new_host_key",
}


class Quit(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


# -- the REPL's session, lent to the commands it runs in-process --------------------------


class ReplSession:
    """The REPL's session as `:` commands see it: runs in the remote cwd, and never closes.

    Everything else (sftp, name, has_sftp, ...) is the real session's."""

    def __init__(self, session: Session, cwd: Callable[[], str]) -> None:
        self._session = session
        self._cwd = cwd

    def run(self, command: Any, *, cwd: str | None = None, **kwargs: Any) -> Any:
        return self._session.run(command, cwd=cwd or self._cwd(), **kwargs)

    def agent_call(
        self, entry: str, args: dict, timeout: float | None, label: str, cwd: str | None = None
    ) -> Any:
        """Agent calls run in the REPL's remote cwd, so relative paths mean what they say."""
        return self._session.agent_call(entry, args, timeout, label, cwd or self._cwd())

    def close(self) -> None:
        pass  # the REPL closes its session when it exits

    def __enter__(self) -> "ReplSession":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


@contextmanager
def shared_session(session: Any) -> Iterator[None]:
    """Inside the block every CommandContext uses `session` instead of opening its own, and
    `CommandContext.close()` leaves it open."""
    token = cli_context.SESSION_KEEPER.set(lambda options: session)
    try:
        yield
    finally:
        cli_context.SESSION_KEEPER.reset(token)


# -- parsing the environment dumps -------------------------------------------------------


def _parse_env(data: bytes) -> dict[str, str]:
    env = {}
    for entry in data.decode("utf-8", "surrogateescape").split("\0"):
        name, sep, value = entry.partition("=")
        if sep and _NAME.match(name):
            env[name] = value
    return env


def env_difference(new: Mapping[str, str], base: Mapping[str, str]) -> dict[str, str]:
    """The variables to export so a plain exec sees `new` (removals are not carried)."""
    return {
        name: value
        for name, value in new.items()
        if base.get(name) != value and name not in _VOLATILE and _NAME.match(name)
    }


def parse_startup(data: bytes) -> tuple[str, str, dict[str, str], dict[str, str] | None]:
    """(home, start dir, plain env, login env or None) from STARTUP_SCRIPT's output."""
    plain, _, login = data.partition(_LOGIN_SENTINEL)
    home_raw, _, rest = plain.partition(b"\0")
    cwd_raw, _, env_raw = rest.partition(b"\0")
    home = home_raw.decode("utf-8", "surrogateescape") or "/"
    cwd = cwd_raw.decode("utf-8", "surrogateescape") or home
    login_env = None
    if _ENV_SENTINEL in login:
        login_env = _parse_env(login.rpartition(_ENV_SENTINEL)[2])
    return home, cwd, _parse_env(env_raw), login_env


# -- the click app's commands, for dispatch and completion -------------------------------


# typer 0.29 carries its own copy of click: classes are not `click`'s, so go by behaviour.
def _is_group(command: Any) -> bool:
    return hasattr(command, "list_commands") and hasattr(command, "get_command")


def _context(command: Any) -> Any:
    return command.context_class(command)


def _cli_group() -> Any:
    from remotedbg.front.cli import app  # late: the tree's `repl` command imports this module

    command = typer.main.get_command(app)
    assert _is_group(command)
    return command


def _spec(name: str, command: Any) -> CommandSpec:
    hidden = FIXED_OPTIONS
    options: list[str] = []
    for param in command.params:
        if param.param_type_name == "option" and param.name not in hidden:
            options += [*param.opts, *param.secondary_opts]
    options += ["--help"]
    subs: dict[str, CommandSpec] = {}
    if _is_group(command):
        ctx = _context(command)
        for sub in command.list_commands(ctx):
            found = command.get_command(ctx, sub)
            if found is not None:
                subs[sub] = _spec(sub, found)
    short = (command.get_short_help_str(60) or "") if hasattr(command, "get_short_help_str") else ""
    return CommandSpec(name, short, sorted(set(options)), subs)


def command_specs(group: Any) -> dict[str, CommandSpec]:
    ctx = _context(group)
    specs = {}
    for name in group.list_commands(ctx):
        if name == "repl":
            continue
        command = group.get_command(ctx, name)
        if command is not None:
            specs[name] = _spec(name, command)
    for name, text in REPL_ONLY.items():
        specs[name] = CommandSpec(name, text)
    return specs


def _playbook_lister() -> Callable[[], Iterable[str]] | None:
    try:
        from remotedbg import playbook  # type: ignore[attr-defined]
    except ImportError:
        return None
    list_playbooks = getattr(playbook, "list_playbooks", None)
    if list_playbooks is None:
        return None

    def names() -> list[str]:
        found = list_playbooks()
        if isinstance(found, Mapping):
            return [str(name) for name in found]
        return [
            item
            if isinstance(item, str)
            else str(getattr(item, "name", None) or item.get("name", ""))  # type: ignore[union-attr]
            for item in found
        ]

    return names


# -- the REPL ------------------------------------------------------------------------------


def _write_stream(name: str, chunk: bytes) -> None:
    target = sys.stdout.buffer if name == "stdout" else sys.stderr.buffer
    target.write(chunk)
    target.flush()


class Repl:
    """Parses and runs REPL lines over one session; keeps the remote cwd and environment."""

    def __init__(
        self,
        session: Session,
        host: str,
        python: str | None = None,
        line_timeout: float | None = None,
    ) -> None:
        self.session = session
        self.host = host
        self.python = python
        self.line_timeout = line_timeout  # for plain lines; None = until done or Ctrl-C
        self.lock = threading.RLock()  # the session is shared with the completion thread
        self.terminal_lines = False  # set when a person types at a terminal (run_interactive)
        self.home = "/"
        self.cwd = "/"
        self.oldpwd: str | None = None
        self.base_env: dict[str, str] = {}
        self.env: dict[str, str] = {}
        self.login_env_ok = False
        self.status = 0
        self.interrupted = False  # the last line was stopped by Ctrl-C
        self.borrowed = ReplSession(session, lambda: self.cwd)
        self._group: Any | None = None
        self._specs: dict[str, CommandSpec] | None = None
        self.lister = RemoteLister(self._list_directory)

    # -- start -----------------------------------------------------------------------------
    def start(self) -> None:
        """Learn the home, start directory and login environment (one round trip)."""
        with self.lock:
            result = self.session.run(
                STARTUP_SCRIPT, timeout=STARTUP_TIMEOUT, label="repl: start (cwd, login env)"
            )
        self.home, self.cwd, self.base_env, login = parse_startup(result.stdout_bytes)
        self.login_env_ok = login is not None
        self.env = env_difference(login, self.base_env) if login else {}

    @property
    def group(self) -> Any:
        if self._group is None:
            self._group = _cli_group()
        return self._group

    @property
    def specs(self) -> dict[str, CommandSpec]:
        if self._specs is None:
            self._specs = command_specs(self.group)
        return self._specs

    def prompt_text(self) -> str:
        return f"{self.host}:{self.display_cwd()}$ "

    def display_cwd(self) -> str:
        home = self.home.rstrip("/")
        if home and (self.cwd == home or self.cwd.startswith(home + "/")):
            return "~" + self.cwd[len(home) :]
        return self.cwd

    # -- one line --------------------------------------------------------------------------
    def execute(self, line: str) -> int | None:
        """Run one line; returns its status, or None for a blank line or comment.

        Raises Quit to leave; KeyboardInterrupt outside a remote command propagates."""
        self.interrupted = False
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            return None
        started = time.time()
        status: int | None = 1
        try:
            status = self._execute(stripped)
        except Quit:
            status = 0
            raise
        finally:
            transcript.record_typed(stripped, self.host, status, started)
        return status

    def _execute(self, stripped: str) -> int | None:
        try:
            if stripped.startswith(":"):
                status = self.colon(stripped[1:])
            else:
                status = self.plain(stripped)
        except Quit:
            raise
        except RemotedbgError as error:
            error_line(str(error))
            self.interrupted = isinstance(error, Interrupted)
            if isinstance(error, ConnectionFailed):
                error_line("the connection will be re-established on the next line")
            status = error.exit_code
        self.status = status
        self.lister.invalidate()  # the line may have changed the files
        return status

    def plain(self, line: str) -> int:
        try:
            words = shlex.split(line)
        except ValueError:
            words = []
        if words and words[0] in ("exit", "logout") and len(words) <= 2:
            raise Quit(self._exit_code(words[1:]))
        if words and words[0] == "cd" and len(words) <= 2 and not _SHELL_OPERATORS.search(line):
            return self.cd(line[2:].strip())
        if words and words[0] == "export" and not _SHELL_OPERATORS.search(line):
            return self.export(line)
        if self.terminal_lines and wants_terminal(words) and not _SHELL_OPERATORS.search(line):
            with self.lock:
                return self.session.run_tty(line, cwd=self.cwd, env=self.env, label=line)
        # $? is the last line's status, as in a shell (a line is a shell of its own otherwise)
        last = f"(exit {self.status & 0xFF}); " if self.status & 0xFF else ""
        with self.lock:
            result = self.session.run(
                # through eval, a syntax error quotes the user's line, not remotedbg's wrapper
                last + "eval " + shlex.quote(line),
                cwd=self.cwd,
                env=self.line_env(),
                stream=_write_stream,
                capture=False,
                max_output=UNLIMITED_OUTPUT,
                timeout=self.line_timeout,
                label=line,
            )
        return result.exit_status if result.exit_status is not None else ExitCode.REMOTE

    def line_env(self) -> dict[str, str]:
        """The remembered environment, with the user's TERM when a person types at a terminal
        (ssh passes it with the terminal it asks for: `clear`, `tput`, `less` need it); an
        exported TERM wins."""
        term = os.environ.get("TERM")
        if self.terminal_lines and term and "TERM" not in self.env:
            return {"TERM": term, **self.env}
        return self.env

    def _exit_code(self, args: list[str]) -> int:
        if not args:
            return self.status
        try:
            return int(args[0]) & 0xFF
        except ValueError:
            raise UsageError(f"exit: {args[0]}: numeric argument required") from None

    def cd(self, target: str) -> int:
        """`cd DIR` resolved on the host (`cd DIR && pwd`); the cwd changes only if it exists."""
        if target == "-":
            if self.oldpwd is None:
                raise UsageError("cd: no previous directory")
            target = shlex.quote(self.oldpwd)
        command = f"cd -- {shlex.quote(self.cwd)} 2>/dev/null; cd {target} >/dev/null && pwd"
        with self.lock:
            result = self.session.run(command, env=self.env, timeout=30, label=f"cd {target}")
        if result.exit_status != 0:
            message = result.stderr.strip() or f"cd: {target}: cannot change directory"
            error_line(_SHELL_PREFIX.sub("", message.splitlines()[-1]))
            return ExitCode.FINDINGS
        resolved = result.stdout_bytes.decode("utf-8", "surrogateescape")
        resolved = resolved[:-1] if resolved.endswith("\n") else resolved
        if not resolved.startswith("/"):
            error_line(f"cd: unexpected answer from the host: {resolved!r}")
            return ExitCode.REMOTE
        if resolved != self.cwd:
            self.oldpwd = self.cwd
        self.cwd = resolved
        return ExitCode.OK

    def export(self, line: str) -> int:
        """`export NAME=VALUE ...`: evaluated on the host, remembered for the next lines."""
        command = f"{line} && printf '\\036RDBGENV\\0' && env -0"
        with self.lock:
            result = self.session.run(command, cwd=self.cwd, env=self.env, timeout=30, label=line)
        if result.exit_status != 0 or _ENV_SENTINEL not in result.stdout_bytes:
            error_line(result.stderr.strip() or f"{line}: failed")
            return result.exit_status or ExitCode.REMOTE
        new = _parse_env(result.stdout_bytes.rpartition(_ENV_SENTINEL)[2])
        self.env = env_difference(new, self.base_env)
        return ExitCode.OK

    # -- ':' commands ----------------------------------------------------------------------
    def colon(self, text: str) -> int:
        try:
            args = shlex.split(text)
        except ValueError as exc:
            raise UsageError(f"cannot parse the line: {exc}") from None
        if not args:
            return self.help([])
        name, rest = args[0], args[1:]
        if name in ("quit", "exit", "q"):
            raise Quit(self._exit_code(rest))
        if name == "help":
            return self.help(rest)
        if name == "repl":
            raise UsageError("already in the REPL")
        command = self.group.get_command(_context(self.group), name)
        if command is None:
            raise UsageError(f"no command :{name} (try :help)")
        return self.invoke([name, *rest], command)

    def invoke(self, args: list[str], command: Any) -> int:
        """Run a CLI command in-process, as `remotedbg ARGS --host H` would, on this session."""
        from remotedbg.front.cli import gnu_spelling

        args = [args[0], *gnu_spelling.ours(args[0], args[1:], gnu_spelling.value_options(command))]
        takes_host = any(param.name == "host" for param in command.params)
        if takes_host or _is_group(command):
            self._refuse_fixed_options(args, command)
        extra: list[str] = []
        leaf = self._leaf(args, command)
        if any(param.name == "host" for param in leaf.params):
            extra = ["--host", self.host]
            if self.python and "--python" not in args:
                extra += ["--python", self.python]
        full = self._insert_before_double_dash(args, extra)
        with self.lock, shared_session(self.borrowed):
            try:
                self.group.main(args=full, prog_name="remotedbg", standalone_mode=True)
            except SystemExit as done:
                code = done.code
                if code is None:
                    return ExitCode.OK
                return code if isinstance(code, int) else ExitCode.USAGE
        return ExitCode.OK

    def _leaf(self, args: list[str], command: Any) -> Any:
        while _is_group(command) and len(args) > 1:
            found = command.get_command(_context(command), args[1])
            if found is None:
                break
            command, args = found, args[1:]
        return command

    def _refuse_fixed_options(self, args: list[str], command: Any) -> None:
        leaf = self._leaf(args, command)
        fixed = set()
        for param in leaf.params:
            if param.param_type_name == "option" and param.name in FIXED_OPTIONS:
                fixed.update(param.opts)
        for arg in args[1:]:
            if arg == "--":
                break
            if arg in fixed or arg.split("=", 1)[0] in fixed:
                raise UsageError(f"{arg}: connection options are set once, on `remotedbg repl`")

    @staticmethod
    def _insert_before_double_dash(args: list[str], extra: list[str]) -> list[str]:
        if "--" in args:
            at = args.index("--")
            return args[:at] + extra + args[at:]
        return args + extra

    def help(self, args: list[str]) -> int:
        if args:
            name = args[0].lstrip(":")
            if name in REPL_ONLY:
                stdout_console().print(f":{name}  {REPL_ONLY[name]}", markup=False)
                return ExitCode.OK
            command = self.group.get_command(_context(self.group), name)
            if command is None or name == "repl":
                raise UsageError(f"no command :{name}")
            return self.invoke([*args, "--help"], command)
        lines = [
            "Plain lines run on the host in the current directory (login environment).",
            "  cd DIR | cd - | cd     change the remote directory (checked on the host)",
            "  export NAME=VALUE      remembered for the following lines",
            "  exit [N]               leave the REPL (also :quit, Ctrl-D)",
            "Lines starting with ':' run remotedbg commands on this session:",
        ]
        for name, spec in sorted(self.specs.items()):
            if name not in REPL_ONLY:
                lines.append(f"  :{name:<20} {spec.help}")
        lines += [f"  :{name:<20} {text}" for name, text in REPL_ONLY.items() if name != "exit"]
        lines.append("Tab completes paths on the host and commands; Ctrl-R searches history;")
        lines.append("Ctrl-C stops the running remote command.")
        stdout_console().print("\n".join(lines), markup=False)
        return ExitCode.OK

    # -- completion ------------------------------------------------------------------------
    def _list_directory(self, directory: str) -> list[str] | None:
        if not self.lock.acquire(timeout=0.2):
            return None  # a command is running: no listing now
        try:
            result = self.session.run(
                list_command(directory), timeout=LIST_TIMEOUT, label=f"repl: complete {directory}"
            )
        finally:
            self.lock.release()
        if result.exit_status != 0:
            return None
        return parse_listing(result.stdout_bytes)

    def completer(self) -> ReplCompleter:
        return ReplCompleter(
            self.specs,
            self.lister,
            cwd=lambda: self.cwd,
            home=lambda: self.home,
            playbooks=_playbook_lister(),
        )

    # -- the loops -------------------------------------------------------------------------
    def run_script(self, lines: TextIO, stop_on_error: bool = False) -> int:
        """Run lines in order; the status of the last line that ran is the result. With
        `stop_on_error`, the first line with a nonzero status ends the script (as `sh -e`)."""
        status = ExitCode.OK
        while True:
            line = lines.readline()
            if not line:
                return status
            try:
                result = self.execute(line)
            except Quit as leave:
                return leave.code
            except KeyboardInterrupt:
                error_line("interrupted")
                return 130
            if result is not None:
                status = result
                if stop_on_error and status != ExitCode.OK:
                    error_line(f"stopped at line {line.strip()!r}: status {status}")
                    return status
            if self.interrupted:
                return Interrupted.exit_code  # Ctrl-C ends a script, as in a shell

    def run_interactive(self, input: Any = None, output: Any = None) -> int:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import ThreadedCompleter
        from prompt_toolkit.history import FileHistory

        self.terminal_lines = input is None  # a real terminal, not a test's pipe

        path = history_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        prompt = PromptSession(
            history=FileHistory(str(path)),
            completer=ThreadedCompleter(self.completer()),
            complete_while_typing=False,
            input=input,
            output=output,
        )
        if output is None:
            note = "" if self.login_env_ok else " (login environment not available)"
            stdout_console().print(
                f"connected to {self.host}{note}; :help for commands, Ctrl-D to leave",
                markup=False,
            )
        while True:
            try:
                line = prompt.prompt(self.prompt_text())
            except KeyboardInterrupt:
                continue  # Ctrl-C at the prompt clears the line
            except EOFError:
                return ExitCode.OK
            try:
                self.execute(line)
            except Quit as leave:
                return leave.code
            except KeyboardInterrupt:
                error_line("interrupted")
                self.status = 130


def history_path():
    return user_state_path("remotedbg") / HISTORY_FILE


def stdin_lines() -> TextIO:
    return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape")
