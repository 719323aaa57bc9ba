"""Layer 6: the command line. Each module registers one group of commands."""

from typing import Annotated

import typer

from remotedbg import __version__
from remotedbg.cli import files, help_text, locate, playbooks, repl, tensors

app = typer.Typer(
    name="remotedbg",
    help="Remote debugging over SSH for speculative-decoding deployments (SGLang, vLLM).",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"remotedbg {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Remote debugging over SSH for speculative-decoding deployments (SGLang, vLLM)."""


app.command("run", context_settings={"allow_interspersed_args": False})(files.run)
app.command("glob")(files.glob)
app.command("find")(files.find)
app.command("grep")(files.grep)
app.command("cat")(files.cat)
app.command("history")(files.history)
app.add_typer(tensors.app, name="tensors")
app.add_typer(playbooks.app, name="playbook")
app.command("demo")(playbooks.demo)
app.command("repl")(repl.repl_command)
app.command("locate-eagle")(locate.locate_eagle)
app.command("vocab-check")(tensors.vocab_check)


def main() -> None:
    command = typer.main.get_command(app)
    help_text.name_values(command)
    command(prog_name="remotedbg")
