"""The language model's part of a target config, as the engines read it (pure).

A multimodal wrapper's config.json (Kimi-K2.5, Qwen-VL, Llama-4, Mistral-3, ...) nests the
language model's fields (hidden_size, num_hidden_layers, vocab_size, RoPE, context length) in a
sub-config; its top level has none of them. Both engines read those fields from the sub-config:
SGLang `get_hf_text_config` (0.5.23 sglang/srt/utils/hf_transformers/common.py:547-620:
thinker_config (its text_config when it has one), then llm_config, language_config,
text_config), vLLM `get_hf_text_config` (0.33.0 vllm/transformers_utils/config.py:1258-1272,
transformers' `get_text_config`), and the wrappers' model classes build their language model
from `config.text_config` (0.5.23 sglang/srt/models/kimi_k25.py:693-694; vLLM 0.33.0
vllm/model_executor/models/kimi_k25.py:376-378).
"""

from __future__ import annotations

from typing import Any

# SGLang's order (common.py:582-606); transformers' get_text_config also knows `decoder`, which
# no target of a speculative deployment uses.
SUB_CONFIG_KEYS = ("llm_config", "language_config", "text_config")
# Where the language model's fields are, first that is a dict: the thinker's own text_config,
# the thinker, then the sub-configs. The box's vocab check is given the same list.
TEXT_CONFIG_PATHS = ("thinker_config.text_config", "thinker_config", *SUB_CONFIG_KEYS)


def text_config_key(config: dict[str, Any] | None) -> str:
    """Where the language model's fields are: "" (flat), "text_config", "thinker_config", ...

    A sub-config counts only when it is a dict (a config.json value)."""
    config = config if isinstance(config, dict) else {}
    for path in TEXT_CONFIG_PATHS:
        value: Any = config
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, dict):
            return path
    return ""


def text_config(config: dict[str, Any] | None) -> dict[str, Any]:
    """The sub-config that holds the language model's fields; the config itself when flat.

    Keys of the wrapper that the sub-config lacks are not merged in: the engines read the
    language model's fields from the sub-config only."""
    out = config if isinstance(config, dict) else {}
    for key in filter(None, text_config_key(out).split(".")):
        out = out[key]
    return out


def text_field(config: dict[str, Any] | None, key: str) -> Any:
    """One language-model field of a target config (None when absent)."""
    return text_config(config).get(key)
