"""How a draft-model source file treats the EAGLE-3 `d2t` tensor, decided with `ast` (pure).

EAGLE-3 checkpoints store `d2t` as OFFSETS: target_id = draft_id + d2t[draft_id]. A loader is
right ("offsets") when the loaded d2t is added to an arange over the draft vocab before being used
as target ids (at load time, like SGLang's `hot_token_id = w + arange(len(w))`, or at logits time,
like vLLM's `targets = arange(draft_vocab_size) + draft_id_to_target_id`). It is wrong ("direct")
when the loaded d2t is stored or used as target ids as is. "none": the file never reads d2t.
"unknown": d2t is read but neither pattern was recognised (the lines are returned).

The analysis is a small abstract interpretation: every expression gets a kind (RAW: the d2t
tensor or a view of it; ARANGE: an arange; CONV: arange + d2t, i.e. target ids), tracked through
local variables and `self.<attr>` (over all methods of a class, iterated to a fixed point).
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from collections.abc import Iterable
from typing import Any

from remotedbg.analysis.interp import Visitor
from remotedbg.analysis.pysource import names_in, parse, walk
from remotedbg.engines.knowledge import (
    D2T_NAMES,
    DRAFT_CLASS_WORDS,
    EVIDENCE_SYMBOLS,
    TARGET_ID_SINKS,
)
from remotedbg.engines.profiles import engine_profile
from remotedbg.engines.sglang import entry_class_names
from remotedbg.engines.vllm import registry_entries

OFFSETS = "offsets"
DIRECT = "direct"
NONE = "none"
UNKNOWN = "unknown"
HANDLINGS = (OFFSETS, DIRECT, NONE, UNKNOWN)

RAW = "raw"
ARANGE = "arange"
CONV = "conv"

# methods/functions that return (a view or copy of) their receiver/first argument
_PASSTHROUGH_METHODS = {
    "to",
    "long",
    "int",
    "cuda",
    "cpu",
    "clone",
    "contiguous",
    "detach",
    "view",
    "reshape",
    "flatten",
    "squeeze",
    "unsqueeze",
    "type",
    "tolist",
    "numpy",
    "narrow",
    "expand",
    "astype",
    "copy",
    "pin_memory",
    "share_memory_",
    "requires_grad_",
}
_PASSTHROUGH_FUNCS = {
    "as_tensor",
    "tensor",
    "asarray",
    "array",
    "from_numpy",
    "LongTensor",
    "IntTensor",
    "Parameter",
    "Buffer",
    "deepcopy",
    "copy",
}
_ADD_METHODS = {"add", "add_", "__add__", "__radd__", "__iadd__"}
_INDEX_METHODS = {
    "index_select",
    "gather",
    "take",
    "take_along_dim",
    "index_fill",
    "index_fill_",
    "scatter",
    "scatter_",
    "index_copy",
    "index_copy_",
    "index_put",
    "index_put_",
    "index_add",
    "index_add_",
}
_COPY_INTO_METHODS = {"copy_", "set_"}
_SETTERS = {"register_buffer", "register_parameter", "setattr"}
_KEYED_GETTERS = {"pop", "get", "get_tensor", "get_slice", "__getitem__", "getattr"}
# calls that only look at a tensor (its size, for logging): not a "use" of the values
_HARMLESS_CALLS = {
    "len",
    "print",
    "isinstance",
    "hasattr",
    "getattr",
    "str",
    "repr",
    "id",
    "type",
    "size",
    "numel",
    "dim",
    "nelement",
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "exception",
    "format",
    "assert_",
    "shape",
}
_DRAFT_WORDS_RE = re.compile("|".join(re.escape(w) for w in DRAFT_CLASS_WORDS))
# classes that are parts of a draft head, not heads (Eagle3DecoderLayer, EagleMLP...)
_PART_SUFFIX_RE = re.compile(
    r"(Layer|Attention|MLP|Block|Norm|Embedding|Config|Worker|Proposer|Mixin|Output|Input)s?$"
)
_MAX_EVIDENCE = 40


# ------------------------------------------------------------------------------------- helpers
def _is_d2t_string(value: object, names: set[str]) -> bool:
    if not isinstance(value, str):
        return False
    return any(
        re.search(r"(?<![A-Za-z0-9])" + re.escape(n) + r"(?![A-Za-z0-9])", value) for n in names
    )


def _str_const(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _last_component(s: str) -> str:
    return s.strip(".").split(".")[-1]


def _renamed_d2t(tree: ast.AST) -> set[str]:
    """Names the file gives d2t: `name.replace("d2t", "X")`, {"d2t": "X"}, ("d2t", "X")."""
    base = set(D2T_NAMES)
    found: set[str] = set()
    for node in walk(tree):
        pairs: list[tuple[str | None, str | None]] = []
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "replace"
            and len(node.args) >= 2
        ):
            pairs.append((_str_const(node.args[0]), _str_const(node.args[1])))
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=False):
                if k is not None:
                    pairs.append((_str_const(k), _str_const(v)))
        elif isinstance(node, ast.Tuple) and len(node.elts) in (2, 3):
            pairs.append((_str_const(node.elts[0]), _str_const(node.elts[1])))
        for src, dst in pairs:
            if src and dst and _is_d2t_string(src, base):
                comp = _last_component(dst)
                if comp.isidentifier() and comp not in ("weight", "bias"):
                    found.add(comp)
    return found


def _arange_aliases(tree: ast.AST) -> set[str]:
    aliases = {"arange"}
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "arange":
                    aliases.add(alias.asname or alias.name)
    return aliases


class _Event:
    __slots__ = ("line", "role", "symbol", "note", "attrs", "method")

    def __init__(
        self, line: int, role: str, symbol: str, note: str, attrs: set[str], method: str = ""
    ):
        self.line = line
        self.role = role  # source | offsets | direct | store | unknown | read
        self.symbol = symbol
        self.note = note
        self.attrs = attrs
        self.method = method  # the unit's function the event is in


class _Unit:
    """One class (or the module's top-level functions): shares `self.<attr>` kinds."""

    def __init__(self, name: str, node: ast.AST, bases: list[str]):
        self.name = name
        self.node = node
        self.bases = bases
        self.attrs: dict[str, str | None] = {}
        self.events: list[_Event] = []
        self.handling = NONE
        self.inherited_from: str | None = None


def _is_add_call(node: ast.Call, name: str) -> bool:
    """torch.add(a, b) or a.add(b) (and the in-place and dunder spellings)."""
    if name not in _ADD_METHODS:
        return False
    return len(node.args) == 2 or (len(node.args) == 1 and isinstance(node.func, ast.Attribute))


class _Interp(Visitor):
    """Abstract interpretation of one unit's functions."""

    def __init__(self, unit: _Unit, d2t_names: set[str], aranges: set[str]):
        self.unit = unit
        self.d2t_names = d2t_names
        self.aranges = aranges
        self.loops: list[list[str]] = []
        # a name set from a loop variable in the loop's body (`name = key.removeprefix(...)`):
        # a d2t test on it tests that variable (LMDeploy 0.18.0 kimi_k25_eagle3.py:514-518)
        self.derived: dict[str, set[str]] = {}
        self.func_args: list[str] = []
        self.record = True
        self.method = ""

    def event(self, node: ast.AST, role: str, symbol: str, note: str, attrs: Iterable[str] = ()):
        if self.record:
            line = getattr(node, "lineno", 0)
            self.unit.events.append(_Event(line, role, symbol, note, set(attrs), self.method))

    # ------------------------------------------------------------------ statements
    def run_function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        self.func_args = [a for a in args if a not in ("self", "cls")]
        self.derived = {}
        env: dict[str, str | None] = {}
        self.block(fn.body, env)

    def block(self, stmts: list[ast.stmt], env: dict[str, str | None]) -> None:
        for stmt in stmts:
            self.visit(stmt, env)

    def generic_stmt(self, node: ast.stmt, *context: Any) -> None:
        return None  # a statement that moves no d2t (pass, import, del...)

    def visit_Assign(self, node: ast.Assign, env: dict[str, str | None]) -> None:
        kind = self.eval(node.value, env)
        for target in node.targets:
            self.assign(target, kind, env, node)
            if isinstance(target, ast.Name) and self.loops:
                from_loop = names_in(node.value) & set(self.loops[-1])
                if from_loop:
                    self.derived[target.id] = from_loop
                else:
                    self.derived.pop(target.id, None)

    def visit_AnnAssign(self, node: ast.AnnAssign, env: dict[str, str | None]) -> None:
        if node.value is not None:
            self.assign(node.target, self.eval(node.value, env), env, node)

    def visit_AugAssign(self, node: ast.AugAssign, env: dict[str, str | None]) -> None:
        kind = self.binop(node.target, node.op, node.value, env, node)
        self.assign(node.target, kind, env, node)

    def visit_For(self, node: ast.For | ast.AsyncFor, env: dict[str, str | None]) -> None:
        self.eval(node.iter, env)
        names = [n.id for n in walk(node.target) if isinstance(n, ast.Name)]
        for name in names:
            env[name] = None
        self.loops.append(names)
        self.block(node.body, env)
        self.loops.pop()
        self.block(node.orelse, env)

    visit_AsyncFor = visit_For

    def visit_While(self, node: ast.While, env: dict[str, str | None]) -> None:
        self.eval(node.test, env)
        self.block(node.body, env)
        self.block(node.orelse, env)

    def visit_With(self, node: ast.With | ast.AsyncWith, env: dict[str, str | None]) -> None:
        for item in node.items:
            self.eval(item.context_expr, env)
        self.block(node.body, env)

    visit_AsyncWith = visit_With

    def visit_Try(self, node: ast.Try, env: dict[str, str | None]) -> None:
        self.block(node.body, env)
        for handler in node.handlers:
            self.block(handler.body, env)
        self.block(node.orelse, env)
        self.block(node.finalbody, env)

    visit_TryStar = visit_Try  # Python 3.11+: `try: ... except* ...`, the same fields

    def visit_Expr(self, node: ast.Expr | ast.Return, env: dict[str, str | None]) -> None:
        if node.value is not None:
            self.eval(node.value, env)

    visit_Return = visit_Expr

    def visit_FunctionDef(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, env: dict[str, str | None]
    ) -> None:
        saved = (self.loops, self.func_args)
        self.loops = []
        self.run_function(node)
        self.loops, self.func_args = saved

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If, env: dict[str, str | None]) -> None:
        tested = self.d2t_test(node.test)
        self.eval(node.test, env)
        if tested is not None:
            tested = tested.union(*(self.derived.get(n, set()) for n in tested))
        if tested is None:
            self.block(node.body, env)
            self.block(node.orelse, env)
            return
        loaded = []
        for names in reversed(self.loops):
            if tested & set(names):
                loaded = [n for n in names if n not in tested]
                break
        if not loaded:
            loaded = [a for a in self.func_args if a not in tested]
        saved = {n: env.get(n) for n in loaded}
        for n in loaded:
            env[n] = RAW
        self.event(node, "source", "d2t", "branch on a checkpoint name containing d2t")
        self.block(node.body, env)
        for n, kind in saved.items():
            env[n] = kind
        self.block(node.orelse, env)

    def d2t_test(self, test: ast.AST) -> set[str] | None:
        """The variables compared by a positive test on a d2t name (`"d2t" in name`...)."""
        names: set[str] = set()
        for node in walk(test):
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                return None
            if isinstance(node, ast.Compare):
                if not all(isinstance(op, (ast.In, ast.Eq)) for op in node.ops):
                    continue
                parts = [node.left, *node.comparators]
                consts = [
                    n
                    for p in parts
                    for n in walk(p)
                    if isinstance(n, ast.Constant) and _is_d2t_string(n.value, self.d2t_names)
                ]
                if consts:
                    for p in parts:
                        names |= names_in(p)
            elif isinstance(node, ast.Call):
                func = node.func
                attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if attr in (
                    "endswith",
                    "startswith",
                    "__contains__",
                    "search",
                    "match",
                    "fullmatch",
                ):
                    if any(_is_d2t_string(_str_const(a), self.d2t_names) for a in node.args):
                        if isinstance(func, ast.Attribute):
                            names |= names_in(func.value)
                        for a in node.args:
                            names |= names_in(a)
        names -= {"re"}
        return names or None

    def assign(self, target: ast.AST, kind: str | None, env: dict, stmt: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if target.id in self.d2t_names and kind is None:
                env.pop(target.id, None)  # a variable named d2t holds d2t
            else:
                env[target.id] = kind
        elif isinstance(target, ast.Attribute):
            self.eval(target.value, env)
            attr = target.attr
            if isinstance(target.value, ast.Name) and target.value.id in ("self", "cls"):
                if attr in self.d2t_names:
                    value = getattr(stmt, "value", None)
                    if isinstance(value, ast.Constant) and value.value is None:
                        self.event(stmt, "drop", attr, "sets d2t to None", [attr])
                    return  # the d2t parameter itself: RAW by name whatever it is given
                previous = self.unit.attrs.get(attr)
                self.unit.attrs[attr] = kind
                if kind == RAW:
                    role = "store"
                    self.event(stmt, role, attr, "stores the loaded d2t as is", [attr])
                elif kind == CONV:
                    self.event(stmt, "read", attr, "stores arange + d2t", [attr])
                elif previous is not None and kind is None:
                    self.unit.attrs[attr] = previous  # e.g. `self.x = None` before loading
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.assign(elt, None, env, stmt)
        elif isinstance(target, ast.Subscript):
            self.eval(target, env)

    # ----------------------------------------------------------------- expressions
    def eval(self, node: ast.AST | None, env: dict[str, str | None]) -> str | None:
        return None if node is None else self.visit(node, env)

    def visit_Name(self, node: ast.Name, env: dict[str, str | None]) -> str | None:
        if node.id in env:
            return env[node.id]
        if node.id in self.d2t_names:
            self.event(node, "read", node.id, "reads d2t", [node.id])
            return RAW
        return None

    def visit_Attribute(self, node: ast.Attribute, env: dict[str, str | None]) -> str | None:
        base = self.eval(node.value, env)
        if node.attr in self.d2t_names:
            self.event(node, "read", node.attr, "reads d2t", [node.attr])
            return RAW
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            return self.unit.attrs.get(node.attr)
        if node.attr in ("data", "T", "mT") and base is not None:
            return base
        return None

    def visit_BinOp(self, node: ast.BinOp, env: dict[str, str | None]) -> str | None:
        return self.binop(node.left, node.op, node.right, env, node)

    def visit_IfExp(self, node: ast.IfExp, env: dict[str, str | None]) -> str | None:
        self.eval(node.test, env)
        a, b = self.eval(node.body, env), self.eval(node.orelse, env)
        return a if a is not None else b

    def visit_NamedExpr(self, node: ast.NamedExpr, env: dict[str, str | None]) -> str | None:
        kind = self.eval(node.value, env)
        env[node.target.id] = kind
        return kind

    def generic_expr(self, node: ast.AST, *context: Any) -> str | None:
        """Any other expression: no kind of its own; what its parts do with d2t is recorded."""
        env = context[0]
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.eval(child, env)
        return None

    def is_arange_call(self, node: ast.Call) -> bool:
        func = node.func
        if isinstance(func, ast.Name):
            return func.id in self.aranges
        return isinstance(func, ast.Attribute) and func.attr == "arange"

    def visit_Call(self, node: ast.Call, env: dict[str, str | None]) -> str | None:
        if self.is_arange_call(node):
            return self.arange_call(node, env)
        func = node.func
        arg_kinds = [self.eval(a, env) for a in node.args]
        kw_kinds = [self.eval(k.value, env) for k in node.keywords]
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        recv = self.callee(func, env)
        if self.reads_d2t_by_key(node, name):
            self.event(node, "source", "d2t", "reads the d2t tensor by key")
            return RAW
        if self.stores_attribute(node, name, arg_kinds, env):
            return None
        if _is_add_call(node, name):
            return self.add_call(node, recv, arg_kinds, env)
        if isinstance(func, ast.Attribute) and name in _PASSTHROUGH_METHODS and recv is not None:
            return recv
        if name in _PASSTHROUGH_FUNCS and arg_kinds:
            return arg_kinds[0]
        self.use(node, name, arg_kinds, kw_kinds, recv, env)
        return None

    def arange_call(self, node: ast.Call, env: dict[str, str | None]) -> str:
        for a in [*node.args, *(k.value for k in node.keywords)]:
            self.eval(a, env)
        return ARANGE

    def callee(self, func: ast.expr, env: dict[str, str | None]) -> str | None:
        """The kind of a method's receiver (None for a plain function)."""
        if isinstance(func, ast.Attribute):
            return self.eval(func.value, env)
        if not isinstance(func, ast.Name):
            self.eval(func, env)
        return None

    def reads_d2t_by_key(self, node: ast.Call, name: str) -> bool:
        """`state_dict.pop("d2t")`, `f.get_tensor("d2t")`, `getattr(m, "d2t")`..."""
        if name not in _KEYED_GETTERS or not node.args:
            return False
        key = _str_const(node.args[0])
        if name == "getattr" and len(node.args) > 1:
            key = _str_const(node.args[1])
        return key is not None and _is_d2t_string(key, self.d2t_names)

    def stores_attribute(
        self, node: ast.Call, name: str, arg_kinds: list[str | None], env: dict[str, str | None]
    ) -> bool:
        """self.register_buffer("x", value) / setattr(self, "x", value): an attribute store."""
        if name not in _SETTERS or len(node.args) < 2:
            return False
        args = node.args[1:] if name == "setattr" else node.args
        if len(args) < 2:  # setattr(self, "x") is not a store (and fails when it runs)
            return False
        holder = node.args[0] if name == "setattr" else getattr(node.func, "value", None)
        attr = _str_const(args[0])
        kind = arg_kinds[node.args.index(args[1])]
        if not (attr and isinstance(holder, ast.Name) and holder.id in ("self", "cls")):
            return False
        target = ast.Attribute(value=holder, attr=attr, ctx=ast.Store())
        ast.copy_location(target, node)
        self.assign(target, kind, env, node)
        return True

    def add_call(
        self, node: ast.Call, recv: str | None, arg_kinds: list[str | None], env: dict
    ) -> str | None:
        """torch.add(a, b) / a.add(b) (see _is_add_call)."""
        if len(node.args) == 2:
            a, b = node.args
            return self.combine_add(a, b, arg_kinds[0], arg_kinds[1], node, env)
        func = node.func
        assert isinstance(func, ast.Attribute)
        return self.combine_add(func.value, node.args[0], recv, arg_kinds[0], node, env)

    def use(
        self,
        node: ast.Call,
        name: str,
        arg_kinds: list[str | None],
        kw_kinds: list[str | None],
        recv: str | None,
        env: dict[str, str | None],
    ) -> None:
        """A call that returns no d2t kind: what it does with a d2t it is given."""
        raw_arg = RAW in [*arg_kinds, *kw_kinds]
        func = node.func
        if name in _INDEX_METHODS and raw_arg:
            self.event(node, "direct", "d2t", f"uses d2t as indices ({name})")
        elif name in _COPY_INTO_METHODS and RAW in arg_kinds and isinstance(func, ast.Attribute):
            self.copy_into(func, node, env)
        elif name not in _HARMLESS_CALLS and (raw_arg or recv == RAW):
            self.event(node, "unknown", "d2t", "passes d2t to %s()" % (name or "a call"))

    def copy_into(self, func: ast.Attribute, node: ast.Call, env: dict[str, str | None]) -> None:
        """`self.x.copy_(d2t)` / `self.x.data.copy_(d2t)`: stores the raw d2t in self.x."""
        holder = func.value
        while isinstance(holder, ast.Attribute) and holder.attr == "data":
            holder = holder.value
        if (
            isinstance(holder, ast.Attribute)
            and isinstance(holder.value, ast.Name)
            and holder.value.id in ("self", "cls")
        ):
            self.assign(holder, RAW, env, node)

    def binop(self, left, op, right, env, node) -> str | None:
        lk, rk = self.eval(left, env), self.eval(right, env)
        if isinstance(op, ast.Add):
            return self.combine_add(left, right, lk, rk, node, env)
        if RAW in (lk, rk):
            self.event(node, "unknown", "d2t", f"combines d2t with {type(op).__name__}")
            return None
        if ARANGE in (lk, rk):
            return ARANGE
        return None

    def combine_add(self, left, right, lk, rk, node, env) -> str | None:
        kinds = {lk, rk}
        if kinds == {RAW, ARANGE}:
            attrs = {n.attr for n in walk(node) if isinstance(n, ast.Attribute)}
            attrs |= names_in(node)
            self.event(node, "offsets", "d2t", "adds an arange to d2t", attrs)
            return CONV
        if RAW in kinds:
            # idx + d2t[idx]: per-element offsets
            for a, b in ((left, right), (right, left)):
                if isinstance(a, ast.Subscript) and ast.dump(a.slice) == ast.dump(b):
                    if self.eval_quiet(a.value, env) == RAW:
                        attrs = {n.attr for n in walk(a) if isinstance(n, ast.Attribute)}
                        self.event(node, "offsets", "d2t", "adds ids to d2t[ids]", attrs)
                        return CONV
            if kinds == {RAW}:
                self.event(node, "unknown", "d2t", "adds d2t to d2t")
                return None
            self.event(node, "unknown", "d2t", "adds d2t to something that is not an arange")
            return None
        if ARANGE in kinds:
            return ARANGE
        if CONV in kinds:
            return CONV
        return None

    def eval_quiet(self, node: ast.AST, env: dict[str, str | None]) -> str | None:
        saved, self.record = self.record, False
        try:
            return self.eval(node, dict(env))
        finally:
            self.record = saved

    def visit_Subscript(self, node: ast.Subscript, env: dict[str, str | None]) -> str | None:
        value = self.eval(node.value, env)
        index = node.slice
        if _is_d2t_string(_str_const(index), self.d2t_names) and isinstance(node.ctx, ast.Load):
            self.event(node, "source", "d2t", "reads the d2t tensor by key")
            return RAW
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        kinds = [self.eval(p, env) for p in parts]
        if RAW in kinds and value != RAW:
            self.event(node, "direct", "d2t", "indexes with d2t as if it held target ids")
        if value in (RAW, ARANGE, CONV):
            return value
        return None


# ---------------------------------------------------------------------------------- analysis
def _units(tree: ast.Module) -> list[_Unit]:
    units = []
    module_funcs: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(b) for b in node.bases]
            units.append(_Unit(node.name, node, bases))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            module_funcs.append(node)
    if module_funcs:
        mod = ast.Module(body=module_funcs, type_ignores=[])
        units.append(_Unit("<module>", mod, []))
    return units


def _interpret(unit: _Unit, d2t_names: set[str], aranges: set[str]) -> None:
    funcs = [n for n in unit.node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    interp = _Interp(unit, d2t_names, aranges)
    for _ in range(4):  # attribute kinds flow between methods: iterate to a fixed point
        before = dict(unit.attrs)
        unit.events = []
        for fn in funcs:
            interp.method = fn.name
            interp.run_function(fn)
        if unit.attrs == before:
            break


def _raw_sink_stores(unit: _Unit, offset_attrs: set[str]) -> list[_Event]:
    """Direct uses: the raw d2t stored, and kept, in an attribute that holds target ids."""
    sinks = set(TARGET_ID_SINKS)
    return [
        _Event(e.line, "direct", e.symbol, "stores the raw d2t as target ids", e.attrs, e.method)
        for e in unit.events
        if e.role == "store"
        and e.symbol in sinks
        and unit.attrs.get(e.symbol) == RAW
        and e.symbol not in offset_attrs
    ]


def _handling(offsets: list[_Event], direct: list[_Event], reads: list[_Event]) -> str:
    if offsets and not direct:
        return OFFSETS
    if direct and not offsets:
        return DIRECT
    if offsets or direct or reads:
        return UNKNOWN
    return NONE


def _run_unit(unit: _Unit, d2t_names: set[str], aranges: set[str]) -> None:
    _interpret(unit, d2t_names, aranges)
    offsets = [e for e in unit.events if e.role == "offsets"]
    offset_attrs = set().union(*(e.attrs for e in offsets)) if offsets else set()
    direct = [e for e in unit.events if e.role == "direct"]
    direct += _raw_sink_stores(unit, offset_attrs)
    unit.events.extend(d for d in direct if d.role == "direct" and d not in unit.events)
    reads = [e for e in unit.events if e.role in ("source", "read", "store", "unknown")]
    unit.handling = _handling(offsets, direct, reads)


def _line_text(lines: list[str], n: int) -> str:
    return lines[n - 1].strip() if 0 < n <= len(lines) else ""


def _evidence(events: list[_Event], lines: list[str], roles: tuple[str, ...]) -> list[dict]:
    out, seen = [], set()
    for e in sorted(events, key=lambda e: (e.line, e.role)):
        if e.role not in roles or (e.line, e.role) in seen:
            continue
        seen.add((e.line, e.role))
        out.append(
            {
                "line": e.line,
                "text": _line_text(lines, e.line),
                "symbol": e.symbol,
                "role": e.role,
                "note": e.note,
            }
        )
    return out[:_MAX_EVIDENCE]


def classify_source(source: str, path: str = "<source>") -> dict[str, Any]:
    """Classify how the draft-model file at `path` handles d2t (see the module docstring).

    Returns {"path", "d2t_handling", "architectures", "entry_classes", "classes", "evidence",
    "reason"}; each class is {"name", "line", "bases", "d2t_handling", "registered",
    "draft_like", "inherited_from"} and each evidence item {"line", "text", "symbol", "role",
    "note"} with role in source/read/store/offsets/direct/unknown.
    """
    tree = parse(source)
    if tree is None:
        return _unparsed(source, path, "the file does not parse (syntax, size or nesting)")
    try:
        return _classify_tree(tree, source, path)
    except RecursionError:  # hostile nesting the parser accepted but a walk cannot follow
        return _unparsed(source, path, "the file nests too deeply to analyse")


def _unparsed(source: str, path: str, reason: str) -> dict[str, Any]:
    return {
        "path": path,
        "d2t_handling": UNKNOWN,
        "architectures": [],
        "entry_classes": [],
        "classes": [],
        "evidence": evidence_lines(source, ["d2t", "draft_id_to_target_id", "hot_token_id"]),
        "reason": reason,
    }


def _inherit_handling(units: list[_Unit]) -> None:
    """A subclass that does not touch d2t inherits its nearest base's handling (in this file)."""
    by_name = {u.name: u for u in units}
    for unit in units:
        if unit.handling != NONE:
            continue
        todo, seen = list(unit.bases), set()
        while todo:
            base = todo.pop(0).split(".")[-1]
            if base in seen or base not in by_name:
                continue
            seen.add(base)
            if by_name[base].handling != NONE:
                unit.handling = by_name[base].handling
                unit.inherited_from = base
                break
            todo.extend(by_name[base].bases)


def _draft_like(unit: _Unit) -> bool:
    """Named like a draft head (not a part of one), or a loader that handles d2t."""
    has_loader = any(
        isinstance(n, ast.FunctionDef) and n.name in ("load_weights", "compute_logits")
        for n in unit.node.body
    )
    return bool(_DRAFT_WORDS_RE.search(unit.name) and not _PART_SUFFIX_RE.search(unit.name)) or (
        unit.handling != NONE and has_loader
    )


def _stores_only(unit: _Unit) -> bool:
    """The class loads the checkpoint's d2t, keeps it (never sets it to None) and never uses it
    itself: a base or mixin applies it."""
    roles = {e.role for e in unit.events}
    return unit.handling == UNKNOWN and "source" in roles and roles <= {"source", "read", "store"}


def _applies(unit: _Unit, lines: list[str]) -> list[dict[str, Any]]:
    """The class's own lines that apply d2t (as offsets or as target ids), by method."""
    if unit.handling not in (OFFSETS, DIRECT) or unit.inherited_from is not None:
        return []
    role = "offsets" if unit.handling == OFFSETS else "direct"
    return [
        {"line": e.line, "text": _line_text(lines, e.line), "method": e.method, "role": role}
        for e in sorted(unit.events, key=lambda e: e.line)
        if e.role == role
    ][:_MAX_EVIDENCE]


def _class_rows(units: list[_Unit], entries: list[str], lines: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "name": unit.name,
            "line": unit.node.lineno,
            "bases": unit.bases,
            "d2t_handling": unit.handling,
            "registered": unit.name in entries,
            "draft_like": _draft_like(unit),
            "inherited_from": unit.inherited_from,
            "methods": [
                n.name
                for n in unit.node.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            ],
            "stores_only": _stores_only(unit),
            "applies": _applies(unit, lines),
        }
        for unit in units
        if unit.name != "<module>"
    ]


def _file_handling(own: list[_Unit]) -> str:
    """The classes' own handlings agree on one, else unknown; none when none reads d2t."""
    handlings = {u.handling for u in own} - {NONE}
    if not handlings:
        return NONE
    if len(handlings) == 1:
        return handlings.pop()
    return UNKNOWN


def _evidence_roles(handling: str) -> tuple[str, ...]:
    if handling == OFFSETS:
        return ("source", "offsets")
    if handling == DIRECT:
        return ("source", "direct")
    return ("source", "read", "store", "offsets", "direct", "unknown")


def _classify_tree(tree: ast.Module, source: str, path: str) -> dict[str, Any]:
    lines = source.splitlines()
    units = _units(tree)
    # most model files never name d2t or a target-id sink: nothing in them to interpret
    if any(name in source for name in (*D2T_NAMES, *TARGET_ID_SINKS)):
        d2t_names = set(D2T_NAMES) | _renamed_d2t(tree)
        aranges = _arange_aliases(tree)
        for unit in units:
            _run_unit(unit, d2t_names, aranges)
    _inherit_handling(units)
    entries = entry_class_names(tree)
    classes = _class_rows(units, entries, lines)
    architectures = list(entries) or [c["name"] for c in classes if c["draft_like"]]

    own = [u for u in units if u.inherited_from is None]
    events = [e for u in own for e in u.events]
    handling = _file_handling(own)
    evidence = _evidence(events, lines, _evidence_roles(handling))
    reason = _reason(handling, evidence, units)
    return {
        "path": path,
        "d2t_handling": handling,
        "architectures": architectures,
        "entry_classes": entries,
        "classes": classes,
        "evidence": evidence,
        "reason": reason,
        "top_level_handling": next((u.handling for u in units if u.name == "<module>"), NONE),
    }


def _reason(handling: str, evidence: list[dict], units: list[_Unit]) -> str:
    def first(role: str) -> dict | None:
        return next((e for e in evidence if e["role"] == role), None)

    if handling == NONE:
        return "The file never reads d2t, so it maps draft ids to target ids some other way."
    if handling == OFFSETS:
        e = first("offsets")
        assert e is not None
        return (
            f"Line {e['line']} adds an arange to the loaded d2t (`{e['text']}`), so d2t is "
            "treated as offsets (target = draft + d2t[draft])."
        )
    if handling == DIRECT:
        e = first("direct")
        assert e is not None
        return (
            f"Line {e['line']} uses the loaded d2t as target ids without adding an arange "
            f"(`{e['text']}`), which is wrong for EAGLE-3 checkpoints that store offsets."
        )
    mixed = sorted({u.name for u in units if u.handling in (OFFSETS, DIRECT)})
    if len(mixed) > 1:
        return (
            "Classes in this file disagree: "
            + ", ".join(
                f"{u.name} treats d2t as {u.handling}"
                for u in units
                if u.handling in (OFFSETS, DIRECT)
            )
            + "."
        )
    e = evidence[0] if evidence else None
    where = f" (first at line {e['line']}: `{e['text']}`)" if e else ""
    return (
        f"The file reads d2t{where} but neither an arange addition nor a direct use as target "
        "ids was recognised; read the lines."
    )


# ------------------------------------------------------------------------------- other helpers
def evidence_lines(
    source: str, symbols: Iterable[str] = EVIDENCE_SYMBOLS, context: int = 1
) -> list[dict[str, Any]]:
    """Lines mentioning any of `symbols` (as whole identifiers or in strings), with context.

    Each item: {"line", "text", "symbol", "symbols", "context": [{"line", "text"}...]}.
    """
    symbols = list(symbols)
    patterns = [(s, _identifier_re(s)) for s in symbols]
    lines = source.splitlines()
    out = []
    for i in _lines_naming(source, lines, symbols):
        text = lines[i - 1]
        hits = [s for s, rx in patterns if rx.search(text)]
        if not hits:
            continue
        lo, hi = max(1, i - context), min(len(lines), i + context)
        out.append(
            {
                "line": i,
                "text": text.rstrip(),
                "symbol": hits[0],
                "symbols": hits,
                "context": [{"line": j, "text": lines[j - 1].rstrip()} for j in range(lo, hi + 1)],
            }
        )
    return out


@functools.lru_cache(maxsize=64)
def _identifier_re(symbol: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(symbol) + r"(?![A-Za-z0-9_])")


def _lines_naming(source: str, lines: list[str], symbols: list[str]) -> list[int]:
    """The 1-based numbers of the lines where any of `symbols` occurs, found by one search of
    the text (a search of every line for every symbol cost most of a locate over 75 files).
    The caller's whole-identifier test decides; this only narrows the lines it runs on."""
    if not any(symbol in source for symbol in symbols):
        return []
    starts, offset = [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1  # the one "\n" each line is joined with below
    anyone = re.compile("|".join(re.escape(symbol) for symbol in symbols))
    return sorted(
        {bisect.bisect_right(starts, hit.start()) for hit in anyone.finditer("\n".join(lines))}
    )


def registry_architectures(
    source: str, only: Iterable[str] | None = None, engine: str | None = None
) -> dict[str, tuple]:
    """Architecture -> (module, class) from a registry file's source, by the engine's rule
    (its profile's registry_entries; remotedbg.engines.vllm.registry_entries when unnamed)."""
    tree = parse(source)
    if tree is None:
        raise SyntaxError("the registry file does not parse")
    if engine is not None and only is None:
        return engine_profile(engine).registry_entries(tree)
    return registry_entries(tree, only)


def _registry_candidates(module: str, cls: str, models: list[dict[str, Any]]) -> list[dict]:
    """Draft files a registry entry can mean: a short module name is a file in the models dir
    (`llama_eagle3`); a full one (`vllm.models.muse_spark.common.dspark`) is that file, or for a
    package (`vllm.models.deepseek_v4`) a file below it that defines the class."""
    if "." not in module:
        return [m for m in models if _module_of(m["path"]) == module]
    # a plugin's module, its path relative to the site-packages
    whole = [m for m in models if m["path"] in (module.replace(".", "/") + ".py",
                                                module.replace(".", "/") + "/__init__.py")]
    if whole:
        return whole
    rel = module.split(".", 1)[1].replace(".", "/")
    exact = [m for m in models if m["path"].replace("\\", "/").endswith(rel + ".py")]
    if exact:
        return exact
    below = [m for m in models if ("/" + rel + "/") in "/" + m["path"].replace("\\", "/")]
    defining = [m for m in below if any(c["name"] == cls for c in m.get("classes", []))]
    return sorted(defining or below, key=lambda m: m["path"])


def _module_of(path: str) -> str:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    return base[:-3] if base.endswith(".py") else base


def resolve_architectures(
    architectures: Iterable[str],
    draft_models: Iterable[dict[str, Any]],
    registry: dict[str, tuple] | None = None,
) -> list[dict[str, Any]]:
    """Which scanned draft-model file and class will load each checkpoint architecture.

    `draft_models` are `classify_source` results (each with "path"). The lookup order is the
    engine's: vLLM's registry (arch -> module, class), then SGLang's EntryClass, then a class of
    that name. Each result: {"architecture", "resolved", "path", "class", "d2t_handling", "via"}.
    """
    models = list(draft_models)
    out = []
    for arch in architectures:
        hit: dict[str, Any] | None = None
        if registry and arch in registry:
            module, cls = registry[arch]
            for m in _registry_candidates(module, cls, models):
                hit = _hit(arch, m, cls, "registry")
                break
            if hit is None:
                hit = {
                    "architecture": arch,
                    "resolved": False,
                    "path": None,
                    "class": cls,
                    "module": module,
                    "d2t_handling": None,
                    "via": "registry",
                }
        if hit is None:
            for m in models:
                if arch in m.get("entry_classes", []):
                    hit = _hit(arch, m, arch, "EntryClass")
                    break
        if hit is None:
            for m in models:
                if any(c["name"] == arch for c in m.get("classes", [])):
                    hit = _hit(arch, m, arch, "class")
                    break
        out.append(
            hit
            or {
                "architecture": arch,
                "resolved": False,
                "path": None,
                "class": None,
                "d2t_handling": None,
                "via": None,
            }
        )
    return out


def _hit(arch: str, model: dict[str, Any], cls: str, via: str) -> dict[str, Any]:
    handling = model.get("d2t_handling")
    found = next((c for c in model.get("classes", []) if c["name"] == cls), None)
    if found is not None:
        handling = found["d2t_handling"]
    return {
        "architecture": arch,
        "resolved": found is not None or via == "EntryClass",
        "path": model["path"],
        "class": cls,
        "d2t_handling": handling,
        "via": via,
    }
