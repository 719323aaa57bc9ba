"""Speculative-decoding configuration checks (pure): draft checkpoint x launch x engine code.

Each check takes a `Deployment` (what was gathered from the box: the draft's config and tensor
listing, the target's config, the launch settings, the server's figures, and the facts read from
the engine's own code) and returns a check result in the contract of remotedbg.contract: ok,
found (findings), unknown (with the reason) or not-applicable. Engine behaviour is never assumed
here: it arrives as facts computed from the install's code (remotedbg.analysis.engine_facts,
loader_model, capture), and a fact that could not be read makes the check unknown.

Finding ids (stable): algorithm-mismatch, target-unsupported, draft-arch-unsupported,
aux-layers-mismatch, aux-layers-ignored, fc-shape-mismatch, norm-flag-unsupported,
draft-load-fails, required-weights-missing, embedding-missing, unexpected-weights,
token-map-ignored, accept-length-low, spec-config-cleared; capture-modified and
engine-code-modified (the served code against its release, remotedbg.analysis.served_code).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from remotedbg.agent.findings import ERROR, INFO, WARNING, finding
from remotedbg.analysis.fit_checks import (
    chat_template_drift,
    context_exceeds_draft,
    draft_model_vocab,
    draft_scales_missing,
    draft_settings,
    own_vocabulary,
    quantization_mismatch,
    rope_mismatch,
    tied_head,
    tokenizer_mismatch,
)
from remotedbg.analysis.loader_values import LoadModel
from remotedbg.analysis.plugin_gate import gate_line
from remotedbg.analysis.plugins import algorithm_line, plugin_algorithm
from remotedbg.analysis.pysource import parse, walk
from remotedbg.analysis.served_code import served_code_modified
from remotedbg.contract import (
    MISSING_INPUT,
    UNSUPPORTED_CODE,
    add_finding,
    check_result,
    not_applicable,
    unknown,
    unknowns,
)
from remotedbg.engines.knowledge import (
    LOADER_MODELLED_FAMILIES,
    draft_family,
    low_acceptance,
    medusa_head_index,
    mtp_layer_prefixes,
    served_family,
)
from remotedbg.engines.loader_rules import VOCAB_MAP_TENSORS
from remotedbg.engines.profile import EngineProfile
from remotedbg.engines.profiles import engine_profile, known_engine, launch_profile
from remotedbg.engines.text_config import text_config_key, text_field

CHECK_IDS = (
    "served-code-modified",
    "algorithm-mismatch",
    "target-unsupported",
    "draft-arch-unsupported",
    "draft-model-vocab",
    "aux-layers-mismatch",
    "fc-shape-mismatch",
    "norm-flag-unsupported",
    "draft-weights",
    "draft-scales-missing",
    "tokenizer-mismatch",
    "chat-template-drift",
    "context-exceeds-draft",
    "rope-mismatch",
    "quantization-mismatch",
    "draft-head-tied",
    "draft-settings",
    "token-map-ignored",
    "accept-length-low",
)
NORM_FLAGS = ("norm_output", "norm_before_fc", "fc_norm", "norm_before_residual", "use_aux_norm")
NORM_TENSOR_PARTS = ("input_norm", "fc_norm", "norm_before_fc", "output_norm", "aux_norm_low",
                     "aux_norm_mid", "aux_norm_high")  # fmt: skip
AUX_KEYS = (
    "eagle_aux_hidden_state_layer_ids",
    "aux_hidden_state_layer_ids",
    "layers_to_capture",
    "eagle_layers_to_capture",
    "aux_layer_ids",
)
LOW_ACCEPT_RATIO = 0.4
D2T_PARAMS = ("d2t", "t2d", "draft_id_to_target_id", "hot_token_id")


@dataclass
class Deployment:
    """Everything the checks know about one draft as served (or about to be)."""

    draft_config: dict | None = None
    tensors: list[dict] | None = None
    draft_error: str | None = None
    target_config: dict | None = None
    target_error: str | None = None
    engine: str | None = None
    spec: dict | None = None  # launch settings (server_scan.spec_summary)
    server: dict | None = None  # the server scan entry (figures, log, notes)
    server_running: bool = False
    code_error: str | None = None  # why the engine's code is not there at all
    draft_class: str | None = None  # "path:Class" the engine would load
    served_architectures: list[str] | None = None
    registry: dict | None = None  # vLLM registry (arch -> (module, class)) when read
    class_by_method: dict | None = None  # vLLM 0.8.5: method -> class, registry not consulted
    load: LoadModel | None = None
    load_error: str | None = None
    embedding: dict = field(default_factory=dict)  # engine_facts.embedding_sharing
    capture: dict | None = None  # capture.evaluate_capture, or {"error"}
    capture_source: str | None = None
    capture_point: dict = field(default_factory=dict)
    ids_source: dict = field(default_factory=dict)  # engine_facts.aux_ids_source
    capture_calls: list[str] = field(default_factory=list)
    train_layers: list[int] | None = None
    draft_words: set[str] | None = None  # identifiers of the draft class's code (all its files)
    includes_bonus: bool | None = None  # vLLM: mean acceptance length counts the bonus token
    tokenizers: dict | None = None  # {"draft", "target"}: agent.tokenizer_files fingerprints
    engine_version: str | None = None  # of the install that serves (or would serve) the draft
    #: None for a fork or a dev build: its version is no release the rules were read from
    engine_label: str | None = None  # engines.profiles.install_label: how outputs name it
    #: {"settings": (steps, topk, draft tokens), "where": "file:line"}: what the install's own
    #: code picks for unset draft settings (read where the version says nothing)
    auto_settings: dict | None = None
    env: dict | None = None  # the server's launch environment (draft_fit_rules.ENV_FACTS)
    draft_backends: list[str] | None = None  # engine_facts.draft_decode_backends
    eagle3_targets: dict | None = None  # engine_facts.eagle3_target_types (vLLM)
    drift: dict | None = None  # the install against its release (served_code.summarize)
    speculators: dict | None = None  # a speculators-format draft as read (analysis.speculators)
    plugins: list[dict] | None = None  # the install's plugins (analysis.plugins.install_plugins)
    draft_plugin: str | None = None  # the plugin whose class loads the draft ("name version")

    @property
    def no_draft_in_target(self) -> str | None:
        """Why the draft taken from the target is not known (the launch names no draft and the
        release gives the target's config no draft class), else None: no check may judge the
        target's checkpoint as a head then."""
        if (self.spec or {}).get("draft_in_target") and self.load_error and not self.draft_class:
            return f"the draft taken from the target: {self.load_error}"
        return None

    @property
    def engine_profile(self) -> EngineProfile:
        """The serving engine's profile: its release rules and mechanisms."""
        return engine_profile(self.engine)

    @property
    def launch_profile(self) -> EngineProfile:
        """The profile its launch flags are read with (SGLang's when no engine is named)."""
        return launch_profile(self.engine)

    @property
    def family(self) -> str | None:
        return draft_family(self.draft_config or {}, self.engine, self.algorithm, self.tensors)

    @property
    def algorithm(self) -> str | None:
        return (self.spec or {}).get("algorithm")

    @property
    def plugin_algorithm(self) -> dict | None:
        """The launch's algorithm where a plugin of the install registers it (and the engine
        has none of that name)."""
        if not self.algorithm or served_family(self.engine, self.algorithm):
            return None
        return plugin_algorithm(self.plugins, self.algorithm)

    @property
    def served(self) -> str | None:
        if not self.algorithm:
            return None
        plugin = self.plugin_algorithm
        return plugin["family"] if plugin else served_family(self.engine, self.algorithm)


# ------------------------------------------------------------------ algorithm vs draft family
def algorithm_mismatch(dep: Deployment) -> dict[str, Any]:
    """The draft's architecture family against --speculative-algorithm (vLLM: method)."""
    result = check_result("algorithm-mismatch")
    if dep.draft_config is None:
        return unknown(result, f"the draft checkpoint was not read ({dep.draft_error})")
    if dep.no_draft_in_target:  # not a head at all: no family to match the algorithm with
        return unknown(result, dep.no_draft_in_target, UNSUPPORTED_CODE)
    archs = dep.draft_config.get("architectures") or []
    if not dep.algorithm:
        notes = [n for n in (dep.server or {}).get("notes") or [] if "not valid JSON" in n]
        if notes:
            return unknown(result, notes[0])
        if dep.server is None:
            # a draft audited on its own: there is no launch line whose flags could be wrong
            return not_applicable(
                result,
                "no server runs this draft and no --var args='...' gives its launch command: "
                "the launch flags were not checked",
            )
        refused = (dep.spec or {}).get("method_refused")
        if refused:
            return add_finding(result, finding(
                "algorithm-mismatch", ERROR,
                f"no speculative method: {dep.engine_label or dep.engine} refuses this launch",
                f"{refused}.", {"engine": dep.engine, "engine_version": dep.engine_version},
            ))  # fmt: skip
        return unknown(result, "the server's launch line names no speculative algorithm")
    drafted = draft_family(dep.draft_config, dep.engine, None, dep.tensors)
    served = dep.served
    result["facts"] = {"architectures": archs, "draft_family": drafted, "algorithm": dep.algorithm,
                       "served_as": served}  # fmt: skip
    plugin = dep.plugin_algorithm
    if plugin:
        result["facts"]["algorithm_from"] = algorithm_line(plugin["name"], plugin,
                                                           plugin["plugin"])  # fmt: skip
        stopped = _plugin_gate(result, dep, plugin)
        if stopped is not None:
            return stopped
    launch = dep.launch_profile
    refused = launch.refuses_algorithm(dep.algorithm, dep.engine_version)
    if refused:
        return add_finding(result, finding("algorithm-mismatch", ERROR, *refused,
                                           {"algorithm": dep.algorithm, "engine": dep.engine}))
    if served is None:
        return unknown(result, _unknown_algorithm(dep, plugin))
    if drafted is None:
        if served == "draft_model" and archs:
            return result  # a language model of its own, as the method loads it
        if launch.names_head_after_method and archs:
            return result  # the head is named after the method (vLLM's EAGLEConfig)
        return unknown(result, f"architectures {archs} name no draft family we know")
    flag = launch.algorithm_flag
    right = launch.launch_algorithms.get(drafted)
    if served in launch.families_served_by.get(drafted, ()):
        return result
    what = {"eagle3": "an EAGLE-3 head", "eagle": "an EAGLE-1/2 head", "mtp": "an MTP/NextN head",
            "medusa": "a set of Medusa heads"}
    consequence = {
        drafted: "the engine loads it as a language model of its own, without the target's "
        "hidden states the head was trained to read: its weights do not fit that model and "
        "the server fails at start, or drafts garbage",
    } if served == "draft_model" else {
        "eagle3": "the head gets the last hidden state instead of the three captured layers it "
        "was trained on, and no draft token is accepted (accept length 1.00, nothing in the log)",
        "eagle": "EAGLE3 feeds it three concatenated target layers it was not trained on",
        "mtp": "the EAGLE-3 path captures aux layers and calls methods the MTP head does not "
        "have: the server fails at start, or drafts garbage",
        "medusa": "the method's own head class is built from a config that describes no such "
        "head, and the Medusa weights do not load into it: the server fails at start",
    }[drafted]
    add_finding(
        result,
        finding(
            "algorithm-mismatch",
            ERROR,
            f"{what[drafted]} is served with {flag} {dep.algorithm}",
            f"The draft's architectures {archs} name {what[drafted]}, but the server runs it as "
            f"{dep.algorithm}: {consequence}. "
            + (f"Use {flag} {right}." if right else f"{launch.label} serves no such head."),
            {
                "architectures": archs,
                "algorithm": dep.algorithm,
                "engine": dep.engine,
                "draft_class": dep.draft_class,
            },  # fmt: skip
        ),
    )
    return result


def _plugin_gate(result: dict[str, Any], dep: Deployment, plugin: dict) -> dict | None:
    """The plugin's gate on this install (analysis.plugin_gate): it registers nothing, so the
    algorithm is unknown at start (an error); or that was not decided (unknown)."""
    gate = plugin.get("gate") or {}
    name = dep.engine_label or dep.engine_profile.label
    line = gate_line(plugin["plugin"], name, gate) if gate else ""
    if gate.get("status") == "undecided":
        return unknown(result, line)
    if gate.get("status") not in ("disabled", "not-loaded"):
        return None
    add_finding(result, finding(
        "plugin-disabled", ERROR,
        f"{plugin['name']} is not registered: {plugin['plugin']} registers nothing on {name}",
        f"{line}. {dep.engine_profile.unknown_algorithm_outcome} Serve it on an engine that "
        f"carries the plugin's hooks, or use {dep.launch_profile.algorithm_flag} "
        f"{dep.launch_profile.launch_algorithms.get(dep.family or '', 'EAGLE3')}.",
        {"algorithm": plugin["name"], "plugin": plugin["plugin"],
         "missing": gate.get("missing")},
    ))  # fmt: skip
    return result


def _undecided_plugin(dep: Deployment) -> str | None:
    """Why the draft class is not known to load: it is a plugin's whose registration sits
    behind a test not decided here (None: the class is the engine's, or its plugin's gate
    passes)."""
    label = dep.draft_plugin
    plugin = next((p for p in dep.plugins or [] if p.get("label") == label), None)
    gate = (plugin or {}).get("gate") or {}
    if label is None or gate.get("status") != "undecided":
        return None
    return gate_line(label, dep.engine_label or dep.engine_profile.label, gate)


def _unknown_algorithm(dep: Deployment, plugin: dict | None) -> str:
    """Why the launch's algorithm has no family: a plugin registers it without declaring
    one, or neither the engine nor any plugin of the install registers it (what was seen)."""
    if plugin:
        return (f"{algorithm_line(plugin['name'], plugin, plugin['plugin'])}; its class "
                "declares no draft family, so the draft's fit is not judged")  # fmt: skip
    taken = (dep.spec or {}).get("algorithm_from")
    if taken:  # the release's own code gave it: a draft kind remotedbg has no rules for
        return (f"{dep.engine_label or dep.engine} serves this draft with method "
                f"{dep.algorithm!r} ({taken}), a draft kind remotedbg has no rules for: its fit "
                "is not judged")  # fmt: skip
    seen = ", ".join(p["label"] for p in dep.plugins or []) or "none"
    return (f"{dep.engine} has no algorithm {dep.algorithm!r} we know, and no plugin of the "
            f"install registers it (plugins seen: {seen})")


def target_unsupported(dep: Deployment) -> dict[str, Any]:
    """The target's class (through its bases, across files) has none of the capture methods the
    engine calls for EAGLE-3: the server fails at start."""
    result = check_result("target-unsupported")
    if dep.served != "eagle3":
        return not_applicable(result, "not served as EAGLE-3")
    if dep.family not in ("eagle3", None):
        return not_applicable(result, "the draft is not an EAGLE-3 head (see algorithm-mismatch)")
    if dep.capture is None:
        return unknown(result, dep.code_error or "the target model's code was not found or read")
    if not dep.capture.get("missing"):
        if "error" in dep.capture and "inherits from" in dep.capture["error"]:
            return unknown(result, dep.capture["error"], UNSUPPORTED_CODE)
        return result
    target_class = ((dep.target_config or {}).get("architectures") or ["?"])[0]
    if dep.capture.get("unregistered"):
        return _unregistered_target(result, dep, target_class)
    add_finding(
        result,
        finding(
            "target-unsupported",
            ERROR,
            f"the target {target_class} cannot feed an EAGLE-3 draft on this engine release",
            f"{dep.capture['error']}; the engine calls {', '.join(dep.capture_calls) or 'them'} "
            "on the target for EAGLE3, so the server stops at start (AttributeError). Use a "
            "release whose target model implements it.",
            {
                "target_class": target_class,
                "source": dep.capture_source,
                "engine_calls": dep.capture_calls,
            },  # fmt: skip
        ),
    )
    return result


def _unregistered_target(result: dict, dep: Deployment, target_class: str) -> dict[str, Any]:
    """The release's models do not define the target's class: its registry cannot build it,
    and only a Transformers fallback class that captures could serve it as an EAGLE-3 target."""
    capture = dep.capture or {}
    error, fallback = capture["error"], capture.get("fallback") or {}
    files, methods = fallback.get("files"), fallback.get("methods")
    if files is None:
        return unknown(result, f"{error}; the Transformers fallback was not read")
    model_type = str(text_field(dep.target_config, "model_type") or "")
    allowed = dep.eagle3_targets
    if methods and allowed and not any(t in model_type for t in allowed["types"]):
        fallback_said = (f"though its Transformers fallback ({', '.join(files)}) defines "
                         f"{', '.join(methods)}, the release accepts EAGLE-3 targets only of the "
                         f"model types {allowed['types']} ({allowed['where']}), and "
                         f"{model_type or '(no model_type)'} is none of them")  # fmt: skip
    elif methods:
        return unknown(result, f"{error}; only the Transformers fallback ({', '.join(files)}, "
                       f"which defines {', '.join(methods)}) could serve it")  # fmt: skip
    else:
        fallback_said = (f"its Transformers fallback ({', '.join(files)}) has no capture method "
                         "either" if files else "it has no Transformers fallback")  # fmt: skip
    return add_finding(result, finding(
        "target-unsupported", ERROR,
        f"this {dep.engine} release does not support the target {target_class}",
        f"{error}: the release's model registry cannot build it ('Model architectures [...] are "
        f"not supported'), and {fallback_said}: the server stops at start. Use a release that "
        "ships a model class for it.",
        {"target_class": target_class, "fallback": fallback,
         "engine_version": dep.engine_version},  # fmt: skip
    ))  # fmt: skip


def draft_arch_unsupported(dep: Deployment) -> dict[str, Any]:
    """vLLM looks the draft's (rewritten) architecture up in its registry; a name it does not
    register stops the server at start."""
    result = check_result("draft-arch-unsupported")
    refused = (dep.speculators or {}).get("error")
    if refused:
        # a speculators checkpoint the release cannot read: no draft config, no server
        return add_finding(result, finding(
            "draft-arch-unsupported", ERROR,
            "this release cannot read the draft's speculators format",
            f"The draft is a vllm-project/speculators checkpoint "
            f"({(dep.draft_config or {}).get('architectures')}); {refused}, so the server stops "
            "at start. Fix: serve it with a vLLM release that reads the format (0.10.1 and "
            "later), or convert it to a plain EAGLE-3 config.",
            {"speculators": dep.speculators},
        ))  # fmt: skip
    untyped = dep.engine_profile.draft_config_unreadable(dep.draft_config or {}, dep.family,
                                                       dep.engine_version, dep.algorithm)
    if untyped:
        return add_finding(result, finding("draft-arch-unsupported", ERROR, *untyped,
                                           {"model_type": None, "family": dep.family}))
    gated = _undecided_plugin(dep)
    if gated is not None:
        return unknown(result, gated)
    if not dep.engine_profile.registers_draft_architectures:
        return not_applicable(result, f"{dep.launch_profile.label} resolves drafts by EntryClass "
                              "(see the loader)")  # fmt: skip
    if dep.class_by_method:
        return not_applicable(result, "this vLLM release picks the draft class by method")
    if dep.family == "mtp" or dep.served not in ("eagle3", "eagle", "medusa"):
        return not_applicable(result, "not an EAGLE or Medusa draft")
    if dep.family and dep.family not in _compatible(dep):
        return not_applicable(result, "the algorithm does not fit the draft (algorithm-mismatch)")
    if dep.registry is None or dep.served_architectures is None:
        return unknown(result, "the engine's model registry was not read")
    known = [a for a in dep.served_architectures if a in dep.registry]
    result["facts"] = {"served_architectures": dep.served_architectures, "registered": known}
    if known:
        return result
    title, detail = dep.engine_profile.unregistered_draft(
        dep.served_architectures, (dep.draft_config or {}).get("architectures") or [])
    add_finding(result, finding("draft-arch-unsupported", ERROR, title, detail,
                                {"served_architectures": dep.served_architectures}))  # fmt: skip
    return result


# ------------------------------------------------------------------ aux layers
def _as_int_list(value: Any) -> list[int] | None:
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return list(value)
    return None


def recorded_aux_ids(draft_config: dict) -> dict[str, list[int]]:
    """Aux layer ids the draft config records, by where: {"eagle_config.<key>"|"<key>": ids}."""
    out = {}
    for key in AUX_KEYS:
        ids = _as_int_list(draft_config.get(key))
        if ids is not None:
            out[key] = ids
    eagle = draft_config.get("eagle_config")
    if isinstance(eagle, dict):
        for key in AUX_KEYS:
            ids = _as_int_list(eagle.get(key))
            if ids is not None:
                out[f"eagle_config.{key}"] = ids
    return out


def engine_ids(dep: Deployment) -> tuple[list[int] | None, str | None]:
    """The draft-config ids the engine passes to the target, and from where (None: none)."""
    recorded = recorded_aux_ids(dep.draft_config or {})
    key = "eagle_aux_hidden_state_layer_ids"
    if dep.ids_source.get("eagle_config") and f"eagle_config.{key}" in recorded:
        return recorded[f"eagle_config.{key}"], f"eagle_config.{key}"
    if dep.ids_source.get("top_level") and key in recorded:
        return recorded[key], key
    return None, None


def parse_layers(value: Any) -> list[int] | None:
    """'1,29,57' / '[1, 29, 57]' / [1, 29, 57] -> [1, 29, 57]; '' / None -> None."""
    if value in (None, "", []):
        return None
    if isinstance(value, str):
        parts = [p for p in re.split(r"[\s,\[\]]+", value) if p]
        try:
            return [int(p) for p in parts] or None
        except ValueError:
            return None
    if isinstance(value, (list, tuple)):
        try:
            return [int(v) for v in value] or None
        except (TypeError, ValueError):
            return None
    return None


def aux_layers(dep: Deployment) -> dict[str, Any]:
    """The layers the engine captures (the target's own capture method, evaluated for the ids
    the engine passes) against the training layers; plus ids the config records where this
    engine release does not read them."""
    result = check_result("aux-layers-mismatch")
    if dep.draft_config is None:
        return unknown(result, f"the draft checkpoint was not read ({dep.draft_error})")
    if dep.family != "eagle3" or dep.served not in ("eagle3", None):
        return not_applicable(result, "not an EAGLE-3 draft served as EAGLE-3")
    if dep.capture is None:
        return unknown(result, dep.code_error or "the target model's code was not found or read")
    if "error" in dep.capture:
        if dep.capture.get("missing"):
            return not_applicable(result, "the target cannot capture (see target-unsupported)")
        return unknown(result, dep.capture["error"], UNSUPPORTED_CODE)
    capture = dep.capture["layers_to_capture"]
    point = dep.capture_point.get("point")
    offset = 0 if point == "output" else 1
    physical = [c - offset for c in capture]
    passed, passed_from = engine_ids(dep)
    recorded = recorded_aux_ids(dep.draft_config)
    if dep.speculators and "error" not in dep.speculators:
        # vllm-project/speculators records the indices vLLM captures at (its datagen runs vLLM;
        # its default 2, n//2, n-3: src/speculators/models/utils.py resolve_target_layer_ids),
        # i.e. the inputs of those layers: the outputs of the layers one below
        passed = [i - 1 for i in passed] if passed is not None else None
        recorded = {k: [i - 1 for i in v] for k, v in recorded.items()}
    facts: dict[str, Any] = {
        "layers_to_capture": capture,
        "physical_layers": physical,
        "set_at": dep.capture.get("where"),
        "set_by": _set_by(dep.capture),
        "ids_passed": passed,
        "ids_from": passed_from,
        "recorded": recorded,
        "engine_reads": dep.ids_source.get("where"),
        "capture_point": point or "input (assumed)",
    }
    result["facts"] = facts
    ignored = {k: v for k, v in recorded.items() if k != passed_from}
    for key, ids in ignored.items():
        if sorted(ids) == sorted(physical):
            continue
        add_finding(
            result,
            finding(
                "aux-layers-ignored",
                WARNING,
                f"the draft config's {key} is not read by this engine release",
                f"The config records aux layers {ids} under {key}, but this release reads "
                f"{_reads(dep)}; it captures layer outputs {physical} "
                f"(layers_to_capture={capture}, {dep.capture.get('where')}). If training used "
                f"{ids}, the draft gets other hidden states than it learned from.",
                {
                    "key": key,
                    "ids": ids,
                    "physical_layers": physical,
                    "engine_reads": dep.ids_source.get("where"),
                },  # fmt: skip
            ),
        )
    if dep.train_layers is not None:
        trained, trained_from, severity = list(dep.train_layers), "--var train_layers", ERROR
    elif passed is not None:
        trained, trained_from, severity = passed, passed_from, WARNING
    elif recorded:
        key, trained = next(iter(recorded.items()))
        trained_from, severity = key, WARNING
    else:
        facts["train_layers"] = "the trainer's default (no ids recorded)"
        return result
    facts["train_layers"] = trained
    facts["train_layers_from"] = trained_from
    if sorted(trained) == sorted(physical):
        return result
    add_finding(
        result,
        finding(
            "aux-layers-mismatch",
            severity,
            "the target captures other hidden-state layers than the draft was trained on",
            f"The engine captures layers_to_capture={capture} "
            f"({_set_by(dep.capture) or dep.capture.get('where')}), "
            f"i.e. the outputs of layers {physical}; training used the outputs of layers "
            f"{trained} ({trained_from})."
            + (
                " The draft config's ids are taken as the training record; pass "
                "--var train_layers to confirm."
                if severity == WARNING
                else ""
            ),
            {
                "layers_to_capture": capture,
                "physical_layers": physical,
                "train_layers": trained,
                "train_layers_from": trained_from,
                "ids_passed": passed,
                "set_at": dep.capture.get("where"),
            },  # fmt: skip
        ),
    )
    return result


def _set_by(capture: dict) -> str | None:
    """Where a delegated capture method (a wrapper's language model's) sets the layers."""
    inner = capture.get("delegated") or {}
    return f"{inner['path']}:{inner['line']}" if inner.get("path") and inner.get("line") else None


def _reads(dep: Deployment) -> str:
    where = dep.ids_source.get("where") or []
    if not where:
        return "no draft-config layer ids at all (it uses the target's default)"
    kinds = [k for k in ("eagle_config", "top_level") if dep.ids_source.get(k)]
    return f"only {' and '.join(kinds)} ids ({', '.join(where[:3])})"


# ------------------------------------------------------------------ tensors
def _parts(name: str) -> list[str]:
    parts = name.split(".")
    while parts and parts[0] in ("model",):
        parts = parts[1:]
    return parts


def fc_shape_mismatch(dep: Deployment) -> dict[str, Any]:
    """fc.weight's input width against target hidden size x number of captured layers."""
    result = check_result("fc-shape-mismatch")
    if dep.draft_config is None:
        return unknown(result, f"the draft checkpoint was not read ({dep.draft_error})")
    if dep.family == "medusa":
        return _medusa_width(result, dep)
    if dep.family != "eagle3":
        return not_applicable(result, "not an EAGLE-3 draft (its fc is not fed aux states)")
    fc = next((t for t in dep.tensors or [] if _parts(t.get("name", "")) == ["fc", "weight"]), None)
    load = dep.load
    if fc is None and load is not None and load.status == "raises":
        return not_applicable(result, "the engine cannot load this checkpoint (draft-load-fails)")
    if fc is None and load is not None and load.status != "unknown" and any(
        p.split(".")[-1] == "fc" or p.split(".")[-2:] == ["fc", "weight"] for p in load.unfilled()
    ):
        return not_applicable(result, "no tensor loads the fc (required-weights-missing)")
    if fc is None:
        return unknown(result, "the checkpoint has no fc.weight")
    shape = list(fc.get("shape") or [])
    if len(shape) != 2:
        return unknown(result, f"{fc['name']} has shape {shape}, not 2-D")
    config = dep.draft_config
    target_hidden = text_field(dep.target_config, "hidden_size")
    if isinstance(target_hidden, int):
        where = ".".join(filter(None, [text_config_key(dep.target_config), "hidden_size"]))
        hidden, hidden_from = target_hidden, f"target config {where}"
    elif isinstance(config.get("target_hidden_size"), int):
        hidden, hidden_from = config["target_hidden_size"], "draft config target_hidden_size"
    else:
        return unknown(result, "the target hidden size is unknown (no target config)")
    captured = (dep.capture or {}).get("layers_to_capture")
    count = len(captured) if captured else 3
    expected = hidden * count
    result["facts"] = {"tensor": fc["name"], "shape": shape, "target_hidden_size": hidden,
                       "hidden_size_from": hidden_from, "aux_layers": count,
                       "expected_in": expected}  # fmt: skip
    if shape[1] == expected:
        return result
    add_finding(
        result,
        finding(
            "fc-shape-mismatch",
            ERROR,
            f"fc.weight takes {shape[1]} inputs, the engine will feed {expected}",
            f"{fc['name']} has shape {shape} ([out, in]); the target's hidden size {hidden} "
            f"({hidden_from}) x {count} captured layers = {expected}. The draft was trained for "
            "another target or another number of aux layers.",
            result["facts"],
        ),
    )
    return result


def _medusa_width(result: dict[str, Any], dep: Deployment) -> dict[str, Any]:
    """Each Medusa head's residual layers are [h, h] Linear layers fed the target's last hidden
    state (vLLM v1/spec_decode/medusa.py propose: self.model(target_hidden_states)); h must be
    the target's hidden size, or the first draft step fails on the shapes."""
    layers = [t for t in dep.tensors or [] if medusa_head_index(t.get("name", "")) is not None
              and len(t.get("shape") or []) == 2 and "lm_heads" not in t["name"]
              and (t["name"].endswith("linear.weight") or ".layers." in t["name"])]  # fmt: skip
    target_hidden = text_field(dep.target_config, "hidden_size")
    if not isinstance(target_hidden, int):
        return unknown(result, "the target hidden size is unknown (no target config)")
    if not layers:
        return unknown(result, "the checkpoint has no Medusa residual layer (blocks.*.layers.*)")
    widths = sorted({t["shape"][1] for t in layers})
    result["facts"] = {"tensors": len(layers), "in_widths": widths,
                       "target_hidden_size": target_hidden}  # fmt: skip
    if widths == [target_hidden]:
        return result
    other = next(t for t in layers if t["shape"][1] != target_hidden)
    return add_finding(result, finding(
        "fc-shape-mismatch", ERROR,
        f"the Medusa heads take {other['shape'][1]} inputs, the target's hidden states are "
        f"{target_hidden} wide",
        f"{other['name']} has shape {other['shape']} ([out, in]); the engine feeds each head "
        f"the target's last hidden state ({target_hidden} wide): the first draft step fails "
        "on the shapes. The heads were trained for another target.",
        dict(result["facts"], tensor=other["name"], shape=other["shape"]),
    ))  # fmt: skip


def source_identifiers(source: str) -> set[str]:
    """Every identifier the code uses (names, attributes, args, defs) and every identifier-like
    word inside its string constants; comments do not count."""
    tree = parse(source)
    if tree is None:
        return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", source))
    words: set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.arg):
            words.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            words.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            words.add(node.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", node.value))
    return words


def _config_flags(draft_config: dict) -> dict[str, Any]:
    flags = {k: draft_config[k] for k in NORM_FLAGS if k in draft_config}
    eagle = draft_config.get("eagle_config")
    if isinstance(eagle, dict):
        flags.update({f"eagle_config.{k}": eagle[k] for k in NORM_FLAGS if k in eagle})
    return flags


def _norm_tensors(tensors: list[dict] | None) -> list[str]:
    """The checkpoint's trained norm tensors."""
    return [
        t["name"]
        for t in tensors or []
        if any(p in NORM_TENSOR_PARTS for p in _parts(t.get("name", "")))
    ]


def _unread_flags(flags: dict[str, Any], draft_words: set[str] | None) -> list[dict]:
    """The set flags the draft-model code never names."""
    return [
        {"config": k, "value": v}
        for k, v in flags.items()
        if k.split(".")[-1] not in (draft_words or set())
    ]


def _unloaded_norms(trained: list[str], load: LoadModel | None) -> list[dict]:
    """The trained norm tensors the loader drops or refuses (at most six named)."""
    if not trained or load is None:
        return []
    lost = [n for n in trained if load.outcomes.get(n, {}).get("outcome") != "loaded"]
    return [{"tensor": lost[:6]}] if lost else []


def norm_flag_unsupported(dep: Deployment) -> dict[str, Any]:
    """A norm flag the draft config sets that the engine's draft code never reads, or a trained
    norm tensor its loader drops or refuses: the served head computes something else."""
    result = check_result("norm-flag-unsupported")
    if dep.draft_config is None:
        return unknown(result, f"the draft checkpoint was not read ({dep.draft_error})")
    flags = {k: v for k, v in _config_flags(dep.draft_config).items() if v}
    trained = _norm_tensors(dep.tensors)
    result["facts"] = {"flags_set": flags, "norm_tensors": trained, "draft_class": dep.draft_class}
    if not flags and not trained:
        return result
    if flags and dep.draft_words is None:
        return unknown(result, "the engine's draft-model code was not found or not read")
    if trained and (dep.load is None or dep.load.status == "unknown"):
        return unknown(result, dep.load_error or (dep.load.reason if dep.load else ""))
    unsupported = _unread_flags(flags, dep.draft_words) + _unloaded_norms(trained, dep.load)
    result["facts"]["unsupported"] = unsupported
    if not unsupported:
        return result
    labels = [u.get("config") or ", ".join(u["tensor"]) for u in unsupported]
    add_finding(
        result,
        finding(
            "norm-flag-unsupported",
            ERROR,
            "the draft was trained with a norm this engine release does not build",
            f"{dep.draft_class or 'The engine draft-model class'} never applies "
            f"{', '.join(labels)}: the flag is ignored and/or the trained weight is not loaded, "
            "so the served head computes something else than the trained one. Use a release "
            "that implements it, or retrain without it.",
            {"draft_class": dep.draft_class, "unsupported": unsupported, "flags_set": flags},
        ),
    )
    return result


def _load_fails(result: dict[str, Any], load: LoadModel) -> None:
    raised = load.raised or {}
    add_finding(
        result,
        finding(
            "draft-load-fails",
            ERROR,
            f"the engine cannot load this checkpoint: {raised.get('kind')} on "
            f"{raised.get('tensor')}",
            f"{load.draft_class} load_weights raises {raised.get('message')} at "
            f"{raised.get('at')} while loading {raised.get('tensor')!r}: the server stops at "
            "start. The tensor names do not match what this release expects (a wrapper "
            "prefix such as model./draft_model., or a norm it does not build).",
            {"raised": raised, "draft_class": load.draft_class},
        ),
    )


def _unfilled_parameters(load: LoadModel) -> tuple[list[str], list[str]]:
    """Required parameters nothing loads (the vocab map aside): (embeddings, the others)."""
    unfilled = [p for p in load.unfilled() if p.rsplit(".", 1)[-1] not in D2T_PARAMS]
    embed = [p for p in unfilled if p.rsplit(".", 1)[-1] in ("embed_tokens", "embedding")]
    others = [p for p in unfilled if p not in embed]
    return embed, others


def _embedding_missing(result: dict[str, Any], dep: Deployment, embed: list[str]) -> None:
    """An unloaded embedding is fine when the engine shares the target's (same width)."""
    shared = dep.embedding.get("shared")
    hidden = (dep.draft_config or {}).get("hidden_size")
    target_hidden = text_field(dep.target_config, "hidden_size")
    other_width = (
        isinstance(hidden, int) and isinstance(target_hidden, int) and hidden != target_hidden
    )
    if other_width or shared is False:
        why = (
            f"draft hidden_size {hidden} != target {target_hidden}, so the target's cannot be "
            "shared"
            if other_width
            else "this engine release does not share the target's"
        )
        add_finding(
            result,
            finding(
                "embedding-missing",
                ERROR,
                "the draft needs its own embedding but the checkpoint has none",
                f"Nothing loads {', '.join(embed)} and {why}: the draft embeds tokens with "
                "uninitialised weights.",
                {"parameters": embed, "sharing": dep.embedding},
            ),
        )
    elif shared is None:
        unknown(result, dep.embedding.get("reason") or "embedding sharing unknown")
    else:
        result["facts"]["embedding"] = f"shared from the target ({dep.embedding['evidence'][0]})"


def _dropped_clause(dropped: dict[str, dict]) -> str:
    """What became of the checkpoint's tensors, for the required-weights-missing detail."""
    if not dropped:
        return "; the checkpoint has no such tensor"
    how = (
        "without a message"
        if all(o["how"] == "silent" for o in dropped.values())
        else "with only a log line"
    )
    return f"; {len(dropped)} tensor(s) are dropped {how}, e.g. {', '.join(list(dropped)[:3])}"


def _required_weights_missing(result: dict[str, Any], load: LoadModel, others: list[str]) -> None:
    dropped = {n: o for n, o in load.outcomes.items() if o["outcome"] == "dropped"}
    add_finding(
        result,
        finding(
            "required-weights-missing",
            ERROR,
            "the draft serves with uninitialised "
            + ", ".join(p.rsplit(".", 1)[-1] for p in others[:4]),
            f"Nothing in the checkpoint is loaded into {', '.join(others[:8])}"
            + (f" (+{len(others) - 8} more)" if len(others) > 8 else "")
            + f" by {load.draft_class}"
            + _dropped_clause(dropped)
            + ". The head computes with garbage: accept length near 1.",
            {
                "parameters": others,
                "dropped": list(dropped)[:20],
                "draft_class": load.draft_class,
            },  # fmt: skip
        ),
    )


def _unexpected_weights(result: dict[str, Any], load: LoadModel, dep: Deployment) -> None:
    """Dropped tensors that are neither the vocab map nor a norm (checked elsewhere), nor an
    embedding the engine replaces by the target's (vLLM 0.10.1.1 llama_eagle.py:118-121 skips
    `embed_tokens.` when it shares the target's: EAGLE-1 heads carry a frozen copy of it)."""
    shared = bool(dep.embedding.get("shared"))
    # Medusa: the release builds one head per speculative token, so a launch drafting fewer
    # tokens than the checkpoint has heads leaves the rest unused by choice
    heads = _medusa_built_heads(dep)
    extra = [
        n
        for n, o in load.outcomes.items()
        if o["outcome"] == "dropped"
        and _parts(n)[-1] not in VOCAB_MAP_TENSORS
        and not any(p in NORM_TENSOR_PARTS for p in _parts(n))
        and not (shared and "embed_tokens" in _parts(n))
        and not (isinstance(heads, int) and (medusa_head_index(n) or 0) >= heads)
    ]
    if extra:
        add_finding(
            result,
            finding(
                "unexpected-weights",
                WARNING,
                f"{len(extra)} checkpoint tensor(s) the engine's loader skips",
                f"{load.draft_class} loads no parameter from {', '.join(extra[:6])}: they were "
                "trained but are not used when serving.",
                {"tensors": extra[:20]},
            ),
        )


def draft_weights(dep: Deployment) -> dict[str, Any]:
    """What the engine's loader does with the checkpoint (remotedbg.analysis.loader_model):
    a load that raises, required parameters nothing fills (lm_head, embedding, layers), and
    tensors dropped without a word."""
    result = check_result("draft-weights")
    if dep.draft_config is None:
        return unknown(result, f"the draft checkpoint was not read ({dep.draft_error})")
    if dep.no_draft_in_target:
        return unknown(result, dep.no_draft_in_target, UNSUPPORTED_CODE)
    prefixes = mtp_layer_prefixes(dep.draft_config)
    if prefixes is not None and dep.tensors:
        return _mtp_layer_present(result, dep, prefixes)
    if dep.family not in LOADER_MODELLED_FAMILIES:
        return not_applicable(
            result,
            "weight names are modelled for EAGLE and Medusa heads; of an MTP/NextN layer in "
            "the target's checkpoint, that it is there",
        )
    if dep.served and dep.family not in _compatible(dep):
        return not_applicable(result, "the draft is not served by its own loader (see algorithm)")
    if draft_arch_unsupported(dep)["findings"]:
        return not_applicable(result, "the release cannot build the draft's architecture "
                              "(draft-arch-unsupported): no weight is loaded")  # fmt: skip
    load = dep.load
    if load is None or load.status == "unknown":
        reason = dep.load_error or (load.reason if load else "the loader was not modelled")
        return unknown(result, f"the engine's loader could not be followed: {reason}",
                       UNSUPPORTED_CODE)  # fmt: skip
    result["facts"] = {"draft_class": load.draft_class, "required": load.required,
                       "loaded": load.loaded_params, "approximate": load.approximate}  # fmt: skip
    if load.status == "raises":
        _load_fails(result, load)
        return result
    embed, others = _unfilled_parameters(load)
    if embed:
        _embedding_missing(result, dep, embed)
    if dep.engine_profile.tied_head_is_the_embedding and (dep.draft_config or {}).get(
        "tie_word_embeddings"
    ):
        # a tied head is the embedding module itself (0.4.6.post5 llama_eagle3.py:170-171,
        # 0.5.23 :303-304), which the target's embedding fills: draft-head-tied says what it is
        others = [p for p in others if p != "lm_head"]
    if dep.family == "eagle" and dep.embedding.get("head"):
        # EAGLE-1: the worker gives the draft the target's head (code_markers.HEAD_SHARING_CALLS)
        others = [p for p in others if p != "lm_head"]
        result["facts"]["head"] = f"shared from the target ({dep.embedding['head'][0]})"
    if others and dep.family == "medusa" and _medusa_heads_missing(result, dep, others):
        return result
    if others:
        _required_weights_missing(result, load, others)
        return result
    _unexpected_weights(result, load, dep)
    return result


def _mtp_layer_present(result: dict[str, Any], dep: Deployment,
                       prefixes: tuple[str, ...]) -> dict[str, Any]:  # fmt: skip
    """The target checkpoint's own MTP layer, which the draft is built from: an export that
    dropped it (quantized and fine-tuned checkpoints often do) leaves the layer unfilled."""
    names = [str(t.get("name", "")) for t in dep.tensors or []]
    found = sum(1 for name in names if name.startswith(prefixes))
    result["facts"] = {"mtp_layer": prefixes[0], "tensors": found}
    if found:
        return result
    return add_finding(result, finding(
        "required-weights-missing", ERROR,
        f"the checkpoint has no MTP layer: no tensor under {prefixes[0]}",
        f"{dep.engine_label or dep.engine} builds the MTP draft from the target's checkpoint, "
        f"and none of its {len(names)} tensors fills that layer: the server refuses to start "
        "(vLLM, unquantized: 'Following weights were not initialized from checkpoint', 0.33.0 "
        "model_executor/model_loader/default_loader.py:510-571) or drafts from uninitialised "
        "weights (SGLang loads the layer's names only: 0.5.23 deepseek_common/"
        "deepseek_weight_loader.py:570-577). Serve a checkpoint that keeps the MTP layer "
        "(quantized and fine-tuned exports often drop it), or start without MTP.",
        {"prefixes": list(prefixes), "checkpoint_tensors": len(names)},
    ))  # fmt: skip


def _medusa_built_heads(dep: Deployment) -> int | None:
    """How many Medusa heads the release builds for this launch (None: not a Medusa draft)."""
    if dep.family != "medusa":
        return None
    tokens = {"num_speculative_tokens": (dep.spec or {}).get("num_steps")}
    built = dep.engine_profile.draft_config_as_built(dep.draft_config or {}, dep.family, tokens,
                                                     dep.engine_version, dep.target_config)
    return built.get("num_heads") if isinstance(built.get("num_heads"), int) else None


def _medusa_heads_missing(result: dict[str, Any], dep: Deployment, others: list[str]) -> bool:
    """vLLM builds one Medusa head per speculative token (engines/vllm.py
    medusa_config_as_built): a launch drafting more tokens than the checkpoint has heads leaves
    the extra heads unfilled, and its loader refuses that at start."""
    names = [t.get("name", "") for t in dep.tensors or []]
    heads = {i for i in map(medusa_head_index, names) if i is not None}
    built = _medusa_built_heads(dep)
    if not heads or not isinstance(built, int) or built <= len(heads):
        return False
    add_finding(result, finding(
        "required-weights-missing", ERROR,
        f"num_speculative_tokens {built} asks for {built} Medusa heads; the checkpoint has "
        f"{len(heads)}",
        f"{dep.engine_profile.label} builds one Medusa head per speculative token (MedusaConfig's "
        "num_lookahead_tokens sets num_heads), so nothing loads "
        f"{', '.join(others[:4])}: its loader refuses unfilled weights at start (ValueError "
        "'Following weights were not initialized from checkpoint', model_executor/"
        f"model_loader/default_loader.py). Draft at most {len(heads)} tokens.",
        {"parameters": others, "checkpoint_heads": len(heads), "built_heads": built},
    ))  # fmt: skip
    return True


def _compatible(dep: Deployment) -> set[str]:
    """Draft families the served algorithm's loader path handles."""
    return {"eagle3": {"eagle3"}, "eagle": {"eagle", "mtp"}, "mtp": {"mtp"},
            "medusa": {"medusa"}}.get(dep.served or "", set())  # fmt: skip


# ------------------------------------------------------------------ launch and figures
def token_map_ignored(dep: Deployment) -> dict[str, Any]:
    result = check_result("token-map-ignored")
    if not dep.spec:
        return not_applicable(result, "no launch arguments")
    token_map = dep.spec.get("token_map")
    result["facts"] = {"token_map": token_map, "algorithm": dep.algorithm}
    if not token_map:
        return result
    if dep.served != "eagle3":
        return result
    add_finding(
        result,
        finding(
            "token-map-ignored",
            WARNING,
            "--speculative-token-map is ignored with EAGLE3",
            "EAGLE-3 drafts carry their own vocab map (d2t) in the checkpoint; the engine drops "
            f"the given token map {token_map} for EAGLE3 (it applies to EAGLE/FR-Spec only).",
            {"token_map": token_map, "algorithm": dep.algorithm, "engine": dep.engine},
        ),
    )
    return result


def observed_accept_length(server: dict) -> tuple[float | None, str | None, dict]:
    """The accept length seen: log window mean, else /metrics gauge, else /server_info."""
    seen: dict[str, Any] = {}
    log = server.get("log") or {}
    fig = (log.get("figures") or {}).get("accept_length")
    if fig:
        seen["log"] = {"mean": fig["mean"], "first": fig["first"], "last": fig["last"],
                       "lines": fig["count"], "path": log.get("path")}  # fmt: skip
    metrics = server.get("metrics") or {}
    if metrics.get("spec_accept_length") is not None:
        seen["metrics"] = metrics["spec_accept_length"]
    info = server.get("server_info") or {}
    if info.get("avg_spec_accept_length") is not None:
        seen["server_info"] = info["avg_spec_accept_length"]
    if "log" in seen:
        return seen["log"]["mean"], f"the log, mean of {seen['log']['lines']} lines", seen
    if "metrics" in seen:
        return seen["metrics"], "/metrics spec_accept_length", seen
    if "server_info" in seen:
        return seen["server_info"], "/server_info avg_spec_accept_length", seen
    return None, None, seen


def accept_length_low(dep: Deployment, ratio: float = LOW_ACCEPT_RATIO) -> dict[str, Any]:
    """Observed accept length against its ceiling: num_steps + 1 (capped by the number of draft
    tokens); for a vLLM release whose figure leaves out the bonus token, num_speculative_tokens."""
    result = check_result("accept-length-low")
    server = dep.server or {}
    observed, how, seen = observed_accept_length(server)
    if observed is None:
        if dep.server_running:
            notes = [str(m.get("error")) for m in (server.get("metrics"), server.get("log")) if m]
            extra = "; ".join(n for n in notes if n and n != "None")
            log = server.get("log") or {}
            if log.get("path") and not log.get("error"):
                # the log was read: the server has not logged a figure yet (no drafts so far)
                hint = (f"; its log {log['path']} has no accept-length line yet (nothing "
                        "drafted since it started? remotedbg probe sends requests)")  # fmt: skip
            else:
                hint = "; pass --var log=PATH"
            return unknown(
                result,
                "the running server's accept length was not read"
                + (f" ({extra})" if extra else "")
                + hint,
            )
        return not_applicable(result, "no running server and no log given (--var log=PATH)")
    steps = (dep.spec or {}).get("num_steps")
    if not isinstance(steps, int):
        return unknown(result, f"accept length {observed} seen but the number of draft steps is "
                       "unknown (no --speculative-num-steps in the args or the log)")  # fmt: skip
    ceiling = steps + 1
    draft_tokens = (dep.spec or {}).get("num_draft_tokens")
    if isinstance(draft_tokens, int) and 0 < draft_tokens < ceiling:
        ceiling = draft_tokens
    includes_bonus = dep.includes_bonus
    if includes_bonus is None:  # the engine's code was not read: the log's lines tell
        includes_bonus = ((server.get("log") or {}).get("figures") or {}).get(
            "length_includes_bonus"
        )
    if dep.engine_profile.mean_length_may_omit_bonus and includes_bonus is False:
        ceiling = steps
    result["facts"] = {"observed": observed, "from": how, "seen": seen, "ceiling": ceiling,
                       "ratio": round(observed / ceiling, 3) if ceiling else None}  # fmt: skip
    if ceiling <= 0 or observed >= ratio * ceiling:
        return result
    severity, why = low_acceptance(dep.algorithm)
    add_finding(
        result,
        finding(
            "accept-length-low",
            severity,
            f"accept length {observed:.2f} of a possible {ceiling}",
            f"The observed accept length ({how}) is {observed:.2f}, "
            f"{100 * observed / ceiling:.0f}% "
            f"of its ceiling {ceiling}: speculation costs more than it saves. {why}",
            {
                "observed": observed,
                "from": how,
                "ceiling": ceiling,
                "num_steps": steps,
                "num_draft_tokens": draft_tokens,
                "seen": seen,
            },  # fmt: skip
        ),
    )
    return result


# ------------------------------------------------------------------ all
def scales_missing(dep: Deployment) -> dict[str, Any]:
    return draft_scales_missing(dep.tensors)


def tokenizer_identity(dep: Deployment) -> dict[str, Any]:
    if own_vocabulary(dep):
        return not_applicable(check_result("tokenizer-mismatch"), "the release serves the draft "
                              "model with its own tokenizer (use_heterogeneous_vocab)")
    return tokenizer_mismatch(dep.tokenizers)


DRAFT_CHECKS = (
    algorithm_mismatch,
    target_unsupported,
    draft_arch_unsupported,
    draft_model_vocab,
    aux_layers,
    fc_shape_mismatch,
    norm_flag_unsupported,
    draft_weights,
    scales_missing,
    tokenizer_identity,
    chat_template_drift,
    context_exceeds_draft,
    rope_mismatch,
    quantization_mismatch,
    tied_head,
)
CHECKS = (served_code_modified, *DRAFT_CHECKS, draft_settings, token_map_ignored,
          accept_length_low)  # fmt: skip


def _engine_unknown(dep: Deployment, no_draft: bool) -> dict[str, Any]:
    """A server of an engine no profile was written for: every check is unknown, with what was
    seen of its launch, and none is decided by another engine's rules."""
    notes = [n for n in (dep.server or {}).get("notes") or [] if n.startswith("engine unknown")]
    reason = notes[0] if notes else (
        f"engine unknown: the server's engine ({dep.engine or 'unnamed'}) is not one remotedbg "
        "has rules for: its launch was not read")
    checks = {}
    for check, check_id in zip(CHECKS, CHECK_IDS, strict=True):  # the same order
        if no_draft and check in DRAFT_CHECKS:
            continue
        checks[check_id] = unknown(check_result(check_id), reason)
    return {"findings": [], "inconclusive": [reason], "checks": checks}


def run_checks(dep: Deployment) -> dict[str, Any]:
    """Every check for one draft (or, with no draft config and no draft error, one server's
    launch and figures). Returns {"findings", "inconclusive": [reasons], "checks": {id: result}}."""
    no_draft = dep.draft_config is None and dep.draft_error is None
    if dep.server is not None and not known_engine(dep.engine):
        return _engine_unknown(dep, no_draft)
    # a draft the release cannot read at all (its speculators format): that is the finding, and
    # what the other draft checks would read is not what any server runs
    unreadable = bool((dep.speculators or {}).get("error"))
    checks = {}
    for check in CHECKS:
        if no_draft and check in DRAFT_CHECKS:
            continue
        if unreadable and check in DRAFT_CHECKS and check is not draft_arch_unsupported:
            continue
        result = check(dep)
        checks[result["check"]] = result
    findings = [f for c in checks.values() for f in c["findings"]]
    inconclusive = unknowns(list(checks.values()))
    if not any(f["severity"] in (ERROR, WARNING) for f in findings) and not inconclusive:
        findings.append(
            finding(
                "spec-config-cleared",
                INFO,
                "the speculative-decoding configuration checks found nothing wrong",
                "Checked: "
                + ", ".join(k for k, c in checks.items() if c["status"] != "not-applicable")
                + ".",
                {},
            )
        )
    return {"findings": findings, "inconclusive": inconclusive, "checks": checks}


__all__ = ["Deployment", "run_checks", "parse_layers", "MISSING_INPUT"]
