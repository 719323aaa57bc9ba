"""Release x scenario -> what `playbook spec-audit` must say, written from the engines' code.

Every expectation cites the release's own file:line (paths relative to the package directory in
site-packages) that makes the engine behave so; none was derived from remotedbg's output. The
releases are downloaded by tests/releases.py; the scenarios are built by tests/test_conformance.py.

`verdict` is the playbook verdict (ok -> exit 0, defect -> exit 1, inconclusive -> exit 4);
`errors` are the error-level finding ids that must be reported (and no other error may be);
`warnings` are warning ids that must be reported (other warnings are allowed only on `ok` rows
when listed in `allow`).
"""

from __future__ import annotations

SGLANG = ["0.4.6.post5", "0.4.10.post2", "0.5.1", "0.5.6", "0.5.14", "0.5.23"]
VLLM = ["0.8.5", "0.10.1.1", "0.33.0"]


def row(verdict: str, errors=(), warnings=(), cite: str = "", allow=()) -> dict:
    return {
        "verdict": verdict,
        "errors": sorted(errors),
        "warnings": sorted(warnings),
        "allow": sorted(allow),
        "cite": cite,
    }


OK = "ok"
DEFECT = "defect"

# scenario -> {("sglang"|"vllm", version): row}
TABLE: dict[str, dict[tuple[str, str], dict]] = {}


def _put(scenario: str, engine: str, versions: list[str], expected: dict) -> None:
    TABLE.setdefault(scenario, {}).update({(engine, v): expected for v in versions})


# ------------------------------------------------------------------ correct deployments
_put("correct", "sglang", ["0.4.6.post5"], row(OK, cite=(
    "srt/models/llama_eagle3.py:183-193 loads midlayer/fc/norm/lm_head through "
    "llama.py:532-596; d2t -> hot_token_id le3:185-187; embedding shared: "
    "srt/speculative/eagle_worker.py:125 set_embed; capture [2,16,29] llama.py:706")))
_put("correct", "sglang", ["0.4.10.post2", "0.5.1"], row(OK, cite=(
    "srt/models/llama_eagle3.py:202-243 own load_weights; eagle_worker.py:141-147 set_embed + "
    "hot_token_id; llama.py:733-755 capture [2,16,29]")))
_put("correct", "sglang", ["0.5.6"], row(OK, cite=(
    "srt/models/llama_eagle3.py:229-270; eagle_worker.py:147-164 (set_embed :158); "
    "llama.py:737 default [2, n//2, n-3]")))
_put("correct", "sglang", ["0.5.14"], row(OK, cite=(
    "srt/models/llama_eagle3.py:310-350 (midlayer -> layers.0); "
    "srt/speculative/eagle_worker_v2.py:319-335 set_embed; llama.py:819")))
_put("correct", "sglang", ["0.5.23"], row(OK, cite=(
    "srt/models/llama_eagle3.py:338-378 legacy_name_map midlayer->layers.0; "
    "eagle_worker_v2.py:336-369; llama.py:936")))
_put("correct", "vllm", ["0.8.5"], row(OK, cite=(
    "v1/spec_decode/eagle.py:228-236 class by method (Eagle3LlamaForCausalLM); "
    "model_executor/models/llama_eagle3.py:216-232 + AutoWeightsLoader; embed shared "
    "eagle.py:242-246; capture (2, n//2, n-3) model_executor/models/llama.py:534-536")))
_put("correct", "vllm", ["0.10.1.1"], row(OK, cite=(
    "draft config arch LlamaForCausalLM -> EAGLEConfig prefixes Eagle3 "
    "(transformers_utils/configs/eagle.py:56-62) -> registry Eagle3LlamaForCausalLM "
    "(model_executor/models/registry.py:263); llama_eagle3.py:262-288; embed shared "
    "v1/spec_decode/eagle.py:617-626; capture llama.py:552-557")))
_put("correct", "vllm", ["0.33.0"], row(OK, cite=(
    "registry.py:702 LlamaForCausalLMEagle3 -> llama_eagle3.Eagle3LlamaForCausalLM; "
    "llama_eagle3.py:420-470 + AutoWeightsLoader/WeightsMapper (models/utils.py:49-140); "
    "embed shared v1/worker/gpu/spec_decode/eagle/utils.py:74-77; default capture "
    "model_executor/models/interfaces.py:1751-1772")))

_put("correct-qwen3", "sglang", ["0.4.6.post5"], row(DEFECT, ["target-unsupported"], cite=(
    "Qwen3ForCausalLM has no set_eagle3_layers_to_capture (srt/models/qwen3.py:219), which "
    "model_executor/model_runner.py:312 calls for EAGLE3: AttributeError at start")))
_put("correct-qwen3", "sglang", ["0.4.10.post2"], row(OK, cite="srt/models/qwen3.py:525-536"))
_put("correct-qwen3", "sglang", ["0.5.1"], row(OK, cite="srt/models/qwen3.py:501-512"))
_put("correct-qwen3", "sglang", ["0.5.6"], row(OK, cite="srt/models/qwen3.py:588-601"))
_put("correct-qwen3", "sglang", ["0.5.14"], row(OK, cite="srt/models/qwen3.py:692-705"))
_put("correct-qwen3", "sglang", ["0.5.23"], row(OK, cite="srt/models/qwen3.py:778-791"))
_put("correct-qwen3", "vllm", ["0.8.5"], row(DEFECT, ["target-unsupported"], cite=(
    "Qwen3ForCausalLM has no get_eagle3_aux_hidden_state_layers (only "
    "model_executor/models/llama.py:531-536 defines it); v1/worker/gpu_model_runner.py:1342-1344 "
    "calls it for eagle3 (and config.py:2588-2592 refuses non-llama targets)")))
_put("correct-qwen3", "vllm", ["0.10.1.1"], row(OK, cite="model_executor/models/qwen3.py:307-312"))
_put("correct-qwen3", "vllm", ["0.33.0"], row(OK, cite=(
    "Qwen3ForCausalLM(SupportsEagle3) qwen3.py:280-281; default interfaces.py:1751-1772")))

_put("correct-nextn", "sglang", SGLANG, row(OK, cite=(
    "NEXTN is rewritten to EAGLE (0.4.6.post5 server_args.py:378-380; 0.5.6 "
    "server_args.py:1668-1669; 0.5.23 speculative_hook.py:109-116); draft arch "
    "DeepseekV3ForCausalLMNextN (srt/models/deepseek_nextn.py EntryClass); embed and head shared "
    "by set_embed_and_head (0.5.6 eagle_worker.py:166-173)")))

# ------------------------------------------------------------------ algorithm vs draft family
_put("eagle3-as-eagle", "sglang", SGLANG, row(DEFECT, ["algorithm-mismatch"], cite=(
    "no check of architecture vs algorithm: EAGLE runs the EAGLE-3 head without aux capture "
    "(0.5.6 model_runner.py:531 needs is_eagle3), fc skipped (llama_eagle3.py:162-163), target "
    "head swapped in (eagle_worker.py:173): silent garbage drafts")))
_put("eagle3-as-eagle", "vllm", ["0.8.5"], row(DEFECT, ["algorithm-mismatch"], cite=(
    "method eagle builds EagleLlamaForCausalLM (v1/spec_decode/eagle.py:228-231): midlayer/d2t "
    "KeyError (llama_eagle.py:105,110)")))
_put("eagle3-as-eagle", "vllm", ["0.10.1.1", "0.33.0"], row(DEFECT, ["algorithm-mismatch"], cite=(
    "method eagle: EAGLEConfig prefixes Eagle (0.33.0 transformers_utils/configs/eagle.py:46-53) "
    "-> unregistered arch ValueError (0.33.0 model_executor/models/registry.py:1249-1252)")))

_put("nextn-as-eagle3", "sglang", SGLANG, row(DEFECT, ["algorithm-mismatch"], cite=(
    "EAGLE3 path calls set_eagle3_layers_to_capture / set_embed that the DeepSeek NextN classes "
    "lack: AttributeError at start (0.4.6.post5 deepseek_v2.py:1855 + model_runner.py:312; "
    "0.5.6 eagle_worker.py:158, deepseek_v2.py:3341,4069)")))
_put("nextn-as-eagle3", "vllm", VLLM, row(DEFECT, ["algorithm-mismatch"], cite=(
    "0.8.5 config.py:2588-2592 eagle3 only for llama; 0.10.1.1 config/__init__.py:2347-2354; "
    "0.33.0 config/speculative.py:749-764 rewrites to DeepSeekMTPModel, Eagle3DeepSeekMTPModel "
    "unregistered (registry.py:1249-1252)")))

# ------------------------------------------------------------------ checkpoint defects
_put("d2t-absolute", "sglang", SGLANG, row(DEFECT, ["d2t-absolute-ids"], cite=(
    "hot_token_id = d2t + arange (0.4.6.post5 llama_eagle3.py:187; 0.5.23 llama_eagle3.py:352): "
    "absolute ids are shifted again")))
_put("d2t-absolute", "vllm", VLLM, row(DEFECT, ["d2t-absolute-ids"], cite=(
    "compute_logits scatters to arange + draft_id_to_target_id (0.8.5 llama_eagle3.py:200-214; "
    "0.33.0 llama_eagle3.py:385-394)")))

_put("fc-other-target", "sglang", SGLANG, row(DEFECT, ["fc-shape-mismatch"], cite=(
    "fc = Linear(hidden*3 or target_hidden_size*3, hidden) (0.5.6 llama_eagle3.py:135); a "
    "[4096, 15360] fc.weight cannot take the 3 x 4096 the Llama-3.1-8B target feeds")))
_put("fc-other-target", "vllm", VLLM, row(DEFECT, ["fc-shape-mismatch"], cite=(
    "fc in-features target_hidden_size*3 (0.8.5 llama_eagle3.py:102-109)")))

_put("prefix-model", "sglang", ["0.4.6.post5"], row(DEFECT, ["draft-load-fails"], cite=(
    "llama_eagle3.py:189-191 prepends model. -> model.model.midlayer...qkv_proj: "
    "params_dict[name] KeyError (llama.py:578)")))
_put("prefix-model", "sglang", SGLANG[1:], row(DEFECT, ["required-weights-missing"], cite=(
    "name tried as is, then model.+name; model.lm_head.weight matches neither and is dropped "
    "without a message (0.5.1 llama_eagle3.py:237-238; 0.5.23 :372-373): lm_head uninitialised")))
_put("prefix-model", "vllm", VLLM, row(DEFECT, ["draft-load-fails"], cite=(
    "0.8.5 llama_eagle3.py:160 / 0.10.1.1 :186 KeyError; 0.33.0 models/utils.py:442-448 "
    "ValueError 'There is no module or parameter named'")))

_put("prefix-draft_model", "sglang", ["0.4.6.post5"], row(DEFECT, ["draft-load-fails"], cite=(
    "model.draft_model.midlayer...qkv_proj KeyError (llama.py:578)")))
_put("prefix-draft_model", "sglang", SGLANG[1:], row(DEFECT, ["required-weights-missing"], cite=(
    "every tensor but d2t/t2d dropped silently (0.5.6 llama_eagle3.py:255,265; 0.5.23 :363,373)")))
_put("prefix-draft_model", "vllm", VLLM, row(DEFECT, ["draft-load-fails"], cite=(
    "0.8.5 models/utils.py:248-250 / llama_eagle3.py:160; 0.33.0 models/utils.py:442-448")))

_put("lm-head-missing", "sglang", SGLANG, row(DEFECT, ["required-weights-missing"], cite=(
    "draft_vocab_size set -> lm_head is ParallelLMHead(32000), not shared (set_embed only: "
    "0.5.6 llama_eagle3.py:206-218, eagle_worker.py:157-158); nothing loads it")))
_put("lm-head-missing", "vllm", ["0.8.5", "0.10.1.1"], row(DEFECT, ["required-weights-missing"],
    cite="eagle3 never shares lm_head (0.8.5 eagle.py:242-249; 0.10.1.1 eagle.py:636)"))
_put("lm-head-missing", "vllm", ["0.33.0"], row(DEFECT, ["required-weights-missing"], cite=(
    "target head (128256 rows) shared (v1/worker/gpu/spec_decode/eagle/utils.py:109-119) while "
    "logits are cut to draft_vocab_size and scattered by d2t (llama_eagle3.py:385-394)")))

# ------------------------------------------------------------------ norm flags
_put("norm-before-fc", "sglang", SGLANG[:5], row(DEFECT, ["norm-flag-unsupported"], cite=(
    "norm_before_fc is read nowhere (0.5.6 llama_eagle3.py:130-143; 0.5.14 no occurrence); "
    "input_norm.weight dropped")))
_put("norm-before-fc", "sglang", ["0.5.23"], row(OK, cite=(
    "llama_eagle3.py:169-182 input_norm RMSNorm(3*hidden) when norm_before_fc; applied :238-240")))
_put("norm-before-fc", "vllm", ["0.8.5", "0.10.1.1"],
     row(DEFECT, ["draft-load-fails", "norm-flag-unsupported"], cite=(
         "flag not read; input_norm.weight -> model.input_norm.weight KeyError "
         "(0.8.5 llama_eagle3.py:160; 0.10.1.1 :186)")))
_put("norm-before-fc", "vllm", ["0.33.0"], row(OK, cite="llama_eagle3.py:184-188, 223-227"))

_put("fc-norm", "sglang", ["0.4.6.post5"], row(DEFECT, ["norm-flag-unsupported"], cite=(
    "fc_norm.* not a parameter: warning 'Parameter ... not found' (llama.py:596), not applied")))
_put("fc-norm", "sglang", ["0.4.10.post2", "0.5.1", "0.5.6"],
     row(DEFECT, ["norm-flag-unsupported"],
         cite="dropped silently (0.5.6 llama_eagle3.py:264-265)"))
_put("fc-norm", "sglang", ["0.5.14", "0.5.23"], row(OK, cite=(
    "fc_norm ModuleList when config fc_norm (0.5.23 llama_eagle3.py:184-196), loaded :372-378")))
_put("fc-norm", "vllm", ["0.8.5", "0.10.1.1"],
     row(DEFECT, ["draft-load-fails", "norm-flag-unsupported"], cite=(
         "model.fc_norm.0.weight KeyError (0.8.5 llama_eagle3.py:160; 0.10.1.1 :186)")))
_put("fc-norm", "vllm", ["0.33.0"], row(OK, cite="llama_eagle3.py:231-240 fc_norm ModuleList"))

# ------------------------------------------------------------------ launch and telemetry
_put("token-map", "sglang", SGLANG, row(OK, warnings=["token-map-ignored"], cite=(
    "'Speculative token map specified, but EAGLE3 models already have this. Ignoring' "
    "(0.4.6.post5 eagle_worker.py:93-98; 0.5.6 :114-119; 0.5.23 eagle_worker_v2.py:325-330)")))

_put("aux-off-by-one", "sglang", ["0.4.6.post5"], row(OK, warnings=["aux-layers-ignored"], cite=(
    "eagle_config ids not read: captures the default [2,16,29] (llama.py:706) = outputs 1,15,28, "
    "the training layers; the ids in the config are ignored")))
_put("aux-off-by-one", "sglang", SGLANG[1:], row(DEFECT, ["aux-layers-mismatch"], cite=(
    "ids read from eagle_config (0.5.1 model_runner.py:368-380; 0.5.23 spec_aux_hidden_state.py:"
    "185-196), +1 each (llama.py set_eagle3_layers_to_capture): [3,17,30] = outputs 2,16,29 "
    "!= training 1,15,28")))
_put("aux-off-by-one", "vllm", VLLM, row(OK, warnings=["aux-layers-ignored"], cite=(
    "eagle_config.eagle_aux_hidden_state_layer_ids not read by the default runner "
    "(0.8.5/0.10.1.1: no occurrence; 0.33.0 V2 eagle3_utils.py:113-150 reads top-level keys "
    "only)")))

_put("low-accept", "sglang", SGLANG, row(DEFECT, ["accept-length-low"], cite=(
    "'accept len: {:.2f}' is accepted/forward (0.4.6.post5 scheduler.py:1217; 0.5.6 "
    "scheduler_metrics_mixin.py:294): 1.05 of a possible num_steps+1 = 4")))
_put("low-accept", "vllm", ["0.10.1.1", "0.33.0"], row(DEFECT, ["accept-length-low"], cite=(
    "'Mean acceptance length' = 1 + accepted/drafts (0.10.1.1 v1/spec_decode/metrics.py:80-81; "
    "0.33.0 :113-114): 1.05 of a possible 4")))
_put("low-accept", "vllm", ["0.8.5"], row(DEFECT, ["accept-length-low"], cite=(
    "'Mean acceptance length' = accepted/drafts, no bonus token (v1/spec_decode/metrics.py:76): "
    "0.05 of a possible 3")))

_put("arch-specforge", "vllm", ["0.10.1.1"], row(DEFECT, ["draft-arch-unsupported"], cite=(
    "LlamaForCausalLMEagle3 kept by EAGLEConfig (ends with Eagle3, "
    "transformers_utils/configs/eagle.py:56-62) but its registry entry is commented out "
    "(model_executor/models/registry.py:264-265): 'Model architectures ... are not supported' "
    "(registry.py:497-499)")))
_put("arch-specforge", "vllm", ["0.33.0"], row(OK, cite="registry.py:702 registers it again"))

# ------------------------------------------------------------------ EAGLE-1 (issue 42)
# An EAGLE-1 head as the engines' CI and docs serve it (the EAGLE authors' checkpoints: embedding,
# fc with bias, one layer without input_layernorm, no lm_head), Llama-3.1-8B target.
_put("eagle1-correct", "sglang", SGLANG, row(OK, cite=(
    "the worker's non-EAGLE3 branch gives the draft the target's embedding and head "
    "(0.4.6.post5 srt/speculative/eagle_worker.py:121-138; 0.5.6 :147-173; 0.5.14 "
    "eagle_worker_v2.py:319-344; 0.5.23 :336-379 set_embed_and_head) and LlamaForCausalLMEagle."
    "load_weights skips every lm_head key (srt/models/llama_eagle.py:142-146, 0.5.23 :146-150); "
    "0.5.23's LlamaForCausalLM.load_weights branches on envs.SGLANG_ENABLE_WEIGHT_LOADER_V2, "
    "EnvBool(False) (srt/models/llama.py:704, srt/environ.py:315)")))
_put("eagle1-correct", "vllm", ["0.8.5", "0.10.1.1", "0.11.2", "0.20.0", "0.33.0"], row(OK, cite=(
    "the proposer assigns the target's lm_head for methods other than eagle3 (0.8.5 v1/spec_decode/"
    "eagle.py:247-249; 0.33.0 llm_base_proposer.py:1510-1545 shares it when the draft has none); "
    "EagleLlamaForCausalLM skips embed_tokens when pipeline parallelism is off (0.10.1.1 "
    "model_executor/models/llama_eagle.py:118-121; pipeline_parallel_size 1 by default, "
    "config/parallel.py:40)")))

# ------------------------------------------------------------------ speculators format (issue 42)
# vLLM's own draft format (vllm-project/speculators, what vLLM's docs serve: RedHatAI's
# *-speculator.eagle3 heads): config.json names Eagle3Speculator, nests the layer's config under
# transformer_layer_config and records the aux ids in vLLM's capture convention; state dict
# layers.0.*, embed_tokens, fc without bias. Launched with --speculative-config {"model": DIR}.
_SPEC_FORMAT = ("transformers_utils/configs/speculators/algos.py update_eagle3 builds the draft "
                "config from transformer_layer_config and names Eagle3LlamaForCausalLM (0.33.0 "
                ":15-50; 0.10.1.1, 0.11.2, 0.20.0 the same function, fewer norm flags); "
                "speculative.py replaces the hf_config for eagle3 unless it is a "
                "SpeculatorsConfig already (0.33.0 config/speculative.py:1515-1530)")
_SPEC_RELEASES = ["0.10.1.1", "0.11.2", "0.20.0", "0.33.0"]
_put("speculators-correct", "vllm", _SPEC_RELEASES, row(OK, cite=_SPEC_FORMAT))
_put("speculators-correct", "vllm", ["0.8.5"], row(DEFECT, ["draft-arch-unsupported"], cite=(
    "no transformers_utils/configs/speculators/ in 0.8.5: no reader of the format, the "
    "server cannot build the draft's config")))
_put("speculators-d2t-absolute", "vllm", _SPEC_RELEASES, row(DEFECT, ["d2t-absolute-ids"], cite=(
    "the same checkpoint with target ids in d2t: llama_eagle3.py adds arange to d2t as offsets "
    "(0.33.0 model_executor/models/llama_eagle3.py; the cited rows of d2t-absolute)")))
_put("speculators-lm-head-missing", "vllm", _SPEC_RELEASES, row(
    DEFECT, ["required-weights-missing"],
    cite="as lm-head-missing: nothing loads lm_head (llama_eagle3.py load_weights)"))

# ------------------------------------------------------------------ context length
# The draft's max_position_embeddings 2048 (SpecForge's default config), served at the target's
# 131072 with the launch arguments only (no server running, launch environment unknown).
# Only a refusal to start is an error; where the engine serves, prompts within the draft's 2048
# are drafted as trained and only longer ones are at risk: a warning (issue 42).
_put("draft-context-2048", "sglang", ["0.4.6.post5", "0.4.10.post2"], row(
    OK, warnings=["context-exceeds-draft"], cite=(
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN defaults to True: a warning only "
        "(0.4.6.post5 srt/configs/model_config.py:130-137; 0.4.10.post2 :163-175); no "
        "max_position_embeddings override, no RoPE cache growth: the draft's cache is 2048 "
        "long (srt/models/llama.py:213; srt/layers/rotary_embedding.py:108-117, 156-164)")))
_put("draft-context-2048", "sglang", ["0.5.1"], row(OK, warnings=["context-exceeds-draft"], cite=(
    "_derive_context_length raises ValueError at start unless SGLANG_ALLOW_OVERWRITE_LONGER_"
    "CONTEXT_LEN is set (srt/configs/model_config.py:175-184); with it the draft's "
    "max_position_embeddings is not raised and no RoPE cache is reserved: overrun either way")))
_put("draft-context-2048", "sglang", ["0.5.6", "0.5.14", "0.5.23"], row(
    OK, warnings=["context-exceeds-draft"], cite=(
        "ValueError at start unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set (0.5.23 "
        "srt/configs/model_config.py:1302-1316; 0.5.6 :302-311); with it the draft's limit is "
        "raised and the RoPE cache reserved (0.5.23 :1308-1312, utils/common.py:4999-5036): "
        "untrained positions. The launch environment of launch arguments is unknown: both "
        "outcomes are said, as a warning")))
_put("draft-context-2048", "vllm", ["0.8.5", "0.10.1.1"], row(
    OK, warnings=["context-exceeds-draft"], cite=(
        "no check; the proposer bounds positions by the target's max_model_len (0.10.1.1 "
        "v1/spec_decode/eagle.py:52, 266-280; 0.8.5 eagle.py:32, 127-141) while the draft's "
        "rotary cache is max_position_embeddings long (0.10.1.1 model_executor/models/"
        "llama.py:236-237; 0.8.5 llama.py:167)")))
_put("draft-context-2048", "vllm", ["0.33.0"], row(
    OK, warnings=["context-exceeds-draft"], allow=["context-exceeds-draft"], cite=(
        "the draft's rope type is default (cache-only): its max_position_embeddings is raised "
        "to the target's max_model_len (config/speculative.py:104-113, 1839-1846); positions "
        "past 2048 were never trained")))

# ------------------------------------------------------------------ quantization, RoPE, tokenizer,
# tied head (the releases' behaviour per class; see each cite)
_put("fp8-target", "sglang", SGLANG, row(OK, warnings=["quantization-mismatch"], cite=(
    "the draft gets the CLI --quantization only, never the target checkpoint's "
    "quantization_config (0.5.23 srt/arg_groups/serving_hook.py:685-690; 0.5.6 "
    "srt/configs/model_config.py:241; 0.4.6.post5 :242): a bf16 draft on an FP8 target's "
    "hidden states")))
_put("fp8-target", "vllm", VLLM, row(OK, warnings=["quantization-mismatch"], cite=(
    "an EAGLE-3 draft never inherits the target's quantization (0.33.0 config/speculative.py:"
    "435-438, 1425; 0.10.1.1 config/__init__.py:2126; 0.8.5 config.py:2350-2373)")))
_put("yarn-target", "sglang", SGLANG, row(OK, warnings=["rope-mismatch"], cite=(
    "the draft is built with its own rope_theta/rope_scaling (0.5.23 srt/models/llama.py:"
    "322-336; 0.5.6 :212-221; 0.4.6.post5 :204-213): the target's YaRN does not reach it")))
_put("yarn-target", "vllm", VLLM, row(OK, warnings=["rope-mismatch"], cite=(
    "own rope settings (0.33.0 model_executor/models/llama.py:243-247; 0.10.1.1 :230-236)")))
_put("tokenizer-one-off", "sglang", SGLANG, row(DEFECT, ["tokenizer-mismatch"], cite=(
    "the draft worker uses the target's tokenizer (0.5.23 srt/managers/tp_worker.py:326-329 "
    "loads none; 0.5.6 :262-278 and 0.4.6.post5 :92-108 load the target's): the draft's own "
    "tokenizer files, one token apart, are never read")))
_put("tokenizer-one-off", "vllm", VLLM, row(DEFECT, ["tokenizer-mismatch"], cite=(
    "the draft ModelConfig takes the target's tokenizer (0.33.0 config/speculative.py:"
    "1409-1413; 0.10.1.1 config/__init__.py:2112; 0.8.5 config.py:2350-2373)")))
_put("tied-head", "sglang", ["0.4.6.post5"], row(
    DEFECT, ["draft-head-tied"], warnings=["unexpected-weights"], cite=(
        "lm_head = model.embed_tokens when tied (srt/models/llama_eagle3.py:170-171), the "
        "target's embedding after set_embed (srt/speculative/eagle_worker.py:125), indexed "
        "with the 32000-entry d2t (llama_eagle3.py:180); the trained lm_head.weight is skipped "
        "without a message (srt/models/llama.py:563)")))
_put("tied-head", "sglang", ["0.4.10.post2", "0.5.1"], row(DEFECT, ["draft-head-tied"], cite=(
    "tie_word_embeddings honoured (lm_head = embed_tokens, the target's after set_embed); the "
    "logits span the full vocabulary (srt/models/llama_eagle3.py:198) and index the 32000-entry "
    "hot_token_id out of range at runtime (0.5.1 srt/speculative/eagle_worker.py:647)")))
_put("tied-head", "sglang", ["0.5.6", "0.5.14", "0.5.23"], row(DEFECT, ["draft-head-tied"], cite=(
    "tie_word_embeddings honoured: lm_head = embed_tokens, then set_embed puts the target's "
    "embedding there, logits cut to draft_vocab_size rows (0.5.6 srt/models/llama_eagle3.py:"
    "207-208, 220-224; 0.5.23 :303-304, 316-320; eagle_worker_v2.py:362-363): wrong drafts")))
_put("tied-head", "vllm", VLLM, row(OK, cite=(
    "tie_word_embeddings ignored for the EAGLE-3 head: lm_head built unconditionally and "
    "loaded from the checkpoint (0.33.0 model_executor/models/llama_eagle3.py:329; 0.10.1.1 "
    ":207; 0.8.5 :178)")))

# a scale tensor (midlayer.mlp.gate_proj.weight_scale_inv) in a draft whose config declares no
# quantization: what each release's load_weights does with it is quantization-mismatch's
# evidence ("start-fails" or "dropped"); it is the one finding for it
_put("scales-unquantized", "sglang", ["0.4.6.post5"], row(DEFECT, ["quantization-mismatch"], cite=(
    "gate_proj -> gate_up_proj stacked mapping, then params_dict[name] raises KeyError at start "
    "(srt/models/llama.py:578) through llama_eagle3.py:188-196")))
_put("scales-unquantized", "sglang", ["0.4.10.post2", "0.5.1", "0.5.6", "0.5.14", "0.5.23"],
     row(DEFECT, ["quantization-mismatch"], cite=(
        "`if param_name in params_dict` with no else: dropped without a message "
        "(0.4.10.post2 and 0.5.1 srt/models/llama_eagle3.py:227-229; 0.5.6 :255, 265; 0.5.23 "
        ":358-373)")))  # fmt: skip
_put("scales-unquantized", "vllm", VLLM, row(DEFECT, ["quantization-mismatch"], cite=(
    "refused at start: params_dict[name] KeyError (0.8.5 model_executor/models/llama_eagle3.py:"
    "155, 160; 0.10.1.1 :181, 186); 0.33.0 AutoWeightsLoader raises ValueError on an unexpected "
    "weight (model_executor/models/utils.py:436-448)")))

# --attention-backend torch_native: a backend SGLang serves targets with, but not EAGLE drafts
_put("backend-unsupported", "sglang", SGLANG, row(DEFECT, ["draft-settings"], cite=(
    "not in the draft decode backends: ValueError 'EAGLE is not supported in attention backend' "
    "at start (0.4.6.post5 srt/speculative/eagle_worker.py:153-219; 0.4.10.post2 :182-256; "
    "0.5.1 :181-308; 0.5.6 srt/speculative/draft_utils.py:38-58; 0.5.14 :44-66; 0.5.23 "
    ":96-117)")))

# ------------------------------------------------------------------ Kimi-K2.5 (multimodal wrapper)
# The target's config.json nests the language model in text_config (top level: no hidden_size /
# num_hidden_layers); the draft is a SpecForge LlamaForCausalLMEagle3 head, hidden 7168, trained
# on the outputs of layers 1, 29, 57 of 61 (--var train_layers 1,29,57), its config recording
# eagle_config.eagle_aux_hidden_state_layer_ids. Releases that ship srt/models/kimi_k25.py
# (SGLang, from 0.5.9: 0.5.8.post1's wheel has none) / model_executor/models/kimi_k25.py (vLLM), in
# this suite: SGLang 0.5.14, 0.5.23; vLLM 0.33.0.
KIMI_SGLANG = ["0.5.14", "0.5.23"]
KIMI_VLLM = ["0.33.0"]
_SG_KIMI = (
    "the wrapper builds DeepseekV3ForCausalLM(config.text_config) (0.5.23 srt/models/"
    "kimi_k25.py:41, 693-694; 0.5.14 :39, 660-661) and its set_eagle3_layers_to_capture calls "
    "the language model's (0.5.23 kimi_k25.py:928-939; 0.5.14 :834-845); DeepSeek's setter adds "
    "1 only when the first id is 1, else keeps the ids (0.5.23 srt/models/deepseek_v2.py:"
    "3458-3473; 0.5.14 :2799-2814); index c is captured at the start of layer c, its input "
    "(0.5.23 deepseek_v2.py:3193-3194 -> layer_boundary/stage.py:461-473; 0.5.14 "
    "deepseek_v2.py:2501-2502); ids from eagle_config (0.5.23 model_executor/"
    "model_runner_components/spec_aux_hidden_state.py:185-196; 0.5.14 model_runner.py:458-470)"
)
_VL_KIMI = (
    "registry.py:487 KimiK25ForConditionalGeneration; the wrapper builds its language model "
    "through the registry from config.text_config as DeepseekV2ForCausalLM (model_executor/"
    "models/kimi_k25.py:376-380) and delegates the capture methods to it (:470-474); the runner "
    "uses top-level draft-config ids, else get_eagle3_default_aux_hidden_state_layers "
    "(v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:25-40, 113-150): SupportsEagle3's default "
    "counts language_model.model.layers (model_executor/models/interfaces.py:1751-1772) = "
    "(2, 30, 58) for 61 layers, captured before layer idx runs (deepseek_v2.py:1561-1569): "
    "outputs 1, 29, 57"
)
_put("kimi-k25-correct", "sglang", KIMI_SGLANG, row(OK, cite=(
    "ids [1,29,57] -> capture [2,30,58] = outputs 1,29,57, the training layers; " + _SG_KIMI
    + "; fc in = target hidden 7168 (text_config.hidden_size) x 3 (0.5.23 llama_eagle3.py:"
    "151-167)")))
_put("kimi-k25-correct", "vllm", KIMI_VLLM, row(OK, cite=(
    "eagle_config ids not read; the default is the training layers; " + _VL_KIMI
    + "; fc in = target_hidden_size x 3 (model_executor/models/llama_eagle3.py:210-221)")))
_put("kimi-k2-correct", "sglang", KIMI_SGLANG, row(OK, cite=(
    "the text-only Kimi-K2 (DeepseekV3ForCausalLM, flat config) runs the same setter directly "
    "(0.5.23 deepseek_v2.py:3458-3473)")))
_put("kimi-k2-correct", "vllm", KIMI_VLLM, row(OK, cite=(
    "DeepseekV3ForCausalLM(DeepseekV2ForCausalLM) with SupportsEagle3 (model_executor/models/"
    "deepseek_v2.py:1872-1878, 2005): default (2, 30, 58) = outputs 1, 29, 57")))
_put("kimi-k25-fc-narrow", "sglang", KIMI_SGLANG, row(DEFECT, ["fc-shape-mismatch"], cite=(
    "fc = Linear(hidden_size_in x num_aux, hidden) (0.5.23 srt/models/llama_eagle3.py:151-167; "
    "0.5.14 :143-159): [7168, 21504], the checkpoint's [7168, 14336] does not load")))
_put("kimi-k25-fc-narrow", "vllm", KIMI_VLLM, row(DEFECT, ["fc-shape-mismatch"], cite=(
    "fc input_size = target_hidden_size x num_aux_hidden_states (model_executor/models/"
    "llama_eagle3.py:210-221, 242-246) = 21504")))
_put("kimi-k25-aux-off-by-one", "sglang", KIMI_SGLANG, row(DEFECT, ["aux-layers-mismatch"], cite=(
    "ids [0,28,56]: the first is not 1, so they are kept as capture indices: inputs of layers "
    "0, 28, 56 = the embedding and outputs 27, 55, not the training 1, 29, 57; " + _SG_KIMI)))
_put("kimi-k25-aux-off-by-one", "vllm", KIMI_VLLM, row(OK, warnings=["aux-layers-ignored"], cite=(
    "the nested ids are not read (eagle3_utils.py:113-150 top-level keys only): the default "
    "(2, 30, 58) captures the training outputs 1, 29, 57; the recorded [0,28,56] is ignored; "
    + _VL_KIMI)))
_put("kimi-k25-aux-input-ids", "sglang", KIMI_SGLANG, row(OK, cite=(
    "ids [2,30,58] (layer inputs, the aux-off-by-one mistake): DeepSeek's setter keeps ids whose "
    "first is not 1, so it captures inputs 2, 30, 58 = outputs 1, 29, 57, the training layers "
    "(0.5.23 deepseek_v2.py:3470-3473; 0.5.14 :2811-2814); " + _SG_KIMI)))
_put("kimi-k25-aux-input-ids", "vllm", KIMI_VLLM, row(OK, warnings=["aux-layers-ignored"], cite=(
    "nested ids not read; default (2, 30, 58) = outputs 1, 29, 57; " + _VL_KIMI)))

# releases without kimi_k25.py: no KimiK25ForConditionalGeneration in their models, so their
# registry cannot build it; the fallback cannot capture either
_put("kimi-k25-correct", "sglang", ["0.4.6.post5"], row(DEFECT, ["target-unsupported"], cite=(
    "not in the registry (EntryClass of srt/models/*.py): ValueError 'Model architectures [...] "
    "are not supported for now' (srt/models/registry.py:32-35, model_loader/utils.py:22-37; no "
    "Transformers fallback in this release)")))
_put("kimi-k25-correct", "sglang", ["0.4.10.post2", "0.5.1", "0.5.6"], row(
    DEFECT, ["target-unsupported"], cite=(
        "not native: resolve_transformers_arch (0.5.6 srt/model_loader/utils.py:99-106; "
        "0.5.1 and 0.4.10.post2 :27-67, 101) raises without an AutoModel auto_map, else serves "
        "TransformersForCausalLM, which has no set_eagle3_layers_to_capture (srt/models/"
        "transformers.py) that EAGLE3 calls (0.5.6 model_executor/model_runner.py:552): the "
        "server stops at start")))
_put("kimi-k25-correct", "vllm", ["0.8.5", "0.10.1.1"], row(DEFECT, ["target-unsupported"], cite=(
    "not in model_executor/models/registry.py (only KimiVLForConditionalGeneration: 0.8.5 :186, "
    "0.10.1.1 :220); the Transformers fallback (model_executor/models/transformers.py) has no "
    "EAGLE-3 capture, and eagle3 targets are restricted by hf_text_config.model_type to llama "
    "(0.8.5 config.py:2588-2592) / llama, qwen (0.10.1.1 config/__init__.py:2347-2354): "
    "ValueError at start")))

# ------------------------------------------------------------------ vLLM 0.11.2 and 0.20.0
# Releases whose EAGLE-3 loader branches on the draft's quant_config (0.11.2 model_executor/
# models/llama_eagle3.py:224-236, 0.20.0 :239-251: `self.quant_config is not None and
# (scale_name := ...)`). quant_config is get_draft_quant_config(vllm_config) (0.11.2
# llama_eagle3.py:145, models/utils.py:721-742; 0.20.0 :146, utils.py:717-738) ->
# VllmConfig._get_quantization_config, None unless the draft ModelConfig's quantization is set
# (0.11.2 config/vllm.py:242-272; 0.20.0 :521-555); that is the speculative config's
# `quantization` (None by default; 0.11.2 config/speculative.py:80, 337; 0.20.0 :573) or the
# draft config's quantization_config (0.11.2 config/model.py:968-1045; 0.20.0 :932-1001). These
# drafts declare none: the branch is never taken.
VLLM_QUANT = ["0.11.2", "0.20.0"]
_put("correct", "vllm", ["0.11.2"], row(OK, cite=(
    "registry.py:404 LlamaForCausalLMEagle3 -> llama_eagle3.Eagle3LlamaForCausalLM; "
    "load_weights llama_eagle3.py:340-370 (model. prefix, d2t -> draft_id_to_target_id) -> "
    "AutoWeightsLoader -> LlamaModel.load_weights :210-258 (midlayer -> layers.0, stacked "
    "qkv/gate_up), quant branch not taken; embed shared v1/spec_decode/eagle.py:998-1048; "
    "capture llama.py:628-636")))
_put("correct", "vllm", ["0.20.0"], row(OK, cite=(
    "registry.py:579 LlamaForCausalLMEagle3; llama_eagle3.py:374-420 -> LlamaModel.load_weights "
    ":225-273, quant branch not taken; embed shared v1/spec_decode/llm_base_proposer.py:"
    "1412-1455; default capture model_executor/models/interfaces.py:1368-1390")))
_put("correct-qwen3", "vllm", ["0.11.2"], row(OK, cite=(
    "Qwen3ForCausalLM(SupportsEagle3) qwen3.py:258, :302-307; qwen among eagle3 targets "
    "config/speculative.py:621-633")))
_put("correct-qwen3", "vllm", ["0.20.0"], row(OK, cite=(
    "Qwen3ForCausalLM(SupportsEagle3) qwen3.py:261-262; default interfaces.py:1368-1390; "
    "config/speculative.py:905-931")))
_put("eagle3-as-eagle", "vllm", VLLM_QUANT, row(DEFECT, ["algorithm-mismatch"], cite=(
    "method eagle: EAGLEConfig names the arch Eagle + arch (0.11.2 transformers_utils/configs/"
    "eagle.py:44-50; 0.20.0 :46-52): EagleLlamaForCausalLMEagle3 unregistered, ValueError "
    "(0.11.2 model_executor/models/registry.py:786; 0.20.0 :999)")))
_put("d2t-absolute", "vllm", VLLM_QUANT, row(DEFECT, ["d2t-absolute-ids"], cite=(
    "compute_logits scatters to arange + draft_id_to_target_id (0.11.2 llama_eagle3.py:309-331; "
    "0.20.0 :338-360): absolute ids are shifted again")))
_put("fc-other-target", "vllm", VLLM_QUANT, row(DEFECT, ["fc-shape-mismatch"], cite=(
    "fc input_size = target_hidden_size (else hidden_size) x 3 (0.11.2 llama_eagle3.py:166-177; "
    "0.20.0 :175-190): 12288, not the checkpoint's 15360")))
_put("prefix-model", "vllm", VLLM_QUANT, row(DEFECT, ["draft-load-fails"], cite=(
    "model.+name -> model.model.midlayer...; LlamaModel.load_weights params_dict[name] KeyError "
    "(0.11.2 llama_eagle3.py:350-351, 246, 251; 0.20.0 :397-398, 261, 266)")))
_put("lm-head-missing", "vllm", VLLM_QUANT, row(DEFECT, ["required-weights-missing"], cite=(
    "no lm_head in the checkpoint: has_own_lm_head stays False (models/utils.py process_eagle_"
    "weight; 0.11.2 :875, 0.20.0 :871) and the target's 128256-row head is shared (0.11.2 "
    "v1/spec_decode/eagle.py:1055-1062; 0.20.0 llm_base_proposer.py:1460-1470) while logits "
    "are scattered by the 32000-entry d2t (0.11.2 llama_eagle3.py:320-331; 0.20.0 :349-360)")))
_put("kimi-k25-correct", "vllm", ["0.11.2"], row(DEFECT, ["target-unsupported"], cite=(
    "KimiK25ForConditionalGeneration not in model_executor/models/registry.py (only "
    "KimiVLForConditionalGeneration :310, KimiLinearForCausalLM :122), and eagle3 targets are "
    "llama/qwen/minicpm/gpt_oss by hf_text_config.model_type: ValueError (config/speculative.py:"
    "621-633)")))
_put("kimi-k25-correct", "vllm", ["0.20.0"], row(OK, cite=(
    "registry.py:447 KimiK25ForConditionalGeneration; kimi_k2/kimi_k25 eagle3 targets "
    "(config/speculative.py:905-931); the wrapper builds its language model from "
    "config.text_config (model_executor/models/kimi_k25.py:356-361) as DeepseekV2ForCausalLM "
    "(SupportsEagle3, deepseek_v2.py:1334-1341); the V1 runner (VLLM_USE_V2_MODEL_RUNNER "
    "default False, envs.py:249) reads top-level eagle_aux_hidden_state_layer_ids only "
    "(v1/worker/gpu_model_runner.py:4950-4970), else the SupportsEagle3 default over "
    "language_model.model.layers (interfaces.py:1368-1390, gpu_model_runner.py:4836-4847): "
    "(2, 30, 58) captured before layer idx runs (deepseek_v2.py:1270-1278) = outputs 1, 29, 57, "
    "the training layers; fc in = target_hidden_size x 3 (llama_eagle3.py:175-190)")))

# An EAGLE-3 head with DeepSeek's MLA attention for a DeepSeek-V3 target (tests/realshape.py
# eagle3_mla_config / eagle3_mla_tensors): q_lora_rank 1536 in the draft's config
_put("mla-eagle3-correct", "vllm", ["0.20.0"], row(OK, cite=(
    "model_type deepseek_v2 is not rewritten (config/speculative.py:288-300); arch "
    "Eagle3DeepseekV2ForCausalLM kept by EAGLEConfig (transformers_utils/configs/eagle.py:55-64) "
    "-> deepseek_eagle3.Eagle3DeepseekV2ForCausalLM (model_executor/models/registry.py:586); "
    "load_weights deepseek_eagle3.py:386-415 -> DeepseekV2Eagle3Model.load_weights :248-298; "
    "quant_config None (as for VLLM_QUANT above, :63, :180); the layer passes "
    "q_lora_rank=config.q_lora_rank (deepseek_eagle3.py:91), "
    "so DeepseekV2MLAAttention builds fused_qkv_a_proj, not kv_a_proj_with_mqa (deepseek_v2.py:"
    "904-912); q_a_proj and kv_a_proj_with_mqa load into it as shards 0 and 1 "
    "(deepseek_eagle3.py:253-254); deepseek_v3 is an eagle3 target (config/speculative.py:"
    "905-931); capture default (2, 30, 58) (interfaces.py:1368-1390)")))
_put("scales-unquantized", "vllm", VLLM_QUANT, row(DEFECT, ["quantization-mismatch"], cite=(
    "refused at start: quant_config None (above), maybe_remap_kv_scale_name leaves a name "
    "without a kv-scale suffix untouched (model_loader/weight_utils.py 0.11.2:1002-1084, "
    "0.20.0:1504-1607), gate_proj -> gate_up_proj, params_dict[name] KeyError (0.11.2 "
    "llama_eagle3.py:238-246; 0.20.0 :253-261)")))
