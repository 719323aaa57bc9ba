"""The engine-specific loader knowledge the loader model applies (remotedbg.analysis.loader_model):
the helpers remotedbg.engines.loader_rules names (vLLM's WeightsMapper, AutoWeightsLoader,
weight loaders, the draft's quantization config, the pipeline group) recognised by the qualified
name their import resolves to, a parameter's dtype, module-level helpers of the engine, and the
record of which tensor loads into which parameter. A part of loader_model.Interpreter."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from remotedbg.analysis.interp.names import qualified_name
from remotedbg.analysis.loader_values import (
    NOT_HANDLED,
    UNKNOWN,
    AutoLoader,
    Bound,
    Closure,
    Config,
    EngineRaises,
    Mapper,
    Named,
    Obj,
    Param,
    Tensor,
    Undecidable,
)
from remotedbg.analysis.pysource import Module
from remotedbg.engines import loader_rules


class EngineHelpers:
    """Engine helpers and the loads they record."""

    def engine_helper(self, name: str, args: list, kwargs: dict, node: ast.Call,
                      mod: Module) -> Any:  # fmt: skip
        """The call of an engine helper loader_rules models (NOT_HANDLED: none, or its rule
        does not apply to these arguments)."""
        role = self._helper_role(name, mod)
        return NOT_HANDLED if role is None else self._HELPERS[role](self, args, kwargs, node, mod)

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
        if role is None and short in loader_rules.EXPERT_MAPPING_FUNCTIONS:
            return loader_rules.EXPERT_MAPPING  # a classmethod or a re-export, by its name
        return role

    def _expert_mapping(self, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        """vLLM's expert params mapping (remotedbg.engines.loader_rules EXPERT_MAPPING), from the
        call's keyword arguments; the routed-experts prefix from the call, else the default the
        engine's own definition gives it (when its file was read)."""
        names = {key: kwargs.get(key) for _, key in loader_rules.EXPERT_SHARDS}
        experts = kwargs.get("num_experts")
        if not all(isinstance(v, str) for v in names.values()) or not isinstance(experts, int):
            return NOT_HANDLED
        if kwargs.get("num_redundant_experts") or experts > 4096:
            return NOT_HANDLED
        routed = kwargs.get("routed_experts_prefix", self._expert_prefix_default(node, mod))
        if not isinstance(routed, str):
            return NOT_HANDLED
        routed = f"{routed}." if routed else ""
        fused = (names["ckpt_gate_proj_name"], names["ckpt_up_proj_name"])
        return [(f"experts.{routed}w13_" if names[key] in fused else f"experts.{routed}w2_",
                 f"experts.{e}.{names[key]}.", e, shard)
                for e in range(experts) for shard, key in loader_rules.EXPERT_SHARDS]  # fmt: skip

    def _expert_prefix_default(self, node: ast.Call, mod: Module) -> Any:
        func = node.func.id if isinstance(node.func, ast.Name) else None
        helper = self._helper(func, mod) if func else None
        if helper is None:
            return ""  # FusedMoE.make_expert_params_mapping: no routed-experts prefix
        spec = helper.func.args
        defaults = dict(zip([a.arg for a in spec.args][-len(spec.defaults):] if spec.defaults
                            else [], spec.defaults, strict=False))  # fmt: skip
        value = defaults.get("routed_experts_prefix")
        if value is None:
            return ""
        return value.value if isinstance(value, ast.Constant) else UNKNOWN

    def _pipeline_group(self, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        size = self.engine_params.get("__pipeline_size__")
        if not isinstance(size, int):
            return NOT_HANDLED
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
        return NOT_HANDLED

    def _draft_quant_config_call(self, args: list, kwargs: dict, node: ast.Call,
                                 mod: Module) -> Any:  # fmt: skip
        return self._draft_quant_config(args[0] if args else kwargs.get("vllm_config"))

    def _auto_weights_loader(self, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        target = args[0] if args else None
        if not isinstance(target, Obj):
            return UNKNOWN
        def strings(key: str) -> list[str]:
            return [p for p in (kwargs.get(key) or []) if isinstance(p, str)]

        added = self._auto_loader_ignores(mod)
        return AutoLoader(
            target,
            strings("skip_prefixes"),
            strings("skip_substrs"),
            None if added is None else strings("ignore_unexpected_prefixes") + added[0],
            None if added is None else strings("ignore_unexpected_suffixes") + added[1],
        )

    def _auto_loader_ignores(self, mod: Module) -> tuple[list[str], list[str]] | None:
        """The prefixes and suffixes the release's AutoWeightsLoader.load_weights adds to what
        it ignores (vLLM 0.25.0 on: `.bias`, "typically from GPTQ models", 0.25.0 models/
        utils.py:401-402, 0.32.0 :457-458; none in 0.8.5-0.24.0), read from its code; None
        when that class was not read."""
        ref = self.index.resolve(mod, "AutoWeightsLoader")
        found = self.index.find_method(ref, "load_weights") if ref is not None else None
        if found is None:
            return None
        added: tuple[list[str], list[str]] = ([], [])
        for call in ast.walk(found[1]):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and isinstance(call.func.value, ast.Attribute)
                    and call.func.attr in ("append", "extend") and call.args):  # fmt: skip
                continue
            which = {"ignore_unexpected_prefixes": 0, "ignore_unexpected_suffixes": 1}.get(
                call.func.value.attr)
            if which is None:
                continue
            arg = call.args[0]
            items = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
            added[which].extend(i.value for i in items
                                if isinstance(i, ast.Constant) and isinstance(i.value, str))
        return added

    def _weight_loader(self, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        params = [a for a in args if isinstance(a, Param)]
        if not params:
            return NOT_HANDLED
        self.load(args, params[0], node, mod)
        return None

    _HELPERS: dict[str, Callable[..., Any]] = {
        loader_rules.WEIGHTS_MAPPER: _weights_mapper,
        loader_rules.KV_SCALE_REMAPPER: _kv_scale_remapper,
        loader_rules.DRAFT_QUANT_CONFIG: _draft_quant_config_call,
        loader_rules.AUTO_WEIGHTS_LOADER: _auto_weights_loader,
        loader_rules.WEIGHT_LOADER: _weight_loader,
        loader_rules.PIPELINE_GROUP: _pipeline_group,
        loader_rules.EXPERT_MAPPING: _expert_mapping,
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
        for head, entries in self._auto_groups(loader, prefix, items, node).items():
            child = obj.attrs.get(head)
            if self._child_loads(loader, child, entries):
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
                if self._auto_ignores(loader, prefix + head, prefix + name, node):
                    if isinstance(tensor, Tensor):
                        self.dropped_by_rule[tensor.name] = loader_rules.AUTO_IGNORE_CITATION
                    continue
                raise EngineRaises(
                    "ValueError",
                    f"There is no module or parameter named {prefix + name!r}",
                    node.lineno,
                    loader_rules.AUTO_RAISE_CITATION,
                )
        return None

    def _auto_ignores(self, loader: AutoLoader, qualname: str, full: str, node: ast.AST) -> bool:
        """AutoWeightsLoader._can_ignore_unexpected on a name no module or parameter takes:
        the child's name as a module (`qualname.`) or as a parameter, by prefix or suffix."""
        if loader.ignore_prefixes is None or loader.ignore_suffixes is None:
            if full.endswith(".bias"):
                raise Undecidable(f"line {getattr(node, 'lineno', '?')}: whether the release's "
                                  f"AutoWeightsLoader ignores {full!r} (its code was not read)")
            return False
        return any(n.startswith(p) for p in loader.ignore_prefixes
                   for n in (qualname + ".", qualname)) or any(
            qualname.endswith(s) for s in loader.ignore_suffixes)  # fmt: skip

    def _auto_groups(self, loader: AutoLoader, prefix: str, items: list, node) -> dict[str, list]:
        """The weights not skipped, by their first name part: (rest, tensor, name) each."""
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
        return groups

    def _child_loads(self, loader: AutoLoader, child: Any, entries: list) -> bool:
        """A child module with a `load_weights` of its own (not the loader's class) is handed
        its weights, as AutoWeightsLoader does."""
        if not (isinstance(child, Obj) and child.ref is not None and entries[0][0]):
            return False
        found = self.index.find_method(child.ref, "load_weights")
        if found is None or found[0].node is loader.obj.ref.node:  # type: ignore[union-attr]
            return False
        self.run_function(Bound(child, found[0], found[1]), [[(r, t) for r, t, _ in entries]], {})
        return True
