"""remotedbg against a real engine: vLLM's CPU build serving a target and EAGLE-3 drafts built
here (tests/vllm_engine.py). Every expectation comes from the engine itself: its `/metrics`, read
here before and after, and the lines it writes to its log; never from remotedbg's output.

The tests are ordered by server (the fixture runs one at a time): the correct draft first, then
the planted mistake that kills the engine."""

from __future__ import annotations

import json
import re
import time
import urllib.error

import pytest

from tests.procs import wait_for
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


def test_logs_shows_the_engines_mean_acceptance_length(cli, vllm_server):
    server = vllm_server()
    server.post("/v1/completions", {"prompt": "Say hello?", "max_tokens": 32, "temperature": 0})
    # vLLM logs its SpecDecoding line every 10 s while it drafts: wait for the line of this
    # request, then for an interval without drafts (no new line) so the log holds still
    assert wait_for(lambda: _spec_lines(server.log.read_text()), timeout=30, interval=0.5)
    time.sleep(12)
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
    draft = vllm_world.models.draft("eagle3")
    result = cli("playbook", "spec-audit", "-H", "local", "--json",
                 "--var", f"roots={vllm_world.install.package}", "--var", f"draft={draft}",
                 timeout=300)  # fmt: skip
    doc = _json(result)
    assert (result.returncode, doc["verdict"]) == (0, "ok"), (doc["findings"], doc["inconclusive"])
    assert doc["inconclusive"] == []
    cleared = [f for f in doc["findings"] if f["id"] == "spec-config-cleared"]
    assert cleared and cleared[0]["evidence"]["server"] == str(server.pid)


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
    # the engine's own verdict on that draft: its first request kills it
    assert server.alive()
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        server.post("/v1/completions", {"prompt": "Hi?", "max_tokens": 8, "temperature": 0})
    assert wait_for(lambda: not server.alive(), timeout=60, interval=0.5)
    assert "IndexError: index" in server.log.read_text()
