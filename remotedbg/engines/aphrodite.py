"""Aphrodite (PygmalionAI's `aphrodite-engine`, package `aphrodite`): a fork of vLLM whose code
keeps vLLM's layout (paths relative to site-packages; aphrodite-engine 0.22.0 from the
registry, the newest wheel it offers for Python 3.11).

Launch: `aphrodite run MODEL` or `aphrodite serve MODEL` (aphrodite/entrypoints/cli/run.py:12,
serve.py:49; console script `aphrodite`, entry_points.txt), `--speculative-config` / `-sc` JSON
as vLLM's (aphrodite/engine/arg_utils.py:1323-1324). Draft architectures are looked up in
model_executor/models/registry.py (0.22.0 :614-628: Eagle3LlamaForCausalLM, and SpecForge's
LlamaForCausalLMEagle3 mapped to the same class at :618), renamed after the method by
transformers_utils/configs/eagle.py, as vLLM does.

Its own flags: `--spec-method`, `--spec-model`, `--spec-tokens` (engine/arg_utils.py:1326-1328)
are written into the speculative config (:1503-1514), and one whose key the --speculative-config
JSON also gives stops the start with ValueError("--spec-model and --speculative-config['model']
are mutually exclusive") (:1512-1513): vLLM added the same flags and check in 0.22.0
(engines/vllm.py VLLMProfile.settings_refused); Aphrodite has them whatever its version says.

Its version numbers are its own: no vLLM release rule is gated on them (they are stated as
not applied), and the install is named "aphrodite-engine 0.22.0, a fork of vLLM".
"""

from __future__ import annotations

from remotedbg.engines.vllm import VLLMProfile


class AphroditeProfile(VLLMProfile):
    name = "aphrodite"
    label = "Aphrodite"
    fork_of = "vllm"
    distribution = "aphrodite-engine"
    versions_gate_rules = False
    settings_flags_since = None
    settings_flags_at = "aphrodite/engine/arg_utils.py:1326-1328, 1503-1514"
    tokens_required_at = "aphrodite/config/speculative.py:885-886, :1076-1082"
    # its draft classes take `aphrodite_config` (0.22.0 model_executor/models/llama_eagle3.py:293)
    loader_config_argument = "aphrodite_config"
    # its own entry-point groups (0.22.0 plugins/__init__.py:18, :23): a vLLM plugin is not
    # loaded by it; its registry's register_model is vLLM's (model_executor/models/
    # registry.py:1022), on a ModelRegistry imported from `aphrodite`
    plugin_groups = ("aphrodite.general_plugins", "aphrodite.platform_plugins")
    scan = {
        **VLLMProfile.scan,
        "package": "aphrodite",
        # the dist-info is spelled aphrodite_engine-0.22.0.dist-info
        "dist_names": ["aphrodite_engine"],
        "process_patterns": [
            r"\baphrodite\s+(?:run|serve)\b",
            r"/bin/aphrodite\b",
            r"\baphrodite\.entrypoints\b",
            r"-m\s+aphrodite\b",
        ],
    }


APHRODITE = AphroditeProfile()
