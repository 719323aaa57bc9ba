"""A plugin that registers only on an engine carrying the hooks it lists (pure): its hook table
read from its source, each hook looked up in the engine's code as read.

eagle-harness is one (remotedbg.engines.plugin_gates cites where): its register() returns
before any registration when a hook of its table is missing or has other parameters, so on
such an engine its algorithm and draft classes do not exist. A hook is "module:Class.attr"
(or "module:function") with the parameter names the plugin expects after self, and a kind:
'override' (the names must match exactly), 'call' (the names must be among the engine's),
'field' (a dataclass or class field); an optional hook missing is no problem.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from remotedbg.analysis.pysource import parse, walk

OVERRIDE, CALL, FIELD = "override", "call", "field"


def _constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level names bound to strings or tuples of strings (unpacked tuples too)."""
    out: dict[str, Any] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
            pairs = list(zip(target.elts, value.elts, strict=False))
        else:
            pairs = [(target, value)]
        for name, item in pairs:
            if isinstance(name, ast.Name):
                found = _value(item, out)
                if found is not None:
                    out[name.id] = found
    return out


def _value(node: ast.expr | None, names: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bool)):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = [_value(v.value if isinstance(v, ast.FormattedValue) else v, names)
                 for v in node.values]  # fmt: skip
        return "".join(parts) if all(isinstance(p, str) for p in parts) else None
    if isinstance(node, ast.Tuple):
        items = [_value(e, names) for e in node.elts]
        return tuple(items) if all(isinstance(i, str) for i in items) else None
    return None


def hook_table(source: str, table: str) -> list[dict[str, Any]] | None:
    """[{"path", "params", "kind", "optional", "line"}] of `table = (Hook(...), ...)` in the
    plugin's source; None when it is not there or a hook cannot be read."""
    tree = parse(source)
    if tree is None:
        return None
    names = _constants(tree)
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])  # fmt: skip
        if not any(isinstance(t, ast.Name) and t.id == table for t in targets):
            continue
        if not isinstance(node.value, (ast.Tuple, ast.List)):
            return None
        hooks = []
        for call in node.value.elts:
            if not isinstance(call, ast.Call):
                return None
            fields = dict(zip(("path", "params", "kind", "owner", "optional"),
                              call.args, strict=False))  # fmt: skip
            fields |= {k.arg: k.value for k in call.keywords if k.arg}
            path, params = _value(fields.get("path"), names), _value(fields.get("params"), names)
            kind = _value(fields.get("kind"), names)
            optional = _value(fields.get("optional"), names) if "optional" in fields else False
            if not isinstance(path, str) or params is None or kind not in (OVERRIDE, CALL, FIELD):
                return None
            hooks.append({"path": path, "params": list(params), "kind": kind,
                          "optional": optional is True, "line": call.lineno})  # fmt: skip
        return hooks
    return None


def engine_file(module: str, package: str) -> list[str]:
    """The files (relative to the engine package) a hook's module may be: a module file or a
    package's __init__."""
    parts = module.split(".")
    if parts[0] != package or len(parts) < 2:
        return []
    rel = "/".join(parts[1:])
    return [rel + ".py", rel + "/__init__.py"]


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
    names = [a.arg for a in args]
    return names[1:] if names and names[0] in ("self", "cls") else names


def _fields(cls: ast.ClassDef) -> list[str]:
    """Class-level names: annotated fields and assignments (a dataclass's or Struct's fields)."""
    out = []
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append(node.target.id)
        elif isinstance(node, ast.Assign):
            out += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return out


def check_hook(hook: dict[str, Any], package: str, read: Callable[[str], str | None]
               ) -> str | None:  # fmt: skip
    """What the engine's code lacks for one hook ('' reads as found): None when it matches,
    'undecided: ...' when what decides is not in the files read (an inherited method)."""
    module, _, attr_path = hook["path"].partition(":")
    tree = None
    for rel in engine_file(module, package):
        source = read(rel)
        tree = parse(source) if source is not None else None
        if tree is not None:
            break
    if tree is None:
        return None if hook["optional"] else f"{module} is missing"
    parts = attr_path.split(".")
    cls = _class(tree, parts[0])
    if len(parts) == 1:  # a module function, or a class called (its constructor)
        func = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.name == parts[0]), None)  # fmt: skip
        if func is None and cls is not None:
            init = next((n for n in cls.body if isinstance(n, ast.FunctionDef)
                         and n.name == "__init__"), None)  # fmt: skip
            return _compare(hook, cls.name, _params(init) if init else _fields(cls))
        return _compare(hook, func.name if func else None, _params(func) if func else None)
    if cls is None:
        return None if hook["optional"] else f"{module}:{parts[0]} is missing"
    for owner in _mro(tree, cls, package, read):
        if owner is None:
            return None if hook["optional"] else (
                f"undecided: {hook['path']} is not in its class, whose base was not read")
        if hook["kind"] == FIELD:
            if parts[1] in _fields(owner) or any(isinstance(n, ast.FunctionDef)
                                                 and n.name == parts[1] for n in owner.body):
                return None
            continue
        method = next((n for n in owner.body if isinstance(n, (ast.FunctionDef,
                       ast.AsyncFunctionDef)) and n.name == parts[1]), None)  # fmt: skip
        if method is not None:
            return _compare(hook, method.name, _params(method))
    return None if hook["optional"] else f"{hook['path']} is missing"


def _mro(tree: ast.Module, cls: ast.ClassDef, package: str, read: Callable[[str], str | None],
         depth: int = 0) -> list[ast.ClassDef | None]:  # fmt: skip
    """The class and its bases of the engine's package, depth first; None where a base's
    module was not read (bases from other packages, as msgspec.Struct, add no hook names)."""
    out: list[ast.ClassDef | None] = [cls]
    if depth > 4:
        return out + [None]
    imports = {a.asname or a.name: n.module or "" for n in tree.body
               if isinstance(n, ast.ImportFrom) for a in n.names}  # fmt: skip
    for base in cls.bases:
        if not isinstance(base, ast.Name):
            continue  # `msgspec.Struct`, `abc.ABC`: not the engine's
        local = _class(tree, base.id)
        if local is not None:
            out += _mro(tree, local, package, read, depth + 1)
            continue
        module = imports.get(base.id, "")
        files = engine_file(module, package)
        if not files:
            continue
        texts = [t for t in (read(f) for f in files) if t is not None]
        other = parse(texts[0]) if texts else None
        found = _class(other, base.id) if other is not None else None
        out += _mro(other, found, package, read, depth + 1) if found is not None else [None]
    return out


def base_modules(hooks: list[dict[str, Any]], package: str,
                 read: Callable[[str], str | None]) -> list[str]:  # fmt: skip
    """Engine files (relative to its package) that the hooks' classes' bases come from, not
    read yet: read them and evaluate again to decide inherited hooks."""
    wanted: list[str] = []
    for hook in hooks:
        module, _, attr_path = hook["path"].partition(":")
        texts = [t for t in (read(f) for f in engine_file(module, package)) if t is not None]
        tree = parse(texts[0]) if texts else None
        cls = _class(tree, attr_path.split(".")[0]) if tree is not None else None
        if cls is None:
            continue
        imports = {a.asname or a.name: n.module or "" for n in tree.body
                   if isinstance(n, ast.ImportFrom) for a in n.names}  # fmt: skip
        for base in cls.bases:
            files = engine_file(imports.get(getattr(base, "id", ""), ""), package)
            if files and all(read(f) is None for f in files):
                wanted += [f for f in files if f not in wanted]
    return wanted


def _compare(hook: dict[str, Any], name: str | None, found: list[str] | None) -> str | None:
    if name is None or found is None:
        return None if hook["optional"] else f"{hook['path']} is missing"
    expected = hook["params"]
    if hook["kind"] == OVERRIDE and found != expected:
        return f"{hook['path']}{tuple(found)} is not {tuple(expected)}"
    if hook["kind"] == CALL and not set(expected) <= set(found) and not hook["optional"]:
        return f"{hook['path']} lacks {tuple(p for p in expected if p not in found)}"
    return None


def hook_modules(hooks: list[dict[str, Any]], package: str) -> list[str]:
    """The engine files (relative to its package) the hooks name."""
    out: list[str] = []
    for hook in hooks:
        for rel in engine_file(hook["path"].partition(":")[0], package):
            if rel not in out:
                out.append(rel)
    return out


def guards(tree: ast.Module, call: ast.Call) -> list[ast.If]:
    """The `if ...: return` statements of the function holding `call` that come before the
    statement holding it (a registration they may skip)."""
    for func in walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for i, stmt in enumerate(func.body):
            if call in walk(stmt):
                return [s for s in func.body[:i] if isinstance(s, ast.If) and not s.orelse
                        and s.body and isinstance(s.body[-1], ast.Return)]  # fmt: skip
    return []


def evaluate(
    hooks: list[dict[str, Any]] | None,
    package: str,
    read: Callable[[str], str | None],
    where: dict[str, str],
) -> dict[str, Any]:
    """The gate of a plugin with a hook table against the engine's code as read: "disabled"
    (a hook is missing or differs: the plugin registers nothing), "undecided" (what decides is
    not in the files read), "enabled"; with the problems, and `where` (its table, its guard)."""
    if hooks is None:
        return {**where, "status": "undecided", "missing": [], "undecided": [
            f"the hook table {where.get('table')} was not read"]}  # fmt: skip
    problems = [p for p in (check_hook(h, package, read) for h in hooks) if p]
    missing = [p for p in problems if not p.startswith("undecided: ")]
    undecided = [p[len("undecided: "):] for p in problems if p.startswith("undecided: ")]
    status = "disabled" if missing else "undecided" if undecided else "enabled"
    return {**where, "status": status, "hooks": len(hooks), "missing": missing,
            "undecided": undecided}  # fmt: skip


def gate_line(label: str, engine: str, gate: dict[str, Any]) -> str:
    """How outputs say what the gate decides for the plugin on this install."""
    if gate["status"] == "not-loaded":
        return (f"{engine} does not load {label}: it loads no {', '.join(gate['groups'])} "
                f"plugin ({gate['missing'][0]})")
    if gate["status"] == "enabled":
        return (f"{label} registers on {engine}: every hook of its table "
                f"({gate.get('table')}) is there")  # fmt: skip
    if gate["status"] == "disabled":
        shown = "; ".join(gate["missing"][:4]) + ("; ..." if len(gate["missing"]) > 4 else "")
        return (f"{label} registers nothing on {engine}: {len(gate['missing'])} of the "
                f"{gate.get('hooks')} hooks its table {gate.get('table')} lists are missing or "
                f"differ ({shown}), so {gate.get('guard')} returns before any registration "
                f"(refused at {gate.get('refusal')})")  # fmt: skip
    said = "; ".join(gate.get("undecided") or [])
    return (f"{label} registers on {engine} only if {gate.get('guard')} passes at start, which "
            f"was not decided here ({said})")
