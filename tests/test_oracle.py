"""The engines as the oracle (issue 42): every configuration of tests/oracle_table.py, which
SGLang's and vLLM's own tests, docs and examples run, built as real-shape sparse checkpoints with
the published configs and judged, on the releases where it runs, by `diagnose --no-probe`
(spec-audit runs inside it) and `vocab-audit`. What the engines run as correct must come out
clean: no error-level finding, no defect verdict, nothing inconclusive. A planted absolute d2t on
one row of each format with a vocab map (EAGLE-3, speculators) is still caught, and what an
engine's own docs show but the same release refuses is said as the engine says it.

The whole catalog runs on first releases of the content groups of the draft loader files
(tests/sweep_table.py GROUPS) where the configuration runs (sweep_releases), marked `sweep`; one
row per draft format runs with the rest of the suite.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from remotedbg.agent.findings import ERROR, WARNING
from remotedbg.diagnose import diagnose_host
from remotedbg.remote.primitives import Remote
from remotedbg.session import ConnectOptions, open_session
from tests import realshape as rs
from tests.oracle_table import (
    CONFIGS,
    ENGINE_REFUSES,
    NOT_BUILT,
    REGISTRY_NOT_BUILT,
    REGISTRY_VERSION,
    SWEEP_VERSIONS,
    Config,
    named,
    release_cite,
)
from tests.releases import RELEASES, cache_dir, sweep_release, sweep_release_with
from tests.sweep_table import GROUPS
from tests.test_conformance import hub_cache, vocab_audit

pytestmark = pytest.mark.network

# Published config facts of the targets the catalog needs beyond tests/realshape.py's.
LLAMA2_7B_CHAT = rs.TargetShape(  # meta-llama/Llama-2-7b-chat-hf config.json
    "llama-2-7b-chat", "LlamaForCausalLM", "llama", 4096, 11008, 32, 32, 32, 32000, 2,
    rope_theta=10000.0, extra={"max_position_embeddings": 4096, "bos_token_id": 1},
)  # fmt: skip
VICUNA_7B = rs.TargetShape(  # lmsys/vicuna-7b-v1.3 config.json (Llama-1 7B's shape, 2048 positions)
    "vicuna-7b-v1.3", "LlamaForCausalLM", "llama", 4096, 11008, 32, 32, 32, 32000, 2,
    rope_theta=10000.0,
    extra={"max_position_embeddings": 2048, "bos_token_id": 1, "rms_norm_eps": 1e-6},
)  # fmt: skip
# the larger Llama-family targets of vLLM's docs table (their config.json files)
VICUNA_13B = rs.TargetShape(  # lmsys/vicuna-13b-v1.3 (Llama-1 13B's shape)
    "vicuna-13b-v1.3", "LlamaForCausalLM", "llama", 5120, 13824, 40, 40, 40, 32000, 2,
    rope_theta=10000.0,
    extra={"max_position_embeddings": 2048, "bos_token_id": 1, "rms_norm_eps": 1e-6},
)  # fmt: skip
VICUNA_33B = rs.TargetShape(  # lmsys/vicuna-33b-v1.3 (Llama-1 33B's shape)
    "vicuna-33b-v1.3", "LlamaForCausalLM", "llama", 6656, 17920, 60, 52, 52, 32000, 2,
    rope_theta=10000.0,
    extra={"max_position_embeddings": 2048, "bos_token_id": 1, "rms_norm_eps": 1e-6},
)  # fmt: skip
LLAMA2_13B_CHAT = rs.TargetShape(  # meta-llama/Llama-2-13b-chat-hf
    "llama-2-13b-chat", "LlamaForCausalLM", "llama", 5120, 13824, 40, 40, 40, 32000, 2,
    rope_theta=10000.0, extra={"max_position_embeddings": 4096, "bos_token_id": 1},
)  # fmt: skip
LLAMA2_70B_CHAT = rs.TargetShape(  # meta-llama/Llama-2-70b-chat-hf
    "llama-2-70b-chat", "LlamaForCausalLM", "llama", 8192, 28672, 80, 64, 8, 32000, 2,
    rope_theta=10000.0, extra={"max_position_embeddings": 4096, "bos_token_id": 1},
)  # fmt: skip
LLAMA3_70B_INSTRUCT = rs.TargetShape(  # meta-llama/Meta-Llama-3-70B-Instruct
    "llama-3-70b-instruct", "LlamaForCausalLM", "llama", 8192, 28672, 80, 64, 8, 128256, 128009,
    extra={"max_position_embeddings": 8192, "bos_token_id": 128000},
)  # fmt: skip
LLAMA3_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}  # fmt: skip
LLAMA31_8B_INSTRUCT = rs.TargetShape(  # meta-llama/Llama-3.1-8B-Instruct config.json
    "llama-3.1-8b-instruct", "LlamaForCausalLM", "llama", 4096, 14336, 32, 32, 8, 128256,
    [128001, 128008, 128009], extra={"rope_scaling": LLAMA3_SCALING, "bos_token_id": 128000},
)  # fmt: skip
LLAMA3_8B_INSTRUCT = rs.TargetShape(  # meta-llama/Meta-Llama-3-8B-Instruct config.json
    "llama-3-8b-instruct", "LlamaForCausalLM", "llama", 4096, 14336, 32, 32, 8, 128256, 128009,
    extra={"max_position_embeddings": 8192, "bos_token_id": 128000},
)  # fmt: skip
QWEN3_8B = rs.TargetShape(  # Qwen/Qwen3-8B config.json
    "qwen3-8b", "Qwen3ForCausalLM", "qwen3", 4096, 12288, 36, 32, 8, 151936, 151645,
    rope_theta=1000000.0,
    extra={"max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "bos_token_id": 151643},
)  # fmt: skip
# openai/gpt-oss-20b config.json: MoE (32 experts, 4 active), head_dim 64, alternating sliding
# (128) and full attention, YaRN factor 32 from 4096 to 131072, MXFP4 experts
GPT_OSS_20B = rs.TargetShape(
    "gpt-oss-20b", "GptOssForCausalLM", "gpt_oss", 2880, 2880, 24, 64, 8, 201088, 200002,
    head_dim=64, rope_theta=150000.0,
    extra={
        "num_local_experts": 32, "num_experts_per_tok": 4, "experts_per_token": 4,
        "sliding_window": 128, "attention_bias": True, "swiglu_limit": 7.0,
        "layer_types": ["sliding_attention", "full_attention"] * 12,
        "initial_context_length": 4096, "pad_token_id": 199999,
        "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                         "beta_slow": 1.0, "original_max_position_embeddings": 4096,
                         "truncate": False},
        "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
            "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
            "lm_head"]},
    },
)  # fmt: skip
# meta-llama/Llama-4-Scout-17B-16E-Instruct config.json: the multimodal wrapper, the language
# model's fields in text_config (MoE, 16 experts, 1 active, chunked attention, iRoPE: every
# fourth layer without RoPE, llama3 scaling x16 from 8192 to 10485760 positions)
LLAMA4_SCOUT_TEXT = {
    "model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192,
    "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
    "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 202048, "num_local_experts": 16,
    "num_experts_per_tok": 1, "interleave_moe_layer_step": 1, "rope_theta": 500000.0,
    "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 1.0, "original_max_position_embeddings": 8192},
    "max_position_embeddings": 10485760, "attention_chunk_size": 8192, "use_qk_norm": True,
    "no_rope_layers": [1, 1, 1, 0] * 12, "attn_temperature_tuning": True, "floor_scale": 8192,
    "attn_scale": 0.1, "rms_norm_eps": 1e-5, "bos_token_id": 200000,
    "eos_token_id": [200001, 200007, 200008], "pad_token_id": 200018,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
LLAMA4_SCOUT = {
    "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
    "text_config": LLAMA4_SCOUT_TEXT, "boi_token_index": 200080, "eoi_token_index": 200081,
    "image_token_index": 200092, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "vision_config": {"model_type": "llama4_vision_model", "hidden_size": 1408,
                      "num_hidden_layers": 34, "num_attention_heads": 16, "image_size": 336,
                      "patch_size": 14, "projector_input_dim": 4096,
                      "projector_output_dim": 4096, "vision_output_dim": 4096},
}  # fmt: skip
# Qwen/Qwen3-VL-8B-Instruct config.json: the language model in text_config (interleaved
# M-RoPE, 262144 positions), a vision tower with deepstack layers
QWEN3_VL_8B_TEXT = rs.TargetShape(
    "qwen3-vl-8b-text", "Qwen3VLForConditionalGeneration", "qwen3_vl_text", 4096, 12288, 36, 32,
    8, 151936, 151645, rope_theta=5000000.0,
    extra={"max_position_embeddings": 262144, "rms_norm_eps": 1e-6, "bos_token_id": 151643,
           "rope_scaling": {"rope_type": "default", "mrope_interleaved": True,
                            "mrope_section": [24, 20, 20]}},
)  # fmt: skip
# Qwen/Qwen2.5-VL-7B-Instruct config.json: the language model's fields at the top level,
# M-RoPE, 128000 positions
QWEN25_VL_7B = rs.TargetShape(
    "qwen2.5-vl-7b", "Qwen2_5_VLForConditionalGeneration", "qwen2_5_vl", 3584, 18944, 28, 28, 4,
    152064, 151645, rope_theta=1000000.0,
    extra={"max_position_embeddings": 128000, "rms_norm_eps": 1e-6, "bos_token_id": 151643,
           "sliding_window": 32768, "use_sliding_window": False,
           "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
           "vision_start_token_id": 151652, "image_token_id": 151655, "video_token_id": 151656,
           "vision_config": {"model_type": "qwen2_5_vl", "hidden_size": 1280, "depth": 32,
                             "out_hidden_size": 3584, "patch_size": 14,
                             "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31]}},
)  # fmt: skip


# Qwen/Qwen3-VL-30B-A3B-Instruct-FP8 config.json: the MoE language model (Qwen3-30B-A3B's shape,
# M-RoPE to 262144 positions) in text_config, block FP8
QWEN3_VL_30B_A3B_TEXT = rs.TargetShape(**dict(
    vars(rs.QWEN3_30B_A3B), name="qwen3-vl-30b-a3b-text",
    architecture="Qwen3VLMoeForConditionalGeneration", model_type="qwen3_vl_moe_text",
    rope_theta=5000000.0, extra=dict(rs.QWEN3_30B_A3B.extra, max_position_embeddings=262144,
                                     rope_scaling={"rope_type": "default",
                                                   "mrope_interleaved": True,
                                                   "mrope_section": [24, 20, 20]})))  # fmt: skip


def qwen3_vl_config(text: rs.TargetShape = QWEN3_VL_8B_TEXT) -> dict:
    language = text.config()
    del language["architectures"]
    return {
        "architectures": [text.architecture], "model_type": "qwen3_vl", "text_config": language,
        "image_token_id": 151655, "video_token_id": 151656, "vision_start_token_id": 151652,
        "vision_end_token_id": 151653, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "vision_config": {"model_type": "qwen3_vl", "depth": 27, "hidden_size": 1152,
                          "out_hidden_size": text.hidden, "patch_size": 16,
                          "deepstack_visual_indexes": [8, 16, 24]},
    }  # fmt: skip


EAGLE3_AUTHORS_CONTEXT = 2048  # the EAGLE-3 authors' heads are trained at 2048 positions


# The EAGLE authors' heads for Llama-3 have no fc.bias, those for Vicuna and LLaMA2-chat have one:
# - yuhuili/EAGLE-LLaMA3.1-Instruct-8B's tensors are listed without it (sgl-project/sglang issue
#   5773), TensorRT-LLM's converter stops on EAGLE-LLaMA3-Instruct-8B with "key error 'fc.bias'"
#   (NVIDIA/TensorRT-LLM issue 2588, where vicuna-7b-v1.3's head converts), and vLLM's CI serves
#   the Llama-3 heads under loaders that raise on an fc.bias (vLLM builds fc bias=False: 0.10.0
#   llama_eagle.py:71-73, `params_dict[name]` at :104-121);
# - vLLM's V0 EAGLE loader refuses EAGLE-llama2-chat-7B with "Found bias in the loaded weights
#   but the model config doesn't have bias" (vllm-project/vllm issue 11126).
EAGLE1_WITHOUT_FC_BIAS = ("llama-3-", "llama-3.1-")  # the target shapes' names


def _eagle1(target: rs.TargetShape, arch: str) -> tuple[dict, dict]:
    config = rs.eagle1_config(target)
    config["architectures"] = [arch]
    config["max_position_embeddings"] = target.config()["max_position_embeddings"]
    return config, rs.eagle1_tensors(target, fc_bias=not target.name.startswith(
        EAGLE1_WITHOUT_FC_BIAS))


def _eagle3(target: rs.TargetShape, arch: str, context: int | None = None) -> tuple[dict, dict]:
    config = rs.eagle3_config(target)
    config["architectures"] = [arch]
    config["max_position_embeddings"] = context or target.config()["max_position_embeddings"]
    return config, rs.eagle3_tensors(target)


def _eagle1_llama4() -> tuple[dict, dict]:
    """vLLM's EagleLlama4ForCausalLM head (0.10.0 model_executor/models/llama4_eagle.py:40-170):
    a Llama4ForCausalLM config of one dense layer (no MoE: `assert len(moe_layers) == 0`), fc over
    [embeds, hidden] without bias, a final norm, the embedding (0.10.0 shares the target's when
    pipeline parallelism is off, :117-121; 0.18.0 asserts every parameter loaded, :135-137, so
    the checkpoint that release's test serves carries it); no head, the target's is shared.
    draft_vocab_size: 0.18.0 builds lm_head from it (:188-192)."""
    text = LLAMA4_SCOUT_TEXT
    config = dict(text, architectures=["Llama4ForCausalLM"], num_hidden_layers=1,
                  interleave_moe_layer_step=0, moe_layers=[], no_rope_layers=[1],
                  draft_vocab_size=text["vocab_size"])  # fmt: skip
    h, hd, mlp = text["hidden_size"], text["head_dim"], text["intermediate_size_mlp"]
    layer = "layers.0"
    tensors = {
        "embed_tokens.weight": ("BF16", [text["vocab_size"], h], None),
        "fc.weight": ("BF16", [h, 2 * h], None),
        "norm.weight": ("BF16", [h], None),
        f"{layer}.input_layernorm.weight": ("BF16", [h], None),
        f"{layer}.post_attention_layernorm.weight": ("BF16", [h], None),
        f"{layer}.self_attn.q_proj.weight": ("BF16", [text["num_attention_heads"] * hd, h], None),
        f"{layer}.self_attn.k_proj.weight": ("BF16", [text["num_key_value_heads"] * hd, h], None),
        f"{layer}.self_attn.v_proj.weight": ("BF16", [text["num_key_value_heads"] * hd, h], None),
        f"{layer}.self_attn.o_proj.weight": ("BF16", [h, text["num_attention_heads"] * hd], None),
        f"{layer}.feed_forward.gate_proj.weight": ("BF16", [mlp, h], None),
        f"{layer}.feed_forward.up_proj.weight": ("BF16", [mlp, h], None),
        f"{layer}.feed_forward.down_proj.weight": ("BF16", [h, mlp], None),
    }  # fmt: skip
    return config, tensors


def _fp8_blocks(tensors: dict, block: int = 128, scale: str = "F32") -> dict:
    """DeepSeek-V3's FP8 release layout: each attention and expert projection F8_E4M3 with its
    `weight_scale_inv` (one F32 per 128x128 block); norms, gate, eh_proj, embedding, head bf16.
    Qwen's FP8 releases store the scales in bf16 (`scale` BF16)."""
    out = {}
    for name, (dtype, shape, data) in tensors.items():
        if name.endswith("_proj.weight") and "eh_proj" not in name and len(shape) == 2:
            out[name] = ("F8_E4M3", shape, None)
            blocks = [-(-shape[0] // block), -(-shape[1] // block)]
            out[name[: -len("weight")] + "weight_scale_inv"] = (scale, blocks, None)
        else:
            out[name] = (dtype, shape, data)
    return out


# ZixiQi/DeepSeek-V3-4layers-MTP-FP8: a reduced DeepSeek-V3 (its name: 4 layers, the MTP
# layer, FP8); its config is not known offline: DeepSeek-V3's with 4 layers stands in
DEEPSEEK_V3_4L = rs.TargetShape(**dict(vars(rs.DEEPSEEK_V3), name="deepseek-v3-4l", layers=4,
                                       extra=dict(rs.DEEPSEEK_V3.extra, quantization_config={
                                           "quant_method": "fp8", "fmt": "e4m3",
                                           "activation_scheme": "dynamic",
                                           "weight_block_size": [128, 128]})))  # fmt: skip


# eagle618/deepseek-v3-random: a random-weight DeepSeek-V3 whose config is not known offline;
# vLLM's own ground truth for its draft (tests/config/draft_model_arch_groundtruth.json, 0.14.0+)
# gives hidden 2560, 32 heads, MLA (head size 576), 72 experts, vocab 129280: DeepSeek-V3's
# config.json with those values (and 5 layers, as the same ground truth's luccafong random
# target) stands in
DEEPSEEK_V3_RANDOM = rs.TargetShape(**dict(vars(rs.DEEPSEEK_V3), name="deepseek-v3-random",
                                           hidden=2560, heads=32, kv_heads=32, layers=5,
                                           extra=dict(rs.DEEPSEEK_V3.extra, moe_layer_freq=1,
                                                      n_routed_experts=72)))  # fmt: skip


# deepseek-ai/DeepSeek-V3.2-Exp: transformers' DeepseekV32Config documents its defaults as that
# checkpoint's (5.12.1 models/deepseek_v32/configuration_deepseek_v32.py:27, `auto_docstring(
# checkpoint="deepseek-ai/DeepSeek-V3.2-Exp")`, values :84-124): DeepSeek-V3's widths, 129280
# vocab, 163840 positions, and the indexer (64 heads of 128, top 2048); the MTP layer after
# layer 60, as SGLang's docs serve it with EAGLE and no draft
DEEPSEEK_V32 = rs.TargetShape(**dict(vars(rs.DEEPSEEK_V3), name="deepseek-v32-exp",
                                     architecture="DeepseekV32ForCausalLM",
                                     model_type="deepseek_v32",
                                     extra=dict(rs.DEEPSEEK_V3.extra, index_head_dim=128,
                                                index_n_heads=64, index_topk=2048,
                                                max_position_embeddings=163840)))  # fmt: skip


# DeepSeek-V3's and DeepSeek-R1's published config.json settings beyond the shape: FP8 weights in
# 128x128 blocks, YaRN x40 from 4096 to 163840 positions
_DSV3_FP8_YARN = {
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                            "weight_block_size": [128, 128]},
    "max_position_embeddings": 163840,
    "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                     "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
}  # fmt: skip
DEEPSEEK_V3_FP8 = rs.TargetShape(**dict(vars(rs.DEEPSEEK_V3), name="deepseek-v3-fp8",
                                        extra=dict(rs.DEEPSEEK_V3.extra, **_DSV3_FP8_YARN)))
DEEPSEEK_V32_FP8 = rs.TargetShape(**dict(vars(DEEPSEEK_V32), name="deepseek-v32-fp8",
                                         extra=dict(DEEPSEEK_V32.extra, **_DSV3_FP8_YARN)))


def _eagle3_kimi_k25() -> tuple[dict, dict]:
    """lightseekorg/kimi-k2.5-eagle3, which SGLang's Kimi-K2.5 cookbook serves: its config.json
    is not known offline, so SpecForge's template for a Kimi-K2.5 head stands in
    (sgl-project/SpecForge configs/kimi-k25-eagle3.json@3f9b5fca: LlamaForCausalLMEagle3 of the
    target's widths, 64 heads and kv heads of 128, draft vocab 32000, bos 163584, eos 163585,
    rms eps 1e-6, its own RoPE, theta 1e6 without scaling, 131072 positions, aux layers 2, 30,
    58)."""
    config = rs.eagle3_config(rs.KIMI_K2)
    config.update(bos_token_id=163584, eos_token_id=163585, rms_norm_eps=1e-6,
                  rope_theta=1000000.0, max_position_embeddings=131072,
                  eagle_config={"eagle_aux_hidden_state_layer_ids": [2, 30, 58],
                                "use_aux_hidden_state": True})  # fmt: skip
    return config, rs.eagle3_tensors(rs.KIMI_K2)


def _eagle1_deepseek(target: rs.TargetShape = DEEPSEEK_V3_RANDOM) -> tuple[dict, dict]:
    """vLLM's EagleDeepseekV3ForCausalLM head (0.10.2 model_executor/models/deepseek_eagle.py:
    28-185): one DeepSeek decoder layer (MLA, MoE: its index is the target's layer count),
    enorm/hnorm over [embeds, hidden], fc without bias, a final norm, its own lm_head; the
    embedding is shared with the target's when pipeline parallelism is off. Its config is the
    target's with one layer (model_type deepseek_v3: vLLM names it DeepSeekMTPModel, then
    EagleDeepSeekMTPModel, the ground truth's architecture)."""
    config = dict(target.config(), num_hidden_layers=1)
    layer = rs.nextn_tensors(target, experts=8)
    p = f"model.layers.{target.layers}."
    tensors = {("layers.0." + k[len(p):]): v for k, v in layer.items() if k.startswith(p)}
    tensors = {k: v for k, v in tensors.items()
               if not k.startswith(("layers.0.eh_proj", "layers.0.enorm", "layers.0.hnorm",
                                    "layers.0.shared_head"))}  # fmt: skip
    h = target.hidden
    tensors.update({
        "embed_tokens.weight": ("BF16", [target.vocab, h], None),
        "fc.weight": ("BF16", [h, 2 * h], None),
        "enorm.weight": ("BF16", [h], None), "hnorm.weight": ("BF16", [h], None),
        "norm.weight": ("BF16", [h], None),
        "lm_head.weight": ("BF16", [target.vocab, h], None),
    })  # fmt: skip
    return config, tensors


def _mtp_in_target(target: rs.TargetShape, experts: int = 8) -> tuple[dict, dict]:
    """The target checkpoint as the draft reads it: the MTP layer after the last target layer,
    the embedding and the head (the target's own layers are not what the draft loads)."""
    tensors = dict(rs.nextn_tensors(target, experts=experts),
                   **{"lm_head.weight": ("BF16", [target.vocab, target.hidden], None)})  # fmt: skip
    if "quantization_config" in target.extra:
        tensors = _fp8_blocks(tensors)
    return target.config(), tensors


# XiaomiMiMo/MiMo-7B-Base config.json (a Qwen2-shaped model, q/k/v bias, one MTP layer) as a
# third-party conversion test states it (hidden 4096, 36 layers, 32 heads, 8 kv heads, vocab
# 151680, 32768 positions, rope_theta 640000, num_nextn_predict_layers 1); MiMo-7B-RL is the
# same model trained further. eos is not known offline: Qwen2's 151643 stands in (an MTP layer
# drafts over the whole vocabulary: no vocab-map check reads it)
MIMO_7B = rs.TargetShape(
    "mimo-7b", "MiMoForCausalLM", "mimo", 4096, 11008, 36, 32, 8, 151680, 151643,
    rope_theta=640000.0,
    extra={"max_position_embeddings": 32768, "num_nextn_predict_layers": 1,
           "attention_bias": True, "bos_token_id": 151643},
)  # fmt: skip


def _attention(p: str, h: int, q: int, kv: int, bias: bool = False, gated: bool = False
               ) -> dict:  # fmt: skip
    """A decoder layer's two norms and its attention: `q`/`kv` the query and key/value widths;
    `bias` q/k/v biases (Qwen2's, which MiMo's MTP layer is, and GLM-4.5's); `gated` a q_proj
    that also carries the output gate, twice the query's width (Qwen3-Next's)."""
    tensors = {
        f"{p}input_layernorm.weight": ("BF16", [h], None),
        f"{p}post_attention_layernorm.weight": ("BF16", [h], None),
    }
    for name, width in (("q_proj", 2 * q if gated else q), ("k_proj", kv), ("v_proj", kv)):
        tensors[f"{p}self_attn.{name}.weight"] = ("BF16", [width, h], None)
        if bias:
            tensors[f"{p}self_attn.{name}.bias"] = ("BF16", [width], None)
    tensors[f"{p}self_attn.o_proj.weight"] = ("BF16", [h, q], None)
    return tensors


def _mlp(p: str, width: int, h: int) -> dict:
    """A gated MLP's three projections under prefix `p` (a dense MLP, an expert, a shared one)."""
    return {
        f"{p}gate_proj.weight": ("BF16", [width, h], None),
        f"{p}up_proj.weight": ("BF16", [width, h], None),
        f"{p}down_proj.weight": ("BF16", [h, width], None),
    }


# Draft models of their own (vLLM's method draft_model, SGLang's STANDALONE) and the targets of
# the n-gram rows, from their config.json files: Qwen/Qwen3-0.6B (tied head, q/k norms),
# meta-llama/Llama-3.2-1B-Instruct (tied head, llama3 scaling x32), Qwen/Qwen2.5-Coder-7B-Instruct,
# facebook/opt-6.7b and facebook/opt-125m (OPT: learned positions, tied head, 2048 positions)
QWEN3_06B = rs.TargetShape(
    "qwen3-0.6b", "Qwen3ForCausalLM", "qwen3", 1024, 3072, 28, 16, 8, 151936, 151645,
    rope_theta=1000000.0,
    extra={"max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "bos_token_id": 151643,
           "tie_word_embeddings": True},
)  # fmt: skip
QWEN3_17B = rs.TargetShape(**dict(
    vars(QWEN3_06B), name="qwen3-1.7b", hidden=2048, intermediate=6144))  # fmt: skip
# Qwen's FP8 releases (tests/oracle_table.py _QWEN3_FP8_PUBLISHED): the bf16 config with this
QWEN3_FP8 = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
             "weight_block_size": [128, 128]}  # fmt: skip
QWEN3_06B_FP8 = rs.TargetShape(**dict(vars(QWEN3_06B), name="qwen3-0.6b-fp8", extra=dict(
    QWEN3_06B.extra, quantization_config=QWEN3_FP8)))  # fmt: skip
QWEN3_17B_FP8 = rs.TargetShape(**dict(vars(QWEN3_17B), name="qwen3-1.7b-fp8", extra=dict(
    QWEN3_17B.extra, quantization_config=QWEN3_FP8)))  # fmt: skip
QWEN3_4B_THINKING = rs.TargetShape(**dict(
    vars(QWEN3_06B), name="qwen3-4b-thinking-2507", hidden=2560, intermediate=9728, layers=36,
    heads=32, rope_theta=5000000.0,
    extra=dict(QWEN3_06B.extra, max_position_embeddings=262144)))  # fmt: skip
LLAMA32_1B_INSTRUCT = rs.TargetShape(
    "llama-3.2-1b-instruct", "LlamaForCausalLM", "llama", 2048, 8192, 16, 32, 8, 128256,
    [128001, 128008, 128009], head_dim=64,
    extra={"bos_token_id": 128000, "tie_word_embeddings": True, "rope_scaling": {
        "rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}},
)  # fmt: skip
SMOLLM2_135M_INSTRUCT = rs.TargetShape(
    "smollm2-135m-instruct", "LlamaForCausalLM", "llama", 576, 1536, 30, 9, 3, 49152, 2,
    head_dim=64, rope_theta=100000.0,
    extra={"max_position_embeddings": 8192, "bos_token_id": 1, "tie_word_embeddings": True},
)  # fmt: skip
QWEN25_CODER_7B = rs.TargetShape(
    "qwen2.5-coder-7b-instruct", "Qwen2ForCausalLM", "qwen2", 3584, 18944, 28, 28, 4, 152064,
    151645, rope_theta=1000000.0,
    extra={"max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "bos_token_id": 151643},
)  # fmt: skip


def opt_config(hidden: int, ffn: int, layers: int, heads: int) -> dict:
    return {"architectures": ["OPTForCausalLM"], "model_type": "opt", "hidden_size": hidden,
            "ffn_dim": ffn, "num_hidden_layers": layers, "num_attention_heads": heads,
            "vocab_size": 50272, "max_position_embeddings": 2048, "word_embed_proj_dim": hidden,
            "do_layer_norm_before": True, "activation_function": "relu", "bos_token_id": 2,
            "eos_token_id": 2, "pad_token_id": 1, "torch_dtype": "float16",
            "tie_word_embeddings": True}  # fmt: skip


OPT_67B = opt_config(4096, 16384, 32, 32)


def _language_model(shape: rs.TargetShape) -> tuple[dict, dict]:
    """A whole Llama-style model (Llama, Qwen2's q/k/v bias, Qwen3's q/k norms): the draft a
    draft-model method loads as a model of its own; a tied head has no lm_head tensor."""
    config, h = shape.config(), shape.hidden
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    tensors = _embedding_and_head(shape)
    if config.get("tie_word_embeddings"):
        del tensors["lm_head.weight"]
    for i in range(shape.layers):
        p = f"model.layers.{i}."
        tensors |= _attention(p, h, q, kv, bias=shape.model_type == "qwen2")
        tensors |= _mlp(f"{p}mlp.", shape.intermediate, h)
        if shape.model_type == "qwen3":
            for norm in ("q_norm", "k_norm"):
                tensors[f"{p}self_attn.{norm}.weight"] = ("BF16", [shape.head_dim], None)
    if "quantization_config" in config:  # Qwen's FP8 releases: bf16 scales
        tensors = _fp8_blocks(tensors, scale="BF16")
    return config, tensors


# JackFram/llama-68m and llama-160m (vLLM's V0 e2e tests' target and draft), as their
# config.json files write them (huggingface.co/JackFram/llama-68m config.json; llama-160m's
# revisions agree on these keys and differ in bos and kv heads, which are left out)
LLAMA_68M = rs.TargetShape(
    "llama-68m", "LlamaForCausalLM", "llama", 768, 3072, 2, 12, 12, 32000, 2, head_dim=64,
    extra={"max_position_embeddings": 2048, "rms_norm_eps": 1e-6, "torch_dtype": "float32",
           "bos_token_id": 0, "pad_token_id": 1},
)  # fmt: skip
LLAMA_160M = replace(LLAMA_68M, name="llama-160m", layers=12,
                     extra={k: v for k, v in LLAMA_68M.extra.items()
                            if k not in ("bos_token_id", "pad_token_id")})  # fmt: skip


# Qwen/Qwen2.5-7B-Instruct (Qwen2.5-Coder-7B-Instruct's widths) and Qwen2.5-1.5B-Instruct, as
# SGLang's docs pair them for STANDALONE: one tokenizer, embeddings padded to 152064 and 151936
QWEN25_7B_INSTRUCT = replace(QWEN25_CODER_7B, name="qwen2.5-7b-instruct")
QWEN25_15B_INSTRUCT = rs.TargetShape(
    "qwen2.5-1.5b-instruct", "Qwen2ForCausalLM", "qwen2", 1536, 8960, 28, 12, 2, 151936, 151645,
    rope_theta=1000000.0, extra={"max_position_embeddings": 32768, "rms_norm_eps": 1e-6,
                                 "bos_token_id": 151643, "tie_word_embeddings": True},
)  # fmt: skip
# the structured-output tests' n-gram targets: Ministral-8B-Instruct-2410 (its config.json writes
# a 32768 sliding window over its 32768 positions) and DeepSeek-R1-Distill-Qwen-1.5B (Qwen2.5-Math-
# 1.5B's widths, rope_theta 10000, an untied head; its sliding_window 4096 is off:
# use_sliding_window false)
MINISTRAL_8B_INSTRUCT = rs.TargetShape(
    "ministral-8b-instruct-2410", "MistralForCausalLM", "mistral", 4096, 12288, 36, 32, 8, 131072,
    2, rope_theta=100000000.0, extra={"max_position_embeddings": 32768, "sliding_window": 32768,
                                   "bos_token_id": 1},
)  # fmt: skip
R1_DISTILL_QWEN_15B = rs.TargetShape(
    "deepseek-r1-distill-qwen-1.5b", "Qwen2ForCausalLM", "qwen2", 1536, 8960, 28, 12, 2, 151936,
    151643, rope_theta=10000.0,
    extra={"max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "bos_token_id": 151643,
           "sliding_window": 4096, "use_sliding_window": False, "max_window_layers": 21},
)  # fmt: skip
# builds whose target and draft ship the same tokenizer (Qwen2.5's 151643 base tokens)
SHARED_TOKENIZER = {"draft-qwen25-1.5b-for-7b": 151643}


def _jackfram(shape: rs.TargetShape) -> dict:
    """The shape's config without the keys JackFram's files do not write (transformers then
    derives them: head_dim 64, 12 kv heads, rope_theta 10000)."""
    config = shape.config()
    for key in ("head_dim", "num_key_value_heads", "rope_theta"):
        del config[key]
    return config


def _jackfram_draft(shape: rs.TargetShape) -> tuple[dict, dict]:
    return _jackfram(shape), _language_model(shape)[1]


def _opt(config: dict) -> tuple[dict, dict]:
    """OPTForCausalLM as transformers saves it (model.decoder.*; the head tied to the embedding,
    positions learned with OPT's offset of 2)."""
    h, ffn, p = config["hidden_size"], config["ffn_dim"], "model.decoder."
    tensors = {f"{p}embed_tokens.weight": ("F16", [config["vocab_size"], h], None),
               f"{p}embed_positions.weight": ("F16", [config["max_position_embeddings"] + 2, h],
                                             None),
               f"{p}final_layer_norm.weight": ("F16", [h], None),
               f"{p}final_layer_norm.bias": ("F16", [h], None)}  # fmt: skip
    for i in range(config["num_hidden_layers"]):
        layer = f"{p}layers.{i}."
        for name, shape in (("self_attn.q_proj", [h, h]), ("self_attn.k_proj", [h, h]),
                            ("self_attn.v_proj", [h, h]), ("self_attn.out_proj", [h, h]),
                            ("fc1", [ffn, h]), ("fc2", [h, ffn])):
            tensors[f"{layer}{name}.weight"] = ("F16", shape, None)
            tensors[f"{layer}{name}.bias"] = ("F16", shape[:1], None)
        for norm in ("self_attn_layer_norm", "final_layer_norm"):
            tensors[f"{layer}{norm}.weight"] = ("F16", [h], None)
            tensors[f"{layer}{norm}.bias"] = ("F16", [h], None)
    return config, tensors


# distilbert/distilgpt2's config.json (GPT2LMHeadModel: 6 layers of 768 over 12 heads, vocab
# 50257, 1024 learned positions as n_positions, bos and eos 50256, no tie_word_embeddings key:
# tied), as public copies of it print it (transformers 4.5's dump, "_name_or_path": "distilgpt2")
DISTILGPT2 = {
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
    "n_layer": 6, "n_embd": 768, "n_head": 12, "n_inner": None, "n_ctx": 1024,
    "n_positions": 1024, "vocab_size": 50257, "bos_token_id": 50256, "eos_token_id": 50256,
    "layer_norm_epsilon": 1e-05, "initializer_range": 0.02, "attn_pdrop": 0.1, "embd_pdrop": 0.1,
    "resid_pdrop": 0.1, "_num_labels": 1,
}


def _gpt2(config: dict) -> tuple[dict, dict]:
    """GPT2LMHeadModel as transformers names its tensors (transformer.*; Conv1D weights stored
    in x out; the head tied to wte, so not saved)."""
    h, p = config["n_embd"], "transformer."
    tensors = {f"{p}wte.weight": ("F32", [config["vocab_size"], h], None),
               f"{p}wpe.weight": ("F32", [config["n_positions"], h], None),
               f"{p}ln_f.weight": ("F32", [h], None), f"{p}ln_f.bias": ("F32", [h], None)}
    for i in range(config["n_layer"]):
        layer = f"{p}h.{i}."
        for name, shape in (("attn.c_attn", [h, 3 * h]), ("attn.c_proj", [h, h]),
                            ("mlp.c_fc", [h, 4 * h]), ("mlp.c_proj", [4 * h, h])):
            tensors[f"{layer}{name}.weight"] = ("F32", shape, None)
            tensors[f"{layer}{name}.bias"] = ("F32", shape[1:], None)
        for norm in ("ln_1", "ln_2"):
            tensors[f"{layer}{norm}.weight"] = ("F32", [h], None)
            tensors[f"{layer}{norm}.bias"] = ("F32", [h], None)
    return config, tensors


OLMO2_1B = rs.TargetShape(
    "olmo-2-0425-1b-instruct", "Olmo2ForCausalLM", "olmo2", 2048, 8192, 16, 16, 16, 100352,
    100257, head_dim=128, rope_theta=500000.0,
    extra={"max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "pad_token_id": 100277,
           "bos_token_id": None, "attention_bias": False},
)  # fmt: skip


def _olmo2(shape: rs.TargetShape) -> tuple[dict, dict]:
    """Olmo2ForCausalLM as transformers names its tensors: q/k norms over the whole projection
    and the norms after attention and after the MLP (no input_layernorm)."""
    config, h = shape.config(), shape.hidden
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    tensors = _embedding_and_head(shape)
    for i in range(shape.layers):
        p = f"model.layers.{i}."
        tensors |= {n: v for n, v in _attention(p, h, q, kv).items()
                    if "input_layernorm" not in n}  # fmt: skip
        tensors |= _mlp(f"{p}mlp.", shape.intermediate, h)
        tensors[f"{p}self_attn.q_norm.weight"] = ("BF16", [q], None)
        tensors[f"{p}self_attn.k_norm.weight"] = ("BF16", [kv], None)
        tensors[f"{p}post_feedforward_layernorm.weight"] = ("BF16", [h], None)
    return config, tensors


def _embedding_and_head(target: rs.TargetShape) -> dict:
    """The target's embedding, final norm and head, which an MTP draft shares or reads."""
    return {
        "model.embed_tokens.weight": ("BF16", [target.vocab, target.hidden], None),
        "model.norm.weight": ("BF16", [target.hidden], None),
        "lm_head.weight": ("BF16", [target.vocab, target.hidden], None),
    }


def _mimo_in_target(target: rs.TargetShape = MIMO_7B) -> tuple[dict, dict]:
    """The MiMo checkpoint as its MTP draft reads it: `model.mtp_layers.0.` (the fusion norms
    token_layernorm/hidden_layernorm over [embeds, hidden], input_proj without bias, one
    Qwen2 decoder layer with q/k/v bias, final_layernorm: vLLM 0.10.1.1
    model_executor/models/mimo_mtp.py:55-66, 241-254; SGLang 0.4.6.post5 srt/models/
    mimo_mtp.py:189-206), the embedding and the head (vLLM :231-232)."""
    h, kv, mlp = target.hidden, target.kv_heads * target.head_dim, target.intermediate
    p = "model.mtp_layers.0."
    tensors = {
        f"{p}token_layernorm.weight": ("BF16", [h], None),
        f"{p}hidden_layernorm.weight": ("BF16", [h], None),
        f"{p}input_proj.weight": ("BF16", [h, 2 * h], None),
        f"{p}final_layernorm.weight": ("BF16", [h], None),
        **_attention(p, h, h, kv, bias=True),
        **_mlp(f"{p}mlp.", mlp, h),
        **_embedding_and_head(target),
    }  # fmt: skip
    return target.config(), tensors


# zai-org/GLM-4.5 config.json as published (355B MoE: 92 layers and one MTP layer, 96 heads, 8 kv
# heads, head_dim 128, partial RoPE 0.5, 160 routed experts, 8 active, the first 3 layers
# dense, q/k/v bias, qk-norm); not re-read offline: the values as the model card gives them
GLM45 = rs.TargetShape(
    "glm-4.5", "Glm4MoeForCausalLM", "glm4_moe", 5120, 12288, 92, 96, 8, 151552,
    [151329, 151336, 151338], rope_theta=1000000.0,
    extra={"max_position_embeddings": 131072, "partial_rotary_factor": 0.5,
           "n_routed_experts": 160, "n_shared_experts": 1, "num_experts_per_tok": 8,
           "moe_intermediate_size": 1536, "first_k_dense_replace": 3, "n_group": 1,
           "topk_group": 1, "norm_topk_prob": True, "routed_scaling_factor": 2.5,
           "num_nextn_predict_layers": 1, "attention_bias": True, "use_qk_norm": True,
           "pad_token_id": 151329},
)  # fmt: skip


def _glm45_in_target(target: rs.TargetShape = GLM45, experts: int = 8) -> tuple[dict, dict]:
    """The GLM-4.5 checkpoint as its MTP draft reads it: layer 92 (`eh_proj` over [embeds,
    hidden], `enorm`, `hnorm`, `shared_head.norm`, one MoE decoder layer; vLLM 0.10.1.1
    model_executor/models/glm4_moe_mtp.py), the embedding and the head; `experts` of the 160
    written (no check reads the rest)."""
    h, hd, moe = target.hidden, target.head_dim, target.extra["moe_intermediate_size"]
    q, kv = target.heads * hd, target.kv_heads * hd
    p = f"model.layers.{target.layers}."
    tensors = {
        f"{p}eh_proj.weight": ("BF16", [h, 2 * h], None),
        f"{p}enorm.weight": ("BF16", [h], None),
        f"{p}hnorm.weight": ("BF16", [h], None),
        f"{p}shared_head.norm.weight": ("BF16", [h], None),
        **_attention(p, h, q, kv, bias=True),
        f"{p}self_attn.q_norm.weight": ("BF16", [hd], None),
        f"{p}self_attn.k_norm.weight": ("BF16", [hd], None),
        f"{p}mlp.gate.weight": ("BF16", [target.extra["n_routed_experts"], h], None),
        f"{p}mlp.gate.e_score_correction_bias": ("F32", [target.extra["n_routed_experts"]],
                                                 None),
        **_mlp(f"{p}mlp.shared_experts.", moe, h),
        **_embedding_and_head(target),
    }  # fmt: skip
    for e in range(experts):
        tensors.update(_mlp(f"{p}mlp.experts.{e}.", moe, h))
    return target.config(), tensors


# Qwen/Qwen3-Next-80B-A3B-Instruct config.json. vLLM's own record of it (tests/config/
# base_model_arch_groundtruth.json@v0.20.2:189-205) fixes the widths every check reads: hidden
# 2048, 48 layers, 16 heads of 256, 2 kv heads, vocab 151936, 512 experts, bfloat16. The rest as
# third-party copies of the published file agree (not re-read offline): intermediate 5120, experts
# of 512 with 10 active and a shared expert of 512, Gated DeltaNet heads 16 x 128 keys and
# 32 x 128 values, full attention every 4th layer, RoPE 1e7 over a quarter of each head,
# 262144 positions. The config declares no num_nextn_predict_layers: the MTP layer ships as
# `mtp.*` tensors that both engines read without it.
QWEN3_NEXT_80B = rs.TargetShape(
    "qwen3-next-80b-a3b", "Qwen3NextForCausalLM", "qwen3_next", 2048, 5120, 48, 16, 2, 151936,
    151645, head_dim=256, rope_theta=10000000.0,
    extra={"max_position_embeddings": 262144, "rms_norm_eps": 1e-6, "bos_token_id": 151643,
           "partial_rotary_factor": 0.25, "full_attention_interval": 4,
           "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
           "linear_value_head_dim": 128, "linear_num_value_heads": 32,
           "decoder_sparse_step": 1, "mlp_only_layers": [], "num_experts": 512,
           "num_experts_per_tok": 10, "moe_intermediate_size": 512,
           "shared_expert_intermediate_size": 512, "norm_topk_prob": True,
           "hidden_act": "silu", "attention_dropout": 0.0, "router_aux_loss_coef": 0.001,
           "output_router_logits": False},
)  # fmt: skip


def _qwen_mtp_attention(h: int, hd: int, heads: int, kv_heads: int) -> dict:
    """Qwen3-Next's and Qwen3.5's MTP layer up to its MLP: `mtp.fc` over [embedding, hidden],
    the two pre-fc norms and `mtp.norm`, and `mtp.layers.0.`'s gated attention (q_proj twice
    the heads' width: the query and its output gate) with q/k norms."""
    p = "mtp.layers.0."
    return {
        "mtp.fc.weight": ("BF16", [h, 2 * h], None),
        "mtp.pre_fc_norm_embedding.weight": ("BF16", [h], None),
        "mtp.pre_fc_norm_hidden.weight": ("BF16", [h], None),
        "mtp.norm.weight": ("BF16", [h], None),
        **_attention(p, h, heads * hd, kv_heads * hd, gated=True),
        f"{p}self_attn.q_norm.weight": ("BF16", [hd], None),
        f"{p}self_attn.k_norm.weight": ("BF16", [hd], None),
    }


def _qwen3_next_in_target(target: rs.TargetShape = QWEN3_NEXT_80B,
                          experts: int = 8) -> tuple[dict, dict]:
    """The Qwen3-Next checkpoint as its MTP draft reads it: `mtp.fc`, the two pre-fc norms and
    `mtp.norm`, one gated-attention MoE layer `mtp.layers.0.` (q_proj twice the heads' width: the
    query and its output gate; q/k norms; a shared expert with its gate), the embedding and the
    head (SGLang 0.5.22 srt/models/qwen3_next_mtp.py:36-65, qwen3_next.py:1117-1127; vLLM 0.11.1
    model_executor/models/qwen3_next_mtp.py); `experts` of the 512 written."""
    h, hd, moe = target.hidden, target.head_dim, target.extra["moe_intermediate_size"]
    shared, routed = target.extra["shared_expert_intermediate_size"], target.extra["num_experts"]
    p = "mtp.layers.0."
    tensors = {
        **_qwen_mtp_attention(h, hd, target.heads, target.kv_heads),
        f"{p}mlp.gate.weight": ("BF16", [routed, h], None),
        **_mlp(f"{p}mlp.shared_expert.", shared, h),
        f"{p}mlp.shared_expert_gate.weight": ("BF16", [1, h], None),
        **_embedding_and_head(target),
    }  # fmt: skip
    for e in range(experts):
        tensors.update(_mlp(f"{p}mlp.experts.{e}.", moe, h))
    return target.config(), tensors


# baidu/ERNIE-4.5-21B-A3B-PT config.json. vLLM's own record of it (tests/config/
# base_model_arch_groundtruth.json@v0.20.2) fixes hidden 2560, 28 layers, 20 heads of 128 over 4
# kv heads, vocab 103424, 64 experts, bfloat16; transformers' Ernie4_5_MoeConfig, whose
# defaults its docstring calls that model's (transformers 4.57.1 configuration_ernie4_5_moe.py),
# gives the rest: intermediate 12288, experts of 1536 with 6 active and 2 shared from layer 1,
# RoPE 500000 over 131072 positions, tied embeddings, no bias, eos 2. One MTP layer: vLLM reads
# num_nextn_predict_layers without a default (0.11.1 model_executor/models/ernie_mtp.py:95),
# and the registry's example starts it.
ERNIE45_21B_A3B = rs.TargetShape(
    "ernie-4.5-21b-a3b", "Ernie4_5_MoeForCausalLM", "ernie4_5_moe", 2560, 12288, 28, 20, 4,
    103424, 2, rope_theta=500000.0,
    extra={"rms_norm_eps": 1e-5, "tie_word_embeddings": True, "use_bias": False,
           "bos_token_id": 1, "pad_token_id": 0, "moe_intermediate_size": 1536, "moe_k": 6,
           "moe_num_experts": 64, "moe_num_shared_experts": 2, "moe_layer_start_index": 1,
           "moe_layer_interval": 1, "num_nextn_predict_layers": 1, "hidden_act": "silu"},
)  # fmt: skip


def _ernie45_in_target(target: rs.TargetShape = ERNIE45_21B_A3B) -> tuple[dict, dict]:
    """The ERNIE-4.5 checkpoint as its MTP draft reads it: the fusion norms and projection
    `model.mtp_emb_norm.0`, `mtp_hidden_norm.0`, `mtp_linear_proj.0` (no bias) and one dense
    Llama decoder layer `model.mtp_block.0.` (vLLM 0.11.1 model_executor/models/ernie_mtp.py:
    56-61, 258-278), the embedding (the head is tied to it)."""
    h, q, kv = target.hidden, target.heads * target.head_dim, target.kv_heads * target.head_dim
    p = "model.mtp_block.0."
    tensors = {
        "model.mtp_emb_norm.0.weight": ("BF16", [h], None),
        "model.mtp_hidden_norm.0.weight": ("BF16", [h], None),
        "model.mtp_linear_proj.0.weight": ("BF16", [h, 2 * h], None),
        **_attention(p, h, q, kv),
        **_mlp(f"{p}mlp.", target.intermediate, h),
        "model.embed_tokens.weight": ("BF16", [target.vocab, h], None),
        "model.norm.weight": ("BF16", [h], None),
    }  # fmt: skip
    return target.config(), tensors


# Qwen/Qwen3.5-0.8B(-Base): a Qwen3_5ForConditionalGeneration whose text model is a hybrid of
# Gated DeltaNet and gated full attention. Its widths as a pinned copy records them (NVIDIA
# Model-Optimizer's puzzletron config for Qwen/Qwen3.5-0.8B at hf_revision 2fc06364: hidden 1024,
# 24 layers with full attention every 4th, 8 heads of 256 over 2 kv heads, intermediate 3584,
# vocab 248320, tied embeddings, 262144 positions, one MTP layer, DeltaNet 16 key and 16 value
# heads of 128, conv 4); the family's other text_config settings as Qwen3.6-27B's published
# config.json writes them (RoPE 1e7 over a quarter of each head, interleaved M-RoPE [11, 11, 10],
# rms_norm_eps 1e-6, attn_output_gate, bos and eos 248044). The Base model is the same shape.
QWEN35_08B_TEXT = {
    "model_type": "qwen3_5_text", "hidden_size": 1024, "intermediate_size": 3584,
    "num_hidden_layers": 24, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256,
    "vocab_size": 248320, "tie_word_embeddings": True, "max_position_embeddings": 262144,
    "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": False,
    "full_attention_interval": 4,
    "layer_types": ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(24)],
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 16, "linear_value_head_dim": 128, "mamba_ssm_dtype": "float32",
    "attn_output_gate": True, "output_gate_type": "swish", "attention_bias": False,
    "hidden_act": "silu", "rms_norm_eps": 1e-6, "partial_rotary_factor": 0.25,
    "rope_parameters": {"mrope_interleaved": True, "mrope_section": [11, 11, 10],
                        "partial_rotary_factor": 0.25, "rope_theta": 10000000,
                        "rope_type": "default"},
    "bos_token_id": 248044, "eos_token_id": 248044, "dtype": "bfloat16",
}  # fmt: skip


def qwen35_config(text: dict = QWEN35_08B_TEXT) -> dict:
    """The Qwen3_5ForConditionalGeneration wrapper around the text model's config."""
    return {
        "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
        "text_config": dict(text), "tie_word_embeddings": text["tie_word_embeddings"],
        "image_token_id": 248056, "video_token_id": 248057, "vision_start_token_id": 248053,
        "vision_end_token_id": 248054,
        "vision_config": {"model_type": "qwen3_5", "hidden_size": 768,
                          "out_hidden_size": text["hidden_size"], "patch_size": 16,
                          "spatial_merge_size": 2, "temporal_patch_size": 2,
                          "deepstack_visual_indexes": []},
    }  # fmt: skip


def _qwen35_in_target(text: dict = QWEN35_08B_TEXT) -> tuple[dict, dict]:
    """The Qwen3.5 checkpoint as its MTP draft reads it: the language model's embedding (tied
    head) and the `mtp.*` tensors, one gated full-attention layer with a dense MLP (vLLM 0.21.0
    model_executor/models/qwen3_5_mtp.py: `mtp.` loads as `model.`, the embedding from
    `language_model.`)."""
    h, hd = text["hidden_size"], text["head_dim"]
    tensors = {
        "model.language_model.embed_tokens.weight": ("BF16", [text["vocab_size"], h], None),
        "model.language_model.norm.weight": ("BF16", [h], None),
        **_qwen_mtp_attention(h, hd, text["num_attention_heads"], text["num_key_value_heads"]),
        **_mlp("mtp.layers.0.mlp.", text["intermediate_size"], h),
    }  # fmt: skip
    if not text["tie_word_embeddings"]:
        tensors["lm_head.weight"] = ("BF16", [text["vocab_size"], h], None)
    return qwen35_config(text), tensors


def qwen3_vl_moe_fp8_config() -> dict:
    config = qwen3_vl_config(QWEN3_VL_30B_A3B_TEXT)
    config["model_type"] = "qwen3_vl_moe"
    config["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3",
                                     "activation_scheme": "dynamic",
                                     "weight_block_size": [128, 128]}  # fmt: skip
    return config


def _speculator(target: rs.TargetShape, verifier: str) -> tuple[dict, dict]:
    config = rs.speculators_eagle3_config(target, verifier)
    config["speculators_config"]["verifier"]["architectures"] = [target.architecture]
    return config, rs.speculators_eagle3_tensors(target)


# build key -> (target shape, (draft config, draft tensors))
BUILDS = {
    "eagle1-llama2-7b": lambda: (LLAMA2_7B_CHAT, _eagle1(LLAMA2_7B_CHAT, "LlamaForCausalLMEagle")),
    "eagle3-llama31-8b-sglang": lambda: (LLAMA31_8B_INSTRUCT, _eagle3(
        LLAMA31_8B_INSTRUCT, "LlamaForCausalLMEagle3", EAGLE3_AUTHORS_CONTEXT)),
    "eagle3-qwen3-30b-a3b": lambda: (rs.QWEN3_30B_A3B, _eagle3(
        rs.QWEN3_30B_A3B, "LlamaForCausalLMEagle3")),
    "mtp-dsv3-nextn": lambda: (rs.DEEPSEEK_V3, (rs.nextn_config(), rs.nextn_tensors(experts=8))),
    # the target checkpoint itself: what the draft loads from it (layer 61, embedding, head)
    "mtp-dsv3-in-target": lambda: (rs.DEEPSEEK_V3, _mtp_in_target(rs.DEEPSEEK_V3)),
    "eagle3-kimi-k25": lambda: (rs.kimi_k25_config(), _eagle3_kimi_k25()),
    "mtp-dsv32-in-target": lambda: (DEEPSEEK_V32, _mtp_in_target(DEEPSEEK_V32)),
    "mtp-dsv3-4l-fp8-vllm": lambda: (DEEPSEEK_V3_4L, _mtp_in_target(DEEPSEEK_V3_4L)),
    "medusa-llama-68m": lambda: (_jackfram(LLAMA_68M), _medusa()),
    "mtp-dsv3-fp8-in-target": lambda: (DEEPSEEK_V3_FP8, _mtp_in_target(DEEPSEEK_V3_FP8)),
    "mtp-dsv32-fp8-in-target": lambda: (DEEPSEEK_V32_FP8, _mtp_in_target(DEEPSEEK_V32_FP8)),
    "eagle1-llama31-8b-vllm": lambda: (LLAMA31_8B_INSTRUCT, _eagle1(
        LLAMA31_8B_INSTRUCT, "LlamaForCausalLM")),
    "eagle3-llama31-8b-vllm": lambda: (LLAMA31_8B_INSTRUCT, _eagle3(
        LLAMA31_8B_INSTRUCT, "LlamaForCausalLM", EAGLE3_AUTHORS_CONTEXT)),
    "eagle3-qwen3-8b-vllm": lambda: (QWEN3_8B, _eagle3(QWEN3_8B, "LlamaForCausalLM")),
    "eagle3-qwen3-1.7b-vllm": lambda: (QWEN3_17B, _eagle3(QWEN3_17B, "LlamaForCausalLM")),
    # the Llama-3.1 speculator served on Llama-3-8B-Instruct, as vLLM's eagle.md shows it
    "speculators-llama31-8b-on-llama3-8b": lambda: (LLAMA3_8B_INSTRUCT, _speculator(
        LLAMA31_8B_INSTRUCT, "meta-llama/Llama-3.1-8B-Instruct")),
    "target-only-llama3-8b": lambda: (LLAMA3_8B_INSTRUCT, None),
    "speculators-llama31-8b": lambda: (LLAMA31_8B_INSTRUCT, _speculator(
        LLAMA31_8B_INSTRUCT, "meta-llama/Llama-3.1-8B-Instruct")),
    "speculators-qwen3-8b": lambda: (QWEN3_8B, _speculator(QWEN3_8B, "Qwen/Qwen3-8B")),
    "speculators-llama32-1b": lambda: (LLAMA32_1B_INSTRUCT, _speculator(
        LLAMA32_1B_INSTRUCT, "meta-llama/Llama-3.2-1B-Instruct")),
    "speculators-gpt-oss-20b": lambda: (GPT_OSS_20B, _speculator(
        GPT_OSS_20B, "openai/gpt-oss-20b")),
    "eagle1-llama4-scout-vllm": lambda: (LLAMA4_SCOUT, _eagle1_llama4()),
    "eagle1-llama3-8b-sglang": lambda: (LLAMA3_8B_INSTRUCT, _eagle1(
        LLAMA3_8B_INSTRUCT, "LlamaForCausalLMEagle")),
    "eagle3-qwen3-vl-8b-vllm": lambda: (qwen3_vl_config(), _eagle3(
        QWEN3_VL_8B_TEXT, "LlamaForCausalLMEagle3")),
    "eagle3-qwen25-vl-7b-vllm": lambda: (QWEN25_VL_7B, _eagle3(
        QWEN25_VL_7B, "LlamaForCausalLMEagle3")),
    "speculators-qwen3-vl-30b-a3b": lambda: (qwen3_vl_moe_fp8_config(), _speculator(
        QWEN3_VL_30B_A3B_TEXT, "Qwen/Qwen3-VL-30B-A3B-Instruct-FP8")),
    "eagle1-deepseek-v3-random-vllm": lambda: (DEEPSEEK_V3_RANDOM, _eagle1_deepseek()),
    "eagle1-vicuna-7b-vllm": lambda: (VICUNA_7B, _eagle1(VICUNA_7B, "LlamaForCausalLM")),
    "eagle1-llama2-7b-vllm": lambda: (LLAMA2_7B_CHAT, _eagle1(LLAMA2_7B_CHAT, "LlamaForCausalLM")),
    "eagle1-llama3-8b-vllm": lambda: (LLAMA3_8B_INSTRUCT, _eagle1(
        LLAMA3_8B_INSTRUCT, "LlamaForCausalLM")),
    "mtp-mimo-7b-in-target": lambda: (MIMO_7B, _mimo_in_target()),
    "mtp-glm45-in-target": lambda: (GLM45, _glm45_in_target()),
    "mtp-qwen3-next-in-target": lambda: (QWEN3_NEXT_80B, _qwen3_next_in_target()),
    "mtp-ernie45-in-target": lambda: (ERNIE45_21B_A3B, _ernie45_in_target()),
    # no draft checkpoint: a method that drafts without a model (n-gram, suffix) has the
    # target's config only
    "target-only-opt-6.7b": lambda: (OPT_67B, None),
    "target-only-qwen3-8b": lambda: (QWEN3_8B, None),
    "target-only-qwen25-coder-7b": lambda: (QWEN25_CODER_7B, None),
    "target-only-llama31-8b": lambda: (LLAMA31_8B_INSTRUCT, None),
    "target-only-llama-68m": lambda: (_jackfram(LLAMA_68M), None),
    "target-only-qwen25-7b": lambda: (QWEN25_7B_INSTRUCT, None),
    "target-only-qwen25-1.5b": lambda: (QWEN25_15B_INSTRUCT, None),
    "target-only-ministral-8b": lambda: (MINISTRAL_8B_INSTRUCT, None),
    "target-only-r1-distill-qwen-1.5b": lambda: (R1_DISTILL_QWEN_15B, None),
    "draft-qwen25-1.5b-for-7b": lambda: (QWEN25_7B_INSTRUCT, _language_model(QWEN25_15B_INSTRUCT)),
    "target-only-llama-160m": lambda: (_jackfram(LLAMA_160M), None),
    "draft-llama-68m-self": lambda: (_jackfram(LLAMA_68M), _jackfram_draft(LLAMA_68M)),
    "draft-llama-68m-for-160m": lambda: (_jackfram(LLAMA_160M), _jackfram_draft(LLAMA_68M)),
    "draft-llama-160m-for-68m": lambda: (_jackfram(LLAMA_68M), _jackfram_draft(LLAMA_160M)),
    "draft-llama-68m-for-llama2-7b": lambda: (LLAMA2_7B_CHAT, _jackfram_draft(LLAMA_68M)),
    "draft-qwen3-0.6b-for-1.7b": lambda: (QWEN3_17B, _language_model(QWEN3_06B)),
    "mtp-qwen35-0.8b-in-target": lambda: (qwen35_config(), _qwen35_in_target()),
    "draft-qwen3-0.6b-for-1.7b-fp8": lambda: (QWEN3_17B_FP8, _language_model(QWEN3_06B)),
    "draft-qwen3-0.6b-fp8-for-1.7b": lambda: (QWEN3_17B, _language_model(QWEN3_06B_FP8)),
    "draft-qwen3-0.6b-for-4b-thinking": lambda: (QWEN3_4B_THINKING, _language_model(QWEN3_06B)),
    "draft-opt-125m": lambda: (OPT_67B, _opt(opt_config(768, 3072, 12, 12))),
    "draft-qwen3-0.6b": lambda: (QWEN3_8B, _language_model(QWEN3_06B)),
    "draft-qwen3-0.6b-self": lambda: (QWEN3_06B, _language_model(QWEN3_06B)),
    "target-only-qwen3-0.6b": lambda: (QWEN3_06B, None),
    "target-only-opt-125m": lambda: (opt_config(768, 3072, 12, 12), None),
    "draft-distilgpt2-self": lambda: (DISTILGPT2, _gpt2(dict(DISTILGPT2))),
    "draft-olmo2-1b-self": lambda: (OLMO2_1B, _olmo2(OLMO2_1B)),
    "draft-llama-68m-for-llama32-1b": lambda: (LLAMA32_1B_INSTRUCT, _jackfram_draft(LLAMA_68M)),
    "draft-llama32-1b": lambda: (LLAMA31_8B_INSTRUCT, _language_model(LLAMA32_1B_INSTRUCT)),
    "draft-smollm2-135m": lambda: (QWEN3_8B, _language_model(SMOLLM2_135M_INSTRUCT)),
    **{key: (lambda shape=shape: (shape, _eagle1(shape, "LlamaForCausalLM")))
       for key, shape in (("eagle1-vicuna-13b-vllm", VICUNA_13B),
                          ("eagle1-vicuna-33b-vllm", VICUNA_33B),
                          ("eagle1-llama2-13b-vllm", LLAMA2_13B_CHAT),
                          ("eagle1-llama2-70b-vllm", LLAMA2_70B_CHAT),
                          ("eagle1-llama3-70b-vllm", LLAMA3_70B_INSTRUCT))},
}


def plant_absolute_d2t(tensors: dict) -> dict:
    """d2t holding target ids instead of offsets (tests/test_conformance.py d2t-absolute)."""
    dtype, shape, data = tensors["d2t"]
    offsets = rs.np.frombuffer(data, dtype="<i8")
    absolute = offsets + rs.np.arange(len(offsets), dtype="<i8")
    return dict(tensors, d2t=(dtype, shape, absolute.astype("<i8").tobytes()))


def _launch(config: Config, target: Path, draft: Path) -> str:
    line = _launch_line(config, target, draft)
    for full, given in config.spelled.items():  # the cited launch's own spelling of a flag
        line = line.replace(f"{full} ", f"{given} ")
    return line


def _launch_line(config: Config, target: Path, draft: Path) -> str:
    if config.engine == "sglang":
        # the CI's MTP test names the draft by argparse's prefix of --speculative-draft-model-path
        flag = "--speculative-draft" if config.fmt == "MTP" else "--speculative-draft-model-path"
        given = f"{flag} {draft} " if config.draft else ""  # none: the target's own MTP layer
        return (f"python -m sglang.launch_server --model-path {target} --speculative-algorithm "
                f"{config.algorithm} {given}{config.flags}")  # fmt: skip
    if config.launch == "serve-speculator":
        return f"vllm serve {draft} {config.flags}"
    spec = {"model": str(draft), **config.spec} if config.draft else dict(config.spec)
    if not config.algorithm.startswith("("):
        spec = {"method": config.algorithm, **spec}
    if config.launch == "spec-flags":  # vLLM 0.22.0 on: a flag for each of the three keys
        words = [f"--{flag} {spec.pop(key)}" for flag, key in SPEC_FLAGS if key in spec]
        if spec:
            words.append(f"--speculative-config {json.dumps(spec)}")
        return f"vllm serve {target} {' '.join(words)} {config.flags}"
    return f"vllm serve {target} --speculative-config {json.dumps(spec)} {config.flags}"


# vLLM 0.22.0 vllm/engine/arg_utils.py:1463-1466 adds them; create_speculative_config writes each
# into the speculative config (:1668-1681), ValueError when the JSON has the key too
SPEC_FLAGS = (("spec-method", "method"), ("spec-model", "model"),
              ("spec-tokens", "num_speculative_tokens"))


def build(root: Path, config: Config, monkeypatch, plant: bool = False) -> dict:
    """The box for one configuration: the playbook variables a user would pass."""
    shape, draft = BUILDS[config.build]()
    # each in a folder named as its repo, as a download keeps it (vLLM derives the method from
    # the draft's name when the launch gives none: the docs' EAGLE example)
    name = config.target.split(" ")[0].rsplit("/", 1)[-1]
    if draft is None:  # a method without a draft model: the target's config is all there is
        target = rs.write_target(root / name, shape)
        return {"args": _launch(config, target, target), "draft": "", "target_path": str(target),
                "vocab_audit_skipped": "the method drafts without a model: no draft to name",
                "model_free": True}  # fmt: skip
    draft_config, tensors = draft
    if plant:
        tensors = plant_absolute_d2t(tensors)
    if not config.draft or config.draft == config.target:  # the target's checkpoint is the draft
        target = draft = rs.write_checkpoint(root / name, draft_config, tensors)
        if config.draft:  # named as the draft too
            return {"args": _launch(config, target, draft), "draft": str(draft),
                    "target_path": str(target)}  # fmt: skip
        return {"args": _launch(config, target, draft), "draft": "", "target_path": str(target)}
    target = rs.write_target(root / name, shape)
    draft = rs.write_checkpoint(root / config.draft.rsplit("/", 1)[-1], draft_config, tensors)
    if config.launch == "serve-speculator":
        # `vllm serve SPECULATOR`: the verifier is a hub repo id, found in the box's hub cache
        verifier = draft_config["speculators_config"]["verifier"]["name_or_path"]
        hub_cache(root / "hf", verifier, target)
        monkeypatch.setenv("HF_HOME", str(root / "hf"))
        shutil.rmtree(target)
    if config.build in SHARED_TOKENIZER:
        vocab = {f"t{i}": i for i in range(SHARED_TOKENIZER[config.build])}
        rs.write_tokenizer(target, vocab)
        rs.write_tokenizer(draft, vocab)
    variables = {"args": _launch(config, target, draft), "draft": str(draft),
                 "target_path": str(target)}  # fmt: skip
    if config.spec.get("use_heterogeneous_vocab"):
        # vocab-audit takes no launch line: that the launch gives the draft its own vocabulary
        # is read by spec-audit's vocab step (inside diagnose), and by vocab-audit from a server
        variables["vocab_audit_skipped"] = "the launch's use_heterogeneous_vocab is not its input"
    return variables


def judge(variables: dict, roots: str) -> dict:
    """diagnose --no-probe (its spec-audit outcome too) and vocab-audit of one box."""
    given = {"args": variables["args"], "roots": roots, "search_home": "false"}
    if variables["draft"]:
        given["draft"] = variables["draft"]
    with open_session(ConnectOptions(host="local", timeout=120)) as session:
        found = diagnose_host(Remote(session), "", given, probe=False)
    diagnosis, outcome = found["diagnosis"], found["outcome"]
    target = variables["target_path"] if Path(variables["target_path"]).is_dir() else ""
    # vocab-audit names the draft (the target's checkpoint where the target carries it); a
    # method without a draft model has none to name, and is not audited (diagnose says why)
    draft = variables["draft"] or variables["target_path"]
    model_free = bool(variables.get("model_free"))
    skipped = variables.get("vocab_audit_skipped")
    vocab = ({"verdict": "not run", "errors": [], "inconclusive": []} if skipped
             else vocab_audit(dict(variables, draft=draft, target_path=target), roots))
    return {
        "model_free": model_free,
        "vocab_audit_skipped": skipped,
        "no_draft_model_said": "no-draft-model" in {f["id"] for f in outcome.findings},
        "diagnose": diagnosis.verdict,
        "diagnose_errors": sorted({c.id for c in diagnosis.causes if c.severity == ERROR}),
        "diagnose_unknown": [u.get("reason") or str(u) for u in diagnosis.unknown],
        "spec_audit": outcome.verdict,
        "spec_audit_errors": sorted({f["id"] for f in outcome.findings if f["severity"] == ERROR}),
        "spec_audit_error_titles": sorted(f["title"] for f in outcome.findings
                                          if f["severity"] == ERROR),
        "spec_audit_inconclusive": list(outcome.inconclusive),
        "spec_audit_warnings": sorted({f["id"] for f in outcome.findings
                                       if f["severity"] == WARNING}),
        "vocab_audit": vocab["verdict"],
        "vocab_audit_errors": vocab["errors"],
        "vocab_audit_inconclusive": vocab["inconclusive"],
    }


def clean(got: dict) -> bool:
    """No error, nothing inconclusive; a method without a draft model is said to be one (and
    searched for no checkpoint: one found on the box would be a stranger's)."""
    vocab = "not run" if got["vocab_audit_skipped"] else "ok"
    return (got["diagnose"], got["spec_audit"], got["vocab_audit"]) == ("ok", "ok", vocab) and (
        got["no_draft_model_said"] is got["model_free"]) and not (
        got["diagnose_errors"] or got["spec_audit_errors"] or got["vocab_audit_errors"]
        or got["diagnose_unknown"] or got["spec_audit_inconclusive"]
        or got["vocab_audit_inconclusive"]
    )  # fmt: skip


def _root(config: Config, version: str) -> str:
    """The release's venv (a table release as release() has it), with what the row's engine
    needs beside it installed (Config.beside)."""
    if config.beside:
        return str(sweep_release_with(config.engine, version, config.beside).venv)
    return str(sweep_release(config.engine, version).venv)


def _failures(tmp_path: Path, monkeypatch, cases: list[tuple[Config, str]]) -> list[str]:
    failures = []
    for config, version in cases:
        root = tmp_path / f"{config.id}-{version}"
        got = judge(build(root, config, monkeypatch), _root(config, version))
        if not clean(got):
            failures.append(f"{config.id} on {config.engine} {version} "
                            f"({release_cite(config, version)}): {got}")  # fmt: skip
    return failures


BY_ID = {c.id: c for c in CONFIGS}
# one row per draft format, on a release of the table (downloaded by the rest of the suite)
FAST = [
    ("sglang-eagle1-llama2-7b", "0.5.23"),
    ("sglang-eagle3-llama31-8b-lmsys", "0.5.23"),
    ("sglang-mtp-dsv3-nextn", "0.5.6"),
    ("sglang-mtp-dsv3-in-target", "0.5.23"),  # no draft path: the target's own MTP layer
    ("vllm-eagle3-llama31-8b", "0.10.1.1"),
    ("vllm-speculators-llama31-8b", "0.33.0"),
    ("vllm-eagle1-llama3-8b", "0.33.0"),  # the docs' form: no method, derived from the name
    ("vllm-mtp-dsv3-4layers-fp8", "0.33.0"),  # method mtp, no draft: the target's MTP layer
    ("sglang-docs-qwen3-next-nextn", "0.5.14"),  # --speculative-algo: argparse's prefix
]


@pytest.mark.parametrize("config_id,version", FAST, ids=[f"{c}-{v}" for c, v in FAST])
def test_what_the_engines_ci_runs_is_clean(tmp_path, monkeypatch, config_id, version):
    failures = _failures(tmp_path, monkeypatch, [(BY_ID[config_id], version)])
    assert not failures, "\n".join(failures)


def group_firsts(config: Config) -> list[str]:
    """The first release of each content group (tests/sweep_table.py GROUPS) where it runs."""
    groups = [[v for v in group if v in config.versions] for group in GROUPS[config.engine]]
    return [group[0] for group in groups if group]


def sweep_releases(config: Config) -> list[str]:
    """What the sweep runs a row on: every other group's first release and the row's first and
    last (about half of the 314 runs, within the suite's time budget); every group's with
    REMOTEDBG_ORACLE_FULL=1 (all 314 were run so, README "The engines as the oracle"); every
    release the row runs on with REMOTEDBG_ORACLE_FULL=every (989 runs, docs/releases.md)."""
    if os.environ.get("REMOTEDBG_ORACLE_FULL") == "every":
        return list(config.versions)
    firsts = group_firsts(config)
    if os.environ.get("REMOTEDBG_ORACLE_FULL") == "1":
        return firsts
    if config.once:  # a later row: one release in the sweep (oracle_table.Config.once)
        return firsts[-1:]
    return list(dict.fromkeys(firsts[::2] + firsts[-1:]))


@pytest.mark.sweep
@pytest.mark.parametrize("config", CONFIGS, ids=[c.id for c in CONFIGS])
def test_catalog_is_clean_on_every_group(tmp_path, monkeypatch, config):
    failures = _failures(tmp_path, monkeypatch, [(config, v) for v in sweep_releases(config)])
    assert not failures, "\n".join(failures)


PLANTED = [("vllm-eagle3-llama31-8b", "0.33.0"), ("sglang-eagle3-llama31-8b-lmsys", "0.5.23"),
           ("vllm-speculators-qwen3-8b", "0.33.0"),
           ("vllm-speculators-gpt-oss-20b", "0.33.0")]  # fmt: skip


@pytest.mark.parametrize("config_id,version", PLANTED, ids=[f"{c}-{v}" for c, v in PLANTED])
def test_a_planted_absolute_d2t_is_still_caught(tmp_path, monkeypatch, config_id, version):
    config = BY_ID[config_id]
    variables = build(tmp_path, config, monkeypatch, plant=True)
    got = judge(variables, _root(config, version))
    assert (got["diagnose"], got["spec_audit"], got["vocab_audit"]) == ("defect",) * 3, got
    assert "d2t-absolute-ids" in got["diagnose_errors"], got
    assert "d2t-absolute-ids" in got["vocab_audit_errors"], got


# A draft model of another family (Llama-3.2-1B's 128256 ids for Qwen3-8B's 151936), on the
# rows' launches, and what each release does with it, from its code: vLLM 0.9.2's V0 asserts
# equal sizes (spec_decode/spec_decode_worker.py:1260); V1 raises ValueError (0.15.0
# config/speculative.py:679-697), use_heterogeneous_vocab honoured from 0.25.0 only (:1185-1186);
# SGLang's STANDALONE raises from 0.5.15 (standalone_worker_v2.py:215-245) and checks nothing
# before (0.5.6 standalone_worker.py), so the Llama ids are verified as Qwen's.
OTHER_VOCAB = [
    ("vllm-draft-model-qwen3-0.6b", "0.9.2", {}, True),
    ("vllm-draft-model-qwen3-0.6b", "0.33.0", {}, True),
    ("vllm-draft-model-qwen3-0.6b", "0.20.0", {"use_heterogeneous_vocab": True}, True),
    ("vllm-draft-model-qwen3-0.6b", "0.33.0", {"use_heterogeneous_vocab": True}, False),
    ("sglang-standalone-llama32-1b", "0.5.6", {}, True),
    ("sglang-standalone-llama32-1b", "0.5.23", {}, True),
]


@pytest.mark.parametrize("config_id,version,settings,caught", OTHER_VOCAB,
                         ids=[f"{c}-{v}-{'+'.join(s) or 'plain'}"
                              for c, v, s, _ in OTHER_VOCAB])  # fmt: skip
def test_a_draft_model_of_another_vocabulary_is_caught(tmp_path, monkeypatch, config_id,
                                                      version, settings, caught):  # fmt: skip
    row, key = BY_ID[config_id], f"other-vocab-{config_id}"
    monkeypatch.setitem(BUILDS, key, lambda: (QWEN3_8B, _language_model(LLAMA32_1B_INSTRUCT)))
    config = replace(row, build=key, target="Qwen/Qwen3-8B", spec=dict(row.spec, **settings))
    got = judge(build(tmp_path, config, monkeypatch), _root(config, version))
    if caught:
        assert (got["diagnose"], got["spec_audit"]) == ("defect", "defect"), got
        assert "draft-model-vocab" in got["diagnose_errors"], got
    else:
        assert (got["diagnose"], got["spec_audit"]) == ("ok", "ok"), got
        assert not got["diagnose_errors"] and not got["diagnose_unknown"], got


def test_an_ngram_launch_judges_no_draft_found_on_the_box(tmp_path, monkeypatch):
    """n-gram drafts without a model, so no checkpoint is searched for: a broken EAGLE-3 draft in
    the user's home (where spec-audit searches when the launch names none) is not judged as the
    server's (it was: DEFECT d2t-absolute-ids for vLLM's own docs example)."""
    home = tmp_path / "home"
    _shape, (config, tensors) = BUILDS["eagle3-llama31-8b-vllm"]()
    rs.write_checkpoint(home / "stranger-eagle3", config, plant_absolute_d2t(tensors))
    monkeypatch.setenv("HOME", str(home))
    row = BY_ID["vllm-ngram-qwen3-8b"]
    got = judge(build(tmp_path / "box", row, monkeypatch), _root(row, "0.33.0"))
    assert clean(got), got


def test_a_launch_naming_no_speculation_judges_no_draft_found_on_the_box(tmp_path, monkeypatch):
    """A launch given with --var args that names no speculative algorithm and no draft has no
    draft: a broken EAGLE-3 head in the user's home is not searched for and judged as its own
    (it was: DEFECT d2t-absolute-ids, fc-shape-mismatch, for SGLang's docs launch of Qwen3-Next
    with --speculative-algo, before that prefix was read)."""
    home = tmp_path / "home"
    _shape, (config, tensors) = BUILDS["eagle3-llama31-8b-vllm"]()
    rs.write_checkpoint(home / "stranger-eagle3", config, plant_absolute_d2t(tensors))
    monkeypatch.setenv("HOME", str(home))
    row = BY_ID["sglang-mtp-qwen3-next-80b"]
    variables = build(tmp_path / "box", row, monkeypatch)
    variables["args"] = variables["args"].replace("--speculative-algorithm NEXTN ", "")
    got = judge(variables, _root(row, "0.5.14"))
    assert got["diagnose"] == "inconclusive" and not got["diagnose_errors"], got
    assert any("names no speculative algorithm and no draft" in reason
               for reason in got["diagnose_unknown"]), got  # fmt: skip
    # said once: audit-drafts does not add its own "no draft checkpoint to audit" beside it
    assert got["spec_audit_inconclusive"] == got["diagnose_unknown"][:1], got
    assert len(got["diagnose_unknown"]) == 1, got


# A suffix launch each release cannot serve, from its code: 0.11.0 has no method suffix
# (config/speculative.py:32-35); from 0.11.1 SpeculativeConfig raises ImportError when
# arctic-inference is not importable (0.11.1 :465-468; 0.33.0 :1727-1730: the rows' docs say to
# install it, so here the venv has none) and ValueError for a setting out of its range (0.11.1
# :478-498; 0.33.0 :1740-1760).
SUFFIX_REFUSED = [
    ("vllm-suffix-opt-6.7b", "0.11.0", {}, True),
    ("vllm-suffix-opt-6.7b", "0.11.1", {}, False),
    ("vllm-suffix-llama31-8b", "0.33.0", {}, False),
    ("vllm-suffix-serve-settings", "0.20.0", {"suffix_decoding_min_token_prob": 1.5}, True),
    ("vllm-suffix-llama31-8b", "0.11.1", {"suffix_decoding_max_tree_depth": 0}, True),
]


@pytest.mark.parametrize("config_id,version,settings,arctic", SUFFIX_REFUSED,
                         ids=[f"{c}-{v}-{'+'.join(s) or ('arctic' if a else 'no-arctic')}"
                              for c, v, s, a in SUFFIX_REFUSED])  # fmt: skip
def test_a_suffix_launch_the_release_refuses_is_said(tmp_path, monkeypatch, config_id, version,
                                                     settings, arctic):  # fmt: skip
    row = BY_ID[config_id]
    config = replace(row, spec=dict(row.spec, **settings), beside=row.beside if arctic else ())
    got = judge(build(tmp_path, config, monkeypatch), _root(config, version))
    assert (got["diagnose"], got["diagnose_errors"]) == ("defect", ["draft-settings"]), got
    assert (got["spec_audit"], got["spec_audit_errors"]) == ("defect", ["draft-settings"]), got


REFUSED = [(entry, version) for entry in ENGINE_REFUSES
           for version in dict.fromkeys((entry[1][0], entry[1][-1]))]  # fmt: skip


@pytest.mark.parametrize("entry,version", REFUSED,
                         ids=[f"{e[0]}-{v}" for e, v in REFUSED])  # fmt: skip
def test_what_the_docs_show_and_the_release_refuses_is_said(tmp_path, monkeypatch, entry,
                                                            version):  # fmt: skip
    """vLLM 0.8.5's docs serve yuhuili/EAGLE-LLaMA3-Instruct-8B without num_speculative_tokens;
    vLLM 0.10.0 to 0.16.0 keep the docs' draft-model example with no method, which they do not
    serve (oracle_table.ENGINE_REFUSES): each refuses at start, and the error is the engine's
    own, on the first and last release of its range."""
    config_id, _versions, finding, _why, spec = entry
    config = BY_ID[config_id] if spec is None else replace(BY_ID[config_id], spec=spec)
    got = judge(build(tmp_path, config, monkeypatch), _root(config, version))
    findings = sorted([finding] if isinstance(finding, str) else finding)
    assert (got["diagnose"], got["diagnose_errors"]) == ("defect", findings), got
    assert not got["diagnose_unknown"], got


# ------------------------------------------------------------------ the table against the releases


def _test_utils(version: str) -> str:
    return (sweep_release("sglang", version).package / "test" / "test_utils.py").read_text()


def _sglang_names(config: Config, text: str) -> bool:
    """The release's test_utils.py assigns the row's draft repo to one of its constant names."""
    repo = config.draft or config.target  # no draft: the target carries it
    return any(f'{name} = "{repo}"' in text for name in config.constant.split("|"))


# rows whose draft the release's test_utils.py names (the FR-Spec row's test names it literally)
SGLANG_ROWS = [c for c in CONFIGS if c.engine == "sglang" and c.constant]


@pytest.mark.parametrize("version", [v for e, v in RELEASES if e == "sglang"])
def test_sglang_rows_are_what_the_release_s_ci_names(version):
    text = _test_utils(version)
    for config in SGLANG_ROWS:
        assert _sglang_names(config, text) is (version in config.versions), (config.id, version)


@pytest.mark.sweep
def test_every_release_s_ci_names_its_rows():
    """Every SGLang release of the sweep names exactly the rows that list it (its own
    test_utils.py), and every vLLM release's source archive names each row's draft repo at the
    cited file (0.15.0 and 0.15.1 have no archive)."""
    wrong = []
    for version in SWEEP_VERSIONS["sglang"]:
        text = _test_utils(version)
        wrong += [(c.id, version) for c in SGLANG_ROWS
                  if _sglang_names(c, text) is not (version in c.versions)]  # fmt: skip
    for version in SWEEP_VERSIONS["vllm"]:
        archive = cache_dir() / "sdists" / f"vllm-{version}.tar.gz"
        sweep_release("vllm", version)  # downloads the archive where the registry has one
        if not archive.is_file():
            continue
        wanted = {}  # archive member -> the rows citing it
        for config in (c for c in CONFIGS if c.engine == "vllm" and version in c.versions):
            path = release_cite(config, version).split(" ", 1)[1].rsplit(":", 1)[0]
            wanted.setdefault(f"vllm-{version}/{path}", []).append(config)
        with tarfile.open(archive) as tar:  # one pass: a gzip stream has no random access
            for member in tar:
                for config in wanted.pop(member.name, []):
                    if named(config) not in tar.extractfile(member).read().decode():
                        wrong.append((config.id, version, member.name))
        wrong += [(c.id, version, name) for name, rows in wanted.items() for c in rows]
    assert not wrong, wrong


def registry_examples(text: str) -> dict[str, tuple[str, str]]:
    """tests/models/registry.py's speculative examples: architecture -> (the example's model,
    its speculative_model or speculative_method); those with neither start no speculation."""
    found = {}
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and any(getattr(t, "id", "") == "_SPECULATIVE_DECODING_EXAMPLE_MODELS"
                        for t in node.targets)):  # fmt: skip
            continue
        for key, call in zip(node.value.keys, node.value.values, strict=True):
            words = {k.arg: k.value.value for k in call.keywords
                     if isinstance(k.value, ast.Constant)}  # fmt: skip
            draft = words.get("speculative_model") or words.get("speculative_method")
            if draft:
                model = call.args[0].value if call.args else ""
                found[key.value] = (model, draft)
    return found


@pytest.mark.sweep
def test_every_speculative_example_of_vllm_s_registry_is_a_row_or_a_gap():
    """Each speculative example of the newest archived release's tests/models/registry.py is a
    row (the same draft repo, on the same target or named as its own) or a gap that says why
    (oracle_table.REGISTRY_NOT_BUILT), never both, and no gap names an example that is gone."""
    sweep_release("vllm", REGISTRY_VERSION)
    archive = cache_dir() / "sdists" / f"vllm-{REGISTRY_VERSION}.tar.gz"
    with tarfile.open(archive) as tar:
        member = tar.extractfile(f"vllm-{REGISTRY_VERSION}/tests/models/registry.py")
        examples = registry_examples(member.read().decode())
    rows = {(c.target.split(" ")[0], c.draft) for c in CONFIGS
            if c.engine == "vllm" and REGISTRY_VERSION in c.versions}  # fmt: skip
    drafts = {draft for _, draft in rows}
    built = {arch for arch, (model, draft) in examples.items()
             if (model, draft) in rows or (model == draft and draft in drafts)}
    assert not built & set(REGISTRY_NOT_BUILT), built & set(REGISTRY_NOT_BUILT)
    assert set(examples) == built | set(REGISTRY_NOT_BUILT), (
        sorted(set(examples) - built - set(REGISTRY_NOT_BUILT)),
        sorted(set(REGISTRY_NOT_BUILT) - set(examples)))


def test_every_row_is_cited_and_every_gap_says_why():
    for config in CONFIGS:
        refused = {entry[0] for entry in ENGINE_REFUSES}
        assert config.cite and config.published and (config.versions or config.id in refused), \
            config.id
        assert config.build in BUILDS, config.id
        for version in config.versions:
            assert release_cite(config, version), (config.id, version)
    for row in NOT_BUILT:
        assert len(row) == 6 and all(row), row


@pytest.mark.parametrize("config_id,version,where,on_llama", [
    ("vllm-mtp-mimo-7b-base", "0.33.0", "config/speculative.py:711 hf_config_override", True),
    ("sglang-mtp-mimo-7b-rl", "0.5.23", "srt/configs/model_config.py:1015-1211 (ModelConfig)",
     True),
    ("vllm-mtp-qwen3-next-80b", "0.10.1.1", "config/__init__.py:2009 hf_config_override", False),
    ("sglang-mtp-qwen3-next-80b", "0.5.1", "srt/configs/model_config.py:126-141 (ModelConfig)",
     False),
])  # fmt: skip
def test_an_mtp_launch_on_a_target_without_an_mtp_layer_is_not_judged(
    tmp_path, monkeypatch, config_id, version, where, on_llama
):
    """`method: mtp` (vLLM) or EAGLE/NEXTN with no draft path (SGLang) on a target the release
    renames to no draft class, so what would be loaded as the draft is not known: inconclusive,
    naming that code, never ok and no error. Llama-3.1-8B: no release has a branch for it
    (vLLM 0.33.0 config/speculative.py:711-1000, SGLang 0.5.23 srt/configs/model_config.py:
    1015-1211). Qwen3-Next before its class (vLLM 0.10.2 and SGLang 0.5.2 add
    qwen3_next_mtp.py): vLLM's was a false algorithm-mismatch, "an EAGLE-1/2 head"."""
    config = BY_ID[config_id]
    if on_llama:
        shape = LLAMA31_8B_INSTRUCT
        tensors = {"model.embed_tokens.weight": ("BF16", [shape.vocab, shape.hidden], None),
                   "lm_head.weight": ("BF16", [shape.vocab, shape.hidden], None)}  # fmt: skip
        built = (shape, (shape.config(), tensors))
        monkeypatch.setitem(BUILDS, "llama-as-its-own-draft", lambda: built)
        config = replace(config, build="llama-as-its-own-draft",
                         target="meta-llama/Llama-3.1-8B-Instruct")  # fmt: skip
    got = judge(build(tmp_path, config, monkeypatch), _root(config, version))
    assert got["diagnose"] == "inconclusive" and not got["diagnose_errors"], got
    assert any(where in reason and "no draft architecture" in reason
               for reason in got["diagnose_unknown"]), got  # fmt: skip


# A Medusa head for JackFram/llama-68m, as vLLM's own ground truth for the registry example's
# draft gives it (tests/config/draft_model_arch_groundtruth.json@v0.32.0: MedusaModel, model_type
# medusa, hidden 768, 1 layer, vocab 32000, float32) with the 5 heads the V0 test names
# (tests/spec_decode/e2e/test_medusa_correctness.py@v0.8.5:36-38, "num_heads in the config.json");
# the tensors as vLLM's Medusa class loads them (model_executor/models/medusa.py: blocks.{i}.
# layers.{j}.weight, lm_heads.{i}.weight; no bias: medusa_fc_bias defaults to False), `width` the
# residual layers' for a head trained on another target; `old`: FasterDecoding's key layout
# ({head}.{layer}.linear.weight, {head}.{N}.weight) and config keys (medusa_num_heads,
# medusa_num_layers), which vLLM remaps from 0.25.0 (Medusa._remap_old_checkpoint_key).
def _medusa(width: int = 768, old: bool = False) -> tuple[dict, dict]:
    config = {"architectures": ["MedusaModel"], "model_type": "medusa", "hidden_size": width,
              "vocab_size": 32000, "num_heads": 5, "num_hidden_layers": 1,
              "torch_dtype": "float32"}  # fmt: skip
    if old:
        config = {"medusa_num_heads": 5, "medusa_num_layers": 1, "hidden_size": width}
    tensors = {}
    for i in range(5):
        layer, head = ((f"{i}.0.linear.weight", f"{i}.1.weight") if old
                       else (f"blocks.{i}.layers.0.weight", f"lm_heads.{i}.weight"))  # fmt: skip
        tensors[layer] = ("F32", [width, width], None)
        tensors[head] = ("F32", [32000, width], None)
    return config, tensors


# vLLM builds one Medusa head per speculative token (MedusaConfig.num_lookahead_tokens sets
# num_heads: 0.8.5 config.py:2407-2411, transformers_utils/configs/medusa.py:60-62) and its
# loader refuses a parameter nothing fills, unquantized (0.8.5 model_executor/model_loader/
# loader.py:463-469; 0.32.0 default_loader.py:560-567); the heads read the target's last hidden
# state (v1/spec_decode/medusa.py:49). 0.8.5 serves Medusa on V0 (no v1/spec_decode/medusa.py);
# 0.33.0 removed it (SpeculativeMethod, config/speculative.py:74-82).
@pytest.mark.parametrize("version", ["0.8.5", "0.10.1.1", "0.32.0"])
@pytest.mark.parametrize("case,tokens,width,errors,title", [
    ("fits", 5, 768, [], ""),
    ("more-tokens-than-heads", 6, 768, ["required-weights-missing"],
     "num_speculative_tokens 6 asks for 6 Medusa heads; the checkpoint has 5"),
    ("another-target", 3, 1024, ["fc-shape-mismatch"],
     "the Medusa heads take 1024 inputs, the target's hidden states are 768 wide"),
])  # fmt: skip
def test_medusa_heads_are_judged_as_vllm_builds_them(tmp_path, monkeypatch, version, case,
                                                     tokens, width, errors, title):  # fmt: skip
    monkeypatch.setitem(BUILDS, "medusa-stand-in", lambda: (_jackfram(LLAMA_68M), _medusa(width)))
    config = replace(BY_ID["vllm-registry-medusa-llama-68m"], versions=(version,),
                     build="medusa-stand-in", algorithm="medusa",
                     spec={"num_speculative_tokens": tokens})  # fmt: skip
    got = judge(build(tmp_path, config, monkeypatch), _root(config, version))
    if not errors:
        assert clean(got), got
        return
    assert got["diagnose"] == "defect" and got["diagnose_errors"] == errors, got
    assert got["spec_audit_error_titles"] == [title], got


@pytest.mark.parametrize("version,clean_here", [("0.24.0", False), ("0.25.0", True)])
def test_fasterdecoding_s_medusa_layout_is_read_where_vllm_remaps_it(
    tmp_path, monkeypatch, version, clean_here
):
    """vLLM's own acceptance test serves FasterDecoding/medusa-vicuna-7b-v1.3 with method medusa
    (tests/v1/e2e/spec_decode/acceptance_rates/mtp_other/test_medusa.py@v0.32.0:21-38); its
    config names no model_type and omits vocab_size; from 0.25.0 method medusa injects
    model_type medusa and the target's vocab_size (config/speculative.py:783-789, 823-832) and
    the class remaps its key layout (model_executor/models/medusa.py _remap_old_checkpoint_key);
    before, transformers' AutoConfig cannot detect the config and the server stops at start."""
    monkeypatch.setitem(BUILDS, "medusa-old", lambda: (_jackfram(LLAMA_68M), _medusa(old=True)))
    config = replace(BY_ID["vllm-registry-medusa-llama-68m"], versions=(version,),
                     build="medusa-old", algorithm="medusa",
                     spec={"num_speculative_tokens": 3})  # fmt: skip
    got = judge(build(tmp_path, config, monkeypatch), _root(config, version))
    if clean_here:
        assert clean(got), got
        return
    assert got["diagnose"] == "defect" and got["diagnose_errors"] == ["draft-arch-unsupported"]
    assert got["spec_audit_error_titles"] == [
        "the Medusa config names no model_type: vLLM 0.24.0 cannot read it"], got


def test_medusa_on_a_release_that_removed_it_is_said(tmp_path, monkeypatch):
    config = replace(BY_ID["vllm-registry-medusa-llama-68m"], versions=("0.33.0",),
                     algorithm="medusa")  # fmt: skip
    got = judge(build(tmp_path, config, monkeypatch), _root(config, "0.33.0"))
    assert got["diagnose"] == "defect" and "algorithm-mismatch" in got["diagnose_errors"], got
    assert "vLLM 0.33.0 has no Medusa" in got["spec_audit_error_titles"], got
    assert ("vLLM 0.33.0 cannot read the draft's config (model_type medusa)"
            in got["spec_audit_error_titles"]), got


# An MLP speculator (IBM's accelerators; vLLM's MLPSpeculatorConfig model_type mlp_speculator)
# for JackFram/llama-160m: a stand-in of its kind (its config.json is not known offline).
def _mlp_speculator() -> tuple[dict, dict]:
    config = {"architectures": ["MLPSpeculatorPreTrainedModel"], "model_type": "mlp_speculator",
              "emb_dim": 768, "inner_dim": 1024, "vocab_size": 32000, "n_predict": 3}  # fmt: skip
    tensors = {f"emb.{i}.weight": ("F32", [32000, 1024], None) for i in range(3)}
    return config, tensors


# where the release takes method mlp_speculator from the draft's model_type (0.8.5 config.py:
# 2384-2386), which V0 serves up to 0.9.2 (spec_decode/mlp_speculator_worker.py; 0.9.2
# engine/arg_utils.py falls back to V0 for it); V1's runner refuses it from 0.10.0 (0.10.0
# v1/worker/gpu_model_runner.py:193-194, 0.32.0 :658-661: "Unknown speculative decoding method")
def _mlp_config(version: str) -> Config:
    return Config(
        "vllm-mlp-speculator-llama-160m", "vllm", "MLP speculator", "JackFram/llama-160m",
        "ibm-ai-platform/llama-160m-accelerator", "(none: mlp_speculator from the model_type)",
        "", "vllm-project/vllm tests/spec_decode/e2e/test_mlp_correctness.py", (version,),
        "mlp-speculator", "a stand-in MLP speculator", spec={"num_speculative_tokens": 3},
    )


def test_a_draft_kind_without_rules_is_said_unknown_never_judged_as_another(
    tmp_path, monkeypatch
):
    """vLLM's V0 test of the MLP speculator ({model ibm-ai-platform/llama-160m-accelerator}, no
    method: tests/spec_decode/e2e/test_mlp_correctness.py@v0.8.5:40-76). remotedbg has no rules
    for the kind, so it says so (inconclusive, no error), never judges it as another."""
    monkeypatch.setitem(BUILDS, "mlp-speculator", lambda: (_jackfram(LLAMA_160M),
                                                           _mlp_speculator()))  # fmt: skip
    got = judge(build(tmp_path, _mlp_config("0.8.5"), monkeypatch), _root(_mlp_config("0.8.5"),
                                                                          "0.8.5"))  # fmt: skip
    assert got["diagnose"] == "inconclusive" and not got["diagnose_errors"], got
    assert any("method 'mlp_speculator' (SpeculativeConfig: the draft config's model_type "
               "mlp_speculator (config.py:2384)), a draft kind remotedbg has no rules for" in reason
               for reason in got["diagnose_unknown"]), got  # fmt: skip


@pytest.mark.parametrize("version,errors,title", [
    ("0.10.1.1", ["algorithm-mismatch"], "vLLM 0.10.1.1 does not serve the MLP speculator"),
    ("0.32.0", ["algorithm-mismatch"], "vLLM 0.32.0 does not serve the MLP speculator"),
    # 0.33.0 registers no mlp_speculator config (transformers_utils/config.py:122)
    ("0.33.0", ["draft-arch-unsupported"],
     "vLLM 0.33.0 cannot read the draft's config (model_type mlp_speculator)"),
])  # fmt: skip
def test_the_mlp_speculator_where_vllm_no_longer_serves_it_is_said(
    tmp_path, monkeypatch, version, errors, title
):
    """vLLM's docs and examples keep showing IBM's accelerators to 0.32.0 (docs/features/
    speculative_decoding/mlp.md@v0.18.0:16; examples/offline_inference/mlpspeculator.py), which
    every release from 0.10.0 refuses at start: said, an error, whatever the kind's rules."""
    monkeypatch.setitem(BUILDS, "mlp-speculator", lambda: (_jackfram(LLAMA_160M),
                                                           _mlp_speculator()))  # fmt: skip
    config = _mlp_config(version)
    got = judge(build(tmp_path, config, monkeypatch), _root(config, version))
    assert got["diagnose"] == "defect" and got["diagnose_errors"] == errors, got
    assert got["spec_audit_error_titles"] == [title], got


# vLLM 0.22.0 added --spec-method, --spec-model and --spec-tokens (vllm/engine/arg_utils.py:
# 1463-1466), written into the speculative config by create_speculative_config (:1668-1681),
# which raises ValueError when the --speculative-config JSON has the same key (:1677-1680); its
# own CI launches MTP so (tests/evals/gsm8k/configs/Qwen3.5-397B-A17B-NVFP4-DEP2-MTP.yaml@v0.27.0:
# 12-13). 0.21.0's parser has no such flags (vllm/engine/arg_utils.py: only --speculative-config
# and -sc), so argparse stops the start on them.
@pytest.mark.parametrize("row", ["vllm-eagle3-llama31-8b", "vllm-ngram-qwen3-8b",
                                 "vllm-mtp-dsv3-4layers-fp8"])
@pytest.mark.parametrize("version", ["0.22.0", "0.32.0"])
def test_vllm_s_settings_flags_are_read_as_the_engine_writes_them(
    tmp_path, monkeypatch, row, version
):
    """A row of the oracle launched with the flags instead of the JSON: as clean as the row."""
    config = replace(BY_ID[row], versions=(version,), launch="spec-flags")
    variables = build(tmp_path, config, monkeypatch)
    assert "--spec-method" in variables["args"] and "--spec-tokens" in variables["args"]
    assert ("--spec-model" in variables["args"]) is bool(BY_ID[row].draft)
    got = judge(variables, _root(config, version))
    assert clean(got), got


def test_vllm_s_settings_flags_before_0_22_or_given_twice_stop_the_start(tmp_path, monkeypatch):
    config = replace(BY_ID["vllm-eagle3-llama31-8b"], launch="spec-flags")
    variables = build(tmp_path / "old", config, monkeypatch)
    got = judge(variables, _root(config, "0.21.0"))
    assert got["diagnose"] == "defect" and got["diagnose_errors"] == ["draft-settings"], got
    assert got["spec_audit_error_titles"] == [
        "--spec-method: vLLM 0.21.0 has no such flag and refuses to start"], got
    variables = build(tmp_path / "twice", config, monkeypatch)
    given = '{"max_model_len": 2048}'
    assert given in variables["args"]
    variables["args"] = variables["args"].replace(
        given, '{"max_model_len": 2048, "num_speculative_tokens": 3}')
    got = judge(variables, _root(config, "0.22.0"))
    assert got["diagnose"] == "defect" and got["diagnose_errors"] == ["draft-settings"], got
    assert got["spec_audit_error_titles"] == [
        "--spec-tokens and --speculative-config['num_speculative_tokens'] both given: vLLM "
        "refuses to start"], got


@pytest.mark.parametrize("row", ["vllm-gsm8k-deepseek-r1-mtp", "vllm-gsm8k-deepseek-v32-mtp"])
def test_the_gsm8k_configs_data_parallel_copies_are_clean(tmp_path, monkeypatch, row):
    """tests/evals/gsm8k/configs/DeepSeek-R1-DP.yaml and DeepSeek-V3.2-DP.yaml@v0.32.0:9 give
    --data-parallel-size 8 where the TP rows give --tensor-parallel-size 8, the rest the same."""
    config = BY_ID[row]
    assert "--tensor-parallel-size 8" in config.flags
    config = replace(config, flags=config.flags.replace("--tensor-parallel-size 8",
                                                        "--data-parallel-size 8"))
    got = judge(build(tmp_path, config, monkeypatch), _root(config, "0.32.0"))
    assert clean(got), got


# SGLang 0.5.6 reads a deepseek_v32 config that transformers cannot read as DeepSeek-V3's
# (srt/utils/hf_transformers_utils.py:156-183, called at :221-228 under `except ValueError`), and
# only then renames the draft to DeepseekV3ForCausalLMNextN (model_config.py:253-257: there is no
# branch for DeepseekV32ForCausalLM). transformers 4.57.1, the release's pin, has no deepseek_v32
# (no models/deepseek_v32/); 5.12.1 has it (models/deepseek_v32/configuration_deepseek_v32.py).
# 0.5.11 moved the loader: the rewrite in srt/utils/hf_transformers/common.py:317, the call in
# config.py:81-89 (`except (ValueError, KeyError)`), transformers 5.6.0 pinned (no deepseek_v32).
@pytest.mark.parametrize("version,beside,verdict,reason", [
    ("0.5.6", ("transformers",), "ok", ""),
    ("0.5.11", ("transformers",), "ok", ""),
    ("0.5.6", (), "inconclusive", "srt/utils/hf_transformers_utils.py:156 "
     "_load_deepseek_v32_model (called at srt/utils/hf_transformers_utils.py:223)), and no "
     "transformers is beside"),
    ("0.5.6", ("transformers==5.12.1",), "inconclusive", "gives the target's "
     "DeepseekV32ForCausalLM no draft architecture"),
], ids=["pinned-transformers", "pinned-transformers-0.5.11", "no-transformers",
        "transformers-that-reads-it"])  # fmt: skip
def test_a_config_the_loader_rewrites_is_judged_as_the_engine_reads_it(
    tmp_path, monkeypatch, version, beside, verdict, reason
):
    """SGLang's DeepSeek-V3.2 docs launch (EAGLE, no draft: the target's MTP layer) on 0.5.6: with
    the transformers the release pins, the loader's rewrite makes it DeepSeek-V3's and the
    draft is its NextN layer, clean (it was inconclusive, 'no draft architecture', on every
    release before 0.5.12); with no transformers beside, which way it goes is not known and says
    so; with a transformers that reads deepseek_v32 there is no rewrite, and no draft class."""
    config = replace(BY_ID["sglang-docs-dsv32-mtp"], versions=(version,), beside=beside)
    got = judge(build(tmp_path, config, monkeypatch), _root(config, version))
    if verdict == "ok":
        assert clean(got), got
        return
    assert got["diagnose"] == verdict and not got["diagnose_errors"], got
    assert any(reason in r for r in got["diagnose_unknown"]), got


def _with_fc_bias(build_key: str):
    shape, (config, tensors) = BUILDS[build_key]()
    hidden = tensors["fc.weight"][1][0]
    return lambda: (shape, (config, dict(tensors, **{"fc.bias": ("BF16", [hidden], None)})))


# What the engines' own code does with a checkpoint's fc.bias, by how each builds fc:
# - vLLM V1's EAGLE-1 head builds it bias=False (0.8.5 model_executor/models/llama_eagle.py:64-66,
#   0.32.0 :110-113), its EAGLE-3 head too (0.32.0 llama_eagle3.py:242-245); the loaders index
#   params_dict[name] (0.8.5 llama_eagle.py:88-110: KeyError, the server stops at start) until
#   AutoWeightsLoader loads them, which ignores any unexpected `.bias` from 0.25.0 (utils.py:
#   401-402, "typically from GPTQ models"): the bias is dropped with a debug line;
# - SGLang's EAGLE-1 head builds fc with nn.Linear's default bias (0.5.23 srt/models/
#   llama_eagle.py:91): loaded; its EAGLE-3 head builds it bias=getattr(config, "bias", False)
#   from 0.5.x (0.5.23 llama_eagle3.py:163-167), default bias in 0.4.6.post5 (:110-112), and its
#   LlamaForCausalLM.load_weights skips a `.bias` it has no parameter for.
@pytest.mark.parametrize("row,build_key,version,error,warning", [
    ("vllm-eagle1-docs-llama2-7b", "eagle1-llama2-7b-vllm", "0.8.5", "draft-load-fails", None),
    ("vllm-eagle1-docs-llama2-7b", "eagle1-llama2-7b-vllm", "0.24.0", "draft-load-fails", None),
    ("vllm-eagle1-docs-llama2-7b", "eagle1-llama2-7b-vllm", "0.25.0", None, "unexpected-weights"),
    ("vllm-eagle1-docs-llama2-7b", "eagle1-llama2-7b-vllm", "0.33.0", None, "unexpected-weights"),
    ("vllm-eagle3-llama31-8b", "eagle3-llama31-8b-vllm+bias", "0.10.0", "draft-load-fails", None),
    ("vllm-eagle3-llama31-8b", "eagle3-llama31-8b-vllm+bias", "0.32.0", None,
     "unexpected-weights"),
    ("sglang-eagle1-llama2-7b", "eagle1-llama2-7b", "0.5.23", None, None),
    ("sglang-eagle3-llama31-8b-jamesliu1", "eagle3-llama31-8b-sglang+bias", "0.4.6.post5", None,
     None),
    ("sglang-eagle3-llama31-8b-lmsys", "eagle3-llama31-8b-sglang+bias", "0.5.23", None,
     "unexpected-weights"),
])  # fmt: skip
def test_an_eagle1_head_with_fc_bias_is_judged_as_v1_builds_it(
    tmp_path, monkeypatch, row, build_key, version, error, warning
):
    """A head trained with a bias on its fc (the EAGLE authors' Vicuna and LLaMA2-chat heads;
    nn.Linear's default in a trainer) where the release builds fc without one: the release that
    stops at start is said to (draft-load-fails, naming fc.bias), the one that drops the bias
    says so (unexpected-weights); where the release builds the bias, nothing is said."""
    if build_key.endswith("+bias"):
        monkeypatch.setitem(BUILDS, build_key, _with_fc_bias(build_key.removesuffix("+bias")))
    config = replace(BY_ID[row], versions=(version,), build=build_key)
    if not config.spec.get("num_speculative_tokens") and config.engine == "vllm":
        config = replace(config, spec=dict(config.spec, num_speculative_tokens=2))
    got = judge(build(tmp_path, config, monkeypatch), _root(config, version))
    assert not got["diagnose_unknown"] and not got["spec_audit_inconclusive"], got
    if error:
        assert (got["diagnose"], got["diagnose_errors"]) == ("defect", [error]), got
        assert any("fc.bias" in title for title in got["spec_audit_error_titles"]), got
        return
    assert got["diagnose"] == "ok" and not got["diagnose_errors"], got
    assert ("unexpected-weights" in got["spec_audit_warnings"]) is (warning is not None), got


# vLLM's V0 compatibility test (tests/spec_decode/e2e/test_compatibility.py@v0.8.5:10-78) starts
# Llama-3.2-1B-Instruct with JackFram/llama-68m drafting and a speculative max_model_len past a
# limit, and expects ValueError("... cannot be larger than ..."): past the launch's own
# --max-model-len 128, past the draft's 2048 positions, past the target's 131072.
# SpeculativeConfig._maybe_override_draft_max_model_len raises it on every release (0.8.5
# config.py:2454-2479, 0.32.0 config/speculative.py:1633-1662); a length within both is taken.
@pytest.mark.parametrize("version,spec_length,flags,refused", [
    ("0.8.5", 129, "--max-model-len 128", "target's 128"),
    ("0.8.5", 2049, "", "draft's 2048"),
    ("0.8.5", 131073, "", "draft's 2048"),
    ("0.32.0", 2049, "", "draft's 2048"),
    ("0.32.0", 2048, "", None),
], ids=["past-the-launch-s", "past-the-draft-s", "past-both", "past-the-draft-s-0.32",
        "within"])  # fmt: skip
def test_a_speculative_max_model_len_past_a_limit_stops_the_start(
    tmp_path, monkeypatch, version, spec_length, flags, refused
):
    row = BY_ID["vllm-v0-draft-llama-68m-for-llama2-7b"]
    method = {"method": "draft_model"} if version != "0.8.5" else {}
    config = replace(row, target="meta-llama/Llama-3.2-1B-Instruct", flags=flags,
                     build="draft-llama-68m-for-llama32-1b", versions=(version,),
                     spec={"num_speculative_tokens": 5, "max_model_len": spec_length, **method})
    got = judge(build(tmp_path, config, monkeypatch), _root(config, version))
    # the pair's vocabularies differ too (32000 and 128256), which the start never reaches
    assert got["diagnose"] == "defect" and not got["diagnose_unknown"], got
    said = [t for t in got["spec_audit_error_titles"] if "speculative max_model_len" in t]
    if refused is None:
        assert not said, got
        return
    assert "draft-settings" in got["diagnose_errors"], got
    assert len(said) == 1 and refused in said[0], got


@pytest.mark.parametrize("config_id,version,prefix", [
    ("sglang-mtp-dsv3-in-target", "0.5.23", "model.layers.61."),
    ("sglang-mtp-qwen3-next-80b", "0.5.23", "mtp."),
    ("sglang-mtp-mimo-7b-rl", "0.5.23", "model.mtp_layers."),
    ("vllm-mtp-dsv3-4layers-fp8", "0.33.0", "model.layers.4."),
    ("vllm-mtp-glm45-as-its-own-draft", "0.10.1", "model.layers.92."),
    ("vllm-mtp-qwen35-0.8b-base", "0.21.0", "mtp."),
    ("vllm-mtp-qwen3-next-80b", "0.33.0", "mtp."),
])  # fmt: skip
def test_a_target_checkpoint_without_its_mtp_layer_is_a_defect(
    tmp_path, monkeypatch, config_id, version, prefix
):
    """The engines' own MTP launches on a checkpoint exported without the MTP layer (quantized
    and fine-tuned exports often drop it): the draft is built from the target's checkpoint,
    whose loaders take the layer only from these names (vLLM 0.33.0 model_executor/models/
    utils.py:575-600, qwen3_5_mtp.py:303-313, mimo_mtp.py:218; SGLang 0.5.23 deepseek_common/
    deepseek_weight_loader.py:570-577, qwen3_next.py:1173-1184, mimo_mtp.py:185), so nothing
    fills it: vLLM refuses to start (default_loader.py:510-571) or SGLang drafts from
    uninitialised weights. Each came out ok."""
    config = BY_ID[config_id]
    shape, (draft_config, tensors) = BUILDS[config.build]()
    kept = {name: t for name, t in tensors.items() if not name.startswith(prefix)}
    assert len(kept) < len(tensors)
    monkeypatch.setitem(BUILDS, config.build, lambda: (shape, (draft_config, kept)))
    got = judge(build(tmp_path, config, monkeypatch), _root(config, version))
    assert got["diagnose"] == "defect" and got["diagnose_errors"] == ["required-weights-missing"]
    assert any(f"no MTP layer: no tensor under {prefix}" in title
               for title in got["spec_audit_error_titles"]), got  # fmt: skip
