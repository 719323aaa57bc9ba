"""Plugins that register with an engine only where its code carries the hooks they list: which
distribution, for which engine, where its table is, and the line that skips every registration
when a hook is missing (remotedbg.analysis.plugin_gate evaluates the table against the install).

eagle-harness 0.1.3 (read from its wheel, eagle_harness-0.1.3-py3-none-manylinux_2_34_x86_64):
- sglang/plugin.py:33-34 `if not check_for_registration("sglang"): return False`, before the
  ModelRegistry.register (:48) and SpeculativeAlgorithm.register (:50) calls;
  compat.py:136-141 check_for_registration refuses when compat.check (:130-133) finds a
  problem, found by hooks.hook_problems (compat.py:45-50 names it for sglang): hooks.py:214-236
  _problem over hooks.py:98-174 HOOKS (Hook(path, params, kind, owner, optional), :90-95);
- vllm/plugin.py:36-37, the same for vLLM, its table vllm/adapter.py missing_hooks
  (compat.py:51-56), not a Hook table: not evaluated here (said so).
"""

from __future__ import annotations

from typing import Any

#: (distribution, engine) -> the hook table its registrations depend on
HOOK_TABLES: dict[tuple[str, str], dict[str, Any]] = {
    ("eagle-harness", "sglang"): {
        "file": "eagle_harness/sglang/hooks.py",
        "table": "HOOKS",
        "guard": "eagle_harness/sglang/plugin.py:33-34",
        "refusal": "eagle_harness/compat.py:136-141",
    },
}


def hook_table(distribution: str, engine: str) -> dict[str, Any] | None:
    """Where the plugin's hook table for this engine is, or None (no table known)."""
    return HOOK_TABLES.get((distribution, engine))
