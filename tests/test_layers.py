"""Layers import downward only (README "Architecture"): a module may import from its own layer
or the ones below, never above. The agent modules (code that runs on the box) import nothing of
remotedbg but other agent modules."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "remotedbg"

# bottom up
LAYERS = {
    "remotedbg.errors": 0,
    "remotedbg.settings": 0,
    "remotedbg.connection_options": 0,
    "remotedbg.host_spec": 0,
    "remotedbg.local_stdin": 0,
    "remotedbg.local_files": 0,
    "remotedbg.local_signals": 0,
    "remotedbg.local_gc": 0,
    "remotedbg.local_fork": 0,
    "remotedbg.persist.protocol": 0,
    "remotedbg.persist.client": 1,
    "remotedbg.persist": 1,
    "remotedbg.contract": 0,
    "remotedbg.agent": 0,
    "remotedbg.session": 1,
    "remotedbg.remote": 2,
    "remotedbg.engines": 3,
    "remotedbg.checkpoints": 3,
    "remotedbg.analysis": 4,
    "remotedbg.actions": 5,
    "remotedbg.playbook": 6,
    "remotedbg.diagnose": 6,
    "remotedbg.fleet": 6,
    "remotedbg.inventory": 6,
    # the front ends (remotedbg/front/), each part on its own floor: the REPL runs the command
    # tree's commands and the tree's `repl` command starts the REPL, so a loop between them, or
    # any upward import, fails here
    "remotedbg.front.output": 7,
    "remotedbg.front.demo": 7,
    "remotedbg.front.ssh_habits": 7,
    "remotedbg.front.environment": 8,
    "remotedbg.front.report": 8,
    "remotedbg.front.writer": 8,
    "remotedbg.front.cli": 9,
    "remotedbg.front.repl_completion": 10,
    "remotedbg.front.repl": 11,
    "remotedbg.front.cli.repl": 12,
    # runs the command tree for its clients
    "remotedbg.persist.daemon": 13,
}


def layer_of(module: str) -> tuple[str, int] | None:
    found = [(k, v) for k, v in LAYERS.items() if module == k or module.startswith(k + ".")]
    return max(found, key=lambda kv: len(kv[0])) if found else None


def module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_of(path) for path in PACKAGE.rglob("*.py")}


def _resolve(name: str) -> str:
    """The module a dotted name is (or lives in): `remotedbg.session.Session` -> the package."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports(path: Path) -> list[tuple[int, str]]:
    """Every remotedbg module `path` imports, in every form: `import a.b`, `from a import b`
    (b a module or a name), relative imports, and imports inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            out += [(node.lineno, _resolve(f"{base}.{alias.name}")) for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, _resolve(alias.name)) for alias in node.names]
    return [(line, mod) for line, mod in out if mod.startswith("remotedbg")]


def test_every_module_has_a_layer():
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if module.endswith("__init__") or module in ("remotedbg.__main__",):
            continue
        assert layer_of(module), f"{module} belongs to no layer: add it to LAYERS and README"


def test_imports_go_downward_only():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        mine = layer_of(module)
        if mine is None:
            continue
        for line, imported in imports(path):
            other = layer_of(imported)
            if other is None:
                continue
            if mine[0] == "remotedbg.agent" and not imported.startswith("remotedbg.agent"):
                upward.append(f"{module}:{line} imports {imported} (agent code runs remotely)")
            elif other[1] > mine[1]:
                upward.append(f"{module}:{line} (layer {mine[1]}) imports {imported} ({other[1]})")
    assert not upward, "\n".join(upward)


def test_no_import_cycles():
    """No module reaches itself through its imports (lazy imports in functions count: a cycle
    hidden in a function is still two modules that cannot be understood apart)."""
    graph = {
        module_of(path): {m for _, m in imports(path)} - {module_of(path)}
        for path in PACKAGE.rglob("*.py")
    }
    # a package's __init__ re-exporting its modules is not a cycle with them
    for module, deps in graph.items():
        graph[module] = {d for d in deps if not module.startswith(d + ".")}
    cycles = []
    for start in graph:
        stack, seen = [(start, [start])], set()
        while stack:
            node, trail = stack.pop()
            for nxt in graph.get(node, ()):
                if nxt == start:
                    cycles.append(" -> ".join(trail + [start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, trail + [nxt]))
    assert not cycles, "\n".join(sorted(set(cycles))[:10])


def test_agent_entries_are_named_in_the_typed_calls_only():
    """Every agent entry is a class of remote/calls.py (its shape and dataclass with it): no
    `"remotedbg.agent.` string anywhere else in the package, so no call escapes its check."""
    named = [
        f"{path.relative_to(PACKAGE.parent)}:{number}"
        for path in PACKAGE.rglob("*.py")
        if path.parent.name != "agent" and path.name != "calls.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if '"remotedbg.agent.' in line or "'remotedbg.agent." in line
    ]
    assert not named, "\n".join(named)


def test_no_engine_is_named_outside_its_profile():
    """An engine's conventions live in its profile (engines/sglang.py, engines/vllm.py): no
    string that is an engine's name (`== "vllm"`, `{"sglang": ...}`, `engine or "sglang"`)
    elsewhere in the client, so a new engine or release convention is one module to change.
    The agent runs on the box without engines/ and is left out: what it knows comes as args."""
    from remotedbg.engines.profiles import PROFILES

    names = {name.lower() for name in PROFILES}
    named = []
    for path in PACKAGE.rglob("*.py"):
        top = path.relative_to(PACKAGE).parts[0]
        if top in ("engines", "agent"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.lower() in names
            ):
                named.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.value!r}")
    assert not named, "\n".join(named)


def test_commands_hand_their_results_to_the_one_writer():
    """No command of front/cli prints its own JSON document or branches on --json to choose
    its output: each hands its result to remotedbg.front.writer.write, which chooses terminal,
    JSON or Markdown (issue 49). `emit_json` is the writer's alone."""
    cli = PACKAGE / "front" / "cli"
    emitting, branching = [], []
    for path in cli.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, (ast.Name, ast.Attribute)) and "emit_json" in (
                getattr(node, "id", None),
                getattr(node, "attr", None),
            ):
                emitting.append(where)
            if isinstance(node, ast.alias) and node.name == "emit_json":
                emitting.append(where)
            if (
                isinstance(node, (ast.If, ast.IfExp))
                and isinstance(node.test, ast.Attribute)
                and node.test.attr == "json"
            ):
                branching.append(where)
    assert not emitting, "\n".join(emitting)
    # what streams opts out: `run` streams unless --json holds it all (and refuses --tty with
    # it), `logs` reads once for --json where the terminal follows
    assert len(branching) <= 3, "\n".join(branching)
