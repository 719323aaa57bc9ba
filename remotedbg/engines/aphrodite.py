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
are mutually exclusive") (:1512-1513): stock vLLM has neither the flags nor the check, and its
EAGLE path is otherwise vLLM's (config/speculative.py, transformers_utils/configs/eagle.py), so
this is the EAGLE-3 failure of Aphrodite's own.

Its version numbers are its own: no vLLM release rule is gated on them (they are stated as
not applied), and the install is named "aphrodite-engine 0.22.0, a fork of vLLM".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from remotedbg.engines.vllm import VLLMProfile

#: its own flags (parsed-args keys) -> the speculative config's key each sets
#: (engine/arg_utils.py:1503-1507)
OWN_SETTINGS_FLAGS = {"spec-method": "method", "spec-model": "model",
                      "spec-tokens": "num_speculative_tokens"}  # fmt: skip


class AphroditeProfile(VLLMProfile):
    name = "aphrodite"
    label = "Aphrodite"
    fork_of = "vllm"
    distribution = "aphrodite-engine"
    versions_gate_rules = False
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

    def _own_flags(self, args: Mapping[str, Any]) -> dict[str, Any]:
        return {flag: args[flag] for flag in OWN_SETTINGS_FLAGS if args.get(flag) is not None}

    def launch_settings(self, args: Mapping[str, Any]) -> dict | None:
        """--speculative-config with its own flags written in (arg_utils.py:1503-1514)."""
        own = self._own_flags(args)
        spec = super().launch_settings(args)
        if not own:
            return spec
        merged = dict(spec or {})
        for flag, value in own.items():
            key = OWN_SETTINGS_FLAGS[flag]
            if key == "num_speculative_tokens" and str(value).isdigit():
                value = int(value)
            merged.setdefault(key, value)
        return merged

    def settings_refused(self, args: Mapping[str, Any]) -> tuple[str, str] | None:
        spec = super().launch_settings(args) or {}
        clashes = [flag for flag in self._own_flags(args) if OWN_SETTINGS_FLAGS[flag] in spec]
        if not clashes:
            return None
        flag = clashes[0]
        key = OWN_SETTINGS_FLAGS[flag]
        return (
            f"--{flag} and --speculative-config['{key}'] both given: Aphrodite refuses to start",
            f"Aphrodite writes --{flag} into the speculative config and raises ValueError("
            f"\"--{flag} and --speculative-config['{key}'] are mutually exclusive\") at start "
            "when the JSON already has that key (aphrodite/engine/arg_utils.py:1503-1514). "
            f"Give {key} once: drop --{flag}, or drop '{key}' from --speculative-config.",
        )


APHRODITE = AphroditeProfile()
