"""Which checkpoint tensors an engine's draft-model loader keeps, drops or chokes on.

The engine's own code decides, read from the box: the draft class's `__init__` (through its
bases, across files) gives the module tree and so the parameter names; its `load_weights` (and
the base-class or child-module `load_weights` it calls) is then executed abstractly over the
checkpoint's tensor names. Names are concrete strings, so every `"d2t" in name`, `name.replace`,
`params_dict[name]` is decided exactly; tensors are opaque. Whatever the interpreter cannot decide
(a condition on an unknown value, an unsupported statement, a budget exceeded) makes the whole
model `unknown` with the reason and the line: the checks built on it then say inconclusive.

Engine helpers that are not worth interpreting (vLLM's AutoWeightsLoader, leaf layer classes)
are modelled in remotedbg.engines.loader_rules, once, with the releases they were read in.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from remotedbg.analysis.interp import (
    Budget,
    Decisions,
    NotInterpreted,
    TooManyPaths,
    Visitor,
    builtins,
    explore,
    is_unknown,
    ops,
)
from remotedbg.analysis.interp.names import qualified_name
from remotedbg.analysis.loader_tree import TreeBuilder
from remotedbg.analysis.loader_values import (
    UNKNOWN,
    AutoLoader,
    Bound,
    BreakSignal,
    Closure,
    Config,
    Const,
    ContinueSignal,
    EngineRaises,
    Loader,
    LoadModel,
    Mapper,
    Named,
    NeedsFork,
    Node,
    Obj,
    Param,
    ParamDict,
    ReturnSignal,
    Super,
    Tensor,
    Undecidable,
    opaque,
)
from remotedbg.analysis.pysource import ClassRef, Module, SourceIndex
from remotedbg.engines import code_markers, loader_rules

STEP_LIMIT = 400_000
DEPTH_LIMIT = 16


def _decided(combine: Callable[[list], bool]) -> Callable[[list], Any]:
    def reduce(args: list) -> Any:
        if args and isinstance(args[0], list) and not any(opaque(v) for v in args[0]):
            return combine(args[0])
        return UNKNOWN

    return reduce


_BUILTINS = {
    **{n: builtins.BUILTINS[n] for n in ("enumerate", "zip", "range", "str", "int")},
    "any": _decided(any),
    "all": _decided(all),
}
_NOT_HANDLED = object()  # a helper's rule does not apply to these arguments
_CONCAT_FUNCTIONS = {"torch.cat", "torch.concat", "torch.concatenate"}
_SETTING_GET = re.compile(r"^\w+\.([A-Z][A-Z0-9_]*)\.get$")
_LOG_NAMES = {"warning", "warn", "info", "debug", "error", "warning_once", "info_once"}


class Interpreter(Visitor):
    def __init__(
        self,
        index: SourceIndex,
        config: dict,
        forced: dict | None = None,
        engine_params: dict | None = None,
    ) -> None:
        self.index = index
        self.config = Config(config)
        self.decisions = Decisions(forced or {})
        self.engine_params = engine_params or {}
        self.budget = Budget(STEP_LIMIT, DEPTH_LIMIT, Undecidable)
        self.loads: list[tuple[str, str, str]] = []  # (tensor, param, where)
        self.special: dict[str, str] = {}
        self.dropped_by_rule: dict[str, str] = {}
        self.logged: set[str] = set()
        self.current: str | None = None
        self.root: Obj | None = None
        self.tree = TreeBuilder(self)

    # ------------------------------------------------------------------ the module tree
    def next_in_mro(self, obj: Obj, cls: ClassRef) -> ClassRef | None:
        if obj.ref is None:
            return None
        chain = self.index.mro(obj.ref)
        for i, item in enumerate(chain):
            if item.node is cls.node and i + 1 < len(chain):
                return chain[i + 1]
        return None

    def path_of(self, node: Node) -> str:
        """`model.layers.0.` for a node below the root module ('' for the root)."""
        todo: list[tuple[Node, str]] = [(self.root.node, "")] if self.root else []
        seen: set[int] = set()
        while todo:
            current, prefix = todo.pop()
            if current is node:
                return prefix
            if id(current) in seen:
                continue
            seen.add(id(current))
            todo += [(child, f"{prefix}{key}.") for key, child in current.children.items()]
        return ""

    # ------------------------------------------------------------------ execution
    def tick(self) -> None:
        self.budget.tick()

    def safe_eval(self, node: ast.expr, env: dict, mod: Module) -> Any:
        try:
            return self.eval(node, env, mod, None)
        except (Undecidable, EngineRaises, ReturnSignal, BreakSignal, ContinueSignal):
            return UNKNOWN

    def call_method(self, obj: Obj, start: ClassRef, name: str, args: list[Any]) -> Any:
        found = self.index.find_method(start, name)
        if found is None:
            raise Undecidable(f"{start.node.name}.{name} not found in the code read")
        cls, func = found
        return self.run_function(Bound(obj, cls, func), args, {})

    def run_function(self, bound: Bound, args: list[Any], kwargs: dict) -> Any:
        self.budget.enter()
        try:
            func = bound.func
            names = [a.arg for a in func.args.args]
            env: dict[str, Any] = {}
            values = [bound.obj, *args]
            for i, name in enumerate(names):
                env[name] = values[i] if i < len(values) else UNKNOWN
            for a in func.args.kwonlyargs:
                env[a.arg] = UNKNOWN
            for key, value in kwargs.items():
                env[key] = value
            frame = {"cls": bound.cls, "self": bound.obj, "path": bound.cls.module.path}
            try:
                self.block(func.body, env, bound.cls.module, frame)
            except ReturnSignal as ret:
                return ret.value
            return None
        finally:
            self.budget.leave()

    def run_closure(self, closure: Closure, args: list[Any], kwargs: dict) -> Any:
        """A nested function or lambda: its parameters over a copy of the scope it was defined
        in (it reads the enclosing names; what it assigns stays its own)."""
        self.budget.enter()
        try:
            func = closure.func
            env = dict(closure.scope)
            positional = [*func.args.posonlyargs, *func.args.args]
            defaults = func.args.defaults
            first_default = len(positional) - len(defaults)
            for i, a in enumerate(positional):
                if i < len(args):
                    env[a.arg] = args[i]
                elif i >= first_default:
                    env[a.arg] = self.eval(defaults[i - first_default], closure.scope,
                                           closure.module, closure.frame)  # fmt: skip
                else:
                    env[a.arg] = UNKNOWN
            for a in func.args.kwonlyargs:
                env[a.arg] = UNKNOWN
            env.update(kwargs)
            if isinstance(func, ast.Lambda):
                return self.eval(func.body, env, closure.module, closure.frame)
            try:
                self.block(func.body, env, closure.module, closure.frame)
            except ReturnSignal as ret:
                return ret.value
            return None
        finally:
            self.budget.leave()

    def block(self, body: list[ast.stmt], env: dict, mod: Module, frame: dict) -> None:
        for stmt in body:
            self.stmt(stmt, env, mod, frame)

    def stmt(self, node: ast.stmt, env: dict, mod: Module, frame: dict) -> None:
        self.tick()
        self.visit(node, env, mod, frame)

    def generic_stmt(self, node: ast.stmt, *context: Any) -> None:
        raise Undecidable(str(NotInterpreted(node)))

    def visit_Expr(self, node: ast.Expr, env: dict, mod: Module, frame: dict) -> None:
        self.eval(node.value, env, mod, frame)

    def visit_Assign(self, node: ast.Assign | ast.AnnAssign, env: dict, mod: Module,
                     frame: dict) -> None:  # fmt: skip
        if node.value is None:
            return
        value = self.eval(node.value, env, mod, frame)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            self.assign(target, value, env, mod, frame)

    visit_AnnAssign = visit_Assign

    def visit_AugAssign(self, node: ast.AugAssign, env: dict, mod: Module, frame: dict) -> None:
        current = (
            self.eval(node.target, env, mod, frame)
            if not isinstance(node.target, ast.Attribute)
            else UNKNOWN
        )
        value = self.binop(node.op, current, self.eval(node.value, env, mod, frame))
        self.assign(node.target, value, env, mod, frame)

    def visit_If(self, node: ast.If, env: dict, mod: Module, frame: dict) -> None:
        test = self.truth(self.eval(node.test, env, mod, frame), node.test)
        self.block(node.body if test else node.orelse, env, mod, frame)

    def visit_Continue(self, node: ast.Continue, env: dict, mod: Module, frame: dict) -> None:
        raise ContinueSignal()

    def visit_Break(self, node: ast.Break, env: dict, mod: Module, frame: dict) -> None:
        raise BreakSignal()

    def visit_Return(self, node: ast.Return, env: dict, mod: Module, frame: dict) -> None:
        raise ReturnSignal(self.eval(node.value, env, mod, frame) if node.value else None)

    def visit_Raise(self, node: ast.Raise, env: dict, mod: Module, frame: dict) -> None:
        raise EngineRaises("raise", ast.unparse(node)[:200], node.lineno, mod.path)

    def visit_Assert(self, node: ast.Assert, env: dict, mod: Module, frame: dict) -> None:
        if not self.truth(self.eval(node.test, env, mod, frame), node.test):
            raise EngineRaises("assert", ast.unparse(node)[:200], node.lineno, mod.path)

    def visit_With(self, node: ast.With, env: dict, mod: Module, frame: dict) -> None:
        self.block(node.body, env, mod, frame)

    def visit_Pass(self, node: ast.stmt, env: dict, mod: Module, frame: dict) -> None:
        return None

    visit_Import = visit_ImportFrom = visit_Global = visit_Nonlocal = visit_Pass

    def visit_FunctionDef(self, node: ast.FunctionDef, env: dict, mod: Module,
                          frame: dict) -> None:  # fmt: skip
        env[node.name] = Closure(node, env, mod, frame)

    def visit_Try(self, node: ast.Try, env: dict, mod: Module, frame: dict) -> None:
        try:
            self.block(node.body, env, mod, frame)
        except EngineRaises as exc:
            for handler in node.handlers:
                caught = handler.type is None or any(
                    n in ("Exception", "KeyError", "ValueError", "AttributeError")
                    for n in re.findall(r"\w+", ast.unparse(handler.type))
                )
                if caught:
                    if handler.name:
                        env[handler.name] = UNKNOWN
                    self.block(handler.body, env, mod, frame)
                    break
            else:
                raise exc
        else:
            self.block(node.orelse, env, mod, frame)
        self.block(node.finalbody, env, mod, frame)

    def visit_For(self, node: ast.For, env: dict, mod: Module, frame: dict) -> None:
        items = self.iterate(self.eval(node.iter, env, mod, frame), node)
        broke = False
        for item in items:
            self.tick()
            if isinstance(item, tuple) and any(isinstance(v, Tensor) for v in item):
                self.current = next(v.name for v in item if isinstance(v, Tensor))
            self.assign(node.target, item, env, mod, frame)
            try:
                self.block(node.body, env, mod, frame)
            except ContinueSignal:
                continue
            except BreakSignal:
                broke = True
                break
        if not broke:
            self.block(node.orelse, env, mod, frame)

    def iterate(self, value: Any, node: ast.AST) -> list:
        if isinstance(value, (list, tuple, set)):
            return list(value)
        if isinstance(value, dict):
            return list(value)
        if isinstance(value, str):
            return list(value)
        raise Undecidable(f"line {getattr(node, 'lineno', '?')}: iterating over {value!r}")

    def truth(self, value: Any, node: ast.AST) -> bool:
        if is_unknown(value) or isinstance(value, (Tensor, Named, Obj, Config)):
            if isinstance(value, (Obj, Config)):
                return True
            key = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0), ast.unparse(node))
            if not isinstance(value, Tensor) or key in self.decisions.forced:
                # a setting not known here: simulate_load runs again with each answer
                return self.decisions.decide(key, f"line {key[0]}: `{key[2][:80]}`")
            raise Undecidable(
                f"line {getattr(node, 'lineno', '?')}: condition `{ast.unparse(node)[:80]}` "
                "depends on something not known statically"
                if isinstance(node, ast.expr)
                else f"line {getattr(node, 'lineno', '?')}: undecidable condition"
            )
        return bool(value)

    def assign(self, target: ast.expr, value: Any, env: dict, mod: Module, frame: dict) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (tuple, list)) and len(value) == len(target.elts):
                for t, v in zip(target.elts, value, strict=True):
                    self.assign(t, v, env, mod, frame)
            else:
                for t in target.elts:
                    self.assign(t, UNKNOWN, env, mod, frame)
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value, env, mod, frame)
            key = self.eval(target.slice, env, mod, frame)
            if isinstance(base, dict) and not is_unknown(key):
                base[key] = value
        elif isinstance(target, ast.Attribute):
            base = self.eval(target.value, env, mod, frame)
            if isinstance(base, Obj):
                base.attrs[target.attr] = value
                if isinstance(value, Tensor):
                    self.special[value.name] = f"self.{target.attr}"

    # ------------------------------------------------------------------ expressions
    def eval(self, node: ast.expr, env: dict, mod: Module, frame: dict | None) -> Any:
        self.tick()
        return self.visit(node, env, mod, frame)

    def visit_Constant(self, node: ast.Constant, env: dict, mod: Module, frame: dict | None) -> Any:
        return node.value

    def visit_Name(self, node: ast.Name, env: dict, mod: Module, frame: dict | None) -> Any:
        if node.id in env:
            return env[node.id]
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        return Named(node.id)

    def visit_JoinedStr(self, node: ast.JoinedStr, env: dict, mod: Module,
                        frame: dict | None) -> Any:  # fmt: skip
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                v = self.eval(value.value, env, mod, frame)
                if not isinstance(v, (str, int, float)) or isinstance(v, bool):
                    return UNKNOWN
                parts.append(str(v))
        return "".join(parts)

    def visit_List(self, node: ast.List | ast.Tuple | ast.Set, env: dict, mod: Module,
                   frame: dict | None) -> Any:  # fmt: skip
        items = [self.eval(e, env, mod, frame) for e in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(items)
        if isinstance(node, ast.Set):
            try:
                return set(items)
            except TypeError:
                return UNKNOWN
        return items

    visit_Tuple = visit_Set = visit_List

    def visit_Dict(self, node: ast.Dict, env: dict, mod: Module, frame: dict | None) -> Any:
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                return UNKNOWN
            key = self.eval(k, env, mod, frame)
            if not isinstance(key, (str, int, float, bool, tuple, type(None))):
                return UNKNOWN
            out[key] = self.eval(v, env, mod, frame)
        return out

    def visit_Attribute(self, node: ast.Attribute, env: dict, mod: Module,
                        frame: dict | None) -> Any:  # fmt: skip
        return self.attribute(self.eval(node.value, env, mod, frame), node.attr)

    def visit_BinOp(self, node: ast.BinOp, env: dict, mod: Module, frame: dict | None) -> Any:
        return self.binop(
            node.op,
            self.eval(node.left, env, mod, frame),
            self.eval(node.right, env, mod, frame),
        )

    def visit_UnaryOp(self, node: ast.UnaryOp, env: dict, mod: Module, frame: dict | None) -> Any:
        operand = self.eval(node.operand, env, mod, frame)
        if isinstance(node.op, ast.Not):
            if is_unknown(operand) or isinstance(operand, (Tensor, Named)):
                return UNKNOWN
            return not operand
        return operand if isinstance(operand, Tensor) else UNKNOWN

    def visit_IfExp(self, node: ast.IfExp, env: dict, mod: Module, frame: dict | None) -> Any:
        test = self.eval(node.test, env, mod, frame)
        if is_unknown(test) or isinstance(test, (Tensor, Named)):
            return UNKNOWN
        return self.eval(node.body if test else node.orelse, env, mod, frame)

    def visit_Lambda(self, node: ast.Lambda, env: dict, mod: Module, frame: dict | None) -> Any:
        return Closure(node, env, mod, frame or {})

    def visit_BoolOp(self, node: ast.BoolOp, env: dict, mod: Module, frame: dict | None) -> Any:
        is_and = isinstance(node.op, ast.And)
        unknown = False
        last: Any = None
        for value_node in node.values:
            value = self.eval(value_node, env, mod, frame)
            if is_unknown(value) or isinstance(value, (Tensor, Named)):
                unknown = True
                continue
            last = value
            if is_and and not value:
                return value
            if not is_and and value:
                return value
        return UNKNOWN if unknown else last

    def visit_Compare(self, node: ast.Compare, env: dict, mod: Module, frame: dict | None) -> Any:
        left = self.eval(node.left, env, mod, frame)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = self.eval(comp, env, mod, frame)
            if isinstance(op, (ast.Is, ast.IsNot)):
                if is_unknown(left) or is_unknown(right):
                    return UNKNOWN
                ok = (left is right) if isinstance(op, ast.Is) else (left is not right)
            elif isinstance(op, (ast.In, ast.NotIn)):
                found = self.contains(right, left)
                if is_unknown(found):
                    return UNKNOWN
                ok = found if isinstance(op, ast.In) else not found
            else:
                if not all(isinstance(v, (int, float, str)) for v in (left, right)):
                    if isinstance(op, (ast.Eq, ast.NotEq)) and left is None or right is None:
                        if is_unknown(left) or is_unknown(right):
                            return UNKNOWN
                        ok = (left == right) == isinstance(op, ast.Eq)
                    else:
                        return UNKNOWN
                else:
                    try:
                        ok = ops.ORDERINGS[type(op)](left, right)
                    except (TypeError, KeyError):
                        return UNKNOWN
            if not ok:
                return False
            left = right
        return True

    def contains(self, container: Any, item: Any) -> Any:
        if is_unknown(item) or is_unknown(container):
            return UNKNOWN
        if isinstance(container, (list, tuple, set)) and (
            isinstance(item, Named) or any(isinstance(v, Named) for v in container)
        ):
            # values known by name only (torch.bfloat16): the same name is the same value,
            # another name may still be it
            return True if item in container else UNKNOWN
        if isinstance(container, ParamDict):
            if not isinstance(item, str):
                return UNKNOWN
            return container.obj.node.has(item)
        if isinstance(container, str):
            return item in container if isinstance(item, str) else UNKNOWN
        if isinstance(container, (list, tuple, set, dict)):
            if any(is_unknown(v) for v in container):
                return UNKNOWN
            try:
                return item in container
            except TypeError:
                return UNKNOWN
        return UNKNOWN

    def visit_Subscript(
        self, node: ast.Subscript, env: dict, mod: Module, frame: dict | None
    ) -> Any:
        base = self.eval(node.value, env, mod, frame)
        if isinstance(node.slice, ast.Slice):
            lo = self.eval(node.slice.lower, env, mod, frame) if node.slice.lower else None
            hi = self.eval(node.slice.upper, env, mod, frame) if node.slice.upper else None
            if isinstance(base, (str, list, tuple)) and all(
                v is None or isinstance(v, int) for v in (lo, hi)
            ):
                return base[lo:hi]
            return Tensor(base.name) if isinstance(base, Tensor) else UNKNOWN
        key = self.eval(node.slice, env, mod, frame)
        if isinstance(base, ParamDict):
            if not isinstance(key, str):
                raise Undecidable(f"line {node.lineno}: params lookup with an unknown key")
            if base.obj.node.has(key):
                return Param(base.prefix + key)
            raise EngineRaises(
                "KeyError", f"KeyError: {key!r} (no such parameter)", node.lineno, mod.path
            )
        if isinstance(base, dict):
            if key in base:
                return base[key]
            return UNKNOWN
        if isinstance(base, (list, tuple, str)) and isinstance(key, int):
            return base[key] if -len(base) <= key < len(base) else UNKNOWN
        if isinstance(base, Tensor):
            return base
        return UNKNOWN

    def binop(self, op: ast.operator, left: Any, right: Any) -> Any:
        for v in (left, right):
            if isinstance(v, Tensor):
                return v
        if is_unknown(left) or is_unknown(right):
            return UNKNOWN
        return ops.arithmetic(op, left, right)

    def attribute(self, base: Any, attr: str) -> Any:
        if isinstance(base, Obj):
            if attr in base.attrs:
                return base.attrs[attr]
            if attr == "config":
                return self.config
            if attr in ("named_parameters", "state_dict"):
                return ("method", base, attr)
            if base.ref is not None:
                found = self.index.find_method(base.ref, attr)
                if found is not None:
                    return Bound(base, found[0], found[1])
                for cls in self.index.mro(base.ref):
                    for stmt in cls.node.body:
                        if isinstance(stmt, ast.Assign) and any(
                            isinstance(t, ast.Name) and t.id == attr for t in stmt.targets
                        ):
                            value = self.eval(stmt.value, {}, cls.module, None)
                            base.attrs[attr] = value
                            return value
            if base.ref is None and base.node.wild and not base.node.approximate:
                # `self_attn.kv_b_proj.weight`: a parameter of a leaf layer the model built
                return Param(self.path_of(base.node) + attr)
            return Named(attr)
        if isinstance(base, Config):
            if attr == "get" and "get" not in base.data:
                return ("method", base, "get")
            return base.get(attr)
        if isinstance(base, Param):
            if attr == "data":
                return base
            if attr == "dtype":
                return self._param_dtype()
            if attr in ("weight_loader", "copy_", "fill_"):
                return Loader(base)
            return Named(attr)
        if isinstance(base, Tensor):
            return Named(f"tensor.{attr}") if attr not in ("shape", "dtype") else Tensor(base.name)
        if isinstance(base, ParamDict) and attr == "keys":
            return ("method", base, attr)
        if isinstance(base, (str, dict, list, set, ParamDict, AutoLoader, Super)):
            return ("method", base, attr)
        if isinstance(base, Named):
            return Named(f"{base.name}.{attr}")
        return UNKNOWN

    def visit_ListComp(self, node, env: dict, mod: Module, frame: dict | None) -> Any:
        results: list = []
        pairs: dict = {}

        def walk(i: int, scope: dict) -> None:
            if i == len(node.generators):
                if isinstance(node, ast.DictComp):
                    pairs[self.eval(node.key, scope, mod, frame)] = self.eval(
                        node.value, scope, mod, frame
                    )
                else:
                    results.append(self.eval(node.elt, scope, mod, frame))
                return
            gen = node.generators[i]
            for item in self.iterate(self.eval(gen.iter, scope, mod, frame), node):
                local = dict(scope)
                self.assign(gen.target, item, local, mod, frame or {})
                if all(self.truth(self.eval(c, local, mod, frame), c) for c in gen.ifs):
                    walk(i + 1, local)

        walk(0, dict(env))
        if isinstance(node, ast.DictComp):
            return pairs
        return set(results) if isinstance(node, ast.SetComp) else results

    visit_GeneratorExp = visit_SetComp = visit_DictComp = visit_ListComp

    # ------------------------------------------------------------------ calls
    def visit_Call(self, node: ast.Call, env: dict, mod: Module, frame: dict | None) -> Any:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "super" and frame is not None:
            return Super(frame["self"], frame["cls"])
        callee = self.eval(func, env, mod, frame)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                value = self.eval(a.value, env, mod, frame)
                if not isinstance(value, (list, tuple)):
                    return UNKNOWN
                args.extend(value)
            else:
                args.append(self.eval(a, env, mod, frame))
        kwargs = {k.arg: self.eval(k.value, env, mod, frame) for k in node.keywords if k.arg}
        return self.apply(callee, args, kwargs, node, mod)

    def apply(self, callee: Any, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        if isinstance(callee, tuple) and len(callee) == 3 and callee[0] == "method":
            return self.method(callee[1], callee[2], args, kwargs, node, mod)
        if isinstance(callee, Bound):
            return self.run_function(callee, args, kwargs)
        if isinstance(callee, Closure):
            return self.run_closure(callee, args, kwargs)
        if isinstance(callee, Loader):
            self.load(args, callee.param, node, mod)
            return None
        if isinstance(callee, Const):
            return callee.value
        if isinstance(callee, Named):
            return self.named_call(callee.name, args, kwargs, node, mod)
        if isinstance(callee, Super):
            return UNKNOWN
        return UNKNOWN

    def method(self, base: Any, name: str, args: list, kwargs: dict, node, mod: Module) -> Any:
        if isinstance(base, Obj) and name in ("named_parameters", "state_dict"):
            return ParamDict(base, self.path_of(base.node))
        if isinstance(base, Super):
            return self._super_method(base, name, args, node)
        if isinstance(base, Config) and name == "get" and args and isinstance(args[0], str):
            return base.get(args[0], args[1] if len(args) > 1 else None)
        if isinstance(base, AutoLoader) and name == "load_weights":
            mapper = kwargs.get("mapper")
            return self.auto_load(
                base,
                args[0] if args else [],
                node,
                mod,
                mapper if isinstance(mapper, Mapper) else None,
            )
        if isinstance(base, ParamDict):
            return self._params_method(base, name, args, node)
        if isinstance(base, str) and name in builtins.STR_METHODS:
            if any(opaque(a) for a in args):
                return UNKNOWN
            return builtins.str_method(base, name, args)
        if isinstance(base, (dict, list, set)):
            return builtins.container_method(base, name, args)
        return UNKNOWN

    def _super_method(self, base: Super, name: str, args: list, node: ast.Call) -> Any:
        nxt = self.next_in_mro(base.obj, base.after)
        if nxt is None:
            raise Undecidable(f"line {node.lineno}: super().{name} in a class not read")
        if name in ("named_parameters", "state_dict"):
            return ParamDict(base.obj, self.path_of(base.obj.node))
        return self.call_method(base.obj, nxt, name, args)

    def _params_method(self, base: ParamDict, name: str, args: list, node: ast.Call) -> Any:
        if name == "keys":
            return base
        if name == "get":
            key = args[0] if args else UNKNOWN
            if not isinstance(key, str):
                return UNKNOWN
            if base.obj.node.has(key):
                return Param(base.prefix + key)
            return args[1] if len(args) > 1 else None
        if name == "items":
            raise Undecidable(f"line {node.lineno}: iterating over every parameter")
        return UNKNOWN

    def named_call(self, name: str, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        setting = _SETTING_GET.match(name)
        if setting is not None:
            value = self._setting(setting.group(1))
            if value is not _NOT_HANDLED:
                return value
        short = name.rsplit(".", 1)[-1]
        if short in _LOG_NAMES and ("logger" in name or "warnings" in name or "log" in name):
            if self.current:
                self.logged.add(self.current)
            return None
        by_name = self._BY_NAME.get(name)
        if by_name is not None:
            found = by_name(self, name, args, kwargs, node, mod)
            if found is not _NOT_HANDLED:
                return found
        if name in _CONCAT_FUNCTIONS and args and isinstance(args[0], (list, tuple)):
            # `torch.cat([q_a, kv_a])` loaded into a fused parameter (SGLang 0.5.14
            # kimi_k25_eagle3.py:461-471): every part is loaded
            parts = [v for v in args[0] if isinstance(v, Tensor)]
            if parts and len(parts) == len(args[0]):
                names = tuple(n for t in parts for n in (t.parts or (t.name,)))
                return Tensor(parts[0].name, names)
            return UNKNOWN
        if name in builtins.REGEX_FUNCTIONS:
            return builtins.regex(name, args, kwargs)
        role = self._helper_role(name, mod)
        if role is not None:
            found = self._HELPERS[role](self, args, kwargs, node, mod)
            if found is not _NOT_HANDLED:
                return found
        if short == "copy_" or name.endswith(".data.copy_"):
            return None
        if any(isinstance(a, Config) for a in [*args, *kwargs.values()]):
            # an engine helper computing a setting from the config (`is_deepseek_dsa(config)`,
            # SGLang 0.5.14 deepseek_v2.py:1520), unless modelled above (loader_rules):
            # followed; what it cannot decide stays unknown
            helper = self._helper(name, mod)
            if helper is not None:
                try:
                    return self.run_closure(helper, args, kwargs)
                except (Undecidable, EngineRaises, NeedsFork, BreakSignal, ContinueSignal):
                    return UNKNOWN
        return UNKNOWN

    def _setting(self, name: str) -> Any:
        """`envs.NAME.get()`: the server's environment where it was read (engine_params
        "__env__"), else the default the engine's settings registry declares for NAME
        (`NAME = EnvBool(False)` in a class of a module read, code_markers.SETTINGS_REGISTRY)."""
        declared = _NOT_HANDLED
        for path, _text in self.index.texts_mentioning(name):
            module = self.index.module_at(path)
            for cls in (module.classes.values() if module is not None else ()):
                for stmt in cls.body:
                    if (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)
                            and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
                            and ast.unparse(stmt.value.func) in code_markers.SETTING_FIELDS
                            and stmt.value.args
                            and isinstance(stmt.value.args[0], ast.Constant)):  # fmt: skip
                        declared = (ast.unparse(stmt.value.func), stmt.value.args[0].value)
        if declared is _NOT_HANDLED:
            return _NOT_HANDLED
        kind, default = declared
        env = self.engine_params.get("__env__")
        if not isinstance(env, dict) or env.get(name) is None:
            return default
        text = str(env[name]).strip()
        if kind.startswith("EnvBool"):
            return text.lower() in ("1", "true", "yes", "on", "y", "t")
        try:
            return int(text) if kind == "EnvInt" else float(text) if kind == "EnvFloat" else text
        except ValueError:
            return UNKNOWN

    # ------------------------------------------------------------------ builtins by name
    # each takes (name, args, kwargs, node, mod); _NOT_HANDLED: the arguments are not ones it
    # models, the call goes on to the engine helpers
    def _print(self, name: str, args: list, *_: Any) -> Any:
        return None

    def _copy(self, name: str, args: list, *_: Any) -> Any:
        if not args:
            return _NOT_HANDLED
        # `config = copy.copy(config)` before setting a field: the same config's values
        return Config(dict(args[0].data)) if isinstance(args[0], Config) else UNKNOWN

    def _dict(self, name: str, args: list, *_: Any) -> Any:
        if args and isinstance(args[0], list) and not args[0]:
            return {}
        if args and isinstance(args[0], ParamDict):
            return args[0]
        if args and isinstance(args[0], list):
            try:
                return dict(args[0])
            except (TypeError, ValueError):
                return UNKNOWN
        return {} if not args else UNKNOWN

    def _sequence(self, name: str, args: list, *_: Any) -> Any:
        # sorted() keeps the order it is given: the order of a sorted call is not modelled
        if not args:
            return {"list": [], "tuple": (), "set": set(), "sorted": []}[name]
        value = args[0]
        if isinstance(value, (list, tuple, set, dict)):
            return {"list": list, "tuple": tuple, "set": set, "sorted": list}[name](value)
        return UNKNOWN

    def _len(self, name: str, args: list, *_: Any) -> Any:
        return builtins.call("len", args[:1])

    def _getattr(self, name: str, args: list, *_: Any) -> Any:
        if len(args) < 2 or not isinstance(args[1], str):
            return _NOT_HANDLED
        obj, attr = args[0], args[1]
        has = name == "hasattr"
        if isinstance(obj, Param):
            if has:
                return True if attr == "weight_loader" else UNKNOWN
            return Loader(obj) if attr == "weight_loader" else UNKNOWN
        if isinstance(obj, Config):
            return attr in obj.data if has else obj.get(attr, args[2] if len(args) > 2 else UNKNOWN)
        if isinstance(obj, Obj):
            if (
                attr in obj.attrs
                or attr in obj.node.children
                or (obj.ref is not None and self.index.find_method(obj.ref, attr))
            ):
                return True if has else self.attribute(obj, attr)
            if has:
                return False if obj.ref is not None and not obj.node.approximate else UNKNOWN
            return args[2] if len(args) > 2 else UNKNOWN
        return UNKNOWN

    def _bool(self, name: str, args: list, *_: Any) -> Any:
        if not args:
            return _NOT_HANDLED
        value = args[0]
        if opaque(value):
            return UNKNOWN
        return True if isinstance(value, (Obj, Config)) else bool(value)

    def _map(self, name: str, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        if len(args) != 2 or not isinstance(args[1], (list, tuple)):
            return _NOT_HANDLED
        # a generator is consumed once by whatever iterates it: a list behaves the same
        func, items = args[0], list(args[1])
        if name == "map":
            return [self.apply(func, [item], {}, node, mod) for item in items]
        return [item for item in items
                if self.truth(self.apply(func, [item], {}, node, mod), node)]  # fmt: skip

    def _builtin_by_name(self, name: str, args: list, *_: Any) -> Any:
        return self.builtin(name, args)

    _BY_NAME: dict[str, Callable[..., Any]] = {
        "print": _print,
        **dict.fromkeys(("copy.copy", "copy.deepcopy", "deepcopy"), _copy),
        "dict": _dict,
        **dict.fromkeys(("list", "tuple", "set", "sorted"), _sequence),
        "len": _len,
        **dict.fromkeys(("getattr", "hasattr"), _getattr),
        "bool": _bool,
        **dict.fromkeys(("map", "filter"), _map),
        **dict.fromkeys(
            ("isinstance", "str", "int", "enumerate", "zip", "range", "any", "all"),
            _builtin_by_name,
        ),
    }

    # ------------------------------------------------------------------ engine helpers
    def _helper_role(self, name: str, mod: Module) -> str | None:
        """The loader_rules role of the engine helper `name` means in `mod`: by the qualified
        name its import (or definition) resolves to, through the files read."""
        short = name.rsplit(".", 1)[-1]
        qualified = qualified_name(self.index, mod, name)
        if qualified is None or qualified.split(".", 1)[0] not in loader_rules.HELPER_PACKAGES:
            # the index cannot say what it is: a name the file neither imports nor defines
            # (`param.weight_loader` of a class not read, a helper handed over from another
            # file) or one of a package the registry does not cover: matched on its last part
            return loader_rules.helper_by_short_name(short)
        role = loader_rules.HELPERS.get(qualified)
        if role is None and loader_rules.is_weight_loader_name(short):
            return loader_rules.WEIGHT_LOADER
        return role

    def _pipeline_group(self, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        size = self.engine_params.get("__pipeline_size__")
        if not isinstance(size, int):
            return _NOT_HANDLED
        return Config({"world_size": size, "is_first_rank": True, "is_last_rank": size == 1})

    def _weights_mapper(self, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        def table(key: str) -> dict:
            value = kwargs.get(key)
            return value if isinstance(value, dict) else {}

        return Mapper(
            table("orig_to_new_substr"),
            table("orig_to_new_stacked"),
            table("orig_to_new_prefix"),
            table("orig_to_new_suffix"),
        )

    def _kv_scale_remapper(self, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        if args and isinstance(args[0], str):
            return UNKNOWN if args[0].endswith(loader_rules.KV_SCALE_SUFFIXES) else args[0]
        return _NOT_HANDLED

    def _draft_quant_config_call(self, args: list, kwargs: dict, node: ast.Call,
                                 mod: Module) -> Any:  # fmt: skip
        return self._draft_quant_config(args[0] if args else kwargs.get("vllm_config"))

    def _auto_weights_loader(self, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        target = args[0] if args else None
        if not isinstance(target, Obj):
            return UNKNOWN
        return AutoLoader(
            target,
            [p for p in (kwargs.get("skip_prefixes") or []) if isinstance(p, str)],
            [p for p in (kwargs.get("skip_substrs") or []) if isinstance(p, str)],
        )

    def _weight_loader(self, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        params = [a for a in args if isinstance(a, Param)]
        if not params:
            return _NOT_HANDLED
        self.load(args, params[0], node, mod)
        return None

    _HELPERS: dict[str, Callable[..., Any]] = {
        loader_rules.WEIGHTS_MAPPER: _weights_mapper,
        loader_rules.KV_SCALE_REMAPPER: _kv_scale_remapper,
        loader_rules.DRAFT_QUANT_CONFIG: _draft_quant_config_call,
        loader_rules.AUTO_WEIGHTS_LOADER: _auto_weights_loader,
        loader_rules.WEIGHT_LOADER: _weight_loader,
        loader_rules.PIPELINE_GROUP: _pipeline_group,
    }

    def _param_dtype(self) -> Any:
        """A parameter's dtype: the model's, which the draft config decides unless quantized."""
        if self.config.get("quantization_config", None) is not None:
            return UNKNOWN
        dtype = loader_rules.model_dtype(self.config.get("dtype", None),
                                         self.config.get("torch_dtype", None))  # fmt: skip
        return Named(f"torch.{dtype}") if dtype else UNKNOWN

    def _helper(self, name: str, mod: Module, depth: int = 0) -> Closure | None:
        """A module-level function of the engine that `name` means in `mod` (defined there or
        imported from a module read)."""
        if depth > 4 or "." in name:
            return None
        if name in mod.functions:
            return Closure(mod.functions[name], {}, mod, {})
        module, _, attr = mod.imports.get(name, "").partition(":")
        other = self.index.modules.get(module) if module and attr else None
        return self._helper(attr, other, depth + 1) if other is not None else None

    def _draft_quant_config(self, vllm_config: Any) -> Any:
        """None when the draft's ModelConfig has no quantization; else a QuantizationConfig,
        an object whose answers are not modelled."""
        draft = self.attribute(self.attribute(vllm_config, "speculative_config"),
                               "draft_model_config")  # fmt: skip
        quantization = self.attribute(draft, "quantization")
        if quantization is None:
            return None
        return Named("quant_config") if isinstance(quantization, str) else UNKNOWN

    def builtin(self, name: str, args: list) -> Any:
        if name == "isinstance" and len(args) == 2 and args[0] is self.config:
            # the draft's config is a PretrainedConfig, no dict (its nested dicts are dicts):
            # `_hf_arch`, SGLang 0.5.14 configs/model_config.py:86-93
            return False if args[1] == Named("dict") else UNKNOWN
        return builtins.call(name, args, _BUILTINS)

    def load(self, args: list, param: Param, node: ast.AST, mod: Module) -> None:
        tensors = [a for a in args if isinstance(a, Tensor)]
        names = (tensors[0].parts or (tensors[0].name,)) if tensors else (self.current,)
        for tensor in names:
            if tensor is not None:
                self.loads.append((tensor, param.name, f"{mod.path}:{getattr(node, 'lineno', 0)}"))

    def auto_load(
        self, loader: AutoLoader, weights: Any, node: ast.Call, mod: Module, mapper: Mapper | None
    ) -> Any:
        """vLLM's AutoWeightsLoader, as remotedbg.engines.loader_rules describes it."""
        items = self.iterate(weights, node)
        if mapper is not None:
            mapped = []
            for item in items:
                if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                    raise Undecidable(f"line {node.lineno}: weights of unknown shape")
                new = mapper.map_name(item[0])
                if new is None:
                    if isinstance(item[1], Tensor):
                        self.dropped_by_rule[item[1].name] = loader_rules.MAPPER_DROP_CITATION
                    continue
                mapped.append((new, item[1]))
            items = mapped
        return self._auto_module(loader, loader.obj, "", items, node, mod, top=True)

    def _auto_module(self, loader, obj: Obj, prefix: str, items: list, node, mod, top=False):
        groups: dict[str, list] = {}
        for item in items:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise Undecidable(f"line {node.lineno}: weights of unknown shape")
            name, tensor = item
            full = prefix + name
            if isinstance(tensor, Tensor):
                self.current = tensor.name
            if any(full.startswith(p) for p in loader.skip_prefixes) or any(
                s in full for s in loader.skip_substrs
            ):
                if isinstance(tensor, Tensor):
                    self.dropped_by_rule[tensor.name] = loader_rules.AUTO_SKIP_CITATION
                continue
            head, _, rest = name.partition(".")
            groups.setdefault(head, []).append((rest, tensor, name))
        for head, entries in groups.items():
            child = obj.attrs.get(head)
            if isinstance(child, Obj) and child.ref is not None and entries[0][0]:
                found = self.index.find_method(child.ref, "load_weights")
                if found is not None and found[0].node is not loader.obj.ref.node:  # type: ignore[union-attr]
                    self.run_function(
                        Bound(child, found[0], found[1]), [[(r, t) for r, t, _ in entries]], {}
                    )
                    continue
            for rest, tensor, name in entries:
                if isinstance(tensor, Tensor):
                    self.current = tensor.name
                if obj.node.has(name):
                    self.load([tensor], Param(self.path_of(obj.node) + name), node, mod)
                    continue
                if isinstance(child, Obj) and rest:
                    self._auto_module(
                        loader, child, f"{prefix}{head}.", [(rest, tensor)], node, mod
                    )
                    continue
                raise EngineRaises(
                    "ValueError",
                    f"There is no module or parameter named {prefix + name!r}",
                    node.lineno,
                    loader_rules.AUTO_RAISE_CITATION,
                )
        return None


def simulate_load(
    index: SourceIndex,
    draft_module_path: str,
    class_name: str,
    tensor_names: list[str],
    draft_config: dict,
    engine_params: dict | None = None,
    max_runs: int = 16,
) -> LoadModel:
    """Run the draft class's load_weights over the checkpoint's tensor names. A condition the
    code leaves open (a launch setting not known here) is tried both ways; when the ways
    disagree on any tensor, the model is `unknown` and says which condition decides."""

    def run(decisions: Decisions) -> LoadModel:
        return _simulate_once(index, draft_module_path, class_name, tensor_names, draft_config,
                              engine_params, decisions.forced)  # fmt: skip

    try:
        results = [(path.forced, path.result) for path in explore(run, max_runs=max_runs)]
    except TooManyPaths:
        return LoadModel("unknown", reason="too many undecided conditions in the loader code")
    first = results[0][1]
    for _, other in results[1:]:
        if _signature(other) != _signature(first):
            keys = sorted({k for f, _ in results for k in f})
            conditions = "; ".join(f"line {k[0]}: `{k[2][:80]}`" for k in keys)
            return LoadModel(
                "unknown",
                reason=f"what the loader does depends on settings not known here ({conditions})",
                draft_class=first.draft_class,
            )
    return first


def _signature(model: LoadModel) -> tuple:
    return (
        model.status,
        model.reason,
        tuple(sorted((k, v["outcome"]) for k, v in model.outcomes.items())),
        tuple(model.unfilled()),
    )


def _simulate_once(
    index: SourceIndex,
    draft_module_path: str,
    class_name: str,
    tensor_names: list[str],
    draft_config: dict,
    engine_params: dict | None,
    forced: dict,
) -> LoadModel:
    mod = index.module_at(draft_module_path)
    if mod is None:
        return LoadModel("unknown", reason=f"{draft_module_path} was not read or does not parse")
    ref = index.resolve(mod, class_name)
    if ref is None:
        return LoadModel("unknown", reason=f"no class {class_name} in {draft_module_path}")
    interp = Interpreter(index, draft_config, forced, engine_params)
    result = LoadModel("ok", draft_class=f"{class_name} ({ref.where})")
    try:
        obj = interp.tree.instantiate(ref)
        interp.root = obj
        result.required = obj.node.leaves()
        weights = [(n, Tensor(n)) for n in tensor_names]
        interp.call_method(obj, ref, "load_weights", [weights])
    except EngineRaises as exc:
        result.status = "raises"
        result.raised = {
            "kind": exc.kind,
            "message": exc.message,
            "at": f"{exc.path}:{exc.line}",
            "tensor": interp.current,
        }
    except Undecidable as exc:
        return LoadModel("unknown", reason=str(exc), draft_class=result.draft_class)
    except RecursionError:
        return LoadModel("unknown", reason="the loader code nests too deeply to follow")
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        # engine code is hostile input: an operation the interpreter does not model on the
        # values it met (unhashable keys, odd types) makes the model unknown, never a crash
        return LoadModel(
            "unknown",
            reason=f"the loader code does something not modelled ({type(exc).__name__}: {exc})",
            draft_class=result.draft_class,
        )
    result.approximate = interp.tree.approximate
    for tensor, param, where in interp.loads:
        result.outcomes.setdefault(tensor, {"outcome": "loaded", "params": [], "at": where})
        result.outcomes[tensor]["params"].append(param)
    result.loaded_params = sorted({p for _, p, _ in interp.loads})
    for name in tensor_names:
        if name in result.outcomes:
            continue
        if name in interp.special:
            result.outcomes[name] = {"outcome": "consumed", "as": interp.special[name]}
        elif result.raised and result.raised.get("tensor") == name:
            result.outcomes[name] = {"outcome": "raises", **result.raised}
        elif result.status == "raises" and name not in interp.logged:
            result.outcomes[name] = {"outcome": "not-reached"}
        else:
            how = "logged" if name in interp.logged else "silent"
            entry = {"outcome": "dropped", "how": how}
            if name in interp.dropped_by_rule:
                entry["by"] = interp.dropped_by_rule[name]
            result.outcomes[name] = entry
    return result
