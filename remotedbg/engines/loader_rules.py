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
#: Functions that build and return a leaf layer: LMDeploy builds its linear layers through
#: factories (0.18.0 lmdeploy/pytorch/nn/linear/__init__.py:29-464 build_linear,
#: build_colwise_linear, build_rowwise_linear, build_merged_colwise_linear, build_qkv_proj,
#: build_o_proj, build_gateup_linear, build_down_linear), each a module with its own weight.
LAYER_FACTORY_RE = re.compile(r"^build_\w*(linear|_proj)$")
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
#: ... unless `ignore_unexpected_prefixes`/`_suffixes` match it: then it is skipped with a debug
#: line (0.8.5 utils.py:124-127, 241-245; 0.32.0 :294-297, 430-437)
AUTO_IGNORE_CITATION = ("vllm/model_executor/models/utils.py AutoWeightsLoader "
                        "ignore_unexpected_prefixes/suffixes")

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


def builds_without_bias(name: str, keywords: dict) -> bool:
    """A linear layer built with `bias=False` (decided where it is built: a constant, or the
    config's value) has no `bias` parameter, so a checkpoint's `<layer>.bias` fills nothing:
    torch.nn.Linear and vLLM's linear layers (ReplicatedLinear, Column/RowParallelLinear,
    QKVParallelLinear...) register `bias` only when asked (vLLM 0.32.0 model_executor/layers/
    linear.py: `if bias: self.bias = Parameter(...)` else `self.register_parameter("bias",
    None)`, linear.py:386-399, 533-546, 1719-1732). Without the keyword, or with a value not
    known here, the layer may have one."""
    return name.endswith("Linear") and keywords.get("bias") is False


def is_layer_factory(name: str) -> bool:
    return bool(LAYER_FACTORY_RE.search(name))


def is_paramless_class(name: str) -> bool:
    return bool(PARAMLESS_CLASS_RE.search(name))


#: Helpers that return the draft's QuantizationConfig, None when its ModelConfig has no
#: `quantization` (vLLM 0.11.2 and 0.20.0 model_executor/models/utils.py:721-742 / :717-738
#: `get_draft_quant_config` -> VllmConfig.get_quantization_config -> _get_quantization_config,
#: which returns None unless `model_config.quantization is not None`, 0.11.2 config/vllm.py:
#: 242-284, 0.20.0 :521-565).
DRAFT_QUANT_CONFIG_FUNCTIONS = {"get_draft_quant_config"}


#: vLLM's `maybe_remap_kv_scale_name(name, params_dict)` (model_loader/weight_utils.py; read in
#: 0.8.5:691-749, 0.10.1.1:732-804, 0.11.2:1002-1084, 0.20.0:1504-1607, 0.33.0:1722-1831):
#: a name that does not end with a kv-cache scale or zero-point suffix is returned untouched.
KV_SCALE_REMAPPERS = {"maybe_remap_kv_scale_name"}
KV_SCALE_SUFFIXES = (
    ".kv_scale", ".k_scale", ".v_scale", ".q_scale", ".k_zero_point", ".v_zero_point",
    ".q_zero_point", ".q.scale", ".k_cache.scale", ".v_cache.scale",
)  # fmt: skip


#: The roles the loader model gives the helpers above.
AUTO_WEIGHTS_LOADER = "auto-weights-loader"
WEIGHTS_MAPPER = "weights-mapper"
WEIGHT_LOADER = "weight-loader"
KV_SCALE_REMAPPER = "kv-scale-remapper"
DRAFT_QUANT_CONFIG = "draft-quant-config"
#: vLLM's pipeline-parallel group: a loader that skips the embedding "if PP disabled then draft
#: will share embed with target" (0.10.1.1 model_executor/models/llama_eagle.py:118-121,
#: `get_pp_group().world_size == 1`) asks it. Its world_size is the launch's
#: --pipeline-parallel-size, 1 unless given (0.10.1.1 config/parallel.py:40).
PIPELINE_GROUP = "pipeline-group"
PIPELINE_GROUP_FUNCTIONS = {"get_pp_group"}
#: vLLM's expert mapping for a hand-written MoE load_weights: one (param_name, weight_name,
#: expert_id, shard_id) per expert and projection, `experts.{e}.{gate|down|up}_proj.` of the
#: checkpoint onto the fused `experts.w13_` (gate, up: shards w1, w3) or `experts.w2_` (down: w2)
#: (0.10.2 model_executor/layers/fused_moe/layer.py:1838-1867, FusedMoE.make_expert_params_mapping;
#: from 0.20.0 fused_moe_make_expert_params_mapping, whose `routed_experts_prefix` default puts
#: the parameters under `experts.<prefix>.` from 0.27.0: layer.py:428-436,
#: routed_experts.py:1079-1080). Redundant (EPLB) experts are not modelled.
EXPERT_MAPPING = "expert-mapping"
EXPERT_MAPPING_FUNCTIONS = {"make_expert_params_mapping", "fused_moe_make_expert_params_mapping"}
EXPERT_SHARDS = (("w1", "ckpt_gate_proj_name"), ("w2", "ckpt_down_proj_name"),
                 ("w3", "ckpt_up_proj_name"))  # fmt: skip
PIPELINE_SIZE_FLAGS = ("pipeline-parallel-size", "pipeline_parallel_size", "pp")
DEFAULT_PIPELINE_SIZE = 1

#: The helpers by the qualified name of their definition, as the releases' files import them
#: (directly or through a re-export): the loader model resolves a called name through the file's
#: imports and looks it up here. vLLM 0.33.0 model_executor/models/utils.py:49 WeightsMapper,
#: :216 AutoWeightsLoader, :985 get_draft_quant_config; SGLang's copies of the first two
#: (0.5.23 srt/models/utils.py:57, :128) are modelled as vLLM's; default_weight_loader and
#: maybe_remap_kv_scale_name in each engine's weight_utils.py (SGLang's multimodal_gen has its
#: own copy).
HELPERS: dict[str, str] = {
    "vllm.model_executor.models.utils.AutoWeightsLoader": AUTO_WEIGHTS_LOADER,
    "vllm.model_executor.models.utils.WeightsMapper": WEIGHTS_MAPPER,
    "vllm.model_executor.models.utils.get_draft_quant_config": DRAFT_QUANT_CONFIG,
    "vllm.model_executor.model_loader.weight_utils.default_weight_loader": WEIGHT_LOADER,
    "vllm.model_executor.model_loader.weight_utils.maybe_remap_kv_scale_name": KV_SCALE_REMAPPER,
    "vllm.distributed.get_pp_group": PIPELINE_GROUP,
    "vllm.distributed.parallel_state.get_pp_group": PIPELINE_GROUP,
    "sglang.srt.models.utils.AutoWeightsLoader": AUTO_WEIGHTS_LOADER,
    "sglang.srt.models.utils.WeightsMapper": WEIGHTS_MAPPER,
    "sglang.srt.model_loader.weight_utils.default_weight_loader": WEIGHT_LOADER,
    "sglang.srt.model_loader.weight_utils.maybe_remap_kv_scale_name": KV_SCALE_REMAPPER,
    "sglang.multimodal_gen.runtime.loader.weight_utils.default_weight_loader": WEIGHT_LOADER,
    "sglang.multimodal_gen.runtime.loader.weight_utils.maybe_remap_kv_scale_name": (
        KV_SCALE_REMAPPER
    ),
}
#: The packages HELPERS covers: a name resolved into another (a fork, a stand-in engine) is
#: matched by its last part.
HELPER_PACKAGES = frozenset(name.split(".", 1)[0] for name in HELPERS)


def is_weight_loader_name(name: str) -> bool:
    """Both engines name the functions that copy a checkpoint tensor into the parameter they are
    given `*weight_loader` (dozens across the releases, some built per layer): a naming
    convention, matched as one."""
    return name.endswith("weight_loader") or name in WEIGHT_LOADER_FUNCTIONS


def helper_by_short_name(name: str) -> str | None:
    """A helper's role by its last name only, for a call whose qualified name is not known or
    lies outside HELPER_PACKAGES."""
    if name in WEIGHTS_MAPPERS:
        return WEIGHTS_MAPPER
    if name in KV_SCALE_REMAPPERS:
        return KV_SCALE_REMAPPER
    if name in DRAFT_QUANT_CONFIG_FUNCTIONS:
        return DRAFT_QUANT_CONFIG
    if name in AUTO_WEIGHTS_LOADERS:
        return AUTO_WEIGHTS_LOADER
    if is_weight_loader_name(name):
        return WEIGHT_LOADER
    if name in PIPELINE_GROUP_FUNCTIONS:
        return PIPELINE_GROUP
    if name in EXPERT_MAPPING_FUNCTIONS:
        return EXPERT_MAPPING
    return None


def _hf_quant_method(config: dict) -> str | None:
    quant = config.get("quantization_config")
    if not isinstance(quant, dict):
        quant = config.get("compression_config")  # compressed-tensors' key
    if not isinstance(quant, dict):
        return None
    producer = quant.get("producer")
    if isinstance(producer, dict) and producer.get("name") == "modelopt":
        return "modelopt"  # FP8 or NVFP4: a method either way
    method = str(quant.get("quant_method", "")).lower().replace("_", "-")
    return method or None


def vllm_quantization(config: dict | None, given: str | None = None) -> str | None:
    """`ModelConfig.quantization` as vLLM derives it: the `quantization` argument, else the
    checkpoint's `quantization_config` (or `compression_config`), else text_config's (vLLM 0.11.2
    config/model.py:948-1045 `_parse_quant_hf_config`, `_verify_quantization`; 0.20.0
    config/model.py:932-1001 through model_arch_config.quantization_config). Only None-or-not
    matters to the loader model: a mismatch raises at start, which the quantization checks
    report."""
    if given:
        return given
    config = config if isinstance(config, dict) else {}
    method = _hf_quant_method(config)
    inner = config.get("text_config")
    if method is None and isinstance(inner, dict):
        method = _hf_quant_method(inner)
    return method


def vllm_engine_params(
    draft_config: dict,
    target_config: dict | None,
    speculative_config: dict | None,
    target_quantization: str | None = None,
    pipeline_size: int = DEFAULT_PIPELINE_SIZE,
    draft_is_model: bool = False,
) -> dict:
    """What a vLLM draft class's `vllm_config` argument holds, as far as the loader model needs:
    `speculative_config` (the launch JSON over the engine's defaults) with its
    `draft_model_config` (the draft's config.json and the quantization it implies), and the
    target's `model_config` answers (vocab size, layer count, quantization); `draft_is_model`:
    V0's draft worker, whose `model_config` is the draft's (0.8.5 spec_decode/
    spec_decode_worker.py:82)."""
    if draft_is_model:
        target_config, target_quantization = draft_config, None
    target = text_config(target_config)  # get_vocab_size / get_num_layers read hf_text_config
    spec = dict(speculative_config or {})
    # the draft's ModelConfig gets the speculative config's `quantization` (0.11.2
    # config/speculative.py:337), for EAGLE never the target's (that is for MTP only, :257-260)
    given = spec.get("quantization") if isinstance(spec.get("quantization"), str) else None
    spec["draft_model_config"] = {
        "hf_config": draft_config,
        "quantization": vllm_quantization(draft_config, given),
    }
    model_config = {
        "hf_config": target_config or {},
        "quantization": vllm_quantization(target_config, target_quantization),
    }
    if isinstance(target.get("vocab_size"), int):
        model_config["get_vocab_size"] = KnownResult(target["vocab_size"])
    if isinstance(target.get("num_hidden_layers"), int):
        for name in ("get_num_layers", "get_total_num_hidden_layers"):
            model_config[name] = KnownResult(target["num_hidden_layers"])
    return {"vllm_config": {"speculative_config": spec, "model_config": model_config},
            "__pipeline_size__": pipeline_size}  # fmt: skip


#: The dtype the model's parameters are built in with `--dtype auto`: the config's `dtype` or
#: `torch_dtype`, float32 (or none) served as float16 (SGLang 0.5.14 configs/model_config.py:
#: 1553-1590 _get_and_verify_dtype; vLLM's ModelConfig does the same). Another `--dtype` is a
#: float type as well.
_CONFIG_DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "half": "float16",
                  "float32": "float16", "float": "float16"}  # fmt: skip


def model_dtype(*config_values: Any) -> str | None:
    """torch's name of the parameters' dtype for the config's dtype fields (first set wins),
    None when they name no float type."""
    for value in config_values:
        if value:
            return _CONFIG_DTYPES.get(value) if isinstance(value, str) else None
    return "float16"
