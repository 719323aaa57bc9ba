"""remotedbg.analysis.loader_model on small loaders written here (unit cases; the real engines'
loaders are run by tests/test_conformance.py)."""

from __future__ import annotations

import textwrap

from remotedbg.analysis.loader_model import simulate_load
from remotedbg.analysis.pysource import SourceIndex

BASE = """
from torch import nn


class Head(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(3 * config.hidden_size, config.hidden_size)
        self.norm = RMSNorm(config.hidden_size)
        self.lm_head = ParallelLMHead(config.draft_vocab_size, config.hidden_size)
        if getattr(config, "fc_norm", False):
            self.fc_norm = RMSNorm(config.hidden_size)
        self.hot_token_id = None

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, w in weights:
            if "d2t" in name:
                self.hot_token_id = w + 1
                continue
            {body}
"""
SILENT = """if name in params:
                params[name].data.copy_(w)"""
LOGGED = """if name in params:
                params[name].data.copy_(w)
            else:
                logger.warning(f"skipping {name}")"""
STRICT = """params[name].weight_loader(params[name], w)"""
CONFIG = {"hidden_size": 8, "draft_vocab_size": 10}


def model(body: str, names: list[str], config: dict | None = None, source: str = BASE):
    index = SourceIndex("eng", "/e/eng")
    text = textwrap.dedent(source).replace("{body}", body)
    index.add("/e/eng/models/head.py", text)
    return simulate_load(index, "/e/eng/models/head.py", "Head", names, config or CONFIG)


def outcomes(result) -> dict:
    return {name: entry["outcome"] for name, entry in result.outcomes.items()}


def test_loaded_consumed_and_silently_dropped():
    result = model(SILENT, ["fc.weight", "norm.weight", "lm_head.weight", "d2t", "x.weight"])
    assert result.status == "ok"
    assert outcomes(result) == {
        "fc.weight": "loaded",
        "norm.weight": "loaded",
        "lm_head.weight": "loaded",
        "d2t": "consumed",
        "x.weight": "dropped",
    }
    assert result.outcomes["x.weight"]["how"] == "silent"
    assert result.required == ["fc", "norm", "lm_head"] and result.unfilled() == []


def test_a_prefix_drops_everything_and_leaves_required_parameters_unfilled():
    result = model(SILENT, ["model.fc.weight", "model.lm_head.weight"])
    assert set(result.unfilled()) == {"fc", "norm", "lm_head"}
    logged = model(LOGGED, ["model.fc.weight"])
    assert logged.outcomes["model.fc.weight"]["how"] == "logged"


def test_a_loader_that_indexes_params_raises_on_an_unknown_name():
    result = model(STRICT, ["fc.weight", "wrapper.fc.weight", "norm.weight"])
    assert result.status == "raises"
    assert result.raised["kind"] == "KeyError" and result.raised["tensor"] == "wrapper.fc.weight"
    assert result.raised["at"].startswith("/e/eng/models/head.py:")
    assert outcomes(result)["norm.weight"] == "not-reached"


def test_config_decides_the_module_tree():
    names = ["fc.weight", "fc_norm.weight"]
    assert outcomes(model(SILENT, names))["fc_norm.weight"] == "dropped"
    with_norm = model(SILENT, names, dict(CONFIG, fc_norm=True))
    assert outcomes(with_norm)["fc_norm.weight"] == "loaded"


def test_a_setting_the_code_branches_on_is_tried_both_ways():
    same = model(
        """if self.mystery:
                pass
            if name in params:
                params[name].data.copy_(w)""",
        ["fc.weight"],
    )
    assert same.status == "ok"  # both ways load fc.weight: the answer does not depend on it
    differs = model(
        """if self.mystery:
                continue
            if name in params:
                params[name].data.copy_(w)""",
        ["fc.weight"],
    )
    assert differs.status == "unknown" and "self.mystery" in differs.reason


def test_hostile_loader_code_is_unknown_never_a_crash():
    unsupported = model("while True:\n                pass", ["fc.weight"])
    assert unsupported.status == "unknown" and "While" in unsupported.reason
    huge = model("x = [0] * 10**8", ["fc.weight"])
    assert huge.status == "ok"  # the product is refused (an unknown value), not allocated
    assert outcomes(huge)["fc.weight"] == "dropped"
    loop = model(
        """for i in range(4000):
                for j in range(4000):
                    pass""",
        ["fc.weight"],
    )
    assert loop.status == "unknown" and "budget" in loop.reason
    missing = simulate_load(SourceIndex("eng", "/e/eng"), "/e/eng/m.py", "Head", [], {})
    assert missing.status == "unknown"


# vLLM's EAGLE-3 loaders from 0.11 (llama_eagle3.py, deepseek_eagle3.py): the draft's quant_config
# comes from its ModelConfig, which the draft's config.json decides
QUANT = """
from torch import nn
from .utils import get_draft_quant_config


class Head(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.config = vllm_config.speculative_config.draft_model_config.hf_config
        self.quant_config = get_draft_quant_config(vllm_config)
        self.fc = ReplicatedLinear(3 * self.config.hidden_size, self.config.hidden_size)

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, w in weights:
            if self.quant_config is not None and (
                scale_name := self.quant_config.get_cache_scale(name)
            ):
                params[scale_name].weight_loader(params[scale_name], w)
                continue
            params[name].weight_loader(params[name], w)
"""


def vllm_model(
    source: str, names: list[str], draft: dict, spec: dict | None = None, utils: str = ""
):
    from remotedbg.engines.loader_rules import vllm_engine_params

    index = SourceIndex("eng", "/e/eng")
    index.add("/e/eng/models/head.py", textwrap.dedent(source))
    if utils:
        index.add("/e/eng/models/utils.py", textwrap.dedent(utils))
    params = vllm_engine_params(draft, {"vocab_size": 10, "num_hidden_layers": 4}, spec or {})
    return simulate_load(index, "/e/eng/models/head.py", "Head", names, draft, params)


def test_the_drafts_quant_config_is_none_without_quantization_in_its_config():
    result = vllm_model(QUANT, ["fc.weight"], CONFIG)
    assert result.status == "ok" and outcomes(result) == {"fc.weight": "loaded"}


def test_a_helper_loader_rules_models_is_not_followed_through_its_code():
    # the code read (as vLLM's, through objects the interpreter does not model) would leave the
    # quant_config open; the modelled answer (None without quantization) decides
    utils = """
    def get_draft_quant_config(vllm_config):
        draft = vllm_config.speculative_config.draft_model_config
        return VllmConfig.get_quantization_config(draft, vllm_config.load_config)
    """
    result = vllm_model(QUANT, ["fc.weight"], CONFIG, utils=utils)
    assert result.status == "ok" and outcomes(result) == {"fc.weight": "loaded"}


def test_a_quantized_draft_leaves_the_scale_branch_to_the_quantization_method():
    fp8 = dict(CONFIG, quantization_config={"quant_method": "fp8"})
    assert vllm_model(QUANT, ["fc.weight"], fp8).status == "unknown"
    launched = vllm_model(QUANT, ["fc.weight"], CONFIG, {"quantization": "fp8"})
    assert launched.status == "unknown"


MLA = """
from torch import nn


class MLAAttention(nn.Module):
    def __init__(self, config, hidden_size, q_lora_rank, kv_lora_rank, prefix=""):
        super().__init__()
        self.q_lora_rank = q_lora_rank
        if self.q_lora_rank is not None:
            self.fused_qkv_a_proj = ReplicatedLinear(hidden_size, q_lora_rank + kv_lora_rank)
        else:
            self.kv_a_proj_with_mqa = ReplicatedLinear(hidden_size, kv_lora_rank)


class DecoderLayer(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.self_attn = MLAAttention(
            config,
            2 * config.hidden_size,
            q_lora_rank=config.q_lora_rank if hasattr(config, "q_lora_rank") else None,
            kv_lora_rank=config.kv_lora_rank,
        )


class Head(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = DecoderLayer(config, prefix="layer")

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, w in weights:
            if name in params:
                params[name].weight_loader(params[name], w)
"""


def test_constructor_arguments_the_config_decides_build_one_branch():
    mla = dict(CONFIG, q_lora_rank=1536, kv_lora_rank=512)
    result = model("", ["layer.self_attn.fused_qkv_a_proj.weight"], mla, source=MLA)
    assert result.required == ["layer.self_attn.fused_qkv_a_proj"] and result.unfilled() == []
    no_lora = dict(CONFIG, kv_lora_rank=512)
    result = model("", [], no_lora, source=MLA)
    assert result.required == ["layer.self_attn.kv_a_proj_with_mqa"]


REMAP = """
from torch import nn


class Head(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(3 * config.hidden_size, config.hidden_size)

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, w in weights:
            if "scale" in name:
                name = maybe_remap_kv_scale_name(name, params)
                if name is None:
                    continue
            params[name].weight_loader(params[name], w)
"""


def test_only_kv_cache_scale_names_are_remapped():
    result = model("", ["fc.weight", "x.weight_scale_inv"], source=REMAP)
    assert result.status == "raises" and result.raised["tensor"] == "x.weight_scale_inv"
    assert model("", ["fc.weight", "x.k_scale"], source=REMAP).status == "unknown"


EAGLE1 = """
from torch import nn


class Layer(nn.Module):
    def __init__(self, config, skip_input_norm, prefix=""):
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size)
        self.mlp = nn.Linear(config.hidden_size, config.hidden_size)
        if skip_input_norm:
            del self.input_layernorm
            self.input_layernorm = nn.Identity()


class Head(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([Layer(config, i == 0) for i in range(2)])
        self.scale = nn.Linear(config.hidden_size, 1)
        if getattr(config, "no_scale", False):
            self.scale = None

    def load_weights(self, weights):
        params = dict(self.named_parameters())

        def transform(inputs, prefix="model."):
            name, w = inputs
            if "lm_head" not in name:
                name = name.removeprefix(prefix)
            return name, w

        for name, w in map(transform, weights):
            params[name].weight_loader(params[name], w)
"""


def test_nested_functions_map_and_deleted_modules_as_python_runs_them():
    """As vLLM's llama_eagle.py (0.32: :53-57, :99-109, :187-196): a nested function mapped
    over the weights, layer 0 built without its input norm, a module set to None."""
    names = ["model.layers.0.mlp.weight", "model.layers.1.input_layernorm.weight",
             "model.layers.1.mlp.weight", "model.scale.weight"]  # fmt: skip
    result = model("", names, source=EAGLE1)
    assert result.status == "ok", result.reason
    assert set(outcomes(result).values()) == {"loaded"}
    assert sorted(result.required) == ["layers.0.mlp", "layers.1.input_layernorm",
                                       "layers.1.mlp", "scale"]  # fmt: skip
    # layer 0 has no input norm: a checkpoint that carries one is refused by the engine
    refused = model("", [*names, "model.layers.0.input_layernorm.weight"], source=EAGLE1)
    assert refused.status == "raises", refused.reason
    unscaled = model("", names[:3], dict(CONFIG, no_scale=True), source=EAGLE1)
    assert "scale" not in unscaled.required and unscaled.unfilled() == []


def test_a_regex_rename_on_a_known_name_is_run_not_forked():
    """SGLang 0.5.12+ kimi_k25_eagle3.py:432 maps `layers.0.X` to `midlayer.X` with re.sub;
    undecided, every condition on the name forked and the run budget was spent."""
    body = """mapped = re.sub(r"^layers\\.0\\.", "midlayer.", name)
            if mapped in params:
                params[mapped].data.copy_(w)
            else:
                logger.warning(f"skipping {name}")"""
    layer = "self.midlayer = RMSNorm(config.hidden_size)\n        self.norm = RMSNorm"
    source = BASE.replace("from torch import nn", "import re\nfrom torch import nn")
    source = source.replace("self.norm = RMSNorm", layer)
    result = model(body, ["layers.0.weight", "fc.weight", "layers.1.weight"], source=source)
    assert result.status == "ok"
    assert outcomes(result) == {
        "layers.0.weight": "loaded",
        "fc.weight": "loaded",
        "layers.1.weight": "dropped",
    }
    assert result.outcomes["layers.0.weight"]["params"] == ["midlayer.weight"]
    assert result.outcomes["layers.1.weight"]["how"] == "logged"


def test_a_regex_that_could_backtrack_without_bound_is_not_run():
    body = """mapped = re.sub(r"^(a+)+$", "x", name)
            if mapped in params:
                params[mapped].data.copy_(w)"""
    source = BASE.replace("from torch import nn", "import re\nfrom torch import nn")
    result = model(body, ["a" * 40 + "b"], source=source)
    assert result.status == "unknown"


def test_a_value_known_by_name_only_is_not_taken_as_absent_from_a_tuple():
    """`w.dtype not in (torch.bfloat16, ...)` (SGLang kimi_k25_eagle3.py:497): the dtype is not
    known here, so the raise is undecided, not taken."""
    body = """if w.dtype not in (torch.bfloat16, torch.float16):
                raise NotImplementedError("dtype")
            params[name].data.copy_(w)"""
    source = BASE.replace("from torch import nn", "import torch\nfrom torch import nn")
    result = model(body, ["fc.weight"], source=source)
    assert result.status != "raises"


# A head shaped as SGLang's MLA EAGLE-3 head (0.5.14 srt/models/kimi_k25_eagle3.py:413-500):
# q_a/kv_a concatenated into one fused parameter, post_load_weights checking a child layer's
# weight dtype, an attention that builds an indexer when a config helper says so (0.5.14
# deepseek_v2.py:1520, 1581; configs/model_config.py:86-115 is_deepseek_dsa).
SGLANG_MLA = """
import torch
from torch import nn
from eng.configs import is_dsa


class Indexer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.wk = ReplicatedLinear(dim, dim)


class Attn(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.use_dsa = is_dsa(config)
        self.kv_b_proj = ColumnParallelLinear(8, 8)
        self.fused_qkv_a_proj_with_mqa = ReplicatedLinear(8, 8)
        if self.use_dsa:
            self.indexer = Indexer(8)


class Head(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = Attn(config)

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        cached = {}
        for name, w in weights:
            if "a_proj" in name:
                cached[name] = w
                if len(cached) == 2:
                    fused = torch.cat([cached["self_attn.q_a_proj.weight"],
                                       cached["self_attn.kv_a_proj.weight"]], dim=0)
                    param = params["self_attn.fused_qkv_a_proj_with_mqa.weight"]
                    param.weight_loader(param, fused)
                continue
            if name in params:
                params[name].weight_loader(params[name], w)
        w = self.self_attn.kv_b_proj.weight
        if w.dtype not in (torch.bfloat16, torch.float16, torch.float32):
            raise NotImplementedError(f"only float dtypes, got {w.dtype}")
"""
CONFIGS = """
def _arch(config):
    archs = config.get("architectures") if isinstance(config, dict) else getattr(
        config, "architectures", None)
    return archs[0] if archs else None


def is_dsa(config):
    return _arch(config) in ("DeepseekV3ForCausalLM",) and getattr(
        config, "index_topk", None) is not None
"""
MLA_NAMES = [
    "self_attn.q_a_proj.weight", "self_attn.kv_a_proj.weight", "self_attn.kv_b_proj.weight"
]  # fmt: skip


def mla_model(config: dict):
    index = SourceIndex("eng", "/e/eng")
    index.add("/e/eng/models/head.py", textwrap.dedent(SGLANG_MLA))
    index.add("/e/eng/configs.py", textwrap.dedent(CONFIGS))
    return simulate_load(index, "/e/eng/models/head.py", "Head", MLA_NAMES, config)


def test_a_child_layers_weight_is_a_parameter_in_the_dtype_the_config_decides():
    for dtype in ("bfloat16", "float32"):  # float32 is served as float16 (--dtype auto)
        result = mla_model({"architectures": ["Eagle3Head"], "torch_dtype": dtype})
        assert result.status == "ok", result.reason
    # a quantized draft's weight dtype is the quantization's: not decided here
    quantized = mla_model({"architectures": ["Eagle3Head"], "torch_dtype": "bfloat16",
                           "quantization_config": {"quant_method": "fp8"}})  # fmt: skip
    assert quantized.status == "unknown" and "w.dtype" in quantized.reason


def test_every_part_of_a_concatenation_is_loaded_into_the_fused_parameter():
    result = mla_model({"architectures": ["Eagle3Head"], "torch_dtype": "bfloat16"})
    assert outcomes(result) == dict.fromkeys(MLA_NAMES, "loaded")
    fused = "self_attn.fused_qkv_a_proj_with_mqa.weight"
    assert result.outcomes["self_attn.q_a_proj.weight"]["params"] == [fused]
    assert result.outcomes["self_attn.kv_a_proj.weight"]["params"] == [fused]


def test_a_condition_an_engine_helper_computes_from_the_config_is_followed():
    head = mla_model({"architectures": ["Eagle3Head"], "torch_dtype": "bfloat16"})
    assert "self_attn.indexer" not in head.required and head.unfilled() == []
    dsa = mla_model({"architectures": ["DeepseekV3ForCausalLM"], "index_topk": 2048,
                     "torch_dtype": "bfloat16"})  # fmt: skip
    assert dsa.unfilled() == ["self_attn.indexer.wk"]


# vLLM's AutoWeightsLoader recognised by where the draft's file imports it from
AUTO = """
from torch import nn
from .utils import AutoWeightsLoader


class Head(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(3 * config.hidden_size, config.hidden_size)

    def load_weights(self, weights):
        loader = AutoWeightsLoader(self, skip_prefixes=["lm_head."])
        return loader.load_weights(weights)
"""


def vllm_layout(source: str, utils: str = "") -> SourceIndex:
    index = SourceIndex("vllm", "/e/vllm")
    index.add("/e/vllm/model_executor/models/head.py", textwrap.dedent(source))
    if utils:
        index.add("/e/vllm/model_executor/models/utils.py", textwrap.dedent(utils))
    return index


def test_an_engine_helper_is_known_by_the_qualified_name_its_import_resolves_to():
    names = ["fc.weight", "lm_head.weight"]
    index = vllm_layout(AUTO)
    result = simulate_load(index, "/e/vllm/model_executor/models/head.py", "Head", names, CONFIG)
    assert outcomes(result) == {"fc.weight": "loaded", "lm_head.weight": "dropped"}
    assert result.outcomes["lm_head.weight"]["by"].endswith("skip_prefixes/substrs")
    # the same name imported from a module of the engine that defines no such helper: not it
    other = vllm_layout(AUTO.replace("from .utils import", "from .mine import"))
    result = simulate_load(other, "/e/vllm/model_executor/models/head.py", "Head", names, CONFIG)
    assert outcomes(result) == {"fc.weight": "dropped", "lm_head.weight": "dropped"}
    assert not any("by" in entry for entry in result.outcomes.values())


# ------------------------------------------------------------------ issue 42's engine forms

PERMUTE = """
from torch import nn


class Head(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size)

    def permute(self, name, w):
        modules = name.split(".")
        if ("wq" in modules or "q_proj" in modules) and modules[-1] == "weight":
            w = w.view(4, 2, 2, 8).transpose(1, 2).reshape(8, 8)
        return name, w

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        loaded = set()
        for name, w in [self.permute(n, t) for n, t in weights]:
            params[name].weight_loader(params[name], w)
            loaded.add(name)
        for name in params:
            assert name in loaded, f"{name} is not loaded!"
        return loaded
"""


def test_a_permuted_tensor_is_still_the_checkpoint_s_and_every_parameter_is_checked():
    """vLLM's Llama-4 EAGLE head (0.10.0 llama4.py:557-582, llama4_eagle.py:117-135): the q/k
    permutation for rotary is decided by `modules[-1]` and keeps the tensor; the loop over the
    parameters asserts each was loaded."""
    both = model("", ["q_proj.weight", "o_proj.weight"], source=PERMUTE)
    assert (both.status, outcomes(both)) == ("ok", {"q_proj.weight": "loaded",
                                                    "o_proj.weight": "loaded"})  # fmt: skip
    one = model("", ["q_proj.weight"], source=PERMUTE)
    assert one.status == "raises", (one.status, one.reason)


BRANCHES = """
from torch import nn


class Head(nn.Module):
    def __init__(self, config, prefix):
        super().__init__()
        layer_idx = int(prefix.split(".")[-1])
        if layer_idx >= config.first_dense:
            self.mlp = MoE(config)
        else:
            self.mlp = Dense(config)

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, w in weights:
            params[name].weight_loader(params[name], w)


class MoE(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate = nn.Linear(config.hidden_size, 4)


class Dense(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.up_proj = nn.Linear(config.hidden_size, 16)
"""


def test_a_module_either_branch_builds_takes_either_s_parameters():
    """vLLM's DeepSeek decoder layer builds a MoE or a dense MLP by its index (0.10.2
    deepseek_v2.py:636-676), unknown where the prefix is: a tensor of either loads, and none
    is reported missing."""
    config = dict(CONFIG, first_dense=3)
    for name in ("mlp.gate.weight", "mlp.up_proj.weight"):
        result = model("", [name], config, source=BRANCHES)
        assert (result.status, outcomes(result), result.unfilled()) == (
            "ok", {name: "loaded"}, []), (name, result.reason)  # fmt: skip


EXPERTS = """
from torch import nn


class Head(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.experts = FusedMoE(config)

    def load_weights(self, weights):
        mapping = FusedMoE.make_expert_params_mapping(
            ckpt_gate_proj_name="gate_proj", ckpt_down_proj_name="down_proj",
            ckpt_up_proj_name="up_proj", num_experts=self.config.n_routed_experts)
        params = dict(self.named_parameters())
        for name, w in weights:
            for param_name, weight_name, expert_id, shard_id in mapping:
                if weight_name not in name:
                    continue
                name = name.replace(weight_name, param_name)
                params[name].weight_loader(params[name], w, name, shard_id=shard_id,
                                           expert_id=expert_id)
                break
"""


def test_experts_load_through_vllm_s_expert_mapping():
    """FusedMoE.make_expert_params_mapping (vLLM 0.10.2 fused_moe/layer.py:1838-1867): each
    expert's gate/up/down tensor lands in the fused w13_/w2_ parameter."""
    names = [f"experts.{e}.{p}.weight" for e in range(2) for p in ("gate_proj", "up_proj",
                                                                   "down_proj")]  # fmt: skip
    result = model("", names, dict(CONFIG, n_routed_experts=2), source=EXPERTS)
    assert result.status == "ok", result.reason
    assert set(outcomes(result).values()) == {"loaded"}, outcomes(result)


FUSED_MOE_READ = EXPERTS.replace(
    "from torch import nn\n",
    """from torch import nn


class CustomOp(nn.Module):
    def __init__(self):
        super().__init__()
        self._forward_method = self.dispatch_forward()

    def dispatch_forward(self):
        if not self.enabled():
            return self.forward_native
        if current_platform.is_rocm():
            return self.forward_hip
        elif current_platform.is_cpu():
            return self.forward_cpu
        elif current_platform.is_tpu():
            return self.forward_tpu
        return self.forward_cuda


class FusedMoE(CustomOp):
    def __init__(self, config):
        super().__init__()
        self.quant_method = make_quant_method(config)
        self.quant_method.create_weights(layer=self, num_experts=config.n_routed_experts)
""",
)


def test_experts_whose_parameters_the_quant_method_registers_load():
    """Where FusedMoE's own code is read (vLLM 0.10.2-0.23.0: deepseek_v2.py builds a
    SharedFusedMoE, whose file the index holds), its parameters come from the quant method it
    hands itself to (fused_moe/layer.py:945 `create_weights(layer=self, ...)`), and its
    CustomOp base picks a forward by platform (custom_op.py:81-107): the expert tensors load,
    and the platform is no setting the answer depends on."""
    names = [f"experts.{e}.{p}.weight" for e in range(2) for p in ("gate_proj", "up_proj",
                                                                   "down_proj")]  # fmt: skip
    result = model("", names, dict(CONFIG, n_routed_experts=2), source=FUSED_MOE_READ)
    assert result.status == "ok", result.reason
    assert set(outcomes(result).values()) == {"loaded"}, outcomes(result)
    assert result.approximate and result.unfilled() == []


def test_a_base_init_called_by_name_hands_the_module_to_no_one():
    """`nn.Module.__init__(self)` (vLLM 0.10.2 deepseek_eagle.py:190, EagleDeepseekV3ForCausalLM)
    is a base's constructor, not code that may register parameters: a name no parameter has
    still raises in a loader that indexes its parameters."""
    source = BASE.replace("super().__init__()", "nn.Module.__init__(self)")
    result = model(STRICT, ["fc.weight", "wrapper.fc.weight"], source=source)
    assert result.status == "raises" and not result.approximate, result.reason
    assert result.raised["tensor"] == "wrapper.fc.weight"


def test_a_module_printed_or_logged_in_its_init_is_still_followed():
    """A hot-fixed copy that logs its module (`print(self)`, `logger.info("%s", self)`) hands
    it to no code that registers parameters: the strict loader still raises on a name no
    parameter has."""
    for line in ("print(self)", 'logger.info("%s", self)', "self.check(self)"):
        source = BASE.replace(
            "self.hot_token_id = None", f"self.hot_token_id = None\n        {line}"
        )
        result = model(STRICT, ["fc.weight", "wrapper.fc.weight"], source=source)
        assert result.status == "raises" and not result.approximate, (line, result.reason)
