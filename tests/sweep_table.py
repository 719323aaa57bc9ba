"""The sweep: every release of tests/releases.py's SWEEP, what `playbook spec-audit` must say.

- Correct deployments of each model family run on every release. Whether a release can serve a
  family is read from its code (the cites: file:line in the first release of each range, paths
  relative to the package directory); where it cannot, the row says why (target-unsupported).
- Planted checkpoint mistakes (decided by the draft loader files, tests/releases.py
  LOADER_FILES) run on the first release of each content group in GROUPS; GROUPS is checked
  against the releases' bytes by tests/test_conformance_sweep.py::test_content_groups.

Rows use tests/conformance_table.row; no expectation was derived from remotedbg's output.
"""

from __future__ import annotations

from tests.conformance_table import DEFECT, OK, row
from tests.releases import SGLANG_SWEEP, VLLM_SWEEP

SWEEP_VERSIONS = {"sglang": SGLANG_SWEEP, "vllm": VLLM_SWEEP}


def since(engine: str, first: str) -> list[str]:
    """The sweep's releases of `engine` from `first` on (the registry's order)."""
    versions = SWEEP_VERSIONS[engine]
    return versions[versions.index(first) :]


def before(engine: str, first: str) -> list[str]:
    versions = SWEEP_VERSIONS[engine]
    return versions[: versions.index(first)]


# fmt: off
# Content groups of LOADER_FILES, in release order (computed once from the downloads with
# tests.releases.content_group; test_content_groups recomputes and compares).
_GROUPS = {
    "sglang": [
        "0.4.6.post5",
        "0.4.7 0.4.7.post1",
        "0.4.8",
        "0.4.8.post1",
        "0.4.9 0.4.9.post1 0.4.9.post2 0.4.9.post3 0.4.9.post4 0.4.9.post5 0.4.9.post6 0.4.10 "
        "0.4.10.post1 0.4.10.post2",
        "0.5.1 0.5.1.post1 0.5.1.post2 0.5.1.post3",
        "0.5.2",
        "0.5.3 0.5.3.post1",
        "0.5.3.post2 0.5.3.post3",
        "0.5.4 0.5.4.post1",
        "0.5.4.post2 0.5.4.post3 0.5.5 0.5.5.post1 0.5.5.post2",
        "0.5.5.post3",
        "0.5.6 0.5.6.post1 0.5.6.post2",
        "0.5.7",
        "0.5.8 0.5.8.post1",
        "0.5.9",
        "0.5.10 0.5.10.post1",
        "0.5.11",
        "0.5.12 0.5.12.post1",
        "0.5.13 0.5.13.post1",
        "0.5.14",
        "0.5.15",
        "0.5.15.post1",
        "0.5.16",
        "0.5.17",
        "0.5.18 0.5.19",
        "0.5.20",
        "0.5.21",
        "0.5.22",
        "0.5.23",
    ],
    "vllm": [
        "0.8.5 0.8.5.post1",
        "0.9.0 0.9.0.1",
        "0.9.1",
        "0.9.2",
        "0.10.0",
        "0.10.1 0.10.1.1",
        "0.10.2",
        "0.11.0",
        "0.11.1 0.11.2",
        "0.12.0",
        "0.13.0",
        "0.14.0 0.14.1",
        "0.15.0",
        "0.15.1",
        "0.16.0",
        "0.17.0 0.17.1",
        "0.18.0 0.18.1",
        "0.19.0 0.19.1",
        "0.20.0 0.20.1 0.20.2",
        "0.21.0",
        "0.22.0",
        "0.22.1",
        "0.23.0",
        "0.24.0",
        "0.25.0 0.25.1",
        "0.26.0",
        "0.27.0 0.27.1",
        "0.28.0",
        "0.29.0",
        "0.30.0",
        "0.31.0",
        "0.32.0",
        "0.33.0",
    ],
}
GROUPS: dict[str, list[list[str]]] = {e: [g.split() for g in gs] for e, gs in _GROUPS.items()}

# scenario -> {(engine, version): row}
SWEEP: dict[str, dict[tuple[str, str], dict]] = {}


def _put(scenario: str, engine: str, versions: list[str], expected: dict) -> None:
    SWEEP.setdefault(scenario, {}).update({(engine, v): expected for v in versions})


# ------------------------------------------------------------------ SGLang, correct deployments
_put("correct", "sglang", SGLANG_SWEEP, row(OK, cite=(
    "LlamaForCausalLMEagle3 is the EntryClass of srt/models/llama_eagle3.py in every release "
    "(0.4.7 :199; 0.5.23 as conformance_table); load_weights maps midlayer/fc/norm/lm_head "
    "(0.4.7 llama_eagle3.py:183-193 through llama.py; 0.4.9 :202-243 own); the Llama target's "
    "set_eagle3_layers_to_capture adds 1 to each id (srt/models/llama.py)")))
_put("correct-qwen3", "sglang", before("sglang", "0.4.9"),
     row(DEFECT, ["target-unsupported"], cite=(
    "srt/models/qwen3.py defines no set_eagle3_layers_to_capture before 0.4.9 (0.4.8.post1: no "
    "occurrence), which the EAGLE3 model runner calls on the target: AttributeError at start")))
_put("correct-qwen3", "sglang", since("sglang", "0.4.9"), row(OK, cite=(
    "Qwen3ForCausalLM.set_eagle3_layers_to_capture (0.4.9 srt/models/qwen3.py:461; 0.5.6 :588; "
    "0.5.16 :688; 0.5.23 :778)")))
_put("correct-nextn", "sglang", SGLANG_SWEEP, row(OK, cite=(
    "NEXTN is rewritten to EAGLE and DeepseekV3ForCausalLMNextN is the EntryClass of "
    "srt/models/deepseek_nextn.py in every release (see conformance_table correct-nextn)")))
_put("kimi-k2-correct", "sglang", before("sglang", "0.5.4.post2"),
     row(DEFECT, ["target-unsupported"], cite=(
         "DeepseekV2ForCausalLM has no set_eagle3_layers_to_capture before 0.5.4.post2 "
         "(srt/models/deepseek_v2.py, 0.5.4.post1: no occurrence): AttributeError at start")))
_put("kimi-k2-correct", "sglang", since("sglang", "0.5.4.post2"), row(OK, cite=(
    "DeepseekV2ForCausalLM.set_eagle3_layers_to_capture (0.5.4.post2 srt/models/deepseek_v2.py:"
    "3779-3791 adds 1 to each id; 0.5.14 :2799-2814 adds 1 only when the first id is 1): ids "
    "[1,29,57] -> capture [2,30,58] = outputs 1, 29, 57 either way")))
_put("kimi-k25-correct", "sglang", before("sglang", "0.5.10"),
     row(DEFECT, ["target-unsupported"], cite=(
         "no srt/models/kimi_k25.py before 0.5.9; 0.5.9's KimiK25ForConditionalGeneration has "
         "no set_eagle3_layers_to_capture (srt/models/kimi_k25.py: no occurrence), which EAGLE3 "
         "calls on the target: AttributeError at start")))
_put("kimi-k25-correct", "sglang", since("sglang", "0.5.10"), row(OK, cite=(
    "the wrapper delegates set_eagle3_layers_to_capture to its DeepSeek language model "
    "(0.5.10 srt/models/kimi_k25.py:841-850; 0.5.16 :921; 0.5.23 :928-939)")))

# Qwen3-30B-A3B (Qwen3MoeForCausalLM) and Llama-3.3-70B (LlamaForCausalLM, 80 layers, llama3
# RoPE; the draft carries the target's rope_scaling as SpecForge copies it), heads of their
# own shapes (tests/realshape.py), no layer ids in the draft config: the target's default.
_put("correct-qwen3-moe", "sglang", before("sglang", "0.4.9"),
     row(DEFECT, ["target-unsupported"], cite=(
         "Qwen3MoeForCausalLM has no set_eagle3_layers_to_capture before 0.4.9 "
         "(0.4.8.post1 srt/models/qwen3_moe.py:670-830: no occurrence): AttributeError at start")))
_put("correct-qwen3-moe", "sglang", since("sglang", "0.4.9"), row(OK, cite=(
    "Qwen3MoeForCausalLM.set_eagle3_layers_to_capture (0.4.9 srt/models/qwen3_moe.py:759; "
    "0.5.6 :828; 0.5.23 :1128)")))
_put("correct-llama33-70b", "sglang", SGLANG_SWEEP, row(OK, cite=(
    "the Llama target's setter, default [2, n//2, n-3] = [2, 40, 77] for 80 layers (srt/models/"
    "llama.py set_eagle3_layers_to_capture); the head as in 'correct'")))

# ------------------------------------------------------------------ plants (per content group)
# Outcomes as tests/conformance_table.py cites them for the table releases; the loader forms:
# before 0.4.9 SGLang's load_weights prepends model. and calls LlamaForCausalLM.load_weights,
# whose params_dict[name] raises KeyError on an unknown name (0.4.7 srt/models/llama_eagle3.py:
# 183-193); from 0.4.9 on it has its own loop that tries name, then model.+name, and drops a
# name matching neither without a message (0.4.9 llama_eagle3.py:202-243).
SG_OLD_LOADER = before("sglang", "0.4.9")
PLANTS = ("eagle3-as-eagle", "d2t-absolute", "fc-other-target", "prefix-model", "lm-head-missing")
_put("eagle3-as-eagle", "sglang", SGLANG_SWEEP, row(DEFECT, ["algorithm-mismatch"], cite=(
    "EAGLE runs the EAGLE-3 head without aux capture and fc (conformance_table eagle3-as-eagle)")))
_put("d2t-absolute", "sglang", SGLANG_SWEEP, row(DEFECT, ["d2t-absolute-ids"], cite=(
    "hot_token_id = d2t + arange (0.4.7 llama_eagle3.py:187; 0.4.9 :217)")))
_put("fc-other-target", "sglang", SGLANG_SWEEP, row(DEFECT, ["fc-shape-mismatch"], cite=(
    "fc = Linear(hidden x 3, hidden) in every llama_eagle3.py: [4096, 15360] does not load")))
_put("prefix-model", "sglang", SG_OLD_LOADER, row(DEFECT, ["draft-load-fails"], cite=(
    "model.+name -> model.model.midlayer...: params_dict[name] KeyError (0.4.7 "
    "llama_eagle3.py:189-191 -> llama.py load_weights)")))
_put("prefix-model", "sglang", since("sglang", "0.4.9"), row(DEFECT, ["required-weights-missing"],
     cite="model.lm_head.weight matches neither name and is dropped (0.4.9 llama_eagle3.py:"
          "202-243)"))
_put("lm-head-missing", "sglang", SGLANG_SWEEP, row(DEFECT, ["required-weights-missing"], cite=(
    "draft_vocab_size set -> own ParallelLMHead(32000), nothing loads it (conformance_table "
    "lm-head-missing)")))

# ------------------------------------------------------------------ vLLM, correct deployments
# Which architecture a working SpecForge head must name: 0.8.5/0.8.5.post1 build
# Eagle3LlamaForCausalLM by method (v1/spec_decode/eagle.py:228-236); 0.9.0-0.10.0 build the
# draft through the registry with EAGLEConfig's name "Eagle3" + arch unless it starts with
# Eagle3 (0.9.0 transformers_utils/configs/eagle.py:58-63): LlamaForCausalLMEagle3 would become
# the unregistered Eagle3LlamaForCausalLMEagle3; 0.10.1/0.10.1.1 keep a name ending in Eagle3
# (0.10.1 eagle.py:60-61) but comment its registry entry out (registry.py:265); from 0.10.2 it
# is registered (0.10.2 model_executor/models/registry.py:283). Before 0.10.2 a working
# deployment names LlamaForCausalLM (-> Eagle3LlamaForCausalLM).
# vLLM releases whose VllmConfig chooses the model runner per target when the launch environment
# does not (0.22.0 config/vllm.py:498-499 through 0.28.0 :691; tests/test_conformance_sweep.py)
VLLM_RUNNER_PER_TARGET = VLLM_SWEEP[VLLM_SWEEP.index("0.22.0") : VLLM_SWEEP.index("0.29.0")]
VLLM_PLAIN_LLAMA_ARCH = before("vllm", "0.10.2")[before("vllm", "0.10.2").index("0.9.0") :]

_put("correct", "vllm", VLLM_SWEEP, row(OK, cite=(
    "Eagle3LlamaForCausalLM (model_executor/models/llama_eagle3.py) in every release; chosen by "
    "method (0.8.5), else through EAGLEConfig + registry (see VLLM_PLAIN_LLAMA_ARCH); Llama "
    "targets capture for eagle3 in every release (0.8.5 llama.py:531-536; 0.33.0 "
    "interfaces.py SupportsEagle3 default)")))
_put("correct-qwen3", "vllm", before("vllm", "0.10.1"), row(DEFECT, ["target-unsupported"], cite=(
    "'Eagle3 is only supported for Llama models' (0.8.5 config.py:2588-2592; 0.10.0 config.py:"
    "3030) and Qwen3ForCausalLM has no get_eagle3_aux_hidden_state_layers before 0.10.1")))
_put("correct-qwen3", "vllm", since("vllm", "0.10.1"), row(OK, cite=(
    "Qwen3ForCausalLM(SupportsEagle3) with get_eagle3_aux_hidden_state_layers (0.10.1 "
    "model_executor/models/qwen3.py:264, 310); qwen among eagle3 targets (0.10.1 "
    "config/__init__.py:2347; 0.11.0 config/speculative.py:540; 0.17.0 :768)")))
_put("kimi-k2-correct", "vllm", before("vllm", "0.18.0"), row(DEFECT, ["target-unsupported"], cite=(
    "DeepseekV2ForCausalLM is no SupportsEagle3 before 0.18.0 (model_executor/models/"
    "deepseek_v2.py: no occurrence in 0.17.1) and deepseek_v3 is not an eagle3 target "
    "(0.8.5 config.py:2588-2592 llama only; 0.17.1 config/speculative.py:768-787): ValueError "
    "at start")))
_put("kimi-k2-correct", "vllm", since("vllm", "0.18.0"), row(OK, cite=(
    "DeepseekV2ForCausalLM(SupportsEagle3) (0.18.0 deepseek_v2.py:1303, 1385); deepseek_v3 and "
    "kimi_k2 among the targets (0.18.0 config/speculative.py:780-803); default (2, 30, 58) "
    "for 61 layers = outputs 1, 29, 57")))
_put("kimi-k2-correct", "vllm", VLLM_RUNNER_PER_TARGET, row(DEFECT, ["aux-layers-mismatch"], cite=(
    "VLLM_USE_V2_MODEL_RUNNER unset: V1 for this MoE DeepseekV3ForCausalLM (n_routed_experts "
    "384), not in DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES (0.22.0 config/vllm.py:69, :498-499, "
    ":518-532; 0.25.0 :68-74, :557-574; 0.28.0 :69-79, :691-711); from 0.22.0 the V1 runner "
    "reads the draft's eagle_config ids (0.22.0 v1/worker/gpu_model_runner.py:5241-5253) and "
    "passes (1, 29, 57) (:5215-5223), which DeepseekV2Model captures before layers 1, 29, 57 "
    "(0.25.0 deepseek_v2.py:1462-1463): outputs 0, 28, 56; 0.18.0-0.21.0's V1 reads only the "
    "top-level key (0.21.0 gpu_model_runner.py:5041), V2 too (0.25.0 v1/worker/gpu/spec_decode/"
    "eagle/eagle3_utils.py:35-57): the default there")))
_put("kimi-k25-correct", "vllm", before("vllm", "0.18.0"),
     row(DEFECT, ["target-unsupported"], cite=(
    "KimiK25ForConditionalGeneration is not registered before 0.16.0 (model_executor/models/"
    "registry.py, 0.14.1: no occurrence; 0.16.0 :385 registers it) and kimi_k25 is not an "
    "eagle3 target before 0.18.0 (0.16.0 config/speculative.py:689-707; 0.17.1 :768-787): "
    "ValueError at start")))
_put("kimi-k25-correct", "vllm", since("vllm", "0.18.0"), row(OK, cite=(
    "kimi_k25 among the targets (0.18.0 config/speculative.py:780-803); the wrapper builds its "
    "language model from config.text_config (0.18.0 model_executor/models/kimi_k25.py:369, 396) "
    "and delegates get_eagle3_aux_hidden_state_layers to it (:493-494); 0.22.0 drops the "
    "target list (config/speculative.py: no 'only supported for')")))
_put("kimi-k25-correct", "vllm", VLLM_RUNNER_PER_TARGET, row(DEFECT, ["aux-layers-mismatch"],
     cite=(
    "as kimi-k2-correct there: V1 for KimiK25ForConditionalGeneration, whose text config is MoE "
    "(n_routed_experts 384; is_moe reads hf_text_config, 0.25.0 transformers_utils/"
    "model_arch_config_convertor.py:148-165) and which no release lists (0.28.0 config/vllm.py:"
    "69-79 lists KimiK3ForConditionalGeneration); the V1 runner passes the draft's eagle_config "
    "ids (1, 29, 57) through the wrapper to its DeepSeek language model (0.25.0 "
    "kimi_k25.py:467-468 set_aux_hidden_state_layers): outputs 0, 28, 56")))

_put("correct-qwen3-moe", "vllm", before("vllm", "0.11.1"),
     row(DEFECT, ["target-unsupported"], cite=(
         "Qwen3MoeForCausalLM is no SupportsEagle3 before 0.11.1 (model_executor/models/"
         "qwen3_moe.py, 0.11.0: no occurrence), and before 0.10.1 eagle3 is llama-only "
         "(0.8.5 config.py:2588-2592): no aux hidden states from the target")))
_put("correct-qwen3-moe", "vllm", since("vllm", "0.11.1"), row(OK, cite=(
    "Qwen3MoeForCausalLM(SupportsEagle3) (0.11.1 model_executor/models/qwen3_moe.py:630, 713); "
    "qwen among eagle3 targets (0.11.1 config/speculative.py:621)")))
_put("correct-llama33-70b", "vllm", VLLM_SWEEP, row(OK, cite=(
    "as 'correct': Llama targets capture for eagle3 in every release (0.8.5 llama.py:531-536)")))

# ------------------------------------------------------------------ vLLM plants (per group)
_put("eagle3-as-eagle", "vllm", VLLM_SWEEP, row(DEFECT, ["algorithm-mismatch"], cite=(
    "method eagle builds EagleLlamaForCausalLM (0.8.5 v1/spec_decode/eagle.py:228-231), or "
    "EAGLEConfig names Eagle + arch (0.9.0 transformers_utils/configs/eagle.py:50-56): the "
    "EAGLE-1 class or an unregistered name for an EAGLE-3 checkpoint")))
_put("d2t-absolute", "vllm", VLLM_SWEEP, row(DEFECT, ["d2t-absolute-ids"], cite=(
    "compute_logits scatters to arange + draft_id_to_target_id in every llama_eagle3.py "
    "(0.8.5 :200-214; 0.33.0 :385-394)")))
_put("fc-other-target", "vllm", VLLM_SWEEP, row(DEFECT, ["fc-shape-mismatch"], cite=(
    "fc in-features target_hidden_size (else hidden_size) x 3 (0.8.5 llama_eagle3.py:102-109; "
    "0.11.2 :166-177)")))
_put("prefix-model", "vllm", VLLM_SWEEP, row(DEFECT, ["draft-load-fails"], cite=(
    "model.+name -> model.model.midlayer...: params_dict[name] KeyError (0.8.5 "
    "llama_eagle3.py:160; 0.11.2 :350-351, 246) or AutoWeightsLoader ValueError (0.33.0 "
    "models/utils.py:442-448)")))
_put("lm-head-missing", "vllm", VLLM_SWEEP, row(DEFECT, ["required-weights-missing"], cite=(
    "eagle3 never shares its own 32000-row lm_head (0.8.5 v1/spec_decode/eagle.py:242-249), or "
    "shares the target's 128256-row head while scattering by the 32000-entry d2t (0.11.2 "
    "v1/spec_decode/eagle.py:1055-1062; 0.33.0 as conformance_table)")))

# ------------------------------------------------------------------ the MLA EAGLE-3 head (vLLM)
# tests/realshape.py eagle3_mla_config / eagle3_mla_tensors (a DeepSeek-V3 target, q_lora_rank
# 1536), architecture Eagle3DeepseekV2ForCausalLM, model_type deepseek_v2. vLLM ships the head
# (model_executor/models/deepseek_eagle3.py) from 0.18.0 on (0.17.1: no such file, and no
# Eagle3DeepseekV2ForCausalLM in model_executor/models/registry.py). SGLang ships its MLA head
# as srt/models/kimi_k25_eagle3.py from 0.5.12 on (rows below the vLLM ones).
VLLM_MLA = since("vllm", "0.18.0")
_put("mla-eagle3-correct", "vllm", before("vllm", "0.9.0"),
     row(DEFECT, ["draft-load-fails", "target-unsupported"], cite=(
    "'Eagle3 is only supported for Llama models' for a deepseek_v3 target (0.8.5 config.py:"
    "2588-2592); and 0.8.5 builds Eagle3LlamaForCausalLM by method whatever the architecture "
    "(v1/spec_decode/eagle.py:228-236), whose load_weights looks the MLA tensors up in "
    "params_dict: KeyError (llama_eagle3.py:160)")))
VLLM_NO_MLA_REGISTERED = [v for v in before("vllm", "0.18.0") if v not in before("vllm", "0.9.0")]
_put("mla-eagle3-correct", "vllm", VLLM_NO_MLA_REGISTERED,
     row(DEFECT, ["draft-arch-unsupported", "target-unsupported"], cite=(
    "deepseek_v3 is no eagle3 target (0.9.0 config.py 'Eagle3 is only supported for Llama "
    "models'; 0.17.1 config/speculative.py:768-787 lists llama, qwen, minicpm, gpt_oss, "
    "hunyuan_vl, hunyuan_v1_dense, afmoe, nemotron_h); Eagle3DeepseekV2ForCausalLM is kept by "
    "EAGLEConfig (0.9.0 transformers_utils/configs/eagle.py:58-63) but registered nowhere "
    "(0.17.1 model_executor/models/registry.py: no occurrence)")))
_put("mla-eagle3-correct", "vllm", VLLM_MLA, row(OK, cite=(
    "registry: Eagle3DeepseekV2ForCausalLM -> deepseek_eagle3 (0.18.0 model_executor/models/"
    "registry.py:558; 0.33.0 :712); deepseek_v2/deepseek_v3 eagle3 targets (0.18.0 config/"
    "speculative.py:789-790; 0.22.0 drops the list); the layer passes q_lora_rank (0.18.0 "
    "deepseek_eagle3.py:91) so the fused q/kv-a projection is built and loads q_a_proj and "
    "kv_a_proj_with_mqa as shards 0 and 1 (0.18.0 :249-255, midlayer. -> layers.0. :260); fc "
    "in = target_hidden_size x 3 (0.18.0 :203-206; 0.33.0 :188-199 x num_aux = 3); as "
    "conformance_table mla-eagle3-correct for 0.20.0")))

# The plants on the MLA head, on the first release of each content group that ships it
# (deepseek_eagle3.py is one of tests/releases.py LOADER_FILES, so the groups split on it).
MLA_PLANTS = tuple(f"mla-eagle3-{p}" for p in PLANTS)
VLLM_MLA_FIRSTS = [g[0] for g in GROUPS["vllm"] if g[0] in VLLM_MLA]
_put("mla-eagle3-eagle3-as-eagle", "vllm", VLLM_MLA_FIRSTS, row(DEFECT, ["algorithm-mismatch"],
     cite="method eagle for an EAGLE-3 head: no aux hidden states are captured from the target "
          "for its fc (as eagle3-as-eagle above)"))
_put("mla-eagle3-d2t-absolute", "vllm", VLLM_MLA_FIRSTS, row(DEFECT, ["d2t-absolute-ids"], cite=(
    "compute_logits scatters to arange + draft_id_to_target_id (0.18.0 deepseek_eagle3.py:"
    "367-368; 0.33.0 :345-346, and LocalArgmaxMixin top + d2t[top], interfaces.py:1602-1604)")))
_put("mla-eagle3-fc-other-target", "vllm", VLLM_MLA_FIRSTS, row(DEFECT, ["fc-shape-mismatch"],
     cite="fc in-features target_hidden_size (else hidden_size) x 3 = 21504 (0.18.0 "
          "deepseek_eagle3.py:203-206; 0.33.0 :188-199): [7168, 15360] does not load"))
_put("mla-eagle3-prefix-model", "vllm", VLLM_MLA_FIRSTS, row(DEFECT, ["draft-load-fails"], cite=(
    "model.+name -> model.model.midlayer...: the stacked mapping's params_dict[name] KeyError "
    "(0.18.0 deepseek_eagle3.py:398 -> DeepseekV2Eagle3Model.load_weights :283-286) or "
    "AutoWeightsLoader ValueError on the unknown module (0.33.0 deepseek_eagle3.py:270, 394; "
    "models/utils.py:442-448)")))
_put("mla-eagle3-lm-head-missing", "vllm", VLLM_MLA_FIRSTS,
     row(DEFECT, ["required-weights-missing"], cite=(
    "no lm_head.weight: has_own_lm_head stays False (process_eagle_weight, 0.18.0 "
    "model_executor/models/utils.py:853-875, called at deepseek_eagle3.py:402) and the target's "
    "129280-row head is shared (v1/spec_decode/eagle.py:1386-1393) while compute_logits "
    "scatters by the 32000-entry d2t (deepseek_eagle3.py:367-376)")))

# ------------------------------------------------------------------ the MLA EAGLE-3 head (SGLang)
# srt/models/kimi_k25_eagle3.py, EntryClass Eagle3DeepseekV2ForCausalLM (0.5.12 :472; 0.5.23
# :523), from 0.5.12 on (0.5.11: no such file). Releases before it have no rows yet: the name
# is in no EntryClass, and 0.5.11's Transformers fallback raises ValueError for a name neither
# Transformers nor the config's auto_map has (model_loader/utils.py:214-221 -> :138-155), which
# remotedbg's draft-arch-unsupported does not model for SGLang (it says inconclusive).
SGLANG_MLA = since("sglang", "0.5.12")
_put("mla-eagle3-correct", "sglang", SGLANG_MLA, row(OK, cite=(
    "EntryClass Eagle3DeepseekV2ForCausalLM (0.5.12 kimi_k25_eagle3.py:472); load_weights maps "
    "midlayer./fc/norm/embed_tokens under model. and keeps lm_head (0.5.12 :397-400; 0.5.23 "
    ":448-451), concatenates q_a_proj and kv_a_proj_with_mqa into fused_qkv_a_proj_with_mqa "
    "(0.5.12 :416-441), loads the rest by params_dict (:443-448); post_load_weights accepts a "
    "bfloat16 kv_b_proj (0.5.12 :461; 0.5.23 :512); the DSA indexer is built only when "
    "is_deepseek_dsa(config) (0.5.14 deepseek_v2.py:1520, 1581; configs/model_config.py:"
    "103-115: the architecture must be DeepseekV3ForCausalLM and the like, with index_topk); the "
    "DeepSeek-V3 target captures from 0.5.4.post2 (kimi-k2-correct above)")))

# The plants on SGLang's MLA head, on the first release of each content group from 0.5.12
# (kimi_k25_eagle3.py has the same bytes within each of those groups).
SGLANG_MLA_FIRSTS = [g[0] for g in GROUPS["sglang"] if g[0] in SGLANG_MLA]
_put("mla-eagle3-eagle3-as-eagle", "sglang", SGLANG_MLA_FIRSTS,
     row(DEFECT, ["algorithm-mismatch"], cite=(
    "EAGLE runs the EAGLE-3 head without aux capture for its 3 x hidden fc (as eagle3-as-eagle; "
    "0.5.12 kimi_k25_eagle3.py:196-204)")))
_put("mla-eagle3-d2t-absolute", "sglang", SGLANG_MLA_FIRSTS,
     row(DEFECT, ["d2t-absolute-ids"], cite=(
    "hot_token_id = d2t + arange (0.5.12 kimi_k25_eagle3.py:389; 0.5.23 :440)")))
_put("mla-eagle3-fc-other-target", "sglang", SGLANG_MLA_FIRSTS,
     row(DEFECT, ["fc-shape-mismatch"], cite=(
    "fc in-features target_hidden_size x 3 aux layers = 21504 (0.5.12 kimi_k25_eagle3.py:"
    "196-204, _get_eagle_aux_layer_count :37-50; 0.5.23 :208-215): [7168, 15360] does not load")))
_put("mla-eagle3-prefix-model", "sglang", SGLANG_MLA_FIRSTS,
     row(DEFECT, ["required-weights-missing"], cite=(
    "model.+name -> model.model...: not in params_dict, skipped with a warning (0.5.12 "
    "kimi_k25_eagle3.py:397-400, 443-445; 0.5.23 :494-496); the fused q/kv-a name is not in "
    "params_dict either (0.5.12 :433): nothing loads")))
_put("mla-eagle3-lm-head-missing", "sglang", SGLANG_MLA_FIRSTS,
     row(DEFECT, ["required-weights-missing"], cite=(
    "draft_vocab_size set -> own ParallelLMHead(32000) and load_lm_head_from_target False "
    "(0.5.12 kimi_k25_eagle3.py:299-312), so the worker shares only the embedding (0.5.12 "
    "speculative/eagle_worker.py:182-188): nothing loads lm_head")))


# ------------------------------------------------------------------ engines beyond SGLang, vLLM
# One release each, the one its profile was read from (issue 44): engine -> (distribution,
# version). A Llama-3.1-8B target (tests/realshape.py) and a SpecForge EAGLE-3 head of its
# shape; the launch as each engine's docs give it (tests/test_conformance.py launch_args).
MORE_ENGINES = {"lmdeploy": ("lmdeploy", "0.18.0"), "aphrodite": ("aphrodite-engine", "0.22.0"),
                "tokenspeed": ("tokenspeed", "0.1.1")}  # fmt: skip
# scenario -> {engine: row}
MORE: dict[str, dict[str, dict]] = {
    "correct": {
        "lmdeploy": row(OK, cite=(
            "LlamaForCausalLM is renamed Eagle3LlamaForCausalLM under eagle3 (lmdeploy/pytorch/"
            "configurations/llama.py:11, :20) and mapped to llama_eagle3 (pytorch/models/"
            "module_map.py:327-336); its load_weights maps midlayer/fc/norm/lm_head and adds "
            "arange to d2t (pytorch/models/llama_eagle3.py:278-310); capture (2, 16, 29) fixed "
            "for a 32-layer Llama target (configurations/llama.py:25-28)")),
        "aphrodite": row(OK, cite=(
            "LlamaForCausalLMEagle3 -> llama_eagle3 (aphrodite/model_executor/models/registry.py:"
            "618); vLLM's loader and capture, read from its own code")),
        "tokenspeed": row(OK, cite=(
            "LlamaForCausalLMEagle3 is the EntryClass of runtime/models/llama_eagle3.py (:716), "
            "kept by name (runtime/utils/hf_transformers_utils.py:460-467); load_weights maps "
            "midlayer/fc/norm/lm_head, hot_token_id = d2t + arange (:632-676); the Llama "
            "target's set_eagle3_layers_to_capture (runtime/models/base/causal_lm.py:271-282)")),
    },
    "d2t-absolute": {
        "lmdeploy": row(DEFECT, ["d2t-absolute-ids"], cite=(
            "d2t + arange(draft_vocab_size) (pytorch/models/llama_eagle3.py:291-296): absolute "
            "ids become target ids past the vocabulary")),
        "aphrodite": row(DEFECT, ["d2t-absolute-ids"], cite=(
            "arange + draft_id_to_target_id as vLLM's (model_executor/models/llama_eagle3.py)")),
        "tokenspeed": row(DEFECT, ["d2t-absolute-ids"], cite=(
            "hot_token_id = d2t + arange (runtime/models/llama_eagle3.py:648-652)")),
    },
    "fc-other-target": {
        engine: row(DEFECT, ["fc-shape-mismatch"], cite=(
            "fc in-features are 3 x the target's hidden size in the engine's EAGLE-3 head "
            "(lmdeploy llama_eagle3.py Eagle3LlamaModel; aphrodite llama_eagle3.py; tokenspeed "
            "llama_eagle3.py:413-429): a [4096, 15360] fc does not load"))
        for engine in MORE_ENGINES
    },
    # each engine's own commonest failure, the architecture its registry cannot map
    "arch-specforge": {
        "lmdeploy": row(DEFECT, ["draft-arch-unsupported"], cite=(
            "LlamaForCausalLMEagle3 is not renamed (configurations/llama.py:11) and MODULE_MAP "
            "has no entry for it: RuntimeError at start (pytorch/models/patch.py:189-196)")),
    },
    "arch-eagle-authors": {
        "tokenspeed": row(DEFECT, ["draft-arch-unsupported"], cite=(
            "LlamaForCausalLM names no draft kind: LlamaForCausalLMNextN is looked up "
            "(runtime/utils/hf_transformers_utils.py:460-475), which no EntryClass registers: "
            "ValueError at start (runtime/models/registry.py:57-60)")),
        "aphrodite": row(OK, cite=(
            "its EAGLEConfig renames LlamaForCausalLM to Eagle3LlamaForCausalLM under eagle3, as "
            "vLLM's (aphrodite/transformers_utils/configs/eagle.py), registered (registry.py)")),
    },
    "algorithm-lower-case": {
        "tokenspeed": row(DEFECT, ["algorithm-mismatch"], cite=(
            "`eagle3` is compared as written with EAGLE3, MTP, DFLASH, DSPARK: ValueError "
            "'unknown --speculative-algorithm' at start (runtime/execution/drafter/__init__.py:"
            "51, :149-163)")),
    },
}
