"""Engine helpers the loader model does not interpret but describes (knowledge, data only).

Each entry says what the engine's code does, and where it was read (release: file:line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from remotedbg.engines.text_config import text_config


@dataclass(frozen=True)
class KnownResult:
    """The known result of an engine method the loader code calls (e.g. the target's vocab)."""

    value: Any


#: Layer classes whose parameters are their own (`weight`, `bias`, scales...): leaves of the
#: parameter tree. Matched on the class name as the engine's __init__ writes it.
LEAF_CLASS_RE = re.compile(r"(Linear|Norm|Embedding|LMHead|Conv[123]?d?|Parameter|Experts)$")
#: Modules without parameters of their own: not part of the parameter tree.
PARAMLESS_CLASS_RE = re.compile(
    r"^(RadixAttention|Attention|Sampler|SiluAndMul|GeluAndMul|MulAndSilu|Dropout|Identity|"
    r"Pooler|ReLU|GELU|SiLU)$|(Processor|Sampler|RotaryEmbedding|Rope)$"
)

#: vLLM's AutoWeightsLoader (vllm/model_executor/models/utils.py, read in 0.8.5:67-262,
#: 0.10.1.1 and 0.33.0): names under `skip_prefixes` or containing one of `skip_substrs` are
#: dropped silently; a name's first component selects a child module, whose own load_weights is
#: called when it has one; a name that matches no child and no parameter raises
#: ValueError("There is no module or parameter named ...") (0.8.5 utils.py:248-250).
AUTO_WEIGHTS_LOADERS = {"AutoWeightsLoader"}
AUTO_SKIP_CITATION = "vllm/model_executor/models/utils.py AutoWeightsLoader skip_prefixes/substrs"
AUTO_RAISE_CITATION = "vllm/model_executor/models/utils.py (AutoWeightsLoader._load_module)"

#: vLLM's WeightsMapper (vllm/model_executor/models/utils.py, 0.33.0:49-140): substring, stacked,
#: prefix and suffix renames applied before loading; a rename to None drops the weight silently.
WEIGHTS_MAPPERS = {"WeightsMapper"}
MAPPER_DROP_CITATION = "vllm/model_executor/models/utils.py WeightsMapper (mapped to None)"

#: Functions that copy a checkpoint tensor into the parameter passed to them.
WEIGHT_LOADER_FUNCTIONS = {"default_weight_loader", "load_weight", "weight_loader"}

#: Checkpoint tensors an EAGLE-3 head carries that are not module parameters: the vocab map.
VOCAB_MAP_TENSORS = ("d2t", "t2d")


def is_leaf_class(name: str) -> bool:
    return bool(LEAF_CLASS_RE.search(name)) and not name.endswith(("Model", "ForCausalLM"))


def is_paramless_class(name: str) -> bool:
    return bool(PARAMLESS_CLASS_RE.search(name))


def vllm_engine_params(
    draft_config: dict, target_config: dict | None, speculative_config: dict | None
) -> dict:
    """What a vLLM draft class's `vllm_config` argument holds, as far as the loader model needs:
    `speculative_config` (the launch JSON over the engine's defaults) with its
    `draft_model_config.hf_config` (the draft's config.json), and the target's `model_config`
    answers (vocab size, layer count)."""
    target = text_config(target_config)  # get_vocab_size / get_num_layers read hf_text_config
    spec = dict(speculative_config or {})
    spec["draft_model_config"] = {"hf_config": draft_config}
    model_config = {"hf_config": target_config or {}}
    if isinstance(target.get("vocab_size"), int):
        model_config["get_vocab_size"] = KnownResult(target["vocab_size"])
    if isinstance(target.get("num_hidden_layers"), int):
        for name in ("get_num_layers", "get_total_num_hidden_layers"):
            model_config[name] = KnownResult(target["num_hidden_layers"])
    return {"vllm_config": {"speculative_config": spec, "model_config": model_config}}
