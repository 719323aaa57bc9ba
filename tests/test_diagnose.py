"""remotedbg diagnose on the test box: a stand-in server whose Python imports an engine tree the
test wrote (so the install, draft, target, launch line, log and live counts are all the
server's own), one planted defect at a time; each must come out as the first cause, and a
healthy deployment exits 0 with what was ruled out."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from tests.checkpoints import write_eagle3_checkpoint, write_target_config
from tests.engine_trees import SGLANG_LLAMA_EAGLE3_DIRECT, write_sglang_checkout
from tests.test_logs import _generate
from tests.test_spec_checks import ADD_1_WHEN_FIRST_IS_1, DRAFT_MODEL_FILE, target_source

HEALTHY = [3, 2, 3, 3]


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("diagnose")
    engine = write_sglang_checkout(root / "engine", direct_variant=False)
    models = engine / "srt" / "models"
    (models / "llama_eagle3.py").write_text(textwrap.dedent(DRAFT_MODEL_FILE).lstrip())
    (models / "deepseek_v2.py").write_text(target_source(ADD_1_WHEN_FIRST_IS_1))
    direct = write_sglang_checkout(root / "engine-direct", direct_variant=False)
    (direct / "srt" / "models" / "deepseek_v2.py").write_text(
        target_source(ADD_1_WHEN_FIRST_IS_1)
    )
    (direct / "srt" / "models" / "llama_eagle3.py").write_text(
        SGLANG_LLAMA_EAGLE3_DIRECT.replace("LlamaForCausalLMEagle3Direct", "LlamaForCausalLMEagle3")
    )
    target = write_target_config(root / "target")
    config = json.loads((target / "config.json").read_text())
    config["num_hidden_layers"] = 61
    (target / "config.json").write_text(json.dumps(config))
    drafts = {name: write_eagle3_checkpoint(root / "drafts" / name, defect=defect)
              for name, defect in (("good", None), ("absolute", "absolute"))}  # fmt: skip
    for draft in drafts.values():  # each with its own embedding, as SpecForge exports them
        save_file({"embed_tokens.weight": np.zeros((16, 64), dtype=np.float16)},
                  str(draft / "embed.safetensors"))  # fmt: skip
    return {
        "engine": engine,
        "engine-direct": direct,
        "target": target,
        **drafts,
    }


def _launch(world: dict, draft: str, algorithm: str = "EAGLE3") -> list[str]:
    return ["--model-path", str(world["target"]), "--speculative-algorithm", algorithm,
            "--speculative-draft-model-path", str(world[draft]), "--speculative-num-steps", "3",
            "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]  # fmt: skip


def _diagnose(cli, server, *extra: str) -> tuple[int, dict]:
    result = cli("diagnose", "-H", "testbox", "--server", str(server.pid), "--json",
                 "--budget", "30", *extra, timeout=180)  # fmt: skip
    assert result.stdout, result.stderr.decode()[-2000:]
    return result.returncode, json.loads(result.stdout)


def test_a_healthy_deployment_exits_0_with_what_was_ruled_out(cli, standin, world):
    server = standin("sglang", {"pattern": {"default": HEALTHY}}, args=_launch(world, "good"),
                     engine_tree=world["engine"])  # fmt: skip
    code, doc = _diagnose(cli, server)
    assert (code, doc["verdict"]) == (0, "ok"), (doc["causes"], doc["unknown"])
    ruled = {item["hypothesis"] for item in doc["ruled_out"]}
    assert "vocab map" in ruled and "speculative algorithm matches the draft's family" in ruled
    assert doc["server"]["pid"] == server.pid
    assert doc["measured"]["from"] == "probe" and doc["measured"]["ceiling"] == 4
    assert doc["measured"]["ratio"] >= 0.6


@pytest.mark.parametrize(
    ("draft", "algorithm", "tree", "extra", "first"),
    [
        ("absolute", "EAGLE3", "engine", [], "d2t-absolute-ids"),
        ("good", "EAGLE", "engine", [], "algorithm-mismatch"),
        ("good", "EAGLE3", "engine-direct", [], "loader-direct-map"),
        # trained on layer outputs 2,30,58; the target captures 1,29,57 (the tree's rule)
        ("good", "EAGLE3", "engine", ["--var", "train_layers=2,30,58"], "aux-layers-mismatch"),
        # served at 64K positions, a draft trained to 2,048
        ("good", "EAGLE3+ctx", "engine", [], "context-exceeds-draft"),
    ],
)
def test_a_planted_defect_is_the_first_cause(
    cli, standin, world, draft, algorithm, tree, extra, first
):
    # the engine's live counts look poor, as a broken head's do: the cause still leads
    launch = _launch(world, draft, algorithm.split("+")[0])
    if algorithm.endswith("+ctx"):
        launch += ["--context-length", "65536"]
    server = standin("sglang", {"pattern": {"default": [0, 1, 0, 0]}}, args=launch,
                     engine_tree=world[tree])  # fmt: skip
    code, doc = _diagnose(cli, server, *extra)
    assert code == 1, doc["unknown"]
    assert doc["causes"][0]["id"] == first, [c["id"] for c in doc["causes"]]
    assert doc["causes"][0]["fix"]
    assert doc["headline"].startswith(first)


def test_a_domain_gap_only_the_probe_sees(cli, standin, world, tmp_path):
    script = {"pattern": {"default": [3, 3, 2, 3], "chinese": [0, 0, 1, 0]}}
    server = standin("sglang", script, args=_launch(world, "good"), engine_tree=world["engine"])
    code, doc = _diagnose(cli, server)
    # a warning ranks first and shows; only an error-level cause is a defect (issue 42)
    assert code == 0 and doc["verdict"] == "ok"
    assert doc["headline"].startswith("with warnings: accept-domain-gap")
    assert doc["causes"][0]["id"] == "accept-domain-gap" and doc["causes"][0]["source"] == "live"
    assert doc["causes"][0]["evidence"]["category"] == "chinese"
    static = cli("diagnose", "-H", "testbox", "--server", str(server.pid), "--json",
                 "--no-probe")  # fmt: skip
    assert static.returncode == 0, static.stdout  # nothing static is wrong: only the probe knew
    report = tmp_path / "diagnose.md"
    text = cli("diagnose", "-H", "testbox", "--server", str(server.pid), "--report", str(report),
               "--budget", "30", timeout=180)  # fmt: skip
    out = text.stdout.decode()
    assert "accept-domain-gap" in out and "ruled out" in out
    markdown = report.read_text()
    assert markdown.startswith("# remotedbg diagnose on `testbox`")
    # as probe --report: the figure beside it, accept length per kind and per draft position.
    # The stand-in accepts 0, 0, 1, 0 drafts per verify step on Chinese: 5 tokens in 4 steps.
    assert "## Acceptance measured by the probe" in markdown
    assert "![acceptance](diagnose.svg)" in markdown
    [row] = [line for line in markdown.splitlines() if line.startswith("| chinese (raw, greedy) |")]
    assert 1.2 <= float(row.split("|")[3]) <= 1.35, row
    assert "| draft position | accepted |" in markdown
    svg = (tmp_path / "diagnose.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "accept length by kind of prompt" in svg


def test_two_servers_sharing_a_draft_are_each_judged_with_their_own_facts(cli, standin, world):
    """The same draft served twice: with EAGLE (wrong for an EAGLE-3 head; its log at accept
    length 1.00) and with EAGLE3 (right). Each --server, by PID or by port, gets only its own
    server's causes; the right one exits 0 (issue 45, item 4)."""
    wrong = standin("sglang", {"pattern": {"default": [0, 0, 0, 0]}},
                    args=_launch(world, "good", "EAGLE"), engine_tree=world["engine"])  # fmt: skip
    right = standin("sglang", {"pattern": {"default": HEALTHY}}, args=_launch(world, "good"),
                    engine_tree=world["engine"])  # fmt: skip
    for server in (wrong, right):  # each log gets its own accept-length lines
        for _ in range(3):
            _generate(server.port)
    assert "accept len: 1.00" in wrong.log.read_text() and "accept len: 1.00" not in (
        right.log.read_text()
    )
    for named in (str(right.port), str(right.pid)):
        result = cli("diagnose", "-H", "testbox", "--server", named, "--json", "--no-probe",
                     timeout=180)  # fmt: skip
        doc = json.loads(result.stdout)
        assert (result.returncode, doc["verdict"]) == (0, "ok"), (doc["causes"], doc["unknown"])
        assert doc["server"]["pid"] == right.pid
        evidence = [c.get("evidence") or {} for c in doc["causes"]]
        assert all(str(wrong.pid) not in json.dumps(e) for e in evidence), evidence
    code, doc = _diagnose(cli, wrong, "--no-probe")
    assert code == 1 and doc["causes"][0]["id"] == "algorithm-mismatch", doc["causes"]
    assert doc["server"]["pid"] == wrong.pid
    assert "served with --speculative-algorithm EAGLE" in doc["headline"] or doc["causes"]
    servers = {str((c.get("evidence") or {}).get("server")) for c in doc["causes"]} - {"None"}
    assert servers == {str(wrong.pid)}, doc["causes"]
    # spec-audit unscoped judges both deployments of the draft, each with its own facts;
    # --var server=PORT judges one and lists the other
    result = cli("playbook", "spec-audit", "-H", "testbox", "--json", timeout=240)
    doc = json.loads(result.stdout)
    mismatch = [f["evidence"].get("server") for f in doc["findings"]
                if f["id"] == "algorithm-mismatch"]  # fmt: skip
    assert str(wrong.pid) in mismatch and str(right.pid) not in mismatch, doc["findings"]
    low = [f["evidence"].get("server") for f in doc["findings"] if f["id"] == "accept-length-low"]
    assert str(right.pid) not in low, doc["findings"]
    result = cli("playbook", "spec-audit", "-H", "testbox", "--json", "--var",
                 f"server={right.port}", timeout=240)  # fmt: skip
    doc = json.loads(result.stdout)
    assert [s["pid"] for s in doc["results"]["servers"]["servers"]] == [right.pid]
    assert wrong.pid in [s["pid"] for s in doc["results"]["servers"]["also_on_box"]]
    assert not [f for f in doc["findings"] if f["id"] in ("algorithm-mismatch",
                                                          "accept-length-low")], doc["findings"]


def test_fix_lines_wrap_at_words_to_the_terminal_never_cut(cli, standin, world):
    """On a 60-column terminal each `fix:` is whole, wrapped at words, its lines under its
    text (issue 50: printed as one line, the terminal broke it mid-word at its edge)."""
    server = standin("sglang", {"pattern": {"default": [0, 1, 0, 0]}},
                     args=_launch(world, "good", "EAGLE"), engine_tree=world["engine"])  # fmt: skip
    words = ["diagnose", "-H", "testbox", "--server", str(server.pid), "--no-probe"]
    doc = json.loads(cli(*words, "--json", timeout=180).stdout)
    lines = cli(*words, env={"COLUMNS": "60"}, timeout=180).stdout.decode().splitlines()
    fixes = []
    for at, line in enumerate(lines):
        if line.startswith("      fix: "):
            block = [line]
            while at + len(block) < len(lines) and lines[at + len(block)].startswith(" " * 11):
                block.append(lines[at + len(block)])
            assert all(len(b) <= 60 or len(b.split()) == 1 for b in block[1:]), block
            assert len(block[0]) <= 60 or len(block[0].split()) == 2, block
            fixes.append(" ".join(" ".join(block).split()[1:]))
    assert doc["causes"] and fixes == [" ".join(c["fix"].split()) for c in doc["causes"]]
    assert len(fixes[0]) > 60  # wrapped: longer than a line
