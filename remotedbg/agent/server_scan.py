"""Running engine servers (SGLang, vLLM, LMDeploy, Aphrodite, TokenSpeed): launch arguments,
speculative-decoding figures, metrics; read-only.

One round trip: `scan_servers(args)` with
    {"log": optional path, "args": optional launch-argument string, "tail_lines": 200,
     "metrics": None | True | False, "max_log_bytes": 16 MiB, "timeout": 2.0,
     "http_later": False}
returns {"servers": [...], "notes": [...], "elapsed_s"}. The servers' HTTP figures are asked all
at once (a hung server costs one wait, not one per server); with "http_later" they are not
asked: each server says which it serves (`http_asks`) and the caller asks those of the servers
it judges with `ask_http` (a second round trip), none of the others.

Each server is
    {"source": "process" | "--var args" | "--var log", "pid", "engine", "cmdline" (redacted),
     "exe", "cwd", "children": [pids], "args": {flag: value}, "positional": [...],
     "spec": {"algorithm", "draft_model", "target_model", "num_steps", "topk",
              "num_draft_tokens", "token_map", "port", "enable_metrics", "ceiling",
              "heterogeneous_vocab"},
     "log": {"path", "how_found", "decode_lines", "figures": {name: {"values", "first", "last",
             "mean", "min", "max", "count"}}, "server_args_line": bool} | None,
     "metrics": {"url", "spec_accept_length", "spec_accept_rate", "error"} | None,
     "server_info": {"url", "avg_spec_accept_length", "error"} | None,
     "notes": [...]}

Flags are stored without the leading dashes, as given (`model-path`); `--flag` alone is True;
`--json-model-override-args` and `--speculative-config` are JSON-decoded when they parse. Values of
secret-looking flags (`--api-key`, `--hf-token`, ...) are replaced by "***". HTTP requests go only
to 127.0.0.1 (the server's --port), never through a proxy, with a short timeout; a failure is noted.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import time

from remotedbg.agent.containers import container_info, host_path, runtime_log_of
from remotedbg.agent.engine_process import (
    SERVER_WRAPPERS,
    WRAPPER,
    listening_ports,
    process_role,
)
from remotedbg.agent.engine_scan import _read_bytes, _readlink, process_argvs
from remotedbg.agent.redact import is_secret_flag, redact_cmdline

# Defaults for a standalone call; the client sends remotedbg.engines.knowledge's own
# (process_patterns per engine, server_wrappers), so both scans recognise servers one way.
PROCESS_PATTERNS = {
    "sglang": [r"\bsglang\.launch_server\b", r"-m\s+sglang\b", r"\bsglang\s+serve\b"],
    "vllm": [r"\bvllm\s+serve\b", r"\bvllm\.entrypoints\b", r"-m\s+vllm\b"],
    "lmdeploy": [r"\blmdeploy\s+serve\s+api_server\b", r"-m\s+lmdeploy\b"],
    "tokenspeed": [r"\btokenspeed\s+serve\b", r"\bsmg_grpc_servicer\.tokenspeed\b"],
}
# How each engine's launch line says its speculative settings, in spec_summary's names: the
# flags read for each (first given wins), the program word the target follows, the JSON flag
# that holds them all, the default port, and the flags only that engine takes (a line of flags
# alone is that engine's). A new engine is one entry here and one process pattern.
LAUNCH_FORMS = {
    "sglang": {
        "flags": {
            "algorithm": ["speculative-algorithm"],
            "draft_model": ["speculative-draft-model-path", "speculative-draft-model"],
            "num_steps": ["speculative-num-steps"],
            "topk": ["speculative-eagle-topk"],
            "num_draft_tokens": ["speculative-num-draft-tokens"],
            "token_map": ["speculative-token-map"],
            "target_model": ["model-path", "model"],
        },
        "port_flags": ["port"],
        "port": 30000,
        "own_flags": ["speculative-draft-model-path", "speculative-eagle-topk",
                      "speculative-num-steps", "model-path", "json-model-override-args"],
        # its parser is a plain argparse.ArgumentParser (0.5.23 srt/server_args.py:679), which
        # takes a unique prefix of a flag as the flag: SGLang's docs launch Qwen3-Next with
        # `--speculative-algo NEXTN` (docs/basic_usage/qwen3.md@v0.5.2:24)
        "abbrev": True,
    },
    # vLLM: --speculative-config JSON; from 0.22.0 also --spec-method/--spec-model/--spec-tokens,
    # written into it (0.22.0 vllm/engine/arg_utils.py:1463-1466, 1668-1681; the same key both
    # ways stops the start); its FlexibleArgumentParser leaves argparse's allow_abbrev on
    # (0.32.0 vllm/utils/argparse_utils.py)
    "vllm": {
        "flags": {
            "algorithm": ["spec-method"],
            "draft_model": ["spec-model"],
            "num_steps": ["spec-tokens"],
            "target_model": ["model-path", "model"],
        },
        "target_after": "serve",
        "target_positional": True,
        "settings": "speculative-config",
        "settings_fill_only": True,
        "abbrev": True,
        # a "model" that names the method, given with no method: prompt lookup, no draft
        # (0.8.5 config.py:2307-2314; 0.32.0 config/speculative.py:1136-1137, 1192; its own
        # structured-output tests write {"model": "[ngram]"}: tests/entrypoints/llm/
        # test_struct_output_generate.py@v0.32.0:127-132)
        "method_models": {"ngram": "ngram", "[ngram]": "ngram"},
        "draft_tokens_are_steps": True,
        "metrics_by_default": True,  # vLLM serves /metrics by default
        "port_flags": ["port"],
        "port": 8000,
        "own_flags": ["speculative-config", "hf-overrides", "max-model-len"],
    },
    # Aphrodite, a vLLM fork: `aphrodite run MODEL` / `aphrodite serve MODEL` (0.22.0
    # aphrodite/entrypoints/cli/run.py:12, serve.py:49), vLLM's --speculative-config and its
    # own --spec-method/--spec-model/--spec-tokens, written into it (engine/arg_utils.py:
    # 1326-1328, 1503-1514; the same key in both stops the start)
    "aphrodite": {
        "flags": {
            "algorithm": ["spec-method"],
            "draft_model": ["spec-model"],
            "num_steps": ["spec-tokens"],
            "target_model": ["model-path", "model"],
        },
        "target_after": ["run", "serve"],
        "target_positional": True,
        "settings": "speculative-config",
        "settings_fill_only": True,
        "draft_tokens_are_steps": True,
        "port_flags": ["port"],
        "port": 2242,  # aphrodite/entrypoints/openai/cli_args.py:223
        "own_flags": [],
    },
    # `lmdeploy serve api_server MODEL`: its flags (0.18.0 lmdeploy/cli/utils.py:835-849), N
    # draft tokens are N draft steps (cli/utils.py:97-101), port 23333 (cli/serve.py:332)
    "lmdeploy": {
        "flags": {
            "algorithm": ["speculative-algorithm"],
            "draft_model": ["speculative-draft-model"],
            "num_draft_tokens": ["speculative-num-draft-tokens"],
        },
        "target_after": "api_server",
        "draft_tokens_are_steps": True,
        # /metrics unless --disable-metrics (cli/utils.py:750-755, cli/serve.py:274)
        "metrics_by_default": True,
        "metrics_off_flag": "disable-metrics",
        "port_flags": ["server-port"],
        "port": 23333,
        "own_flags": ["server-port", "session-len", "backend"],
    },
    # `tokenspeed serve MODEL` / `ts serve MODEL`, and the engine it spawns, `python -m
    # smg_grpc_servicer.tokenspeed --host H --port P --model MODEL ...` (0.1.1
    # tokenspeed/cli/_argsplit.py:226, cli/_proc.py:39-60); its flags (runtime/utils/
    # server_args.py:2749-2792); --speculative-config fills what they leave out, its method
    # upper-cased (:694-736); the gateway's port 8000 (cli/serve_smg.py:66)
    "tokenspeed": {
        "flags": {
            "algorithm": ["speculative-algorithm"],
            "draft_model": ["speculative-draft-model-path"],
            "num_steps": ["speculative-num-steps"],
            "topk": ["speculative-eagle-topk"],
            "num_draft_tokens": ["speculative-num-draft-tokens"],
            "target_model": ["model", "model-path"],
        },
        "target_after": "serve",
        "settings": "speculative-config",
        "settings_fill_only": True,
        "method_upper": True,
        "port_flags": ["port"],
        "port": 8000,
        "own_flags": ["draft-model-path-use-base", "drafter-attention-backend"],
    },
}
DEFAULT_PORTS = {name: form["port"] for name, form in LAUNCH_FORMS.items()}
JSON_FLAGS = ("json-model-override-args", "speculative-config", "hf-overrides")
# vLLM's short spellings of flags the checks read (0.33.0 vllm/engine/arg_utils.py:992,1209,1866)
SHORT_FLAGS = {"-sc": "speculative-config", "-q": "quantization", "-tp": "tensor-parallel-size"}

# SGLang: "Decode batch, #running-req: 1, ..., accept len: 3.12, accept rate: 0.78, ...,
#          gen throughput (token/s): 101.12, ..."
_SGL_ACCEPT_LEN = re.compile(r"accept len(?:gth)?:\s*(-?[0-9.]+(?:e-?\d+)?)")
_SGL_ACCEPT_RATE = re.compile(r"accept rate:\s*(-?[0-9.]+(?:e-?\d+)?)")
_SGL_THROUGHPUT = re.compile(r"gen throughput \(token/s\):\s*(-?[0-9.]+(?:e-?\d+)?)")
# vLLM: "SpecDecoding metrics: Mean acceptance length: 2.77, ..., Per-position acceptance rate:
#        0.802, 0.551, 0.415, Avg Draft acceptance rate: 58.9%"
_VLLM_MEAN_LEN = re.compile(r"Mean acceptance length:\s*([0-9.]+)")
_VLLM_AVG_RATE = re.compile(r"(?:Avg )?Draft acceptance rate:\s*([0-9.]+)\s*%")
_VLLM_PER_POS = re.compile(r"Per-position acceptance rate:\s*\[?([0-9.,\s]+?)\]?(?:,\s*[A-Z]|$)")
_VLLM_THROUGHPUT = re.compile(r"Avg generation throughput:\s*([0-9.]+)\s*tokens/s")
# LMDeploy 0.18.0: "[2026-12-06 09:00:00 DP0] Avg thr (in/out): 12.0 / 101.1 tokens/s, ...,
#   SpecDecoding metrics: Draft acceptance rate: 58.90%, Mean acceptance length: 2.77, Accepted:
#   N tokens, Drafted: M tokens, Per-position acceptance rate: 0.802, 0.551" (vLLM's figures,
#   the mean with the bonus token: lmdeploy/metrics/loggers.py:75-94, :110-127)
_LMDEPLOY_MARK = "Avg thr (in/out):"
_LMDEPLOY_THROUGHPUT = re.compile(r"Avg thr \(in/out\):\s*[0-9.]+\s*/\s*([0-9.]+)\s*tokens/s")
# TokenSpeed 0.1.1: "Decode batch. #dp-rank: 0, ..., gen throughput (token/s): 101.12,
#   avg_accept_len: 2.31, accept_rate: 0.44" (tokenspeed/runtime/engine/batch_log.py:189-200;
#   avg_accept_len is tokens per verify step, the bonus included)
_TS_ACCEPT_LEN = re.compile(r"avg_accept_len:\s*(-?[0-9.]+(?:e-?\d+)?)")
_TS_ACCEPT_RATE = re.compile(r"\baccept_rate:\s*(-?[0-9.]+(?:e-?\d+)?)")
_VLLM_ACCEPTED = re.compile(r"Accepted:\s*(\d+) tokens")
_VLLM_DRAFTED = re.compile(r"Drafted:\s*(\d+) tokens")
# vLLM's launch arguments at startup: the non-default ones as a dict repr, "non-default args:
# {'model_tag': '/m/t', ...}" (0.10.1.1 vllm/entrypoints/utils.py:326, 0.33.0
# vllm/entrypoints/common/startup.py:96); before that the whole argparse Namespace, "args:
# Namespace(host=None, ...)" (0.8.5 vllm/entrypoints/openai/api_server.py:1044).
_VLLM_NON_DEFAULT = "non-default args: {"
_VLLM_NAMESPACE = re.compile(r"\bargs: Namespace\(")
# Lines that only one engine writes, to tell whose log it is.
_ENGINE_MARKS = (
    ("lmdeploy", _LMDEPLOY_MARK),  # its SpecDecoding figures share its line
    ("tokenspeed", "avg_accept_len:"),  # its decode line starts as SGLang's
    ("vllm", "SpecDecoding metrics"),
    ("vllm", _VLLM_NON_DEFAULT),
    ("vllm", "vLLM API server version"),
    ("sglang", "server_args=ServerArgs("),
    ("sglang", "Decode batch"),
)
_SERVER_ARGS = re.compile(r"server_args=ServerArgs\((.*)\)\s*$")
_KV_LITERAL = re.compile(
    r"""(\w+)=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|None|True|False|-?\d+(?:\.\d+)?(?:e-?\d+)?)"""
)
_PROM_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_MAX_HTTP_BYTES = 1 << 20
_MAX_VALUES = 200

FIGURES = ("accept_length", "accept_rate", "throughput")


# ----------------------------------------------------------------------------- launch arguments
_FLAG_EQ_JSON = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*=[{\[]")


def _json_end(text, start):
    """End index of the balanced JSON object/array starting at text[start], or -1."""
    depth = 0
    in_string = False
    i = start
    while i < len(text):
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def split_args(text):
    """A launch-argument string as argv, shell quoting honoured. A word that starts with `{` or
    `[` outside quotes is kept whole up to its balanced end, so a JSON value whose shell quotes
    were already removed (`--var args='... --speculative-config {"method": "eagle3"}'`) survives
    with its inner quotes and spaces."""
    argv = []
    i = 0
    n = len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        m = _FLAG_EQ_JSON.match(text, i)
        value_at = m.end() - 1 if m else i
        if text[value_at] in "{[":
            end = _json_end(text, value_at)
            if end > 0 and (end == n or text[end].isspace()):
                argv.append(text[i:end])
                i = end
                continue
        j = i
        quote = None
        while j < n and (quote or not text[j].isspace()):
            c = text[j]
            if quote:
                if c == quote:
                    quote = None
                elif c == "\\" and quote == '"':
                    j += 1
            elif c in "'\"":
                quote = c
            elif c == "\\":
                j += 1
            j += 1
        word = text[i:j]
        try:
            argv.extend(shlex.split(word))
        except ValueError:
            argv.append(word)
        i = j
    return argv


def _redact_value(value):
    """JSON values: entries whose key looks secret become "***"."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out[k] = "***" if is_secret_flag(str(k)) else _redact_value(v)
        return out
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    return value


def _flag_name(text):
    """`speculative_config` -> `speculative-config`: vLLM takes either spelling and both SGLang
    and vLLM name their fields with underscores in the logs (only the part before a `.`, as
    vLLM's FlexibleArgumentParser does)."""
    head, dot, rest = text.partition(".")
    return head.replace("_", "-") + dot + rest


def parse_args(argv):
    """argv -> {"args": {flag: value}, "positional": [...], "program": [...]}.

    argv is the process's own (/proc/PID/cmdline), one list element per argument: a JSON value
    is one element whatever its spaces or quotes. Everything before the first `--flag` is the
    program part (`python -m sglang.launch_server`, `vllm serve MODEL`); `--flag value`,
    `--flag=value`, vLLM's short flags (`-sc`) and a bare `--flag` (True) are recognised;
    underscores in a flag's name count as dashes; repeated flags keep the last value; a flag
    followed by several values keeps a list. vLLM's `--speculative-config.method eagle3` sets
    one key of that JSON flag.
    """
    args = {}
    dotted = {}
    positional = []
    program = []
    i = 0
    seen_flag = False
    while i < len(argv):
        word = argv[i]
        short, eq, rest = word.partition("=")
        if short in SHORT_FLAGS:
            word = "--" + SHORT_FLAGS[short] + eq + rest
        if word.startswith("--") and len(word) > 2:
            seen_flag = True
            name, eq, value = word[2:].partition("=")
            name = _flag_name(name)
            head, dot, key = name.partition(".")
            if dot and head in JSON_FLAGS and key:
                if not eq and i + 1 < len(argv):
                    value = argv[i + 1]
                    i += 1
                dotted.setdefault(head, []).append((key, value))
                i += 1
                continue
            if eq:
                args[name] = value
                i += 1
                continue
            values = []
            j = i + 1
            while j < len(argv) and not (argv[j].startswith("--") and len(argv[j]) > 2):
                if argv[j].startswith("-") and not _looks_numeric(argv[j]):
                    break
                values.append(argv[j])
                j += 1
            if not values:
                args[name] = True
            elif len(values) == 1:
                args[name] = values[0]
            else:
                args[name] = values
            i = j
            continue
        if seen_flag:
            positional.append(word)
        else:
            program.append(word)
        i += 1
    errors = []
    for head, pairs in dotted.items():
        args[head] = _dotted_json(pairs)
    for name in list(args):
        if is_secret_flag(name) and args[name] is not True:
            args[name] = "***"
        elif name in JSON_FLAGS and isinstance(args[name], (str, list)):
            text = args[name] if isinstance(args[name], str) else " ".join(args[name])
            try:
                args[name] = _redact_value(json.loads(text))
            except ValueError as exc:
                errors.append(
                    "--%s is not valid JSON (%s) in %r: quote the whole value, e.g. "
                    '--var args=\'... --%s {"method": "eagle3", ...}\''
                    % (name, exc, text[:120], name)
                )
    return {"args": args, "positional": positional, "program": program, "errors": errors}


def _dotted_json(pairs):
    """`--speculative-config.method eagle3 --speculative-config.num_speculative_tokens 3` ->
    {"method": "eagle3", "num_speculative_tokens": 3}: each value JSON-decoded when it parses
    (vLLM puts them together this way and passes the whole as the flag's JSON, which then
    replaces a `--speculative-config {...}` given beside them)."""
    out = {}
    for key, value in pairs:
        try:
            value = json.loads(value)
        except ValueError:
            pass
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[parts[-1]] = value
    return _redact_value(out)


def _looks_numeric(word):
    try:
        float(word)
        return True
    except ValueError:
        return False


def engine_of_argv(argv, patterns=None):
    line = " ".join(argv)
    for name, sources in (patterns or PROCESS_PATTERNS).items():
        if any(re.search(source, line) for source in sources):
            return name
    if argv and os.path.basename(argv[0]) in ("sglang", "vllm") and "serve" in argv[1:2]:
        return os.path.basename(argv[0])
    return None


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _first(args, names):
    for name in names:
        if args.get(name) is not None:
            return args[name]
    return None


def expand_prefixes(engine, args):
    """A launch's flags as an argparse parser with allow_abbrev takes them: a name that is no
    flag the engine's launch form reads, but a prefix of flags that all set one value, is that
    value's first spelling (an exact flag given beside it wins); any other name stays as given.
    Only the flags read here are known, so a prefix the engine's whole flag list makes
    ambiguous (it then refuses to start) is still resolved."""
    form = LAUNCH_FORMS.get(engine or "")
    if form is None or not form.get("abbrev"):
        return args
    known = {}
    for spellings in form["flags"].values():
        for spelling in spellings:
            known[spelling] = spellings[0]
    extra = [form.get("settings")] + list(form.get("own_flags") or []) + list(
        form.get("port_flags") or [])
    for spelling in extra:
        if spelling:
            known.setdefault(spelling, spelling)
    out = {name: value for name, value in args.items() if name in known or "." in name}
    for name, value in args.items():
        if name in out:
            continue
        targets = {known[k] for k in known if k.startswith(name) and k != name}
        if len(targets) == 1:
            full = targets.pop()
            if full in JSON_FLAGS and isinstance(value, str):
                try:  # parse_args reads a JSON flag by its full name only
                    value = _redact_value(json.loads(value))
                except ValueError:
                    pass
            out.setdefault(full, value)
        else:
            out[name] = value
    return out


def spec_summary(engine, parsed):
    """The speculative-decoding settings of one launch, in engine-neutral names, read by the
    engine's LAUNCH_FORMS entry; an engine without one (None: a launch no profile matched) has
    none of them read: another engine's flags say nothing about it."""
    args = expand_prefixes(engine, parsed["args"])
    form = LAUNCH_FORMS.get(engine or "")
    spec = {
        "algorithm": None,
        "draft_model": None,
        "target_model": None,
        "num_steps": None,
        "topk": None,
        "num_draft_tokens": None,
        "token_map": None,
        "port": None,
        "enable_metrics": bool(args.get("enable-metrics")),
        "ceiling": None,
        "heterogeneous_vocab": False,
    }
    if form is None:
        return spec
    for key, names in form["flags"].items():
        spec[key] = _first(args, names)
    target = spec["target_model"]
    program = parsed.get("program") or []
    after = form.get("target_after")
    for word in [after] if isinstance(after, str) else after or []:
        if not target and word in program and program.index(word) + 1 < len(program):
            target = program[program.index(word) + 1]
    if not target and form.get("target_positional") and parsed.get("positional"):
        target = parsed["positional"][0]
    settings = args.get(form["settings"]) if form.get("settings") else None
    if isinstance(settings, dict):
        given = (("algorithm", "method"), ("draft_model", "model"),
                 ("num_steps", "num_speculative_tokens"))  # fmt: skip
        flag_algorithm = spec["algorithm"]
        for key, field in given:
            if spec[key] is None or not form.get("settings_fill_only"):
                spec[key] = settings.get(field)
        if form.get("method_upper") and spec["algorithm"] not in (None, flag_algorithm):
            spec["algorithm"] = str(spec["algorithm"]).upper()
        # vLLM 0.25+: a draft model keeping its own tokenizer (whether the release reads it is
        # the engine profile's rule, draft_model_vocab)
        spec["heterogeneous_vocab"] = settings.get("use_heterogeneous_vocab") is True
    named = (form.get("method_models") or {}).get(str(spec["draft_model"]))
    if named and spec["algorithm"] in (None, spec["draft_model"], named):
        spec["algorithm"], spec["draft_model"] = named, None
    for key in ("num_steps", "topk", "num_draft_tokens"):
        spec[key] = _int_or_none(spec[key])
    if form.get("draft_tokens_are_steps"):
        spec["num_steps"] = spec["num_steps"] if spec["num_steps"] is not None else spec[
            "num_draft_tokens"]
        spec["num_draft_tokens"] = spec["num_steps"]
    if form.get("metrics_by_default"):
        spec["enable_metrics"] = not args.get(form.get("metrics_off_flag") or "")
    for key in ("algorithm", "draft_model", "token_map"):
        if spec[key] is not None and not isinstance(spec[key], str):
            spec[key] = str(spec[key])
    spec["target_model"] = target if isinstance(target, str) else None
    spec["port"] = _int_or_none(_first(args, form["port_flags"])) or form.get("port")
    if spec["num_steps"] is not None:
        spec["ceiling"] = spec["num_steps"] + 1
    return spec


def engine_of_flags(args, forms=None):
    """The one engine whose own flags (those no other engine takes) a launch line of flags
    alone uses, else None."""
    named = [name for name, form in (forms or LAUNCH_FORMS).items()
             if any(flag in args for flag in form.get("own_flags") or ())]  # fmt: skip
    return named[0] if len(named) == 1 else None


def server_args_from_log_line(line):
    """`server_args=ServerArgs(model_path='/m', speculative_num_steps=3, ...)` -> {flag: value}
    for its literal fields (None skipped), flag names with dashes as on the command line."""
    m = _SERVER_ARGS.search(line)
    if not m:
        return None
    out = {}
    for key, raw in _KV_LITERAL.findall(m.group(1)):
        if raw == "None":
            continue
        if raw in ("True", "False"):
            value = raw == "True"
            if not value:
                continue
        elif raw[0] in "'\"":
            value = raw[1:-1].replace("\\'", "'").replace('\\"', '"')
        else:
            value = raw
        name = key.replace("_", "-")
        out[name] = "***" if is_secret_flag(name) else value
    return out


def _repr_end(text, i):
    """Index of the `,` or closing bracket that ends the Python repr starting at text[i]."""
    depth = 0
    quote = None
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in "([{<":
            depth += 1
        elif c in ")]}>":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
        i += 1
    return len(text)


_REPR_KEY = re.compile(r"""\s*(?:'([^'\\]*)'\s*:|"([^"\\]*)"\s*:|([A-Za-z_]\w*)=)\s*""")


def repr_items(text, start):
    """The literal items of a dict repr (`'key': value`) or a call repr (`key=value`) whose body
    starts at text[start]: {key: value}. A value that is not a Python literal (an enum
    `<X.Y: 1>`, an object) is left out, not guessed at."""
    import ast

    out = {}
    i = start
    while i < len(text):
        m = _REPR_KEY.match(text, i)
        if not m:
            break
        key = m.group(1) or m.group(2) or m.group(3)
        end = _repr_end(text, m.end())
        try:
            out[key] = ast.literal_eval(text[m.end() : end].strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
        if end >= len(text) or text[end] != ",":
            break
        i = end + 1
    return out


def launch_args_from_log_line(line):
    """A log line that carries the launch arguments -> (what line it is, {flag: value}), flag
    names with dashes as on the command line, secrets as "***"; None for any other line."""
    if "server_args=ServerArgs(" in line:
        parsed = server_args_from_log_line(line)
        return ("server_args=ServerArgs", parsed) if parsed is not None else None
    at = line.find(_VLLM_NON_DEFAULT)
    if at >= 0:
        kind, items = "non-default args", repr_items(line, at + len(_VLLM_NON_DEFAULT))
    else:
        m = _VLLM_NAMESPACE.search(line)
        if not m:
            return None
        kind, items = "args: Namespace", repr_items(line, m.end())
    args = {}
    for key, value in items.items():
        if value is None or value is False:
            continue  # unset, as a command line that leaves it out
        name = _flag_name(key)
        args[name] = "***" if is_secret_flag(name) else _redact_value(value)
    return kind, args


def engine_of_log_line(line):
    for engine, mark in _ENGINE_MARKS:
        if mark in line:
            return engine
    return None


# ---------------------------------------------------------------------------------- log parsing
def _float(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def parse_decode_line(line):
    """One log line -> {"accept_length", "accept_rate", "throughput", "per_position"} (only the
    figures present), or None when it is not a decode/metrics line."""
    out = {}
    # SGLang's figures; TokenSpeed's decode line (same throughput words), whose length wins
    for name, pattern in (("accept_length", _SGL_ACCEPT_LEN), ("accept_rate", _SGL_ACCEPT_RATE),
                          ("throughput", _SGL_THROUGHPUT), ("accept_length", _TS_ACCEPT_LEN),
                          ("accept_rate", _TS_ACCEPT_RATE)):  # fmt: skip
        m = pattern.search(line)
        if m:
            out[name] = _float(m.group(1))
    if "SpecDecoding metrics" in line:
        m = _VLLM_MEAN_LEN.search(line)
        if m:
            out["accept_length"] = _float(m.group(1))
        m = _VLLM_AVG_RATE.search(line)
        if m and _float(m.group(1)) is not None:
            out["accept_rate"] = _float(m.group(1)) / 100.0
        m = _VLLM_PER_POS.search(line)
        if m:
            values = [_float(v) for v in m.group(1).replace(" ", "").split(",") if v]
            out["per_position"] = [v for v in values if v is not None]
        counts = (("accepted_tokens", _VLLM_ACCEPTED), ("drafted_tokens", _VLLM_DRAFTED))
        for key, pattern in counts:
            m = pattern.search(line)
            if m:
                out[key] = int(m.group(1))
    m = _VLLM_THROUGHPUT.search(line) or _LMDEPLOY_THROUGHPUT.search(line)
    if m:
        out["throughput"] = _float(m.group(1))
    out = {k: v for k, v in out.items() if v is not None}
    return out or None


def trend(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {
        "values": values[-_MAX_VALUES:],
        "count": len(values),
        "first": values[0],
        "last": values[-1],
        "mean": round(sum(values) / len(values), 4),
        "min": min(values),
        "max": max(values),
    }


def length_includes_bonus(parsed):
    """Whether a vLLM SpecDecoding line's mean acceptance length counts the bonus token, from
    the line itself: its per-position rates sum to accepted / drafts, and the mean is that
    (0.8.5) or 1 + that (0.10.1.1 on); None when the line does not say."""
    rates = parsed.get("per_position")
    mean = parsed.get("accept_length")
    if not rates or mean is None:
        return None
    total = sum(rates)
    return abs(mean - 1.0 - total) < abs(mean - total)


def figures_from_lines(lines):
    """Decode lines (oldest first) -> {figure: trend} for FIGURES, plus from vLLM's lines
    "per_position_last", "spec_tokens" {"accepted", "drafted", "lines"} (sums over the lines
    read) and "length_includes_bonus"."""
    series = dict((name, []) for name in FIGURES)
    per_position = None
    bonus = None
    tokens = {"accepted": 0, "drafted": 0, "lines": 0}
    for line in lines:
        parsed = parse_decode_line(line)
        if not parsed:
            continue
        for name in FIGURES:
            if name in parsed:
                series[name].append(parsed[name])
        if "per_position" in parsed:
            per_position = parsed["per_position"]
            bonus = length_includes_bonus(parsed)
        if "accepted_tokens" in parsed and "drafted_tokens" in parsed:
            tokens["accepted"] += parsed["accepted_tokens"]
            tokens["drafted"] += parsed["drafted_tokens"]
            tokens["lines"] += 1
    out = {}
    for name in FIGURES:
        t = trend(series[name])
        if t:
            out[name] = t
    if per_position:
        out["per_position_last"] = per_position
    if bonus is not None:
        out["length_includes_bonus"] = bonus
    if tokens["lines"]:
        out["spec_tokens"] = tokens
    return out


def chunks_backwards(handle, max_bytes):
    """A file's lines, newest first, one 1 MiB chunk at a time read back from the end, at most
    `max_bytes` in all: yields (lines of the chunk as bytes, newest first, bytes read so far,
    whether the start of the file was reached). A line split across chunks is whole in the
    later one; the empty piece after a final newline is included."""
    for body, read, at_start in _bodies_backwards(handle, max_bytes):
        yield list(reversed(body.split(b"\n"))), read, at_start


# Every line the log's reader looks at holds one of these (the decode figures' patterns, the
# engines' marks, the launch-arguments lines): the rest of a log (access lines, a server without
# speculation) is skipped by a search per mark of each chunk, not split and matched line by line.
_MARKS = (b"accept len", b"accept rate:", b"gen throughput", b"SpecDecoding metrics",
          b"Avg generation throughput", b"Decode batch", b"vLLM API server version",
          b"Avg thr (in/out):", b"avg_accept_len:",
          b"server_args=ServerArgs(", b"non-default args: {", b"args: Namespace(")  # fmt: skip
_LOG_MARKS = re.compile(b"|".join(re.escape(mark) for mark in _MARKS))


def marked_lines(text):
    """The lines of `text` (bytes) that hold a mark of _MARKS, in their order."""
    if not any(mark in text for mark in _MARKS):
        return []  # a search per mark: faster than the alternation's
    out = []
    end = -1
    for m in _LOG_MARKS.finditer(text):
        if m.start() < end:
            continue  # a second mark on a line already taken
        start = text.rfind(b"\n", 0, m.start()) + 1
        end = text.find(b"\n", m.end())
        end = len(text) if end < 0 else end
        out.append(text[start:end])
    return out


def _bodies_backwards(handle, max_bytes):
    """A file's whole lines one 1 MiB chunk at a time back from the end, at most `max_bytes`
    in all, as bytes (oldest first within a chunk), with the bytes read so far and whether the
    start of the file was reached. A line split across chunks is whole in the later one."""
    handle.seek(0, os.SEEK_END)
    pos = handle.tell()
    carry = b""
    read = 0
    while pos > 0 and read < max_bytes:
        step = min(1 << 20, pos, max_bytes - read)
        pos -= step
        handle.seek(pos)
        chunk = handle.read(step) + carry
        read += step
        if pos > 0:
            cut = chunk.find(b"\n")
            if cut < 0:
                carry = chunk
                continue
            carry, chunk = chunk[:cut], chunk[cut + 1 :]
        yield chunk, read, pos == 0


def _is_args_line(text):
    return (
        "server_args=ServerArgs(" in text
        or _VLLM_NON_DEFAULT in text
        or _VLLM_NAMESPACE.search(text) is not None
    )


def tail_decode_lines(path, wanted, max_bytes):
    """The last `wanted` decode lines of a file, read backwards in chunks up to `max_bytes`;
    also the last launch-arguments line seen in that span (SGLang's `server_args=ServerArgs(...)`,
    vLLM's `non-default args: {...}`) and whose log it is (the newest line only one engine
    writes): (lines, args line, bytes read, engine)."""
    found = []
    server_args = None
    engine = None
    read = 0
    with open(path, "rb") as handle:
        for body, read_so_far, _ in _bodies_backwards(handle, max_bytes):
            read = read_so_far
            for raw in reversed(marked_lines(body)):  # newest first
                text = raw.decode("utf-8", "replace")
                if engine is None:
                    engine = engine_of_log_line(text)
                if server_args is None and _is_args_line(text):
                    server_args = text
                if len(found) < wanted and parse_decode_line(text):
                    found.append(text)
            if len(found) >= wanted:
                break
        if server_args is None and read < max_bytes:
            # the launch arguments are printed at startup: look at the head of the file too
            handle.seek(0)
            head = handle.read(min(max_bytes - read, 4 << 20))
            for text in (raw.decode("utf-8", "replace") for raw in marked_lines(head)):
                if _is_args_line(text):
                    server_args = text
                    engine = engine or engine_of_log_line(text)
                    break
    found.reverse()
    return found, server_args, read, engine


def read_log(path, how_found, tail_lines, max_bytes):
    """The log's entry (figures, whose log it is) and the launch arguments its startup line
    gives (None: no such line read)."""
    entry = {
        "path": path,
        "how_found": how_found,
        "engine": None,
        "decode_lines": 0,
        "figures": {},
        "server_args_line": False,
        "args_line": None,
        "error": None,
    }
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO's open would wait for a writer
            raise ValueError("not a regular file")
        lines, args_line, read, engine = tail_decode_lines(path, tail_lines, max_bytes)
    except (OSError, ValueError) as exc:
        entry["error"] = "%s: %s" % (path, getattr(exc, "strerror", None) or exc)
        return entry, None
    entry["engine"] = engine
    entry["decode_lines"] = len(lines)
    entry["bytes_read"] = read
    entry["figures"] = figures_from_lines(lines)
    entry["last_line"] = lines[-1][-400:] if lines else None
    found = launch_args_from_log_line(args_line) if args_line else None
    entry["args_line"] = found[0] if found else None
    entry["server_args_line"] = found is not None
    return entry, (found[1] if found else None)


# ----------------------------------------------------------------------------------- processes
def _ppid(pid):
    raw = _read_bytes("/proc/%d/stat" % pid, 4096)
    if not raw:
        return None
    try:
        return int(raw.rsplit(b")", 1)[1].split()[1])
    except (IndexError, ValueError):
        return None


def _log_links(pid):
    """Regular files that the process's stdout/stderr point to: [(path, "fd 1"), ...]."""
    out = []
    for fd in (1, 2):
        target = _readlink("/proc/%d/fd/%d" % (pid, fd))
        if not target or not target.startswith("/") or target.endswith(" (deleted)"):
            continue
        if target.startswith("/dev/") or target.startswith("/proc/"):
            continue
        if os.path.isfile(target) and target not in [p for p, _ in out]:
            out.append((target, "fd %d" % fd))
    return out


def _uid(pid):
    try:
        return os.stat("/proc/%d" % pid).st_uid
    except OSError:
        return None


def find_processes(patterns=None, wrappers=SERVER_WRAPPERS):
    """Server processes: the Python process that runs the engine. A wrapper that started it
    (runuser, sudo, bash -c, timeout...) repeats its command line in /proc: it is named on the
    server it started (`wrapped_by`), never reported as a server itself; a forked worker
    repeats its parent's and is listed as a child."""
    found = {}
    for pid, argv in process_argvs():
        if engine_of_argv(argv, patterns) is None:
            continue  # the words are nowhere in the line: no readlink for most processes
        exe = _readlink("/proc/%d/exe" % pid)
        role, engine = process_role(argv, exe, patterns or PROCESS_PATTERNS, wrappers)
        if role is None:
            continue  # e.g. `grep sglang.launch_server`, remotedbg's own `--var args=...`
        found[pid] = {"pid": pid, "engine": engine, "argv": argv, "exe": exe,
                      "wrapper": role == WRAPPER}  # fmt: skip
    servers = []
    for pid in sorted(found):
        proc = found[pid]
        if proc["wrapper"]:
            continue
        parent = _ppid(pid)
        seen = set()
        top = None
        wrappers_above = []
        while parent and parent in found and parent not in seen:
            seen.add(parent)
            if found[parent]["wrapper"]:
                wrappers_above.append(parent)
            else:
                top = parent
            parent = _ppid(parent)
        if top is not None:
            found[top].setdefault("children", []).append(pid)
            continue
        if wrappers_above:
            outer = found[wrappers_above[-1]]
            proc["wrapped_by"] = {"pid": outer["pid"], "cmdline": redact_cmdline(outer["argv"])}
        servers.append(proc)
    return servers


def _owner_note(pid):
    uid = _uid(pid)
    if uid is None or uid == os.getuid():
        return ""
    try:
        import pwd

        return " (user %s, uid %d)" % (pwd.getpwuid(uid).pw_name, uid)
    except (ImportError, KeyError):
        return " (uid %d)" % uid


# -------------------------------------------------------------------------------------- HTTP
def _http_get(url, timeout):
    import urllib.request

    if not (url.startswith("http://127.0.0.1:") or url.startswith("http://[::1]:")):
        raise ValueError("only loopback URLs are fetched: %s" % url)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout) as response:
        return response.read(_MAX_HTTP_BYTES).decode("utf-8", "replace")


_PROM_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prometheus_samples(text):
    """[(name, {label: value}, float)] of a Prometheus text page; comments and junk skipped."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _PROM_LINE.match(line)
        if not m:
            continue
        value = _float(m.group(3))
        if value is None:
            continue
        labels = dict(_PROM_LABEL.findall(m.group(2) or ""))
        out.append((m.group(1), labels, value))
    return out


# The spec-decode counters, by the name after the engine's prefix: vLLM's (vllm:), LMDeploy's
# (lmdeploy:, 0.18.0 lmdeploy/metrics/loggers.py:215-228) and TokenSpeed's (tokenspeed:, 0.1.1
# tokenspeed/runtime/metrics/collector.py:227-246), each counting accepted drafts without the
# bonus token, so the mean accept length is 1 + accepted / drafts.
_SPEC_COUNTERS = {"spec_decode_num_drafts": "drafts",
                  "spec_decode_num_draft_tokens": "drafted",
                  "spec_decode_num_accepted_tokens": "accepted"}  # fmt: skip


def spec_counter(name):
    """'drafts' | 'drafted' | 'accepted' for an engine's spec-decode counter, else None."""
    base = name[:-6] if name.endswith("_total") else name
    return _SPEC_COUNTERS.get(base.split(":", 1)[-1]) if ":" in base else None


def parse_prometheus(text):
    """Speculative-decoding figures from a /metrics page (SGLang gauges, the spec_decode
    counters of vLLM, LMDeploy and TokenSpeed)."""
    sums = {}
    counters = {}
    for name, _, value in parse_prometheus_samples(text):
        sums.setdefault(name, []).append(value)
        kind = spec_counter(name)
        if kind:
            counters.setdefault(kind, []).append(value)
    out = {}
    for key, name in (
        ("spec_accept_length", "sglang:spec_accept_length"),
        ("spec_accept_rate", "sglang:spec_accept_rate"),
    ):
        if name in sums:
            vals = sums[name]
            out[key] = vals[0] if len(vals) == 1 else round(sum(vals) / len(vals), 4)
    drafts = sum(counters.get("drafts", [])) or None
    accepted = counters.get("accepted")
    drafted = counters.get("drafted")
    if drafts and accepted is not None:
        out["spec_accept_length"] = round(1.0 + sum(accepted) / drafts, 4)
    if drafted and accepted is not None and sum(drafted):
        out["spec_accept_rate"] = round(sum(accepted) / sum(drafted), 4)
    return out


def _find_key(value, key, depth=0):
    if depth > 6:
        return None
    if isinstance(value, dict):
        if key in value:
            return value[key]
        for v in value.values():
            hit = _find_key(v, key, depth + 1)
            if hit is not None:
                return hit
    elif isinstance(value, list):
        for v in value:
            hit = _find_key(v, key, depth + 1)
            if hit is not None:
                return hit
    return None


def fetch_metrics(port, timeout):
    url = "http://127.0.0.1:%d/metrics" % port
    entry = {"url": url, "spec_accept_length": None, "spec_accept_rate": None, "error": None}
    try:
        entry.update(parse_prometheus(_http_get(url, timeout)))
    except Exception as exc:  # refused, timeout, HTTP error: noted, never fatal
        entry["error"] = "%s: %s" % (type(exc).__name__, exc)
    return entry


def fetch_server_info(port, timeout):
    entry = {"url": None, "avg_spec_accept_length": None, "error": None}
    errors = []
    for path in ("/server_info", "/get_server_info"):
        url = "http://127.0.0.1:%d%s" % (port, path)
        entry["url"] = url
        try:
            doc = json.loads(_http_get(url, timeout))
        except Exception as exc:
            errors.append("%s: %s: %s" % (path, type(exc).__name__, exc))
            if "refused" in str(exc) or "timed out" in str(exc):
                break
            continue
        entry["avg_spec_accept_length"] = _float(_find_key(doc, "avg_spec_accept_length"))
        entry["error"] = None
        return entry
    entry["error"] = "; ".join(errors)
    return entry


# ------------------------------------------------------------------------------------- entry
def _server(source, engine, argv, parsed, notes=None):
    parsed = dict(parsed, args=expand_prefixes(engine, parsed["args"]))
    return {
        "source": source,
        "pid": None,
        "engine": engine,
        "cmdline": redact_cmdline(argv) if argv else None,
        "exe": None,
        "cwd": None,
        "children": [],
        "args": parsed["args"],
        "positional": parsed["positional"],
        "spec": spec_summary(engine, parsed),
        "log": None,
        "metrics": None,
        "server_info": None,
        "notes": list(notes or []) + list(parsed.get("errors") or []),
    }


PATH_SETTINGS = ("target_model", "draft_model", "token_map")


def _place_in_container(server, container):
    """A containerised server: which container, and its launch paths as the host sees them
    (the container's own path kept in `paths_in_container`)."""
    server["container"] = container
    server["paths_in_container"] = {}
    for key in PATH_SETTINGS:
        value = server["spec"].get(key)
        if not isinstance(value, str) or not value.startswith("/"):
            continue
        on_host = host_path(container, value)
        server["paths_in_container"][key] = value
        if on_host:
            server["spec"][key] = on_host
        else:
            server["notes"].append(
                "%s %s is inside container %s and not readable from the host: %s"
                % (
                    key,
                    value,
                    container.get("name") or container.get("id"),
                    container.get("why_unreadable"),
                )  # fmt: skip
            )


def _fill_from_log(server, log_args):
    """Settings the command line leaves to the engine's defaults, from the log's launch-args
    line (SGLang's ServerArgs, vLLM's non-default args)."""
    if not log_args:
        return
    line = (server.get("log") or {}).get("args_line") or "launch-args"
    from_log = spec_summary(server["engine"], {"args": log_args, "positional": [], "program": []})
    filled = []
    for key, value in from_log.items():
        if key in ("port", "enable_metrics"):
            continue
        if server["spec"].get(key) is None and value is not None:
            server["spec"][key] = value
            filled.append(key)
    if filled:
        server["notes"].append("from the log's %s line: %s" % (line, ", ".join(sorted(filled))))


def _http_asks(server, want_metrics):
    """Which of the server's HTTP figures to ask for ("metrics", "server_info"); a note says why
    one is not asked."""
    port = server["spec"].get("port")
    if not port:
        server["notes"].append("no port known: metrics not fetched")
        return []
    asks = []
    if want_metrics or (want_metrics is None and server["spec"].get("enable_metrics")):
        asks.append("metrics")
    elif want_metrics is None:
        server["notes"].append("no --enable-metrics: /metrics not fetched")
    if server["engine"] == "sglang" and want_metrics is not False:
        asks.append("server_info")
    return asks


_FETCHES = {"metrics": fetch_metrics, "server_info": fetch_server_info}
_EMPTY = {"metrics": {"spec_accept_length": None, "spec_accept_rate": None},
          "server_info": {"avg_spec_accept_length": None}}  # fmt: skip
HTTP_THREADS = 64  # requests in flight at once; more wait for a free thread


def ask_servers(jobs, timeout):
    """Every server's HTTP figures asked at once, a thread per request: a box with many servers
    that accept and never answer (another user's hung server, a port held by something else)
    costs one wait, not one per server. `jobs` is [(port, asks)]; answers come in that order,
    each {kind: entry}. What has not answered by 2 * timeout + 1 s (/server_info, then
    /get_server_info on a 404) is an entry whose error says so; its thread is left behind
    (the scan's process ends after answering)."""
    import threading

    requests = [(i, kind) for i, (_, asks) in enumerate(jobs) for kind in asks]
    done = {}
    lock = threading.Lock()

    def work():
        while True:
            with lock:
                if not requests:
                    return
                index, kind = requests.pop(0)
            entry = _FETCHES[kind](jobs[index][0], timeout)
            with lock:
                done[(index, kind)] = entry

    waited = 2 * timeout + 1.0
    deadline = time.time() + waited
    threads = [threading.Thread(target=work) for _ in range(min(HTTP_THREADS, len(requests)))]
    for thread in threads:
        thread.daemon = True
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.time()))
    with lock:
        requests[:] = []  # nothing more is started
        answers = dict(done)
    why = "no answer within %gs (the scan asks every server at once)" % waited
    return [{kind: answers.get((i, kind)) or figure_unknown(port, kind, why) for kind in asks}
            for i, (port, asks) in enumerate(jobs)]  # fmt: skip


def figure_unknown(port, kind, why):
    """The entry of a figure not read, with why (the shape of fetch_metrics' and
    fetch_server_info's)."""
    path = "/metrics" if kind == "metrics" else "/server_info"
    entry = {"url": "http://127.0.0.1:%d%s" % (int(port), path)}
    entry.update(_EMPTY[kind])
    entry["error"] = why
    return entry


def _http_figures(servers, want_metrics, timeout):
    """metrics and server_info of every server that serves them, asked all at once."""
    jobs, asked = [], []
    for server in servers:
        asks = _http_asks(server, want_metrics)
        if asks:
            jobs.append((int(server["spec"]["port"]), asks))
            asked.append(server)
    answers = ask_servers(jobs, timeout)
    for i, server in enumerate(asked):
        server.update(answers[i])


def ask_http(args):
    """Entry: {"jobs": [[port, ["metrics" | "server_info", ...]], ...], "timeout": 2.0} ->
    {"answers": [{kind: entry}, ...]}, the jobs asked all at once (ask_servers). The scan with
    "http_later" names each server's jobs (`http_asks`), so a caller asks only the servers it
    judges."""
    jobs = [(int(port), list(asks)) for port, asks in args.get("jobs") or []]
    return {"answers": ask_servers(jobs, float(args.get("timeout") or 2.0))}


def _attach_log(server, pid, container, tail_lines, max_bytes):
    """The server's decode figures from its log: the runtime's log for a container writing to
    its stdout, else the file its stdout/stderr point to; else why there is none."""
    links = _log_links(pid)
    runtime_log = runtime_log_of(container) if container and not links else None
    if runtime_log:
        links = [(runtime_log["path"], runtime_log["how_found"])]
    if links:
        path, how = links[0]
        server["log"], log_args = read_log(path, how, tail_lines, max_bytes)
        _fill_from_log(server, log_args)
        if len(links) > 1:
            server["notes"].append(
                "stdout and stderr go to different files; read %s, not %s"
                % (path, ", ".join(p for p, _ in links[1:]))
            )
    elif _uid(pid) not in (None, os.getuid()):
        server["notes"].append(
            "the log cannot be read: pid %d runs as another user%s, so its "
            "stdout/stderr are hidden; pass --var log=PATH for the decode figures"
            % (pid, _owner_note(pid))
        )
    else:
        server["notes"].append(
            "stdout/stderr are not regular files (terminal, pipe, journald): pass "
            "--var log=PATH for the decode figures"
        )


def launch_env(pid, names):
    """The named variables of the server's environment (None when it is not readable: another
    user's process). Only names the checks ask for are returned, never the rest."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as handle:
            raw = handle.read(1 << 20)
    except OSError:
        return None
    out = {}
    for item in raw.split(b"\0"):
        name, _, value = item.partition(b"=")
        text = name.decode("utf-8", "replace")
        if text in names:
            out[text] = value.decode("utf-8", "replace")
    return out


def _process_server(proc, tail_lines, max_bytes, knowledge_env=(), shared=None):
    pid = proc["pid"]
    argv = proc["argv"]
    server = _server("process", proc["engine"], argv, parse_args(argv))
    server["pid"] = pid
    server["exe"] = proc["exe"]
    server["cwd"] = _readlink("/proc/%d/cwd" % pid)
    server["children"] = sorted(proc.get("children") or [])
    server["own"] = _uid(pid) == os.getuid()  # the user's own server: taken first when asked
    if proc.get("wrapped_by"):
        server["wrapped_by"] = proc["wrapped_by"]
    server["env"] = launch_env(pid, knowledge_env)
    container = container_info(pid, shared)
    if container:
        _place_in_container(server, container)
    _attach_log(server, pid, container, tail_lines, max_bytes)
    _place_port(server, listening_ports([pid] + server["children"], shared))
    return server


def _place_port(server, listening):
    """The ports the server listens on (its socket table), and its port from them when its
    launch names none (a default changed by a config file, a rewritten process title): the
    engine's default while it listens there, else the only port it listens on."""
    server["listening"] = listening
    if not listening or "port" in server["args"]:
        return
    default = server["spec"].get("port")
    if default not in listening and len(listening) == 1:
        server["spec"]["port"] = listening[0]
        server["notes"].append("port %d: the one it listens on (its launch names none)"
                               % listening[0])  # fmt: skip


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def leading_env(argv):
    """A typed launch's environment assignments before its program (`NAME=value ... python -m
    ...`, or after `env`: the shell gives them to the server as its environment), and the argv
    after them."""
    env = {}
    i = 1 if argv[:1] == ["env"] else 0
    while i < len(argv) and _ASSIGNMENT.match(argv[i]):
        name, _, value = argv[i].partition("=")
        env[name] = value
        i += 1
    return (env, argv[i:]) if env else ({}, argv)


def _given_server(args_var, log_var, tail_lines, max_bytes, patterns=None, labels=None,
                  env_facts=()):  # fmt: skip
    """The server the user describes with --var args and/or --var log. Its engine is the one
    its program names, else its log's, else the one whose own flags a line of flags alone
    uses; else none: a launch no engine's rules were written for is never read by another's.
    Variables the launch assigns before its program that the checks ask for (`env_facts`) are
    its environment; with none typed, the environment stays unknown (an exported one is not
    seen)."""
    typed_env, argv = leading_env(split_args(args_var)) if args_var else ({}, [])
    engine = engine_of_argv(argv, patterns) if argv else None
    log_entry, log_args = (None, None)
    if log_var:
        log_entry, log_args = read_log(
            os.path.expanduser(log_var), "--var log", tail_lines, max_bytes
        )
    server_notes = []
    if argv:
        parsed = parse_args(argv)
    elif log_args:
        parsed = {"args": log_args, "positional": [], "program": []}
        kind = log_entry["args_line"]
        server_notes.append("launch arguments taken from the log's %s line" % kind)
    else:
        parsed = {"args": {}, "positional": [], "program": []}
        server_notes.append("launch arguments unknown: pass --var args='...'")
    program = parsed["program"]
    if engine is None and not program and log_entry and log_entry.get("engine"):
        engine = log_entry["engine"]
        server_notes.append("engine %s: from its log's own lines" % engine)
    if engine is None and not program:
        engine = engine_of_flags(parsed["args"])
        if engine:
            server_notes.append("engine %s: the flags are its own" % engine)
    if engine is None:
        server_notes.append(_unknown_engine_note(program, parsed["args"], labels))
    server = _server("--var args" if argv or typed_env else "--var log", engine, argv, parsed,
                     server_notes)  # fmt: skip
    server["log"] = log_entry
    known = dict((n, v) for n, v in typed_env.items() if n in env_facts)
    if known:
        server["env"] = known
    if argv:
        _fill_from_log(server, log_args)
    if not argv and log_args is None and log_var:
        server["notes"].append(
            "no launch-arguments line (server_args=ServerArgs(...), non-default args: {...}) "
            "in the log's span read"
        )
    return server


def engines_named(labels=None):
    """The engines remotedbg has rules for, as a message names them ('SGLang, vLLM or
    LMDeploy'): the labels the client sends from its engine profiles, else the launch forms'
    names (a standalone call)."""
    names = list(labels or sorted(LAUNCH_FORMS))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _unknown_engine_note(program, args, labels=None):
    seen = " ".join(program[:4]) or "flags only"
    flags = ", ".join("--" + name for name in sorted(args)[:6])
    return ("engine unknown: the launch (%s%s) matches no engine remotedbg has rules for "
            "(%s): its flags were not read" % (seen, "; " + flags if flags else "",
                                               engines_named(labels)))


def scan_servers(args):
    """Entry point, see the module docstring."""
    started = time.time()
    tail_lines = int(args.get("tail_lines") or 200)
    max_bytes = int(args.get("max_log_bytes") or 16 << 20)
    timeout = float(args.get("timeout") or 2.0)
    log_var = args.get("log") or ""
    args_var = args.get("args") or ""
    servers = []
    notes = []
    knowledge = args.get("knowledge") or {}
    wrappers = tuple(knowledge.get("server_wrappers") or SERVER_WRAPPERS)
    if args.get("processes", True):
        shared = {}  # what servers share, read once: socket tables, the conmon processes
        env_facts = knowledge.get("env_facts") or ()
        for proc in find_processes(knowledge.get("process_patterns"), wrappers):
            servers.append(_process_server(proc, tail_lines, max_bytes, env_facts, shared))
        if args.get("metrics") is not False and args.get("http_later"):
            for server in servers:  # the caller picks whom to ask (ask_http)
                server["http_asks"] = _http_asks(server, args.get("metrics"))
        elif args.get("metrics") is not False:
            _http_figures(servers, args.get("metrics"), timeout)
    if args_var or log_var:
        servers.append(_given_server(args_var, log_var, tail_lines, max_bytes,
                                     knowledge.get("process_patterns"),
                                     knowledge.get("engine_labels"),
                                     knowledge.get("env_facts") or ()))  # fmt: skip
    if not servers:
        notes.append("no %s server process running, and no --var log/args given"
                      % engines_named(knowledge.get("engine_labels")))
    return {"servers": servers, "notes": notes, "elapsed_s": round(time.time() - started, 3)}
