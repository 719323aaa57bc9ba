"""remotedbg against a real engine: vLLM's CPU build serving a target and EAGLE-3 drafts built
here (tests/vllm_engine.py). Every expectation comes from the engine itself: its `/metrics`, read
here before and after, and the lines it writes to its log; never from remotedbg's output.

The tests are ordered by server (the fixture runs one at a time): the correct draft first, then
the planted mistake that kills the engine."""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from tests.procs import parent_of, wait_for
from tests.vllm_engine import SPEC_TOKENS, VllmServer, metrics

pytestmark = pytest.mark.network

SPEC_LINE = re.compile(
    r"SpecDecoding metrics: Mean acceptance length: ([\d.]+).*?Accepted: (\d+) tokens, "
    r"Drafted: (\d+) tokens, Per-position acceptance rate: ([\d., ]+?), Avg"
)


def counters(server: VllmServer) -> dict:
    """The engine's own speculative-decoding counters (summed over label sets but position)."""
    values = metrics(server.get("/metrics"))

    def total(name: str) -> float:
        return sum(v for k, v in values.items() if k.split("{")[0] == name)

    per_position = [0.0] * SPEC_TOKENS
    for key, value in values.items():
        found = re.search(r'position="(\d+)"', key)
        if key.startswith("vllm:spec_decode_num_accepted_tokens_per_pos_total{") and found:
            per_position[int(found.group(1))] += value
    return {
        "drafts": total("vllm:spec_decode_num_drafts_total"),
        "draft_tokens": total("vllm:spec_decode_num_draft_tokens_total"),
        "accepted": total("vllm:spec_decode_num_accepted_tokens_total"),
        "per_position": per_position,
        "generated": total("vllm:generation_tokens_total"),
    }


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                children.setdefault(parent_of(int(entry)), []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _json(result) -> dict:
    assert result.stdout.strip(), result.stderr.decode()[-3000:]
    return json.loads(result.stdout)


@pytest.mark.parametrize("host", ["local", "testbox"])
def test_probe_counts_are_the_engines_metrics_deltas(cli, vllm_server, host):
    server = vllm_server()
    before = counters(server)
    result = cli("probe", "-H", host, "--server", str(server.pid), "--json", "-n", "1",
                 "--max-tokens", "32", "--compare", "none", timeout=600)  # fmt: skip
    after = counters(server)
    doc = _json(result)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    delta = {k: after[k] - before[k] for k in ("drafts", "draft_tokens", "accepted", "generated")}
    positions = [a - b for a, b in zip(after["per_position"], before["per_position"], strict=True)]
    assert delta["drafts"] > 0
    overall, measured = doc["summary"]["overall"], doc["measurements"]
    assert overall["verify_steps"] == delta["drafts"]
    assert overall["completion_tokens"] == delta["generated"] == 5 * 32
    assert sum(m["accepted"] for m in measured) == delta["accepted"]
    assert sum(m["drafted"] for m in measured) == delta["draft_tokens"]
    # vLLM's own definition: mean acceptance length = 1 + accepted / drafts
    engine_length = round(1 + delta["accepted"] / delta["drafts"], 3)
    assert overall["accept_length"] == engine_length
    assert doc["summary"]["positions"] == [round(p / delta["drafts"], 3) for p in positions]
    assert doc["summary"]["other_traffic_tokens"] == 0
    lifetime = round(1 + after["accepted"] / after["drafts"], 3)
    assert doc["engine_figure"]["accept_length"] == lifetime
    # the draft predicts the target: real acceptance, below the ceiling (some tokens lie
    # outside its vocab)
    assert 1.5 < engine_length < 1 + SPEC_TOKENS
    assert doc["server"]["ceiling"] == 1 + SPEC_TOKENS and doc["findings"] == []


def _spec_lines(text: str) -> list[tuple[float, int, int, list[float]]]:
    return [
        (float(m[1]), int(m[2]), int(m[3]), [float(x) for x in m[4].split(",")])
        for m in map(SPEC_LINE.search, text.splitlines())
        if m
    ]


def drafted(server: VllmServer) -> None:
    """One greedy request, then the SpecDecoding line vLLM logs for it (every 10 s while it
    drafts): the server has a figure in its log, as one that has served traffic has."""
    count = len(_spec_lines(server.log.read_text()))
    server.post("/v1/completions", {"prompt": "Say hello?", "max_tokens": 32, "temperature": 0})
    assert wait_for(lambda: len(_spec_lines(server.log.read_text())) > count, 30, 0.5)


def test_logs_shows_the_engines_mean_acceptance_length(cli, vllm_server):
    server = vllm_server()
    drafted(server)
    time.sleep(12)  # an interval without drafts (no new line): the log holds still
    result = cli("logs", "-H", "local", "--server", str(server.pid), "-n", "200", "--json")
    doc = _json(result)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    tail = "\n".join(server.log.read_text().splitlines()[-200:])
    engine = _spec_lines(tail)
    assert engine and doc["path"] == str(server.log)
    assert doc["accept_length"] == [length for length, *_ in engine]
    assert doc["per_position_last"] == engine[-1][3]
    assert doc["spec_tokens"]["accepted"] == sum(line[1] for line in engine)
    assert doc["spec_tokens"]["drafted"] == sum(line[2] for line in engine)


def test_spec_audit_clears_the_correct_draft(cli, vllm_server, vllm_world):
    """Named: on a busy box (tests/strangers.py) an unscoped audit judges every server."""
    server = vllm_server()
    drafted(server)
    draft = vllm_world.models.draft("eagle3")
    result = cli("playbook", "spec-audit", "-H", "local", "--json",
                 "--var", f"roots={vllm_world.install.package}", "--var", f"draft={draft}",
                 timeout=300)  # fmt: skip
    doc = _json(result)
    assert (result.returncode, doc["verdict"]) == (0, "ok"), (doc["findings"], doc["inconclusive"])
    assert doc["inconclusive"] == []
    cleared = [f for f in doc["findings"] if f["id"] == "spec-config-cleared"]
    assert cleared and cleared[0]["evidence"]["server"] == str(server.pid)
    # the engine's own processes (VLLM::EngineCore and its workers) are that server, not others
    workers = descendants(server.pid)
    assert workers and not {s["pid"] for s in doc["also_on_box"]} & workers


def test_absolute_d2t_is_named_before_the_engine_dies_of_it(cli, vllm_server, vllm_world):
    server = vllm_server("eagle3-absolute-d2t")
    draft = vllm_world.models.draft("eagle3-absolute-d2t")
    result = cli("playbook", "spec-audit", "-H", "local", "--json",
                 "--var", f"roots={vllm_world.install.package}", "--var", f"draft={draft}",
                 timeout=300)  # fmt: skip
    doc = _json(result)
    assert result.returncode == 1, doc["findings"]
    errors = {f["id"] for f in doc["findings"] if f["severity"] == "error"}
    assert "d2t-absolute-ids" in errors
    assert server.alive()  # the engine starts with it: nothing was asked of it yet


def _engine_exception(server: VllmServer) -> str:
    """The exception line the engine logged when it died (its worker's traceback)."""
    lines = [line for line in server.log.read_text().splitlines() if "IndexError: " in line]
    assert lines, server.log.read_text()[-3000:]
    return lines[-1].split("] ", 1)[-1].strip()


def test_probe_is_the_request_that_kills_the_engine(cli, vllm_server):
    """The engine's own verdict on absolute d2t: the first request raises IndexError in
    llama_eagle3.py compute_logits and the server exits. probe gives up with exit 4."""
    server = vllm_server("eagle3-absolute-d2t")
    # diagnose, as a user types it (the only server; nothing sent): the cause comes first
    diagnosed = cli("diagnose", "-H", "local", "--server", str(server.pid), "--no-probe",
                    "--json", timeout=300)  # fmt: skip
    causes = [c["id"] for c in _json(diagnosed)["causes"]]
    assert diagnosed.returncode == 1 and causes[0] == "d2t-absolute-ids", causes
    assert server.alive()
    result = cli("probe", "-H", "local", "--server", str(server.pid), "-n", "1",
                 "--max-tokens", "16", "--compare", "none", timeout=300)  # fmt: skip
    assert wait_for(lambda: not server.alive(), timeout=60, interval=0.5)
    line = _engine_exception(server)
    assert line.startswith("IndexError: index ") and "out of bounds" in line
    assert result.returncode == 4, result.stdout.decode()[-3000:]
    # probe and logs name what the engine died of, from its own log (its traceback, above the
    # tail), not "HTTP 500" or "no accept-length lines yet"
    assert line in result.stdout.decode() + result.stderr.decode()
    logs = cli("logs", "-H", "local", "--log", str(server.log))
    assert logs.returncode == 4 and f"the engine died: {line}" in logs.stdout.decode()


NGRAM: dict = {}


def test_ngram_probe_measures_what_the_engine_counted(cli, vllm_server):
    """Prompt lookup on the target's output (which never repeats its prompt) drafts rarely:
    most requests get no draft at all. Each request's counts still sum to the engine's."""
    server = vllm_server(None, "ngram")
    before = counters(server)
    result = cli("probe", "-H", "local", "--server", str(server.pid), "--json", "-n", "1",
                 "--max-tokens", "32", "--compare", "none", timeout=600)  # fmt: skip
    after = counters(server)
    doc = _json(result)
    delta = {k: after[k] - before[k] for k in ("drafts", "draft_tokens", "accepted", "generated")}
    measured = doc["measurements"]
    assert all(m["ok"] for m in measured) and len(measured) == 5
    assert sum(m["verify_steps"] for m in measured) == delta["drafts"]
    assert sum(m["drafted"] for m in measured) == delta["draft_tokens"]
    assert sum(m["accepted"] for m in measured) == delta["accepted"]
    assert sum(m["completion_tokens"] for m in measured) == delta["generated"] == 5 * 32
    assert doc["server"]["algorithm"] == "ngram"
    NGRAM.update(doc=doc, delta=delta)


NGRAM_GAPS = (
    "issue 25: requests without drafts are dropped from the summary ('32 tokens in 2 verify "
    "steps: 1.00 per step') and a few drafts of a method without a head raise "
    "accept-position0-collapse ('a broken head')"
)


@pytest.mark.xfail(strict=True, reason=NGRAM_GAPS)
def test_ngram_summary_counts_every_request_and_calls_no_head_broken():
    if not NGRAM:
        pytest.skip("the ngram probe did not run")
    doc, delta = NGRAM["doc"], NGRAM["delta"]
    assert doc["summary"]["overall"]["completion_tokens"] == delta["generated"]
    assert "accept-position0-collapse" not in {f["id"] for f in doc["findings"]}
