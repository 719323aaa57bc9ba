"""How a target model chooses the hidden states it feeds an EAGLE-3 draft (pure).

The target's own method (SGLang `set_eagle3_layers_to_capture(layer_ids)`, vLLM
`get_eagle3_aux_hidden_state_layers()` / the SupportsEagle3 default) is evaluated by a small
abstract interpreter over its AST, for given draft-config ids and the target config: every path
through undecidable branches is followed, and the result is only taken when all paths agree.

Layer-id conventions (SGLang's, stated in its model files): a model with
`layers_to_capture = [c, ...]` captures the INPUT of layer c (hidden + residual before the layer
runs), i.e. the OUTPUT of layer c - 1; trainers (and `eagle_aux_hidden_state_layer_ids`) name layer
OUTPUTS, hence the `val + 1` in most setters.

A multimodal wrapper (Kimi-K2.5, Qwen-VL, ...) builds its language model in `__init__`
(`self.language_model = DeepseekV3ForCausalLM(config.text_config, ...)`, or through vLLM's
registry: `init_vllm_registered_model(hf_config=config.text_config, architectures=[...])`) and
its capture methods call the language model's. Such a member is modelled as another instance of
the class it is built from, with the config it is built with; a call of a capture method on it
runs that class's method, wherever (in whichever file read) the class is defined.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from remotedbg.analysis.interp import (
    UNKNOWN,
    Config,
    Decisions,
    TooManyPaths,
    Unknown,
    Visitor,
    builtins,
    explore,
    is_unknown,
    known,
    ops,
)
from remotedbg.analysis.pysource import ClassRef, SourceIndex, names_in, parse, walk
from remotedbg.engines.code_markers import CAPTURE_GETTERS, CAPTURE_METHODS
from remotedbg.engines.sglang import entry_class_names
from remotedbg.engines.text_config import text_config, text_config_key

CAPTURE_ATTRS = ("layers_to_capture", "aux_hidden_state_layers")
DELEGATE_METHODS = ("set_eagle3_layers_to_capture", "set_aux_hidden_state_layers")
MAX_PATHS = 64
MAX_DEPTH = 4  # capture methods running inside one another
CONFIG_ARGS = ("hf_config", "config")  # the keyword a member's constructor takes its config by
LAYER_LISTS = ("layers", "h", "blocks")  # self.<list> a model keeps its decoder layers in


@dataclass
class _Context:
    """What one evaluation can look classes up in: the files read, vLLM's registry (arch ->
    (module, class)), and which classes the captured layers came from."""

    index: SourceIndex | None = None
    resolve_architecture: Callable[[str], ClassRef | None] | None = None
    layers_of: list[ClassRef] = field(default_factory=list)
    members: dict[tuple[int, str], Any] = field(default_factory=dict)
    running: list[tuple[int, str]] = field(default_factory=list)  # (instance, method) being run


class _Self:
    """A model instance: its config, `model.layers` as many as the config says, and (when its
    class is known) the members its `__init__` builds."""

    def __init__(self, config: dict, ref: ClassRef | None = None, ctx: _Context | None = None):
        self.config = Config(config)
        self.ref = ref
        self.ctx = ctx or _Context()
        layers = config.get("num_hidden_layers")
        self.layers = list(range(layers)) if isinstance(layers, int) and layers < 4096 else UNKNOWN

    def attribute(self, name: str) -> Any:
        if name == "config":
            return self.config
        if name == "model":
            inner = self.member("model")
            return inner if isinstance(inner, _Self) else self  # model.layers: same config
        if name == "layers":
            if self.ref is not None:
                self.ctx.layers_of.append(self.ref)
            return self.layers
        return self.member(name)

    def member(self, name: str) -> Any:
        """`self.<name>` as `__init__` builds it (another _Self), else UNKNOWN."""
        key = (id(self), name)
        if key not in self.ctx.members:
            self.ctx.members[key] = _build_member(self, name)
        return self.ctx.members[key]

    def has(self, name: str) -> Any:
        if name in ("config", "model", "layers"):
            return True
        if self.ref is not None and self.ctx.index is not None:
            if self.ctx.index.find_method(self.ref, name) or _member_calls(self, name):
                return True
        if name in ("get_language_model", "language_model"):
            return False  # a text-only causal LM
        return UNKNOWN


def _member_calls(owner: _Self, name: str) -> list[tuple[ClassRef, ast.Call]]:
    """`self.<name> = <call>(...)` in the `__init__` of the owner's class or its bases."""
    index = owner.ctx.index
    if owner.ref is None or index is None:
        return []
    found = []
    for cls in index.mro(owner.ref):
        init = _method(cls.node, ("__init__",))
        for node in walk(init) if init is not None else ():
            if (
                isinstance(node, (ast.Assign, ast.AnnAssign))
                and isinstance(node.value, ast.Call)
                and any(_is_self_attr(t, name) for t in _targets(node))
            ):
                found.append((cls, node.value))
        if found:
            return found  # the most derived __init__ that builds it
    return []


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def _is_self_attr(node: ast.AST, name: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == name
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _build_member(owner: _Self, name: str) -> Any:
    """The member as an instance of the class its constructor call names, directly (a class the
    file defines or imports) or through vLLM's registry (`architectures=[...]`), with the config
    it is given (`config.text_config`: `config` in `__init__` is the owner's own config)."""
    built = []
    for cls, call in _member_calls(owner, name):
        ref = _called_class(owner, cls, call)
        config = _member_config(owner, call)
        if ref is None or not isinstance(config, Config):
            return UNKNOWN
        built.append((ref, config))
    if len({(r.module.name, r.node.name, id(c.data)) for r, c in built}) != 1:
        return UNKNOWN
    ref, config = built[0]
    return _Self(config.data, ref, owner.ctx)


def _registry_arch(call: ast.Call) -> str | None:
    """`init_vllm_registered_model(..., architectures=["X"])`: the architecture named."""
    archs = next((k.value for k in call.keywords if k.arg == "architectures"), None)
    if isinstance(archs, ast.List) and archs.elts:
        first = archs.elts[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def registry_members(index: SourceIndex, target: ClassRef) -> list[str]:
    """Architectures the target's `__init__` (or its bases') builds members by through a model
    registry: the files of their classes are needed to follow capture calls into them."""
    out = []
    for cls in index.mro(target):
        init = _method(cls.node, ("__init__",))
        for node in walk(init) if init is not None else ():
            arch = _registry_arch(node) if isinstance(node, ast.Call) else None
            if arch and arch not in out:
                out.append(arch)
    return out


def _called_class(owner: _Self, cls: ClassRef, call: ast.Call) -> ClassRef | None:
    index = owner.ctx.index
    if index is not None and isinstance(call.func, ast.Name):
        ref = index.resolve(cls.module, call.func.id)
        if ref is not None:
            return ref
    arch = _registry_arch(call)
    if arch and owner.ctx.resolve_architecture:
        return owner.ctx.resolve_architecture(arch)
    return None


def _member_config(owner: _Self, call: ast.Call) -> Any:
    node = next((k.value for k in call.keywords if k.arg in CONFIG_ARGS), None)
    if node is None:
        node = _with_hf_config(call)
    if node is None and _passes_vllm_config(call):
        # the engine's config handed on as is: a language model reads its text config from it
        # (vLLM 0.16.0 qwen3_vl_moe.py:355 `hf_config.text_config`, qwen3_moe.py:358
        # `model_config.hf_text_config`), the top-level config for a text-only model
        return Config(text_config(owner.config.data))
    if node is None and call.args:
        node = call.args[0]
    if node is None:
        return owner.config
    return _eval(node, {"self": owner, "config": owner.config})


def _with_hf_config(call: ast.Call) -> ast.expr | None:
    """`vllm_config=vllm_config.with_hf_config(config.text_config, ...)`: the member is built
    with that config (vLLM's Qwen3-VL language model: 0.28.0 model_executor/models/
    qwen3_vl.py:1836-1838; 0.33.0 :2042-2049)."""
    given = next((k.value for k in call.keywords if k.arg == "vllm_config"), None)
    if (isinstance(given, ast.Call) and isinstance(given.func, ast.Attribute)
            and given.func.attr == "with_hf_config" and given.args):  # fmt: skip
        return given.args[0]
    return None


def _passes_vllm_config(call: ast.Call) -> bool:
    given = next((k.value for k in call.keywords if k.arg == "vllm_config"), None)
    return isinstance(given, ast.Name) and given.id == "vllm_config" and not call.args


class _Unsupported(Exception):
    pass


def _one(convert: Callable[[Any], Any]) -> Callable[[list], Any]:
    return lambda args: convert(args[0]) if len(args) == 1 else UNKNOWN


# the builtins capture code calls, on whatever Python takes (a tuple is a list here: capture
# values are compared as lists)
_BUILTINS = {
    "len": _one(len),
    "list": _one(list),
    "sorted": _one(sorted),
    "int": _one(int),
    "tuple": _one(list),
}


class _Expressions(Visitor):
    """A small evaluator for the expressions of set_eagle3_layers_to_capture."""

    def visit_Constant(self, node: ast.Constant, env: dict[str, Any]) -> Any:
        return node.value

    def visit_Name(self, node: ast.Name, env: dict[str, Any]) -> Any:
        return env.get(node.id, UNKNOWN)

    def visit_Attribute(self, node: ast.Attribute, env: dict[str, Any]) -> Any:
        base = self.visit(node.value, env)
        if isinstance(base, _Self):
            return base.attribute(node.attr)
        if isinstance(base, Config):
            return base.get(node.attr)
        return Unknown(f"`{ast.unparse(node)[:60]}` is not modelled", node.lineno)

    def visit_List(self, node: ast.List | ast.Tuple, env: dict[str, Any]) -> Any:
        items = [self.visit(e, env) for e in node.elts]
        return list(items) if known(*items) else UNKNOWN

    visit_Tuple = visit_List

    def visit_ListComp(self, node: ast.ListComp, env: dict[str, Any]) -> Any:
        if len(node.generators) != 1:
            return self.generic_expr(node, env)
        gen = node.generators[0]
        seq = self.visit(gen.iter, env)
        if not isinstance(seq, (list, tuple)) or not isinstance(gen.target, ast.Name):
            return UNKNOWN
        out = []
        for item in seq:
            local = dict(env, **{gen.target.id: item})
            conds = [self.visit(c, local) for c in gen.ifs]
            if not known(*conds):
                return UNKNOWN
            if all(conds):
                value = self.visit(node.elt, local)
                if is_unknown(value):
                    return UNKNOWN
                out.append(value)
        return out

    def visit_BinOp(self, node: ast.BinOp, env: dict[str, Any]) -> Any:
        left, right = self.visit(node.left, env), self.visit(node.right, env)
        if not known(left, right):
            return UNKNOWN
        return ops.arithmetic(node.op, left, right)

    def visit_UnaryOp(self, node: ast.UnaryOp, env: dict[str, Any]) -> Any:
        operand = self.visit(node.operand, env)
        if is_unknown(operand):
            return UNKNOWN
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub) and isinstance(operand, (int, float)):
            return -operand
        return UNKNOWN

    def visit_BoolOp(self, node: ast.BoolOp, env: dict[str, Any]) -> Any:
        is_and = isinstance(node.op, ast.And)
        saw_unknown = False
        for value_node in node.values:
            value = self.visit(value_node, env)
            if is_unknown(value):
                saw_unknown = True
                continue
            if is_and and not value:
                return value
            if not is_and and value:
                return value
        return UNKNOWN if saw_unknown else (True if is_and else False)

    def visit_Compare(self, node: ast.Compare, env: dict[str, Any]) -> Any:
        left = self.visit(node.left, env)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = self.visit(comp, env)
            if not known(left, right):
                return UNKNOWN
            try:
                ok = ops.compare(op, left, right)
            except TypeError:
                return UNKNOWN
            if is_unknown(ok):
                return UNKNOWN
            if not ok:
                return False
            left = right
        return True

    def visit_IfExp(self, node: ast.IfExp, env: dict[str, Any]) -> Any:
        test = self.visit(node.test, env)
        if is_unknown(test):
            return UNKNOWN
        return self.visit(node.body if test else node.orelse, env)

    def visit_Subscript(self, node: ast.Subscript, env: dict[str, Any]) -> Any:
        base = self.visit(node.value, env)
        index = node.slice
        if isinstance(index, ast.Slice):
            lo = self.visit(index.lower, env) if index.lower else None
            hi = self.visit(index.upper, env) if index.upper else None
            if isinstance(base, list) and known(lo, hi):
                return base[lo:hi]
            return UNKNOWN
        key = self.visit(index, env)
        if isinstance(base, (list, tuple)) and isinstance(key, int):
            return base[key] if -len(base) <= key < len(base) else UNKNOWN
        return UNKNOWN

    def visit_Call(self, node: ast.Call, env: dict[str, Any]) -> Any:
        if isinstance(node.func, ast.Name):
            args = [self.visit(a, env) for a in node.args]
            return self.named_call(node.func.id, args)
        if isinstance(node.func, ast.Attribute):
            receiver = self.visit(node.func.value, env)
            if isinstance(receiver, _Self):
                return _call_on(receiver, node.func.attr, [self.visit(a, env) for a in node.args])
        return UNKNOWN

    @staticmethod
    def named_call(name: str, args: list[Any]) -> Any:
        if name in _BUILTINS and len(args) == 1:
            return builtins.call(name, args, _BUILTINS)
        if name not in ("getattr", "hasattr") or len(args) < 2:
            return UNKNOWN
        obj, attr = args[0], args[1]
        if isinstance(obj, _Self):
            if name == "hasattr":
                return obj.has(attr)
            value = obj.attribute(attr)
            return value if not is_unknown(value) else (args[2] if len(args) > 2 else UNKNOWN)
        if isinstance(obj, Config):
            if name == "hasattr":
                return attr in obj.data
            return obj.get(attr, args[2] if len(args) > 2 else UNKNOWN)
        return UNKNOWN


_EXPRESSIONS = _Expressions()
_eval = _EXPRESSIONS.visit


def _call_on(receiver: _Self, name: str, args: list[Any]) -> Any:
    """`<model>.<name>(...)` for the calls capture code makes: the language model getter, and
    a capture getter (its return value)."""
    if name == "get_language_model" and not args:
        # vLLM's SupportsMultiModal.get_language_model returns the member built under
        # _mark_language_model (0.33.0 model_executor/models/interfaces.py:270-310), which every
        # wrapper that delegates capture names language_model
        return receiver.member("language_model")
    if name in CAPTURE_GETTERS and not args:
        found = _inner_method(receiver, name)
        if found is None:
            return UNKNOWN
        values = _values_of(receiver, found[1], None)
        return values[0]["value"] if values is not None and len(values) == 1 else UNKNOWN
    return UNKNOWN


def _inner_method(receiver: _Self, name: str) -> tuple[ClassRef, ast.FunctionDef] | None:
    """The member's method, unless it is the one running on that instance (`self.model` is
    `self` when no `__init__` builds a model member) or calls nest too deep."""
    index, running = receiver.ctx.index, receiver.ctx.running
    if receiver.ref is None or index is None or len(running) >= MAX_DEPTH:
        return None
    if (id(receiver), name) in running:
        return None
    return index.find_method(receiver.ref, name)


def _values_of(receiver: _Self, method: ast.FunctionDef, layer_ids: Any) -> list[dict] | None:
    """The capture results of a member's method when its paths agree (None: not evaluable)."""
    receiver.ctx.running.append((id(receiver), method.name))
    try:
        values, _ = _run_method(method, layer_ids, receiver)
    except _Unsupported:
        return None
    finally:
        receiver.ctx.running.pop()
    distinct = {repr(v["value"]) for v in values}
    return values if len(distinct) == 1 else None


def _capture_call(node: ast.AST) -> ast.Call | None:
    """`<something>.set_eagle3_layers_to_capture(x)` (a delegation to the inner model)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in DELEGATE_METHODS:
            return node
    return None


class _PathEnds(Exception):
    """A `return` or `raise`: the path's remaining statements do not run."""


class _Run(_Expressions):
    """One path through a capture method: the decisions forced on its open `if`s, what it
    captures (kind, target, value, line[, value, where]) and whether it raised."""

    def __init__(self, decisions: Decisions, getter: bool) -> None:
        self.decisions = decisions
        self.getter = getter
        self.captures: list[tuple] = []
        self.raised = False

    def block(self, stmts: list[ast.stmt], env: dict[str, Any]) -> None:
        for stmt in stmts:
            self.visit(stmt, env)

    def generic_stmt(self, node: ast.stmt, *context: Any) -> Any:
        raise _Unsupported(f"line {node.lineno}: {type(node).__name__} not evaluated")

    def visit_If(self, node: ast.If, env: dict[str, Any]) -> None:
        test = self.visit(node.test, env)
        if is_unknown(test):  # both ways: explore() runs the method again with each decision
            key = (node.lineno, node.col_offset)
            test = self.decisions.decide(key, f"line {node.lineno}")
        self.block(node.body if test else node.orelse, env)

    def visit_Assign(self, node: ast.Assign | ast.AnnAssign, env: dict[str, Any]) -> None:
        if node.value is None:
            return
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = self.visit(node.value, env)
        for target in targets:
            if isinstance(target, ast.Name):
                env[target.id] = value
            elif isinstance(target, ast.Attribute) and target.attr in CAPTURE_ATTRS:
                self.captures.append(("assign", ast.unparse(target), value, node.lineno))

    visit_AnnAssign = visit_Assign

    def visit_AugAssign(self, node: ast.AugAssign, env: dict[str, Any]) -> None:
        if not isinstance(node.target, ast.Name):
            self.generic_stmt(node)
        current = ast.Name(id=node.target.id, ctx=ast.Load())  # type: ignore[attr-defined]
        env[node.target.id] = self.visit(  # type: ignore[attr-defined]
            ast.BinOp(left=current, op=node.op, right=node.value), env
        )

    def visit_Expr(self, node: ast.Expr | ast.Return, env: dict[str, Any]) -> None:
        call = _capture_call(node.value) if node.value is not None else None
        if call is not None:
            value = self.visit(call.args[0], env) if call.args else None
            capture = ("delegate", ast.unparse(call.func), value, node.lineno)
            self.captures.append(capture + _into_member(call, value, env))
        elif isinstance(node, ast.Return) and node.value is not None and self.getter:
            self.captures.append(("return", "return", self.visit(node.value, env), node.lineno))
        if isinstance(node, ast.Return):
            raise _PathEnds

    visit_Return = visit_Expr

    def visit_Raise(self, node: ast.Raise, env: dict[str, Any]) -> None:
        self.raised = True
        raise _PathEnds

    def visit_Pass(self, node: ast.stmt, env: dict[str, Any]) -> None:
        return None

    visit_Assert = visit_Global = visit_Nonlocal = visit_Import = visit_ImportFrom = visit_Pass


def _into_member(call: ast.Call, value: Any, env: dict[str, Any]) -> tuple:
    """A setter called on a member whose class is known: (what that class's setter captures,
    where), else ()."""
    func = call.func
    assert isinstance(func, ast.Attribute)  # _capture_call matched `<receiver>.<setter>(...)`
    receiver = _eval(func.value, env)
    if not isinstance(receiver, _Self) or receiver.ref is None:
        return ()
    found = _inner_method(receiver, func.attr)
    if found is None:
        return ()
    values = _values_of(receiver, found[1], value)
    if values is None:
        return ()
    cls, method = found
    inner = values[0]
    where = {"class": cls.node.name, "path": cls.module.path, "line": inner["line"],
             "method_line": method.lineno, "member": ast.unparse(func.value)}  # fmt: skip
    if inner.get("delegated"):
        where = inner["delegated"]  # the innermost class that sets the layers
    return (inner["value"], where)


def _run_method(
    method: ast.FunctionDef, layer_ids: Any, model: _Self
) -> tuple[list[Any], list[str]]:
    """Distinct captured values over the method's paths (depth first: the taken side of an open
    `if` before the other), plus notes."""
    params = [a.arg for a in method.args.args]
    start: dict[str, Any] = {}
    if params:
        start[params[0]] = model
    if len(params) > 1 and method.name not in CAPTURE_GETTERS:
        start[params[1]] = layer_ids
    getter = method.name in CAPTURE_GETTERS

    def run(decisions: Decisions) -> _Run:
        path = _Run(decisions, getter)
        try:
            path.block(method.body, dict(start))
        except _PathEnds:
            pass
        return path

    try:
        paths = explore(run, max_paths=MAX_PATHS)
    except TooManyPaths:
        raise _Unsupported("too many branches") from None
    values: list[Any] = []
    notes: list[str] = []
    for p in sorted(paths, key=lambda p: p.order()):
        if not p.result.captures:
            if p.result.raised:
                notes.append("a path raises (the engine refuses this input)")
            continue
        kind, target, value, line, *member = p.result.captures[-1]
        item = {"kind": kind, "target": target, "value": value, "line": line}
        if member:
            item["value"], item["delegated"] = member
        if item not in values:
            values.append(item)
    return values, notes


def _as_int_list(value: Any) -> list[int] | None:
    if isinstance(value, (list, tuple)) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return list(value)
    return None


def find_capture_method(
    index: SourceIndex, target: ClassRef, methods: tuple[str, ...] = CAPTURE_METHODS
) -> dict[str, Any]:
    """The capture method the target class has (itself or a base, across the files read):
    {"class", "method", "where", "node"}; or {"missing": True, "unresolved": [bases]} when no
    class in its hierarchy defines one (`unresolved` lists engine bases whose code was not
    read, in which case the answer is not final)."""
    for name in methods:
        found = index.find_method(target, name)
        if found is not None:
            cls, func = found
            return {
                "class": cls.node.name,
                "method": name,
                "where": f"{cls.module.path}:{func.lineno}",
                "node": func,
            }
    unresolved = []
    for cls in index.mro(target):
        for base in index.bases(cls):
            if isinstance(base, str) and _engine_name(index, cls, base):
                unresolved.append(base)
    return {"missing": True, "unresolved": unresolved}


_EXTERNAL_MODULES = {"torch", "typing", "typing_extensions", "abc", "transformers", "collections",
                     "dataclasses", "enum", "nn", "Generic", "Protocol", "object"}  # fmt: skip


def _engine_name(index: SourceIndex, cls: ClassRef, base: str) -> bool:
    """Whether an unresolved base may hold engine code we did not read (anything but torch,
    typing and the like)."""
    head = base.split(".")[0].split("[")[0]
    if head in _EXTERNAL_MODULES:
        return False
    target = cls.module.imports.get(head, "")
    module = target.partition(":")[0].split(".")[0]
    return module not in _EXTERNAL_MODULES


def evaluate_capture(
    index: SourceIndex,
    target: ClassRef,
    layer_ids: list[int] | None,
    target_config: dict | None,
    methods: tuple[str, ...] = CAPTURE_METHODS,
    resolve_architecture: Callable[[str], ClassRef | None] | None = None,
) -> dict[str, Any]:
    """Evaluate the target's capture method for the draft-config ids (None: none given).
    Returns {"layers_to_capture", "class", "method", "where", "line", "delegated", "layers_of",
    "notes"} or {"error": reason} (with "missing": True when the hierarchy defines no capture
    method). `delegated`: the class (in whichever file) whose method finally sets the layers;
    `layers_of`: the class whose decoder layers the evaluation counted (its file has the layer
    loop that captures). `resolve_architecture`: vLLM's registry, for members built through it."""
    found = find_capture_method(index, target, methods)
    if found.get("missing"):
        if found["unresolved"]:
            return {
                "error": f"{target.node.name} inherits from {', '.join(found['unresolved'])}, "
                "whose code was not read"
            }
        return {
            "error": f"{target.node.name} (and its bases) define none of {', '.join(methods)}",
            "missing": True,
        }
    method = found["node"]
    config = dict(target_config or {})
    ctx = _Context(index, resolve_architecture)
    root = _Self(config, target, ctx)
    ctx.running.append((id(root), method.name))
    try:
        values, notes = _run_method(method, layer_ids, root)
    except _Unsupported as exc:
        return {"error": f"{found['class']}.{method.name}: {exc}"}
    if not values:
        return {"error": f"{found['class']}.{method.name} sets no capture layers we could follow"}
    distinct = []
    for item in values:
        if item["value"] not in distinct:
            distinct.append(item["value"])
    if len(distinct) > 1:
        return {
            "error": f"{found['class']}.{method.name} depends on something we cannot evaluate: "
            f"{distinct}"
        }
    chosen = next((v for v in values if v["kind"] == "delegate"), values[0])
    out: dict[str, Any] = {
        "class": found["class"],
        "method": method.name,
        "where": found["where"],
        "method_line": method.lineno,
        "line": chosen["line"],
        "target": chosen["target"],
        "layers_to_capture": chosen["value"],
        "delegated": chosen.get("delegated"),
        "layers_of": None,
        "notes": notes,
    }
    if ctx.layers_of:
        last = ctx.layers_of[-1]
        out["layers_of"] = {"class": last.node.name, "path": last.module.path}
    if chosen["kind"] == "delegate" and out["delegated"] is None:
        # `self.model.set_eagle3_layers_to_capture(v)` on a member whose class was not
        # followed: a class of the same file that defines the setter
        module = index.module_at(found["where"].rsplit(":", 1)[0])
        for other_name, other in (module.classes if module else {}).items():
            inner = _method(other, DELEGATE_METHODS)
            if other_name == found["class"] or inner is None or module is None:
                continue
            try:
                model = _Self(config, ClassRef(module, other), _Context(index))
                inner_values, _ = _run_method(inner, chosen["value"], model)
            except _Unsupported:
                continue
            if len(inner_values) == 1 and inner_values[0]["kind"] == "assign":
                out["delegated"] = {"class": other_name, "line": inner_values[0]["line"]}
                out["layers_to_capture"] = inner_values[0]["value"]
                break
    if is_unknown(out["layers_to_capture"]) or _as_int_list(out["layers_to_capture"]) is None:
        return {"error": f"{found['class']}.{method.name}: capture layers not computable"
                f"{_why_not_computable(config)}"}  # fmt: skip
    out["layers_to_capture"] = _as_int_list(out["layers_to_capture"])
    return out


def _why_not_computable(config: dict) -> str:
    key = text_config_key(config)
    if "num_hidden_layers" not in text_config(config):
        where = f"{key}." if key else ""
        return f" (the target config's {where}num_hidden_layers is unknown)"
    if key:
        return f" (the language model it builds from config.{key} was not followed)"
    return ""


def _method(cls: ast.ClassDef, names: tuple[str, ...]) -> ast.FunctionDef | None:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            return node
    return None


def single_file_index(source: str, path: str = "/engine/pkg/model.py") -> SourceIndex:
    """An index over one model file (for callers that have only the target's file)."""
    index = SourceIndex("pkg", "/engine/pkg")
    index.add(path, source)
    return index


def _entry_or_capturing_class(index: SourceIndex, target_class: str | None) -> ClassRef | None:
    module = next(iter(index.modules.values()), None)
    if module is None:
        return None
    if target_class and index.resolve(module, target_class):
        return index.resolve(module, target_class)
    for name in entry_class_names(module.tree):
        if index.resolve(module, name):
            return index.resolve(module, name)
    for cls in module.classes.values():
        if _method(cls, CAPTURE_METHODS):
            return ClassRef(module, cls)
    return None


def capture_indices(
    source: str,
    layer_ids: list[int] | None,
    target_config: dict | None,
    target_class: str | None = None,
) -> dict[str, Any]:
    """evaluate_capture over a single model file: the class named (else its EntryClass, else
    the first class with a capture method)."""
    index = single_file_index(source)
    if not index.modules:
        return {"error": "the target model source does not parse"}
    ref = _entry_or_capturing_class(index, target_class)
    if ref is None:
        return {"error": "no class in the target model file defines set_eagle3_layers_to_capture"}
    return evaluate_capture(index, ref, layer_ids, target_config)


def conversion_rule(source: str, target_class: str | None = None) -> str:
    """How the file's set_eagle3_layers_to_capture turns given ids into capture indices:
    'add-1', 'add-1-when-first-is-1', 'keep', 'other' or 'unknown'."""
    cfg = {"num_hidden_layers": 64}
    probes = {}
    for key, ids in (("one", [1, 5, 9]), ("two", [2, 6, 10])):
        got = capture_indices(source, ids, cfg, target_class)
        probes[key] = got.get("layers_to_capture")
    one, two = probes["one"], probes["two"]
    if one is None or two is None:
        return "unknown"
    if one == [2, 6, 10] and two == [3, 7, 11]:
        return "add-1"
    if one == [1, 5, 9] and two == [2, 6, 10]:
        return "keep"
    if one == [2, 6, 10] and two == [2, 6, 10]:
        return "add-1-when-first-is-1"
    return "other"


def _layer_names(loop: ast.For) -> set[str]:
    """The loop's names for the current layer: its target, and `x = self.layers[i]`."""
    layer_names = names_in(loop.target)
    for stmt in loop.body:
        for node in walk(stmt):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript):
                if (
                    isinstance(node.value.value, ast.Attribute)
                    and node.value.value.attr in LAYER_LISTS
                ):
                    layer_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return layer_names


def _is_capture_test(node: ast.AST) -> bool:
    """`i in self.layers_to_capture` (or another capture attribute)."""
    return (
        isinstance(node, ast.Compare)
        and any(isinstance(op, ast.In) for op in node.ops)
        and any(isinstance(c, ast.Attribute) and c.attr in CAPTURE_ATTRS for c in node.comparators)
    )


def _is_layer_call(node: ast.AST, layer_names: set[str]) -> bool:
    """`layer(...)` or `self.layers[i](...)`."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in layer_names
    return (
        isinstance(func, ast.Subscript)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr in LAYER_LISTS
    )


def _loop_capture_point(loop: ast.For) -> dict[str, Any] | None:
    """Input or output, when the loop body tests for capture and calls the layer in different
    statements (their order decides)."""
    layer_names = _layer_names(loop)
    capture_at = call_at = None
    for index, stmt in enumerate(loop.body):
        for node in walk(stmt):
            if capture_at is None and _is_capture_test(node):
                capture_at = (index, node.lineno)
            if call_at is None and _is_layer_call(node, layer_names):
                call_at = (index, node.lineno)
    if capture_at and call_at and capture_at[0] != call_at[0]:
        point = "input" if capture_at[0] < call_at[0] else "output"
        return {"point": point, "capture_line": capture_at[1], "call_line": call_at[1]}
    return None


def capture_point(source: str) -> dict[str, Any]:
    """Whether the model's layer loop captures a layer's input ('input': index c = output of
    layer c - 1) or its output ('output'), from the order of `if i in self.layers_to_capture`
    and the layer call in the loop body. 'unknown' when no such loop is in the file."""
    try:
        tree = parse(source)
    except SyntaxError:  # pragma: no cover - parse() returns None instead
        return {"point": "unknown", "evidence": None}
    if tree is None:
        return {"point": "unknown", "evidence": None}
    found = []
    for loop in walk(tree):
        if isinstance(loop, ast.For):
            point = _loop_capture_point(loop)
            if point is not None:
                found.append(point)
    points = {f["point"] for f in found}
    if len(points) == 1:
        return {"point": points.pop(), "evidence": found[0]}
    if len(points) > 1:
        return {"point": "ambiguous", "evidence": found[:3]}
    return {"point": "unknown", "evidence": None}
