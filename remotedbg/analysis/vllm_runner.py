"""vLLM: whether VllmConfig.use_v2_model_runner picks V2 for a target, evaluated from the
release's own config/vllm.py when the launch environment leaves VLLM_USE_V2_MODEL_RUNNER unset
(pure).

0.22.0-0.28.0 ask `_is_default_v2_model_runner_model()` first and fall back to V1 when it says
no (0.22.0 config/vllm.py:498-499, :518-532: the target's architecture in
DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES and neither MoE nor quantized; 0.25.0 :557-574: listed or
not MoE, never hybrid or attention-free). That function is evaluated here on what the audit
knows of the target: its architectures, its config (MoE by the release's own
`num_expert_names`, quantized by `quantization_config`), its class's bases (IsHybrid,
IsAttentionFree) and a CUDA platform. The rest of use_v2_model_runner (features the deployment
may enable: hisparse, watermarking, stock torch.compile, sequence parallelism, custom logits
processors, ...; 0.33.0 config/vllm.py:731-767, :3053-3087) is not known to the audit: those
features are taken as unused, and the EAGLE methods are supported by V2 in every release.
"""

from __future__ import annotations

import ast
from typing import Any

from remotedbg.analysis.pysource import Module, walk
from remotedbg.engines import code_markers


class _Unknown(Exception):
    """The function reads something the audit does not know."""


def target_facts(
    config: dict | None, text: dict, bases: list[str] | None, expert_keys: list[str]
) -> dict:
    """model_config as `_is_default_v2_model_runner_model` reads it. `text`: the target's text
    config; `bases`: its class's base names (None: the class was not read, and whether it is
    hybrid or attention-free is not known); `expert_keys`: the release's num_expert_names
    (ModelArchConfigConvertorBase.get_num_experts, 0.25.0
    transformers_utils/model_arch_config_convertor.py:148-165: the first key present, a list's
    first item, else the largest n_routed_experts of a "moe" block in block_configs)."""
    experts: Any = next((text[k] for k in expert_keys if text.get(k) is not None), 0)
    if isinstance(experts, list):
        experts = experts[0] if experts else 0
    if not experts:
        blocks = text.get("block_configs") or []
        experts = max([b.get("n_routed_experts", 0) for b in blocks
                       if isinstance(b, dict) and b.get("block_type") == "moe"] or [0])  # fmt: skip
    model = {
        "runner_type": "generate",
        "architectures": list((config or {}).get("architectures") or []),
        "is_moe": bool(experts) and experts > 0,
        "is_quantized": (config or {}).get("quantization_config") is not None,
    }
    if bases is not None:
        model["is_hybrid"] = code_markers.VLLM_HYBRID_BASE in bases
        model["is_attention_free"] = code_markers.VLLM_ATTENTION_FREE_BASE in bases
    return model


def expert_keys(mod: Module | None) -> list[str] | None:
    """The `num_expert_names = [...]` list of the release's arch-config convertor."""
    for node in walk(mod.tree) if mod is not None else ():
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "num_expert_names" for t in node.targets)
            and isinstance(node.value, ast.List)
        ):
            return [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
    return None


def per_target_choice(mod: Module, model: dict) -> dict | None:
    """{"v2": bool, "where": "line"} when config/vllm.py's use_v2_model_runner falls back to V1
    on `not self._is_default_v2_model_runner_model()` and that function decides for `model`;
    None: the release has no per-target rule (0.29.0 on), or it reads what is not known."""
    funcs = {n.name: n for n in walk(mod.tree) if isinstance(n, ast.FunctionDef)}
    name = code_markers.VLLM_V2_TARGET_RULE
    chooser, rule = funcs.get("use_v2_model_runner"), funcs.get(name)
    if chooser is None or rule is None or name not in ast.unparse(chooser):
        return None
    try:
        v2 = _run(rule.body, {"self": {"model_config": model}}, mod, funcs)
    except (_Unknown, TypeError):
        return None
    if v2 is _NONE:
        return None
    return {"v2": bool(v2), "where": rule.lineno}


def _run(body: list[ast.stmt], env: dict, mod: Module, funcs: dict) -> Any:
    for stmt in body:
        if isinstance(stmt, ast.Return):
            return _eval(stmt.value, env, mod, funcs) if stmt.value else None
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            value = _eval(stmt.value, env, mod, funcs)
            env.update({t.id: value for t in stmt.targets})  # type: ignore[attr-defined]
        elif isinstance(stmt, ast.If):
            branch = stmt.body if _eval(stmt.test, env, mod, funcs) else stmt.orelse
            result = _run(branch, env, mod, funcs) if branch else _NONE
            if result is not _NONE:
                return result
        elif isinstance(stmt, ast.ImportFrom | ast.Import | ast.Expr | ast.Pass):
            continue
        else:
            raise _Unknown(ast.unparse(stmt))
    return _NONE


_NONE = object()  # a block that fell through without returning


def _eval(node: ast.expr | None, env: dict, mod: Module, funcs: dict) -> Any:  # noqa: C901
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        return _module_constant(mod, node.id, funcs)
    if isinstance(node, ast.Attribute):
        base = _eval(node.value, env, mod, funcs)
        if isinstance(base, dict) and node.attr in base:
            return base[node.attr]
        raise _Unknown(ast.unparse(node))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _eval(node.operand, env, mod, funcs)
    if isinstance(node, ast.BoolOp):
        for value in node.values:
            got = _eval(value, env, mod, funcs)
            if bool(got) is isinstance(node.op, ast.Or):
                return got
        return got
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _eval(node.left, env, mod, funcs), _eval(node.comparators[0], env, mod, funcs)
        op = type(node.ops[0])
        ops = {ast.Eq: lambda: left == right, ast.NotEq: lambda: left != right,
               ast.In: lambda: left in right, ast.NotIn: lambda: left not in right,
               ast.Is: lambda: left is right, ast.IsNot: lambda: left is not right}  # fmt: skip
        if op in ops:
            return ops[op]()
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        return _eval(node.left, env, mod, funcs) - _eval(node.right, env, mod, funcs)
    if isinstance(node, ast.Call):
        return _call(node, env, mod, funcs)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [_eval(e, env, mod, funcs) for e in node.elts]
    raise _Unknown(ast.unparse(node) if node is not None else "")


def _call(node: ast.Call, env: dict, mod: Module, funcs: dict) -> Any:
    func = node.func
    if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) in (2, 3):
        base, name = _eval(node.args[0], env, mod, funcs), _eval(node.args[1], env, mod, funcs)
        if isinstance(base, dict) and name in base:
            return base[name]
        raise _Unknown(ast.unparse(node))
    gen = node.args[0] if node.args else None
    if isinstance(func, ast.Name) and func.id == "any" and isinstance(gen, ast.GeneratorExp):
        comp = gen.generators[0]
        if len(gen.generators) != 1 or comp.ifs or not isinstance(comp.target, ast.Name):
            raise _Unknown(ast.unparse(node))
        return any(
            _eval(gen.elt, {**env, comp.target.id: item}, mod, funcs)
            for item in _eval(comp.iter, env, mod, funcs)
        )
    if isinstance(func, ast.Name) and func.id in funcs and not node.args:
        # a module function such as default_v2_model_runner_architectures() (0.27.0 :92-101)
        return _run(funcs[func.id].body, {}, mod, funcs)
    if isinstance(func, ast.Attribute) and ast.unparse(func) in code_markers.VLLM_PLATFORM_CALLS:
        return code_markers.VLLM_PLATFORM_CALLS[ast.unparse(func)]
    raise _Unknown(ast.unparse(node))


def _module_constant(mod: Module, name: str, funcs: dict) -> Any:
    """A module-level `NAME = frozenset({...})` / set / list of constants."""
    for stmt in mod.tree.body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in stmt.targets
        ):
            value = stmt.value
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id in ("frozenset", "set")
                and len(value.args) == 1
            ):
                value = value.args[0]
            return set(_eval(value, {}, mod, funcs))
    raise _Unknown(name)
