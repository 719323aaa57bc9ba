"""Cross-checks between a draft checkpoint and the engine code that loads it (pure)."""

from __future__ import annotations

import shlex
from typing import Any

from remotedbg.agent.findings import ERROR, finding


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
