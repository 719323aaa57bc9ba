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


# Standard-library names added after 3.8: a module using one parses under feature_version=(3, 8)
# but fails on the remote's interpreter, so these are checked on every machine, not only on
# one that happens to have a Python 3.8 for the tests below.
NEWER_MODULES = {"zoneinfo", "graphlib", "tomllib"}
NEWER_ATTRIBUTES = {
    "removeprefix",  # str, 3.9
    "removesuffix",  # str, 3.9
    "bit_count",  # int, 3.10
    "pairwise",  # itertools, 3.10
    "randbytes",  # random, 3.9
    "lcm",  # math, 3.9
    "is_relative_to",  # pathlib, 3.9
    "with_stem",  # pathlib, 3.9
    "readlink",  # pathlib.Path, 3.9 (os.readlink is fine, see below)
    "cache",  # functools, 3.9
    "batched",  # itertools, 3.12
    "to_thread",  # asyncio, 3.9
    "waitstatus_to_exitcode",  # os, 3.9
    "pidfd_open",  # os, 3.9
}
BUILTIN_GENERICS = {"list", "dict", "tuple", "set", "frozenset", "type"}


def _runtime_annotations(tree: ast.Module) -> list[ast.expr]:
    """Annotations Python 3.8 evaluates when the def or class runs: those of functions and of
    module or class attributes. `from __future__ import annotations` makes them all strings."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]
            found += [a.annotation for a in every if a is not None and a.annotation is not None]
            found += [node.returns] if node.returns is not None else []
        elif isinstance(node, (ast.Module, ast.ClassDef)):
            found += [s.annotation for s in node.body if isinstance(s, ast.AnnAssign)]
    return found


def _newer_than_38(tree: ast.Module) -> list[str]:
    problems = []
    future = any(
        isinstance(n, ast.ImportFrom)
        and n.module == "__future__"
        and "annotations" in {a.name for a in n.names}
        for n in tree.body
    )
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in NEWER_ATTRIBUTES:
            if not (
                node.attr == "readlink"
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
            ):
                problems.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module.split(".")[0] in NEWER_MODULES:
                problems.append(f"line {node.lineno}: from {node.module}")
            problems += [
                f"line {node.lineno}: import {a.name}"
                for a in node.names
                if a.name in NEWER_ATTRIBUTES
            ]
        elif isinstance(node, ast.Import):
            problems += [
                f"line {node.lineno}: import {a.name}"
                for a in node.names
                if a.name.split(".")[0] in NEWER_MODULES
            ]
        elif isinstance(node, ast.keyword) and node.arg == "strict":
            problems.append(f"line {node.lineno}: strict= (zip, 3.10)")
    if not future:
        for annotation in _runtime_annotations(tree):
            for part in ast.walk(annotation):
                if isinstance(part, ast.BinOp) and isinstance(part.op, ast.BitOr):
                    problems.append(
                        f"line {part.lineno}: X | Y annotation without the __future__ import"
                    )
                elif (
                    isinstance(part, ast.Subscript)
                    and isinstance(part.value, ast.Name)
                    and part.value.id in BUILTIN_GENERICS
                ):
                    problems.append(
                        f"line {part.lineno}: {part.value.id}[...] annotation, no __future__ import"
                    )
    return problems


@pytest.mark.parametrize("path", sorted(AGENT.glob("*.py")), ids=lambda p: p.name)
def test_agent_module_uses_nothing_newer_than_python38(path: Path) -> None:
    assert _newer_than_38(ast.parse(path.read_text())) == []


@pytest.mark.parametrize(
    "source",
    [
        "def f(x: list[int]) -> None: pass",
        "def f(x: int | None): pass",
        "s = 'ab'.removeprefix('a')",
        "import functools\n@functools.cache\ndef f(): pass",
        "from zoneinfo import ZoneInfo",
        "pairs = list(zip([1], [2], strict=True))",
        "class A:\n    x: dict[str, int] = {}",
    ],
)
def test_the_python38_check_catches_newer_code(source: str) -> None:
    assert _newer_than_38(ast.parse(source)) != []


def test_the_python38_check_accepts_postponed_annotations_and_os_readlink() -> None:
    source = (
        "from __future__ import annotations\nimport os\n"
        "def f(x: list[int] | None) -> str:\n    return os.readlink('x')"
    )
    assert _newer_than_38(ast.parse(source)) == []


def _old_python() -> str | None:
    import glob
    import shutil

    candidates = sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.8*/bin/python3")))
    candidates += [p for p in [shutil.which("python3.8")] if p and "/shims/" not in p]
    return next(iter(candidates), None)


@pytest.mark.skipif(_old_python() is None, reason="no Python 3.8 on this machine")
def test_agent_entry_points_run_on_python_38(tmp_path: Path) -> None:
    from remotedbg.engines.knowledge import scan_args
    from remotedbg.remote import calls
    from remotedbg.remote.primitives import Remote
    from remotedbg.session import ConnectOptions, open_session
    from tests.checkpoints import write_eagle3_checkpoint
    from tests.engine_trees import write_sglang_checkout

    box = tmp_path / "box"
    draft = write_eagle3_checkpoint(box / "draft", defect="absolute")
    engine = write_sglang_checkout(box / "engine")
    with open_session(ConnectOptions(host="local", timeout=60)) as session:
        old = Remote(session, python=_old_python())
        assert old.call(calls.Describe())["version"][:2] == [3, 8]
        report = old.call(calls.VocabCheck(path=str(draft)))
        assert "d2t-absolute-ids" in {f["id"] for f in report["findings"]}
        scan = old.call(
            calls.ScanEngines(scan_args([str(engine)], search_home=False, search_system=False))
        )
        assert [i["engine"] for i in scan["installs"]] == ["sglang"]
        assert old.glob([str(box / "*")])[0]["count"] == 2
        assert "servers" in old.call(calls.ScanServers())


@pytest.mark.skipif(_old_python() is None, reason="no Python 3.8 on this machine")
def test_the_executor_runs_on_python_38(box, monkeypatch) -> None:
    from remotedbg.remote import calls, pyagent
    from remotedbg.session import agent_bundle

    monkeypatch.setattr(agent_bundle, "DEFAULT_PYTHON", _old_python())
    with box.session() as session:
        assert session.run("echo $((40+2))").stdout == "42\n"
        assert session.executor() is not None
        info = pyagent.call(session, calls.Describe())
        assert info["version"][:2] == [3, 8]


def test_grep_prune_paths_leaves_out_those_directories_and_nothing_else(tmp_path):
    """fsops.grep(prune_paths=...): the hits of `grep -r` on the same tree minus those under
    the pruned directories; a symlink below the top stays unfollowed, as grep -r leaves it."""
    from remotedbg.agent import fsops

    root = tmp_path / "pkg"
    for rel in ("a.py", "sub/b.py", "sub/models/m.py", "sub/models/deep/n.py", "models2/x.py",
                "other/__pycache__/c.py", "zz/y.py"):  # fmt: skip
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("needle = 1\n")
    (root / "sub" / "link").symlink_to(root / "zz")
    whole = {"pattern": "needle", "paths": [str(root)], "limit": 100}
    every = {r["path"] for r in fsops.grep(whole)["records"]}
    assert str(root / "zz" / "y.py") in every and not any("/link/" in p for p in every)
    pruned = [str(root / "sub" / "models"), str(root / "models2")]
    kept = {r["path"] for r in fsops.grep(dict(whole, prune_paths=pruned))["records"]}
    assert kept == {p for p in every if not any(p.startswith(d + "/") for d in pruned)}
    assert kept == {str(root / "a.py"), str(root / "sub" / "b.py"), str(root / "zz" / "y.py")}
