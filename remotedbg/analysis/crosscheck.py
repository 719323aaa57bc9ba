"""Cross-checks between a draft checkpoint and the engine code that loads it (pure)."""

from __future__ import annotations

from typing import Any

from remotedbg.agent.containers import host_path
from remotedbg.agent.findings import ERROR, finding
from remotedbg.agent.server_scan import parse_args, spec_summary, split_args
from remotedbg.engines.profiles import launch_profile


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


def launch_spec(process: dict) -> dict[str, Any]:
    """The speculative settings of a scanned server process, parsed by the same rules the
    server scan uses (SGLang flags, vLLM's --speculative-config JSON); a containerised
    server's paths are where the host sees them, its own kept in `paths_in_container`."""
    if process.get("spec"):
        return dict(process["spec"], paths_in_container=process.get("paths_in_container") or {})
    argv = process.get("argv")
    if not isinstance(argv, list):
        # one string (a playbook's own processes): split as typed, a JSON word kept whole
        line = process.get("cmdline_in_container") or process.get("cmdline") or ""
        argv = split_args(line) if isinstance(line, str) else list(line)
    engine = launch_profile(process.get("engine")).name
    spec = spec_summary(engine, parse_args([str(a) for a in argv]))
    spec["paths_in_container"] = {}
    container = process.get("container")
    if container:
        for key in ("draft_model", "target_model"):
            path = spec.get(key)
            on_host = host_path(container, path) if path else None
            if path and on_host:
                spec["paths_in_container"][key] = path
                spec[key] = on_host
    return spec


def server_paths(processes: list[dict]) -> list[dict[str, Any]]:
    """Draft and target paths from running servers' launch arguments (SGLang and vLLM)."""
    out = []
    for process in processes:
        spec = launch_spec(process)
        if spec.get("draft_model") or spec.get("target_model"):
            out.append(
                {
                    "pid": process.get("pid"),
                    "engine": process.get("engine"),
                    "draft": spec.get("draft_model"),
                    "target": spec.get("target_model"),
                    "algorithm": spec.get("algorithm"),
                    "heterogeneous_vocab": bool(spec.get("heterogeneous_vocab")),
                    "paths_in_container": spec["paths_in_container"],
                }
            )
    return out
