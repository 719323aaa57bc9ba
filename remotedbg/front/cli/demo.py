"""demo: vocab-audit on a built-in example box, no GPU machine and no network."""
# No `from __future__ import annotations` here: typer reads the Annotated options at runtime.

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console, ConsoleOptions, RenderResult
from rich.rule import Rule

from remotedbg.errors import ExitCode
from remotedbg.front.cli.context import CommandContext, json_command
from remotedbg.front.cli.playbook_report import RunReport
from remotedbg.front.cli.playbooks import execute
from remotedbg.front.environment import note
from remotedbg.front.writer import plain, write
from remotedbg.playbook import bind_variables, find_playbook, load_playbook

DEMO_SUMMARY = """\
Both drafts have full-size vocabularies (32,000 draft ids into 163,840 target ids). The audit
found the engine install, read which loader serves an Eagle3 draft and what it does with d2t
(target id = draft id + d2t[draft id]), and read only the d2t/t2d bytes of each checkpoint in
place. The first passes; the second would be served without an error while accepting almost no
drafted token, and the finding says why and how to fix the tensor.

Now run it on your box (an ssh_config alias; globs and ~ expand there):
  remotedbg playbook vocab-audit -H gpu-box --var draft='~/models/my-eagle3-draft'
  remotedbg playbook spec-audit -H gpu-box        # the running server, flags, layers, logs
  remotedbg locate-eagle -H gpu-box               # which engine code loads the draft"""


@dataclass
class DemoReport:
    """The demo's two audits, each under the command line that runs it on a box of one's own."""

    box: dict[str, Path]
    runs: list[tuple[str, list[str], RunReport]]  # title, the command line, its report

    @property
    def as_expected(self) -> bool:
        verdicts = tuple(report.outcome.verdict for _, _, report in self.runs)
        return verdicts == ("ok", "defect")

    def to_json(self) -> dict:
        return {
            "box": {k: str(v) for k, v in self.box.items()},
            "audits": {
                label: report.to_json()
                for label, (_, _, report) in zip(LABELS, self.runs, strict=True)
            },
            "as_expected": self.as_expected,
        }

    def to_markdown(self) -> str:
        return "\n".join(report.to_markdown() for _, _, report in self.runs)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for title, words, report in self.runs:
            yield Rule(title, align="left")
            yield plain(console, "$ " + shlex.join(words))
            yield report
        yield Rule("what you just saw", align="left")
        yield plain(console, DEMO_SUMMARY)


LABELS = ("good", "bad")
TITLES = {
    "good": "1/2  a correct EAGLE-3 draft: d2t holds offsets, as the loader expects",
    "bad": "2/2  the same draft, absolute ids in d2t: served silently, accepts ~none",
}


@json_command
def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Keep the demo box's temp dir.")] = False,
) -> int:
    """vocab-audit on a built-in example box (no GPU machine, no network): a correct EAGLE-3
    draft and one with absolute ids in d2t, full-size vocabularies, audited with --host local.

    Example: remotedbg demo"""
    import shutil

    from remotedbg.front.demo import build_demo_box, demo_directory
    from remotedbg.session import ConnectOptions

    root = demo_directory()
    try:
        note(f"building the demo box in {root} ...")
        box = build_demo_box(root)
        playbook = load_playbook(find_playbook("vocab-audit"))
        runs = []
        for label in LABELS:
            given = {
                "draft": str(box[label]),
                "target": str(box["target"]),
                "roots": str(box["engine"]),
                "servers": "false",  # the demo box is all there is: nothing of this machine
            }
            variables = bind_variables(playbook, given)
            ctx = CommandContext(ConnectOptions(host="local", timeout=120), json=False)
            try:
                outcome = execute(ctx, playbook, variables, allow_write=False)
            finally:
                ctx.close()
            words = ["remotedbg", "playbook", "vocab-audit", "-H", "local"]
            words += [w for k, v in given.items() for w in ("--var", f"{k}={v}")]
            runs.append((TITLES[label], words, RunReport(outcome)))
        shown = DemoReport(box, runs)
        write(shown)
        return ExitCode.OK if shown.as_expected else ExitCode.FINDINGS
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
