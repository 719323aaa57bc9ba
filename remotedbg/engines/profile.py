"""The interface every engine profile fills (engines/sglang.py, engines/vllm.py): how the engine
is launched, what its launch flags and algorithm names mean, which of its mechanisms a check
must follow, and its release rules, each with the lines of the release it was read from.

Code outside `engines/` asks a profile (`profiles.engine_profile(name)`) instead of comparing
engine names, so a new engine or a new release's convention is one module to change.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar


def method_key(algorithm: str | None) -> str:
    """A launch's algorithm as the rules name it: lower case, '-' as '_' (EAGLE3, deepseek-mtp)."""
    return str(algorithm or "").strip().lower().replace("-", "_")


@dataclass(frozen=True)
class RenameCode:
    """Where an engine renames a draft's config before it looks the draft class up
    (remotedbg.analysis.draft_rename runs it): `function`, a function called with the config
    as its first argument whose return value is the renamed config, or `branches_of`, the `if`
    statements of that class which test `flag` and assign an architecture, run in order with
    `self` holding the config."""

    files: tuple[str, ...]  # relative to the install; the first one read holds the code
    function: str = ""
    branches_of: str = ""
    flag: str = "is_draft_model"


class EngineProfile:
    """One serving engine. Attributes are data; methods are pure rules over a release's version
    (`None` or '' when unknown: a rule gated on the release then says nothing)."""

    #: the package and distribution name, and the name a scan gives an install or a server
    name: ClassVar[str]
    #: the engine whose code this one's is a fork of (its rules are that engine's), and the
    #: distribution it is installed as
    fork_of: ClassVar[str | None] = None
    distribution: ClassVar[str | None] = None
    #: its version numbers are the releases its rules were read from (a fork's are its own)
    versions_gate_rules: ClassVar[bool] = True
    #: how a person names it in a message
    label: ClassVar[str]
    #: where its code lives in an install (remotedbg.agent.engine_scan's knowledge); the draft
    #: name patterns and content markers all engines share are added by engines.knowledge
    scan: ClassVar[Mapping[str, Any]]

    # ---- launch flags (without the leading dashes where they key parsed args)
    #: the flag whose absence means the server does not speculate
    speculation_flag: ClassVar[str]
    #: where the launch names its algorithm, and the draft's path, as said to a person
    algorithm_flag: ClassVar[str]
    draft_flag: ClassVar[str]
    #: the parsed-args keys of the served context and of the config overrides
    context_arg: ClassVar[str]
    overrides_arg: ClassVar[str]
    #: the parsed-args key of the one JSON flag that holds the draft settings (method, model,
    #: num_speculative_tokens), where they are not flags of their own
    settings_arg: ClassVar[str | None] = None
    #: where the release refuses settings_arg's JSON without num_speculative_tokens (and a
    #: draft config without n_predict)
    tokens_required_at: ClassVar[str] = ""
    #: methods whose num_speculative_tokens the engine defaults when the launch gives none
    tokens_defaulted_for: ClassVar[tuple[str, ...]] = ()

    # ---- algorithms and draft families ('eagle3' | 'eagle' | 'mtp')
    #: algorithm (lower case, '-' as '_') -> the family it serves
    served_families: ClassVar[Mapping[str, str]]
    #: a method spelled '<model>_mtp' serves the MTP family
    mtp_method_suffix: ClassVar[bool] = False
    #: family -> the algorithm name that serves it, as the launch spells it
    launch_algorithms: ClassVar[Mapping[str, str]]
    #: draft family -> the served families whose path loads it
    families_served_by: ClassVar[Mapping[str, frozenset[str]]]
    #: the head class is named after the method, so a plain architecture (LlamaForCausalLM) in
    #: the draft config is whatever family the method serves
    names_head_after_method: ClassVar[bool] = False

    # ---- mechanisms a check follows
    #: the draft's architecture is looked up in the engine's model registry, so one it does
    #: not register stops the server (else the draft class is the file's EntryClass)
    registers_draft_architectures: ClassVar[bool] = False
    #: that registry is the EntryClass names of its model files (no registry file)
    registry_is_entry_classes: ClassVar[bool] = False
    #: reads vLLM's `speculators` checkpoint format (remotedbg.analysis.speculators)
    reads_speculators_format: ClassVar[bool] = False
    #: the draft loader's constructor takes settings from the launch and the draft's config
    #: (quantization, speculative config): remotedbg.engines.loader_rules
    loader_reads_launch: ClassVar[bool] = False
    #: the draft constructor's argument that holds the engine's config (loader_reads_launch)
    loader_config_argument: ClassVar[str] = "vllm_config"
    #: which model runner serves is the engine's own choice, per environment and target
    chooses_model_runner: ClassVar[bool] = False
    #: the draft decodes with an attention backend the launch chooses, which must have a
    #: speculative variant (else the target types an EAGLE-3 draft may serve are checked)
    checks_draft_decode_backend: ClassVar[bool] = False
    #: a tied draft head is the embedding module, which the target's embedding fills
    tied_head_is_the_embedding: ClassVar[bool] = False
    #: the mean acceptance length the engine reports may leave the bonus token out
    mean_length_may_omit_bonus: ClassVar[bool] = False
    #: accept length is counted from accepted draft tokens (else tokens per verify step)
    counts_accepted_drafts: ClassVar[bool] = False
    #: files read besides the serving code the grep finds (relative to the package)
    extra_serving_files: ClassVar[tuple[str, ...]] = ()
    #: its profile holds the release's context-length rules (served_context_length, ...)
    reads_context_rules: ClassVar[bool] = True
    #: the launch must give steps, topk and draft tokens all or none (SGLang's start assertion)
    draft_settings_all_or_none: ClassVar[bool] = False
    #: with topk 1 the engine sets draft tokens to steps + 1 (SGLang)
    chain_sets_draft_tokens: ClassVar[bool] = False

    # ---- plugins (remotedbg.analysis.plugins): what the engine takes from other distributions
    #: entry-point groups whose plugins the engine loads at start (from the site-packages it
    #: imports); a plugin found there is judged like the engine's own code
    plugin_groups: ClassVar[tuple[str, ...]] = ()
    #: the registration calls a plugin makes, `Receiver.method` -> what it registers: 'model'
    #: (an architecture and "module:Class"), 'model_package' (every EntryClass of a package),
    #: 'algorithm' (a speculative algorithm's name and the class whose methods say its family).
    #: The receiver counts only when imported from the engine's package.
    plugin_calls: ClassVar[Mapping[str, str]] = {}
    #: methods of a plugin algorithm's class that put it in a draft family by returning True,
    #: first match wins
    plugin_algorithm_families: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: a plugin's model replaces the engine's own entry of that architecture (else the
    #: engine's stays, or the registration fails)
    plugin_models_override: ClassVar[bool] = False
    #: what the engine does with an algorithm it does not know, said where a plugin that
    #: would register it registers nothing
    unknown_algorithm_outcome: ClassVar[str] = "The engine does not know the algorithm."
    #: the file of the engine that loads the plugin groups (relative to the package): a
    #: release without it, or whose copy names no group of a plugin, loads no such plugin
    plugin_loader_file: ClassVar[str | None] = None

    #: which layers an EAGLE-3 target captures is decided by the target model's code (capture
    #: methods the engine calls, followed by remotedbg.analysis.capture); else fixed_capture
    capture_in_target_code: ClassVar[bool] = True

    def fixed_capture(self, target_config: dict) -> dict | None:
        """{"layers_to_capture", "where"} the engine itself sets for this target, else None."""
        return None

    def registry_entries(self, tree: ast.Module) -> dict[str, tuple]:
        """Architecture -> (module, class) from the install's registry_file."""
        return {}

    #: the engine code that renames every draft config's architecture (None: it renames none)
    draft_rename: ClassVar[RenameCode | None] = None
    #: the config loader's files, whose rewrites of a config transformers cannot read come
    #: before draft_rename (remotedbg.analysis.config_rewrite; the first ones read hold them)
    config_loader_files: ClassVar[tuple[str, ...]] = ()
    #: a launch with a draft and no method takes the method from the draft config's model_type,
    #: compared in draft_rename's file (vLLM's SpeculativeConfig)
    method_by_draft_type: ClassVar[bool] = False

    def served_architectures(self, architectures: list[str], method: str | None
                             ) -> list[str] | None:  # fmt: skip
        """The architectures the engine looks the draft class up by, where a fixed rule says
        (None: read from the install's own code, as vLLM's EAGLEConfig rewrite)."""
        return None

    def unregistered_draft(self, served: list[str], given: list) -> tuple[str, str]:
        """(title, detail) of the finding for a draft architecture the registry lacks."""
        return (f"{self.label} does not register the draft architecture {served}",
                f"The draft config names {given}, which {self.label} looks up as {served}; its "
                "registry has no such entry, so the server stops at start.")  # fmt: skip

    def served_family(self, algorithm: str | None) -> str | None:
        """'eagle3' | 'eagle' | 'mtp' for a launch's algorithm, else None."""
        if not algorithm:
            return None
        algo = method_key(algorithm)
        if algo in self.served_families:
            return self.served_families[algo]
        if self.mtp_method_suffix and algo.endswith("_mtp"):
            return "mtp"
        return None

    def refuses_algorithm(self, algorithm: str | None, version: str | None = None
                          ) -> tuple[str, str] | None:  # fmt: skip
        """(title, detail) when the release refuses to start with this algorithm: a name
        served_family does not know, or a method this release does not serve; None when that is
        not decided (a plugin may add it)."""
        return None

    def method_needs_distribution(self, algorithm: str | None, version: str | None
                                  ) -> tuple[str, str] | None:  # fmt: skip
        """(the distribution, as pip names it, and what the release does without it) when the
        release builds this method on a package it does not ship itself; None when it needs
        none, or when that is not known (a fork's version)."""
        return None

    def draft_model_vocab(self, version: str | None, settings: Mapping[str, Any]
                          ) -> tuple[str, str] | None:  # fmt: skip
        """What the release does with a draft model (family draft_model) whose vocabulary size
        is not the target's: ("refused", where it stops at start), ("silent", where it drafts
        the draft's ids as the target's), ("allowed", where the launch asks for two
        vocabularies); None when not known."""
        return None

    def method_when_none(self, version: str | None) -> tuple[str | None, str]:
        """A launch that gives a draft model and no method, which nothing else names (not the
        draft's name, not its model_type): (the method the release takes, where it says so), or
        (None, why the release refuses to start); (None, "") when the engine has no such rule."""
        return None, ""

    def draft_config_as_built(self, config: dict, family: str | None,
                              settings: Mapping[str, Any], version: str | None = None,
                              target_config: dict | None = None) -> dict:  # fmt: skip
        """The draft's config as the release's config class holds it when it builds the draft
        (its defaults, renamed keys, and what the speculative settings write into it)."""
        return config

    def draft_config_unreadable(self, config: dict, family: str | None, version: str | None,
                              algorithm: str | None) -> tuple[str, str] | None:  # fmt: skip
        """(title, detail) when the release cannot read this draft's config.json: no model_type,
        or one neither it nor transformers registers; None when it can, or it is not known."""
        return None

    def draft_on_v0_worker(self, version: str | None, family: str | None) -> bool:
        """The release builds this draft in vLLM V0's draft worker, whose engine config holds
        the draft's model config as its own (remotedbg.engines.loader_rules.vllm_engine_params)."""
        return False

    def launch_settings(self, args: Mapping[str, Any]) -> dict | None:
        """The draft settings (method, model, num_speculative_tokens) the engine builds from the
        launch's parsed args: settings_arg's JSON, where it has one."""
        spec = args.get(self.settings_arg or "")
        return spec if isinstance(spec, dict) else None

    def settings_refused(self, args: Mapping[str, Any], version: str | None = None
                         ) -> tuple[str, str] | None:  # fmt: skip
        """(title, detail) when the engine (this release, where it matters) stops at start on
        how the launch gives its draft settings (settings_arg's JSON beside flags of its own);
        None when it takes them."""
        return None

    def speculative_length_refused(
        self, spec: Mapping[str, Any], draft_length: int | None, target_length: int | None
    ) -> tuple[str, str] | None:
        """(title, detail) when the launch's own context for the draft (vLLM's speculative
        `max_model_len`) is past what the draft or the target serves and the engine stops at
        start; None when it takes it, or the engine has no such setting."""
        return None

    def accept_length(self, counts: Mapping[str, Any]) -> float | None:
        steps = int(counts.get("verify_steps") or 0)
        if steps <= 0:
            return None
        if self.counts_accepted_drafts:
            return round(1 + int(counts.get("accepted") or 0) / steps, 3)
        return round(int(counts.get("completion_tokens") or 0) / steps, 3)

    # ---- release rules: what a release does with a draft that does not fit its target
    def served_context_length(self, config: dict, version: str | None) -> int | None:
        """The context length the engine derives from a (target) config."""
        raise NotImplementedError

    def draft_context_length(self, config: dict) -> int | None:
        """The context the draft's own config gives its rotary cache."""
        raise NotImplementedError

    def longer_context_outcome(
        self,
        version: str | None,
        draft_config: dict,
        env: dict | None,
        running: bool,
        algorithm: str | None = None,
    ) -> str | None:
        """What the release does with a served context longer than the draft's
        (draft_fit_rules outcomes) when it serves `algorithm`; None when the release was not read
        for this."""
        return None

    def apply_overrides(self, version: str | None, config: dict, overrides: dict) -> dict:
        """A config as the engine sees it after its overrides flag: a dict value replaces the
        config's wholesale (`config.update`)."""
        return {**config, **overrides}

    def overrides_reach_draft(self) -> bool:
        """The overrides flag applies to the draft's config too."""
        return False

    def draft_inherits_quantization(
        self, version: str | None, args: dict, resolved: bool = False
    ) -> str | None:
        """The quantization method the engine applies to a bf16 draft, from the launch flags."""
        return None

    def draft_quantization_ignored(self, version: str | None, family: str | None = None) -> bool:
        """The release builds the draft (of the served family) without its quantization config,
        whatever it declares."""
        return False

    def unexpected_scales_outcome(self, version: str | None) -> str:
        """Scale tensors in a draft whose config declares no quantization: 'dropped' (silently)
        or 'start-fails'."""
        return "start-fails"

    def raises_draft_limit_when_allowed(self, version: str | None) -> bool:
        """Once its start check is passed (or silenced), the release raises the draft's
        position limit to the served context (else positions past it overrun)."""
        return False

    def tied_head_outcome(self, version: str | None) -> str | None:
        """What the release does with a draft config's tie_word_embeddings: 'wrong-head',
        'runtime-error', or None (the flag is ignored)."""
        return None

    def draft_from_target(self, algorithm: str | None) -> bool:
        """A launch with this algorithm and no draft takes the target's checkpoint as the
        draft (a target that carries its MTP layer: draft_rename gives its draft class)."""
        return False

    def method_from_draft_name(self, draft: str, version: str | None) -> tuple[str, str] | None:
        """(algorithm, where) the engine derives from the draft's model string when the launch
        names no algorithm; None when it derives none that serves an EAGLE or MTP head."""
        return None

    # ---- draft settings given as flags of their own (no settings_arg)
    def draft_settings_refused(
        self, version: str | None, steps: int, topk: int | None, tokens: int | None
    ) -> tuple[str, str] | None:
        """(title, detail) when the release stops at start with these draft settings (topk and
        draft tokens None: not given); None when it takes them or the rule was not read."""
        return None

    def draft_backend(self, version: str | None, args: dict) -> str | None:
        """The attention backend the launch gives the draft's decode."""
        return None

    #: files (relative to the package) whose code says which draft settings the release picks
    #: when the launch gives none: read where the version says nothing (a fork, a dev build)
    auto_settings_files: ClassVar[tuple[str, ...]] = ()

    def auto_settings_in_source(
        self, source: str, target_arch: str | None, algorithm: str | None
    ) -> tuple[tuple[int, int, int], int] | None:
        """((steps, topk, draft tokens), line) one of auto_settings_files chooses, else None."""
        return None

    def auto_draft_settings(
        self, version: str | None, target_arch: str | None, algorithm: str | None = None
    ) -> tuple[int, int, int] | None:
        """(steps, topk, draft tokens) the engine picks when the launch gives none."""
        return None


class UnknownEngine(EngineProfile):
    """An engine no scan named: its launch flags are not read, and no release rule applies."""

    name = ""
    label = "the engine"
    scan: ClassVar[Mapping[str, Any]] = {}
    speculation_flag = "--speculative-*"
    algorithm_flag = "--speculative-*"
    draft_flag = "--speculative-*"
    context_arg = ""
    overrides_arg = ""
    served_families: ClassVar[Mapping[str, str]] = {}
    launch_algorithms: ClassVar[Mapping[str, str]] = {}
    families_served_by: ClassVar[Mapping[str, frozenset[str]]] = {}

    def served_context_length(self, config: dict, version: str | None) -> int | None:
        return None

    def draft_context_length(self, config: dict) -> int | None:
        return None
