"""What the engines' releases do with a draft whose context, RoPE, quantization or head does not
fit its target: the shared data and helpers. Each engine's rules, with the lines of the releases
they were read from, are methods of its profile (engines/sglang.py, engines/vllm.py).

RoPE: every release builds the draft with its own rope_theta / rope_scaling (0.5.23
sglang/srt/models/llama.py:322-336; vLLM 0.33 vllm/model_executor/models/llama.py:243-247).
The followed load_weights (analysis/loader_model) decides what a loader does with scale tensors
before a profile's rule does.
"""

from __future__ import annotations

import re

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


def rope_types(config: dict) -> list[str]:
    scaling = config.get("rope_scaling") or config.get("rope_parameters") or {}
    if not isinstance(scaling, dict):
        return ["default"]
    kind = scaling.get("rope_type") or scaling.get("type") or "default"
    return [str(kind)]
