"""Expressions of the engine code the loader model runs (remotedbg.analysis.loader_model): one
`visit_<Expr>` per expression kind over the loader's values (names are concrete strings, tensors
opaque), membership, arithmetic and attribute lookup on modules, configs and parameters. A part
of loader_model.Interpreter."""

from __future__ import annotations

import ast
from typing import Any

from remotedbg.analysis.interp import is_unknown, ops
from remotedbg.analysis.loader_values import (
    UNKNOWN,
    AutoLoader,
    Bound,
    BreakSignal,
    Closure,
    Config,
    ContinueSignal,
    EngineRaises,
    Loader,
    Named,
    NeedsFork,
    Obj,
    Param,
    ParamDict,
    ReturnSignal,
    Super,
    Tensor,
    Undecidable,
)
from remotedbg.analysis.pysource import ClassRef, Module

# Tensor methods that lay the same data out anew: the result is still that checkpoint tensor
# (vLLM's Llama-4 q/k permutation for rotary, `w.view(...).transpose(1, 2).reshape(...)`:
# 0.10.0 model_executor/models/llama4.py:563-566; 0.33.0 :826-846)
_TENSOR_VIEWS = {"view", "reshape", "transpose", "permute", "contiguous", "unsqueeze", "squeeze",
                 "flatten", "t", "clone", "to", "float", "half", "bfloat16", "view_as"}  # fmt: skip


class Expressions:
    """The expression half of the interpreter's visitor."""

    def safe_eval(self, node: ast.expr, env: dict, mod: Module) -> Any:
        """A value the module tree's walk needs (loader_tree): unknown where it cannot be
        had. An open condition inside a method the walk calls is unknown too, not a fork: the
        walk takes both sides of what it decides (vLLM's CustomOp.__init__ picks a forward by
        platform, 0.10.2 model_executor/custom_op.py:81-107, seven conditions that build no
        module)."""
        try:
            return self.eval(node, env, mod, None)
        except (Undecidable, EngineRaises, NeedsFork, ReturnSignal, BreakSignal, ContinueSignal):
            return UNKNOWN

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
        if isinstance(operand, Tensor):
            return operand
        # `modules[-1]` (vLLM 0.10.0 llama4.py:573-577, permute_qk_weight_for_rotary)
        return ops.unary(node.op, operand)

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
            return self._module_attribute(base, attr)
        if isinstance(base, Config):
            if attr == "get" and "get" not in base.data:
                return ("method", base, "get")
            return base.get(attr)
        if isinstance(base, Param):
            return self._param_attribute(base, attr)
        if isinstance(base, Tensor):
            if attr in ("shape", "dtype", "T"):
                return Tensor(base.name)
            if attr in _TENSOR_VIEWS:
                return ("tensor-view", base, attr)
            return Named(f"tensor.{attr}")
        if isinstance(base, ParamDict) and attr == "keys":
            return ("method", base, attr)
        if isinstance(base, (str, dict, list, set, ParamDict, AutoLoader, Super)):
            return ("method", base, attr)
        if isinstance(base, Named):
            return Named(f"{base.name}.{attr}")
        return UNKNOWN

    def _module_attribute(self, base: Obj, attr: str) -> Any:
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
            return self._class_attribute(base, base.ref, attr)
        if base.node.wild and not base.node.approximate:
            if attr in base.node.absent:
                return None  # `self.fc.bias` of a layer built bias=False
            # `self_attn.kv_b_proj.weight`: a parameter of a leaf layer the model built
            return Param(self.path_of(base.node) + attr)
        return Named(attr)

    def _class_attribute(self, base: Obj, ref: ClassRef, attr: str) -> Any:
        """`attr = <value>` in the class body (or a base's), kept on the instance once read."""
        for cls in self.index.mro(ref):
            for stmt in cls.node.body:
                if isinstance(stmt, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == attr for t in stmt.targets
                ):
                    value = self.eval(stmt.value, {}, cls.module, None)
                    base.attrs[attr] = value
                    return value
        return Named(attr)

    def _param_attribute(self, base: Param, attr: str) -> Any:
        if attr == "data":
            return base
        if attr == "dtype":
            return self._param_dtype()
        if attr in ("weight_loader", "copy_", "fill_"):
            return Loader(base)
        return Named(attr)

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
