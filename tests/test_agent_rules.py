"""Everything under remotedbg/agent runs on the remote's stock Python 3.8: standard library only
(numpy and torch imported lazily), no imports from outside the agent package."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

AGENT = Path(__file__).resolve().parent.parent / "remotedbg" / "agent"
OPTIONAL = {"numpy", "torch"}  # used when the remote has them, imported inside functions


@pytest.mark.parametrize("path", sorted(AGENT.glob("*.py")), ids=lambda p: p.name)
def test_agent_module_is_stdlib_python38(path: Path) -> None:
    tree = ast.parse(path.read_text(), feature_version=(3, 8))
    top_level = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            root = name.split(".")[0]
            if name.startswith("remotedbg"):
                assert name.startswith("remotedbg.agent"), (path.name, name)
            elif root in OPTIONAL:
                assert id(node) not in top_level, f"{path.name}: import {name} lazily"
            else:
                assert root in sys.stdlib_module_names or root == "__future__", (path.name, name)
