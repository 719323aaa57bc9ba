"""probe against a real engine: its accept length next to the engine's own figures, and its cost.

    python bench/real_engine.py [--draft eagle3] [-n 1] [--max-tokens 64]

Uses the fixture of the real-engine tests (tests/vllm_engine.py: vLLM's CPU build, cached): times
its warm cost (install + models, cached) and a cold model build, starts one server, then in one
run prints
- probe's accept length (`remotedbg probe -H local --json`, as a user types it),
- the engine's `/metrics` deltas over the same requests (1 + accepted / drafts, vLLM's definition),
- the engine's `SpecDecoding metrics:` log lines written while probe ran (their accepted and
  drafted counts folded into one figure, and each line's own mean acceptance length),
- probe's wall time and requests against the same requests sent straight to the server from here
  (the baseline: what the measurement costs beyond the engine's own work).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from remotedbg.engines.probe_prompts import builtin_prompts  # noqa: E402
from tests.vllm_engine import (  # noqa: E402
    DRAFTS,
    METHODS,
    SPEC_TOKENS,
    VllmServer,
    build_models,
    install,
    metrics,
)

SPEC_LINE = re.compile(
    r"SpecDecoding metrics: Mean acceptance length: ([\d.]+).*?Accepted: (\d+) tokens, "
    r"Drafted: (\d+) tokens"
)
LOG_INTERVAL_S = 10  # vLLM logs its SpecDecoding line every 10 s while it drafts


def counters(server: VllmServer) -> dict[str, float]:
    values = metrics(server.get("/metrics"))

    def total(name: str) -> float:
        return sum(v for k, v in values.items() if k.split("{")[0] == name)

    return {
        "drafts": total("vllm:spec_decode_num_drafts_total"),
        "accepted": total("vllm:spec_decode_num_accepted_tokens_total"),
        "draft_tokens": total("vllm:spec_decode_num_draft_tokens_total"),
        "generated": total("vllm:generation_tokens_total"),
    }


def spec_lines(text: str) -> list[tuple[float, int, int]]:
    return [(float(m[1]), int(m[2]), int(m[3])) for m in map(SPEC_LINE.search,
                                                             text.splitlines()) if m]  # fmt: skip


def direct(server: VllmServer, prompts: list[str], max_tokens: int) -> float:
    """The same greedy completions sent straight to the server: wall seconds."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    started = time.perf_counter()
    for prompt in prompts:
        body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
        request = urllib.request.Request(server.url + "/v1/completions",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})  # fmt: skip
        with opener.open(request, timeout=600) as answer:
            answer.read()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draft", default="eagle3", choices=sorted(DRAFTS))
    parser.add_argument("-n", type=int, default=1, help="prompts of each kind")
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()

    started = time.perf_counter()
    inst = install()
    models = build_models(inst)
    warm = time.perf_counter() - started
    with tempfile.TemporaryDirectory(prefix="remotedbg-bench-") as work:
        started = time.perf_counter()
        code = f"import pathlib, tests.vllm_engine as e; e._build(pathlib.Path({work!r}) / 'm')"
        subprocess.run([str(inst.python), "-c", code], cwd=ROOT, check=True)
        cold_models = time.perf_counter() - started
        log = Path(work) / "server.log"
        server = VllmServer.start(inst, models, log, METHODS.get(args.draft, "eagle3"), args.draft)
        try:
            server.wait_ready()
            run(server, args, warm, cold_models)
        finally:
            server.stop()


def run(server: VllmServer, args: argparse.Namespace, warm: float, cold_models: float) -> None:
    prompts = [p.text for p in builtin_prompts(args.n)]
    # warm the server up (its first request compiles and allocates), then let a log interval pass
    direct(server, prompts[:1], 8)
    time.sleep(LOG_INTERVAL_S + 1)
    lines_before = len(spec_lines(server.log.read_text()))
    before = counters(server)
    started = time.perf_counter()
    probe = subprocess.run(
        [sys.executable, "-m", "remotedbg", "probe", "-H", "local", "--server", str(server.pid),
         "--json", "-n", str(args.n), "--max-tokens", str(args.max_tokens), "--compare", "none"],
        capture_output=True, text=True, cwd=ROOT, timeout=900,
    )  # fmt: skip
    probe_s = time.perf_counter() - started
    after = counters(server)
    time.sleep(LOG_INTERVAL_S + 1)  # the interval the probe ended in is logged
    logged = spec_lines(server.log.read_text())[lines_before:]
    doc = json.loads(probe.stdout)
    baseline_s = direct(server, prompts, args.max_tokens)

    drafts = after["drafts"] - before["drafts"]
    accepted = after["accepted"] - before["accepted"]
    log_accepted = sum(a for _, a, _ in logged)
    log_drafts = sum(d for _, _, d in logged) / SPEC_TOKENS
    overall = doc["summary"]["overall"]
    print(f"vLLM CPU build, draft {args.draft}, {SPEC_TOKENS} speculative tokens; server ready "
          f"in {server.ready_s:.0f} s; fixture warm {warm:.1f} s, model build cold "
          f"{cold_models:.1f} s")  # fmt: skip
    print(f"probe      accept length {overall['accept_length']:.3f} over "
          f"{overall['verify_steps']} verify steps, {overall['requests']} requests, "
          f"{overall['completion_tokens']} tokens")  # fmt: skip
    print(f"/metrics   accept length {1 + accepted / drafts:.3f} (1 + {accepted:.0f} accepted / "
          f"{drafts:.0f} drafts, the same requests)")  # fmt: skip
    if logged:
        each = ", ".join(f"{length:.2f}" for length, _, _ in logged)
        print(f"log        accept length {1 + log_accepted / log_drafts:.3f} over the "
              f"{len(logged)} SpecDecoding lines written meanwhile (each: {each}; they may "
              "include the warm-up's tail)")  # fmt: skip
    else:
        print("log        no SpecDecoding line was written while probe ran")
    print(f"cost       probe {probe_s:.1f} s wall for {doc['load']['requests']} requests "
          f"(+2 /metrics reads each); the same requests sent directly {baseline_s:.1f} s: "
          f"ratio {probe_s / baseline_s:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
