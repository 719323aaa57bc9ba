"""vLLM: where its code lives, how it is launched, and what its releases do with a draft that
does not fit its target (paths relative to site-packages; the releases of tests/releases.py).

Launch: `vllm serve TARGET --speculative-config '{"method": ..., "model": ...}'` (methods
eagle3, eagle, deepseek_mtp and other `*_mtp`: config/speculative.py SpeculativeMethod); from
0.22.0 `--spec-method`, `--spec-model` and `--spec-tokens` each write one key into it (a key given
both ways stops the start: VLLMProfile.settings_refused); a unique prefix of a flag is the flag
(its parser is an argparse.ArgumentParser with allow_abbrev left on: 0.32.0
vllm/utils/argparse_utils.py FlexibleArgumentParser); `--max-model-len`, `--hf-overrides`; the
draft's architecture, renamed after the method by its EAGLEConfig (transformers_utils/configs/
eagle.py), is looked up in the model registry (model_executor/models/registry.py),
and /metrics is served by default.

Context length: a target context above the draft's:
- 0.33: the draft's max_position_embeddings is raised when every rope type of the draft is
  cache-only (vllm/config/speculative.py:104-113, 1839-1846); otherwise the V2 runner lowers the
  target's max_model_len to the draft's, with a warning (vllm/config/vllm.py:3025-3051).
- 0.27.0-0.32.0: for eagle and eagle3 the draft's max_position_embeddings is raised to the
  target's max_model_len (0.27.0 vllm/config/speculative.py:924-931, :1165-1196; 0.32.0 :1397);
  other methods as before.
- 0.8.5 to 0.26.0: no check; the proposer bounds positions by the TARGET's max_model_len
  (0.10.1.1 vllm/v1/spec_decode/eagle.py:52, 266-280; 0.8.5 eagle.py:32,127-141) while the
  draft's rotary cache has its own max_position_embeddings (0.10.1.1
  vllm/model_executor/models/llama.py:236-237; 0.8.5 llama.py:167): positions past it overrun.

RoPE: a CLI --hf-overrides dict is not applied to the draft (0.33 vllm/config/speculative.py:
1183-1213; 0.10.1.1 vllm/config/__init__.py:2131).

Quantization: the EAGLE-3 draft never inherits the target's (0.33 vllm/config/speculative.py:
435-438). Scale tensors in a draft whose config declares no quantization raise (0.33
vllm/model_executor/models/utils.py:438-448; 0.10.1.1 llama_eagle3.py:181,186; 0.8.5
llama_eagle3.py:155,160). An EAGLE head's layers are built with the draft's own quantization from
0.11.1 only (draft_quantization_ignored below).

Tied head: the draft's tie_word_embeddings is ignored (0.33 vllm/model_executor/models/
utils.py:1178-1198).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from remotedbg.engines import code_markers
from remotedbg.engines.draft_fit_rules import LOWERED, OVERRUN, RAISED, SKIPPED, release, rope_types
from remotedbg.engines.profile import EngineProfile, RenameCode, method_key
from remotedbg.engines.text_config import text_config

#: 0.33: rope types whose cache alone sets the positions (the draft's limit can be raised)
CACHE_ONLY_ROPE = ("default", "linear", "llama3", "ntk", "proportional")
#: what transformers' attribute_map reads `max_position_embeddings` from, by model type
POSITION_ALIASES = ("n_positions", "max_seq_len")
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                "model_max_length", "max_target_positions", "max_sequence_length",
                "max_seq_length", "seq_len")  # fmt: skip


def context_length(config: dict, version: str | None) -> int | None:
    """vLLM's derived max_model_len (_get_and_verify_max_len: 0.10.1.1 config/__init__.py:
    2824-2925, 0.8.5 config.py:2977-3075, 0.33 config/model.py:2545-2640): the smallest length
    key (model_max_length wins when set), times rope_scaling.factor unless su/longrope/llama3;
    a YaRN factor applies to original_max_position_embeddings before 0.30 and not at all from
    0.30 (max_position_embeddings is already scaled: 0.30.0 config/model.py:2468-2478)."""
    config = text_config(config)
    lengths = [config[k] for k in CONTEXT_KEYS if isinstance(config.get(k), (int, float))]
    if not lengths:
        return None
    derived = config["model_max_length"] if config.get("model_max_length") else min(lengths)
    scaling = config.get("rope_scaling") if isinstance(config.get("rope_scaling"), dict) else None
    if scaling:
        kind = scaling.get("rope_type") or scaling.get("type") or "default"
        exempt: tuple[str, ...] = ("su", "longrope", "llama3")
        if release(version) >= (0, 30, 0):
            exempt += ("yarn", "deepseek_yarn", "deepseek_llama_scaling")
        if kind not in exempt:
            factor = float(scaling.get("factor") or 1.0)
            if kind == "yarn" and scaling.get("original_max_position_embeddings"):
                derived = scaling["original_max_position_embeddings"]
            derived = derived * factor
    return int(derived)


def _text(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def registry_entries(tree: ast.Module, only: Iterable[str] | None = None) -> dict[str, tuple]:
    """Architecture -> (module, class) from model_executor/models/registry.py: every
    module-level dict literal whose values are ("module", "Class") string pairs (0.33.0
    `_TEXT_GENERATION_MODELS` :73-218 ... `_SPECULATIVE_DECODING_MODELS` :655-745), in file
    order, later dicts winning; `only` restricts to the named dicts."""
    wanted = set(only) if only is not None else None
    result: dict[str, tuple] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        if wanted is not None and not names & wanted:
            continue
        if not isinstance(value, ast.Dict):
            continue
        for k, v in zip(value.keys, value.values, strict=False):
            arch = _text(k)
            if arch is None or not isinstance(v, ast.Tuple) or len(v.elts) < 2:
                continue
            module, cls = _text(v.elts[0]), _text(v.elts[1])
            if module and cls:
                result[arch] = (module, cls)
    return result


#: vLLM's MedusaConfig defaults (transformers_utils/configs/medusa.py, 0.8.5 :12-29, 0.32.0
#: :14-35): truncated_vocab_size is vocab_size unless given
MEDUSA_DEFAULTS = {"hidden_size": 4096, "vocab_size": 32001, "num_heads": 5,
                   "num_hidden_layers": 1}  # fmt: skip


def medusa_config_as_built(config: dict, tokens: Any) -> dict:
    """A Medusa draft's config as vLLM builds the heads from it: MedusaConfig.from_pretrained
    renames a key holding "num" and "heads" to num_heads and one holding "num" and "layers" to
    num_hidden_layers (FasterDecoding's medusa_num_heads; 0.8.5 :37-50, 0.32.0 :41-58), and
    SpeculativeConfig sets num_lookahead_tokens to num_speculative_tokens, whose setter is
    num_heads (0.8.5 config.py:2407-2411, 0.32.0 config/speculative.py:1471-1476; the setter at
    medusa.py 0.8.5 :60-62, 0.32.0 :65-67): one head is built per speculative token."""
    built = dict(config)
    for key in list(built):
        if "num" in key and "heads" in key:
            built["num_heads"] = built.pop(key)
        elif "num" in key and "layers" in key:
            built["num_hidden_layers"] = built.pop(key)
    for key, value in MEDUSA_DEFAULTS.items():
        built.setdefault(key, value)
    if not built.get("architectures"):  # MedusaConfig.__init__ (0.32.0 :36-37)
        built["architectures"] = ["MedusaModel"]
    if built.get("truncated_vocab_size") is None:
        built["truncated_vocab_size"] = built["vocab_size"]
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
        built["num_heads"] = tokens
    return built


#: Methods a range of releases refuses at start: (method, the first release refusing it, the
#: first serving it again or None, the title after "vLLM <version>", why).
REFUSED_METHODS = (
    ("suffix", (0, 0, 1), (0, 11, 1), "has no suffix decoding",
     "The launch's method is suffix, which vLLM has from 0.11.1 (config/speculative.py:48); "
     "0.11.0's SpeculativeMethod has no 'suffix' (config/speculative.py:32-35), and no earlier "
     "release has any suffix code: the release refuses the method or does not draft as asked. "
     "Upgrade to 0.11.1 or later, or use method ngram."),
    ("mlp_speculator", (0, 10, 0), None, "does not serve the MLP speculator",
     "The launch's method is mlp_speculator (given, or taken from the draft config's "
     "model_type), which only V0 served (up to 0.9.2, spec_decode/mlp_speculator_worker.py). "
     "V1's model runner has no proposer for it and raises ValueError('Unknown speculative "
     "decoding method: mlp_speculator') at start (0.10.0 v1/worker/gpu_model_runner.py:193-194; "
     "0.32.0 :658-661); 0.33.0 has no MLP speculator at all. Serve it on 0.9.2, or move to an "
     "EAGLE-3 head."),
    ("medusa", (0, 33, 0), None, "has no Medusa",
     "The launch's method is medusa, which vLLM served from 0.8.5 to 0.32.0; 0.33.0 removed it "
     "(its SpeculativeMethod has no 'medusa': config/speculative.py:74-82, and there is no "
     "model_executor/models/medusa.py), so the speculative config fails validation at start. "
     "Serve it on 0.32.0, or move to an EAGLE-3 head."),
    # V0, which served a separate draft model (0.9.2 spec_decode/spec_decode_worker.py:202
    # MultiStepWorker), is gone and V1 has no proposer for it until 0.15.0
    # (v1/spec_decode/draft_model.py) (0.10.0 engine/arg_utils.py:1396-1401, config.py:2851-
    # 2856; 0.14.1 engine/arg_utils.py:1792-1797, config/speculative.py:388-393)
    ("draft_model", (0, 10, 0), (0, 15, 0), "does not serve a separate draft model",
     "The launch's draft is a model of its own (method draft_model), which vLLM 0.10.0 to "
     "0.14.1 refuse at start: NotImplementedError('Speculative decoding with draft model is not "
     "supported yet. Please consider using other speculative decoding methods such as ngram, "
     "medusa, eagle, or mtp.') (0.11.0 vllm/config/speculative.py:348-353, vllm/engine/"
     "arg_utils.py:1485-1489). V0 served it up to 0.9.2; V1 from 0.15.0. Upgrade to 0.15.0 or "
     "later with method draft_model, or serve an EAGLE head."),
)  # fmt: skip


#: flags that each write one key of the speculative config (parsed-args key -> the key)
SETTINGS_FLAGS = {"spec-method": "method", "spec-model": "model",
                  "spec-tokens": "num_speculative_tokens"}  # fmt: skip


class VLLMProfile(EngineProfile):
    name = "vllm"
    label = "vLLM"
    #: the release that added SETTINGS_FLAGS (None: every version of the engine has them), and
    #: where they are added and written into the speculative config
    settings_flags_since: ClassVar[tuple[int, ...] | None] = (0, 22, 0)
    settings_flags_at: ClassVar[str] = (
        "0.22.0 vllm/engine/arg_utils.py:1463-1466, 1668-1681; 0.32.0 :1831-1834, 2068-2081")
    scan = {
        "package": "vllm",
        "package_markers": ["model_executor"],
        "models_dir": "model_executor/models",
        # 0.33+ keeps newer heads under the top-level models/ package (the registry names
        # them by full module path, model_executor/models/registry.py:655-745 in 0.33.0)
        "extra_models_dirs": ["models"],
        # the Transformers backend (0.33.0 model_executor/models/transformers/ package; 0.8.5
        # and 0.10.1.1 a single transformers.py)
        "fallback_models": [
            "model_executor/models/transformers.py",
            "model_executor/models/transformers",
        ],
        "worker_dirs": ["v1/spec_decode", "spec_decode"],
        "registry_file": "model_executor/models/registry.py",
        "version_files": ["_version.py", "version.py"],
        "name_excludes": [],
        "dist_names": ["vllm"],
        "process_patterns": [
            r"\bvllm\s+serve\b",
            r"/bin/vllm\b",
            r"\bvllm\.entrypoints\b",
            r"-m\s+vllm\b",
            r"\bVLLM::",
        ],
    }

    # 0.33.0 plugins/__init__.py:18 vllm.general_plugins (load_general_plugins :77-87, in
    # every process), :23 vllm.platform_plugins
    plugin_groups = ("vllm.general_plugins", "vllm.platform_plugins")
    plugin_loader_file = "plugins/__init__.py"
    # 0.33.0 model_executor/models/registry.py:1176 ModelRegistry.register_model(arch,
    # "module:Class"): an architecture already registered is overwritten (with a warning)
    plugin_calls = {"ModelRegistry.register_model": "model"}
    plugin_models_override = True

    speculation_flag = "--speculative-config"
    algorithm_flag = "--speculative-config method"
    draft_flag = "--speculative-config model"
    context_arg = "max-model-len"
    overrides_arg = "hf-overrides"
    settings_arg = "speculative-config"
    tokens_required_at = ("0.33 vllm/config/speculative.py:1614-1618; 0.10.1.1 "
                          "vllm/config/__init__.py:2327-2331")  # fmt: skip
    # suffix decoding takes suffix_decoding_max_tree_depth (24) when the launch gives none
    # (0.11.1 config/speculative.py:470-477; 0.33.0 :1732-1739)
    tokens_defaulted_for = ("suffix",)

    served_families = {"eagle3": "eagle3", "eagle": "eagle", "deepseek_mtp": "mtp", "mtp": "mtp",
                       "draft_model": "draft_model", "medusa": "medusa"}  # fmt: skip
    mtp_method_suffix = True
    launch_algorithms = {"eagle3": "eagle3", "eagle": "eagle", "mtp": "deepseek_mtp",
                         "draft_model": "draft_model", "medusa": "medusa"}  # fmt: skip
    families_served_by = {"eagle3": frozenset({"eagle3"}), "eagle": frozenset({"eagle"}),
                          "mtp": frozenset({"mtp"}),
                          "draft_model": frozenset({"draft_model"}),
                          "medusa": frozenset({"medusa"})}  # fmt: skip
    names_head_after_method = True

    registers_draft_architectures = True
    # transformers_utils/configs/speculators/ from 0.10.1 (0.10.1.1 algos.py update_eagle3;
    # 0.33.0 algos.py:15-50, base.py:46-137): a release without it refuses the format
    reads_speculators_format = True
    loader_reads_launch = True
    chooses_model_runner = True
    mean_length_may_omit_bonus = True
    counts_accepted_drafts = True
    extra_serving_files = (*code_markers.VLLM_SPEC_CONFIGS, *code_markers.VLLM_RUNNER_FILES)

    def registry_entries(self, tree: ast.Module) -> dict[str, tuple]:
        return registry_entries(tree)

    def unregistered_draft(self, served: list[str], given: list) -> tuple[str, str]:
        return (
            f"vLLM does not register the draft architecture {served}",
            f"The draft config names {given}, which this release looks up as {served} (its "
            "EAGLEConfig rewrite for the method); the registry has no such entry, so the server "
            "stops with 'Model architectures ... are not supported'. Name an architecture the "
            "release registers (e.g. LlamaForCausalLM, which it serves as Eagle3LlamaForCausalLM).",
        )

    def served_context_length(self, config: dict, version: str | None) -> int | None:
        return context_length(config, version)

    def draft_context_length(self, config: dict) -> int | None:
        """`hf_config.max_position_embeddings`, which transformers answers from the key the model
        type names instead where it has one (GPT-2's `n_positions`: the attribute_map of
        transformers 5.12.1 models/gpt2/configuration_gpt2.py:71-76, gpt_bigcode's and six
        more; DBRX's `max_seq_len`)."""
        for key in ("max_position_embeddings", *POSITION_ALIASES):
            value = config.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return int(value)
        return None

    def longer_context_outcome(
        self,
        version: str | None,
        draft_config: dict,
        env: dict | None,
        running: bool,
        algorithm: str | None = None,
    ) -> str | None:
        v = release(version)
        if v >= (0, 33, 0):
            if all(t in CACHE_ONLY_ROPE for t in rope_types(draft_config)):
                return RAISED
            # lowered by the V2 runner only (config/vllm.py:3034); V1 (VLLM_USE_V2_MODEL_RUNNER=0)
            # keeps the context and drafts nothing past the draft's limit
            return SKIPPED if str((env or {}).get("VLLM_USE_V2_MODEL_RUNNER")) == "0" else LOWERED
        if (0, 27, 0) <= v < (0, 33, 0):
            family = self.served_family(algorithm)
            if family is None:
                return None  # which method serves decides, and it is not known
            return RAISED if family in ("eagle3", "eagle") else OVERRUN
        if (0, 8, 5) <= v < (0, 27, 0):
            return OVERRUN
        return None

    def method_from_draft_name(self, draft: str, version: str | None) -> tuple[str, str] | None:
        """SpeculativeConfig detects the method from the draft's model string (the repo id or path
        as given) when the speculative config names none: before 0.10.2 "eagle-" or "eagle3-" in
        it gives eagle (0.8.5 config.py:2377-2381; 0.10.1.1 config/__init__.py:2135-2139); from
        0.10.2 "eagle-" gives eagle, else "eagle3" gives eagle3 (0.10.2 config/__init__.py:
        2143-2146; 0.33.0 config/speculative.py:1445-1448); anything else is a plain draft
        model (medusa, mlp_speculator or draft_model), no EAGLE method."""
        name, v = draft.lower(), release(version)
        if "eagle-" in name:  # eagle in every release (and when the release is unknown)
            return "eagle", "SpeculativeConfig: 'eagle-' in the draft's name"
        if v and v < (0, 10, 2) and "eagle3-" in name:
            return "eagle", "SpeculativeConfig before 0.10.2: 'eagle3-' in the draft's name"
        if v >= (0, 10, 2) and "eagle3" in name:
            return "eagle3", "SpeculativeConfig: 'eagle3' in the draft's name"
        return None

    def refuses_algorithm(self, algorithm: str | None, version: str | None = None
                          ) -> tuple[str, str] | None:  # fmt: skip
        """A method the release refuses at start (REFUSED_METHODS), None when it serves it or
        the version is not known."""
        v, key = release(version), method_key(algorithm)
        for method, first, until, title, why in REFUSED_METHODS:
            if key == method and v >= first and (until is None or v < until):
                return f"vLLM {version} {title}", why
        return None

    def draft_config_as_built(self, config: dict, family: str | None,
                              settings: Mapping[str, Any], version: str | None = None,
                              target_config: dict | None = None) -> dict:  # fmt: skip
        """A Medusa draft's config (medusa_config_as_built); from 0.25.0 a launch with method
        medusa gives the heads the target's vocab_size (FasterDecoding's configs omit it:
        0.25.0 config/speculative.py:823-832, 0.32.0 :1315-1324)."""
        if family != "medusa":
            return config
        built = medusa_config_as_built(config, settings.get("num_speculative_tokens"))
        vocab = text_config(target_config).get("vocab_size")
        if (release(version) >= (0, 25, 0) and method_key(settings.get("method")) == "medusa"
                and isinstance(vocab, int) and built["vocab_size"] != vocab):  # fmt: skip
            built["vocab_size"] = built["truncated_vocab_size"] = vocab
        return built

    def draft_config_unreadable(self, config: dict, family: str | None, version: str | None,
                              algorithm: str | None) -> tuple[str, str] | None:  # fmt: skip
        """A config type 0.33.0 no longer registers (medusa and mlp_speculator were vLLM's own:
        0.32.0 transformers_utils/config.py:111-112; 0.33.0's _CONFIG_REGISTRY at :122 has
        neither, nor has transformers), so AutoConfig stops the start. A Medusa config without
        model_type (FasterDecoding's own): AutoConfig cannot detect it either; from 0.25.0
        method medusa injects model_type medusa (config/speculative.py:783-789; 0.32.0
        :1275-1281)."""
        kind = config.get("model_type")
        if kind in ("medusa", "mlp_speculator") and release(version) >= (0, 33, 0):
            return (
                f"vLLM {version} cannot read the draft's config (model_type {kind})",
                f"{kind} was vLLM's own config type up to 0.32.0 (transformers_utils/config.py:"
                f"111-112); {version} no longer registers it (_CONFIG_REGISTRY, transformers_"
                "utils/config.py:122) and transformers does not know it, so the server stops at "
                "start. Serve the draft on 0.32.0, or move to an EAGLE-3 head.",
            )
        if family != "medusa" or kind or not release(version):
            return None
        if release(version) >= (0, 25, 0) and method_key(algorithm) == "medusa":
            return None
        return (
            f"the Medusa config names no model_type: vLLM {version} cannot read it",
            "The draft's config.json has no model_type (FasterDecoding's own format), so "
            "transformers' AutoConfig cannot detect it and the server stops at start. vLLM "
            "injects model_type medusa for method medusa from 0.25.0 (config/speculative.py:"
            "783-789), which also remaps FasterDecoding's tensor names. Serve it on 0.25.0 or "
            "later with method medusa, or convert it to vLLM's Medusa layout (model_type medusa, "
            "blocks.*/lm_heads.*).",
        )

    def draft_on_v0_worker(self, version: str | None, family: str | None) -> bool:
        """Medusa before 0.9.0: V1 has no Medusa proposer (v1/spec_decode/medusa.py comes in
        0.9.0), so V0's MedusaWorker serves it, and 0.8.5's Medusa reads its config from
        vllm_config.model_config (model_executor/models/medusa.py:53)."""
        return family == "medusa" and (0, 0, 0) < release(version) < (0, 9, 0)

    def _settings_flags(self, args: Mapping[str, Any]) -> dict[str, Any]:
        return {flag: args[flag] for flag in SETTINGS_FLAGS if args.get(flag) is not None}

    def launch_settings(self, args: Mapping[str, Any]) -> dict | None:
        """--speculative-config with --spec-method, --spec-model and --spec-tokens written in
        (settings_flags_at)."""
        spec = super().launch_settings(args)
        flags = self._settings_flags(args)
        if not flags:
            return spec
        merged = dict(spec or {})
        for flag, value in flags.items():
            key = SETTINGS_FLAGS[flag]
            if key == "num_speculative_tokens" and str(value).isdigit():
                value = int(value)
            merged.setdefault(key, value)
        return merged

    def speculative_length_refused(
        self, spec: Mapping[str, Any], draft_length: int | None, target_length: int | None
    ) -> tuple[str, str] | None:
        """The speculative config's `max_model_len` past the draft's max_model_len or the
        target's: SpeculativeConfig._maybe_override_draft_max_model_len raises ValueError("...
        cannot be larger than ...") for every method with a draft model, the draft's checked
        first (0.8.5 config.py:2454-2479; 0.32.0 config/speculative.py:1633-1662, called at
        :1556-1562)."""
        given = spec.get("max_model_len")
        if not isinstance(given, int) or isinstance(given, bool):
            return None
        for whose, length in (("draft", draft_length), ("target", target_length)):
            if length is not None and given > length:
                return (
                    f"speculative max_model_len {given} is past the {whose}'s {length}: "
                    f"{self.label} refuses to start",
                    f"--speculative-config gives max_model_len {given}, larger than the {whose}'s "
                    f"max_model_len {length}: ValueError('speculative_max_model_len={given} "
                    f"cannot be larger than {whose}_max_model_len={length}') at start "
                    "(SpeculativeConfig._maybe_override_draft_max_model_len). Give at most "
                    f"{length}, or leave it out (the smaller of the two is then used).",
                )
        return None

    def settings_refused(self, args: Mapping[str, Any], version: str | None = None
                         ) -> tuple[str, str] | None:  # fmt: skip
        """The settings flags on a release without them (argparse stops at start), or beside a
        --speculative-config JSON that has the same key (ValueError at start); suffix
        decoding's settings out of the ranges SpeculativeConfig accepts: ValueError at start,
        the same in every release that has the method (0.11.1 config/speculative.py:478-498;
        0.33.0 :1740-1760)."""
        flags = self._settings_flags(args)
        since = self.settings_flags_since
        if flags and since and version and release(version) and release(version) < since:
            flag = next(iter(flags))
            return (
                f"--{flag}: {self.label} {version} has no such flag and refuses to start",
                f"--spec-method, --spec-model and --spec-tokens came in {self.label} "
                f"{'.'.join(map(str, since))} ({self.settings_flags_at}); this release's "
                f"argparse stops at start with 'unrecognized arguments: --{flag} ...'. Give "
                f"them in --speculative-config instead, e.g. '{{\"{SETTINGS_FLAGS[flag]}\": "
                "...}'.",
            )
        given = super().launch_settings(args) or {}
        clashes = [flag for flag in flags if SETTINGS_FLAGS[flag] in given]
        if clashes:
            flag = clashes[0]
            key = SETTINGS_FLAGS[flag]
            return (
                f"--{flag} and --speculative-config['{key}'] both given: {self.label} refuses "
                "to start",
                f"{self.label} writes --{flag} into the speculative config and raises ValueError("
                f"\"--{flag} and --speculative-config['{key}'] are mutually exclusive\") at "
                f"start when the JSON already has that key ({self.settings_flags_at}). Give "
                f"{key} once: drop --{flag}, or drop '{key}' from --speculative-config.",
            )
        spec = self.launch_settings(args)
        if not spec or method_key(spec.get("method")) != "suffix":
            return None
        for key, (low, high, accepted) in SUFFIX_SETTINGS.items():
            value = spec.get(key)
            if (isinstance(value, (int, float)) and not isinstance(value, bool)
                    and not low <= value <= high):  # fmt: skip
                return (
                    f"{key}={value}: vLLM refuses to start",
                    f"SpeculativeConfig raises ValueError('{key}={value} {accepted}') at start "
                    "(0.11.1 vllm/config/speculative.py:478-498; 0.33.0 :1740-1760).",
                )
        return None

    def method_needs_distribution(self, algorithm: str | None, version: str | None
                                  ) -> tuple[str, str] | None:  # fmt: skip
        """Suffix decoding is Snowflake's arctic-inference: from 0.11.1 SpeculativeConfig stops
        at start when the package cannot be imported (0.11.1 config/speculative.py:465-468;
        0.33.0 :1727-1730; has_arctic_inference, utils/import_utils.py: find_spec up to 0.22.1,
        an import from 0.23.0), and vLLM's own metadata never requires it."""
        if method_key(algorithm) != "suffix" or release(version) < (0, 11, 1):
            return None
        return "arctic-inference", (
            "ImportError('Arctic Inference is required for suffix decoding. Install via `pip "
            "install arctic-inference==0.1.1`.') when the speculative config is built, before "
            "any model loads (0.11.1 vllm/config/speculative.py:465-468; 0.33.0 :1727-1730); "
            "vLLM does not install it: its docs say `pip install arctic-inference`"
        )

    def draft_model_vocab(self, version: str | None, settings: Mapping[str, Any]
                          ) -> tuple[str, str] | None:  # fmt: skip
        """V0 asserts equal sizes when the workers start (0.9.2 spec_decode/spec_decode_worker.py:
        1260, a bare assert); V1 raises ValueError('Target and draft model should have the same
        vocabulary size') (0.15.0 config/speculative.py:679-697), unless use_heterogeneous_vocab
        (0.25.0 on: config/speculative.py:1185-1186; the draft then keeps its own tokenizer)."""
        v = release(version)
        if v == (0, 0, 0) or (0, 10, 0) <= v < (0, 15, 0):
            return None  # not known; or draft_model itself is refused (refuses_algorithm)
        if v < (0, 10, 0):
            return "refused", ("AssertionError when the workers start: 0.9.2 vllm/spec_decode/"
                               "spec_decode_worker.py:1260 asserts equal vocab sizes")
        if v >= (0, 25, 0) and settings.get("use_heterogeneous_vocab") is True:
            return "allowed", ("use_heterogeneous_vocab: the draft keeps its own tokenizer and "
                               "vLLM maps between the two (0.25.0 vllm/config/speculative.py:"
                               "1185-1186)")
        return "refused", ("ValueError('Target and draft model should have the same vocabulary "
                           "size') at start: 0.15.0 vllm/config/speculative.py:679-697"
                           + (", unless use_heterogeneous_vocab is true (0.25.0 :1185-1186)"
                              if v >= (0, 25, 0) else ""))

    def method_when_none(self, version: str | None) -> tuple[str | None, str]:
        """Neither the draft's name nor its model_type gives a method: up to 0.14.1 the method
        is draft_model (0.8.5 config.py:2388; 0.9.0 :2538; 0.11.0 config/speculative.py:348),
        refused from 0.10.0 (refuses_algorithm); 0.15.0 to 0.16.0 have no default and stop at
        start (0.15.0 config/speculative.py:403-408; 0.16.0 :426-431); from 0.17.0 draft_model
        again (0.17.0 config/speculative.py:339-343; 0.33.0 :1236-1244)."""
        v = release(version)
        if (0, 15, 0) <= v < (0, 17, 0):
            return None, (
                f"vLLM {version} stops at start with NotImplementedError(\"Unsupported "
                "speculative method: 'None'\"): a --speculative-config whose draft is neither "
                "an EAGLE nor an MTP model needs \"method\": \"draft_model\" in 0.15.0 to 0.16.0 "
                "(0.15.0 vllm/config/speculative.py:403-408; 0.16.0 :426-431)"
            )
        if v == (0, 0, 0):
            return None, ""  # a fork's or dev build's version: which rule it has is not known
        return "draft_model", "SpeculativeConfig: a draft model that is neither EAGLE nor MTP"

    def draft_from_target(self, algorithm: str | None) -> bool:
        """An MTP method (mtp; deepseek_mtp and the other `*_mtp` names become mtp) with no
        draft model: the draft is the target's own checkpoint (0.8.5 config.py:2292-2299;
        0.11.0 config/speculative.py:218-229; 0.33.0 :1252-1268), draft_rename gives its class."""
        return self.served_family(algorithm) == "mtp"

    # every draft's config goes through SpeculativeConfig.hf_config_override before the EAGLE
    # rewrite (0.8.5 config.py:2271-2279, applied at :2373; 0.10.1.1 config/__init__.py:2009;
    # 0.11.0 config/speculative.py:148-156; 0.33.0 :711-1000): deepseek_v3 becomes
    # DeepSeekMTPModel (an EAGLE head of it EagleDeepSeekMTPModel, registered from 0.10.2,
    # model_executor/models/registry.py:284), MiMo MiMoMTPModel, Qwen3-Next Qwen3NextMTP, ...
    draft_rename = RenameCode(code_markers.VLLM_SPEC_CONFIGS, function="hf_config_override")
    # the method when none is given: medusa, mlp_speculator, then an MTP model_type after the
    # rename (0.9.0 config.py:2528-2530 deepseek_mtp; 0.10.1.1 config/__init__.py:2145-2147
    # three types; 0.33.0 config/speculative.py:1466-1470, MTPModelTypes at :38)
    method_by_draft_type = True

    def draft_quantization_ignored(self, version: str | None, family: str | None = None) -> bool:
        """Through 0.11.0 the EAGLE heads' layers are built without the draft's quant_config:
        EAGLE-3 without any (0.8.5 model_executor/models/llama_eagle3.py:97; 0.10.1.1 :123-127)
        or with the target's (0.11.0 :37), EAGLE-1 without any (0.10.2 llama_eagle.py: no
        quant_config). Every scale tensor of the draft then raises KeyError (0.10.1.1 :181, 186;
        0.8.5 :155, 160), whatever its config declares. From 0.11.1 they are built with the
        draft's own (get_draft_quant_config: 0.11.1 model_executor/models/utils.py:721-742,
        llama_eagle3.py, llama_eagle.py; 0.33.0 utils.py:985-1007). A draft model is loaded with
        a vllm_config of its own model config (0.16.0 v1/spec_decode/draft_model.py:54-65,
        utils.py:152-173) and an MTP layer with the target's quantization (0.11.0
        deepseek_mtp.py:49, 67; config/speculative.py:230-233): neither ignores it."""
        return family in ("eagle", "eagle3") and (0, 0, 0) < release(version) < (0, 11, 1)


#: suffix decoding's settings: (lowest, highest, what the release's ValueError says)
SUFFIX_SETTINGS = {
    "suffix_decoding_max_tree_depth": (1, float("inf"), "must be >= 1"),
    "suffix_decoding_max_cached_requests": (0, float("inf"), "must be >= 0"),
    "suffix_decoding_max_spec_factor": (0, float("inf"), "must be >= 0"),
    "suffix_decoding_min_token_prob": (0, 1, "must be in [0, 1]"),
}


VLLM = VLLMProfile()
