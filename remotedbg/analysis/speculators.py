"""vLLM's `speculators` draft format, read as the install reads it (pure).

A speculators checkpoint (vllm-project/speculators) keeps the draft's layer config under
`transformer_layer_config`, names `speculators_model_type` ("eagle3", ...) and
`architectures: ["Eagle3Speculator"]`, and says how to serve it in `speculators_config`
(`proposal_methods[0].speculative_tokens`, `verifier.name_or_path`). vLLM turns it into the
draft config its EAGLE classes are built from with the function its
`transformers_utils/configs/speculators/algos.py` registers for that type
(`@register_speculator("eagle3") def update_eagle3(config_dict, pre_trained_config)`), and into
the speculative config in `base.py` (method = the type, `peagle` served as eagle3;
num_speculative_tokens = the first proposal method's). That registered function is evaluated
here on the checkpoint's config: the release's own code decides the architectures, the norm
flags and their defaults.
"""

from __future__ import annotations

import ast
from typing import Any

from remotedbg.analysis.pysource import parse

#: Where vLLM keeps the format's readers (from 0.10.1; 0.8.5 has none).
ALGOS = "transformers_utils/configs/speculators/algos.py"
TYPE_KEY = "speculators_model_type"
#: base.py build_vllm_speculative_config: the method a type is served with (0.33.0
#: transformers_utils/configs/speculators/base.py:129-136).
SERVED_AS = {"peagle": "eagle3", "dflash2": "dflash"}


class Unsupported(Exception):
    """The release refuses the checkpoint (the updater raises), or its code is not modelled."""


def is_speculators(config: dict | None) -> bool:
    return isinstance(config, dict) and isinstance(config.get(TYPE_KEY), str)


def launch(config: dict) -> dict[str, Any]:
    """What base.py makes of the checkpoint for the launch: method, num_speculative_tokens and
    the verifier (the target, in `vllm serve SPECULATOR_DIR`)."""
    spec = config.get("speculators_config") if isinstance(config.get("speculators_config"),
                                                          dict) else {}  # fmt: skip
    methods = spec.get("proposal_methods") or [{}]
    first = methods[0] if isinstance(methods, list) and isinstance(methods[0], dict) else {}
    verifier = spec.get("verifier") if isinstance(spec.get("verifier"), dict) else {}
    kind = config.get(TYPE_KEY)
    return {"method": SERVED_AS.get(kind, kind),
            "num_speculative_tokens": first.get("speculative_tokens"),
            "verifier": verifier.get("name_or_path")}  # fmt: skip


def draft_config(algos_source: str, config: dict) -> dict[str, Any]:
    """The draft config the release builds: `transformer_layer_config` updated by the function
    algos.py registers for the checkpoint's type. Unsupported: no such function (the release
    raises "Expected one of ..."), it raises on this checkpoint, or it does what is not modelled."""
    tree = parse(algos_source)
    kind = config.get(TYPE_KEY)
    func = _registered(tree, kind) if tree is not None else None
    if func is None:
        raise Unsupported(f"{ALGOS} registers no updater for {TYPE_KEY} {kind!r}")
    layer = config.get("transformer_layer_config")
    built = dict(layer) if isinstance(layer, dict) else {}
    names = [a.arg for a in func.args.args]
    if len(names) < 2:
        raise Unsupported(f"{func.name} takes {len(names)} arguments")
    _Run({names[0]: config, names[1]: built}).block(func.body)
    return built


def _registered(tree: ast.Module, kind: Any) -> ast.FunctionDef | None:
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            first = deco.args[0] if isinstance(deco, ast.Call) and deco.args else None
            if isinstance(first, ast.Constant) and first.value == kind:
                return node
    return None


class _Run:
    """The statements such an updater is written in: assignments to names and to keys of the
    dicts it is given, `if` on their values, `raise`; anything else is Unsupported."""

    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env

    def block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # a docstring
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                self.assign(stmt.targets[0], self.value(stmt.value))
            elif isinstance(stmt, ast.If):
                self.block(stmt.body if self.value(stmt.test) else stmt.orelse)
            elif isinstance(stmt, ast.Raise):
                message = ""
                if isinstance(stmt.exc, ast.Call) and stmt.exc.args:
                    try:
                        message = str(self.value(stmt.exc.args[0]))
                    except Unsupported:
                        message = ast.unparse(stmt.exc.args[0])
                raise Unsupported(f"vLLM refuses the checkpoint: {message}".rstrip(": "))
            elif isinstance(stmt, ast.Pass):
                continue
            else:
                raise Unsupported(f"line {stmt.lineno}: {ast.unparse(stmt)[:80]}")

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, ast.Subscript):
            owner = self.value(target.value)
            if not isinstance(owner, dict):
                raise Unsupported(f"line {target.lineno}: assignment into a non-dict")
            owner[self.value(target.slice)] = value
        else:
            raise Unsupported(f"line {target.lineno}: {ast.unparse(target)}")

    def value(self, node: ast.expr) -> Any:  # noqa: C901 - one case per expression kind
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self.env:
                raise Unsupported(f"line {node.lineno}: {node.id} is not known")
            return self.env[node.id]
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.Dict):
            pairs = zip(node.keys, node.values, strict=True)
            return {self.value(k): self.value(v) for k, v in pairs if k is not None}
        if isinstance(node, ast.Subscript):
            owner, key = self.value(node.value), self.value(node.slice)
            try:
                return owner[key]
            except (KeyError, IndexError, TypeError) as exc:
                raise Unsupported(f"vLLM refuses the checkpoint: {type(exc).__name__} "
                                  f"{ast.unparse(node)}") from exc  # fmt: skip
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = self.value(node.func.value)
            if isinstance(owner, dict) and node.func.attr == "get" and not node.keywords:
                args = [self.value(a) for a in node.args]
                return owner.get(*args)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.value(node.operand)
        if isinstance(node, ast.BoolOp):
            values = [self.value(v) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self.value(node.left), self.value(node.comparators[0])
            compare = {ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
                       ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
                       ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}  # fmt: skip
            op = compare.get(type(node.ops[0]))
            if op is not None:
                return op(left, right)
        raise Unsupported(f"line {getattr(node, 'lineno', '?')}: {ast.unparse(node)[:80]}")
