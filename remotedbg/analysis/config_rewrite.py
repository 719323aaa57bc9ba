"""How an engine's config loader rewrites a config that transformers cannot read (pure).

SGLang reads every config with transformers' `AutoConfig`; where that raises for a model_type
transformers does not know, the loader catches the error, rewrites the config.json's
`architectures` and `model_type` to ones it knows and reads it again: a DeepSeek-V3.2 config
(`deepseek_v32`, DeepseekV32ForCausalLM) becomes DeepseekV3ForCausalLM (0.5.6
srt/utils/hf_transformers_utils.py:155-183 `_load_deepseek_v32_model`, called at :221-228 under
`except ValueError` when `"deepseek_v32" in str(e)`; 0.5.11 srt/utils/hf_transformers/
common.py:317 with config.py:81-89). The draft's architecture is then renamed from the rewritten
one. Whether it happens depends on the transformers installed beside the engine (transformers
5.11.0 and later know deepseek_v32), so the rewrite is read from the box's code and applied
only where the caller says transformers lacks the type.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from remotedbg.analysis.pysource import Module, walk


@dataclass(frozen=True)
class Rewrite:
    model_type: str  # the type whose transformers error triggers it
    architectures: tuple[str, ...] | None  # what the loader writes (None: left as is)
    new_model_type: str | None
    where: str  # "rel:line function (called at rel:line)"


def _written_literals(func: ast.FunctionDef) -> tuple[tuple[str, ...] | None, str | None]:
    """`x["architectures"] = ["..."]` and `x["model_type"] = "..."` in the function's body."""
    archs, model_type = None, None
    for node in walk(func):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)):
            continue
        key, value = target.slice.value, node.value
        if key == "architectures" and isinstance(value, (ast.List, ast.Tuple)):
            names = [e.value for e in value.elts if isinstance(e, ast.Constant)]
            if names and all(isinstance(n, str) for n in names):
                archs = tuple(names)
        elif key == "model_type" and isinstance(value, ast.Constant):
            if isinstance(value.value, str):
                model_type = value.value
    return archs, model_type


def _error_texts(handler: ast.ExceptHandler) -> list[str]:
    """The strings the handler looks for in its error: `"x" in str(e)`."""
    if handler.name is None:
        return []
    found = []
    for node in walk(handler):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
            continue
        if not isinstance(node.ops[0], ast.In) or not isinstance(node.left, ast.Constant):
            continue
        right = node.comparators[0]
        if (isinstance(right, ast.Call) and isinstance(right.func, ast.Name)
                and right.func.id == "str" and len(right.args) == 1
                and isinstance(right.args[0], ast.Name) and right.args[0].id == handler.name
                and isinstance(node.left.value, str)):  # fmt: skip
            found.append(node.left.value)
    return found


def _called_names(node: ast.AST) -> set[str]:
    return {n.func.id for n in walk(node) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)}  # fmt: skip


def rewrites(modules: list[tuple[str, Module]]) -> list[Rewrite]:
    """The loader's rewrites in these (rel, module) files: a function that writes a literal
    architecture or model_type into a config, called from an `except` handler that tests the
    error's text for a model_type."""
    writers: dict[str, tuple[str, ast.FunctionDef, tuple[str, ...] | None, str | None]] = {}
    for rel, mod in modules:
        for name, func in mod.functions.items():
            archs, model_type = _written_literals(func)
            if archs or model_type:
                writers[name] = (rel, func, archs, model_type)
    out: list[Rewrite] = []
    for rel, mod in modules:
        for handler in (n for n in walk(mod.tree) if isinstance(n, ast.ExceptHandler)):
            called = _called_names(handler) & set(writers)
            for text in _error_texts(handler):
                for name in sorted(called):
                    w_rel, func, archs, model_type = writers[name]
                    rewrite = Rewrite(text, archs, model_type, f"{w_rel}:{func.lineno} {name} "
                                      f"(called at {rel}:{handler.lineno})")  # fmt: skip
                    if rewrite not in out:
                        out.append(rewrite)
    return out


def applies(config: dict, found: list[Rewrite]) -> Rewrite | None:
    """The rewrite the config's model_type triggers (None: none)."""
    model_type = config.get("model_type")
    return next((r for r in found if r.model_type == model_type), None)


def rewritten(config: dict, rewrite: Rewrite) -> dict:
    """The config as the loader reads it again after the rewrite (a copy)."""
    out = dict(config)
    if rewrite.architectures is not None:
        out["architectures"] = list(rewrite.architectures)
    if rewrite.new_model_type is not None:
        out["model_type"] = rewrite.new_model_type
    return out


def transformers_config_files(site: str, model_type: str) -> tuple[str, str]:
    """The files whose presence says whether the transformers in `site` knows `model_type`:
    its auto-config module (transformers is there at all) and the type's own configuration
    module (`transformers/models/<type>/configuration_<type>.py`, '-' read as '_' as
    transformers' `model_type_to_module_name` does)."""
    module = model_type.replace("-", "_")
    return (f"{site}/transformers/models/auto/configuration_auto.py",
            f"{site}/transformers/models/{module}/configuration_{module}.py")  # fmt: skip
