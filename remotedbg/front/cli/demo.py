"""demo: vocab-audit on a built-in example box, no GPU machine and no network."""
# No `from __future__ import annotations` here: typer reads the Annotated options at runtime.

import shlex
from typing import Annotated

import typer

from remotedbg.errors import ExitCode
from remotedbg.front.cli.context import CommandContext, run_guarded
from remotedbg.front.cli.playbook_report import outcome_document, render_outcome
from remotedbg.front.cli.playbooks import execute
from remotedbg.front.environment import note, stdout_console
from remotedbg.front.output import emit_json
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


def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Keep the demo box's temp dir.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
) -> None:
    """vocab-audit on a built-in example box (no GPU machine, no network): a correct EAGLE-3
    draft and one with absolute ids in d2t, full-size vocabularies, audited with --host local.

    Example: remotedbg demo"""
    import shutil

    from remotedbg.front.demo import build_demo_box, demo_directory
    from remotedbg.session import ConnectOptions

    def body() -> int:
        root = demo_directory()
        try:
            if not as_json:
                note(f"building the demo box in {root} ...")
            box = build_demo_box(root)
            playbook = load_playbook(find_playbook("vocab-audit"))
            documents = {}
            titles = {
                "good": "1/2  a correct EAGLE-3 draft: d2t holds offsets, as the loader expects",
                "bad": "2/2  the same draft, absolute ids in d2t: served silently, accepts ~none",
            }
            for label in ("good", "bad"):
                given = {
                    "draft": str(box[label]),
                    "target": str(box["target"]),
                    "roots": str(box["engine"]),
                    "servers": "false",  # the demo box is all there is: nothing of this machine
                }
                variables = bind_variables(playbook, given)
                ctx = CommandContext(ConnectOptions(host="local", timeout=120), json=as_json)
                try:
                    if not as_json:
                        stdout_console().rule(titles[label], align="left")
                        stdout_console().print(
                            "$ "
                            + shlex.join(
                                ["remotedbg", "playbook", "vocab-audit", "-H", "local"]
                                + [w for k, v in given.items() for w in ("--var", f"{k}={v}")]
                            ),
                            markup=False,
                            highlight=False,
                        )
                    outcome = execute(ctx, playbook, variables, allow_write=False)
                finally:
                    ctx.close()
                documents[label] = outcome_document(outcome)
                if not as_json:
                    render_outcome(outcome)
            expected = (documents["good"]["verdict"], documents["bad"]["verdict"]) == (
                "ok",
                "defect",
            )
            if as_json:
                emit_json(
                    {
                        "box": {k: str(v) for k, v in box.items()},
                        "audits": documents,
                        "as_expected": expected,
                    }
                )
            if not as_json:
                stdout_console().rule("what you just saw", align="left")
                stdout_console().print(DEMO_SUMMARY, markup=False, highlight=False)
            return ExitCode.OK if expected else ExitCode.FINDINGS
        finally:
            if not keep:
                shutil.rmtree(root, ignore_errors=True)

    run_guarded(body, as_json)
