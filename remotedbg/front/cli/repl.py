"""repl: the interactive shell as a command (the REPL itself lives in front/repl.py)."""

import sys
from typing import Annotated

import typer

from remotedbg.front.cli.context import CommandContext, remote_command


@remote_command(json_output=False)
def repl_command(
    ctx: CommandContext,
    stop_on_error: Annotated[
        bool,
        typer.Option(
            "--stop-on-error",
            "-e",
            help="Script mode: stop at the first line that fails, with its status (as sh -e).",
        ),
    ] = False,
) -> int:
    """Interactive shell on the host: plain lines run remotely in the current directory, `:cmd`
    runs remotedbg commands on the same connection. Every line obeys --timeout (default 120 s;
    raise it for lines such as `tail -f`), Ctrl-C stops one at any time. Reads lines from stdin
    when it is not a terminal and exits with the status of the last one.

    Example: remotedbg repl -H gpu-box   (a script: remotedbg repl -H gpu-box -e < lines.txt)"""
    from remotedbg.front.repl import Repl, stdin_lines  # late: the REPL imports the CLI app

    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    repl = Repl(
        ctx.session,
        ctx.options.host,
        python=ctx.python,
        line_timeout=ctx.options.timeout,  # a frozen peer must not hold a line forever
    )
    repl.start()
    if interactive:
        return repl.run_interactive()
    return repl.run_script(stdin_lines(), stop_on_error=stop_on_error)
