"""Python builtins called by name in the engine code the loader model runs
(remotedbg.analysis.loader_model), on its values: the core's table (remotedbg.analysis.interp.
builtins) narrowed to the names it decides, and those that meet modules, configs and parameters
(`getattr(config, ...)`, `dict(self.named_parameters())`, `copy.copy(config)`). A part of
loader_model.Interpreter."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from remotedbg.analysis.interp import builtins
from remotedbg.analysis.loader_values import (
    NOT_HANDLED,
    UNKNOWN,
    Config,
    Loader,
    Named,
    Obj,
    Param,
    ParamDict,
    opaque,
)
from remotedbg.analysis.pysource import Module


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


class BuiltinsByName:
    """Builtins by name; each takes (name, args, kwargs, node, mod) and answers NOT_HANDLED
    where the arguments are not ones it models (the call goes on to the engine helpers)."""

    # each takes (name, args, kwargs, node, mod); NOT_HANDLED: the arguments are not ones it
    # models, the call goes on to the engine helpers
    def builtin_by_name(self, name: str, args: list, kwargs: dict, node: ast.Call,
                        mod: Module) -> Any:  # fmt: skip
        by_name = self._BY_NAME.get(name)
        return NOT_HANDLED if by_name is None else by_name(self, name, args, kwargs, node, mod)

    def _print(self, name: str, args: list, *_: Any) -> Any:
        return None

    def _copy(self, name: str, args: list, *_: Any) -> Any:
        if not args:
            return NOT_HANDLED
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
            return NOT_HANDLED
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
            return NOT_HANDLED
        value = args[0]
        if opaque(value):
            return UNKNOWN
        return True if isinstance(value, (Obj, Config)) else bool(value)

    def _map(self, name: str, args: list, kwargs: dict, node: ast.Call, mod: Module) -> Any:
        if len(args) != 2 or not isinstance(args[1], (list, tuple)):
            return NOT_HANDLED
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

    def builtin(self, name: str, args: list) -> Any:
        if name == "isinstance" and len(args) == 2 and args[0] is self.config:
            # the draft's config is a PretrainedConfig, no dict (its nested dicts are dicts):
            # `_hf_arch`, SGLang 0.5.14 configs/model_config.py:86-93
            return False if args[1] == Named("dict") else UNKNOWN
        return builtins.call(name, args, _BUILTINS)
