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

from remotedbg.analysis.pysource import ClassRef, SourceIndex, names_in, parse, walk
from remotedbg.analysis.pysource import bounded_product as _bounded_product
from remotedbg.engines.code_markers import CAPTURE_GETTERS, CAPTURE_METHODS
from remotedbg.engines.sglang import entry_class_names
from remotedbg.engines.text_config import text_config, text_config_key

CAPTURE_ATTRS = ("layers_to_capture", "aux_hidden_state_layers")
DELEGATE_METHODS = ("set_eagle3_layers_to_capture", "set_aux_hidden_state_layers")
MAX_PATHS = 64
MAX_DEPTH = 4  # capture methods running inside one another
CONFIG_ARGS = ("hf_config", "config")  # the keyword a member's constructor takes its config by
LAYER_LISTS = ("layers", "h", "blocks")  # self.<list> a model keeps its decoder layers in


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = _Unknown()


class _Config:
    def __init__(self, data: dict) -> None:
        self.data = data

    def get(self, name: str, default: Any = UNKNOWN) -> Any:
        value = self.data.get(name, default)
        return _Config(value) if isinstance(value, dict) else value


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
        self.config = _Config(config)
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
        if ref is None or not isinstance(config, _Config):
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
    if node is None and call.args:
        node = call.args[0]
    if node is None:
        return owner.config
    return _eval(node, {"self": owner, "config": owner.config})


class _Unsupported(Exception):
    pass


def _known(*values: Any) -> bool:
    return not any(v is UNKNOWN for v in values)


def _index_node(node: ast.Subscript) -> ast.AST:
    return node.slice  # Python 3.9+: the index expression itself


def _eval(node: ast.AST, env: dict[str, Any]) -> Any:
    """A small evaluator for the expressions of set_eagle3_layers_to_capture."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id, UNKNOWN)
    if isinstance(node, ast.Attribute):
        base = _eval(node.value, env)
        if isinstance(base, _Self):
            return base.attribute(node.attr)
        if isinstance(base, _Config):
            return base.get(node.attr)
        return UNKNOWN
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_eval(e, env) for e in node.elts]
        return list(items) if _known(*items) else UNKNOWN
    if isinstance(node, ast.ListComp) and len(node.generators) == 1:
        gen = node.generators[0]
        seq = _eval(gen.iter, env)
        if not isinstance(seq, (list, tuple)) or not isinstance(gen.target, ast.Name):
            return UNKNOWN
        out = []
        for item in seq:
            local = dict(env, **{gen.target.id: item})
            conds = [_eval(c, local) for c in gen.ifs]
            if not _known(*conds):
                return UNKNOWN
            if all(conds):
                value = _eval(node.elt, local)
                if value is UNKNOWN:
                    return UNKNOWN
                out.append(value)
        return out
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env), _eval(node.right, env)
        if not _known(left, right):
            return UNKNOWN
        try:
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return _bounded_product(left, right)
            if isinstance(node.op, ast.FloorDiv):
                return left // right
            if isinstance(node.op, ast.Mod):
                return left % right
        except (TypeError, ZeroDivisionError, ValueError):
            return UNKNOWN
        return UNKNOWN
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, env)
        if operand is UNKNOWN:
            return UNKNOWN
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub) and isinstance(operand, (int, float)):
            return -operand
        return UNKNOWN
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        saw_unknown = False
        for value_node in node.values:
            value = _eval(value_node, env)
            if value is UNKNOWN:
                saw_unknown = True
                continue
            if is_and and not value:
                return value
            if not is_and and value:
                return value
        return UNKNOWN if saw_unknown else (True if is_and else False)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, env)
            if not _known(left, right):
                return UNKNOWN
            try:
                ok = _compare(op, left, right)
            except TypeError:
                return UNKNOWN
            if ok is UNKNOWN:
                return UNKNOWN
            if not ok:
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        test = _eval(node.test, env)
        if test is UNKNOWN:
            return UNKNOWN
        return _eval(node.body if test else node.orelse, env)
    if isinstance(node, ast.Subscript):
        base = _eval(node.value, env)
        index = _index_node(node)
        if isinstance(index, ast.Slice):
            lo = _eval(index.lower, env) if index.lower else None
            hi = _eval(index.upper, env) if index.upper else None
            if isinstance(base, list) and _known(lo, hi):
                return base[lo:hi]
            return UNKNOWN
        key = _eval(index, env)
        if isinstance(base, (list, tuple)) and isinstance(key, int):
            return base[key] if -len(base) <= key < len(base) else UNKNOWN
        return UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        args = [_eval(a, env) for a in node.args]
        name = node.func.id
        if name in ("len", "list", "sorted", "int", "tuple") and len(args) == 1 and _known(*args):
            try:
                return {"len": len, "list": list, "sorted": sorted, "int": int, "tuple": list}[
                    name
                ](args[0])
            except (TypeError, ValueError):
                return UNKNOWN
        if name in ("getattr", "hasattr") and len(args) >= 2 and isinstance(args[0], _Self):
            if name == "hasattr":
                return args[0].has(args[1])
            value = args[0].attribute(args[1])
            return value if value is not UNKNOWN else (args[2] if len(args) > 2 else UNKNOWN)
        if name in ("getattr", "hasattr") and len(args) >= 2 and isinstance(args[0], _Config):
            if name == "hasattr":
                return args[1] in args[0].data
            default = args[2] if len(args) > 2 else UNKNOWN
            return args[0].get(args[1], default)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        receiver = _eval(node.func.value, env)
        if isinstance(receiver, _Self):
            return _call_on(receiver, node.func.attr, [_eval(a, env) for a in node.args])
    return UNKNOWN


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


def _compare(op: ast.cmpop, left: Any, right: Any) -> Any:
    if isinstance(op, ast.Eq):
        return left == right
    if isinstance(op, ast.NotEq):
        return left != right
    if isinstance(op, ast.Is):
        return left is right
    if isinstance(op, ast.IsNot):
        return left is not right
    if isinstance(op, ast.Lt):
        return left < right
    if isinstance(op, ast.LtE):
        return left <= right
    if isinstance(op, ast.Gt):
        return left > right
    if isinstance(op, ast.GtE):
        return left >= right
    if isinstance(op, ast.In):
        return left in right
    if isinstance(op, ast.NotIn):
        return left not in right
    return UNKNOWN


def _capture_call(node: ast.AST) -> ast.Call | None:
    """`<something>.set_eagle3_layers_to_capture(x)` (a delegation to the inner model)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in DELEGATE_METHODS:
            return node
    return None


def _exec(stmts: list[ast.stmt], paths: list[dict]) -> list[dict]:
    """Run statements on every live path; an undecidable `if` forks the path."""
    for stmt in stmts:
        nxt: list[dict] = []
        for path in paths:
            if path["done"]:
                nxt.append(path)
                continue
            nxt.extend(_step(stmt, path))
        if len(nxt) > MAX_PATHS:
            raise _Unsupported("too many branches")
        paths = nxt
    return paths


def _step(stmt: ast.stmt, path: dict) -> list[dict]:
    env = path["env"]
    if isinstance(stmt, ast.If):
        test = _eval(stmt.test, env)
        if test is UNKNOWN:
            left = _exec(stmt.body, [_fork(path)])
            right = _exec(stmt.orelse, [_fork(path)])
            return left + right
        return _exec(stmt.body if test else stmt.orelse, [path])
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        value_node = stmt.value
        if value_node is None:
            return [path]
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value = _eval(value_node, env)
        for target in targets:
            if isinstance(target, ast.Name):
                env[target.id] = value
            elif isinstance(target, ast.Attribute) and target.attr in CAPTURE_ATTRS:
                path["captures"].append(("assign", ast.unparse(target), value, stmt.lineno))
        return [path]
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        fake = ast.BinOp(left=ast.Name(id=stmt.target.id, ctx=ast.Load()), op=stmt.op)
        fake.right = stmt.value
        env[stmt.target.id] = _eval(fake, env)
        return [path]
    if isinstance(stmt, (ast.Expr, ast.Return)):
        call = _capture_call(stmt.value) if stmt.value is not None else None
        if call is not None:
            value = _eval(call.args[0], env) if call.args else None
            capture = ("delegate", ast.unparse(call.func), value, stmt.lineno)
            path["captures"].append(capture + _into_member(call, value, env))
        elif isinstance(stmt, ast.Return) and stmt.value is not None and path.get("getter"):
            path["captures"].append(("return", "return", _eval(stmt.value, env), stmt.lineno))
        if isinstance(stmt, ast.Return):
            path["done"] = True
        return [path]
    if isinstance(stmt, ast.Raise):
        path["done"] = True
        path["raised"] = True
        return [path]
    if isinstance(stmt, (ast.Pass, ast.Assert, ast.Global, ast.Nonlocal, ast.Import)):
        return [path]
    if isinstance(stmt, ast.ImportFrom):
        return [path]
    raise _Unsupported(f"line {stmt.lineno}: {type(stmt).__name__} not evaluated")


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


def _fork(path: dict) -> dict:
    return {
        "env": dict(path["env"]),
        "captures": list(path["captures"]),
        "done": path["done"],
        "raised": path.get("raised", False),
        "getter": path.get("getter", False),
    }


def _run_method(
    method: ast.FunctionDef, layer_ids: Any, model: _Self
) -> tuple[list[Any], list[str]]:
    """Distinct captured values over the method's paths, plus notes."""
    params = [a.arg for a in method.args.args]
    env: dict[str, Any] = {}
    if params:
        env[params[0]] = model
    if len(params) > 1 and method.name not in CAPTURE_GETTERS:
        env[params[1]] = layer_ids
    getter = method.name in CAPTURE_GETTERS
    path = {"env": env, "captures": [], "done": False, "raised": False, "getter": getter}
    paths = _exec(method.body, [path])
    values: list[Any] = []
    notes: list[str] = []
    for p in paths:
        if not p["captures"]:
            if p.get("raised"):
                notes.append("a path raises (the engine refuses this input)")
            continue
        kind, target, value, line, *member = p["captures"][-1]
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
    if out["layers_to_capture"] is UNKNOWN or _as_int_list(out["layers_to_capture"]) is None:
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
