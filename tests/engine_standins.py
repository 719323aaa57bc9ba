"""Stand-in SGLang and vLLM servers that speak the engines' real wire formats, serving scripted
acceptance. Written from the releases' code (paths relative to site-packages of the wheels the
conformance suite downloads; see tests/releases.py):

SGLang /generate (0.5.23): request {"text", "sampling_params": {"max_new_tokens",
  "temperature"}} (sglang/srt/managers/io_struct.py:185,227); unknown sampling keys are a 400
  (sglang/srt/entrypoints/http_server.py:937-939, sglang/api/v1/api_types.py:177-178). The answer
  is {"text", "output_ids", "meta_info"} (sglang/srt/managers/tokenizer_manager.py:2666-2670);
  the spec keys come from _calculate_spec_decoding_metrics (tokenizer_manager.py:3138-3210):
  spec_accept_length = completion_tokens / spec_verify_ct (:3166-3168), spec_num_proposed_drafts
  = verify_ct * (num_draft_tokens - 1) (:3156-3158), spec_correct_drafts_histogram[j] = verify
  steps that accepted exactly j drafts, bonus excluded, as long as the largest j seen
  (schedule_batch.py:1373-1377, 1566-1572); all absent when verify_ct == 0. completion_tokens
  counts the prefill token (scheduler_components/output_streamer.py:490). 0.5.14 adds
  spec_accept_histogram (tokenizer_manager.py:2350-2353); 0.5.6 has spec_accept_token_num and
  spec_draft_token_num and no histogram (0.5.6 tokenizer_manager.py:1849-1876); 0.4.6.post5 only
  spec_verify_ct (0.4.6.post5 tokenizer_manager.py:1200-1205) and only /get_server_info
  (0.4.6.post5 http_server.py:221-229).
SGLang /server_info: {..., "internal_states": [{"avg_spec_accept_length"}], "version"}
  (http_server.py:886-893; scheduler_components/internal_state.py:118-125).
SGLang auth: Authorization: Bearer KEY; /health* and /metrics* exempt; else 401
  {"error": "Unauthorized"} (sglang/srt/utils/auth.py:98-117,192-203).
SGLang log: "[%Y-%m-%d %H:%M:%S] Decode batch, #running-req: N, #token: N, token usage: U,
  accept len: X, accept rate: Y, cuda graph: B, gen throughput (token/s): T, #queue-req: Q"
  (scheduler_components/metrics_reporter.py:963,1005,1039-1043; utils/common.py:2629-2637).
vLLM (0.33.0): /version {"version"} (vllm/entrypoints/serve/instrumentator/basic.py:53-56);
  /v1/models data[].owned_by "vllm" (vllm/entrypoints/openai/models/serving.py:64-77);
  /v1/completions {"model", "prompt", "max_tokens", "temperature"} -> usage.completion_tokens
  (vllm/entrypoints/openai/completion/protocol.py:49-74; completion/serving.py:658-666);
  /metrics counters vllm:spec_decode_num_drafts / _num_draft_tokens / _num_accepted_tokens and
  _num_accepted_tokens_per_pos{position} (vllm/v1/spec_decode/metrics.py:228-264), labels
  model_name and engine (vllm/v1/metrics/loggers.py:499-504), exposed by prometheus_client with
  the _total suffix; vllm:generation_tokens (loggers.py:798-804); a draft's accepted count is
  generated - 1 (vllm/v1/core/sched/scheduler.py:2352-2354). Auth guards /v1 only
  (vllm/entrypoints/serve/middleware/authenticate.py:11,59-60). Log: "SpecDecoding metrics: Mean
  acceptance length: %.2f, Accepted throughput: ..., Per-position acceptance rate: %s, Avg Draft
  acceptance rate: %.1f%%" (vllm/v1/spec_decode/metrics.py:120-136; vllm/logger.py:28-33).

Run as `python -m sglang.launch_server ARGS` / `python -m vllm.entrypoints.openai.api_server
ARGS` through shim packages (tests write them), with the script in $STANDIN_SCRIPT (JSON):
    {"engine", "release", "pattern": {category: [accepted drafts per verify step, cycled]},
     "modes": {mode: [...]}, "past_chars": N, "past_pattern": [...] (prompts longer than N),
     "spec": true, "slow_s": 0, "drop_every": 0}
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from remotedbg.engines.probe_prompts import BUILTIN

CATEGORY_OF = {text: category for category, text in BUILTIN}


def argv_value(flag: str, default: str | None = None) -> str | None:
    args = sys.argv[1:]
    for index, word in enumerate(args):
        if word == flag and index + 1 < len(args):
            return args[index + 1]
        if word.startswith(flag + "="):
            return word.split("=", 1)[1]
    return default


def steps_for(pattern: list[int], max_tokens: int) -> list[int]:
    """Accepted drafts of each verify step until max_tokens are out (the first token comes from
    prefill; each step gives accepted + 1)."""
    produced, steps = 1, []
    while produced < max_tokens:
        j = pattern[len(steps) % len(pattern)]
        steps.append(j)
        produced += j + 1
    return steps


class State:
    def __init__(self, script: dict) -> None:
        self.script = script
        self.engine = script["engine"]
        self.release = script.get("release", "0.5.23" if self.engine == "sglang" else "0.33.0")
        if self.engine == "sglang":
            self.num_steps = int(argv_value("--speculative-num-steps", "3"))
            self.spec = bool(argv_value("--speculative-algorithm"))
        else:
            config = json.loads(argv_value("--speculative-config", "null") or "null")
            self.spec = bool(config)
            self.num_steps = int((config or {}).get("num_speculative_tokens", 3))
        self.api_key = argv_value("--api-key")
        self.model = argv_value("--model-path") or argv_value("--model") or "model"
        self.lock = threading.Lock()
        self.requests = 0
        self.drafts = self.draft_tokens = self.accepted = self.generated = 0
        self.per_pos = [0] * self.num_steps
        self.total_steps = self.total_accept_tokens = 0

    def pattern(self, prompt: str, mode: str) -> list[int]:
        """The script's accepted drafts per step: by mode (greedy, sampled, chat, thinking-on,
        thinking-off) if it names one, else by the prompt's kind, else its default."""
        past = self.script.get("past_chars")  # a draft trained only up to this prompt length
        if past and len(prompt) > past:
            return self.script["past_pattern"]
        modes = self.script.get("modes") or {}
        if mode in modes:
            return modes[mode]
        table = self.script["pattern"]
        return table.get(CATEGORY_OF.get(prompt, "custom")) or table["default"]


def log_line(state: State, steps: list[int]) -> str:
    if not steps:
        return ""
    length = sum(j + 1 for j in steps) / len(steps)
    if state.engine == "sglang":
        rate = sum(steps) / (len(steps) * state.num_steps)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        return (
            f"[{stamp}] Decode batch, #running-req: 1, #token: 100, token usage: 0.01, accept len: "
            f"{length:.2f}, accept rate: {rate:.2f}, cuda graph: True, gen throughput (token/s): "
            "150.23, #queue-req: 0"
        )
    positions = [sum(1 for j in steps if j > k) / len(steps) for k in range(state.num_steps)]
    stamp = time.strftime("%m-%d %H:%M:%S")
    return (
        f"(APIServer pid={os.getpid()}) INFO {stamp} [metrics.py:120] SpecDecoding metrics: Mean "
        f"acceptance length: {length:.2f}, Accepted throughput: 85.20 tokens/s, Drafted "
        f"throughput: 120.30 tokens/s, Accepted: {sum(steps)} tokens, Drafted: "
        f"{len(steps) * state.num_steps} tokens, Per-position acceptance rate: "
        + ", ".join(f"{p:.3f}" for p in positions)
        + f", Avg Draft acceptance rate: {100 * sum(steps) / (len(steps) * state.num_steps):.1f}%"
    )


def sglang_meta(state: State, prompt: str, max_tokens: int, steps: list[int]) -> dict:
    meta = {"id": "0" * 32, "finish_reason": {"type": "length", "length": max_tokens},
            "prompt_tokens": max(1, len(prompt) // 4), "completion_tokens": max_tokens,
            "cached_tokens": 0, "e2e_latency": 0.01}  # fmt: skip
    if not state.spec:
        return meta
    verify = len(steps)
    correct = sum(steps)
    histogram = [0] * (max(steps) + 1) if steps else []
    for j in steps:
        histogram[j] += 1
    if state.release in ("0.4.6.post5", "0.4.10.post2", "0.5.1"):  # 0.5.1 :1636-1637 too
        meta["spec_verify_ct"] = verify
    elif state.release == "0.5.6":
        meta.update(spec_accept_rate=correct / (verify * state.num_steps) if verify else 0.0,
                    spec_accept_length=max_tokens / verify if verify else 0,
                    spec_verify_ct=verify, spec_accept_token_num=correct,
                    spec_draft_token_num=verify * state.num_steps)  # fmt: skip
    elif verify:
        meta.update(spec_accept_rate=correct / (verify * state.num_steps),
                    spec_accept_length=max_tokens / verify, spec_num_correct_drafts=correct,
                    spec_num_proposed_drafts=verify * state.num_steps, spec_verify_ct=verify,
                    spec_correct_drafts_histogram=histogram)  # fmt: skip
        if state.release == "0.5.14":
            meta["spec_accept_histogram"] = list(histogram)
    return meta


def prometheus(state: State) -> str:
    labels = f'engine="0",model_name="{state.model}"'
    lines = [f"vllm:generation_tokens_total{{{labels}}} {float(state.generated)}"]
    if state.spec:
        for name, value in (("num_drafts", state.drafts), ("num_draft_tokens", state.draft_tokens),
                            ("num_accepted_tokens", state.accepted)):  # fmt: skip
            lines += [f"# TYPE vllm:spec_decode_{name}_total counter",
                      f"vllm:spec_decode_{name}_total{{{labels}}} {float(value)}"]  # fmt: skip
        for position, value in enumerate(state.per_pos):
            lines.append(
                f"vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},"
                f'position="{position}"}} {float(value)}'
            )
    return "\n".join(lines) + "\n"


def make_handler(state: State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # keep the log for engine lines only
            pass

        def _send(self, status: int, body: object, content_type: str = "application/json"):
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            if not state.api_key:
                return True
            guarded = (
                self.path.startswith("/v1")
                if state.engine == "vllm"
                else not self.path.startswith(("/health", "/metrics"))
            )
            if guarded and self.headers.get("Authorization") != f"Bearer {state.api_key}":
                self._send(401, {"error": "Unauthorized"})
                return False
            return True

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            if not self._authorized():
                return
            if state.engine == "sglang" and self.path in ("/server_info", "/get_server_info"):
                # /server_info from 0.5.6 (http_server.py:540); before, /get_server_info only
                if self.path == "/server_info" and state.release in (
                    "0.4.6.post5",
                    "0.4.10.post2",
                    "0.5.1",
                ):
                    return self._send(404, {"detail": "Not Found"})
                internal = {}
                if state.total_steps:
                    internal["avg_spec_accept_length"] = (
                        state.total_accept_tokens / state.total_steps
                    )
                algorithm = argv_value("--speculative-algorithm")
                return self._send(200, {"model_path": state.model, "version": state.release,
                                        "speculative_algorithm": algorithm,
                                        "speculative_num_steps": state.num_steps,
                                        "internal_states": [internal]})  # fmt: skip
            if state.engine == "vllm" and self.path == "/version":
                return self._send(200, {"version": state.release})
            if state.engine == "vllm" and self.path == "/v1/models":
                return self._send(200, {"object": "list", "data": [
                    {"id": state.model, "object": "model", "owned_by": "vllm", "root": state.model}
                ]})  # fmt: skip
            if state.engine == "vllm" and self.path == "/metrics":
                return self._send(200, prometheus(state), "text/plain; version=0.0.4")
            self._send(404, {"detail": "Not Found"})

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            if not self._authorized():
                return
            with state.lock:
                state.requests += 1
                number = state.requests
            drop = int(state.script.get("drop_every") or 0)
            if drop and number % drop == 0:
                self.close_connection = True
                self.connection.shutdown(2)
                return
            time.sleep(float(state.script.get("slow_s") or 0))
            chat = self.path == "/v1/chat/completions"
            if state.engine == "sglang" and self.path == "/generate":
                params = body.get("sampling_params") or {}
                unknown = set(params) - {"max_new_tokens", "temperature"}
                if unknown:
                    return self._send(400, {"error": f"unknown field `{sorted(unknown)[0]}`"})
                prompt, max_tokens = body["text"], int(params.get("max_new_tokens", 128))
                temperature = float(params.get("temperature", 1.0))
            elif (state.engine == "vllm" and self.path == "/v1/completions") or chat:
                prompt = body["messages"][-1]["content"] if chat else body["prompt"]
                max_tokens = int(body.get("max_tokens", 16))
                temperature = float(body.get("temperature", 1.0))
            else:
                return self._send(404, {"detail": "Not Found"})
            mode = "greedy" if temperature == 0 else "sampled"
            if chat:
                thinking = (body.get("chat_template_kwargs") or {}).get("enable_thinking")
                mode = {None: "chat-template", True: "thinking-on", False: "thinking-off"}[thinking]
            steps = steps_for(state.pattern(prompt, mode), max_tokens) if state.spec else []
            with state.lock:
                state.generated += max_tokens
                state.drafts += len(steps)
                state.draft_tokens += len(steps) * state.num_steps
                state.accepted += sum(steps)
                for j in steps:
                    for k in range(min(j, state.num_steps)):
                        state.per_pos[k] += 1
                state.total_steps += len(steps)
                state.total_accept_tokens += sum(j + 1 for j in steps)
            line = log_line(state, steps) if state.spec else ""
            if line:
                print(line, flush=True)
            usage = {"prompt_tokens": 5, "completion_tokens": max_tokens,
                     "total_tokens": 5 + max_tokens}  # fmt: skip
            if chat:
                answer = {"id": "chatcmpl-1", "object": "chat.completion", "model": state.model,
                          "choices": [{"index": 0, "message": {"role": "assistant",
                                                               "content": "x"}}],
                          "usage": usage}  # fmt: skip
                meta = sglang_meta(state, prompt, max_tokens, steps)
                # SGLang 0.5.23: sglext.spec_tokens_details when asked (protocol.py:961,
                # serving_chat.py:2865-2894, the same keys as meta_info, openai/utils.py:310-341)
                if (
                    state.engine == "sglang"
                    and state.release == "0.5.23"
                    and body.get("return_spec_tokens_details")
                ):
                    keys = ("spec_accept_rate", "spec_accept_length", "spec_num_correct_drafts",
                            "spec_num_proposed_drafts", "spec_verify_ct",
                            "spec_correct_drafts_histogram")  # fmt: skip
                    answer["sglext"] = {"spec_tokens_details": {k: meta.get(k) for k in keys}}
                return self._send(200, answer)
            if state.engine == "sglang":
                meta = sglang_meta(state, prompt, max_tokens, steps)
                answer = {"text": "x" * max_tokens, "meta_info": meta}
                if not state.release.startswith("0.4"):  # 0.4.x: text and meta_info only
                    answer["output_ids"] = list(range(max_tokens))
                return self._send(200, answer)
            self._send(200, {"id": "cmpl-1", "object": "text_completion", "model": state.model,
                             "choices": [{"index": 0, "text": "x", "finish_reason": "length"}],
                             "usage": usage, "metrics": None})  # fmt: skip

    return Handler


def main(engine: str) -> None:
    script = json.loads(os.environ.get("STANDIN_SCRIPT") or "{}")
    script.setdefault("engine", engine)
    script.setdefault("pattern", {"default": [3, 2, 3, 1]})
    state = State(script)
    port = int(argv_value("--port", "30000" if engine == "sglang" else "8000"))
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(state))
    print(f"stand-in {engine} {state.release} serving on 127.0.0.1:{port}", flush=True)
    server.serve_forever()
