"""The connection options every remote command takes, and the context a command body runs in.

`remote_command` injects the options into a command's signature, so each command declares only
its own arguments, and maps every RemotedbgError to its one-line message and exit code.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer

from remotedbg.connection_options import OPTIONS, ConnectionOption
from remotedbg.errors import ExitCode, RemotedbgError, StdoutClosed, UsageError
from remotedbg.front.cli import help_text
from remotedbg.front.environment import environment, error_line
from remotedbg.front.writer import Document, write
from remotedbg.remote.primitives import Remote
from remotedbg.session import ConnectOptions, Session, open_session

# Who lends warm sessions to the commands run in this process: the REPL its one session
# (remotedbg.front.repl), a persistent-session daemon the ones it keeps (remotedbg.persist.daemon).
# Given a command's options: a session to borrow (close() leaves it open), or None to open
# one for this command only.
SESSION_KEEPER: ContextVar[Callable[[ConnectOptions], Session | None] | None] = ContextVar(
    "remotedbg_session_keeper", default=None
)


@dataclass
class CommandContext:
    options: ConnectOptions
    json: bool
    python: str | None = None
    _session: Session | None = field(default=None, repr=False)

    @property
    def session(self) -> Session:
        if self._session is None:
            keeper = SESSION_KEEPER.get()
            kept = keeper(self.options) if keeper is not None else None
            if kept is not None:
                return kept  # borrowed: close() leaves it open
            self._session = open_session(self.options)
        return self._session

    def one_command(self) -> Session:
        """The session for a command that runs one remote command: when it was opened for
        this command alone (not the REPL's, not a persistent daemon's), that command gets an
        exec channel instead of booting the executor it would use once."""
        session = self.session
        if self._session is not None:
            session.one_shot = True
        return session

    @property
    def remote(self) -> Remote:
        return Remote(self.session, self.python)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def _option(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


HELP = help_text.CONNECTION_PANEL


def complete_hosts(incomplete: str) -> list[str]:
    """Shell completion for --host: 'local' and the aliases of the ssh_config in use; after a
    comma (a fleet), the next host."""
    from remotedbg.session.target import config_aliases, config_path

    done, _, last = incomplete.rpartition(",")
    prefix = f"{done}," if done else ""
    try:
        names = ["local", *config_aliases(config_path(None)[0])]
    except RemotedbgError:  # a named config file that does not exist
        names = ["local"]
    return [prefix + name for name in names if name.startswith(last)]


def _connection_parameter(option: ConnectionOption) -> inspect.Parameter:
    """A connection option (remotedbg.connection_options) as the commands take it."""
    extra: dict[str, Any] = {}
    if option.name == "host":
        extra["autocompletion"] = lambda incomplete: complete_hosts(incomplete)
    declared = typer.Option(
        *option.flags,
        envvar=option.envvar,
        metavar=option.metavar,
        min=option.min,
        max=option.max,
        help=option.help,
        rich_help_panel=HELP,
        **extra,
    )
    return _option(option.name, Annotated[option.kind, declared], option.default)


CONNECTION_PARAMETERS = [
    *(_connection_parameter(option) for option in OPTIONS),
    _option(
        "json",
        Annotated[
            bool,
            typer.Option(
                "--json", help="Print one JSON document on stdout and nothing else there."
            ),
        ],
        False,
    ),
]
_CONNECTION_NAMES = [p.name for p in CONNECTION_PARAMETERS]
_JSON_PARAMETER = next(p for p in CONNECTION_PARAMETERS if p.name == "json")


#: `--server PID|PORT`, declared once for the commands that take it (probe, logs, diagnose);
#: remotedbg.actions.server_arg reads it.
ServerOption = Annotated[
    str,
    typer.Option(
        "--server",
        metavar="PID|PORT",
        help="The server: its PID or the port it serves on (needed when several run).",
    ),
]


def parse_vars(pairs: list[str]) -> dict[str, str]:
    """`--var KEY=VALUE` words (playbook variables, diagnose's) as a dict."""
    out = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise UsageError(f"--var {pair!r}: expected KEY=VALUE")
        out[key] = value
    return out


def fail(error: RemotedbgError) -> typer.Exit:
    return fail_with(error, error.exit_code)


def fail_with(error: RemotedbgError, code: int) -> typer.Exit:
    """The error's one line on stderr (and a JSON document with --json), exit `code`. A closed
    stdout (`| head -1`) is said by its exit status alone (141), as ssh and every local command
    say it: the reader left on purpose."""
    if isinstance(error, StdoutClosed):
        return typer.Exit(error.exit_code)
    error_line(str(error))
    write(Document({"error": str(error), "exit_code": code}))
    return typer.Exit(code)


def run_guarded(body: Callable[[], int | None], json: bool) -> None:
    """Run a command body; map errors and Ctrl-C to a one-line message and exit code. The
    command line's environment learns of --json here (every remote command, demo, playbook):
    the writer (remotedbg.front.writer) reads it there."""
    environment().json = json
    try:
        code = body()
    except RemotedbgError as error:
        raise fail(error) from None
    except KeyboardInterrupt:
        error_line("interrupted")
        raise typer.Exit(130) from None
    raise typer.Exit(code or ExitCode.OK)


def json_command(func: Callable[..., int | None]) -> Any:
    """A command with no connection whose result is one document: `--json` is injected (the
    writer reads it), errors and Ctrl-C mapped as for remote commands."""
    signature = inspect.signature(func, eval_str=True)

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> None:
        run_guarded(lambda: func(**kwargs), kwargs.pop("json"))

    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), _JSON_PARAMETER], return_annotation=None
    )
    return wrapper


def _first_obtained(connection: dict[str, Any]) -> None:
    """ssh takes the first value it obtains of each parameter: of `-H user@host` and a -l
    typed after it the user is `user` (`-l other -H user@host`: `other`), and so for
    `host:port` and -p. The one typed later is dropped here."""
    from remotedbg.host_spec import split_host_spec

    parts = split_host_spec(connection.get("host") or "")
    if parts is None:
        return
    typed = environment()
    if parts[0] and typed.typed_before(("--host", "-H"), ("--user", "-l")):
        connection["user"] = None
    if parts[2] and typed.typed_before(("--host", "-H"), ("--port", "-p")):
        connection["port"] = None


def remote_command(
    func: Callable[..., int | None] | None = None, *, json_output: bool = True
) -> Any:
    """Give `func(ctx, **own_args)` the connection options; it returns an exit code. A command
    whose output is not one document (the REPL) takes `json_output=False` and has no --json."""
    if func is None:
        return functools.partial(remote_command, json_output=json_output)
    # eval_str: the command modules use `from __future__ import annotations`; typer must see the
    # Annotated[..., typer.Option(...)] objects, not their source text, or every option loses
    # its flags and help
    signature = inspect.signature(func, eval_str=True)
    own = [p for name, p in signature.parameters.items() if name != "ctx"]
    injected = [p for p in _without_clashes(own) if json_output or p.name != "json"]

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> None:
        connection = {name: kwargs.pop(name, False) for name in _CONNECTION_NAMES}
        wanted = connection.pop("json")
        python = connection.pop("python")
        # read before the CLI runs (remotedbg.persist.client); declared here for help and checks
        connection.pop("persist")
        connection.pop("no_persist")
        connection["identity"] = connection["identity"] or []
        _first_obtained(connection)
        ctx = CommandContext(ConnectOptions(**connection), json=wanted, python=python)
        try:
            run_guarded(lambda: func(ctx, **kwargs), wanted)
        finally:
            ctx.close()

    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=own + injected, return_annotation=None
    )
    return wrapper


def _flags(parameter: inspect.Parameter) -> set[str]:
    meta = getattr(parameter.annotation, "__metadata__", ())
    names: set[str] = set()
    for item in meta:
        names |= {d for d in getattr(item, "param_decls", ()) or () if d.startswith("-")}
    return names


def _without_clashes(own: list[inspect.Parameter]) -> list[inspect.Parameter]:
    """The connection options minus any short flag the command gives a meaning of its own
    (grep's -i is ignore-case, as in grep; --identity stays)."""
    taken = set().union(*(_flags(p) for p in own)) if own else set()
    out = []
    for parameter in CONNECTION_PARAMETERS:
        clash = _flags(parameter) & taken
        if not clash:
            out.append(parameter)
            continue
        typ = parameter.annotation.__origin__
        info = parameter.annotation.__metadata__[0]
        decls = [d for d in info.param_decls if d not in clash]
        option = typer.Option(*decls, help=info.help, rich_help_panel=info.rich_help_panel)
        out.append(parameter.replace(annotation=Annotated[typ, option]))
    return out
