"""Does the draft fit what it is served with: its quantized weights' scales, its tokenizer, its
context and RoPE, its quantization, its head. Pure checks, one function per finding, each
returning a check result (remotedbg.contract); what each release does is its engine's
profile's (remotedbg.engines.sglang, remotedbg.engines.vllm), asked through the deployment's
`engine_profile` (release rules) and `launch_profile` (how its launch flags read).

- draft-scales-missing: quantized weights (FP8, INT8, packed 4-bit) without the scale tensors
  that give them their values. This is a property of the checkpoint: no loader can dequantize
  them, so an engine either fails or computes with raw codes.
- tokenizer-mismatch: the draft ships a tokenizer whose token -> id map differs from the
  target's. Engines tokenize with the target's tokenizer (the draft's files are never loaded
  for EAGLE heads; vLLM 0.33's use_heterogeneous_vocab is for method draft_model only),
  so a draft trained on other ids proposes tokens the target reads as different ones.
"""

from __future__ import annotations

from typing import Any

from remotedbg.agent.findings import ERROR, INFO, WARNING, finding
from remotedbg.agent.tokenizer_files import shared_ids
from remotedbg.analysis.plugins import distribution_name, plugin_label
from remotedbg.contract import (
    UNREADABLE,
    UNSUPPORTED_CODE,
    add_finding,
    check_result,
    not_applicable,
    unknown,
)
from remotedbg.engines import draft_fit_rules as rules
from remotedbg.engines.knowledge import POSITIONLESS_FAMILIES, drafts_without_a_model
from remotedbg.engines.profile import method_key
from remotedbg.engines.text_config import text_config

#: safetensors dtypes of quantized weights (FP8, INT8, and 4-bit formats packed into bytes).
QUANTIZED_DTYPES = ("F8_E4M3", "F8_E5M2", "F8_E8M0", "I8", "U8", "I4", "U4", "F4")
#: What a quantized weight `X.weight` needs beside it: any tensor `X.<suffix>`.
SCALE_SUFFIXES = ("weight_scale", "weight_scale_inv", "weight_scale_2", "scales", "scale",
                  "weight_scales", "input_scale", "qscale")  # fmt: skip


def _has_scale(weight: str, names: set[str]) -> bool:
    module = weight[: -len("weight")]
    return any(module + suffix in names for suffix in SCALE_SUFFIXES)


def draft_scales_missing(tensors: list[dict] | None) -> dict[str, Any]:
    result = check_result("draft-scales-missing")
    if tensors is None:
        return unknown(result, "the draft's tensors were not listed")
    names = {t["name"] for t in tensors}
    quantized = [t for t in tensors if t.get("dtype") in QUANTIZED_DTYPES
                 and t["name"].endswith(".weight") and len(t.get("shape") or []) == 2]  # fmt: skip
    if not quantized:
        return not_applicable(result, "no quantized weights in the draft")
    bare = [t for t in quantized if not _has_scale(t["name"], names)]
    result["facts"] = {"quantized": len(quantized), "without_scales": len(bare)}
    if not bare:
        return result
    shown = ", ".join(f"{t['name']} ({t['dtype']})" for t in bare[:6])
    return add_finding(
        result,
        finding(
            "draft-scales-missing",
            ERROR,
            f"{len(bare)} quantized draft weight(s) have no scale tensors",
            f"{shown}{' ...' if len(bare) > 6 else ''}: stored as {bare[0]['dtype']} codes with "
            "no `weight_scale`/`weight_scale_inv` beside them, so no loader can turn them back "
            "into values; an engine that copies them into a bf16 layer computes with the raw "
            "codes. Re-export the draft in bf16, or with its scales.",
            {
                "weights": [t["name"] for t in bare[:20]],
                "dtype": bare[0]["dtype"],
                "count": len(bare),
            },  # fmt: skip
        ),
    )


def tokenizer_mismatch(tokenizers: dict | None) -> dict[str, Any]:
    result = check_result("tokenizer-mismatch")
    draft = (tokenizers or {}).get("draft")
    target = (tokenizers or {}).get("target")
    if draft and draft.get("error"):
        return unknown(result, draft["error"], UNREADABLE)
    if not draft or not draft.get("vocab_sha256"):
        # no tokenizer.json (none at all, or a tokenizer_config.json alone): nothing whose ids
        # could differ; the draft is served with the target's tokenizer
        why = "the draft ships no tokenizer.json: it is served with the target's"
        return not_applicable(result, why)
    if not target or not target.get("vocab_sha256"):
        why = (target or {}).get("error") or "the target has no tokenizer.json to compare"
        return unknown(result, why)
    result["facts"] = {"draft_vocab": draft["vocab_size"], "target_vocab": target["vocab_size"]}
    if draft["vocab_sha256"] != target["vocab_sha256"]:
        return add_finding(
            result,
            finding(
                "tokenizer-mismatch",
                ERROR,
                "the draft's tokenizer is not the target's",
                f"The draft ships a tokenizer of {draft['vocab_size']} base tokens and the target "
                f"one of {target['vocab_size']}, with a different token -> id map. The engine "
                "tokenizes with the target's, so ids the draft learned mean other tokens: "
                "train the draft on the target's tokenizer.",
                {
                    "draft_vocab": draft["vocab_size"],
                    "target_vocab": target["vocab_size"],
                    "draft_sha256": draft["vocab_sha256"][:16],
                    "target_sha256": target["vocab_sha256"][:16],
                },  # fmt: skip
            ),
        )
    moved = sorted(t for t, i in draft["added"].items() if t in target["added"]
                   and target["added"][t] != i)  # fmt: skip
    special = {k: (v, target["special"].get(k)) for k, v in draft["special"].items()
               if target["special"].get(k) not in (None, v)}  # fmt: skip
    if moved:
        add_finding(result, finding(
            "tokenizer-mismatch", ERROR,
            f"{len(moved)} added token(s) have other ids in the draft's tokenizer",
            "Same base vocabulary, but special or added tokens sit at other ids "
            f"({', '.join(moved[:5])}): the draft was trained with ids the target does not use.",
            {"tokens": {t: [draft["added"][t], target["added"][t]] for t in moved[:10]}},
        ))  # fmt: skip
    if special:
        add_finding(result, finding(
            "tokenizer-mismatch", WARNING,
            "the draft's tokenizer names other special tokens than the target's",
            "; ".join(f"{k}: draft {d!r}, target {t!r}" for k, (d, t) in special.items())
            + ". Training used other end-of-turn or padding tokens than serving does.",
            {"special": special},
        ))  # fmt: skip
    return result


# --------------------------------------------------------------------- context, RoPE, quant, head
def draft_model_vocab(dep: Any) -> dict[str, Any]:
    """A draft model of its own (vLLM's draft_model, SGLang's STANDALONE) drafts target ids
    with its own vocabulary: a vocabulary of another size is refused at start by most releases
    and drafted silently by the others (the engine profile's draft_model_vocab)."""
    result = check_result("draft-model-vocab")
    if dep.served != "draft_model":
        return not_applicable(result, "not a draft model of its own")
    draft, target = text_config(dep.draft_config), text_config(dep.target_config)
    sizes = draft.get("vocab_size"), target.get("vocab_size")
    if not all(isinstance(n, int) for n in sizes):
        return unknown(result, "the draft's or the target's vocab_size is not in its config")
    result["facts"] = {"draft_vocab": sizes[0], "target_vocab": sizes[1]}
    if sizes[0] == sizes[1]:
        return result
    rule = _draft_model_vocab_rule(dep)
    if rule is None:
        return unknown(result, f"the draft's vocabulary ({sizes[0]}) is not the target's "
                       f"({sizes[1]}), and what {dep.engine_label or dep.engine} does then is "
                       "not known", UNSUPPORTED_CODE)  # fmt: skip
    outcome, where = rule
    result["facts"]["engine"] = where
    if outcome == "allowed":
        return result
    tokenizers = dep.tokenizers or {}
    shared = shared_ids(tokenizers.get("draft"), tokenizers.get("target"))
    if outcome == "silent" and shared is not None and min(sizes) >= shared:
        # one tokenizer, embeddings padded to different sizes (Qwen2.5's 151936 and 152064):
        # every id it produces means the same token in both, and the engine checks nothing
        result["facts"]["shared_tokenizer_ids"] = shared
        return result
    title = ("the engine refuses a draft model with another vocabulary" if outcome == "refused"
             else "the draft model's token ids are verified as the target's")  # fmt: skip
    return add_finding(result, finding(
        "draft-model-vocab", ERROR, title,
        f"The draft model has a vocabulary of {sizes[0]} and the target one of {sizes[1]}: "
        + ("it does not start (" if outcome == "refused" else "nothing maps between them (")
        + f"{where}). Use a draft of the target's family, trained on its tokenizer.",
        {"draft_vocab": sizes[0], "target_vocab": sizes[1], "engine": where},
    ))  # fmt: skip


def _draft_model_vocab_rule(dep: Any) -> tuple[str, str] | None:
    settings = dep.launch_profile.launch_settings(_launch_args(dep)) or {}
    return dep.engine_profile.draft_model_vocab(dep.engine_version, settings)


def own_vocabulary(dep: Any) -> bool:
    """A draft model the release serves with its own tokenizer (vLLM's use_heterogeneous_vocab,
    the engine profile's draft_model_vocab "allowed")."""
    rule = _draft_model_vocab_rule(dep) if dep.served == "draft_model" else None
    return rule is not None and rule[0] == "allowed"


def _launch_args(dep: Any) -> dict:
    return ((dep.server or {}).get("args") or {}) if dep.server else {}


def _overrides(dep: Any) -> dict:
    args = _launch_args(dep)
    value = args.get(dep.launch_profile.overrides_arg)
    return value if isinstance(value, dict) else {}


def _overridden(dep: Any, config: dict) -> dict:
    return dep.engine_profile.apply_overrides(dep.engine_version, config, _overrides(dep))


def served_context(dep: Any) -> int | None:
    """The context the server serves: --context-length / --max-model-len, else the target's
    derived length (SGLang's rule, overrides applied)."""
    given = _length_flag(_launch_args(dep).get(dep.launch_profile.context_arg))
    if given is not None and given > 0:
        return given
    if not dep.target_config:
        return None
    config = _overridden(dep, dep.target_config)
    return dep.launch_profile.served_context_length(config, dep.engine_version)


def _length_flag(value: Any) -> int | None:
    """`32768`, `32k` (x1000) or `32K` (x1024), as vLLM 0.33 reads them
    (vllm/utils/argparse_utils.py:30-60); `-1`/`auto` (auto-fit) -> None."""
    text = str(value).strip() if value is not None else ""
    units = {"k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2}
    try:
        if text and text[-1] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(text) if text else None
    except ValueError:
        return None


def context_exceeds_draft(dep: Any) -> dict[str, Any]:
    result = check_result("context-exceeds-draft")
    if dep.family in POSITIONLESS_FAMILIES:
        return not_applicable(result, "the draft has no positions (Medusa's heads are MLPs on "
                              "the target's hidden state)")  # fmt: skip
    if not dep.engine_profile.reads_context_rules:
        return not_applicable(result, f"{dep.engine_profile.label}'s context-length rules are not "
                              "in its profile: not checked")  # fmt: skip
    draft_config = dep.draft_config or {}
    if dep.engine_profile.overrides_reach_draft():
        draft_config = _overridden(dep, draft_config)
    # an MTP layer in a multimodal target: its limit is the language model's, as the target's
    draft_config = text_config(draft_config)
    draft = dep.launch_profile.draft_context_length(draft_config)
    served = served_context(dep)
    if draft is None or served is None:
        return unknown(result, "the served context or the draft's limit is unknown")
    result["facts"] = {"served_context": served, "draft_context": draft}
    if served <= draft:
        return result
    outcome = dep.engine_profile.longer_context_outcome(
        dep.engine_version, draft_config, dep.env, dep.server_running, dep.algorithm
    )
    if outcome is None:
        return unknown(result, f"serves {served} positions, the draft {draft}; what "
                       f"{dep.engine} {dep.engine_version} does then was not read")  # fmt: skip
    raises = dep.engine_profile.raises_draft_limit_when_allowed(dep.engine_version)
    said = {
        rules.START_FAILS: (ERROR, "the server refuses to start (ValueError): "
                            "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is not set in its "
                            "environment"),
        # an error only where the engine refuses to start: where it serves, its rotary cache is
        # sized from the draft's limit and only prompts past that limit are at risk (issue 42)
        rules.START_FAILS_UNLESS_ENV: (
            WARNING,
            "the server refuses to start (ValueError) unless "
            "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 is set (the launch environment "
            "was not read); with it, "
            + ("the engine raises the draft's limit, which was never trained there" if raises
               else "positions past the draft's limit overrun its rotary cache")),
        rules.OVERRUN: (WARNING, "positions past the draft's limit overrun its rotary cache: "
                        "a crash or garbage drafts on prompts longer than that"),
        rules.RAISED: (WARNING, "the engine raises the draft's limit to cover them, but the "
                       "draft was never trained there: expect acceptance to fall on long "
                       "prompts (remotedbg probe compares the long-context prompts)"),
        rules.LOWERED: (WARNING, "vLLM lowers the served context to the draft's limit"),
        rules.SKIPPED: (WARNING, "vLLM's V1 runner drafts nothing for sequences past the "
                        "draft's limit"),
    }[outcome]  # fmt: skip
    return add_finding(result, finding(
        "context-exceeds-draft", said[0],
        f"serves {served} positions; the draft knows {draft}",
        f"{dep.engine} {dep.engine_version or ''}: {said[1]}. Train the draft with a longer "
        "max_position_embeddings (and the target's rope_scaling), or serve a shorter context.",
        {"served_context": served, "draft_context": draft, "outcome": outcome,
         "env": dep.env},  # fmt: skip
    ))  # fmt: skip


def rope_mismatch(dep: Any) -> dict[str, Any]:
    result = check_result("rope-mismatch")
    if dep.family in POSITIONLESS_FAMILIES:
        return not_applicable(result, "the draft has no attention, so no RoPE of its own")
    draft, target = dep.draft_config or {}, text_config(dep.target_config)
    overrides = {k: v for k, v in _overrides(dep).items() if k in rules.ROPE_KEYS}
    notes = []
    if overrides and dep.engine_profile.overrides_reach_draft():
        changed = {k: v for k, v in overrides.items() if draft.get(k) != v}
        if changed:
            notes.append(f"--json-model-override-args {changed} is applied to the draft too: "
                         "it runs with RoPE settings it was not trained with")  # fmt: skip
    elif overrides:
        notes.append(f"--hf-overrides {overrides} reaches the target only: the draft keeps "
                     "its own RoPE settings")  # fmt: skip
    if target and draft:
        if (
            draft.get("rope_theta") not in (None, target.get("rope_theta"))
            and target.get("rope_theta") is not None
        ):
            notes.append(f"rope_theta: draft {draft['rope_theta']}, target "
                         f"{target['rope_theta']}")  # fmt: skip
        if target.get("rope_scaling") and not draft.get("rope_scaling"):
            notes.append(f"the target scales RoPE ({target['rope_scaling']}); the draft's "
                         "config has no rope_scaling (dropped by a converter?)")  # fmt: skip
    if not draft:
        return unknown(result, "the draft config was not read")
    if not notes:
        return result
    return add_finding(result, finding(
        "rope-mismatch", WARNING, "the draft's RoPE differs from the target's",
        "; ".join(notes) + ". Every engine builds the draft with its own config's RoPE; "
        "positions mean the same to both only if the draft was trained with these settings.",
        {"draft": {k: draft.get(k) for k in rules.ROPE_KEYS if k in draft},
         "target": {k: target.get(k) for k in rules.ROPE_KEYS if k in target},
         "overrides": overrides},  # fmt: skip
    ))  # fmt: skip


def _scales_outcome(dep: Any, scaled: list[str]) -> str | None:
    """What the loader does with scale tensors: as the engine's own load_weights was followed
    (remotedbg.analysis.loader_model) when it raises on or drops them, else the rule read for
    the release."""
    load = getattr(dep, "load", None)
    outcomes = [((load.outcomes if load else {}).get(n) or {}).get("outcome") for n in scaled]
    if "raises" in outcomes:
        return "start-fails"
    if "dropped" in outcomes:
        return "dropped"
    # "loaded" is the loader model assuming a parameter it could not see: with no quantization
    # declared or inherited the layers have no scale parameters, so the release's rule decides
    if not dep.engine_version:
        return "undecided"  # no release (a fork, a dev build): no release's rule is applied
    return dep.engine_profile.unexpected_scales_outcome(dep.engine_version)


def quantization_mismatch(dep: Any) -> dict[str, Any]:
    result = check_result("quantization-mismatch")
    draft, tensors = dep.draft_config or {}, dep.tensors or []
    declared = draft.get("quantization_config")
    names = {t["name"] for t in tensors}
    scaled = sorted(n for n in names if n.rsplit(".", 1)[-1] in SCALE_SUFFIXES)
    from_log = (dep.server or {}).get("source") == "--var log"
    inherited = dep.engine_profile.draft_inherits_quantization(
        dep.engine_version, _launch_args(dep), resolved=from_log
    )
    family = dep.served or dep.family
    ignored = dep.engine_profile.draft_quantization_ignored(dep.engine_version, family)
    outcome = None
    if scaled and ignored:
        outcome = "start-fails"  # the layers have no scale parameters, whatever is declared
    elif scaled and not declared and not inherited:
        outcome = _scales_outcome(dep, scaled)
    if outcome:
        how = {
            "dropped": "drops them without a message and uses the quantized codes as values",
            "undecided": "either refuses them at start or drops them silently (which one, its "
            "releases differ on, and its version is no release the rules were read from)",
        }.get(outcome, "refuses them at start (KeyError / ValueError)")
        title = (f"{len(scaled)} scale tensor(s) in a draft whose config declares no quantization"
                 if not declared else f"{len(scaled)} scale tensor(s) in a draft "
                 f"{dep.engine_label or dep.engine} builds without its quantization")
        add_finding(result, finding(
            "quantization-mismatch", ERROR, title,
            f"{dep.engine_label or dep.engine} {how}: "
            + ("export the draft in bf16, or serve it on a release that builds it with its own "
               "quantization." if declared else "add the quantization_config the draft was "
               "exported with, or export it in bf16."),
            {"scales": scaled[:10], "outcome": outcome},
        ))  # fmt: skip
    if inherited and not declared:
        add_finding(result, finding(
            "quantization-mismatch", WARNING,
            f"the bf16 draft is quantized online to {inherited} with the target",
            f"SGLang gives the draft the target's --quantization {inherited} (its fc and "
            "embedding stay bf16); the draft was trained in bf16. From 0.5.7, "
            "--speculative-draft-model-quantization unquant keeps it in bf16.",
            {"quantization": inherited},
        ))  # fmt: skip
    target_quant = (dep.target_config or {}).get("quantization_config")
    fed_hidden_states = family != "draft_model"  # a draft model reads tokens only
    if isinstance(target_quant, dict) and not declared and not inherited and fed_hidden_states:
        method = target_quant.get("quant_method") or target_quant.get("quant_algo") or "?"
        add_finding(result, finding(
            "quantization-mismatch", WARNING,
            f"a {method} target feeds hidden states to a draft without quantization",
            f"The target checkpoint is {method}-quantized; unless the draft was trained on "
            "this quantized target's hidden states, its inputs differ from training.",
            {"target_quantization": method},
        ))  # fmt: skip
    if not draft:
        return unknown(result, "the draft config was not read")
    return result


def tied_head(dep: Any) -> dict[str, Any]:
    result = check_result("draft-head-tied")
    draft = dep.draft_config or {}
    outcome = dep.engine_profile.tied_head_outcome(dep.engine_version)
    if outcome is None:
        return not_applicable(result, f"{dep.engine} ignores the draft's tie_word_embeddings")
    vocab, small = draft.get("vocab_size"), draft.get("draft_vocab_size")
    if not draft.get("tie_word_embeddings") or not small or not vocab or small >= vocab:
        return result
    effect = ("(silently wrong drafts)" if outcome == "wrong-head" else "(fails indexing d2t)")
    if not dep.engine_version:  # a fork or dev build: which release's behaviour is not decided
        effect = "(silently wrong drafts, or a failure indexing d2t: its releases differ)"
    return add_finding(result, finding(
        "draft-head-tied", ERROR,
        "tie_word_embeddings makes the draft's head the target's embedding",
        f"{dep.engine_profile.label} honours tie_word_embeddings: the head becomes the target's "
        f"input embedding, whose first {small} rows are not the draft vocabulary "
        + effect
        + ". Set tie_word_embeddings to false: the draft has its own lm_head.",
        {"tie_word_embeddings": True, "draft_vocab_size": small, "vocab_size": vocab},
    ))  # fmt: skip


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _auto_settings(result: dict[str, Any], dep: Any) -> dict[str, Any]:
    """What the engine picks for draft settings the launch leaves out: from the install's own
    code where it was read (a fork, a dev build), else by its release's rule; with neither,
    said not applied (never a release's rule for an install that is no release)."""
    arch = ((dep.target_config or {}).get("architectures") or [None])[0]
    name = dep.engine_label or f"{dep.engine_profile.label} {dep.engine_version or ''}".strip()
    plugin = dep.plugin_algorithm
    if plugin:
        # a plugin algorithm's class may choose its own (eagle-harness 0.1.3: its
        # handle_server_args, sglang/algorithm.py:61-62 DEFAULT_TREE_SHAPE): not the engine's
        return not_applicable(result, f"which draft settings {plugin['name']} (from plugin "
                              f"{plugin['plugin']}) picks without --speculative-num-steps is "
                              "the plugin's choice: the engine's rule is not applied")  # fmt: skip
    if dep.auto_settings:
        auto, where = tuple(dep.auto_settings["settings"]), f" ({dep.auto_settings['where']})"
    elif dep.engine_version:
        auto = dep.launch_profile.auto_draft_settings(dep.engine_version, arch, dep.algorithm)
        where = ""
    else:
        return not_applicable(result, f"which draft settings {name} picks without "
                              "--speculative-num-steps was not decided: its version is no release "
                              "the rules were read from and its own code did not say")  # fmt: skip
    if auto is None:
        return result
    result["facts"] = {"auto": {"steps": auto[0], "topk": auto[1], "draft_tokens": auto[2]}}
    return add_finding(result, finding(
        "draft-settings", INFO,
        f"{name} chooses steps {auto[0]}, topk {auto[1]}, {auto[2]} draft tokens",
        f"No --speculative-num-steps: {name} picks these for {arch}{where}; the ceiling is "
        f"{auto[0] + 1} tokens per verify step.",
        {"steps": auto[0], "topk": auto[1], "draft_tokens": auto[2], "target": arch},
    ))  # fmt: skip


def _method_refused(result: dict[str, Any], dep: Any) -> dict[str, Any] | None:
    """A method that drafts without a model, as the release takes it: one it does not have, or
    one built on a package that is not beside the install (for a launch given, not running:
    a server that runs has imported it)."""
    if not drafts_without_a_model(dep.algorithm):
        return None  # a head's method: algorithm-mismatch judges it against the draft
    profile = dep.launch_profile
    refused = profile.refuses_algorithm(dep.algorithm, dep.engine_version)
    if refused:
        return add_finding(result, finding("draft-settings", ERROR, *refused,
                                           {"algorithm": dep.algorithm}))  # fmt: skip
    needed = profile.method_needs_distribution(dep.algorithm, dep.engine_version)
    if needed is None:
        return None
    distribution, without = needed
    beside = [p for p in dep.plugins or [] if distribution_name(p) == distribution]
    result["facts"] = {"needs": distribution,
                       "installed": [plugin_label(p) for p in beside]}  # fmt: skip
    if beside or (dep.server or {}).get("source") != "--var args":
        return None
    label = dep.engine_label or dep.engine
    return add_finding(result, finding(
        "draft-settings", ERROR,
        f"{label} refuses method {dep.algorithm}: {distribution} is not installed beside it",
        f"{label} builds {dep.algorithm} on the {distribution} package and stops without it: "
        f"{without}. No {distribution} distribution is in the install's site-packages (one on "
        f"PYTHONPATH or in a user site is not seen). Install it into the engine's environment: "
        f"pip install {distribution}.",
        {"algorithm": dep.algorithm, "needs": distribution, "engine": label},
    ))  # fmt: skip


def draft_settings(dep: Any) -> dict[str, Any]:
    """The draft settings as the engine will take them: SGLang's start-up assertion and
    auto-choice, its topk-1 correction; vLLM's required num_speculative_tokens."""
    result = check_result("draft-settings")
    args = _launch_args(dep)
    if not dep.server:
        return not_applicable(result, "no launch arguments")
    if dep.launch_profile.settings_arg:
        refused = dep.launch_profile.settings_refused(args, dep.engine_version)
        if refused:
            return add_finding(result, finding("draft-settings", ERROR, *refused,
                                               {"speculative_config": args.get(
                                                   dep.launch_profile.settings_arg)}))  # fmt: skip
        stopped = _method_refused(result, dep)
        if stopped is not None:
            return stopped
        spec = dep.launch_profile.launch_settings(args)
        if (
            isinstance(spec, dict)
            and spec.get("num_speculative_tokens") is None
            and not (dep.draft_config or {}).get("n_predict")
            and method_key(dep.algorithm) not in dep.launch_profile.tokens_defaulted_for
        ):
            return add_finding(result, finding(
                "draft-settings", ERROR,
                f"no num_speculative_tokens: {dep.launch_profile.label} refuses to start",
                "--speculative-config has no num_speculative_tokens and the draft config no "
                f"n_predict ({dep.launch_profile.tokens_required_at}).",
                {"speculative_config": spec},
            ))  # fmt: skip
        if isinstance(spec, dict) and not drafts_without_a_model(dep.algorithm):
            # the draft's own length only where the draft is a model of its own: what an
            # EAGLE or MTP head's ModelConfig derives its length from differs by release
            own = method_key(dep.algorithm) == "draft_model" and dep.draft_config
            refused = dep.launch_profile.speculative_length_refused(
                spec,
                dep.launch_profile.served_context_length(dep.draft_config, dep.engine_version)
                if own else None,
                served_context(dep),
            )
            if refused:
                return add_finding(result, finding("draft-settings", ERROR, *refused,
                                                   {"speculative_config": spec}))  # fmt: skip
        return result
    stopped = _method_refused(result, dep)
    if stopped is not None:
        return stopped
    if drafts_without_a_model(dep.algorithm):
        # SGLang's NGRAM sets its own topk and steps (0.5.3 server_args.py; 0.5.14
        # arg_groups/speculative_hook.py): the EAGLE settings' assertion is not on its path
        return not_applicable(result, f"{dep.algorithm} drafts without a model")
    backend = dep.launch_profile.draft_backend(dep.engine_version, args)
    if backend and dep.draft_backends is not None and backend not in dep.draft_backends:
        return add_finding(result, finding(
            "draft-settings", ERROR, f"the EAGLE draft has no {backend} attention backend",
            f"{dep.engine_version}'s draft decode accepts {', '.join(dep.draft_backends)}; "
            f"{backend} makes it raise ValueError('EAGLE is not supported in ...') at start "
            "(read from the install: srt/speculative/draft_utils.py, eagle_worker.py before "
            "0.5.6). Choose one of those, e.g. with --speculative-draft-attention-backend "
            "(0.5.7 and later).", {"backend": backend, "supported": dep.draft_backends},
        ))  # fmt: skip
    spec = dep.spec or {}  # the launch flags, completed from the log's ServerArgs line
    steps, topk, tokens = (_int(spec.get(k)) for k in ("num_steps", "topk", "num_draft_tokens"))
    profile = dep.launch_profile
    if profile.draft_settings_all_or_none and steps is None and (topk is not None
                                                                 or tokens is not None):
        return add_finding(result, finding(
            "draft-settings", ERROR, "topk or draft tokens without --speculative-num-steps",
            "SGLang asserts that all three are given or none (AssertionError at start: 0.5.23 "
            "sglang/srt/arg_groups/speculative_hook.py:1159-1174; 0.5.6 server_args.py:1723-"
            "1726; 0.4.6.post5 server_args.py:404-407).", {"topk": topk, "draft_tokens": tokens},
        ))  # fmt: skip
    if steps is None:
        return _auto_settings(result, dep)
    refused = profile.draft_settings_refused(dep.engine_version, steps, topk, tokens)
    if refused:
        return add_finding(result, finding("draft-settings", ERROR, *refused,
                                           {"steps": steps, "topk": topk, "draft_tokens": tokens}))
    if profile.chain_sets_draft_tokens and topk == 1 and tokens is not None and tokens != steps + 1:
        return add_finding(result, finding(
            "draft-settings", WARNING,
            f"{tokens} draft tokens with topk 1: SGLang uses {steps + 1}",
            "With topk 1 the draft tree is a chain of num_steps tokens: SGLang overrides "
            "--speculative-num-draft-tokens to num_steps + 1 with a warning (0.5.23 "
            "speculative_hook.py:1255-1265; 0.5.6 server_args.py:1743-1750).",
            {"steps": steps, "draft_tokens": tokens},
        ))  # fmt: skip
    return result


def chat_template_drift(dep: Any) -> dict[str, Any]:
    """The chat template the draft ships (its training record) against the one the target
    serves; without one, what the probe can measure instead."""
    result = check_result("chat-template-drift")
    tokenizers = dep.tokenizers or {}
    draft = (tokenizers.get("draft") or {}).get("chat_template_sha256")
    target = (tokenizers.get("target") or {}).get("chat_template_sha256")
    custom = _launch_args(dep).get("chat-template")
    if not draft:
        return not_applicable(result, "the draft ships no chat template, so there is no record "
                              "of the one it was trained with: compare chat vs raw and thinking "
                              "on/off with remotedbg probe --compare chat,thinking")  # fmt: skip
    if custom:
        return unknown(result, f"served with --chat-template {custom}: not compared")
    if not target:
        return unknown(result, "the target's chat template was not found")
    result["facts"] = {"draft": draft[:16], "target": target[:16]}
    if draft == target:
        return result
    return add_finding(result, finding(
        "chat-template-drift", WARNING,
        "the draft ships another chat template than the target serves",
        "The draft's tokenizer_config.json / chat_template.jinja (what its training data was "
        "formatted with) differs from the target's, which formats every chat request at serving "
        "time: the draft sees conversations laid out unlike in training. Measure the effect with "
        "remotedbg probe --compare chat,thinking.",
        {"draft_sha256": draft[:16], "target_sha256": target[:16]},
    ))  # fmt: skip
