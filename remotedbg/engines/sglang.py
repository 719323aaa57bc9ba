"""SGLang: where its code lives, how it is launched, and what its releases do with a draft that
does not fit its target (paths relative to site-packages; the releases of tests/releases.py).

Launch: `--speculative-algorithm` (EAGLE3, EAGLE, NEXTN, which server_args.py maps to EAGLE in
every release read; STANDALONE), `--speculative-draft-model-path`, `--context-length`,
`--json-model-override-args`; the draft class is the model file's `EntryClass`.

Context length (`get_context_length`: 0.5.23 sglang/srt/utils/hf_transformers/common.py:
668-694, 0.5.6 sglang/srt/utils/hf_transformers_utils.py:336-353, 0.4.6.post5
sglang/srt/hf_transformers_utils.py:168-185): the first key present of CONTEXT_KEYS, times
rope_scaling.factor unless rope_scaling has original_max_position_embeddings or rope_type llama3;
2048 when none. A target context above the draft's:
- 0.5.x: ValueError at start (0.5.23 sglang/srt/configs/model_config.py:1313-1316) unless
  SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN or SGLANG_IS_IN_CI is set; then from 0.5.3 the
  draft's max_position_embeddings is raised to the served context before the model (and its
  rotary cache) is built (0.5.3 model_config.py:270-273; 0.5.23 :1308-1312), from 0.5.6 with a
  margin reserved in the RoPE cache (sglang/srt/utils/common.py:4999-5036); 0.5.1 and 0.5.2
  only silence the error (no raise).
- 0.4.x: a warning, then positions past the draft's length read beyond its rotary cache
  (0.4.6.post5 sglang/srt/configs/model_config.py:133-137; sglang/srt/layers/rotary_embedding.py:
  156-164).

RoPE: --json-model-override-args applies to the draft as well (0.5.23 model_config.py:962,
sglang/srt/utils/hf_transformers/config.py:405-423; 0.5.6 model_config.py:237; 0.4.6.post5 :238).

Quantization: the draft inherits --quantization (0.5.23 sglang/srt/arg_groups/
serving_hook.py:685-690), not the target checkpoint's quantization_config;
`--speculative-draft-model-quantization` names its own from 0.5.7, `unquant` for none (0.5.7
sglang/srt/server_args.py:774-777, configs/model_config.py:237; 0.5.23 serving_hook.py:704-709),
and `--quantization unquant` is no quantization from 0.5.11 (0.5.11 server_args.py:814-815,
before the draft's default at :1088). Scale tensors in a draft whose config declares no
quantization: from 0.4.9 dropped silently (0.4.9 sglang/srt/models/llama_eagle3.py:228, :238;
0.4.10.post2 and 0.5.1 :227-229; 0.5.23 :358-373); up to 0.4.8.post1 the draft's load_weights
hands every name to LlamaForCausalLM's (0.4.8.post1 llama_eagle3.py:189-193), which raises
KeyError at start for q/k/v/gate/up (0.4.6.post5 sglang/srt/models/llama.py:578).

Tied head: the draft's tie_word_embeddings is honoured: its head becomes the target's input
embedding, cut to draft_vocab_size rows from 0.5.6 (0.5.6 llama_eagle3.py:220-224; 0.5.23
:303-304, 316-320; eagle_worker_v2.py:362-363); before 0.5.6 the full vocabulary indexes the
d2t table and fails (0.4.6.post5 llama_eagle3.py:170-171,180; 0.4.10.post2, 0.5.1 :198).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from remotedbg.engines import code_markers
from remotedbg.engines.draft_fit_rules import (
    ENV_FACTS,
    OVERRUN,
    RAISED,
    START_FAILS,
    START_FAILS_UNLESS_ENV,
    release,
)
from remotedbg.engines.profile import EngineProfile, RenameCode
from remotedbg.engines.text_config import text_config

CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                "max_position_embeddings")  # fmt: skip
DEFAULT_CONTEXT = 2048

#: Targets SGLang drafts 3 steps, topk 1, 4 tokens for, before 0.5.14 (others 5/4/8), by the
#: first release whose auto_choose_speculative_params lists them.
SHALLOW_TARGETS = (
    ((0, 4, 10), ("DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM")),  # 0.4.10.post2 :2202-2225
    ((0, 5, 1), ("GptOssForCausalLM",)),  # 0.5.1 server_args.py:2468-2500
    ((0, 5, 6), ("DeepseekV32ForCausalLM", "BailingMoeForCausalLM",
                 "BailingMoeV2ForCausalLM")),  # 0.5.6 server_args.py:4525-4553
)  # 0.4.6.post5 server_args.py:1588-1604: 5/4/8 for every target  # fmt: skip


#: Where a release chooses the draft settings a launch leaves out (a function whose name ends so):
#: 0.4.6.post5-0.5.13 and forks of them (sglang-kt 0.7.2) srt/server_args.py
#: `auto_choose_speculative_params` (sglang-kt 0.7.2 :6965-6999), 0.5.14+
#: srt/arg_groups/speculative_hook.py `_auto_choose_speculative_params` (0.5.23 :1430-1461)
AUTO_SETTINGS_FUNCTION = "auto_choose_speculative_params"
AUTO_SETTINGS_FILES = ("srt/arg_groups/speculative_hook.py", "srt/server_args.py")


def _decided(test: ast.expr, target_arch: str | None, algorithm: str | None) -> bool | None:
    """An `if` test of the auto-choice function, for this target and algorithm: the two forms
    its releases use (`<x>.speculative_algorithm == "NAME"`, `<arch> in [names]`), `and`/`or`
    and `not` of them; None for any other test (then nothing is decided)."""
    if isinstance(test, ast.BoolOp):
        parts = [_decided(v, target_arch, algorithm) for v in test.values]
        if None in parts:
            return None
        return all(parts) if isinstance(test.op, ast.And) else any(parts)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _decided(test.operand, target_arch, algorithm)
        return None if inner is None else not inner
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, right = test.ops[0], test.comparators[0]
    left = test.left
    if isinstance(left, ast.Attribute) and left.attr == "speculative_algorithm":
        if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
            same = str(algorithm or "").upper() == str(right.value).upper()
            return same if isinstance(op, ast.Eq) else not same
        return None
    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.List, ast.Tuple, ast.Set)):
        names = [e.value for e in right.elts if isinstance(e, ast.Constant)]
        if len(names) != len(right.elts) or target_arch is None:
            return None
        return (target_arch in names) == isinstance(op, ast.In)
    return None


def _settings_returned(body: list[ast.stmt], target_arch: str | None, algorithm: str | None):
    for stmt in body:
        if isinstance(stmt, ast.Return):
            value = stmt.value
            if isinstance(value, ast.Tuple) and len(value.elts) == 3 and all(
                isinstance(e, ast.Constant) and isinstance(e.value, int) for e in value.elts
            ):
                return tuple(e.value for e in value.elts), stmt.lineno
            return None
        if isinstance(stmt, ast.If):
            taken = _decided(stmt.test, target_arch, algorithm)
            if taken is None:
                return None
            found = _settings_returned(stmt.body if taken else stmt.orelse, target_arch, algorithm)
            if found is not None:
                return found
            branch = stmt.body if taken else stmt.orelse
            if branch and isinstance(branch[-1], ast.Return):
                return None  # the branch returns something not read
    return None


def auto_settings_in_source(
    source: str, target_arch: str | None, algorithm: str | None
) -> tuple[tuple[int, int, int], int] | None:
    """((steps, topk, draft tokens), line) the code's auto-choice function returns for this
    target and algorithm, followed through its if/elif chain; None where the file has no such
    function or a branch on the way is not one of the forms read."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.endswith(AUTO_SETTINGS_FUNCTION):
            return _settings_returned(node.body, target_arch, algorithm)
    return None


#: The module attribute that registers a model file's classes (srt/models/registry.py)
ENTRY_CLASS = "EntryClass"


def entry_class_names(tree: ast.Module) -> list[str]:
    """The architectures a model file registers: its `EntryClass`, one class or a list of
    them, each by its class name (`model_arch_name_to_cls[entry.__name__]`: 0.4.6.post5
    srt/models/registry.py:80-94, 0.5.23 :134-148). A list extended with `+=` adds to it."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not any(isinstance(t, ast.Name) and t.id == ENTRY_CLASS for t in targets):
            continue
        if not isinstance(node, ast.AugAssign):
            names = []  # a later assignment replaces the earlier one
        for elt in value.elts if isinstance(value, ast.List) else [value]:
            if isinstance(elt, ast.Name):
                names.append(elt.id)
            elif isinstance(elt, ast.Attribute):
                names.append(elt.attr)
    return names


def _truthy(value: Any) -> bool:
    # 0.5.1 get_bool_env_var: true/1 (sglang/srt/utils.py:178-183); 0.5.6+ EnvBool adds yes/y
    return str(value or "").strip().lower() in ("1", "true", "yes", "y")


def context_length(config: dict) -> int:
    """The context length SGLang derives from a config (get_context_length)."""
    config = text_config(config)
    scaling = config.get("rope_scaling") if isinstance(config.get("rope_scaling"), dict) else {}
    factor = 1.0
    if (
        scaling
        and "original_max_position_embeddings" not in scaling
        and scaling.get("rope_type") != "llama3"
    ):
        factor = float(scaling.get("factor") or 1.0)
    for key in CONTEXT_KEYS:
        if isinstance(config.get(key), (int, float)):
            return int(factor * config[key])
    return DEFAULT_CONTEXT


class SGLangProfile(EngineProfile):
    name = "sglang"
    label = "SGLang"
    # its settings registry: `class Envs: SGLANG_X = EnvBool(default)` read as `envs.X.get()`
    # (0.5.23 srt/environ.py:251, :315 SGLANG_ENABLE_WEIGHT_LOADER_V2 = EnvBool(False), :2182),
    # which the loaders branch on (0.5.23 srt/models/llama.py:704)
    extra_serving_files = (code_markers.SETTINGS_REGISTRY, "srt/configs/model_config.py")
    scan = {
        "package": "sglang",
        # a directory named `package` holding one of these is an engine package
        "package_markers": ["srt"],
        "models_dir": "srt/models",
        # the class an architecture the registry lacks may still be served by (0.4.10.post2+
        # model_loader/utils.py resolve_transformers_arch; 0.4.6.post5 has no fallback)
        "fallback_models": ["srt/models/transformers.py"],
        "worker_dirs": ["srt/speculative"],
        "registry_file": None,
        # _version.py is generated at build time (0.5.14+); version.py holds the literal in
        # older releases and only a fallback in newer ones
        "version_files": ["_version.py", "version.py"],
        # files in the models dir that are NOT draft models even though they match a pattern
        "name_excludes": [],
        "dist_names": ["sglang"],
        # a process whose cmdline matches is an SGLang server (or one of its workers)
        "process_patterns": [
            r"\bsglang\.launch_server\b",
            r"-m\s+sglang\b",
            r"\bsglang::",
            r"\bsglang\s+serve\b",
            r"/bin/sglang\b",
            r"\bsglang\.srt\b",
        ],
    }

    # 0.5.23 srt/plugins/__init__.py:28-29 (the groups), :103-130 load_plugins: every entry
    # point of the group is loaded unless SGLANG_PLUGINS names others
    plugin_groups = ("sglang.srt.plugins", "sglang.srt.platforms")
    plugin_loader_file = "srt/plugins/__init__.py"
    # 0.5.23 srt/models/registry.py:32-46 ModelRegistry.register(package_name) imports the
    # package's modules (:118-150, its direct modules) and adds their EntryClass (an
    # architecture already there raises unless overwrite=True);
    # srt/speculative/spec_info.py:67-91 SpeculativeAlgorithm.register(name, spec_class=...)
    # adds a CustomSpecAlgo that from_string (:49-65) returns. 0.5.6 and older have no
    # srt/plugins/: they load no plugin.
    plugin_calls = {"ModelRegistry.register": "model_package",
                    "SpeculativeAlgorithm.register": "algorithm"}  # fmt: skip
    # srt/speculative/spec_registry.py:69-76: CustomSpecAlgo.is_eagle / is_eagle3 return False
    # unless the plugin's class overrides them; an is_eagle3 algorithm takes the EAGLE-3 path
    # (aux hidden states, the draft's token map) as EAGLE3 does
    plugin_algorithm_families = (("is_eagle3", "eagle3"), ("is_eagle", "eagle"))
    unknown_algorithm_outcome = (
        "SGLang does not know the algorithm: SpeculativeAlgorithm.from_string raises "
        "ValueError('Unknown speculative algorithm name') and the server stops at start (0.5.23 "
        "srt/speculative/spec_info.py:49-65).")  # fmt: skip

    speculation_flag = "--speculative-algorithm"
    algorithm_flag = "--speculative-algorithm"
    draft_flag = "--speculative-draft-model-path"
    context_arg = "context-length"
    overrides_arg = "json-model-override-args"

    # NEXTN is EAGLE in every release read (0.5.6 server_args.py:1668; 0.5.14
    # arg_groups/speculative_hook.py:42)
    # STANDALONE (0.5.2 on: speculative/spec_info.py) loads the draft as a language model of
    # its own, by its config's architectures, in its own TpModelWorker (0.5.2
    # speculative/standalone_worker.py), sharing nothing with the target
    served_families = {"eagle3": "eagle3", "eagle": "eagle", "nextn": "eagle",
                       "standalone": "draft_model"}  # fmt: skip
    launch_algorithms = {"eagle3": "EAGLE3", "eagle": "EAGLE", "mtp": "NEXTN",
                         "draft_model": "STANDALONE"}  # fmt: skip
    # an MTP/NextN head runs on the EAGLE path (NEXTN is EAGLE)
    families_served_by = {"eagle3": frozenset({"eagle3"}), "eagle": frozenset({"eagle"}),
                          "mtp": frozenset({"mtp", "eagle"}),
                          "draft_model": frozenset({"draft_model"})}  # fmt: skip

    checks_draft_decode_backend = True
    draft_settings_all_or_none = True  # 0.5.23 speculative_hook.py:1159-1174
    chain_sets_draft_tokens = True  # 0.5.23 speculative_hook.py:1255-1265

    def draft_model_vocab(self, version: str | None, settings: Mapping[str, Any]
                          ) -> tuple[str, str] | None:  # fmt: skip
        """STANDALONE: from 0.5.15 the worker compares the two vocabularies and stops at start
        (0.5.15 srt/speculative/standalone_worker_v2.py:199, 215-245 _validate_vocab_
        compatibility); 0.5.2 to 0.5.14 check nothing (0.5.2 standalone_worker.py: its own
        TpModelWorker, the target's tokenizer), so the draft's ids are verified as the
        target's."""
        v = release(version)
        if v == (0, 0, 0):
            return None
        if v >= (0, 5, 15):
            return "refused", ("ValueError('STANDALONE speculative decoding requires the draft "
                               "model to share the same vocabulary as the target model') at "
                               "start: 0.5.15 sglang/srt/speculative/standalone_worker_v2.py:"
                               "215-245")
        return "silent", ("no check before 0.5.15 (0.5.2 sglang/srt/speculative/"
                          "standalone_worker.py): the draft's token ids are verified as the "
                          "target's")

    def draft_from_target(self, algorithm: str | None) -> bool:
        """EAGLE (NEXTN becomes EAGLE) with no draft path: the draft worker's model config is
        built from the target's path (0.5.6 managers/tp_worker.py:228-233 with
        configs/model_config.py:233 `model_path or server_args.model_path`; 0.5.23
        model_config.py:955; DeepSeek-V3 targets also by server_args, 0.4.6.post5
        srt/server_args.py:378-396), and draft_rename gives its class."""
        return str(algorithm or "").upper() in ("EAGLE", "NEXTN")

    # every draft's config: `if is_draft_model and self.hf_config.architectures[0] == X:` sets
    # the class it is loaded as (0.4.6.post5 srt/configs/model_config.py:95-99, in __init__;
    # 0.5.6 :250-283 and 0.5.23 :1010-1211, in _config_draft_model)
    draft_rename = RenameCode(("srt/configs/model_config.py",), branches_of="ModelConfig")
    # get_config's `except` rewrites a deepseek_v32 config transformers cannot read (0.5.6
    # srt/utils/hf_transformers_utils.py:221-228; 0.5.11 srt/utils/hf_transformers/config.py:
    # 81-89 with common.py:317)
    config_loader_files = ("srt/utils/hf_transformers/config.py",
                           "srt/utils/hf_transformers/common.py",
                           "srt/utils/hf_transformers_utils.py", "srt/hf_transformers_utils.py")
    # 0.4.6.post5 llama_eagle3.py:170-171, 0.5.23 :303-304
    tied_head_is_the_embedding = True

    def served_context_length(self, config: dict, version: str | None) -> int | None:
        return context_length(config)

    def draft_context_length(self, config: dict) -> int | None:
        return context_length(config)

    def longer_context_outcome(
        self,
        version: str | None,
        draft_config: dict,
        env: dict | None,
        running: bool,
        algorithm: str | None = None,
    ) -> str | None:
        v = release(version)
        if not v:
            return None
        if v < (0, 5, 0):
            return OVERRUN
        if not running and env is None:
            return START_FAILS_UNLESS_ENV  # launch arguments only: the variable is unknown
        if not running and not any(_truthy(env.get(n)) for n in ENV_FACTS[:2]):
            return START_FAILS
        # running (it passed the start check) or the variable set: 0.5.3+ raises the limit
        return RAISED if self.raises_draft_limit_when_allowed(version) else OVERRUN

    def raises_draft_limit_when_allowed(self, version: str | None) -> bool:
        return release(version) >= (0, 5, 3)

    def apply_overrides(self, version: str | None, config: dict, overrides: dict) -> dict:
        """`config.update` up to 0.5.14 (0.4.6.post5 hf_transformers_utils.py:142-143, 0.5.14
        utils/hf_transformers/config.py:253-254); 0.5.23 merges rope_scaling / rope_parameters
        into the existing dict (sglang/srt/utils/hf_transformers/config.py:405-423)."""
        if release(version) < (0, 5, 23):
            return super().apply_overrides(version, config, overrides)
        merged = dict(config)
        for key, value in overrides.items():
            if (
                key in ("rope_scaling", "rope_parameters")
                and isinstance(value, dict)
                and isinstance(merged.get(key), dict)
            ):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = value
        return merged

    def overrides_reach_draft(self) -> bool:
        return True

    def draft_inherits_quantization(
        self, version: str | None, args: dict, resolved: bool = False
    ) -> str | None:
        """`resolved`: the flags are the log's ServerArgs, where 0.5.7+ already settled the
        draft's (unquant -> None, left out of the line; 0.5.7 server_args.py:774-777, 0.5.14
        :2800-2803)."""
        if release(version) >= (0, 5, 7):
            if "speculative-draft-model-quantization" in args:
                own = args["speculative-draft-model-quantization"]
                return None if own in (None, "unquant") else str(own)
            if resolved:
                return None
        method = args.get("quantization")
        return str(method) if method and method != "unquant" else None

    def unexpected_scales_outcome(self, version: str | None) -> str:
        if release(version) >= (0, 4, 9):
            return "dropped"  # silently (`if param_name in params_dict`): codes used as values
        return "start-fails"

    def tied_head_outcome(self, version: str | None) -> str | None:
        # logits cut to draft_vocab_size from 0.5.6 (llama_eagle3.py:220-224); before, the full
        # vocabulary indexes the draft_vocab_size-long d2t (0.4.10.post2 / 0.5.1 :198)
        return "wrong-head" if release(version) >= (0, 5, 6) else "runtime-error"

    def draft_backend(self, version: str | None, args: dict) -> str | None:
        """Its own flag (from 0.5.7: draft_utils.py:21, :26-30), else the decode backend (from
        0.5.2: eagle_worker.py:199-209; 0.5.23 draft_utils.py:47-64), else the attention backend
        (before 0.5.2 server_args.attention_backend, eagle_worker.py)."""
        v = release(version)
        names = ["attention-backend"]
        if v >= (0, 5, 2):
            names.insert(0, "decode-attention-backend")
        if v >= (0, 5, 7):
            names.insert(0, "speculative-draft-attention-backend")
        for name in names:
            if args.get(name):
                return str(args[name])
        return None

    auto_settings_files = AUTO_SETTINGS_FILES

    def auto_settings_in_source(
        self, source: str, target_arch: str | None, algorithm: str | None
    ) -> tuple[tuple[int, int, int], int] | None:
        return auto_settings_in_source(source, target_arch, algorithm)

    def auto_draft_settings(
        self, version: str | None, target_arch: str | None, algorithm: str | None = None
    ) -> tuple[int, int, int]:
        """By the target's architecture when --speculative-num-steps is not given. From 0.5.14
        only Llama and Grok get 5/4/8, every other target 3/1/4 (0.5.14
        sglang/srt/arg_groups/speculative_hook.py:512-542; 0.5.23 :1430-1461); before, 5/4/8
        unless SHALLOW_TARGETS."""
        v = release(version)
        if str(algorithm or "").upper() == "STANDALONE" and v >= (0, 5, 6):
            return (3, 1, 4)  # 0.5.6 server_args.py:4533-4535; 0.5.14 speculative_hook.py:518-519
        deep = ("LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM")
        if v >= (0, 5, 14):
            return (5, 4, 8) if target_arch in deep else (3, 1, 4)
        shallow = [a for since, archs in SHALLOW_TARGETS if v >= since for a in archs]
        return (3, 1, 4) if target_arch in shallow else (5, 4, 8)


SGLANG = SGLangProfile()
