"""The module tree a draft class's `__init__` builds, for the loader model
(remotedbg.analysis.loader_model): its `__init__` (through `super().__init__` and the classes
it instantiates) is walked on the interpreter core's visitor, one `visit_<Stmt>` per statement
that can build or remove a module; the values it needs (config fields, arguments) come from
the loader model's expression evaluation, where a failure is an unknown value, never an error.

Both branches of an `if` the config does not decide are walked, so a module either may build
stays in the tree; the tree is then `approximate` where a class was chosen at run time, nested
too deep, or not read (remotedbg.analysis.loader_values.Node)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Any, Protocol

from remotedbg.analysis.interp import Visitor, is_unknown
from remotedbg.analysis.loader_values import (
    UNKNOWN,
    Config,
    Named,
    Node,
    Obj,
    merge_nodes,
    opaque,
)
from remotedbg.analysis.pysource import ClassRef, Module, SourceIndex
from remotedbg.engines import loader_rules

MAX_NESTING = 6  # classes instantiated inside one another before the tree is cut off
MAX_LIST = 512  # `ModuleList([... for i in range(n)])` built item by item up to this n


@dataclass(frozen=True)
class InitScope:
    """Where an `__init__` statement runs: its local names, the object being built, the class
    whose `__init__` this is, how deep in the tree, and whether the statement surely runs (no
    undecided `if` above it)."""

    env: dict
    obj: Obj
    cls: ClassRef
    depth: int
    certain: bool = True

    @property
    def module(self) -> Module:
        return self.cls.module


class Evaluator(Protocol):
    """What the walk needs of the loader model's interpreter (loader_model.Interpreter)."""

    index: SourceIndex
    config: Config
    engine_params: dict

    def safe_eval(self, node: ast.expr, env: dict, mod: Module) -> Any: ...

    def tick(self) -> None: ...

    def next_in_mro(self, obj: Obj, cls: ClassRef) -> ClassRef | None: ...


class TreeBuilder(Visitor):
    """Builds an engine class's module tree (`instantiate`) by walking its `__init__`."""

    def __init__(self, interp: Evaluator) -> None:
        self.interp = interp
        self.index = interp.index
        self.config = interp.config
        self.approximate = False  # some module's class or size was not known

    def instantiate(
        self, ref: ClassRef, depth: int = 0, given: tuple[list, dict] | None = None
    ) -> Obj:
        """An instance of `ref` with the modules its `__init__` builds; `given`: the
        (positional, keyword) arguments the constructor call passes."""
        obj = Obj(ref, Node(ref.node.name), self.config)
        if depth > MAX_NESTING:
            obj.node.wild = obj.node.approximate = True
            self.approximate = True
            return obj
        self._run_init(obj, ref, depth, given)
        return obj

    def _value(self, expr: ast.expr, env: dict, mod: Module) -> Any:
        return self.interp.safe_eval(expr, env, mod)

    def _call_args(self, call: ast.Call, env: dict, mod: Module) -> tuple[list, dict]:
        """The arguments a constructor call passes, evaluated in the caller's __init__: a value
        the config decides (`q_lora_rank=config.q_lora_rank`) reaches the callee's __init__."""

        def value(expr: ast.expr) -> Any:
            if isinstance(expr, ast.Name) and expr.id not in env:
                ref = self.index.resolve(mod, expr.id)  # a class passed as an argument
                return ref if ref is not None else UNKNOWN
            found = self._value(expr, env, mod)
            return UNKNOWN if isinstance(found, Named) else found

        positional: list[Any] = []
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                break  # the positions after it are not known
            positional.append(value(arg))
        keywords = {k.arg: value(k.value) for k in call.keywords if k.arg}
        return positional, keywords

    def _run_init(
        self, obj: Obj, ref: ClassRef, depth: int, given: tuple[list, dict] | None = None
    ) -> None:
        found = self.index.find_method(ref, "__init__")
        if found is None:
            return
        cls, func = found
        env = self._init_env(obj, cls, func, given)
        self.block(func.body, InitScope(env, obj, cls, depth))

    def _init_env(
        self, obj: Obj, cls: ClassRef, func: ast.FunctionDef, given: tuple[list, dict] | None
    ) -> dict[str, Any]:
        """`__init__`'s parameters: `self`, then what the call passes, the engine's launch
        parameters, a class named as a default, else unknown."""
        env: dict[str, Any] = {}
        params = [a.arg for a in func.args.args] + [a.arg for a in func.args.kwonlyargs]
        if params:
            env[params[0]] = obj
        passed: dict[str, Any] = {}
        if given is not None:
            positional, keywords = given
            names = [a.arg for a in func.args.args][1:]
            passed = dict(zip(names, positional, strict=False))
            passed.update({k: v for k, v in keywords.items() if k in params[1:]})
        defaults = _defaults(func.args)
        for name in params[1:]:
            if name == "config":
                # the draft's config unless the caller passes another (`config.text_config`)
                known = passed.get(name)
                env[name] = known if isinstance(known, Config) else self.config
            elif not is_unknown(passed.get(name, UNKNOWN)):
                env[name] = passed[name]
            elif name in self.interp.engine_params:
                env[name] = _wrap(self.interp.engine_params[name])
            elif isinstance(defaults.get(name), ast.Name):
                found = self.index.resolve(cls.module, defaults[name].id)  # type: ignore[union-attr]
                env[name] = found if found is not None else UNKNOWN
            else:
                env[name] = UNKNOWN
        return env

    # ------------------------------------------------------------------ the statements
    def block(self, body: list[ast.stmt], scope: InitScope) -> None:
        for stmt in body:
            self.interp.tick()
            self.visit(stmt, scope)

    def generic_stmt(self, node: ast.stmt, *context: Any) -> None:
        return None  # builds no module (a loop, a nested def, a return...)

    def visit_If(self, node: ast.If, scope: InitScope) -> None:
        test = self._value(node.test, scope.env, scope.module)
        if opaque(test):
            undecided = replace(scope, certain=False)
            self.block(node.body, undecided)
            self.block(node.orelse, undecided)
        else:
            self.block(node.body if test else node.orelse, scope)

    def visit_Assign(self, node: ast.Assign | ast.AnnAssign, scope: InitScope) -> None:
        if node.value is None:
            return
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            self._assign(target, node.value, scope)

    visit_AnnAssign = visit_Assign

    def visit_Delete(self, node: ast.Delete, scope: InitScope) -> None:
        """Only where it surely runs does a `del self.x` take a module away."""
        if not scope.certain:
            return
        for target in node.targets:
            if _own_attribute(target, scope):
                scope.obj.node.children.pop(target.attr, None)  # type: ignore[union-attr]
                scope.obj.attrs.pop(target.attr, None)  # type: ignore[union-attr]

    def visit_Expr(self, node: ast.Expr, scope: InitScope) -> None:
        call = node.value
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            return
        if _registered_name(call) is not None:
            self._register(call, scope)
        elif _is_super_init(call.func):
            base = self.interp.next_in_mro(scope.obj, scope.cls)
            if base is not None:
                given = self._call_args(call, scope.env, scope.module)
                self._run_init(scope.obj, base, scope.depth, given)
        elif _passes_self(call, scope):
            # code not followed is handed the module and may register its parameters:
            # vLLM's FusedMoE gets `w13_weight`/`w2_weight` from its quant method
            # (0.10.2 model_executor/layers/fused_moe/layer.py:945
            # `self.quant_method.create_weights(layer=self, ...)`)
            scope.obj.node.wild = scope.obj.node.approximate = True
            self.approximate = True

    def visit_With(self, node: ast.With | ast.Try, scope: InitScope) -> None:
        self.block(node.body, scope)

    visit_Try = visit_With

    def _register(self, call: ast.Call, scope: InitScope) -> None:
        """`self.register_buffer("name", ...)` (unless persistent=False) and
        `self.register_parameter("name", ...)`: a parameter the checkpoint fills."""
        persistent = not any(
            k.arg == "persistent" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in call.keywords
        )
        if call.func.attr == "register_parameter" or persistent:  # type: ignore[union-attr]
            scope.obj.node.children[_registered_name(call)] = Node("buffer", is_param=True)  # type: ignore[index]

    def _assign(self, target: ast.expr, value: ast.expr, scope: InitScope) -> None:
        env, obj = scope.env, scope.obj
        if isinstance(target, ast.Name):
            env[target.id] = self._value(value, env, scope.module)
            return
        if not _own_attribute(target, scope):
            return
        attr = target.attr  # type: ignore[attr-defined]
        if attr == "config":
            obj.attrs["config"] = self.config
            return
        module = self._module_of(value, env, scope.module, scope.depth)
        if module is not None:
            earlier = obj.node.children.get(attr)
            if not scope.certain and earlier is not None and earlier is not module.node:
                # the other branch of an undecided `if` built it too (vLLM's DeepSeek layer:
                # a MoE or a dense MLP by the layer's index, 0.10.2 deepseek_v2.py:659-676):
                # a parameter of either may be the one the checkpoint fills
                module.node = merge_nodes(earlier, module.node)
            obj.node.children[attr] = module.node
            obj.attrs[attr] = module
            return
        if scope.certain:  # torch: a module attribute set to a non-module (nn.Identity()) is gone
            obj.node.children.pop(attr, None)
        obj.attrs[attr] = self._value(value, env, scope.module)

    # ------------------------------------------------------------------ the modules
    def _module_of(self, value: ast.expr, env: dict, mod: Module, depth: int) -> Obj | None:
        """The module an __init__ expression builds, or None when it is not a module."""
        if isinstance(value, ast.Attribute):
            base = self._value(value, env, mod)
            return base if isinstance(base, Obj) else None
        if isinstance(value, ast.Subscript):
            return self._item_of(value, env, mod)
        if not isinstance(value, ast.Call):
            return None
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        holder = env.get(func.value.id) if (isinstance(func, ast.Attribute)
                                            and isinstance(func.value, ast.Name)) else None
        if isinstance(holder, Obj) and holder.ref is not None and isinstance(name, str):
            built = self._built_by_own(holder, name, value, env, mod, depth)
            if built is not None:
                return built
        if isinstance(name, str) and isinstance(env.get(name), ClassRef):
            # `attn_layer_type=LlamaAttention`
            return self.instantiate(env[name], depth + 1, self._call_args(value, env, mod))
        if isinstance(name, str) and name in env and isinstance(func, ast.Name):
            # `self.self_attn = attn_cls(...)`: a module whose class is chosen at run time
            self.approximate = True
            return Obj(None, Node(name, wild=True, approximate=True), self.config)
        if isinstance(name, str) and loader_rules.is_layer_factory(name):
            return Obj(None, Node(name, wild=True), self.config)  # a leaf layer, as a class
        built = self._plugin_factory(func, mod)
        if built is not None:
            return self._module_of(built, {}, mod, depth + 1)
        if not isinstance(name, str) or not name[:1].isupper():
            return None
        if loader_rules.is_paramless_class(name):
            return None
        if name == "Parameter":
            return Obj(None, Node(name, is_param=True), self.config)
        if name == "ModuleList":
            return self._module_list(value, env, mod, depth)
        return self._class_module(name, value, env, mod, depth)

    def _class_module(self, name: str, value: ast.Call, env: dict, mod: Module,
                      depth: int) -> Obj:  # fmt: skip
        """`Name(...)`: built from its class's code where it was read, else a leaf layer
        (loader_rules) or a module whose parameters are not known."""
        func = value.func
        ref = self.index.resolve_expr(mod, func) if isinstance(func, ast.Name) else None
        if ref is not None and not loader_rules.is_leaf_class(name):
            return self.instantiate(ref, depth + 1, self._call_args(value, env, mod))
        node = Node(name, wild=True)
        if not loader_rules.is_leaf_class(name):
            node.approximate = True
            self.approximate = True
        elif loader_rules.builds_without_bias(name, self._call_args(value, env, mod)[1]):
            node.absent = frozenset({"bias"})
        return Obj(None, node, self.config)

    def _built_by_own(
        self, obj: Obj, name: str, call: ast.Call, env: dict, mod: Module, depth: int
    ) -> Obj | None:
        """What `self.<name>(...)` builds in an __init__: a class attribute naming a class
        (`model_cls = Eagle3LlamaModel`), or a method whose one statement returns what it
        builds (`def resolve_model(...): return self.model_cls(...)`): TokenSpeed 0.1.1
        runtime/models/base/causal_lm.py:211-224, base/transformer_model.py:67-68, :129-155.
        A method annotated to return a module whose build is not followed is a module of
        unknown parameters; None for anything else."""
        assert obj.ref is not None
        for cls in self.index.mro(obj.ref):
            for stmt in cls.node.body:
                target = stmt.target if isinstance(stmt, ast.AnnAssign) else (
                    stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    else None)  # fmt: skip
                if not (isinstance(target, ast.Name) and target.id == name):
                    continue
                value = stmt.value  # type: ignore[union-attr]
                ref = (self.index.resolve(cls.module, value.id)
                       if isinstance(value, ast.Name) else None)  # fmt: skip
                if ref is None:
                    return None
                return self.instantiate(ref, depth + 1, self._call_args(call, env, mod))
        found = self.index.find_method(obj.ref, name)
        if found is None:
            return None
        cls, func = found
        built = self._returned_module(obj, func, call, env, mod, cls.module, depth)
        if built is not None:
            return built
        returns = ast.unparse(func.returns) if func.returns is not None else ""
        if returns.rsplit(".", 1)[-1].endswith(("Module", "ModuleList", "Model")):
            self.approximate = True
            return Obj(None, Node(name, wild=True, approximate=True), self.config)
        return None

    def _returned_module(self, obj: Obj, func: ast.FunctionDef, call: ast.Call, env: dict,
                         mod: Module, home: Module, depth: int) -> Obj | None:  # fmt: skip
        """The module a one-statement method `return <build>` builds, called as `call`."""
        body = _body(func.body)
        if not (len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None):
            return None
        inner: dict[str, Any] = {}
        params = [a.arg for a in func.args.args]
        if params:
            inner[params[0]] = obj
        positional, keywords = self._call_args(call, env, mod)
        inner.update(zip(params[1:], positional, strict=False))
        inner.update({k: v for k, v in keywords.items() if k in params})
        for arg in params[1:]:
            inner.setdefault(arg, self.config if arg == "config" else UNKNOWN)
        return self._module_of(body[0].value, inner, home, depth + 1)

    def _item_of(self, value: ast.Subscript, env: dict, mod: Module) -> Obj | None:
        """`self.layers[0]` in an __init__ (TokenSpeed 0.1.1 llama_eagle3.py:408-411 keeps the
        one decoder layer as `midlayer`): that child, or one of unknown parameters below a
        module whose children are not known."""
        base = self._value(value.value, env, mod)
        if not isinstance(base, Obj):
            return None
        index = self._value(value.slice, env, mod)
        child = base.node.children.get(str(index)) if isinstance(index, int) else None
        if child is not None:
            return Obj(None, child, self.config)
        if base.node.wild:
            self.approximate = True
            return Obj(None, Node(f"{base.node.cls}[]", wild=True, approximate=True), self.config)
        return None

    def _plugin_factory(self, func: ast.expr, mod: Module) -> ast.Call | None:
        """What a plugin's module-level factory returns (`def _linear(...): return
        ReplicatedLinear(...)`, vllm-ascend 0.23.0 models/llama_eagle3_vwn.py:24-33), where a
        plugin module calls it: the engine's own helpers are modelled by loader_rules."""
        if not isinstance(func, ast.Name) or mod.name.split(".")[0] == self.index.package:
            return None
        helper = mod.functions.get(func.id)
        body = _body(helper.body if helper is not None else [])
        if len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value,
                                                                               ast.Call):
            return body[0].value
        return None

    def _module_list(self, value: ast.Call, env: dict, mod: Module, depth: int) -> Obj:
        holder = Obj(None, Node("ModuleList"), self.config)
        items = value.args[0] if value.args else None
        elts: list[ast.expr] = []
        if isinstance(items, (ast.List, ast.Tuple)):
            elts = list(items.elts)
        scopes = [env] * len(elts)
        if isinstance(items, ast.ListComp):
            count = self._range_len(items, env, mod)
            if count is None:
                holder.node.wild = holder.node.approximate = True
                self.approximate = True
                return holder
            elts = [items.elt] * count
            # `[Layer(config, i == 0) for i in range(n)]`: each built with its own i
            index = items.generators[0].target
            name = index.id if isinstance(index, ast.Name) else None
            scopes = [dict(env, **({name: i} if name else {})) for i in range(count)]
        for i, elt in enumerate(elts):
            child = self._module_of(elt, scopes[i], mod, depth + 1)
            if child is not None:
                holder.node.children[str(i)] = child.node
        return holder

    def _range_len(self, comp: ast.ListComp, env: dict, mod: Module) -> int | None:
        if len(comp.generators) != 1:
            return None
        it = comp.generators[0].iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            args = [self._value(a, env, mod) for a in it.args]
            if len(args) == 1 and isinstance(args[0], int) and 0 <= args[0] <= MAX_LIST:
                return args[0]
        return None


def _passes_self(call: ast.Call, scope: InitScope) -> bool:
    """The call hands the module being built (`self`) to an object the module holds
    (`self.quant_method.create_weights(layer=self)`); a base's `Base.__init__(self)`, a
    `print(self)` or `logger.info(self)` of a hot-fixed copy register nothing."""
    me = next((name for name, value in scope.env.items() if value is scope.obj), None)
    func = call.func
    if me is None or not isinstance(func, ast.Attribute) or func.attr == "__init__":
        return False
    holder = func.value
    while isinstance(holder, ast.Attribute):
        holder = holder.value
    if not (isinstance(holder, ast.Name) and holder.id == me and func.value is not holder):
        return False
    values = list(call.args) + [k.value for k in call.keywords]
    return any(isinstance(v, ast.Name) and v.id == me for v in values)


def _body(body: list[ast.stmt]) -> list[ast.stmt]:
    """A function's statements less its docstring (any bare constant)."""
    return [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]


def _defaults(args: ast.arguments) -> dict[str, ast.expr]:
    """Parameter name -> its default expression."""
    defaults: dict[str, ast.expr] = {}
    positional = args.args
    for arg, default in zip(
        positional[len(positional) - len(args.defaults) :], args.defaults, strict=True
    ):
        defaults[arg.arg] = default
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if default is not None:
            defaults[arg.arg] = default
    return defaults


def _wrap(value: Any) -> Any:
    """A launch parameter as the code sees it: nested dicts as Configs (attribute access)."""
    if isinstance(value, dict):
        return Config({k: _wrap(v) for k, v in value.items()})
    return value


def _own_attribute(target: ast.expr, scope: InitScope) -> bool:
    """`self.x` of the object being built."""
    return (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and scope.env.get(target.value.id) is scope.obj
    )


def _registered_name(call: ast.Call) -> str | None:
    """The name `self.register_buffer("name", ...)` / `register_parameter` gives, if literal."""
    if (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in ("register_buffer", "register_parameter")
        and call.args
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    ):
        return call.args[0].value
    return None


def _is_super_init(func: ast.Attribute) -> bool:
    """`super().__init__`"""
    return (
        func.attr == "__init__"
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    )
