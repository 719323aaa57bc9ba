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


def _old_python() -> str | None:
    import glob
    import shutil

    candidates = sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.8*/bin/python3")))
    candidates += [p for p in [shutil.which("python3.8")] if p and "/shims/" not in p]
    return next(iter(candidates), None)


@pytest.mark.skipif(_old_python() is None, reason="no Python 3.8 on this machine")
def test_agent_entry_points_run_on_python_38(tmp_path: Path) -> None:
    from remotedbg.engines.knowledge import scan_args
    from remotedbg.remote.primitives import Remote
    from remotedbg.session import ConnectOptions, open_session
    from tests.checkpoints import write_eagle3_checkpoint
    from tests.engine_trees import write_sglang_checkout

    box = tmp_path / "box"
    draft = write_eagle3_checkpoint(box / "draft", defect="absolute")
    engine = write_sglang_checkout(box / "engine")
    with open_session(ConnectOptions(host="local", timeout=60)) as session:
        old = Remote(session, python=_old_python())
        assert old.call("remotedbg.agent.probe:describe", {})["version"][:2] == [3, 8]
        report = old.call("remotedbg.agent.vocabmap:vocab_check", {"path": str(draft)})
        assert "d2t-absolute-ids" in {f["id"] for f in report["findings"]}
        scan = old.call(
            "remotedbg.agent.engine_scan:scan",
            scan_args([str(engine)], search_home=False, search_system=False),
        )
        assert [i["engine"] for i in scan["installs"]] == ["sglang"]
        assert old.glob([str(box / "*")])[0]["count"] == 2
        assert "servers" in old.call("remotedbg.agent.server_scan:scan_servers", {})


@pytest.mark.skipif(_old_python() is None, reason="no Python 3.8 on this machine")
def test_the_executor_runs_on_python_38(box, monkeypatch) -> None:
    from remotedbg.remote import pyagent
    from remotedbg.session import agent_bundle

    monkeypatch.setattr(agent_bundle, "DEFAULT_PYTHON", _old_python())
    with box.session() as session:
        assert session.run("echo $((40+2))").stdout == "42\n"
        assert session.executor() is not None
        info = pyagent.call(session, "remotedbg.agent.probe:describe", {})
        assert info["version"][:2] == [3, 8]
