"""Live acceptance from a serving engine, measured from the box itself: the agent speaks HTTP to
the server's loopback port (no port forwarding, no listening socket) and returns the engine's own
per-request speculative-decoding counters. Read-only for the box; the load is the requests asked.

`probe(args)` with
    {"port", "engine": the scan's engine name | None (ask the server), "engine_labels":
     {engine: label} (the client's profiles, for messages), "pid": int | None (its
     --api-key is read from there), "api_key": str | None, "requests": [{"id", "category",
     "mode", "prompt", "max_tokens", "temperature"}], "budget_s", "request_timeout_s"}
returns {"engine", "version", "model", "spec_off": bool, "measurements": [...], "notes": [...]}.

Each measurement: {"id", "category", "mode", "ok", "error", "latency_s", "prompt_tokens",
"completion_tokens", "verify_steps", "accepted", "drafted", "accepted_per_position", "other_tokens",
"source"}. Field names are the engines' (wire formats in the module's tests, cited there):
SGLang /generate meta_info spec_verify_ct, spec_correct_drafts_histogram (0.5.14 also as
spec_accept_histogram), spec_num_correct_drafts / spec_accept_token_num; vLLM /metrics counters
vllm:spec_decode_num_drafts, _num_draft_tokens, _num_accepted_tokens, _num_accepted_tokens_per_pos
{position}, and 0.33's per-request metrics.speculative_decoding when the server gives it.
"""

from __future__ import annotations

import json
import os
import socket
import time

from remotedbg.agent.server_scan import engines_named, parse_prometheus_samples

_MAX_BODY = 4 << 20
_SECRET_FLAGS = ("--api-key",)


class ProbeError(Exception):
    """A one-line reason the probe could not run at all."""


# ----------------------------------------------------------------------------------------- HTTP
class _Deadline(object):
    """A socket whose every read and write ends by one wall-clock deadline: a server that
    trickles a byte every 2 s would otherwise reset a per-read timeout for ever."""

    def __init__(self, sock, deadline):
        self.sock, self.deadline = sock, deadline
        self._files, self._closed = 0, False

    def _arm(self):
        remaining = self.deadline - time.time()
        if remaining <= 0:
            raise socket.timeout("timed out")
        self.sock.settimeout(remaining)

    def recv_into(self, buffer, nbytes=0):
        self._arm()
        return self.sock.recv_into(buffer, nbytes)

    def recv(self, nbytes):
        self._arm()
        return self.sock.recv(nbytes)

    def sendall(self, data):
        self._arm()
        return self.sock.sendall(data)

    def makefile(self, mode="rb", buffering=-1):
        import io

        self._files += 1  # as socket.socket does: closed for real once its files are
        return io.BufferedReader(socket.SocketIO(self, "rb"))

    def _decref_socketios(self):
        self._files -= 1
        if self._closed and self._files <= 0:
            self.sock.close()

    def close(self):
        self._closed = True
        if self._files <= 0:
            self.sock.close()

    def __getattr__(self, name):
        return getattr(self.sock, name)


def http(port, method, path, body=None, api_key=None, timeout=10.0):
    """(status, text) of one request to 127.0.0.1:port; never through a proxy. The whole
    exchange ends within `timeout` seconds, however slowly the server answers."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=timeout)
    conn.connect()
    conn.sock = _Deadline(conn.sock, time.time() + timeout)
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        text = response.read(_MAX_BODY).decode("utf-8", "replace")
        return response.status, text
    finally:
        conn.close()


def _json(port, path, api_key, timeout, body=None):
    status, text = http(port, "POST" if body is not None else "GET", path, body, api_key, timeout)
    if status == 401:
        raise ProbeError(
            "the server wants an API key (HTTP 401 on %s): pass --api-key, or run as the user "
            "whose server it is so its --api-key is read" % path
        )
    if status >= 400:
        raise ProbeError("HTTP %d on %s: %s" % (status, path, text.strip()[:200]))
    try:
        return json.loads(text)
    except ValueError:
        raise ProbeError("%s did not answer JSON: %r" % (path, text[:120])) from None


def _reason(exc):
    if isinstance(exc, ProbeError):
        return str(exc)
    if isinstance(exc, socket.timeout):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused: nothing listens on that port"
    return "%s: %s" % (type(exc).__name__, exc)


# ----------------------------------------------------------------------------- what is serving
def api_key_of(pid):
    """The --api-key a server was started with (read on the box; never sent back)."""
    try:
        with open("/proc/%d/cmdline" % int(pid), "rb") as handle:
            argv = [a.decode("utf-8", "replace") for a in handle.read().split(b"\0") if a]
    except (OSError, ValueError):
        return None
    for index, word in enumerate(argv):
        for flag in _SECRET_FLAGS:
            if word == flag and index + 1 < len(argv):
                return argv[index + 1]
            if word.startswith(flag + "="):
                return word[len(flag) + 1 :]
    try:
        with open("/proc/%d/environ" % int(pid), "rb") as handle:
            for item in handle.read().split(b"\0"):
                if item.startswith(b"VLLM_API_KEY="):
                    return item.split(b"=", 1)[1].decode("utf-8", "replace")
    except OSError:
        pass
    return None


#: the engines whose per-request counters the probe reads (SGLang's meta_info, vLLM's /metrics)
MEASURED = ("sglang", "vllm")


def identify(port, api_key, timeout, engine=None, labels=None):
    """{"engine", "version", "model", "server_info"}: vLLM answers /version; SGLang answers
    /server_info (0.5.x) or /get_server_info (every release) with internal_states. `engine`:
    what the scan says the process is; `labels`: {engine: label} from the client's profiles."""
    for path in ("/server_info", "/get_server_info"):
        try:
            status, text = http(port, "GET", path, None, api_key, timeout)
        except ConnectionRefusedError:
            raise ProbeError(
                "connection refused on 127.0.0.1:%d: nothing listens there" % port
            ) from None
        if status == 401:
            raise ProbeError("the server wants an API key (HTTP 401 on %s): pass --api-key" % path)
        if status == 200:
            try:
                info = json.loads(text)
            except ValueError:
                continue
            if isinstance(info, dict) and "internal_states" in info:
                return {"engine": "sglang", "version": info.get("version"),
                        "model": info.get("served_model_name") or info.get("model_path"),
                        "server_info": info}  # fmt: skip
    status, text = http(port, "GET", "/version", None, api_key, timeout)
    if status == 200:
        try:
            version = json.loads(text).get("version")
        except (ValueError, AttributeError):
            version = None
        if version:
            models = _json(port, "/v1/models", api_key, timeout)
            data = models.get("data") or [{}]
            return {"engine": "vllm", "version": version, "model": data[0].get("id"),
                    "server_info": None}  # fmt: skip
    labels = labels or {}
    measured = engines_named([labels.get(name, name) for name in MEASURED])
    if engine and engine not in MEASURED:
        raise ProbeError(
            "127.0.0.1:%d is a %s server: the live probe reads the acceptance counters of %s "
            "servers only (its static checks and log figures still apply: diagnose --no-probe)"
            % (port, labels.get(engine, engine), measured)
        )
    raise ProbeError(
        "127.0.0.1:%d answers as no %s server (no /server_info, /get_server_info or /version "
        "answer), the engines the live probe measures; remotedbg knows %s"
        % (port, measured, engines_named(list(labels.values()) or None))
    )


# ---------------------------------------------------------------------------------- SGLang
def _release(version):
    parts = []
    for piece in str(version or "").split("."):
        digits = "".join(c for c in piece if c.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts[:3])


def _positions_from_histogram(histogram):
    """histogram[j] = verify steps that accepted exactly j draft tokens -> how many steps
    accepted the token at each position (position k needs j > k)."""
    out = []
    for k in range(max(len(histogram) - 1, 0)):
        out.append(sum(int(c) for c in histogram[k + 1 :]))
    return out


def sglang_measure(meta):
    """The spec counters of one /generate answer's meta_info; None when it carries none."""
    verify = meta.get("spec_verify_ct")
    if verify is None:
        return None
    histogram = meta.get("spec_correct_drafts_histogram")
    if histogram is None:
        histogram = meta.get("spec_accept_histogram")
    accepted = meta.get("spec_num_correct_drafts")
    if accepted is None:
        accepted = meta.get("spec_accept_token_num")
    if accepted is None and histogram is not None:
        accepted = sum(j * int(c) for j, c in enumerate(histogram))
    drafted = meta.get("spec_num_proposed_drafts")
    if drafted is None:
        drafted = meta.get("spec_draft_token_num")
    return {
        "verify_steps": int(verify),
        "accepted": accepted,
        "drafted": drafted,
        "accepted_per_position": _positions_from_histogram(histogram)
        if histogram is not None
        else None,
        "engine_accept_length": meta.get("spec_accept_length"),
    }


def _chat_body(request, model):
    """An OpenAI chat request: the server applies the model's chat template; `thinking` sets
    chat_template_kwargs.enable_thinking (SGLang protocol.py ChatCompletionRequest, vLLM
    chat_completion/protocol.py)."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": request["prompt"]}],
        "max_tokens": int(request["max_tokens"]),
        "temperature": float(request["temperature"]),
    }
    if request.get("thinking") is not None:
        body["chat_template_kwargs"] = {"enable_thinking": bool(request["thinking"])}
    return body


def sglang_chat_request(port, request, api_key, timeout, model, has_chat_counts=False):
    """SGLang applies the template on /v1/chat/completions; from 0.5.23 the answer carries the
    request's spec counters under sglext.spec_tokens_details when asked
    (return_spec_tokens_details); earlier releases say nothing per request."""
    body = _chat_body(request, model)
    body["return_spec_tokens_details"] = True
    answer = _json(port, "/v1/chat/completions", api_key, timeout, body)
    usage = answer.get("usage") or {}
    out = {"prompt_tokens": usage.get("prompt_tokens"),
           "completion_tokens": usage.get("completion_tokens"),
           "source": "/v1/chat/completions sglext.spec_tokens_details"}  # fmt: skip
    details = (answer.get("sglext") or {}).get("spec_tokens_details")
    if isinstance(details, list):
        details = details[0] if details else None
    counted = sglang_measure(details) if isinstance(details, dict) else None
    if counted is None and has_chat_counts:
        out["spec_off"] = True  # 0.5.23 leaves sglext out when there are no spec keys
        return out
    if counted is None:
        raise ProbeError(
            "this SGLang release reports no per-request draft counts for chat requests "
            "(sglext.spec_tokens_details came in 0.5.23)"
        )
    out.update(counted)
    return out


def sglang_request(port, request, api_key, timeout, model=None, version=None):
    if request.get("chat"):
        # per-request counts for chat requests came in 0.5.23 (return_spec_tokens_details)
        has = _release(version) >= (0, 5, 23)
        return sglang_chat_request(port, request, api_key, timeout, model, has)
    body = {
        "text": request["prompt"],
        "sampling_params": {
            "max_new_tokens": int(request["max_tokens"]),
            "temperature": float(request["temperature"]),
        },
    }
    answer = _json(port, "/generate", api_key, timeout, body)
    if isinstance(answer, list):
        answer = answer[0] if answer else {}
    meta = answer.get("meta_info") or {}
    out = {
        "prompt_tokens": meta.get("prompt_tokens"),
        "completion_tokens": meta.get("completion_tokens"),
        "source": "/generate meta_info",
    }
    counted = sglang_measure(meta)
    if counted is None:
        out["spec_off"] = True
    else:
        out.update(counted)
    return out


# ------------------------------------------------------------------------------------ vLLM
_SPEC = "vllm:spec_decode_"


def vllm_counters(text):
    """The spec-decode counters and generated tokens of a /metrics page, summed over engines."""
    out = {"drafts": 0.0, "draft_tokens": 0.0, "accepted": 0.0, "generated": 0.0,
           "per_position": {}, "present": False}  # fmt: skip
    for name, labels, value in parse_prometheus_samples(text):
        base = name[:-6] if name.endswith("_total") else name
        if base == _SPEC + "num_drafts":
            out["drafts"] += value
            out["present"] = True
        elif base == _SPEC + "num_draft_tokens":
            out["draft_tokens"] += value
        elif base == _SPEC + "num_accepted_tokens":
            out["accepted"] += value
        elif base == _SPEC + "num_accepted_tokens_per_pos":
            position = int(labels.get("position", "0"))
            out["per_position"][position] = out["per_position"].get(position, 0.0) + value
        elif base == "vllm:generation_tokens":
            out["generated"] += value
    return out


def _metrics(port, timeout):
    status, text = http(port, "GET", "/metrics", None, None, timeout)
    if status != 200:
        raise ProbeError("HTTP %d on /metrics" % status)
    return vllm_counters(text)


def vllm_request(port, request, api_key, timeout, model):
    before = _metrics(port, timeout)
    if request.get("chat"):
        path, body = "/v1/chat/completions", _chat_body(request, model)
    else:
        path = "/v1/completions"
        body = {
            "model": model,
            "prompt": request["prompt"],
            "max_tokens": int(request["max_tokens"]),
            "temperature": float(request["temperature"]),
        }
    answer = _json(port, path, api_key, timeout, body)
    after = _metrics(port, timeout)
    usage = answer.get("usage") or {}
    completion = usage.get("completion_tokens")
    out = {"prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": completion}
    own = ((answer.get("metrics") or {}) if isinstance(answer.get("metrics"), dict) else {}).get(
        "speculative_decoding"
    )
    if isinstance(own, dict) and own.get("num_spec_steps") is not None:
        histogram = own.get("acceptance_histogram")
        out.update(
            verify_steps=int(own["num_spec_steps"]),
            accepted=own.get("num_accepted_draft_tokens"),
            drafted=own.get("num_draft_tokens"),
            accepted_per_position=_positions_from_histogram(histogram)
            if isinstance(histogram, list)
            else None,
            source=path + " metrics.speculative_decoding",
        )
        return out
    if not (before["present"] or after["present"]):
        out["spec_off"] = True
        return out
    positions = sorted(after["per_position"])
    out.update(
        verify_steps=int(after["drafts"] - before["drafts"]),
        accepted=int(after["accepted"] - before["accepted"]),
        drafted=int(after["draft_tokens"] - before["draft_tokens"]),
        accepted_per_position=[
            int(after["per_position"][p] - before["per_position"].get(p, 0.0)) for p in positions
        ]
        or None,
        source="/metrics deltas",
    )
    generated = int(after["generated"] - before["generated"])
    if completion is not None and generated > int(completion):
        out["other_tokens"] = generated - int(completion)
    return out


def engine_figure(port, engine, api_key, timeout):
    """The engine's own running accept length after the probe, to set beside the measurement:
    SGLang's internal_states[0].avg_spec_accept_length (folded in at each decode log line),
    vLLM's 1 + accepted / drafts over its lifetime."""
    try:
        if engine == "vllm":
            totals = _metrics(port, timeout)
            if totals["drafts"] > 0:
                return {"accept_length": round(1 + totals["accepted"] / totals["drafts"], 3),
                        "from": "/metrics since the server started"}  # fmt: skip
            return None
        for path in ("/server_info", "/get_server_info"):
            status, text = http(port, "GET", path, None, api_key, timeout)
            if status == 200:
                states = json.loads(text).get("internal_states") or [{}]
                value = states[0].get("avg_spec_accept_length")
                if value is not None:
                    where = path + " internal_states[0].avg_spec_accept_length"
                    return {"accept_length": round(float(value), 3), "from": where}
                return None
    except Exception:
        return None
    return None


# ------------------------------------------------------------------------------------ entry
def _pid_serving(port):
    """The process started with `--port PORT` (inside a container, whose PIDs the host's scan
    does not know), for its --api-key; None when there is not exactly one."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        given = [argv[i + 1] for i in range(len(argv) - 1) if argv[i] == "--port"]
        if str(port) in given or "--port=%d" % port in argv:
            found.append(int(entry))
    return found[0] if len(found) == 1 else None


def probe(args):
    port = int(args["port"])
    timeout = float(args.get("request_timeout_s") or 60.0)
    deadline = time.time() + float(args.get("budget_s") or 120.0)
    pid = args.get("pid") or (_pid_serving(port) if args.get("find_pid") else None)
    api_key = args.get("api_key") or (api_key_of(pid) if pid else None)
    notes = []
    try:
        server = identify(port, api_key, min(timeout, 10.0), args.get("engine"),
                          args.get("engine_labels"))
    except ProbeError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # refused, reset, timeout: one line for the user
        return {"error": "127.0.0.1:%d: %s" % (port, _reason(exc))}
    if args.get("engine") and args["engine"] != server["engine"]:
        notes.append("the process looks like %s; the port answers as %s"
                     % (args["engine"], server["engine"]))  # fmt: skip
    measurements = []
    spec_off = None
    for request in args.get("requests") or []:
        entry = {"id": request.get("id"), "category": request.get("category"),
                 "mode": request.get("mode"), "ok": False, "error": None}  # fmt: skip
        remaining = deadline - time.time()
        if remaining <= 0:
            entry["error"] = "not sent: the probe's time budget was spent"
            measurements.append(entry)
            continue
        started = time.time()
        try:
            if server["engine"] == "vllm":
                got = vllm_request(port, request, api_key, min(timeout, remaining),
                                   server["model"])  # fmt: skip
            else:
                got = sglang_request(port, request, api_key, min(timeout, remaining),
                                     server["model"], server["version"])  # fmt: skip
        except Exception as exc:
            entry["error"] = _reason(exc)
            entry["latency_s"] = round(time.time() - started, 3)
            measurements.append(entry)
            continue
        entry["latency_s"] = round(time.time() - started, 3)
        entry["ok"] = True
        off = bool(got.pop("spec_off", False))
        spec_off = off if spec_off is None else (spec_off and off)
        entry.update(got)
        measurements.append(entry)
        if off and server["engine"] == "vllm":
            # vLLM registers its spec_decode counters only when it speculates: one answer
            # without them says so for every request
            notes.append("the server does not speculate: the other requests were not sent")
            break
    info = server.get("server_info") or {}
    return {
        "engine_figure": engine_figure(port, server["engine"], api_key, min(timeout, 10.0)),
        "engine": server["engine"],
        "version": server["version"],
        "model": server["model"],
        "spec_off": bool(spec_off),
        "server_settings": {
            key: info.get(key)
            for key in (
                "speculative_algorithm",
                "speculative_num_steps",
                "speculative_eagle_topk",
                "speculative_num_draft_tokens",
            )  # fmt: skip
            if key in info
        },
        "api_key_used": bool(api_key),
        "measurements": measurements,
        "notes": notes,
    }
