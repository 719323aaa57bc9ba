"""Cross-checks between a draft checkpoint and the engine code that loads it (pure)."""

from __future__ import annotations

import shlex
from typing import Any

from remotedbg.agent.findings import ERROR, WARNING, finding

# Top-level tensor names an EAGLE/EAGLE-3 draft loader knows; others are skipped without a word.
KNOWN_DRAFT_PREFIXES = (
    "midlayer",
    "layers",
    "fc",
    "norm",
    "lm_head",
    "embed_tokens",
    "d2t",
    "t2d",
    "hidden_norm",
    "input_layernorm",
    "enorm",
    "hnorm",
    "eh_proj",
    "shared_head",
    "mtp",
)
WRAPPER_PREFIXES = ("model",)
AUX_KEYS_ELSEWHERE = (
    "eagle_aux_hidden_state_layer_ids",
    "aux_hidden_state_layer_ids",
    "layers_to_capture",
    "eagle_layers_to_capture",
    "aux_layer_ids",
)


def loader_direct_map(vocab_summary: dict, loader: dict | None) -> list[dict]:
    """An offset-format checkpoint loaded by code that uses d2t as target ids as is."""
    if not loader or loader.get("d2t_handling") != "direct":
        return []
    if vocab_summary.get("format") != "offsets":
        return []
    collapse = vocab_summary.get("direct_loader_collapse") or {}
    return [
        finding(
            "loader-direct-map",
            ERROR,
            "the engine's loader uses d2t as target ids, but the checkpoint stores offsets",
            f"{loader.get('path')} ({loader.get('class')}) keeps d2t as is, so draft id i "
            f"maps to target id d2t[i] instead of i + d2t[i]: {collapse.get('draft_ids')} "
            f"draft ids land on {collapse.get('distinct_targets')} distinct target ids, up to "
            f"{collapse.get('max_collapse')} on one. "
            "Fix the loader (hot_token_id = d2t + arange(N)).",
            {
                "loader": f"{loader.get('path')}:{loader.get('class')}",
                "loader_lines": [
                    f"{e.get('line')}: {e.get('text')}"
                    for e in loader.get("evidence", [])
                    if e.get("role") in (None, "use", "load", "assign")
                ][:5],
                "collapse_examples": collapse.get("examples", [])[:5],
            },
        )
    ]


def unexpected_weights(tensor_names: list[str]) -> list[dict]:
    unexpected = []
    for name in tensor_names:
        parts = name.split(".")
        while parts and parts[0] in WRAPPER_PREFIXES:
            parts = parts[1:]
        if not parts or parts[0] not in KNOWN_DRAFT_PREFIXES:
            unexpected.append(name)
    if not unexpected:
        return []
    return [
        finding(
            "unexpected-weights",
            WARNING,
            f"{len(unexpected)} checkpoint tensor(s) the draft loader would skip without a message",
            "Their names do not start with a component the engine's draft model has (after an "
            "optional 'model.' prefix); a converter that adds a wrapper prefix leaves these "
            "weights "
            "untrained in serving.",
            {"names": unexpected[:20], "known_prefixes": list(KNOWN_DRAFT_PREFIXES)},
        )
    ]


def default_aux_layers(num_layers: int) -> list[int]:
    return [2, num_layers // 2, num_layers - 3]


def aux_layers_ignored(draft_config: dict, target_config: dict | None) -> list[dict]:
    """Aux layer ids placed where SGLang does not read them (it reads only
    eagle_config.eagle_aux_hidden_state_layer_ids)."""
    eagle_config = draft_config.get("eagle_config") or {}
    if isinstance(eagle_config, dict) and "eagle_aux_hidden_state_layer_ids" in eagle_config:
        return []
    elsewhere = {key: draft_config[key] for key in AUX_KEYS_ELSEWHERE if key in draft_config}
    if isinstance(eagle_config, dict):
        elsewhere.update(
            {f"eagle_config.{k}": v for k, v in eagle_config.items() if k in AUX_KEYS_ELSEWHERE}
        )
    if not elsewhere:
        return []
    layers = (target_config or {}).get("num_hidden_layers")
    default = default_aux_layers(layers) if isinstance(layers, int) else None
    trained = [int(i) for i in next(iter(elsewhere.values()))]
    # Engines shift config ids by one for some targets (capture before layer id+1), so a stored
    # list equal to the default either way is probably the default: then only warn.
    differs = default is not None and default not in (trained, [i + 1 for i in trained])
    return [
        finding(
            "aux-layers-ignored",
            ERROR if differs else WARNING,
            "the draft's aux hidden-state layer ids sit where the engine does not read them",
            "SGLang reads only eagle_config.eagle_aux_hidden_state_layer_ids; without it the "
            "target captures its default layers"
            + (
                f" {default}, not the trained {trained}."
                if differs
                else " (compare them with the layers used in training)."
            ),
            {
                "found_at": elsewhere,
                "engine_default": default,
                "target_num_hidden_layers": layers,
            },
        )
    ]


def parse_flags(argv: list[str]) -> dict[str, str | bool]:
    """`--flag value` / `--flag=value` pairs from a command line."""
    flags: dict[str, str | bool] = {}
    index = 0
    while index < len(argv):
        word = argv[index]
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            if eq:
                flags[name] = value
            elif index + 1 < len(argv) and not argv[index + 1].startswith("--"):
                flags[name] = argv[index + 1]
                index += 1
            else:
                flags[name] = True
        index += 1
    return flags


def server_paths(processes: list[dict]) -> list[dict[str, Any]]:
    """Draft and target paths from running servers' launch arguments (SGLang and vLLM)."""
    out = []
    for process in processes:
        argv = process.get("cmdline") or []
        if isinstance(argv, str):
            argv = shlex.split(argv)
        flags = parse_flags(argv)
        draft = flags.get("speculative-draft-model-path") or flags.get("speculative-draft-model")
        target = flags.get("model-path") or flags.get("model")
        if draft or target:
            out.append(
                {
                    "pid": process.get("pid"),
                    "engine": process.get("engine"),
                    "draft": draft if isinstance(draft, str) else None,
                    "target": target if isinstance(target, str) else None,
                    "algorithm": flags.get("speculative-algorithm"),
                }
            )
    return out
