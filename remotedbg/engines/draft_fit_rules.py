"""What each engine release does with a draft whose context, RoPE, quantization or head does not
fit its target: data and small pure rules, read from the releases' code (paths relative to
site-packages; the releases of tests/releases.py).

Context length (SGLang `get_context_length`: 0.5.23 sglang/srt/utils/hf_transformers/common.py:
668-694, 0.5.6 sglang/srt/utils/hf_transformers_utils.py:336-353, 0.4.6.post5
sglang/srt/hf_transformers_utils.py:168-185): the first key present of CONTEXT_KEYS, times
rope_scaling.factor unless rope_scaling has original_max_position_embeddings or rope_type llama3;
2048 when none. A target context above the draft's:
- SGLang 0.5.x: ValueError at start (0.5.23 sglang/srt/configs/model_config.py:1313-1316) unless
  SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN or SGLANG_IS_IN_CI is set; then from 0.5.6 the
  draft's max_position_embeddings is raised and its RoPE cache grown (model_config.py:1308-1312,
  sglang/srt/utils/common.py:4999-5036); 0.5.1 only silences the error (no raise, no cache).
- SGLang 0.4.x: a warning, then positions past the draft's length read beyond its rotary cache
  (0.4.6.post5 sglang/srt/configs/model_config.py:133-137; rotary_embedding.py:156-164).
- vLLM 0.33: the draft's max_position_embeddings is raised when every rope type of the draft is
  cache-only (vllm/config/speculative.py:104-113, 1839-1846); otherwise the V2 runner lowers the
  target's max_model_len to the draft's, with a warning (vllm/config/vllm.py:3025-3051).
- vLLM 0.8.5 and 0.10.1.1: no check; the proposer bounds positions by the TARGET's
  max_model_len (0.10.1.1 vllm/v1/spec_decode/eagle.py:52, 266-280; 0.8.5 eagle.py:32,127-141)
  while the draft's rotary cache has its own max_position_embeddings (0.10.1.1
  vllm/model_executor/models/llama.py:236-237; 0.8.5 llama.py:167): positions past it overrun.

RoPE: every release builds the draft with its own rope_theta / rope_scaling (0.5.23
sglang/srt/models/llama.py:322-336; vLLM 0.33 vllm/model_executor/models/llama.py:243-247).
SGLang applies --json-model-override-args to the draft as well (0.5.23 model_config.py:962,
sglang/srt/utils/hf_transformers/config.py:405-423; 0.5.6 model_config.py:237; 0.4.6.post5 :238);
vLLM does not apply a CLI --hf-overrides dict to the draft (0.33 vllm/config/speculative.py:
1183-1213; 0.10.1.1 vllm/config/__init__.py:2131).

Quantization: SGLang's draft inherits --quantization (0.5.23 sglang/srt/arg_groups/
serving_hook.py:685-690; `--speculative-draft-model-quantization unquant` opts out from 0.5.14,
:704-709), not the target checkpoint's quantization_config; vLLM's EAGLE-3 draft never inherits
it (0.33 vllm/config/speculative.py:435-438). Scale tensors in a draft whose config declares no
quantization: SGLang from 0.4.10.post2 drops them silently (0.4.10.post2 and 0.5.1
sglang/srt/models/llama_eagle3.py:227-229; 0.5.23 :358-373), 0.4.6.post5 raises KeyError at start
for q/k/v/gate/up (sglang/srt/models/llama.py:578), vLLM raises (0.33
vllm/model_executor/models/utils.py:436-448; 0.10.1.1 llama_eagle3.py:181,186; 0.8.5
llama_eagle3.py:155,160). The followed load_weights (analysis/loader_model) decides first.

Tied head: SGLang honours the draft's tie_word_embeddings: its head becomes the target's input
embedding, cut to draft_vocab_size rows from 0.5.6 (0.5.6 llama_eagle3.py:220-224; 0.5.23
:303-304, 316-320; eagle_worker_v2.py:362-363); before 0.5.6 the full vocabulary indexes the
d2t table and fails (0.4.6.post5 llama_eagle3.py:170-171,180; 0.4.10.post2, 0.5.1 :198).
vLLM ignores the flag (0.33 vllm/model_executor/models/utils.py:1178-1198).
"""

from __future__ import annotations

import re
from typing import Any

from remotedbg.engines.text_config import text_config

CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                "max_position_embeddings")  # fmt: skip
SGLANG_DEFAULT_CONTEXT = 2048
#: vLLM 0.33: rope types whose cache alone sets the positions (the draft's limit can be raised)
VLLM_CACHE_ONLY_ROPE = ("default", "linear", "llama3", "ntk", "proportional")
#: Launch environment a check reads (names only; values are not secrets).
ENV_FACTS = ("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "SGLANG_IS_IN_CI",
             "VLLM_USE_V2_MODEL_RUNNER", "VLLM_ALLOW_LONG_MAX_MODEL_LEN")  # fmt: skip
ROPE_KEYS = ("rope_theta", "rope_scaling", "rope_parameters")

# What happens when the served context is longer than the draft's:
START_FAILS = "start-fails"  # the server refuses to start (the env var is read and unset)
START_FAILS_UNLESS_ENV = "start-fails-unless-env"  # it does unless the variable is set
RAISED = "raised"  # the engine raises the draft's limit and covers the positions
OVERRUN = "overrun"  # positions past the draft's limit overrun its rotary cache
LOWERED = "lowered"  # the engine lowers the served context to the draft's
SKIPPED = "skipped"  # the engine serves the context but drafts nothing past the draft's limit


def release(version: str | None) -> tuple[int, ...]:
    """'0.5.6.post2' -> (0, 5, 6); unknown -> ()."""
    return tuple(int(p) for p in re.findall(r"\d+", (version or "").split("+")[0])[:3])


def _truthy(value: Any) -> bool:
    # 0.5.1 get_bool_env_var: true/1 (sglang/srt/utils.py:178-183); 0.5.6+ EnvBool adds yes/y
    return str(value or "").strip().lower() in ("1", "true", "yes", "y")


def rope_types(config: dict) -> list[str]:
    scaling = config.get("rope_scaling") or config.get("rope_parameters") or {}
    if not isinstance(scaling, dict):
        return ["default"]
    kind = scaling.get("rope_type") or scaling.get("type") or "default"
    return [str(kind)]


def sglang_context_length(config: dict) -> int:
    """The context length SGLang derives from a config (get_context_length)."""
    config = text_config(config)
    scaling = config.get("rope_scaling") if isinstance(config.get("rope_scaling"), dict) else {}
    factor = 1.0
    if (
        scaling
        and "original_max_position_embeddings" not in scaling
        and scaling.get("rope_type") != "llama3"
    ):
        factor = float(scaling.get("factor") or 1.0)
    for key in CONTEXT_KEYS:
        if isinstance(config.get(key), (int, float)):
            return int(factor * config[key])
    return SGLANG_DEFAULT_CONTEXT


VLLM_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                     "model_max_length", "max_target_positions", "max_sequence_length",
                     "max_seq_length", "seq_len")  # fmt: skip


def vllm_context_length(config: dict, version: str | None) -> int | None:
    """vLLM's derived max_model_len (_get_and_verify_max_len: 0.10.1.1 config/__init__.py:
    2824-2925, 0.8.5 config.py:2977-3075, 0.33 config/model.py:2545-2640): the smallest length
    key (model_max_length wins when set), times rope_scaling.factor unless su/longrope/llama3;
    a YaRN factor applies to original_max_position_embeddings before 0.33 and not at all from
    0.33 (max_position_embeddings is already scaled)."""
    config = text_config(config)
    lengths = [config[k] for k in VLLM_CONTEXT_KEYS if isinstance(config.get(k), (int, float))]
    if not lengths:
        return None
    derived = config["model_max_length"] if config.get("model_max_length") else min(lengths)
    scaling = config.get("rope_scaling") if isinstance(config.get("rope_scaling"), dict) else None
    if scaling:
        kind = scaling.get("rope_type") or scaling.get("type") or "default"
        exempt: tuple[str, ...] = ("su", "longrope", "llama3")
        if release(version) >= (0, 33, 0):
            exempt += ("yarn", "deepseek_yarn", "deepseek_llama_scaling")
        if kind not in exempt:
            factor = float(scaling.get("factor") or 1.0)
            if kind == "yarn" and scaling.get("original_max_position_embeddings"):
                derived = scaling["original_max_position_embeddings"]
            derived = derived * factor
    return int(derived)


def draft_context_length(engine: str | None, config: dict) -> int | None:
    if engine == "vllm":
        value = config.get("max_position_embeddings")
        return int(value) if isinstance(value, (int, float)) else None
    return sglang_context_length(config)


def longer_context_outcome(engine: str | None, version: str | None, draft_config: dict,
                           env: dict | None, running: bool) -> str | None:  # fmt: skip
    """What the release does with a served context longer than the draft's; None when the
    release was not read for this."""
    v = release(version)
    if engine == "sglang" and v:
        if v < (0, 5, 0):
            return OVERRUN
        if not running and env is None:
            return START_FAILS_UNLESS_ENV  # launch arguments only: the variable is unknown
        if not running and not any(_truthy(env.get(n)) for n in ENV_FACTS[:2]):
            return START_FAILS
        # running (it passed the start check) or the variable set: 0.5.6+ raises the limit
        return RAISED if v >= (0, 5, 6) else OVERRUN
    if engine == "vllm" and v:
        if v >= (0, 33, 0):
            cache_only = all(t in VLLM_CACHE_ONLY_ROPE for t in rope_types(draft_config))
            if cache_only:
                return RAISED
            # lowered by the V2 runner only (config/vllm.py:3034); V1 (VLLM_USE_V2_MODEL_RUNNER=0)
            # keeps the context and drafts nothing past the draft's limit
            return SKIPPED if str((env or {}).get("VLLM_USE_V2_MODEL_RUNNER")) == "0" else LOWERED
        if (0, 8, 5) <= v < (0, 33, 0):
            return OVERRUN
    return None


def apply_overrides(engine: str | None, version: str | None, config: dict, overrides: dict) -> dict:
    """A config as the engine sees it after --json-model-override-args / --hf-overrides: a dict
    value replaces the config's wholesale (`config.update`, SGLang up to 0.5.14: 0.4.6.post5
    hf_transformers_utils.py:142-143, 0.5.14 utils/hf_transformers/config.py:253-254; vLLM),
    except that SGLang 0.5.23 merges rope_scaling / rope_parameters into the existing dict
    (sglang/srt/utils/hf_transformers/config.py:405-423)."""
    merged = dict(config)
    deep = engine == "sglang" and release(version) >= (0, 5, 23)
    for key, value in overrides.items():
        if (
            deep
            and key in ("rope_scaling", "rope_parameters")
            and isinstance(value, dict)
            and (isinstance(merged.get(key), dict))
        ):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def overrides_reach_draft(engine: str | None) -> bool:
    """SGLang applies --json-model-override-args to the draft too; vLLM keeps --hf-overrides for
    the target."""
    return engine == "sglang"


def draft_inherits_quantization(
    engine: str | None, version: str | None, args: dict, resolved: bool = False
) -> str | None:
    """The quantization method the engine applies to a bf16 draft, from the launch flags.
    `resolved`: the flags are the log's ServerArgs, where 0.5.14+ already settled the draft's
    (unquant -> None, left out of the line; 0.5.14 server_args.py:2800-2803)."""
    if engine != "sglang":
        return None
    if release(version) >= (0, 5, 14):
        if "speculative-draft-model-quantization" in args:
            own = args["speculative-draft-model-quantization"]
            return None if own in (None, "unquant") else str(own)
        if resolved:
            return None
    method = args.get("quantization")
    return str(method) if method else None


def draft_quantization_ignored(engine: str | None, version: str | None) -> bool:
    """vLLM before 0.33 builds the EAGLE-3 layer without quant_config (0.10.1.1
    model_executor/models/llama_eagle3.py:123-127; 0.8.5 :97): every scale tensor raises
    KeyError (0.10.1.1 :181, 186; 0.8.5 :155, 160), whatever the draft's config declares."""
    return engine == "vllm" and (0, 0, 0) < release(version) < (0, 33, 0)


def unexpected_scales_outcome(engine: str | None, version: str | None) -> str:
    """Scale tensors in a draft whose config declares no quantization."""
    if engine == "sglang" and release(version) >= (0, 4, 10):
        return "dropped"  # silently (`if param_name in params_dict`): codes used as values
    return "start-fails"


def tied_head_outcome(engine: str | None, version: str | None) -> str | None:
    if engine != "sglang":
        return None
    # logits cut to draft_vocab_size from 0.5.6 (llama_eagle3.py:220-224); before, the full
    # vocabulary indexes the draft_vocab_size-long d2t (0.4.10.post2 / 0.5.1 llama_eagle3.py:198)
    return "wrong-head" if release(version) >= (0, 5, 6) else "runtime-error"


#: Targets SGLang drafts 3 steps, topk 1, 4 tokens for, before 0.5.14 (others 5/4/8), by the
#: first release whose auto_choose_speculative_params lists them.
SGLANG_SHALLOW_TARGETS = (
    ((0, 4, 10), ("DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM")),  # 0.4.10.post2 :2202-2225
    ((0, 5, 1), ("GptOssForCausalLM",)),  # 0.5.1 server_args.py:2468-2500
    ((0, 5, 6), ("DeepseekV32ForCausalLM", "BailingMoeForCausalLM",
                 "BailingMoeV2ForCausalLM")),  # 0.5.6 server_args.py:4525-4553
)  # 0.4.6.post5 server_args.py:1588-1604: 5/4/8 for every target  # fmt: skip


def sglang_auto_settings(
    version: str | None, target_arch: str | None, algorithm: str | None = None
) -> tuple[int, int, int]:
    """(steps, topk, draft tokens) SGLang picks when --speculative-num-steps is not given,
    by the target's architecture. From 0.5.14 only Llama and Grok get 5/4/8, every other target
    3/1/4 (0.5.14 sglang/srt/arg_groups/speculative_hook.py:512-542; 0.5.23 :1430-1461);
    before, 5/4/8 unless SGLANG_SHALLOW_TARGETS."""
    v = release(version)
    if str(algorithm or "").upper() == "STANDALONE" and v >= (0, 5, 6):
        return (3, 1, 4)  # 0.5.6 server_args.py:4533-4535; 0.5.14 speculative_hook.py:518-519
    deep = ("LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM")
    if v >= (0, 5, 14):
        return (5, 4, 8) if target_arch in deep else (3, 1, 4)
    shallow = [a for since, archs in SGLANG_SHALLOW_TARGETS if v >= since for a in archs]
    return (3, 1, 4) if target_arch in shallow else (5, 4, 8)
