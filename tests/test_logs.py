"""`remotedbg logs` over the real sshd: the server's own log found through a shell wrapper,
tails, --since, following with under a second of lag, rotation, and hostile logs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

from tests.engine_standins import steps_for


def _generate(port: int, text: str = "hello", max_tokens: int = 32) -> None:
    body = json.dumps({"text": text, "sampling_params": {"max_new_tokens": max_tokens}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/generate", data=body)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    opener.open(request, timeout=10).read()


def test_tail_of_a_server_started_through_bash(cli, standin):
    server = standin("sglang", {"pattern": {"default": [3, 2, 3, 1]}}, wrapper=["bash", "-c"])
    for _ in range(3):
        _generate(server.port)
    result = cli("logs", "-H", "testbox", "--server", str(server.pid), "-n", "2", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["path"] == str(server.log) and doc["server"]["pid"] == server.pid
    assert doc["lines"] == server.log.read_text().splitlines()[-2:]
    # the stand-in logs one decode line per request: accept len = mean(j + 1) over its steps
    steps = steps_for([3, 2, 3, 1], 32)
    assert doc["accept_length"] == [round(sum(j + 1 for j in steps) / len(steps), 2)] * 2
    # --server takes the port too, as probe does; --json keeps to --spec-only's lines
    by_port = cli("logs", "-H", "testbox", "--server", str(server.port), "-n", "50", "--json",
                  "--spec-only")  # fmt: skip
    doc = json.loads(by_port.stdout)
    assert by_port.returncode == 0 and doc["server"]["pid"] == server.pid
    assert doc["lines"] and all("accept len" in line for line in doc["lines"])


def test_since_keeps_only_recent_lines(cli, tmp_path):
    log = tmp_path / "server.log"
    old = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - 7200))
    new = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - 60))
    vllm_new = time.strftime("%m-%d %H:%M:%S", time.localtime(time.time() - 30))
    log.write_text(
        f"[{old}] Decode batch, #running-req: 1, accept len: 1.10, accept rate: 0.03\n"
        f"[{new}] Decode batch, #running-req: 1, accept len: 2.50, accept rate: 0.50\n"
        "  a traceback line without a stamp\n"
        f"(APIServer pid=7) INFO {vllm_new} [metrics.py:120] SpecDecoding metrics: Mean "
        "acceptance length: 3.12, Accepted: 852 tokens\n"
    )
    result = cli("logs", "-H", "testbox", "--log", str(log), "--since", "10m", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["lines"] == log.read_text().splitlines()[1:]
    assert doc["accept_length"] == [2.5, 3.12]
    bad = cli("logs", "-H", "testbox", "--log", str(log), "--since", "yesterday")
    assert bad.returncode == 2 and b"--since yesterday" in bad.stderr


def test_follow_shows_new_lines_within_a_second_and_survives_rotation(box, tmp_path):
    log = tmp_path / "server.log"
    log.write_text("[2026-01-01 00:00:00] starting\n")
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(box.ssh_config), COLUMNS="200")
    follower = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "logs", "-H", "testbox", "--log", str(log), "-f"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    seen: list[tuple[float, str]] = []

    def reader() -> None:
        for raw in follower.stdout:
            seen.append((time.monotonic(), raw.decode()))

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not any("starting" in line for _, line in seen) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert any("starting" in line for _, line in seen), follower.stderr
        lags = []
        for number in range(3):
            with open(log, "a") as out:
                written = time.monotonic()
                out.write(f"[2026-01-01 00:00:0{number}] Decode batch, accept len: 2.{number}0\n")
            marker = f"accept len: 2.{number}0"
            while not any(marker in line for _, line in seen) and time.monotonic() < written + 5:
                time.sleep(0.01)
            arrived = [t for t, line in seen if marker in line]
            assert arrived, marker
            lags.append(arrived[0] - written)
        assert max(lags) < 1.0, lags
        log.write_text("[2026-01-01 00:01:00] restarted after rotation\n")
        deadline = time.monotonic() + 5
        while not any("restarted" in line for _, line in seen) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert any("restarted" in line for _, line in seen)
    finally:
        follower.send_signal(signal.SIGINT)
        follower.wait(timeout=10)
        thread.join(timeout=5)
    assert follower.returncode == 130  # Ctrl-C, as README's table and `tail -f` say
    assert "accept length" in seen[-1][1] and "over 3 lines" in seen[-1][1]


def test_hostile_logs(cli, tmp_path, standin):
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    started = time.monotonic()
    result = cli("logs", "-H", "testbox", "--log", str(fifo), timeout=30)
    assert time.monotonic() - started < 20
    assert result.returncode == 1 and b"not a regular file" in result.stderr
    missing = cli("logs", "-H", "testbox", "--log", str(tmp_path / "absent.log"))
    assert missing.returncode == 1 and b"no such log file" in missing.stderr
    binary = tmp_path / "binary.log"
    binary.write_bytes(b"\x1b]0;pwned\x07 accept len: 9.99\n\xff\xfe\n")
    shown = cli("logs", "-H", "testbox", "--log", str(binary))
    assert shown.returncode == 0 and b"\x1b" not in shown.stdout
    # the session's foreign server and this one: which log is not guessed
    standin("sglang")
    several = cli("logs", "-H", "testbox")
    assert several.returncode == 2 and b"choose one with --server" in several.stderr


def test_tail_across_chunk_boundaries(tmp_path):
    """Lines split between the 1 MiB chunks read back from the end come out whole."""
    from remotedbg.agent.log_follow import read_log_tail

    log = tmp_path / "big.log"
    lines = [f"line {i} " + "x" * (i % 97) for i in range(40000)]  # ~2.7 MB
    log.write_text("\n".join(lines) + "\n")
    got = read_log_tail({"path": str(log), "lines": 30000})
    assert got["lines"] == lines[-30000:] and got["offset"] == log.stat().st_size
    unterminated = tmp_path / "open.log"
    unterminated.write_text("a\nb\nstill being writ")
    assert read_log_tail({"path": str(unterminated), "lines": 2})["lines"] == [
        "b",
        "still being writ",
    ]


def test_logs_of_several_hosts(cli, tmp_path):
    log = tmp_path / "server.log"
    log.write_text("[2026-01-01 00:00:00] Decode batch, accept len: 2.50\n")
    result = cli("logs", "-H", "testbox,nosftp", "--log", str(log), "--json")
    doc = json.loads(result.stdout)
    assert result.returncode == 0
    assert [(h["host"], h["accept_length"]) for h in doc["hosts"]] == [
        ("testbox", [2.5]),
        ("nosftp", [2.5]),
    ]
    refused = cli("logs", "-H", "testbox,nosftp", "--log", str(log), "-f")
    assert refused.returncode == 2 and b"one --host" in refused.stderr


def test_vllm_log_shows_its_figures(cli, tmp_path):
    """`logs` on a vLLM log written as 0.33.0 writes it (rendered from its own format string,
    vllm/v1/spec_decode/metrics.py:120-137): accept length, per-position rates, tokens."""
    from tests.releases import release
    from tests.test_server_scan import write_vllm_log

    log = tmp_path / "vllm.log"
    rendered = write_vllm_log(release("vllm", "0.33.0"), log)
    result = cli("logs", "-H", "testbox", "--log", str(log), "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["accept_length"] == [round(r.values["mean_acceptance_length"], 2) for r in rendered]
    assert doc["per_position_last"] == [0.1, 0.02, 0.0]
    assert doc["spec_tokens"] == {"accepted": 182, "drafted": 450, "lines": 2}
    text = cli("logs", "-H", "testbox", "--log", str(log), "--spec-only")
    out = text.stdout.decode()
    assert "per position 0.10 0.02 0.00" in out and "182 of 450 drafted tokens accepted" in out


SECRET_VALUES = ("S3cretValue1", "sk-abcdefghijklmnop", "hf_qrstuvwxyzabcdef")


def test_engine_log_lines_that_echo_their_arguments_keep_no_secret(cli, tmp_path):
    """vLLM before 0.33 logs its launch arguments as they are (`non-default args: {...}`, the
    release's own format string: tests/engine_logs.py), and SGLang 0.5.6 `server_args=ServerArgs
    (..., api_key='...')` (srt/entrypoints/engine.py:124, `f"{server_args=}"`, a dataclass repr):
    `logs` shows and returns them with every secret replaced (issue 46)."""
    from tests.engine_logs import launch_args_line
    from tests.releases import release

    vllm_line = launch_args_line(release("vllm", "0.10.1.1"), {
        "model": "/models/target", "api_key": SECRET_VALUES[0], "hf_token": SECRET_VALUES[2]})
    sglang_line = ("[2026-12-04 10:00:00] server_args=ServerArgs(model_path='/models/target', "
                   f"api_key='{SECRET_VALUES[1]}', hf_token=None, port=30000)")  # fmt: skip
    log = tmp_path / "server.log"
    log.write_text(f"{vllm_line}\n{sglang_line}\n")
    for extra in ((), ("--json",)):
        result = cli("logs", "-H", "testbox", "--log", str(log), *extra)
        assert result.returncode == 0, result.stderr
        out = result.stdout.decode()
        assert "non-default args" in out and "server_args=ServerArgs" in out
        assert not any(secret in out for secret in SECRET_VALUES), out


def test_a_launch_through_a_shell_keeps_its_secrets_out_of_every_json(cli, standin):
    """A server started as `bash -c "... --speculative-config '{..., "hf_token": ...}'"` with
    a token in its environment assignment: locate-eagle, spec-audit and logs name the server
    and never its secrets (issue 46)."""
    config = ('{"method": "eagle3", "model": "/models/draft", "num_speculative_tokens": 3, '
              f'"hf_token": "{SECRET_VALUES[2]}", "password": "{SECRET_VALUES[0]}"}}')  # fmt: skip
    server = standin("vllm", args=["--model", "/models/target", "--speculative-config", config,
                                   "--api-key", SECRET_VALUES[1]],
                     wrapper=["env", f"OPENAI_API_KEY={SECRET_VALUES[1]}", "bash", "-c"])
    for argv in (["locate-eagle", "-H", "testbox", "--json", "--no-home"],
                 ["playbook", "spec-audit", "-H", "testbox", "--json",
                  "--var", "search_home=false"],
                 ["logs", "-H", "testbox", "--server", str(server.pid), "--json"]):  # fmt: skip
        result = cli(*argv, timeout=120)
        out = result.stdout.decode() + result.stderr.decode()
        assert "/models/target" in out, (argv, out[-2000:])  # the server was read
        assert not any(secret in out for secret in SECRET_VALUES), (argv, out)
