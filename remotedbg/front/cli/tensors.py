"""tensors ls|show|pull and vocab-check: draft checkpoints read in place on the host."""
# No `from __future__ import annotations` here: typer reads the Annotated options at runtime.

from pathlib import Path
from typing import Annotated, BinaryIO

import typer
from rich.table import Table

from remotedbg.actions.interpreter import checkpoint_call
from remotedbg.checkpoints.safetensors_writer import TensorSlot, write_safetensors
from remotedbg.contract import exit_code, verdict
from remotedbg.engines.text_config import TEXT_CONFIG_PATHS
from remotedbg.errors import ExitCode, LocalFileKept, LocalFileUnwritable, UsageError
from remotedbg.front.cli.context import CommandContext, remote_command
from remotedbg.front.environment import environment, stdout_console
from remotedbg.front.output import printable
from remotedbg.front.report import Findings, Verdict, summary_table
from remotedbg.front.writer import Document, write
from remotedbg.remote import calls
from remotedbg.remote.fetch import fetch_range

app = typer.Typer(help="Tensors of a checkpoint on the host, read in place.", no_args_is_help=True)
PathArg = Annotated[
    str,
    typer.Argument(help="Checkpoint dir, weight file, or Hugging Face cache folder on the host."),
]


@app.command("ls")
@remote_command
def ls(ctx: CommandContext, path: PathArg) -> int:
    """List tensors: name, dtype, shape, bytes, shard (reads only the headers).

    Example: remotedbg tensors ls -H gpu-box '~/drafts/kimi-eagle3'"""
    listing = checkpoint_call(ctx.remote, calls.ListTensors(path=path))

    def shown() -> None:
        table = Table(box=None)
        table.add_column("name", no_wrap=True, overflow="fold")  # the column a user reads for
        table.add_column("dtype", no_wrap=True, min_width=5)
        table.add_column("shape", no_wrap=True)
        table.add_column("bytes", justify="right", no_wrap=True, min_width=5)
        table.add_column("file", overflow="ellipsis", ratio=1)  # the least important, cut first
        for tensor in listing["tensors"]:
            table.add_row(
                printable(tensor["name"]),
                tensor["dtype"],
                str(tensor["shape"]),
                f"{tensor['bytes']:,}",
                Path(tensor["file"]).name,
            )
        stdout_console().print(table)
        stdout_console().print(
            f"{len(listing['tensors'])} tensors in {len(listing['files'])} file(s)"
            f" at {printable(listing['path'])}",
            markup=False,
        )

    write(Document(listing, shown))
    return ExitCode.OK


@app.command("show")
@remote_command
def show(
    ctx: CommandContext,
    path: PathArg,
    name: Annotated[str, typer.Argument(help="Tensor name (or its last component, e.g. d2t).")],
    head: Annotated[int, typer.Option("--head", min=0, help="First values to show.")] = 10,
) -> int:
    """Shape, dtype, min/max/mean, unique count (integers) and first values of one tensor.

    Example: remotedbg tensors show -H gpu-box '~/drafts/kimi-eagle3' d2t"""
    stats = checkpoint_call(ctx.remote, calls.TensorStats(path=path, name=name, head=head))

    def shown() -> None:
        stdout_console().print(
            summary_table(
                printable(stats["name"]),
                [(key, value) for key, value in stats.items() if key != "name"],
            )
        )

    write(Document(stats, shown))

    return ExitCode.OK


@app.command("pull")
@remote_command
def pull(
    ctx: CommandContext,
    path: PathArg,
    names: Annotated[list[str], typer.Argument(help="Tensor names to pull.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Local .safetensors file.")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace --output if it already exists.")
    ] = False,
) -> int:
    """Copy only the named tensors' bytes here, as a new safetensors file (an existing file is
    kept unless --force).

    Example: remotedbg tensors pull -H gpu-box '~/drafts/kimi-eagle3' d2t t2d -o map.safetensors"""
    if output.exists() and output.is_dir():
        raise UsageError(f"--output {output} is a directory")
    if output.exists() and not force:
        raise LocalFileKept(f"--output {output} exists: kept (--force replaces it)")
    ranges = checkpoint_call(ctx.remote, calls.TensorRanges(path=path, names=names))
    tensors = {t["name"]: t for t in ranges["tensors"]}
    slots = [TensorSlot(t["name"], t["dtype"], t["shape"], t["length"]) for t in ranges["tensors"]]
    total = sum(slot.length for slot in slots)
    progress = environment().transfer_progress(total)
    task = progress.add_task("pull", total=total) if progress else None
    methods = set()

    def fill(slot: TensorSlot, handle: BinaryIO) -> None:
        tensor = tensors[slot.name]

        def sink(data: bytes) -> None:
            try:
                handle.write(data)
            except OSError as exc:  # the local file's: the read would call it a lost connection
                raise _unwritable(output, exc) from None
            if progress is not None and task is not None:
                progress.advance(task, len(data))

        methods.add(
            fetch_range(ctx.session, tensor["file"], tensor["offset"], tensor["length"], sink)
        )

    try:
        if progress:
            with progress:
                size = write_safetensors(output, slots, fill, force=force)
        else:
            size = write_safetensors(output, slots, fill, force=force)
    except FileExistsError as exc:  # another process wrote it meanwhile
        raise UsageError(str(exc)) from None
    except OSError as exc:  # the reads raise their own errors: this is the local file's
        raise _unwritable(output, exc) from None
    summary = {
        "output": str(output),
        "tensors": [s.name for s in slots],
        "tensor_bytes": total,
        "file_bytes": size,
        "method": sorted(methods),
    }

    def shown() -> None:
        stdout_console().print(
            f"wrote {len(slots)} tensor(s), {total:,} bytes of tensor data, to "
            f"{output} (via {', '.join(sorted(methods))})",
            markup=False,
        )

    write(Document(summary, shown))

    return ExitCode.OK


def _unwritable(output: Path, exc: OSError) -> LocalFileUnwritable:
    return LocalFileUnwritable(f"--output {output}: {exc.strerror or exc} (nothing written)")


@remote_command
def vocab_check(
    ctx: CommandContext,
    draft: Annotated[str, typer.Argument(help="Draft checkpoint on the host.")],
    target: Annotated[
        str | None, typer.Option("--target", help="Target model dir or config.json on the host.")
    ] = None,
) -> int:
    """Check the draft's d2t/t2d vocab map in place; exit 1 on any error-level finding.

    Example: remotedbg vocab-check -H gpu-box '~/drafts/kimi-eagle3' --target '~/models/Kimi-K2'"""
    ask = calls.VocabCheck(path=draft, target_path=target, text_config_paths=TEXT_CONFIG_PATHS)
    report = checkpoint_call(ctx.remote, ask)

    def shown() -> None:
        render_vocab_report(report)

    write(Document(report, shown))

    reasons = [u["reason"] for u in report.get("unknown") or []]
    return exit_code(verdict(report["findings"], reasons)[0])


def render_vocab_report(report: dict) -> None:
    reasons = [u["reason"] for u in report.get("unknown") or []]
    stdout_console().print(Verdict(*verdict(report["findings"], reasons)))
    summary = report.get("summary", {})
    collapse = summary.get("direct_loader_collapse") or {}
    rows = [
        (key, summary.get(key))
        for key in (
            "draft_vocab",
            "target_vocab",
            "format",
            "format_evidence",
            "d2t_dtype",
            "t2d_dtype",
            "lm_head_shape",
            "eos_ids",
            "backend",
        )
        if summary.get(key) is not None
    ]
    if collapse:
        rows.append(
            (
                "if a loader used d2t as direct ids",
                f"{collapse.get('draft_ids')} draft ids would land on "
                f"{collapse.get('distinct_targets')} distinct target ids (up to "
                f"{collapse.get('max_collapse')} on one)",
            )
        )
    stdout_console().print(summary_table("vocab map", rows))
    sample = (summary.get("tokenizer_sample") or {}).get("mapped") or []
    if sample:
        table = Table(
            "draft id",
            "target id",
            "token",
            "intended",
            box=None,
            title="decoded sample",
            title_justify="left",
        )
        for row in sample:
            table.add_row(
                str(row.get("draft_id")),
                str(row.get("target_id")),
                printable(repr(row.get("token"))),
                printable(repr(row.get("intended_token", row.get("token")))),
            )
        stdout_console().print(table)
    stdout_console().print(Findings(report["findings"]))
