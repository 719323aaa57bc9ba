"""remotedbg.agent.server_scan: fake server processes on the test box, their logs and metrics."""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from remotedbg.actions.spec import find_servers
from remotedbg.agent import server_scan
from remotedbg.agent.redact import redact_argv, redact_cmdline
from remotedbg.remote import calls
from remotedbg.remote.primitives import Remote
from tests.crowd import crowd
from tests.procs import wait_for

SCAN = calls.ScanServers


def sglang_decode(accept_len: float, rate: float, tput: float) -> str:
    return (
        "[2025-11-02 10:00:00] Decode batch, #running-req: 1, #token: 812, token usage: 0.01, "
        f"accept len: {accept_len:.2f}, accept rate: {rate:.2f}, cuda graph: True, "
        f"gen throughput (token/s): {tput:.2f}, #queue-req: 0, "
    )


def vllm_metrics(mean_len: float, per_pos: list[float], avg_pct: float) -> str:
    positions = ", ".join(f"{p:.3f}" for p in per_pos)
    return (
        "(APIServer pid=4242) INFO 11-02 10:00:00 [metrics.py:120] SpecDecoding metrics: "
        f"Mean acceptance length: {mean_len:.2f}, Accepted throughput: 1.20 tokens/s, "
        "Drafted throughput: 3.40 tokens/s, Accepted: 92 tokens, Drafted: 259 tokens, "
        f"Per-position acceptance rate: {positions}, Avg Draft acceptance rate: {avg_pct:.1f}%"
    )


SERVER_ARGS_LINE = (
    "[2025-11-02 09:59:00] server_args=ServerArgs(model_path='/models/target', "
    "tokenizer_path='/models/target', port=30123, speculative_algorithm='EAGLE3', "
    "speculative_draft_model_path='/models/draft', speculative_num_steps=3, "
    "speculative_eagle_topk=1, speculative_num_draft_tokens=4, speculative_token_map=None, "
    "enable_metrics=False, api_key='hunter2')"
)


def write_sglang_log(path: Path, lens: list[float], head: str = "") -> Path:
    lines = [head] if head else []
    lines.append("[2025-11-02 09:59:30] Prefill batch, #new-seq: 1, #new-token: 20")
    for i, value in enumerate(lens):
        lines.append(sglang_decode(value, (value - 1) / 3, 40.0 + i))
        lines.append("[2025-11-02 10:00:01] INFO:     127.0.0.1:5555 - POST /generate 200 OK")
    path.write_text("\n".join(lines) + "\n")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_fake(argv_tail: list[str], log: Path | None, fork: bool = False) -> subprocess.Popen:
    code = f"import os, time\nif {fork}: os.fork()\ntime.sleep(60)"
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *argv_tail],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        if log:
            out.close()
    assert wait_for(lambda: os.path.exists(f"/proc/{proc.pid}/cmdline"))
    return proc


def stop_fake(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group of a process this test started
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


@pytest.fixture
def remote(box):
    session = box.session()
    try:
        yield Remote(session)
    finally:
        session.close()


def _mine(result: dict, pid: int) -> dict:
    hits = [s for s in result["servers"] if s.get("pid") == pid]
    assert len(hits) == 1, result["servers"]
    return hits[0]


# ---------------------------------------------------------------------------------- pure parsing
def test_parse_args_json_and_redaction():
    argv = [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "/m/t",
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-num-draft-tokens",
        "4",
        "--speculative-token-map",
        "/m/map.pt",
        "--api-key",
        "hunter2",
        "--hf-token=hf_abc",
        "--json-model-override-args",
        '{"architectures": ["X"], "auth_token": "zzz"}',
        "--enable-metrics",
        "--max-total-tokens",
        "9000",
    ]
    parsed = server_scan.parse_args(argv)
    args = parsed["args"]
    assert args["model-path"] == "/m/t"
    assert args["speculative-num-draft-tokens"] == "4"  # not mistaken for a secret
    assert args["speculative-token-map"] == "/m/map.pt"
    assert args["max-total-tokens"] == "9000"
    assert args["api-key"] == "***" and args["hf-token"] == "***"
    assert args["json-model-override-args"] == {"architectures": ["X"], "auth_token": "***"}
    assert args["enable-metrics"] is True
    line = redact_cmdline(argv)
    assert "hunter2" not in line and "hf_abc" not in line and "/m/map.pt" in line
    spec = server_scan.spec_summary("sglang", parsed)
    assert spec["algorithm"] == "EAGLE" and spec["num_draft_tokens"] == 4
    assert spec["token_map"] == "/m/map.pt" and spec["port"] == 30000


def test_a_typed_launch_s_leading_assignments_are_its_environment():
    """`NAME=value ... python -m ...` (or after `env`), as SGLang's cookbook types its launches:
    the names the checks ask for are the launch's environment, the rest never kept, none shown
    in its command line; with none typed the environment stays unknown (None)."""
    facts = ("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "VLLM_USE_V1")
    typed = server_scan._given_server(
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 HF_TOKEN=hf_secret python3 -m "
        "sglang.launch_server --model-path /m/t", None, 10, 1 << 20, env_facts=facts)
    assert typed["engine"] == "sglang" and typed["args"] == {"model-path": "/m/t"}
    assert typed["env"] == {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
    assert "hf_secret" not in typed["cmdline"] and "HF_TOKEN" not in typed["cmdline"]
    after_env = server_scan._given_server("env VLLM_USE_V1=0 vllm serve /m/t", None, 10, 1 << 20,
                                          env_facts=facts)  # fmt: skip
    assert (after_env["engine"], after_env["env"]) == ("vllm", {"VLLM_USE_V1": "0"})
    plain = server_scan._given_server("python3 -m sglang.launch_server --model-path /m/t", None,
                                      10, 1 << 20, env_facts=facts)  # fmt: skip
    assert "env" not in plain  # not read: an exported variable is not seen
    alone = server_scan._given_server("VLLM_USE_V1=0", None, 10, 1 << 20, env_facts=facts)
    assert (alone["source"], alone["engine"], alone["env"]) == ("--var args", None,
                                                                 {"VLLM_USE_V1": "0"})


def test_vllm_speculative_config_and_positional_model():
    argv = server_scan.split_args(
        "vllm serve /models/llama --port 8100 --speculative-config "
        '\'{"method": "eagle3", "model": "/models/head", "num_speculative_tokens": 3}\''
    )
    assert server_scan.engine_of_argv(argv) == "vllm"
    parsed = server_scan.parse_args(argv)
    assert parsed["args"]["speculative-config"]["method"] == "eagle3"
    spec = server_scan.spec_summary("vllm", parsed)
    assert spec["target_model"] == "/models/llama"
    assert spec["draft_model"] == "/models/head"
    assert (spec["num_steps"], spec["ceiling"], spec["port"]) == (3, 4, 8100)


def test_decode_lines_and_trend():
    lines = [sglang_decode(v, 0.1, 50.0) for v in (1.0, 1.5, 2.0)]
    lines.insert(1, "unrelated line")
    figures = server_scan.figures_from_lines(lines)
    assert figures["accept_length"]["values"] == [1.0, 1.5, 2.0]
    assert figures["accept_length"]["first"] == 1.0
    assert figures["accept_length"]["last"] == 2.0
    assert figures["accept_length"]["mean"] == 1.5
    assert figures["throughput"]["count"] == 3
    vllm = server_scan.parse_decode_line(vllm_metrics(2.77, [0.802, 0.551, 0.415], 58.9))
    assert vllm["accept_length"] == 2.77
    assert vllm["accept_rate"] == pytest.approx(0.589)
    assert vllm["per_position"] == [0.802, 0.551, 0.415]
    assert server_scan.parse_decode_line("Avg generation throughput: 13.0 tokens/s")[
        "throughput"
    ] == pytest.approx(13.0)


def test_server_args_line_and_tail_window(tmp_path):
    parsed = server_scan.server_args_from_log_line(SERVER_ARGS_LINE)
    assert parsed["speculative-algorithm"] == "EAGLE3"
    assert parsed["speculative-num-steps"] == "3"
    assert "speculative-token-map" not in parsed and "enable-metrics" not in parsed
    assert parsed["api-key"] == "***"
    log = write_sglang_log(tmp_path / "big.log", [1.0 + i / 1000 for i in range(3000)])
    lines, server_args, _, _ = server_scan.tail_decode_lines(str(log), 200, 16 << 20)
    assert len(lines) == 200 and server_args is None
    assert server_scan.parse_decode_line(lines[0])["accept_length"] == 3.8  # 1 + 2800/1000
    assert server_scan.parse_decode_line(lines[-1])["accept_length"] == 4.0


def test_prometheus_parsing():
    text = (
        "# HELP sglang:spec_accept_length The average acceptance length\n"
        "# TYPE sglang:spec_accept_length gauge\n"
        'sglang:spec_accept_length{model_name="m"} 1.0\n'
        'sglang:spec_accept_rate{model_name="m"} 0.0\n'
        'vllm:spec_decode_num_drafts_total{engine="0"} 100.0\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 150.0\n'
        'vllm:spec_decode_num_draft_tokens_total{engine="0"} 300.0\n'
    )
    got = server_scan.parse_prometheus(text)
    assert got["spec_accept_length"] == 2.5  # the vLLM counters come last and win
    assert got["spec_accept_rate"] == 0.5
    only_sglang = server_scan.parse_prometheus(text.split("vllm:")[0])
    assert only_sglang == {"spec_accept_length": 1.0, "spec_accept_rate": 0.0}


# --------------------------------------------------------------------------- on the test box
class _Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        if self.path == "/metrics":
            body = b'sglang:spec_accept_length{model_name="t"} 1.0\nsglang:spec_accept_rate 0.0\n'
            kind = "text/plain"
        elif self.path == "/server_info":
            body = json.dumps({"internal_states": [{"avg_spec_accept_length": 1.01}]}).encode()
            kind = "application/json"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def metrics_port():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_running_server_args_log_and_metrics(remote, tmp_path, metrics_port):
    log = write_sglang_log(tmp_path / "sglang.log", [1.0, 1.0, 1.02, 1.0])
    proc = start_fake(
        [
            "-m",
            "sglang.launch_server",
            "--model-path",
            "/models/target",
            "--speculative-algorithm",
            "EAGLE",
            "--speculative-draft-model-path",
            "/models/draft",
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "4",
            "--json-model-override-args",
            '{"rope_scaling": {"factor": 2.0}}',
            "--api-key",
            "hunter2",
            "--enable-metrics",
            "--port",
            str(metrics_port),
        ],
        log,
    )
    try:
        result = remote.call(SCAN(tail_lines=200))
        server = _mine(result, proc.pid)
    finally:
        stop_fake(proc)
    assert server["engine"] == "sglang" and server["source"] == "process"
    assert server["args"]["api-key"] == "***" and "hunter2" not in server["cmdline"]
    assert server["args"]["json-model-override-args"] == {"rope_scaling": {"factor": 2.0}}
    spec = server["spec"]
    assert spec["algorithm"] == "EAGLE" and spec["draft_model"] == "/models/draft"
    assert (spec["num_steps"], spec["topk"], spec["num_draft_tokens"]) == (3, 1, 4)
    assert spec["ceiling"] == 4 and spec["enable_metrics"] is True
    assert server["log"]["path"] == str(log) and server["log"]["how_found"] == "fd 1"
    figures = server["log"]["figures"]
    assert figures["accept_length"]["values"] == [1.0, 1.0, 1.02, 1.0]
    assert figures["accept_length"]["mean"] == pytest.approx(1.005)
    assert figures["throughput"]["first"] == 40.0 and figures["throughput"]["last"] == 43.0
    assert server["metrics"]["url"] == f"http://127.0.0.1:{metrics_port}/metrics"
    assert server["metrics"]["spec_accept_length"] == 1.0
    assert server["metrics"]["spec_accept_rate"] == 0.0
    assert server["server_info"]["avg_spec_accept_length"] == 1.01
    assert server["cwd"] and server["exe"]


def test_25_hung_servers_of_another_user_neither_stall_nor_decide_the_scan(
    remote, tmp_path, metrics_port
):
    """A shared box (issue 50): 25 servers of another user that accept and never answer. The
    scan returns within the session's 30 s (asked one after another, they held it 100 s: 2 s
    for /metrics and 2 s for /server_info each), the user's own server keeps its figures, and
    each stranger is listed with why it has none, nothing of ours taken for theirs."""
    log = write_sglang_log(tmp_path / "ours.log", [1.5, 1.5])
    ours = start_fake(["-m", "sglang.launch_server", "--model-path", "/models/ours",
                       "--enable-metrics", "--port", str(metrics_port)], log)  # fmt: skip
    try:
        with crowd(25) as others:
            result = remote.call(SCAN(tail_lines=200))
    finally:
        stop_fake(ours)
    mine = _mine(result, ours.pid)
    assert mine["metrics"]["spec_accept_length"] == 1.0 and mine["metrics"]["error"] is None
    assert mine["server_info"]["avg_spec_accept_length"] == 1.01
    assert mine["log"]["figures"]["accept_length"]["last"] == 1.5
    for pid, port in zip(others.pids, others.ports, strict=True):
        theirs = _mine(result, pid)
        assert theirs["spec"]["port"] == port and theirs["own"] is (others.uid == os.getuid())
        assert theirs["metrics"]["spec_accept_length"] is None and theirs["metrics"]["error"]
        assert theirs["server_info"]["error"] and theirs["log"] is None


def test_servers_outside_the_named_one_are_never_asked(remote, metrics_port):
    """--var server=PID judges that server: the scan asks no server over HTTP (each says what
    it would be asked, `http_asks`), find-servers then asks the named one's, and another
    server's /metrics and /server_info are never requested (it is listed under also_on_box).
    (Whether its port saw a request cannot be the check: other runs' scans on this box ask
    every server they see.)"""
    launch = ["-m", "sglang.launch_server", "--model-path", "/m", "--enable-metrics", "--port"]
    ours = start_fake([*launch, str(metrics_port)], None)
    theirs = start_fake([*launch, str(free_port())], None)
    try:
        scanned = remote.call(SCAN(http_later=True))
        found = find_servers(remote, server=str(ours.pid))
    finally:
        stop_fake(ours)
        stop_fake(theirs)
    for pid in (ours.pid, theirs.pid):
        server = _mine(scanned, pid)
        assert server["http_asks"] == ["metrics", "server_info"]
        assert server["metrics"] is None and server["server_info"] is None
    [judged] = found["servers"]
    assert judged["pid"] == ours.pid and judged["metrics"]["spec_accept_length"] == 1.0
    assert judged["server_info"]["avg_spec_accept_length"] == 1.01 and "http_asks" not in judged
    assert theirs.pid in [s["pid"] for s in found["also_on_box"]]


def test_figures_that_time_out_are_explicit_unknowns_in_the_audit(cli):
    """--timeout 1 while a hung server is asked for 2 s: the audit's `servers` result keeps
    its servers, the hung one among them with each figure's error saying why it has none (the
    step's result was null before, and readers of the JSON crashed on it: issue 50)."""
    with crowd(1) as hung:
        result = cli("playbook", "spec-audit", "-H", "testbox", "--json", "--timeout", "1",
                     timeout=120)  # fmt: skip
    doc = json.loads(result.stdout)
    [server] = [s for s in doc["results"]["servers"]["servers"] if s["pid"] == hung.pids[0]]
    assert server["metrics"]["spec_accept_length"] is None
    assert "ask_http timed out after 1s" in server["metrics"]["error"]
    assert "ask_http timed out after 1s" in server["server_info"]["error"]


def test_a_scan_that_fails_is_an_explicit_unknown_in_the_audit(cli, tmp_path):
    """A scan that cannot finish (--timeout 0.1, the least there is, while five servers' 16 MiB
    logs are read: 0.4 s here) leaves the audit's `servers` result with its shape: no servers,
    the reason, and the audit inconclusive (exit 4), never null."""
    log = tmp_path / "access.log"
    line = b'INFO:     127.0.0.1:5555 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    log.write_bytes(line * ((16 << 20) // len(line)))
    launch = ["-m", "vllm.entrypoints.openai.api_server", "--model", "/m", "--port", "1"]
    servers = [start_fake(launch, log) for _ in range(5)]
    nothing = tmp_path / "no-drafts"
    nothing.mkdir()
    try:
        # drafts searched only where the test made none: a draft another test left in this
        # user's home (a planted defect) would make the audit a defect, whatever the scan said
        result = cli("playbook", "spec-audit", "-H", "testbox", "--json", "--timeout", "0.1",
                     "--var", f"search={nothing}", "--var", "search_home=false",
                     timeout=120)  # fmt: skip
    finally:
        for server in servers:
            stop_fake(server)
    doc = json.loads(result.stdout)
    scan = doc["results"]["servers"]
    assert scan["servers"] == [] and scan["processes"] == []
    assert "scan_servers timed out after 0.1s" in scan["unknown"], scan
    assert any(r.startswith("the server scan failed: ") for r in doc["inconclusive"])
    assert result.returncode == 4, result.stderr.decode()[-2000:]


def test_unreachable_metrics_are_noted_not_fatal(remote, tmp_path):
    port = free_port()
    proc = start_fake(
        ["-m", "sglang.launch_server", "--model-path", "/m", "--port", str(port)], None
    )
    try:
        server = _mine(remote.call(SCAN(metrics=True, timeout=1)), proc.pid)
    finally:
        stop_fake(proc)
    assert server["log"] is None
    assert any("--var log" in note for note in server["notes"])
    assert server["metrics"]["error"] and server["metrics"]["spec_accept_length"] is None
    assert server["server_info"]["error"]


def test_forked_worker_is_listed_under_its_server_and_lookalikes_are_not(remote, tmp_path):
    proc = start_fake(["-m", "sglang.launch_server", "--model-path", "/m/forked"], None, fork=True)
    shell = subprocess.Popen(
        ["sh", "-c", "sleep 60; echo python -m sglang.launch_server", "sh"],
        start_new_session=True,
    )
    try:
        assert wait_for(
            lambda: (
                len(
                    [
                        p
                        for p in os.listdir("/proc")
                        if p.isdigit() and _cmd(p) and "/m/forked" in _cmd(p)
                    ]
                )
                == 2
            )
        )
        result = remote.call(SCAN(metrics=False))
        server = _mine(result, proc.pid)
        assert len(server["children"]) == 1
        assert not [s for s in result["servers"] if s.get("pid") in server["children"]]
        assert not [s for s in result["servers"] if s.get("pid") == shell.pid]
    finally:
        stop_fake(proc)
        stop_fake(shell)


def _cmd(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def test_log_var_alone_takes_args_from_server_args_line(remote, tmp_path):
    log = write_sglang_log(tmp_path / "old.log", [2.5, 2.7, 3.1], head=SERVER_ARGS_LINE)
    result = remote.call(SCAN(log=str(log), processes=False))
    [server] = result["servers"]
    assert server["source"] == "--var log" and server["pid"] is None
    assert server["args"]["api-key"] == "***"
    assert server["spec"]["algorithm"] == "EAGLE3" and server["spec"]["ceiling"] == 4
    assert server["spec"]["port"] == 30123
    assert server["log"]["server_args_line"] is True
    assert server["log"]["figures"]["accept_length"]["last"] == 3.1
    assert server["metrics"] is None  # nothing is fetched for a server that is not running


def test_args_var_with_vllm_log(remote, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(
        "\n".join(
            [
                vllm_metrics(1.40, [0.3, 0.08, 0.02], 13.3),
                "INFO Engine 000: Avg prompt throughput: 0.0 tokens/s, "
                "Avg generation throughput: 21.5 tokens/s, Running: 1 reqs",
                vllm_metrics(1.20, [0.15, 0.04, 0.01], 6.7),
            ]
        )
        + "\n"
    )
    args = (
        "vllm serve /models/llama --speculative-config "
        '\'{"method": "eagle", "model": "/models/eagle3-head", "num_speculative_tokens": 3}\''
    )
    result = remote.call(SCAN(log=str(log), args=args, processes=False))
    [server] = result["servers"]
    assert server["source"] == "--var args" and server["engine"] == "vllm"
    assert server["spec"]["algorithm"] == "eagle"
    assert server["spec"]["draft_model"] == "/models/eagle3-head"
    figures = server["log"]["figures"]
    assert figures["accept_length"]["values"] == [1.4, 1.2]
    assert figures["accept_rate"]["last"] == pytest.approx(0.067)
    assert figures["throughput"]["values"] == [21.5]
    assert figures["per_position_last"] == [0.15, 0.04, 0.01]


def test_missing_log_var_is_reported(remote, tmp_path):
    result = remote.call(SCAN(log=str(tmp_path / "nope.log"), processes=False))
    [server] = result["servers"]
    assert "nope.log" in server["log"]["error"]
    assert server["log"]["figures"] == {}


@pytest.mark.parametrize("wrapper", ["timeout", "bash"])
def test_a_wrapper_is_followed_to_the_python_server(remote, tmp_path, wrapper):
    """`timeout 60 python -m sglang...` and `bash -c "python -m sglang... > log; true"` stay in
    /proc as the server's parent with its command line in theirs; the server is the Python
    process, whose stdout is the log full of accept len 1.00 (not the wrapper's)."""
    log = write_sglang_log(tmp_path / "served.log", [1.0, 1.0, 1.0])
    tail = ["-m", "sglang.launch_server", "--model-path", f"/m/{wrapper}-wrapped"]
    python = [sys.executable, "-c", "import time; time.sleep(60)", *tail]
    if wrapper == "timeout":
        argv = ["timeout", "60", *python]
        out = open(log, "ab")
    else:
        inner = " ".join(f"'{w}'" for w in python) + f" >> '{log}' 2>&1; true"
        argv = ["bash", "-c", inner]
        out = subprocess.DEVNULL
    outer = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    if out is not subprocess.DEVNULL:
        out.close()
    try:
        assert wait_for(
            lambda: any(
                _cmd(p).startswith(sys.executable) and f"/m/{wrapper}-wrapped" in _cmd(p)
                for p in os.listdir("/proc")
                if p.isdigit()
            )  # fmt: skip
        )
        result = remote.call(SCAN(metrics=False))
        mine = [s for s in result["servers"] if f"/m/{wrapper}-wrapped" in (s["cmdline"] or "")]
        assert len(mine) == 1, mine  # the wrapper is not a second server
        [server] = mine
        assert server["pid"] != outer.pid and server["wrapped_by"]["pid"] == outer.pid
        assert server["log"]["path"] == str(log)
        assert server["log"]["figures"]["accept_length"]["values"] == [1.0, 1.0, 1.0]
        assert server["spec"]["target_model"] == f"/m/{wrapper}-wrapped"
    finally:
        stop_fake(outer)


def test_vllm_short_flags_count_as_their_long_names():
    """vLLM 0.33.0 spells --speculative-config -sc, --quantization -q and
    --tensor-parallel-size -tp (vllm/engine/arg_utils.py:992,1209,1866)."""
    from remotedbg.agent.server_scan import parse_args, spec_summary

    config = '{"method": "eagle3", "model": "/m/draft", "num_speculative_tokens": 3}'
    argv = ["vllm", "serve", "/m/target", "-tp", "2", "-q", "fp8", "-sc", config]
    parsed = parse_args(argv)
    assert parsed["args"]["tensor-parallel-size"] == "2"
    assert parsed["args"]["quantization"] == "fp8"
    spec = spec_summary("vllm", parsed)
    assert (spec["algorithm"], spec["draft_model"], spec["num_steps"]) == ("eagle3", "/m/draft", 3)
    assert spec["target_model"] == "/m/target"


# ------------------------------------------------- launch lines and logs as each engine writes them
COMPACT = '{"method":"eagle3","model":"/m/d","num_speculative_tokens":3}'
SPACED = '{"method": "eagle3", "model": "/m/d", "num_speculative_tokens": 3}'
VLLM_LAUNCHES = {
    # argv as /proc/PID/cmdline has it: the JSON is one element, its quotes its own
    "compact": ["vllm", "serve", "/m/t", "--speculative-config", COMPACT],
    "spaced": ["vllm", "serve", "/m/t", "--speculative-config", SPACED],
    "equals": ["vllm", "serve", "/m/t", f"--speculative-config={COMPACT}"],
    "short": ["vllm", "serve", "/m/t", "-sc", COMPACT],
    "short-equals": ["vllm", "serve", "/m/t", f"-sc={SPACED}"],
    "underscores": ["vllm", "serve", "/m/t", "--speculative_config", COMPACT],
    "dotted": ["vllm", "serve", "/m/t", "--speculative-config.method", "eagle3",
               "--speculative-config.model=/m/d", "--speculative-config.num_speculative_tokens",
               "3"],
}  # fmt: skip


@pytest.mark.parametrize("form", sorted(VLLM_LAUNCHES))
def test_every_spelling_of_a_vllm_launch_gives_one_draft(form):
    """vLLM's parser takes -sc for --speculative-config (0.33.0 vllm/engine/arg_utils.py:1866),
    underscores for dashes and `--speculative-config.KEY VALUE` merged into the JSON (0.33.0
    vllm/utils/argparse_utils.py:379-391,462-500; 0.10.1.1 vllm/utils/__init__.py:1857)."""
    from remotedbg.analysis.crosscheck import launch_spec

    argv = VLLM_LAUNCHES[form]
    want = ("/m/d", "eagle3", 3, "/m/t")
    spec = server_scan.spec_summary("vllm", server_scan.parse_args(argv))
    assert (spec["draft_model"], spec["algorithm"], spec["num_steps"], spec["target_model"]) == want
    # what find-drafts gets from the engine scan: the argv list, parsed as is
    assert launch_spec({"engine": "vllm", "argv": redact_argv(argv)})["draft_model"] == "/m/d"
    # a command line given as one display string (a playbook's own): split as typed
    line = redact_cmdline(argv)
    assert launch_spec({"engine": "vllm", "cmdline": line})["draft_model"] == "/m/d"


@pytest.mark.parametrize(
    "typed",
    [
        f"vllm serve /m/t --speculative-config {COMPACT}",
        f"vllm serve /m/t --speculative-config '{COMPACT}'",
        f"vllm serve /m/t --speculative-config {SPACED}",
        f"vllm serve /m/t --speculative-config='{SPACED}'",
        f"vllm serve /m/t -sc={SPACED}",
    ],
)
def test_args_var_as_typed_gives_the_same_draft(typed):
    """--var args='...' is shell words (shlex is right there), a JSON word kept whole."""
    spec = server_scan.spec_summary("vllm", server_scan.parse_args(server_scan.split_args(typed)))
    assert (spec["draft_model"], spec["algorithm"], spec["num_steps"]) == ("/m/d", "eagle3", 3)


def test_sglang_flags_as_its_server_args_define_them():
    """SGLang's draft flag and its alias (0.5.6 sglang/srt/server_args.py:2925-2926:
    "--speculative-draft-model-path", "--speculative-draft-model"), read from the release; argparse
    takes `--flag=value` too."""
    from tests.releases import release

    source = (release("sglang", "0.5.6").package / "srt/server_args.py").read_text()
    for flag in ("--speculative-draft-model-path", "--speculative-draft-model",
                 "--speculative-algorithm", "--speculative-num-steps", "--model-path"):  # fmt: skip
        assert f'"{flag}"' in source, flag
    forms = [
        ["--model-path", "/m/t", "--speculative-draft-model-path", "/m/d",
         "--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3"],
        ["--model-path=/m/t", "--speculative-draft-model-path=/m/d",
         "--speculative-algorithm=EAGLE3", "--speculative-num-steps=3"],
        ["--model-path", "/m/t", "--speculative-draft-model", "/m/d",
         "--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3"],
    ]  # fmt: skip
    for tail in forms:
        parsed = server_scan.parse_args(["python3", "-m", "sglang.launch_server", *tail])
        spec = server_scan.spec_summary("sglang", parsed)
        assert (
            spec["draft_model"],
            spec["algorithm"],
            spec["num_steps"],
            spec["target_model"],
        ) == ("/m/d", "EAGLE3", 3, "/m/t"), tail


VLLM_LAUNCH_ARGS = {
    "model_tag": "/m/t",
    "model": "/m/t",
    "speculative_config": {"method": "eagle3", "model": "/m/d", "num_speculative_tokens": 3},
    "port": 8100,
}


def write_vllm_log(rel, path: Path) -> list:
    from tests.engine_logs import launch_args_line, spec_decoding_line

    rendered = [spec_decoding_line(rel, 100, [80, 55, 41]), spec_decoding_line(rel, 50, [5, 1, 0])]
    lines = [launch_args_line(rel, VLLM_LAUNCH_ARGS), *(r.line for r in rendered)]
    path.write_text("\n".join(lines) + "\n")
    return rendered


@pytest.mark.parametrize("version", ["0.8.5", "0.10.1.1", "0.33.0"])
def test_vllm_log_of_each_release_is_read_as_vllm(tmp_path, version):
    """The log's lines as the release writes them (rendered from its own format strings,
    tests/engine_logs.py): whose log it is, the launch args, and the SpecDecoding figures."""
    from tests.releases import release

    rel = release("vllm", version)
    rendered = write_vllm_log(rel, tmp_path / "vllm.log")
    entry, args = server_scan.read_log(str(tmp_path / "vllm.log"), "--var log", 200, 16 << 20)
    assert entry["engine"] == "vllm"
    assert entry["args_line"] == ("args: Namespace" if version == "0.8.5" else "non-default args")
    spec = server_scan.spec_summary("vllm", {"args": args, "positional": [], "program": []})
    assert (spec["draft_model"], spec["algorithm"], spec["num_steps"], spec["target_model"]) == (
        "/m/d", "eagle3", 3, "/m/t")  # fmt: skip
    assert spec["port"] == 8100
    figures = entry["figures"]
    means = [round(r.values["mean_acceptance_length"], 2) for r in rendered]
    assert figures["accept_length"]["values"] == means
    assert figures["per_position_last"] == [0.1, 0.02, 0.0]
    assert figures["spec_tokens"] == {"accepted": 176 + 6, "drafted": 300 + 150, "lines": 2}
    assert figures["accept_rate"]["values"] == [pytest.approx(0.587), pytest.approx(0.04)]
    # 0.8.5's mean leaves the bonus token out (metrics.py:76), later ones count it
    assert figures["length_includes_bonus"] is (version != "0.8.5")


def test_launch_args_line_skips_what_is_not_a_literal():
    line = (
        "INFO 11-02 10:00:00 [utils.py:326] non-default args: {'model': '/m/t', "
        "'load_format': <LoadFormat.AUTO: 'auto'>, 'api_key': 'sk-1', 'enforce_eager': True, "
        "'speculative_config': {'method': 'eagle3', 'model': '/m/d, with comma'}}"
    )
    kind, args = server_scan.launch_args_from_log_line(line)
    assert kind == "non-default args" and "load-format" not in args
    assert args["api-key"] == "***" and args["enforce-eager"] is True
    assert args["speculative-config"] == {"method": "eagle3", "model": "/m/d, with comma"}
    assert server_scan.launch_args_from_log_line("INFO something else") is None


def test_log_var_alone_of_a_vllm_server(remote, tmp_path):
    """spec-audit's --var log on a vLLM log: engine vllm and its launch from the log's line."""
    from tests.releases import release

    write_vllm_log(release("vllm", "0.10.1.1"), tmp_path / "vllm.log")
    result = remote.call(SCAN(log=str(tmp_path / "vllm.log"), processes=False))
    [server] = result["servers"]
    assert server["engine"] == "vllm"
    assert server["spec"]["draft_model"] == "/m/d" and server["spec"]["ceiling"] == 4
    assert "launch arguments taken from the log's non-default args line" in server["notes"]
    assert server["log"]["figures"]["spec_tokens"]["drafted"] == 450


@pytest.mark.network
def test_a_vllm_servers_own_runner_choice_decides_which_runner_code_is_read(remote, tmp_path):
    """vLLM 0.33.0 defaults to Model Runner V2 (envs.py:2149-2150 leaves VLLM_USE_V2_MODEL_RUNNER
    unset; config/vllm.py:748-766 then picks V2), but a server started with
    VLLM_USE_V2_MODEL_RUNNER=0 runs the V1 runner (bool(int("0")), envs.py:360-363; a set value
    is returned as is, config/vllm.py:748-750), whose v1/worker/gpu_model_runner.py reads the
    draft's top-level eagle_aux_hidden_state_layer_ids: that file counts for this server only."""
    from remotedbg.actions.engine_code import gather_serving
    from remotedbg.analysis import engine_facts
    from remotedbg.engines.knowledge import server_scan_knowledge
    from tests.releases import release

    rel = release("vllm", "0.33.0")
    code = gather_serving(remote, "vllm", str(rel.package))
    env = dict(os.environ, VLLM_USE_V2_MODEL_RUNNER="0")
    argv = ["-m", "vllm.entrypoints.openai.api_server", "--model", "/models/target"]
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", *argv],
        env=env,
        start_new_session=True,
    )
    try:
        assert wait_for(lambda: os.path.exists(f"/proc/{proc.pid}/cmdline"))
        result = remote.call(SCAN(knowledge=server_scan_knowledge()))
        server = _mine(result, proc.pid)
    finally:
        stop_fake(proc)
    assert server["env"] == {"VLLM_USE_V2_MODEL_RUNNER": "0"}  # only the names asked for

    v1_runner = "v1/worker/gpu_model_runner.py"
    by_default = engine_facts.aux_ids_source(code, engine_facts.serving_facts(code))["where"]
    serving = engine_facts.serving_facts(code, server["env"])
    this_server = engine_facts.aux_ids_source(code, serving)["where"]
    assert not any(w.startswith(v1_runner) for w in by_default)
    assert any(w.startswith(v1_runner) for w in this_server)
    assert engine_facts.vllm_v2_serves(code, {"VLLM_USE_V2_MODEL_RUNNER": "1"}) is True
    assert engine_facts.vllm_v2_serves(code, {"VLLM_USE_V2_MODEL_RUNNER": "yes"}) is True  # ¬int


@pytest.mark.network
def test_a_vllm_release_that_chooses_the_runner_per_target_has_v1_read_for_a_moe_target(remote):
    """vLLM 0.25.0 leaves VLLM_USE_V2_MODEL_RUNNER unset (envs.py maybe_convert_bool(...,
    None)); VllmConfig.use_v2_model_runner then returns False for a target that is MoE and not
    in DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES (config/vllm.py:537-538, :557-574, :68-74; MoE:
    num_experts, transformers_utils/model_arch_config_convertor.py:148-165), and True for a
    dense one: the V1 runner's v1/worker/gpu_model_runner.py, which reads the draft's aux-layer
    ids (:5420-5432), counts for the Qwen3-MoE deployment only. The files come from the box
    through the agent, as an audit reads them."""
    from remotedbg.actions.engine_code import add_modules, gather_serving
    from remotedbg.analysis import engine_facts
    from tests.releases import sweep_release

    rel = sweep_release("vllm", "0.25.0")
    code = gather_serving(remote, "vllm", str(rel.package))
    moe_config = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
                  "num_experts": 128}  # fmt: skip
    dense_config = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}
    models = [str(rel.package / f"model_executor/models/{m}.py") for m in ("qwen3_moe", "qwen3")]
    add_modules(remote, code, models)  # as the audit reads the target's class
    moe = engine_facts.vllm_target(code, moe_config, models[0], "Qwen3MoeForCausalLM")
    dense = engine_facts.vllm_target(code, dense_config, models[1], "Qwen3ForCausalLM")
    choice = engine_facts.vllm_v2_for_target(code, moe)
    assert choice == {"v2": False, "where": "config/vllm.py:557"}

    def where(target):
        serving = engine_facts.serving_facts(code, None, target)
        return engine_facts.aux_ids_source(code, serving)["where"]

    v1_runner = "v1/worker/gpu_model_runner.py"
    assert any(w.startswith(v1_runner) for w in where(moe))
    assert not any(w.startswith(v1_runner) for w in where(dense))
    # a server started with VLLM_USE_V2_MODEL_RUNNER=1 runs V2 whatever the target
    on_v2 = engine_facts.serving_facts(code, {"VLLM_USE_V2_MODEL_RUNNER": "1"}, moe)
    assert not any(w.startswith(v1_runner)
                   for w in engine_facts.aux_ids_source(code, on_v2)["where"])  # fmt: skip


def test_sglang_flags_given_as_argparse_prefixes_are_read():
    """SGLang's parser keeps argparse's allow_abbrev (0.5.23 srt/server_args.py:679): its docs
    launch with `--model`, `--speculative-algo NEXTN` (docs/basic_usage/qwen3.md@v0.5.2:24) and
    `--mem-fraction`. A prefix of one setting's flags is that flag; one of several stays as given;
    an exact flag beside its prefix wins."""
    from remotedbg.agent.server_scan import expand_prefixes, parse_args, spec_summary

    argv = ["python3", "-m", "sglang.launch_server", "--model", "Qwen/Qwen3-Next-80B-A3B-Instruct",
            "--speculative-algo", "NEXTN", "--speculative-num", "3", "--speculative-eagle", "1",
            "--speculative-draft", "/d"]  # fmt: skip
    spec = spec_summary("sglang", parse_args(argv))
    assert (spec["algorithm"], spec["target_model"], spec["topk"]) == (
        "NEXTN", "Qwen/Qwen3-Next-80B-A3B-Instruct", 1)
    assert spec["draft_model"] == "/d"  # both spellings of the draft flag name one setting
    assert spec["num_steps"] is None  # --speculative-num: steps or draft tokens, ambiguous
    args = expand_prefixes("sglang", {"speculative-algo": "EAGLE",
                                      "speculative-algorithm": "EAGLE3"})  # fmt: skip
    assert args == {"speculative-algorithm": "EAGLE3"}


def test_vllm_flags_given_as_argparse_prefixes_or_as_its_settings_flags_are_read():
    """vLLM's FlexibleArgumentParser is an argparse.ArgumentParser that leaves allow_abbrev on
    (0.32.0 vllm/utils/argparse_utils.py), so `--speculative-conf JSON` is --speculative-config;
    from 0.22.0 --spec-method, --spec-model and --spec-tokens each write one key into it
    (vllm/engine/arg_utils.py:1668-1681). `--spec-m` could be --spec-method or --spec-model:
    argparse refuses it, and it stays as given."""
    from remotedbg.agent.server_scan import parse_args, spec_summary

    argv = ["vllm", "serve", "/m/t", "--speculative-conf",
            '{"method": "eagle", "model": "/m/d", "num_speculative_tokens": 4}']  # fmt: skip
    spec = spec_summary("vllm", parse_args(argv))
    assert (spec["algorithm"], spec["draft_model"], spec["num_steps"]) == ("eagle", "/m/d", 4)
    argv = ["vllm", "serve", "/m/t", "--spec-method", "mtp", "--spec-tokens", "3",
            "--speculative-config", '{"draft_tensor_parallel_size": 1}']  # fmt: skip
    spec = spec_summary("vllm", parse_args(argv))
    assert (spec["algorithm"], spec["draft_model"], spec["num_steps"]) == ("mtp", None, 3)
    spec = spec_summary("vllm", parse_args(["vllm", "serve", "/m/t", "--spec-m", "/m/d"]))
    assert (spec["algorithm"], spec["draft_model"]) == (None, None)


def test_vllm_s_legacy_ngram_model_is_the_method_not_a_draft():
    """{"model": "[ngram]"} (or "ngram") with no method is method ngram in every release (0.8.5
    config.py:2307-2314; 0.32.0 config/speculative.py:1136-1137), as vLLM's structured-output
    tests launch it: no draft path to look for."""
    from remotedbg.agent.server_scan import parse_args, spec_summary

    for model in ("[ngram]", "ngram"):
        argv = ["vllm", "serve", "/m/t", "--speculative-config",
                json.dumps({"model": model, "num_speculative_tokens": 5})]  # fmt: skip
        spec = spec_summary("vllm", parse_args(argv))
        assert (spec["algorithm"], spec["draft_model"], spec["num_steps"]) == ("ngram", None, 5)
    argv = ["vllm", "serve", "/m/t", "--speculative-config",
            json.dumps({"method": "eagle", "model": "/m/ngram", "num_speculative_tokens": 3})]
    spec = spec_summary("vllm", parse_args(argv))
    assert (spec["algorithm"], spec["draft_model"]) == ("eagle", "/m/ngram")
