"""Draft checkpoints and target configs with real models' shapes, as sparse files.

Weights are zeros (never written: the file is extended with a hole), so a 1.6 GB Llama-3.1-8B
EAGLE-3 head costs a few hundred KB of disk. `d2t`/`t2d` are written for real, built the way
SpecForge builds them (`specforge/data/preprocessing.py: generate_vocab_mapping_file`): the
`draft_vocab` most frequent target ids, sorted; `d2t[i] = used[i] - i`;
`t2d = isin(arange(V), used)`.

The safetensors header is written here (the format is one little-endian u64 length, a JSON
header, then the bytes); tests open every generated file with the real `safetensors` library
to prove it is valid.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tests.checkpoints import frequent_ids

DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "I64": 8, "BOOL": 1, "F8_E4M3": 1}


@dataclass(frozen=True)
class TargetShape:
    name: str
    architecture: str
    model_type: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    eos: int | list[int]
    head_dim: int = 128
    rope_theta: float = 500000.0
    extra: dict = field(default_factory=dict)

    def config(self) -> dict:
        cfg = {
            "architectures": [self.architecture],
            "model_type": self.model_type,
            "hidden_size": self.hidden,
            "intermediate_size": self.intermediate,
            "num_hidden_layers": self.layers,
            "num_attention_heads": self.heads,
            "num_key_value_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab,
            "eos_token_id": self.eos,
            "rope_theta": self.rope_theta,
            "max_position_embeddings": 131072,
            "rms_norm_eps": 1e-5,
            "torch_dtype": "bfloat16",
            "tie_word_embeddings": False,
        }
        cfg.update(self.extra)
        return cfg


# Llama-3.1-8B-Instruct and Qwen3-8B config.json values; DeepSeek-V3's.
LLAMA31_8B = TargetShape(
    "llama-3.1-8b", "LlamaForCausalLM", "llama", 4096, 14336, 32, 32, 8, 128256,
    [128001, 128008, 128009],
)  # fmt: skip
QWEN3_8B = TargetShape(
    "qwen3-8b", "Qwen3ForCausalLM", "qwen3", 4096, 12288, 36, 32, 8, 151936, 151645,
    rope_theta=1000000.0,
)  # fmt: skip
DEEPSEEK_V3 = TargetShape(
    "deepseek-v3", "DeepseekV3ForCausalLM", "deepseek_v3", 7168, 18432, 61, 128, 128, 129280, 1,
    rope_theta=10000.0,
    extra={
        "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
        "num_experts_per_tok": 8, "first_k_dense_replace": 3, "num_nextn_predict_layers": 1,
        "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128,
    },
)  # fmt: skip
# Kimi-K2's language model (moonshotai/Kimi-K2-Instruct-0905 config.json values): DeepSeek-V3's
# architecture with 64 heads, 384 experts, a 163840 vocabulary and YaRN to 262144 positions.
KIMI_K2 = TargetShape(
    "kimi-k2", "DeepseekV3ForCausalLM", "kimi_k2", 7168, 18432, 61, 64, 64, 163840, 163585,
    rope_theta=50000.0,
    extra={
        "moe_intermediate_size": 2048, "n_routed_experts": 384, "n_shared_experts": 1,
        "num_experts_per_tok": 8, "first_k_dense_replace": 1, "num_nextn_predict_layers": 0,
        "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "bos_token_id": 163584,
        "max_position_embeddings": 262144,
        "rope_scaling": {"type": "yarn", "factor": 64.0, "original_max_position_embeddings": 4096,
                         "beta_fast": 1.0, "beta_slow": 1.0, "mscale": 1.0,
                         "mscale_all_dim": 1.0},
    },
)  # fmt: skip
# Qwen/Qwen3-30B-A3B config.json (MoE: 128 experts, 8 active, every layer sparse).
QWEN3_30B_A3B = TargetShape(
    "qwen3-30b-a3b", "Qwen3MoeForCausalLM", "qwen3_moe", 2048, 6144, 48, 32, 4, 151936, 151645,
    rope_theta=1000000.0,
    extra={
        "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
        "decoder_sparse_step": 1, "norm_topk_prob": True, "mlp_only_layers": [],
        "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "bos_token_id": 151643,
    },
)  # fmt: skip
# meta-llama/Llama-3.3-70B-Instruct config.json (llama3 RoPE scaling to 131072).
LLAMA33_70B = TargetShape(
    "llama-3.3-70b", "LlamaForCausalLM", "llama", 8192, 28672, 80, 64, 8, 128256,
    [128001, 128008, 128009],
    extra={
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        "bos_token_id": 128000,
    },
)  # fmt: skip
TARGETS = {
    t.name: t for t in (LLAMA31_8B, QWEN3_8B, DEEPSEEK_V3, KIMI_K2, QWEN3_30B_A3B, LLAMA33_70B)
}


def kimi_k25_config(text: TargetShape = KIMI_K2) -> dict:
    """Kimi-K2.5's config.json shape: the multimodal wrapper, the language model's fields only in
    text_config (the top level has no hidden_size / num_hidden_layers), a MoonViT vision_config."""
    language = text.config()
    del language["architectures"]  # the wrapper names the class; text_config is its sub-config
    return {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "text_config": language,
        "vision_config": {"model_type": "kimi_k25_vision", "patch_size": 14,
                          "init_pos_emb_height": 64, "init_pos_emb_width": 64,
                          "init_pos_emb_time": 4, "merge_kernel_size": [2, 2],
                          "vt_hidden_size": 1152, "vt_num_attention_heads": 16,
                          "vt_num_hidden_layers": 27, "mm_hidden_size": 1152,
                          "text_hidden_size": text.hidden},
        "media_placeholder_token_id": 163605,
        "pad_token_id": 163839,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }  # fmt: skip


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], bytes | None]]) -> None:
    """Write `{name: (dtype, shape, data or None)}`; None leaves the bytes as a zero hole."""
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape, _) in tensors.items():
        size = DTYPE_BYTES[dtype] * int(np.prod(shape, dtype=np.int64))
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(raw)))
        out.write(raw)
        start = out.tell()
        for name, (_, _, data) in tensors.items():
            if data is not None:
                out.seek(start + header[name]["data_offsets"][0])
                out.write(data)
        out.truncate(start + offset)


def vocab_map(
    draft_vocab: int, target_vocab: int, eos: int | list[int] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """SpecForge's map; the eos ids are in it, as they are in every chat corpus it counts."""
    forced = np.array(sorted({eos} if isinstance(eos, int) else set(eos)), dtype=np.int64)
    frequent = frequent_ids(draft_vocab, target_vocab)
    rest = frequent[~np.isin(frequent, forced)][: draft_vocab - len(forced)]
    used = np.sort(np.concatenate([forced, rest]))
    d2t = used - np.arange(draft_vocab, dtype=np.int64)
    t2d = np.isin(np.arange(target_vocab), used)
    return d2t, t2d


def eagle3_tensors(target: TargetShape, draft_vocab: int = 32000) -> dict:
    """SpecForge's LlamaForCausalLMEagle3 state dict for `target` (one decoder layer whose
    attention takes [embeds, hidden] = 2 * hidden inputs)."""
    h, inter, hd = target.hidden, target.intermediate, target.head_dim
    d2t, t2d = vocab_map(draft_vocab, target.vocab, target.eos)
    layer = "midlayer"
    return {
        "d2t": ("I64", [draft_vocab], d2t.astype("<i8").tobytes()),
        "t2d": ("BOOL", [target.vocab], t2d.astype(np.uint8).tobytes()),
        "fc.weight": ("BF16", [h, 3 * h], None),
        f"{layer}.hidden_norm.weight": ("BF16", [h], None),
        f"{layer}.input_layernorm.weight": ("BF16", [h], None),
        f"{layer}.post_attention_layernorm.weight": ("BF16", [h], None),
        f"{layer}.self_attn.q_proj.weight": ("BF16", [target.heads * hd, 2 * h], None),
        f"{layer}.self_attn.k_proj.weight": ("BF16", [target.kv_heads * hd, 2 * h], None),
        f"{layer}.self_attn.v_proj.weight": ("BF16", [target.kv_heads * hd, 2 * h], None),
        f"{layer}.self_attn.o_proj.weight": ("BF16", [h, target.heads * hd], None),
        f"{layer}.mlp.gate_proj.weight": ("BF16", [inter, h], None),
        f"{layer}.mlp.up_proj.weight": ("BF16", [inter, h], None),
        f"{layer}.mlp.down_proj.weight": ("BF16", [h, inter], None),
        "norm.weight": ("BF16", [h], None),
        "lm_head.weight": ("BF16", [draft_vocab, h], None),
    }


def eagle3_config(target: TargetShape, draft_vocab: int = 32000) -> dict:
    """SpecForge's draft config (configs/llama3-8B-eagle3.json style) for `target`."""
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": target.hidden,
        "intermediate_size": target.intermediate,
        "num_hidden_layers": 1,
        "num_attention_heads": target.heads,
        "num_key_value_heads": target.kv_heads,
        "head_dim": target.head_dim,
        "vocab_size": target.vocab,
        "draft_vocab_size": draft_vocab,
        # the target's: SpecForge's trainer default (2048) is the planted draft-context-2048
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5,
        "rope_theta": target.rope_theta,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": 1,
        "eos_token_id": target.eos,
    }


def eagle1_tensors(target: TargetShape, fc_bias: bool = True) -> dict:
    """An EAGLE-1 draft's state dict as the EAGLE authors' checkpoints hold it (SGLang's CI
    serves lmsys/sglang-EAGLE-* ones): the embedding, fc over [embeds, hidden], one decoder layer
    without input_layernorm, and no lm_head (the engine gives it the target's). fc has a bias in
    the Vicuna and LLaMA2-chat heads (trained with nn.Linear's default) and none in the LLaMA3
    ones (`fc_bias=False`): see tests/test_oracle.py EAGLE1_WITHOUT_FC_BIAS."""
    h, inter, hd = target.hidden, target.intermediate, target.head_dim
    layer = "layers.0"
    return {
        "embed_tokens.weight": ("BF16", [target.vocab, h], None),
        "fc.weight": ("BF16", [h, 2 * h], None),
        **({"fc.bias": ("BF16", [h], None)} if fc_bias else {}),
        f"{layer}.post_attention_layernorm.weight": ("BF16", [h], None),
        f"{layer}.self_attn.q_proj.weight": ("BF16", [target.heads * hd, h], None),
        f"{layer}.self_attn.k_proj.weight": ("BF16", [target.kv_heads * hd, h], None),
        f"{layer}.self_attn.v_proj.weight": ("BF16", [target.kv_heads * hd, h], None),
        f"{layer}.self_attn.o_proj.weight": ("BF16", [h, target.heads * hd], None),
        f"{layer}.mlp.gate_proj.weight": ("BF16", [inter, h], None),
        f"{layer}.mlp.up_proj.weight": ("BF16", [inter, h], None),
        f"{layer}.mlp.down_proj.weight": ("BF16", [h, inter], None),
    }


def eagle1_config(target: TargetShape) -> dict:
    """Its config: the target's shape, one layer, SGLang's EAGLE-1 architecture name."""
    config = eagle3_config(target)
    del config["draft_vocab_size"]
    config["architectures"] = ["LlamaForCausalLMEagle"]
    return config


def speculators_eagle3_config(target: TargetShape, verifier: str, draft_vocab: int = 32000,
                              tokens: int = 3) -> dict:
    """vllm-project/speculators' EAGLE-3 config (Eagle3SpeculatorConfig: the layer's config
    under transformer_layer_config, speculators_config with the proposal method and the
    verifier), for `target`, as its converter and trainer save it."""
    layer = eagle3_config(target, draft_vocab)
    for key in ("architectures", "draft_vocab_size"):
        layer.pop(key)
    for key in ("rope_scaling", "max_position_embeddings"):
        if key in target.extra:
            layer[key] = target.extra[key]
    return {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "speculators_version": "0.3.0",
        "transformer_layer_config": layer,
        "draft_vocab_size": draft_vocab,
        "norm_before_residual": False,
        "target_hidden_size": None,
        # speculators' default, in vLLM's convention (it trains on vLLM's captures): 2, n//2,
        # n-3 (src/speculators/models/utils.py resolve_target_layer_ids)
        "eagle_aux_hidden_state_layer_ids": [2, target.layers // 2, target.layers - 3],
        "torch_dtype": "bfloat16",
        "speculators_config": {
            "algorithm": "eagle3",
            "default_proposal_method": "greedy",
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": tokens,
                                  "accept_tolerance": 0.0, "verifier_accept_k": 1}],
            "verifier": {"name_or_path": verifier, "architectures": ["LlamaForCausalLM"]},
        },
    }


def speculators_eagle3_tensors(target: TargetShape, draft_vocab: int = 32000) -> dict:
    """Its state dict (Eagle3DraftModel: embed_tokens, fc without bias, layers.0.*, norm,
    lm_head, d2t, t2d)."""
    tensors = rename_prefix(eagle3_tensors(target, draft_vocab), "midlayer.", "layers.0.")
    tensors["embed_tokens.weight"] = ("BF16", [target.vocab, target.hidden], None)
    return tensors


def rename_prefix(tensors: dict, old: str, new: str) -> dict:
    return {(new + k[len(old):] if k.startswith(old) else k): v for k, v in tensors.items()}


def eagle3_mla_config(target: TargetShape = DEEPSEEK_V3, draft_vocab: int = 32000) -> dict:
    """An EAGLE-3 head with DeepSeek's MLA attention for `target` (one decoder layer, a dense
    MLP), its config the target's attention fields, named as ModelOpt's Kimi-K2 EAGLE-3
    template names it. model_type deepseek_v2: vLLM rewrites a deepseek_v3 draft config to
    DeepSeekMTPModel (0.20.0 config/speculative.py:288-300)."""
    config = eagle3_config(target, draft_vocab)
    config["architectures"] = ["Eagle3DeepseekV2ForCausalLM"]
    config["model_type"] = "deepseek_v2"
    for key in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                "v_head_dim"):  # fmt: skip
        config[key] = target.extra[key]
    del config["head_dim"]
    return config


def eagle3_mla_tensors(target: TargetShape = DEEPSEEK_V3, draft_vocab: int = 32000) -> dict:
    """The MLA head's state dict: eagle3_tensors with MLA projections; the first layer's
    attention takes [embeds, hidden] = 2 * hidden inputs."""
    h, x = target.hidden, target.extra
    tensors = {k: v for k, v in eagle3_tensors(target, draft_vocab).items() if "self_attn" not in k}
    q_head = x["qk_nope_head_dim"] + x["qk_rope_head_dim"]
    attn = {
        "q_a_proj": [x["q_lora_rank"], 2 * h],
        "q_a_layernorm": [x["q_lora_rank"]],
        "q_b_proj": [target.heads * q_head, x["q_lora_rank"]],
        "kv_a_proj_with_mqa": [x["kv_lora_rank"] + x["qk_rope_head_dim"], 2 * h],
        "kv_a_layernorm": [x["kv_lora_rank"]],
        "kv_b_proj": [target.heads * (x["qk_nope_head_dim"] + x["v_head_dim"]), x["kv_lora_rank"]],
        "o_proj": [h, target.heads * x["v_head_dim"]],
    }
    for name, shape in attn.items():
        tensors[f"midlayer.self_attn.{name}.weight"] = ("BF16", shape, None)
    return tensors


def nextn_tensors(target: TargetShape = DEEPSEEK_V3, experts: int | None = None) -> dict:
    """DeepSeek-V3's MTP module (layer 61 of the release checkpoint), as SGLang's
    export_deepseek_nextn script keeps it: embed, eh_proj, enorm/hnorm, attention, MoE, shared
    head. `experts` limits the routed experts written (all 256 by default)."""
    h = target.hidden
    x = target.extra
    p = f"model.layers.{target.layers}."
    t: dict = {
        "model.embed_tokens.weight": ("BF16", [target.vocab, h], None),
        p + "eh_proj.weight": ("BF16", [h, 2 * h], None),
        p + "enorm.weight": ("BF16", [h], None),
        p + "hnorm.weight": ("BF16", [h], None),
        p + "input_layernorm.weight": ("BF16", [h], None),
        p + "post_attention_layernorm.weight": ("BF16", [h], None),
        p + "self_attn.q_a_proj.weight": ("BF16", [x["q_lora_rank"], h], None),
        p + "self_attn.q_a_layernorm.weight": ("BF16", [x["q_lora_rank"]], None),
        p + "self_attn.q_b_proj.weight": (
            "BF16", [target.heads * (x["qk_nope_head_dim"] + x["qk_rope_head_dim"]),
                     x["q_lora_rank"]], None,
        ),
        p + "self_attn.kv_a_proj_with_mqa.weight": (
            "BF16", [x["kv_lora_rank"] + x["qk_rope_head_dim"], h], None,
        ),
        p + "self_attn.kv_a_layernorm.weight": ("BF16", [x["kv_lora_rank"]], None),
        p + "self_attn.kv_b_proj.weight": (
            "BF16", [target.heads * (x["qk_nope_head_dim"] + x["v_head_dim"]),
                     x["kv_lora_rank"]], None,
        ),
        p + "self_attn.o_proj.weight": ("BF16", [h, target.heads * x["v_head_dim"]], None),
        p + "mlp.gate.weight": ("BF16", [x["n_routed_experts"], h], None),
        p + "mlp.gate.e_score_correction_bias": ("F32", [x["n_routed_experts"]], None),
        p + "shared_head.norm.weight": ("BF16", [h], None),
        p + "shared_head.head.weight": ("BF16", [target.vocab, h], None),
    }  # fmt: skip
    moe = x["moe_intermediate_size"]
    for name in ("gate_proj", "up_proj"):
        t[p + f"mlp.shared_experts.{name}.weight"] = ("BF16", [moe, h], None)
    t[p + "mlp.shared_experts.down_proj.weight"] = ("BF16", [h, moe], None)
    for e in range(x["n_routed_experts"] if experts is None else experts):
        for name in ("gate_proj", "up_proj"):
            t[p + f"mlp.experts.{e}.{name}.weight"] = ("BF16", [moe, h], None)
        t[p + f"mlp.experts.{e}.down_proj.weight"] = ("BF16", [h, moe], None)
    return t


def nextn_config(target: TargetShape = DEEPSEEK_V3) -> dict:
    cfg = target.config()
    cfg["architectures"] = ["DeepseekV3ForCausalLMNextN"]
    return cfg


def write_checkpoint(directory: Path, config: dict, tensors: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_safetensors(directory / "model.safetensors", tensors)
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def write_target(directory: Path, target: TargetShape | dict) -> Path:
    """A target model directory with its config.json (a shape's, or a config given whole)."""
    directory.mkdir(parents=True, exist_ok=True)
    config = target if isinstance(target, dict) else target.config()
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def rename(tensors: dict, prefix: str) -> dict:
    return {prefix + name: value for name, value in tensors.items()}


def write_tokenizer(directory: Path, vocab: dict[str, int]) -> None:
    """tokenizer.json in the Hugging Face `tokenizers` serialization (a BPE model's vocab) and
    the tokenizer_config.json transformers saves beside it."""
    tokenizer = {"version": "1.0", "added_tokens": [],
                 "model": {"type": "BPE", "vocab": vocab, "merges": []}}  # fmt: skip
    (directory / "tokenizer.json").write_text(json.dumps(tokenizer))
    (directory / "tokenizer_config.json").write_text(json.dumps({"eos_token": "t1"}))
