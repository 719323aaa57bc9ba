"""get: files down from the host (globs expanded there), resumable, never overwriting unless
asked; the work is remotedbg.actions.download's, this module says what it did."""

from __future__ import annotations

import contextlib
from typing import Annotated

import typer

from remotedbg.actions.download import fetch_all, plan_get
from remotedbg.front.cli.context import CommandContext, remote_command
from remotedbg.front.cli.files import say_missing
from remotedbg.front.environment import environment, note, stderr_console
from remotedbg.front.output import printable
from remotedbg.front.writer import Document, write
from remotedbg.local_signals import Terminated


@remote_command
def get(
    ctx: CommandContext,
    sources: Annotated[list[str], typer.Argument(help="Remote files or globs.", metavar="REMOTE")],
    given: Annotated[
        str, typer.Argument(help="Local file, or directory for several.", metavar="DEST")
    ],
    force: Annotated[bool, typer.Option("--force", help="Replace local files.")] = False,
    recursive: Annotated[
        bool,
        typer.Option(
            "--recursive", "-r", help="Copy directories and what is below them, as scp -r."
        ),
    ] = False,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", min=1, metavar="N", help="At most N matches a glob, N entries a -r walk."
        ),
    ] = 100000,
) -> int:
    """Copy files from the host. Globs and ~ expand there; an interrupted copy resumes from
    its .part file; an existing local file is kept unless --force; -r copies directories.

    Example: remotedbg get -H gpu-box '~/logs/*.log' ./logs/   (a directory: get -r)"""
    planned = plan_get(ctx.remote, sources, given, force, recursive, limit)
    for entry in planned.missing:
        say_missing(f"no match for {printable(entry['pattern'])}", entry["pattern"])
    progress = environment().transfer_progress(planned.pending_bytes)
    try:
        with progress or contextlib.nullcontext():
            fetch_all(ctx.remote, planned, progress)
    except (KeyboardInterrupt, Terminated):
        for item in planned.downloads:
            if item.partial is not None and item.partial.exists():
                held = item.partial.stat().st_size
                stderr_console().print(
                    f"interrupted: {printable(str(item.partial))} kept ({held:,} bytes); "
                    "the same get resumes from it",
                    markup=False,
                )
        raise

    def shown() -> None:
        for d in planned.every:
            line = f"{d.status:8} {printable(d.remote)} -> {printable(str(d.local))}: {d.detail}"
            if d.status in ("done", "resumed"):
                note(line)
            else:  # why the exit status is not 0
                stderr_console().print(line, markup=False)

    write(Document(planned.document(), shown))
    for entry in planned.cut_globs:
        line = entry.get("stopped") or (
            f"{entry['pattern']}: the first {len(entry['matches']):,} of {entry['count']:,}"
            " matches copied"
        )
        stderr_console().print(f"remotedbg: {printable(line)}; --limit N lifts it", markup=False)
    for root in planned.cut:
        stderr_console().print(
            f"remotedbg: get -r stopped at {limit:,} entries below {printable(root)};"
            " --limit N lifts it",
            markup=False,
        )
    return planned.exit_code()
