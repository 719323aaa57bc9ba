"""What to look for in an engine's code to learn how it serves a draft (knowledge, data only).

The analyses in remotedbg.analysis.engine_facts read these facts from the install itself; the
names here only say where to look. Releases they were read in: SGLang 0.4.6.post5, 0.4.10.post2,
0.5.1, 0.5.6, 0.5.14, 0.5.23; vLLM 0.8.5, 0.10.1.1, 0.33.0 (tests/conformance_table.py cites
the lines).
"""

from __future__ import annotations

#: A grep (ERE) over the engine package, model files excluded, finding the code that serves a
#: draft: embedding sharing, aux-layer capture calls, where draft-config layer ids are read,
#: acceptance metrics, vLLM's EAGLE config and proposer.
SERVING_CODE_PATTERN = (
    r"set_embed|embed_tokens *=|eagle_aux_hidden_state_layer_ids|set_eagle3_layers_to_capture"
    r"|eagle3_aux_hidden_state_layers|eagle3_default_aux_hidden_state_layers"
    r"|mean_acceptance_length|class EAGLEConfig|llama_eagle3 import|requires_aux_hidden_states"
    r"|EAGLE is not supported in"
)
#: The message SGLang raises with when the draft's attention backend has no EAGLE variant
#: (0.4.6.post5 - 0.5.1 srt/speculative/eagle_worker.py: an if/elif chain on
#: server_args.attention_backend; 0.5.6+ srt/speculative/draft_utils.py: backend_map dicts).
DRAFT_BACKEND_ERROR = "EAGLE is not supported in"

#: Methods an engine calls on the TARGET model to choose the hidden states fed to an EAGLE-3
#: draft: SGLang's setter, vLLM's getters (0.8.5/0.10.1.1 per model; 0.33.0 a default in the
#: SupportsEagle3 interface).
CAPTURE_SETTERS = ("set_eagle3_layers_to_capture",)
CAPTURE_GETTERS = (
    "get_eagle3_aux_hidden_state_layers",
    "get_eagle3_default_aux_hidden_state_layers",
)
CAPTURE_METHODS = CAPTURE_SETTERS + CAPTURE_GETTERS

#: Methods the SGLang worker calls on the draft to give it the target's embedding (and head).
EMBED_SHARING_CALLS = ("set_embed", "set_embed_and_head")
#: ... and its head: for an EAGLE-1 draft the worker's non-EAGLE3 branch always calls it with the
#: target's `get_embed_and_head()` (SGLang 0.4.6.post5 srt/speculative/eagle_worker.py:138, 0.5.6
#: :173 and eagle_worker_v2.py:191, 0.5.14 eagle_worker_v2.py:344, 0.5.23 :378), and
#: LlamaForCausalLMEagle.load_weights skips every lm_head key (srt/models/llama_eagle.py:
#: 142-146); vLLM 0.8.5 assigns `self.model.lm_head = target_model.lm_head` for methods other
#: than eagle3 (v1/spec_decode/eagle.py:247-249). An EAGLE-1 checkpoint without lm_head is the
#: normal case there.
HEAD_SHARING_CALLS = ("set_embed_and_head",)

#: SGLang's settings registry (a class of `NAME = EnvBool(default)` fields, read as
#: `envs.NAME.get()`), and the field types whose first argument is the default.
SETTINGS_REGISTRY = "srt/environ.py"
SETTING_FIELDS = ("EnvBool", "EnvInt", "EnvFloat", "EnvStr", "EnvBoolWithAlias")

#: The draft-config key holding the training's aux layer ids.
AUX_IDS_KEY = "eagle_aux_hidden_state_layer_ids"

#: Code that reads the aux-layer ids for other methods than EAGLE-3 (SGLang dflash_utils.py,
#: vLLM extract_hidden_states.py), or converts other config formats (vLLM
#: transformers_utils/configs/speculators): not where an EAGLE-3 deployment's ids are chosen.
AUX_IDS_OTHER_READERS = ("dflash", "extract_hidden_states", "transformers_utils/", "dspark")

#: vLLM: files of the model runner that Model Runner V2 (v1/worker/gpu/) replaces. The V2 files
#: ship from 0.12.0, but which runner serves is the engine's choice, not which files exist: the
#: environment variable below, whose default envs.py defines (`bool(int(os.getenv(NAME, "0")))`
#: in 0.12.0-0.20.x: V1 unless set; `maybe_convert_bool(os.getenv(NAME, None))` from 0.22.0:
#: unset leaves it to VllmConfig.use_v2_model_runner: 0.22.0-0.28.0 per target (below), then V2
#: unless the deployment uses a feature V2 lacks, 0.33.0 config/vllm.py:731-767).
VLLM_V2_MARKER = "v1/worker/gpu/model_runner.py"
VLLM_V1_ONLY = ("v1/worker/gpu_model_runner.py",)
VLLM_RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"
VLLM_ENVS = "envs.py"
#: vLLM: where VllmConfig.use_v2_model_runner decides when the env var is unset, and its
#: per-target rule (0.22.0-0.28.0; remotedbg.analysis.vllm_runner evaluates it); the target's
#: MoE-ness comes from the arch-config convertor's `num_expert_names`, hybrid / attention-free
#: from the model class's interfaces (0.25.0 model_executor/models/interfaces.py IsHybrid,
#: IsAttentionFree, whose class attributes the registry's _ModelInfo reads); the platform is
#: taken as CUDA.
VLLM_RUNNER_CONFIG = "config/vllm.py"
VLLM_ARCH_CONVERTOR = "transformers_utils/model_arch_config_convertor.py"
VLLM_V2_TARGET_RULE = "_is_default_v2_model_runner_model"
VLLM_HYBRID_BASE = "IsHybrid"
VLLM_ATTENTION_FREE_BASE = "IsAttentionFree"
VLLM_PLATFORM_CALLS = {"current_platform.is_rocm": False}
VLLM_RUNNER_FILES = (VLLM_ENVS, VLLM_RUNNER_CONFIG, VLLM_ARCH_CONVERTOR)

#: Files the loader model and the facts read besides the draft and target model files.
VLLM_EAGLE_CONFIG = "transformers_utils/configs/eagle.py"
VLLM_SPEC_CONFIGS = ("config/speculative.py", "config/__init__.py", "config.py")
#: vLLM: SpeculativeConfig's EAGLE-3 target check, an `if` comparing the method with this
#: constant and reading the target's text `model_type` (a substring of it must be one of the
#: listed types, else ValueError "... is only supported for ... models"): 0.8.5-0.10.1 `"llama"
#: not in`, 0.10.2-0.16.0 a list `eagle3_target_supported` (0.13.0
#: config/speculative.py:621-632), 0.17.0-0.21.0 `aux_hidden_states_supported` (0.17.0
#: :768-789); 0.22.0 drops the check (engine_facts.eagle3_target_types reads every form).
VLLM_EAGLE3_METHOD = "eagle3"
VLLM_TARGET_TYPE_FIELD = "model_type"
VLLM_METRICS = "v1/spec_decode/metrics.py"
VLLM_PROPOSER = "v1/spec_decode/eagle.py"

#: Import budget when following a draft or target class into the modules it comes from.
MAX_IMPORT_ROUNDS = 2
MAX_FILES = 96
#: Serving files read of those the grep finds outside the model directories: every one on every
#: release (at most 33, SGLang 0.5.23; vLLM 20), so which are read never depends on the order a
#: filesystem lists a directory in.
MAX_SERVING_FILES = 48
