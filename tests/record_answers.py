"""Records tests/answers/<entry>/<case>.json: what the real agent answers, run through a real
session (`--host local`: this machine's python3 boots the shipped agent, as on a box) over real
material: EAGLE-3 checkpoints, a target folder, the vLLM 0.33.0 release as `pip download`
fetches it (tests/releases.py) and a server log rendered from that release's own format strings
(tests/engine_logs.py), and the venv this runs in for the interpreters. Nothing here is
written by hand; re-run after an agent change:

    python -m tests.record_answers

Each file is {"entry", "args", "value"} with the work dir written as /box (the answers are
read for their shape, not their paths)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from remotedbg.engines.knowledge import knowledge, scan_args, server_scan_knowledge
from remotedbg.remote import calls
from remotedbg.remote.calls import AgentCall
from remotedbg.remote.primitives import Remote
from remotedbg.session import ConnectOptions, open_session
from tests.checkpoints import write_eagle3_checkpoint, write_target_config
from tests.releases import release
from tests.test_server_scan import write_vllm_log

HERE = Path(__file__).resolve().parent / "answers"
FINGERPRINT_TENSORS = ["d2t", "t2d", "fc.weight", "lm_head.weight"]  # as fleet.py asks


def cases(box: Path) -> list[tuple[str, AgentCall[Any]]]:
    draft = write_eagle3_checkpoint(box / "drafts" / "eagle3", 100, 1000, hidden=8)
    absolute = write_eagle3_checkpoint(box / "drafts" / "absolute", 100, 1000, "absolute", hidden=8)
    target = write_target_config(box / "target", 1000, tokenizer=True)
    (box / "notes.txt").write_text("hot_token_id = d2t\nx\n")
    vllm = release("vllm", "0.33.0")
    log = box / "vllm.log"
    write_vllm_log(vllm, log)
    fs = [str(box / "notes.txt"), str(box / "nope")]
    # the release's own tree; a small read budget keeps the answer a fixture's size (what the
    # budget leaves out is marked omitted, as on a box whose engine passes it)
    scan = scan_args([str(vllm.venv)], search_home=False, search_system=False,
                     max_total_bytes=32 << 10)  # fmt: skip
    scan["search_processes"] = False
    return [
        ("patterns", calls.GlobPaths(patterns=[str(box / "*"), "/nope*"], limit=100)),
        ("paths", calls.StatPaths(paths=fs, follow=False)),
        ("tree", calls.Find(root=str(box), names=["*.json"], type="f", limit=100)),
        ("context", calls.Grep(pattern="d2t", paths=[str(box)], context=1, include=["*.txt"])),
        ("text-and-missing", calls.ReadText(paths=[str(box / "*.txt"), "/nope"], max_bytes=4096)),
        ("files", calls.Sha256(paths=fs)),
        ("head", calls.Sha256Range(path=str(box / "notes.txt"), length=5)),
        ("eagle3", calls.ListTensors(path=str(draft))),
        ("d2t-t2d", calls.TensorRanges(path=str(draft), names=["d2t", "t2d"])),
        ("d2t", calls.TensorStats(path=str(draft), name="d2t", head=4)),
        ("clean", calls.VocabCheck(path=str(draft), target_path=str(target))),
        ("absolute-ids", calls.VocabCheck(path=str(absolute))),
        ("vllm-0.33.0", calls.ScanEngines(scan, knowledge=knowledge())),
        (
            "vllm-0.33.0-log",
            calls.ScanServers(log=str(log), processes=False, knowledge=server_scan_knowledge()),
        ),
        (
            "draft",
            calls.FingerprintFiles(files=[str(draft / "config.json")],
                                   tensors={str(draft): FINGERPRINT_TENSORS}),  # fmt: skip
        ),
        ("target", calls.TokenizerFingerprints(paths=[str(target), str(box / "nope")])),
        ("draft-and-missing", calls.ReadConfigs(paths=[str(draft), str(box / "nope")])),
        ("drafts", calls.FindDrafts(roots=[str(box / "drafts")])),
        ("this-box", calls.FindInterpreters(prefixes=[sys.prefix], modules=["numpy", "vllm"])),
        ("this-box", calls.Describe()),
        ("sum", calls.Snippet(code="result = sum(args['n'])", args={"n": [1, 2, 3]})),
        ("named-log", calls.ServerLogs(log=str(log), knowledge=server_scan_knowledge())),
        ("vllm-0.33.0-log", calls.ReadLogTail(path=str(log), lines=2)),
        ("vllm-0.33.0-log", calls.ReadLogFrom(path=str(log), offset=0, inode=os.stat(log).st_ino)),
        ("nothing-listening", calls.HttpProbe(port=1, requests=[], budget_s=2)),
        ("nothing-listening", calls.AskHttp(jobs=[[1, ["metrics", "server_info"]]], timeout=1)),
        ("checkout", calls.InstallDrift(installs=[{"path": str(_checkout(box)), "version": "1.0",
                                                   "kind": "checkout"}])),  # fmt: skip
    ]


def _checkout(box: Path) -> Path:
    """A git checkout of a tiny engine package, tagged v1.0, with one file edited since."""
    import subprocess

    repo = box / "engine-src"
    package = repo / "python" / "sglang"
    (package / "srt").mkdir(parents=True)
    (package / "srt" / "models.py").write_text("aux_hidden_states = []\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "release"], ["tag", "v1.0"]):
        subprocess.run([*git, *args], check=True)
    (package / "srt" / "models.py").write_text("aux_hidden_states = [None]\n")
    return package


def _shown(args: dict[str, Any]) -> dict[str, Any]:
    """The args as recorded: the knowledge tables (engines/knowledge.py) by name only."""
    return {k: "<engines.knowledge>" if k == "knowledge" else v for k, v in args.items()}


def _name(entry: str) -> str:
    return entry.removeprefix(f"{calls.AGENT}.").replace(":", "--")


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="rdbg-answers-"))
    box = work / "box"
    box.mkdir()
    try:
        with open_session(ConnectOptions(host="local", timeout=300)) as session:
            remote = Remote(session)
            for case, request in cases(box):
                value = remote.call(request)
                text = json.dumps(
                    {"entry": request.entry, "args": _shown(request.args()), "value": value},
                    indent=1,
                    sort_keys=True,
                    default=str,
                )
                out = HERE / _name(request.entry) / f"{case}.json"
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(text.replace(str(box), "/box") + "\n")
                print(f"{out.relative_to(HERE.parent)}: {out.stat().st_size} bytes")
    finally:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
