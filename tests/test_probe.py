"""`remotedbg probe` end to end over the real sshd, against stand-in servers that speak the
engines' wire formats (tests/engine_standins.py, cited there) and serve scripted acceptance. The
expected numbers are computed here from the script, never from remotedbg's output."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from remotedbg.engines.probe_prompts import BUILTIN
from tests.conftest import Standin, free_port
from tests.procs import wait_for

HEALTHY = [3, 2, 3, 1]


def scripted_steps(pattern: list[int], max_tokens: int) -> list[int]:
    """The script's truth: one prefill token, then each verify step gives accepted + 1."""
    steps, produced = [], 1
    while produced < max_tokens:
        steps.append(pattern[len(steps) % len(pattern)])
        produced += steps[-1] + 1
    return steps


def probe(cli, server: Standin | int, *extra: str, timeout: float = 60):
    target = server.pid if isinstance(server, Standin) else server
    result = cli("probe", "-H", "testbox", "--server", str(target), "--json", "--max-tokens",
                 "32", *extra, timeout=timeout)  # fmt: skip
    return result, json.loads(result.stdout) if result.stdout.strip() else None


def test_healthy_sglang_numbers_equal_the_script(cli, standin):
    server = standin("sglang", {"pattern": {"default": HEALTHY}})
    result, doc = probe(cli, server, "-n", "1")
    assert result.returncode == 0, result.stderr
    assert doc["verdict"] == "ok" and doc["findings"] == []
    steps = scripted_steps(HEALTHY, 32)
    categories = {c for c, _ in BUILTIN}
    requests = len(categories) * 2  # one greedy and one sampled per kind
    overall = doc["summary"]["overall"]
    assert overall["requests"] == requests
    assert overall["verify_steps"] == requests * len(steps)
    assert overall["accept_length"] == round(32 / len(steps), 3)
    assert doc["server"]["ceiling"] == 4 and doc["server"]["pid"] == server.pid
    expected_positions = [round(sum(1 for j in steps if j > k) / len(steps), 3) for k in range(3)]
    assert doc["summary"]["positions"] == expected_positions
    assert set(doc["summary"]["by_category"]) == categories
    assert set(doc["summary"]["by_mode"]) == {"greedy", "sampled"}


def test_position0_collapse_is_a_defect_with_its_numbers(cli, standin):
    server = standin("sglang", {"pattern": {"default": [0]}})
    result, doc = probe(cli, server, "-n", "1", "--compare", "none")
    assert result.returncode == 1, result.stderr
    ids = {f["id"] for f in doc["findings"]}
    assert ids == {"accept-position0-collapse", "accept-length-low"}
    collapse = next(f for f in doc["findings"] if f["id"] == "accept-position0-collapse")
    # the histogram only has index 0; the 3 positions drafted (steps 3) are all at 0
    assert collapse["evidence"]["per_position"] == [0.0, 0.0, 0.0]
    # 32 tokens: 1 from prefill, then 31 steps of one token each
    assert doc["summary"]["overall"]["accept_length"] == round(32 / 31, 3)


def test_domain_gap_names_the_kind_of_prompt(cli, standin):
    script = {"pattern": {"default": [3, 3, 2, 3], "chinese": [0, 0, 1, 0]}}
    server = standin("sglang", script)
    result, doc = probe(cli, server, "-n", "1", "--compare", "none")
    assert result.returncode == 0, result.stderr  # a warning: the head works, on some traffic
    [gap] = [f for f in doc["findings"] if f["id"] == "accept-domain-gap"]
    assert gap["evidence"]["category"] == "chinese"
    assert gap["evidence"]["accept_length"] == round(32 / len(scripted_steps([0, 0, 1, 0], 32)), 3)


@pytest.mark.parametrize("release", ["0.5.14", "0.5.6", "0.5.1", "0.4.6.post5"])
def test_older_sglang_releases(cli, standin, release):
    """0.5.14 names its histogram spec_accept_histogram too; 0.5.6 has no histogram; 0.4.6 only
    spec_verify_ct and only /get_server_info. Accept length is right on each; without a
    histogram, position 0 is bounded from the accept length instead."""
    server = standin("sglang", {"release": release, "pattern": {"default": HEALTHY}})
    result, doc = probe(cli, server, "-n", "1", "--compare", "none")
    assert result.returncode == 0, (result.stderr, doc)
    steps = scripted_steps(HEALTHY, 32)
    assert doc["summary"]["overall"]["accept_length"] == round(32 / len(steps), 3)
    assert doc["server"]["version"] == release
    has_histogram = release == "0.5.14"
    assert (doc["summary"]["positions"] is not None) == has_histogram


def test_vllm_from_metrics_deltas(cli, standin):
    server = standin("vllm", {"pattern": {"default": HEALTHY}})
    result, doc = probe(cli, server, "-n", "1", "--compare", "none")
    assert result.returncode == 0, result.stderr
    steps = scripted_steps(HEALTHY, 32)
    # vLLM: mean acceptance length = 1 + accepted / drafts (vllm/v1/spec_decode/metrics.py:113)
    assert doc["summary"]["overall"]["accept_length"] == round(1 + sum(steps) / len(steps), 3)
    assert doc["server"]["engine"] == "vllm" and doc["server"]["ceiling"] == 4
    assert all(m["source"] == "/metrics deltas" for m in doc["measurements"])


def test_api_key_read_on_the_box_and_never_written(cli, standin, isolated_state):
    args = ["--model-path", "/m", "--speculative-algorithm", "EAGLE3", "--speculative-num-steps",
            "3", "--api-key", "s3cret-KEY"]  # fmt: skip
    server = standin("sglang", args=args)
    result, doc = probe(cli, server, "-n", "1", "--compare", "none")
    assert result.returncode == 0, result.stderr
    assert doc["server"]["api_key_used"] is True
    given, _ = probe(cli, server, "-n", "1", "--compare", "none", "--api-key", "s3cret-KEY")
    assert given.returncode == 0
    wrong, _ = probe(cli, server.port, "-n", "1", "--api-key", "wrong-key")
    assert wrong.returncode == 4 and b"API key" in wrong.stderr
    written = b"".join(p.read_bytes() for p in isolated_state.rglob("*") if p.is_file())
    assert b"s3cret-KEY" not in written + result.stdout + result.stderr + given.stdout


def test_speculation_off_is_said(cli, standin):
    server = standin("sglang", args=["--model-path", "/models/target"])
    result, doc = probe(cli, server, "-n", "1", "--compare", "none")
    assert result.returncode == 0, result.stderr
    assert doc["spec_off"] is True and doc["findings"] == []
    text = cli("probe", "-H", "testbox", "--server", str(server.pid), "-n", "1", "--compare",
               "none", "--max-tokens", "8").stdout.decode()  # fmt: skip
    said = "does not speculate (started without --speculative-algorithm)"
    assert text.count("\n") == 1 and said in text, text


def test_not_an_engine_and_nobody_listening(cli, tmp_path):
    port = free_port()
    plain = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert wait_for(lambda: _listening(port), timeout=10)
        result, _ = probe(cli, port)
        assert result.returncode == 4
        said = b"answers as no SGLang or vLLM server (no /server_info, /get_server_info or /version"
        assert said in result.stderr and b"TokenSpeed" in result.stderr
        assert len(result.stderr.decode().strip().splitlines()) <= 2
    finally:
        plain.kill()
        plain.wait()
    result, _ = probe(cli, free_port())
    assert result.returncode == 4 and b"connection refused" in result.stderr


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def test_slow_server_stays_within_the_budget(cli, standin):
    server = standin("sglang", {"slow_s": 1.0, "pattern": {"default": HEALTHY}})
    started = time.monotonic()
    result, doc = probe(cli, server, "-n", "1", "--budget", "2.5")
    assert time.monotonic() - started < 20
    unsent = [m for m in doc["measurements"] if "budget" in (m.get("error") or "")]
    assert unsent and doc["summary"]["overall"]["requests"] >= 1
    assert result.returncode == 0


def test_dropped_connections_are_listed_not_fatal(cli, standin):
    server = standin("vllm", {"drop_every": 2, "pattern": {"default": HEALTHY}})
    result, doc = probe(cli, server, "-n", "1", "--compare", "none")
    failed = [m for m in doc["measurements"] if not m["ok"]]
    assert failed and all(m["error"] for m in failed)
    assert doc["summary"]["overall"]["requests"] == len(doc["measurements"]) - len(failed)


def test_dry_run_sends_nothing_and_several_servers_need_a_choice(cli, standin):
    server = standin("sglang", {"pattern": {"default": HEALTHY}})
    dry = cli("probe", "-H", "testbox", "--server", str(server.pid), "--dry-run")
    assert dry.returncode == 0 and b"would send 15 requests" in dry.stderr
    assert "Decode batch" not in server.log.read_text()
    # the session's stand-in foreign server runs too: which one is not guessed
    several = cli("probe", "-H", "testbox")
    assert several.returncode == 2 and b"choose one with --server" in several.stderr


def test_report_has_a_figure(cli, standin, tmp_path):
    server = standin("sglang", {"pattern": {"default": HEALTHY}})
    report = tmp_path / "probe.md"
    result = cli("probe", "-H", "testbox", "--server", str(server.pid), "-n", "1",
                 "--max-tokens", "16", "--report", str(report))  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = report.read_text()
    assert "![acceptance](probe.svg)" in text and "| draft position | accepted |" in text
    assert (tmp_path / "probe.svg").read_text().lstrip().startswith("<?xml")
    shown = result.stdout.decode()
    assert "acceptance by draft position" in shown and "█" in shown


def _mode_length(pattern: list[int], max_tokens: int = 32) -> float:
    return round(max_tokens / len(scripted_steps(pattern, max_tokens)), 3)


def test_comparisons_side_by_side_sglang(cli, standin):
    """Raw vs chat template vs thinking on/off, each measured from the engine's own counters
    (SGLang 0.5.23 sglext.spec_tokens_details on /v1/chat/completions)."""
    modes = {"chat-template": [2, 2, 1, 2], "thinking-on": [3, 3, 3, 3],
             "thinking-off": [1, 0, 1, 0]}  # fmt: skip
    server = standin("sglang", {"pattern": {"default": HEALTHY}, "modes": modes})
    result, doc = probe(cli, server, "-n", "1", "--compare", "chat,thinking")
    assert result.returncode == 0, result.stderr
    by_mode = doc["summary"]["by_mode"]
    assert by_mode["greedy"]["accept_length"] == _mode_length(HEALTHY)
    assert by_mode["greedy"]["requests"] == 5  # the same prompts as each mode's
    for mode, pattern in modes.items():
        assert by_mode[mode]["accept_length"] == _mode_length(pattern), mode
        assert by_mode[mode]["requests"] == 5  # one per kind of prompt


def test_chat_on_an_sglang_without_per_request_counts_is_said(cli, standin):
    server = standin("sglang", {"release": "0.5.6", "pattern": {"default": HEALTHY}})
    result, doc = probe(cli, server, "-n", "1", "--compare", "chat")
    failed = [m for m in doc["measurements"] if not m["ok"]]
    assert [m["mode"] for m in failed] == ["chat-template"] * 5
    assert "0.5.23" in failed[0]["error"]
    assert doc["summary"]["by_mode"]["greedy"]["accept_length"] == _mode_length(HEALTHY)


def test_vllm_chat_from_metrics_and_the_engines_own_figure(cli, standin):
    script = {"pattern": {"default": HEALTHY}, "modes": {"chat-template": [0, 1]}}
    server = standin("vllm", script)
    result, doc = probe(cli, server, "-n", "1", "--compare", "chat")
    assert result.returncode == 0, result.stderr
    chat_steps = scripted_steps([0, 1], 32)
    expected = round(1 + sum(chat_steps) / len(chat_steps), 3)
    assert doc["summary"]["by_mode"]["chat-template"]["accept_length"] == expected
    # the engine's lifetime figure over the same requests equals the probe's overall figure
    assert doc["engine_figure"]["accept_length"] == doc["summary"]["overall"]["accept_length"]


def test_several_hosts_one_table(cli, standin):
    """Two hosts (two sshd's on this machine) and one that refuses: one row each, the exit
    status is the worst host's."""
    server = standin("sglang", {"pattern": {"default": HEALTHY}})
    result = cli("probe", "-H", "testbox,nosftp,nobody@127.0.0.1:1", "--server", str(server.pid),
                 "-n", "1", "--compare", "none", "--max-tokens", "16", "--json")  # fmt: skip
    doc = json.loads(result.stdout)
    hosts = {h["host"]: h for h in doc["hosts"]}
    assert list(hosts) == ["testbox", "nosftp", "nobody@127.0.0.1:1"]
    expected = _mode_length(HEALTHY, 16)
    for name in ("testbox", "nosftp"):
        assert hosts[name]["summary"]["overall"]["accept_length"] == expected
        assert hosts[name]["verdict"] == "ok"
    assert hosts["nobody@127.0.0.1:1"]["exit_code"] == 3 and result.returncode == 3
    table = cli("probe", "-H", "testbox,nosftp", "--server", str(server.pid), "-n", "1",
                "--compare", "none", "--max-tokens", "16").stdout.decode()  # fmt: skip
    assert "probe on 2 hosts" in table
    assert [line.split()[4] for line in table.splitlines()[2:4]] == [f"{expected:.2f}"] * 2


def test_long_context_pair_around_the_drafts_limit(cli, standin, tmp_path):
    """--compare long reads the served draft's max_position_embeddings (2048, SpecForge's
    default) and sends one text within it and one past it; the stand-in's draft collapses past
    8192 characters (~2048 tokens)."""
    draft = tmp_path / "draft"
    draft.mkdir()
    (draft / "config.json").write_text(
        json.dumps({"architectures": ["LlamaForCausalLMEagle3"], "max_position_embeddings": 2048})
    )
    args = [
        "--model-path",
        "/models/target",
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        str(draft),
        "--speculative-num-steps",
        "3",
    ]
    script = {"pattern": {"default": HEALTHY}, "past_chars": 8192, "past_pattern": [0]}
    server = standin("sglang", script, args=args)
    dry = cli("probe", "-H", "testbox", "--server", str(server.pid), "-n", "1", "--compare",
              "long", "--dry-run")  # fmt: skip
    assert dry.returncode == 0 and b"past-draft-context" in dry.stderr
    result, doc = probe(cli, server, "-n", "1", "--compare", "long")
    assert result.returncode == 0, result.stderr
    assert doc["server"]["draft_context"] == 2048
    by_mode = doc["summary"]["by_mode"]
    assert by_mode["within-draft-context"]["accept_length"] == _mode_length(HEALTHY)
    assert by_mode["past-draft-context"]["accept_length"] == _mode_length([0])
    [drop] = [f for f in doc["findings"] if f["id"] == "accept-long-context-drop"]
    assert drop["evidence"]["draft_context"] == 2048
    # the kinds of prompt are still compared on the plain greedy requests only
    assert doc["summary"]["by_category"]["long"]["requests"] == 1


def test_a_server_that_trickles_bytes_cannot_stretch_a_request_past_its_timeout():
    """A byte every 0.5 s resets a per-read socket timeout for ever (issue 46: `probe --budget
    10 --timeout 15` ended after 40 s): one request ends by its timeout, however slow."""
    import socket
    import threading
    import time

    from remotedbg.agent.http_probe import http

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        while not stop.is_set():
            try:
                conn.sendall(b"x")
            except OSError:
                break
            time.sleep(0.5)
        conn.close()

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        with pytest.raises(OSError):  # socket.timeout is an OSError
            http(listener.getsockname()[1], "GET", "/slow", timeout=2.0)
    finally:
        stop.set()
        listener.close()
    assert time.monotonic() - started < 3.0
