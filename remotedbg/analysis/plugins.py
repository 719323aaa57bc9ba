"""What an engine plugin registers, read from its files (pure): the architectures and
speculative algorithms its registration calls add to the engine, and how the draft classes it
registers use d2t, judged like the engine's own draft files.

A plugin is what remotedbg.agent.engine_scan found beside an install: a distribution whose
entry points name one of the engine's plugin groups, with the files of its package that make a
registration call the engine's profile names (`plugin_calls`), or define a method that says an
algorithm's family (`plugin_algorithm_families`), and the modules those files name by string.
Nothing of the plugin is run: its calls are read from the AST, their arguments resolved where
they are literals or module constants (in the file, or imported from another file read).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from remotedbg.analysis.d2t_handling import NONE, UNKNOWN
from remotedbg.analysis.plugin_gate import guards
from remotedbg.analysis.pysource import import_bindings, parse, walk
from remotedbg.engines.profile import EngineProfile


def distribution_name(plugin: dict[str, Any]) -> str:
    """The plugin's distribution as pip spells it (vllm-ascend's METADATA says vllm_ascend)."""
    return re.sub(r"[-_.]+", "-", str(plugin.get("distribution"))).lower()


def plugin_label(plugin: dict[str, Any]) -> str:
    """'eagle-harness 0.1.3': how every output names the plugin."""
    name = distribution_name(plugin)
    version = plugin.get("version")
    return f"{name} {version}" if version else name


def module_of(path: str) -> str:
    """`eagle_harness/sglang/models/__init__.py` -> `eagle_harness.sglang.models`."""
    parts = path[:-3].split("/") if path.endswith(".py") else path.split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class _File:
    """One plugin file: its imports (anywhere in it, as plugins import inside functions),
    string constants, classes and calls."""

    def __init__(self, path: str, source: str) -> None:
        self.path = path
        self.module = module_of(path)
        self.tree = parse(source) or ast.Module(body=[], type_ignores=[])
        self.imports: dict[str, str] = {}
        self.constants: dict[str, str] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        package = self.module if path.endswith("__init__.py") else self.module.rpartition(".")[0]
        for node in walk(self.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports.update(import_bindings(node, package))
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
            elif (isinstance(node, ast.Assign) and len(node.targets) == 1
                  and isinstance(node.targets[0], ast.Name)
                  and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                self.constants[node.targets[0].id] = node.value.value  # fmt: skip

    def entry_classes(self) -> list[str]:
        """The names of `EntryClass = X` / `EntryClass = [X, Y]` (SGLang's registry reads)."""
        for node in self.tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id == "EntryClass"):  # fmt: skip
                items = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [
                    node.value]
                return [i.id for i in items if isinstance(i, ast.Name)]
        return []


class _Plugin:
    def __init__(self, plugin: dict[str, Any]) -> None:
        self.files = {
            f["path"]: _File(f["path"], f["source"])
            for f in plugin.get("files") or []
            if f.get("source") is not None and f["path"].endswith(".py")
        }
        self.by_module = {f.module: f for f in self.files.values()}

    def string(self, file: _File, node: ast.expr | None, depth: int = 0) -> str | None:
        """A literal, or a constant of the file or of a plugin module it imports it from."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if not isinstance(node, ast.Name) or depth > 3:
            return None
        if node.id in file.constants:
            return file.constants[node.id]
        module, _, attr = file.imports.get(node.id, "").partition(":")
        other = self.by_module.get(module)
        if other is None or not attr:
            return None
        return self.string(other, ast.Name(id=attr), depth + 1)

    def klass(self, file: _File, name: str, depth: int = 0) -> tuple[_File, ast.ClassDef] | None:
        if name in file.classes:
            return file, file.classes[name]
        module, _, attr = file.imports.get(name, "").partition(":")
        other = self.by_module.get(module)
        if other is None or not attr or depth > 3:
            return None
        return self.klass(other, attr, depth + 1)


def _engine_import(file: _File, name: str, package: str) -> bool:
    module = file.imports.get(name, "").partition(":")[0]
    return module == package or module.startswith(package + ".")


def _returns_true(func: ast.FunctionDef) -> bool:
    body = [s for s in func.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]  # fmt: skip
    last = body[0] if len(body) == 1 else None
    return (isinstance(last, ast.Return) and isinstance(last.value, ast.Constant)
            and last.value.value is True)  # fmt: skip


def _family(profile: EngineProfile, cls: ast.ClassDef) -> tuple[str, ast.FunctionDef] | None:
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    for method, family in profile.plugin_algorithm_families:
        if method in methods and _returns_true(methods[method]):
            return family, methods[method]
    return None


def registrations(plugin: dict[str, Any], profile: EngineProfile) -> dict[str, Any]:
    """{"models": {arch: {"module", "class", "path", "line", "call"}}, "algorithms": {NAME:
    {"family" (None: its class says none), "class", "path", "line", "family_line"}}} that the
    plugin's calls register with this engine (a call on a receiver not imported from the
    engine's package is another engine's and is left out)."""
    package = str(profile.scan.get("package") or profile.name)
    read = _Plugin(plugin)
    models: dict[str, dict[str, Any]] = {}
    algorithms: dict[str, dict[str, Any]] = {}
    for file in read.files.values():
        for node in walk(file.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)):  # fmt: skip
                continue
            receiver = node.func.value.id
            kind = profile.plugin_calls.get(f"{receiver}.{node.func.attr}")
            if kind is None or not _engine_import(file, receiver, package):
                continue
            where = {"path": file.path, "line": node.lineno,
                     "call": f"{receiver}.{node.func.attr}"}  # fmt: skip
            guarded = guards(file.tree, node)
            if guarded:  # `if not check(...): return` before it: registered only if it passes
                where["guard"] = f"{file.path}:{guarded[0].lineno} `{ast.unparse(guarded[0].test)}`"
            first = read.string(file, node.args[0]) if node.args else None
            if kind == "model" and first and len(node.args) > 1:
                target = read.string(file, node.args[1]) or ""
                module, _, cls = target.partition(":")
                if module and cls:
                    models[first] = {"module": module, "class": cls, **where}
            elif kind == "model_package" and first:
                # the package's own modules, not its __init__ or subpackages (SGLang 0.5.23
                # srt/models/registry.py:118-150 import_model_classes: iter_modules, not ispkg)
                for other in read.files.values():
                    if (other.module.rpartition(".")[0] == first
                            and not other.path.endswith("/__init__.py")):  # fmt: skip
                        for cls in other.entry_classes():
                            models.setdefault(cls, {"module": other.module, "class": cls,
                                                    **where})  # fmt: skip
            elif kind == "algorithm" and first:
                spec = next((k.value for k in node.keywords if k.arg == "spec_class"), None)
                found = read.klass(file, spec.id) if isinstance(spec, ast.Name) else None
                family = _family(profile, found[1]) if found else None
                algorithms[first.upper()] = {
                    "family": family[0] if family else None,
                    "class": found[1].name if found else None,
                    "class_path": found[0].path if found else None,
                    "family_line": family[1].lineno if family else None,
                    **where,
                }
    return {"models": models, "algorithms": algorithms}


def engine_base(plugin: dict[str, Any], path: str, cls: str, package: str
                ) -> tuple[str, str] | None:  # fmt: skip
    """(file relative to the engine package, class) of the engine class that `cls` of the
    plugin file `path` subclasses first, where it is imported from the engine."""
    source = next((f.get("source") for f in plugin.get("files") or [] if f["path"] == path), None)
    if source is None:
        return None
    file = _File(path, source)
    node = file.classes.get(cls)
    for base in node.bases if node is not None else []:
        if not isinstance(base, ast.Name) or not _engine_import(file, base.id, package):
            continue
        module, _, attr = file.imports[base.id].partition(":")
        rel = "/".join(module.split(".")[1:]) + ".py"
        return rel, attr
    return None


def plugin_draft_models(
    plugin: dict[str, Any],
    found: dict[str, Any],
    engine_models: list[dict[str, Any]],
    classify: Callable[[str, str], dict[str, Any]],
    package: str,
) -> list[dict[str, Any]]:
    """The files that define the classes the plugin registers, classified like the engine's
    own draft files (paths relative to the site-packages, with "plugin"); a registered class
    that only subclasses an engine draft class, without reading d2t itself, takes that class's
    handling (eagle-harness's Eagle3LlamaForCausalLM is SGLang's LlamaForCausalLMEagle3)."""
    wanted = {e["module"] for e in found["models"].values()}
    label = plugin_label(plugin)
    out = []
    for f in plugin.get("files") or []:
        if f.get("source") is None or module_of(f["path"]) not in wanted:
            continue
        result = classify(f["source"], f["path"])
        model = {**result, "classes": [dict(c) for c in result.get("classes", [])],
                 "plugin": label, "capped": bool(f.get("capped"))}  # fmt: skip
        registered = {e["class"] for e in found["models"].values()
                      if e["module"] == module_of(f["path"])}  # fmt: skip
        for row in model["classes"]:
            if row["name"] in registered and row["d2t_handling"] in (NONE, UNKNOWN):
                _inherit(model, row, engine_base(plugin, f["path"], row["name"], package),
                         engine_models, package)  # fmt: skip
        out.append(model)
    return out


def _inherit(model: dict, row: dict, base: tuple[str, str] | None, engine_models: list[dict],
             package: str) -> None:  # fmt: skip
    if base is None:
        return
    rel, name = base
    engine_file = next((m for m in engine_models if m.get("path") == rel), None)
    engine_row = next((c for c in (engine_file or {}).get("classes", []) if c["name"] == name),
                      None)  # fmt: skip
    if engine_row is None or engine_row["d2t_handling"] in (NONE, UNKNOWN):
        return
    row["d2t_handling"] = engine_row["d2t_handling"]
    row["inherited_from"] = name
    row["applied_in"] = {"path": f"{package}/{rel}", "class": name}
    others = {c["d2t_handling"] for c in model["classes"] if c is not row} - {NONE}
    if not others:
        model["d2t_handling"] = engine_row["d2t_handling"]
        model["reason"] = (f"{row['name']} subclasses {package}'s {name} ({package}/{rel}) "
                           f"and reads no d2t itself: {engine_file.get('reason', '')}")  # fmt: skip
        model["evidence"] = [dict(e, path=f"{package}/{rel}")
                             for e in engine_file.get("evidence") or []]  # fmt: skip


def install_plugins(
    install: dict[str, Any],
    engine_models: list[dict[str, Any]],
    profile: EngineProfile,
    classify: Callable[[str, str], dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the plugins of one engine_scan install, as outputs name them; their draft models,
    paths relative to the site-packages) for `profile`, the install's engine."""
    package = str(profile.scan.get("package") or profile.name)
    plugins, models = [], []
    for plugin in install.get("plugins") or []:
        found = registrations(plugin, profile)
        label = plugin_label(plugin)
        plugins.append({
            "distribution": plugin.get("distribution"), "version": plugin.get("version"),
            "label": label, "site": plugin.get("site"),
            "entry_points": plugin.get("entry_points") or [],
            "architectures": found["models"], "algorithms": found["algorithms"],
            "files": [f["path"] for f in plugin.get("files") or []],
        })  # fmt: skip
        for model in plugin_draft_models(plugin, found, engine_models, classify, package):
            models.append({**model, "site": plugin.get("site")})
    return plugins, models


def plugin_registry(plugins: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Architecture -> [module, class] the plugins register (an engine registry's form); a
    plugin whose gate stops its registrations adds none."""
    return {arch: [e["module"], e["class"]] for p in plugins if not disabled(p)
            for arch, e in p.get("architectures", {}).items()}  # fmt: skip


def disabled(plugin: dict[str, Any]) -> bool:
    """The plugin registers nothing on this install: the engine does not load its group, or
    its gate returns before any registration."""
    return (plugin.get("gate") or {}).get("status") in ("disabled", "not-loaded")


def loader_gate(plugin: dict[str, Any], loader_file: str, loader_text: str | None
                ) -> dict[str, Any] | None:  # fmt: skip
    """Where the engine's plugin loader (its `plugin_loader_file`, as read) loads none of the
    plugin's entry-point groups: a gate that stops it ("not-loaded"); None where it loads one."""
    groups = [e["group"] for e in plugin.get("entry_points") or []]
    if loader_text is not None and any(f'"{g}"' in loader_text or f"'{g}'" in loader_text
                                       for g in groups):  # fmt: skip
        return None
    why = "is not in this release" if loader_text is None else "names none of its groups"
    return {"status": "not-loaded", "missing": [f"{loader_file} {why}"], "undecided": [],
            "loader": loader_file, "groups": groups}  # fmt: skip


def unguarded_gate(plugin: dict[str, Any]) -> dict[str, Any] | None:
    """For a plugin whose registrations sit behind an early return no table says the outcome
    of: undecided, with that guard; None when every registration is unconditional."""
    entries = [*(plugin.get("architectures") or {}).values(),
               *(plugin.get("algorithms") or {}).values()]  # fmt: skip
    said = sorted({e["guard"] for e in entries if e.get("guard")})
    if not said:
        return None
    return {"status": "undecided", "guard": said[0], "missing": [],
            "undecided": [f"what {g} decides at start is not read" for g in said]}


def plugin_algorithm(plugins: list[dict[str, Any]] | None, algorithm: str | None
                     ) -> dict[str, Any] | None:  # fmt: skip
    """The plugin algorithm a launch names (its entry with "plugin"), else None."""
    name = str(algorithm or "").strip().upper().replace("-", "_")
    for plugin in plugins or []:
        entry = (plugin.get("algorithms") or {}).get(name)
        if entry is not None:
            return {**entry, "name": name, "plugin": plugin["label"], "gate": plugin.get("gate")}
    return None


FAMILY_NAMES = {"eagle3": "EAGLE-3", "eagle": "EAGLE-1/2", "mtp": "MTP"}


def algorithm_line(name: str, entry: dict[str, Any], label: str) -> str:
    """'EAGLE_HARNESS (EAGLE-3), from plugin eagle-harness 0.1.3: ...' with where it is
    registered and what says its family."""
    family = FAMILY_NAMES.get(entry.get("family") or "", "no draft family declared")
    said = (f", {entry['class']}.{_family_method(entry)} returns True "
            f"({entry['class_path']}:{entry['family_line']})" if entry.get("family_line") else "")
    return f"{name} ({family}), from plugin {label}: {entry['path']}:{entry['line']}{said}"


def _family_method(entry: dict[str, Any]) -> str:
    return {"eagle3": "is_eagle3", "eagle": "is_eagle"}.get(entry.get("family") or "", "?")


def plugin_lines(plugin: dict[str, Any]) -> list[str]:
    """What locate-eagle says of one plugin: how the engine finds it, the algorithms and
    architectures it registers, each with the line that registers it."""
    lines = [f"plugin {plugin['label']}, entry point "
             + "; ".join(f"{e['group']}: {e['name']} = {e['value']}"
                         for e in plugin.get("entry_points") or [])]  # fmt: skip
    for name, entry in sorted((plugin.get("algorithms") or {}).items()):
        lines.append("  algorithm " + algorithm_line(name, entry, plugin["label"]))
    if plugin.get("gate_line"):
        lines.append(f"  {plugin['gate_line']}")
    for arch, entry in sorted((plugin.get("architectures") or {}).items()):
        lines.append(f"  architecture {arch} -> {entry['module']}:{entry['class']} "
                     f"({entry['call']} at {entry['path']}:{entry['line']})")  # fmt: skip
    if not plugin.get("algorithms") and not plugin.get("architectures"):
        lines.append("  registers no draft architecture or speculative algorithm")
    return lines


def plugin_packages(plugin: dict[str, Any]) -> list[str]:
    """The top-level packages the plugin's entry points import."""
    return list(dict.fromkeys(e["value"].split(":")[0].split(".")[0]
                              for e in plugin.get("entry_points") or []))  # fmt: skip
