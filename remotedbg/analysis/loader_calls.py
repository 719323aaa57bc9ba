"""Calls in the engine code the loader model runs (remotedbg.analysis.loader_model): what a
callee is (a bound method, a closure, a parameter's weight_loader, a method of a container, a
name only), the logging calls that mark a tensor as logged, the engine's settings registry
(`envs.NAME.get()`), and engine helpers by the role remotedbg.engines.loader_rules gives them.
A part of loader_model.Interpreter."""

from __future__ import annotations

import ast
import re
from typing import Any

from remotedbg.analysis.interp import builtins
from remotedbg.analysis.loader_values import (
    NOT_HANDLED,
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
    Mapper,
    Named,
    NeedsFork,
    Obj,
    Param,
    ParamDict,
    Super,
    Tensor,
    Undecidable,
    opaque,
)
from remotedbg.analysis.pysource import Module
from remotedbg.engines import code_markers

_CONCAT_FUNCTIONS = {"torch.cat", "torch.concat", "torch.concatenate"}
_SETTING_GET = re.compile(r"^\w+\.([A-Z][A-Z0-9_]*)\.get$")
_LOG_NAMES = {"warning", "warn", "info", "debug", "error", "warning_once", "info_once"}


class Calls:
    """Calls and methods."""

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
        if isinstance(callee, tuple) and len(callee) == 3 and callee[0] == "tensor-view":
            return callee[1]  # the same checkpoint tensor, its data laid out anew
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
            if value is not NOT_HANDLED:
                return value
        short = name.rsplit(".", 1)[-1]
        if short in _LOG_NAMES and ("logger" in name or "warnings" in name or "log" in name):
            if self.current:
                self.logged.add(self.current)
            return None
        found = self.builtin_by_name(name, args, kwargs, node, mod)
        if found is not NOT_HANDLED:
            return found
        if name in _CONCAT_FUNCTIONS and args and isinstance(args[0], (list, tuple)):
            return _concatenation(args[0])
        if name in builtins.REGEX_FUNCTIONS:
            return builtins.regex(name, args, kwargs)
        found = self.engine_helper(name, args, kwargs, node, mod)
        if found is not NOT_HANDLED:
            return found
        if short == "copy_" or name.endswith(".data.copy_"):
            return None
        if any(isinstance(a, Config) for a in [*args, *kwargs.values()]):
            return self._config_helper(name, args, kwargs, mod)
        return UNKNOWN

    def _config_helper(self, name: str, args: list, kwargs: dict, mod: Module) -> Any:
        """An engine helper computing a setting from the config (`is_deepseek_dsa(config)`,
        SGLang 0.5.14 deepseek_v2.py:1520), unless modelled (loader_rules): followed; what it
        cannot decide stays unknown."""
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
        declared = NOT_HANDLED
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
        if declared is NOT_HANDLED:
            return NOT_HANDLED
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


def _concatenation(items: list | tuple) -> Any:
    """`torch.cat([q_a, kv_a])` loaded into a fused parameter (SGLang 0.5.14
    kimi_k25_eagle3.py:461-471): every part is loaded."""
    parts = [v for v in items if isinstance(v, Tensor)]
    if parts and len(parts) == len(items):
        names = tuple(n for t in parts for n in (t.parts or (t.name,)))
        return Tensor(parts[0].name, names)
    return UNKNOWN
