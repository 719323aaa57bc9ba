"""Layer 6: the command line. Each module registers one group of commands."""

from __future__ import annotations

import typer

from remotedbg.cli import files, locate, playbooks, repl, tensors
from remotedbg.cli.context import remote_command

app = typer.Typer(
    name="remotedbg",
    help="Remote debugging over SSH for speculative-decoding deployments (SGLang, vLLM).",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

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
app.command("vocab-check")(remote_command(tensors.vocab_check))


def main() -> None:
    app()
