"""The architecture an engine gives a draft's config, run from the install's own code (pure).

An engine serves a target's own MTP layer (a launch that names no draft) or an MTP-format draft by
renaming the config's architecture before it looks the draft class up: vLLM's
`SpeculativeConfig.hf_config_override` (a deepseek_v3 config becomes DeepSeekMTPModel, MiMo
MiMoMTPModel, Qwen3-Next Qwen3NextMTP, ...: 0.8.5 config.py:2271-2279; 0.33.0
config/speculative.py:710-1000), SGLang's draft branches of `ModelConfig`
(`if is_draft_model and self.hf_config.architectures[0] == ...`: 0.4.6.post5
srt/configs/model_config.py:95-99 in `__init__`; 0.5.6 :250-283 and 0.5.23 :1010-1140 in
`_config_draft_model`). The list grows with every release and a box's copy may be patched, so
it is never tabled here: the box's code is run by the loader model's interpreter over the
config, and a condition it cannot decide is tried both ways (the answer stands only where
every way agrees).
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Any

from remotedbg.analysis.interp import Decisions, TooManyPaths, explore
from remotedbg.analysis.loader_model import Interpreter
from remotedbg.analysis.loader_values import (
    Config,
    EngineRaises,
    ReturnSignal,
    Undecidable,
)
from remotedbg.analysis.pysource import Module, SourceIndex, walk
from remotedbg.engines.profile import RenameCode

RAISES = "raises: "


@dataclass
class Renamed:
    architecture: str | None = None  # None: the code leaves the config's architecture as is
    where: str = ""
    unknown: str = ""
    model_type: str | None = None  # the config's model_type after the code ran


class _RenameInterpreter(Interpreter):
    """The loader model's interpreter where a config is a value the code changes: attributes
    and list items assigned, `update()`, walrus names."""

    def assign(self, target: ast.expr, value: Any, env: dict, mod: Module, frame: dict) -> None:
        if isinstance(target, ast.Attribute):
            base = self.eval(target.value, env, mod, frame)
            if isinstance(base, Config):
                base.data[target.attr] = value.data if isinstance(value, Config) else value
                return
        if isinstance(target, ast.Subscript):
            base = self.eval(target.value, env, mod, frame)
            key = self.eval(target.slice, env, mod, frame)
            if isinstance(base, list) and isinstance(key, int) and -len(base) <= key < len(base):
                base[key] = value
                return
        super().assign(target, value, env, mod, frame)

    def attribute(self, base: Any, attr: str) -> Any:
        if isinstance(base, Config) and attr == "update" and "update" not in base.data:
            return ("method", base, "update")
        return super().attribute(base, attr)

    def method(self, base: Any, name: str, args: list, kwargs: dict, node, mod: Module) -> Any:
        if isinstance(base, Config) and name == "update" and args:
            update = args[0].data if isinstance(args[0], Config) else args[0]
            if not isinstance(update, dict):
                raise Undecidable(f"line {node.lineno}: a config updated with a value not known")
            base.data.update(update)
            return None
        if isinstance(base, set) and name == "intersection" and args:
            if not isinstance(args[0], (list, tuple, set)):
                raise Undecidable(f"line {node.lineno}: a set met with a value not known")
            return base.intersection(args[0])
        return super().method(base, name, args, kwargs, node, mod)

    def visit_Name(self, node: ast.Name, env: dict, mod: Module, frame) -> Any:
        if node.id not in env:
            found = _module_constant(mod, node.id)
            if found is not _NONE:
                return found
        return super().visit_Name(node, env, mod, frame)

    def named_call(self, name: str, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        if name == "isinstance" and len(args) == 2 and isinstance(args[0], Config):
            return _is_config_class(args[0], args[1], node)
        return super().named_call(name, args, kwargs, node, mod)

    def visit_NamedExpr(self, node: ast.NamedExpr, env: dict, mod: Module, frame) -> Any:
        value = self.eval(node.value, env, mod, frame)
        env[node.target.id] = value
        return value


_NONE = object()


def _module_assignment(mod: Module, name: str) -> ast.expr | None:
    """The value of `NAME = ...` at the module's top level."""
    for stmt in mod.tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name
        ):
            return stmt.value
    return None


def _module_constant(mod: Module, name: str) -> Any:
    """`NAME = <literal>` at the module's top level (a tuple of architecture names)."""
    value = _module_assignment(mod, name)
    try:
        return _NONE if value is None else ast.literal_eval(value)
    except ValueError:
        return _NONE


def _is_config_class(config: Config, cls: Any, node: ast.Call) -> bool:
    """`isinstance(hf_config, Dots3Config)`: a config is read as the class its model_type is
    registered with, named after it by the transformers convention (`dots3` -> Dots3Config,
    `qwen3_next` -> Qwen3NextConfig)."""
    name = getattr(cls, "name", None)
    model_type = config.data.get("model_type")
    if not isinstance(name, str) or not name.endswith("Config") or not isinstance(model_type, str):
        raise Undecidable(f"line {node.lineno}: `{ast.unparse(node)[:80]}`")

    def squash(text: str) -> str:
        return text.replace("_", "").replace("-", "").lower()

    return squash(name.rsplit(".", 1)[-1][: -len("Config")]) == squash(model_type)


def _first_architecture(config: Any) -> str | None:
    data = config.data if isinstance(config, Config) else config
    archs = data.get("architectures") if isinstance(data, dict) else None
    return archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None


def _function(mod: Module, name: str) -> ast.FunctionDef | None:
    for node in walk(mod.tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def _assigns_architecture(stmt: ast.If) -> bool:
    for node in walk(stmt):
        if isinstance(node, ast.Assign) and any("architectures" in ast.unparse(t)
                                                for t in node.targets):  # fmt: skip
            return True
    return False


def _draft_branches(mod: Module, class_name: str, flag: str) -> list[ast.If]:
    """The class's `if` statements that test the draft flag and set the architecture, in the
    order of the source (nested ones included: a branch inside a method's other code)."""
    cls = next((n for n in walk(mod.tree) if isinstance(n, ast.ClassDef)
                and n.name == class_name), None)  # fmt: skip
    if cls is None:
        return []
    found = [n for n in walk(cls) if isinstance(n, ast.If) and flag in ast.unparse(n.test)
             and _assigns_architecture(n)]  # fmt: skip
    outer = [n for n in found if not any(n is not o and n in walk(o) for o in found)]
    return sorted(outer, key=lambda n: n.lineno)


def rename(
    index: SourceIndex,
    path: str,
    code: RenameCode,
    config: dict,
    settings: dict | None = None,
    rel: str = "",
) -> Renamed:
    """The architecture the code at `path` gives `config` (a deep copy is changed, never the
    caller's); `settings`: the launch's values the branches read from `self` (SGLang's
    `speculative_algorithm`)."""
    mod = index.module_at(path)
    if mod is None:
        return Renamed(unknown=f"{rel or path} was not read or does not parse")
    if code.function:
        func = _function(mod, code.function)
        if func is None:
            return Renamed(unknown=f"no {code.function} in {rel or path}")
        body, where = func.body, f"{rel or path}:{func.lineno} {code.function}"
    else:
        body = _draft_branches(mod, code.branches_of, code.flag)
        if not body:
            return Renamed(where=f"{rel or path} (no draft branch in {code.branches_of})")
        where = f"{rel or path}:{body[0].lineno}-{body[-1].end_lineno} ({code.branches_of})"
    before = _first_architecture(config)

    def run(decisions: Decisions) -> tuple[str | None, str | None]:
        data = copy.deepcopy(config)
        interp = _RenameInterpreter(index, data, decisions.forced)
        hf_config = Config(data)
        if code.function:
            args = [a.arg for a in func.args.args]
            env = {name: None for name in args}
            if args:
                env[args[0]] = hf_config
        else:
            own = {"hf_config": data, "hf_text_config": data, code.flag: True,
                   **(settings or {})}  # fmt: skip
            env = {"self": Config(own), code.flag: True}
        frame = {"cls": None, "self": None, "path": mod.path}
        try:
            interp.block(body, env, mod, frame)
        except ReturnSignal as ret:
            if isinstance(ret.value, Config):
                hf_config = ret.value
        except EngineRaises as exc:
            return f"{RAISES}{exc.message} ({rel or path}:{exc.line})", None
        model_type = hf_config.data.get("model_type")
        return _first_architecture(hf_config), model_type if isinstance(model_type, str) else None

    try:
        paths = explore(run, max_runs=32)
    except TooManyPaths:
        return Renamed(where=where, unknown=f"too many undecided conditions in {where}")
    except (Undecidable, RecursionError, TypeError, ValueError, AttributeError, KeyError,
            IndexError) as exc:  # fmt: skip
        return Renamed(where=where, unknown=f"{where} does something not modelled ({exc})")
    answers = {p.result for p in paths}
    if len(answers) > 1:
        keys = sorted({k for p in paths for k in p.forced})
        conditions = "; ".join(f"line {k[0]}: `{k[2][:80]}`" for k in keys)
        return Renamed(where=where, unknown=f"the draft's architecture in {where} depends on "
                                            f"settings not known here ({conditions})")  # fmt: skip
    ((answer, model_type),) = answers
    if answer and answer.startswith(RAISES):
        return Renamed(where=where, unknown=f"{where} raises for this config: "
                                            f"{answer[len(RAISES):]}")  # fmt: skip
    return Renamed(architecture=answer if answer != before else None, where=where,
                   model_type=model_type)


@dataclass
class MethodByType:
    """The method the engine gives a draft whose launch names none, from its config's
    model_type (after the rename): vLLM's SpeculativeConfig `elif
    self.draft_model_config.hf_config.model_type in (...): self.method = "..."`."""

    method: str
    model_types: tuple[str, ...]
    where: str


_DRAFT_TYPE = "draft_model_config.hf_config.model_type"


def method_by_model_type(index: SourceIndex, path: str, rel: str = "") -> list[MethodByType]:
    """Every `if` of the file that compares the draft config's model_type with constants (a
    string, a tuple, or `get_args(NAME)` of a module-level `Literal[...]`) and sets
    `self.method` to a constant (0.9.0 config.py:2528-2530; 0.10.1.1 config/__init__.py:
    2145-2147; 0.11.0 config/speculative.py:329-331 with MTP_MODEL_TYPES at :36; 0.33.0
    :1466-1470 with MTPModelTypes at :38)."""
    mod = index.module_at(path)
    if mod is None:
        return []
    found = []
    for node in walk(mod.tree):
        if not isinstance(node, ast.If):
            continue
        # the test alone, or one side of an `or` (a side of an `and` decides nothing alone)
        either = isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.Or)
        sides = node.test.values if either else [node.test]
        compares = [c for c in sides if isinstance(c, ast.Compare)
                    and ast.unparse(c.left).endswith(_DRAFT_TYPE)]  # fmt: skip
        method = _method_set(node.body)
        if not compares or method is None:
            continue
        types: list[str] = []
        for compare in compares:
            for right in compare.comparators:
                types += _constant_strings(mod, right)
        if types:
            found.append(MethodByType(method, tuple(types), f"{rel or path}:{node.lineno}"))
    return found


def _method_set(body: list[ast.stmt]) -> str | None:
    for stmt in body:
        if (isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) == "self.method"
                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)):
            return stmt.value.value
    return None


def _constant_strings(mod: Module, node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)
                and isinstance(e.value, str)]  # fmt: skip
    if isinstance(node, ast.Name):  # a module-level tuple (0.11.0 MTP_MODEL_TYPES, :36)
        value = _module_constant(mod, node.id)
        values = value if isinstance(value, (tuple, list, set)) else [value]
        return [v for v in values if isinstance(v, str)]
    if (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("get_args")
            and node.args and isinstance(node.args[0], ast.Name)):
        return _literal_strings(mod, node.args[0].id)
    return []


def _literal_strings(mod: Module, name: str) -> list[str]:
    """`NAME = Literal["a", "b", ...]` at the module's top level."""
    value = _module_assignment(mod, name)
    return _constant_strings(mod, value.slice) if isinstance(value, ast.Subscript) else []
