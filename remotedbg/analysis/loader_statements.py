"""Statements of the engine code the loader model runs (remotedbg.analysis.loader_model):
function and closure calls with their frames, one `visit_<Stmt>` per statement kind, iteration,
the truth of a condition (an open one forks the run: remotedbg.analysis.interp.fork), and
assignment to names, items and attributes. A part of loader_model.Interpreter."""

from __future__ import annotations

import ast
import re
from typing import Any

from remotedbg.analysis.interp import NotInterpreted, is_unknown
from remotedbg.analysis.loader_values import (
    UNKNOWN,
    Bound,
    BreakSignal,
    Closure,
    Config,
    ContinueSignal,
    EngineRaises,
    Named,
    Obj,
    ParamDict,
    ReturnSignal,
    Tensor,
    Undecidable,
)
from remotedbg.analysis.pysource import ClassRef, Module


class Statements:
    """The statement half of the interpreter's visitor."""

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
            # a @staticmethod called through self (vLLM 0.25+ Medusa._remap_old_checkpoint_key)
            # takes no self
            static = any(isinstance(d, ast.Name) and d.id == "staticmethod"
                         for d in func.decorator_list)  # fmt: skip
            values = list(args) if static else [bound.obj, *args]
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
        if isinstance(value, ParamDict) and not value.obj.node.wild:
            return self._param_names(value)
        raise Undecidable(f"line {getattr(node, 'lineno', '?')}: iterating over {value!r}")

    def _param_names(self, params: ParamDict) -> list[str]:
        """`for name in params_dict` (vLLM 0.10.0 llama4_eagle.py:130-135, the check that every
        parameter was loaded): the module tree's parameters, relative to the dict's module. A
        leaf layer's own names are not read: those loaded so far under it, else its `weight`."""
        loaded = [param for _, param, _ in self.loads if param.startswith(params.prefix)]
        names: list[str] = []
        for leaf in params.obj.node.leaves():
            node = params.obj.node
            for part in leaf.split("."):
                node = node.children[part]
            if node.is_param:
                names.append(leaf)  # a parameter the module itself declares
                continue
            under = sorted({p[len(params.prefix):] for p in loaded
                            if p.startswith(f"{params.prefix}{leaf}.")})  # fmt: skip
            names += under or [f"{leaf}.weight"]
        return names

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
