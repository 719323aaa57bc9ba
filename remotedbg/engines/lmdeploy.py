"""LMDeploy: where its code lives, how it is launched, and how its PyTorch engine loads an EAGLE
draft (paths relative to site-packages; lmdeploy 0.18.0 from the registry, the newest release,
whose PyTorch engine serves EAGLE-3 for Llama and the Kimi/DeepSeek MLA head).

Launch: `lmdeploy serve api_server TARGET --speculative-algorithm eagle3
--speculative-draft-model DRAFT --speculative-num-draft-tokens N` (lmdeploy/cli/serve.py:30-35
the api_server subcommand and its positional model_path; lmdeploy/cli/utils.py:835-849 the three
flags, algorithms eagle, eagle3, deepseek_mtp, hy3_mtp, qwen3_5_mtp, dflash; :97-101 N is the
SpeculativeConfig's num_speculative_tokens); default port 23333 (cli/serve.py:332).

Draft architecture: the draft config's architectures[0] is renamed after the method only when it
is exactly `LlamaForCausalLM` (`spec_method.capitalize() + arch`: 0.18.0
lmdeploy/pytorch/configurations/llama.py:11, :20), then looked up in MODULE_MAP
(pytorch/models/module_map.py:327-336: Eagle3LlamaForCausalLM, Eagle3DeepseekV2ForCausalLM);
an architecture it has no entry for raises RuntimeError('Can not found rewrite for
architectures: ...') at start (pytorch/models/patch.py:189-196). SpecForge's spelling
`LlamaForCausalLMEagle3` is neither renamed nor registered: the commonest LMDeploy failure.

d2t: stored as offsets; the loader adds arange(draft_vocab_size) to it (pytorch/models/
llama_eagle3.py:291-296) and the proposer maps draft ids through the result
(pytorch/spec_decode/proposers/eagle3.py:137).

Aux layers: fixed by LMDeploy for a Llama target, (2, L // 2, L - 3) of its L layers
(configurations/llama.py:25-28), whatever the draft's config records.
"""

from __future__ import annotations

import ast

from remotedbg.engines.profile import EngineProfile
from remotedbg.engines.text_config import text_config

#: The module attribute whose entries map an architecture to its class (module_map.py)
MODULE_MAP = "MODULE_MAP"
#: The one draft architecture its config builder renames after the method (llama.py:11, :20)
RENAMED_ARCHITECTURE = "LlamaForCausalLM"


def _entry(key: ast.expr | None, value: ast.expr) -> tuple[str, tuple[str, str]] | None:
    """'Arch': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.module.Class' -> ('Arch', ('module', 'Class'))."""
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return None
    if isinstance(value, ast.JoinedStr):
        text = "".join(v.value for v in value.values if isinstance(v, ast.Constant))
    elif isinstance(value, ast.Constant) and isinstance(value.value, str):
        text = value.value
    else:
        return None
    parts = [p for p in text.split(".") if p]
    if len(parts) < 2:
        return None
    return key.value, (parts[-2], parts[-1])


def module_map_entries(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Architecture -> (module, class) from module_map.py: the MODULE_MAP dict literal and every
    `MODULE_MAP.update({...})` after it (0.18.0 :6 onwards), later entries winning."""
    dicts: list[ast.Dict] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
            isinstance(t, ast.Name) and t.id == MODULE_MAP for t in node.targets
        ):
            dicts.append(node.value)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            if not isinstance(func, ast.Attribute):
                continue
            target = func.value
            if func.attr == "update" and isinstance(target, ast.Name) and target.id == MODULE_MAP:
                dicts += [a for a in node.value.args if isinstance(a, ast.Dict)]
    out: dict[str, tuple[str, str]] = {}
    for d in dicts:
        for key, value in zip(d.keys, d.values, strict=False):
            entry = _entry(key, value)
            if entry:
                out[entry[0]] = entry[1]
    return out


class LMDeployProfile(EngineProfile):
    name = "lmdeploy"
    label = "LMDeploy"
    scan = {
        "package": "lmdeploy",
        # its PyTorch engine (the TurboMind engine serves no EAGLE draft)
        "package_markers": ["pytorch"],
        "models_dir": "pytorch/models",
        "fallback_models": [],
        "worker_dirs": ["pytorch/spec_decode"],
        "registry_file": "pytorch/models/module_map.py",
        "version_files": ["version.py"],  # __version__ = '0.18.0' (lmdeploy/version.py:3)
        "name_excludes": [],
        "dist_names": ["lmdeploy"],
        "process_patterns": [
            r"\blmdeploy\s+serve\s+api_server\b",
            r"/bin/lmdeploy\b",
            r"-m\s+lmdeploy\b",
            r"\blmdeploy\.serve\.openai\.api_server\b",
        ],
    }

    speculation_flag = "--speculative-algorithm"
    algorithm_flag = "--speculative-algorithm"
    draft_flag = "--speculative-draft-model"
    context_arg = "session-len"  # cli/utils.py:244
    overrides_arg = "hf-overrides"  # cli/utils.py:293

    served_families = {"eagle3": "eagle3", "eagle": "eagle", "deepseek_mtp": "mtp",
                       "hy3_mtp": "mtp", "qwen3_5_mtp": "mtp"}  # fmt: skip
    launch_algorithms = {"eagle3": "eagle3", "eagle": "eagle", "mtp": "deepseek_mtp"}
    families_served_by = {"eagle3": frozenset({"eagle3"}), "eagle": frozenset({"eagle"}),
                          "mtp": frozenset({"mtp"})}  # fmt: skip
    # LlamaForCausalLM in a draft's config becomes Eagle3LlamaForCausalLM under eagle3
    names_head_after_method = True
    registers_draft_architectures = True

    capture_in_target_code = False
    reads_context_rules = False  # its session-len and rotary rules were not read

    def fixed_capture(self, target_config: dict) -> dict | None:
        """(2, L // 2, L - 3) for a LlamaForCausalLM target (configurations/llama.py:11, :25-28),
        captured as each of those layers' input (pytorch/models/llama.py:264-266); other targets
        not read here."""
        config = text_config(target_config)
        layers = config.get("num_hidden_layers")
        archs = target_config.get("architectures") or []
        if not archs or archs[0] != RENAMED_ARCHITECTURE or not isinstance(layers, int):
            return None
        return {"layers_to_capture": [2, layers // 2, layers - 3],
                "where": "lmdeploy/pytorch/configurations/llama.py:25-28"}  # fmt: skip

    def served_context_length(self, config: dict, version: str | None) -> int | None:
        return None  # not read for this release

    def draft_context_length(self, config: dict) -> int | None:
        return None

    def registry_entries(self, tree: ast.Module) -> dict[str, tuple]:
        return module_map_entries(tree)

    def served_architectures(self, architectures: list[str], method: str | None) -> list[str]:
        archs = list(architectures)
        if archs and archs[0] == RENAMED_ARCHITECTURE and method:
            archs[0] = str(method).capitalize() + archs[0]
        return archs

    def unregistered_draft(self, served: list[str], given: list) -> tuple[str, str]:
        return (
            f"LMDeploy cannot map the draft architecture {given}",
            f"The draft config names {given}; LMDeploy renames only {RENAMED_ARCHITECTURE} "
            "after the method (lmdeploy/pytorch/configurations/llama.py:11, :20) and looks "
            f"{served} up in MODULE_MAP (pytorch/models/module_map.py), which has no such entry: "
            "the server stops at start with RuntimeError('Can not found rewrite for "
            "architectures: ...') (pytorch/models/patch.py:189-196). SpecForge writes "
            "LlamaForCausalLMEagle3; set the draft config's architectures to "
            f"[\"{RENAMED_ARCHITECTURE}\"].",
        )


LMDEPLOY = LMDeployProfile()
