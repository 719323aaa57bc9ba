"""Speculative-decoding configuration checks (pure): draft checkpoint x launch args x engine code.

Every check returns a CheckResult dict
    {"check": <finding id>, "ran": bool, "findings": [...], "inconclusive": str | None,
     "facts": {...}}
`ran` is False (with `inconclusive` saying why) when an input it needs is missing: the checks
never guess. `facts` carries what was computed (captured layers, widths, ...) even when nothing
is wrong, so a report can show it.

Finding ids (stable): algorithm-mismatch, aux-layers-mismatch, fc-shape-mismatch,
norm-flag-unsupported, embedding-missing, token-map-ignored, accept-length-low (plus
aux-layers-ignored and unexpected-weights from remotedbg.analysis.crosscheck).

Layer-id conventions used here (SGLang's, stated in its model files): a model with
`layers_to_capture = [c, ...]` captures the INPUT of layer c (hidden + residual before the layer
runs), i.e. the OUTPUT of layer c - 1; trainers (and `eagle_aux_hidden_state_layer_ids`) name layer
OUTPUTS, hence the `val + 1` in most `set_eagle3_layers_to_capture`. "Physical layers" below are
layer-output ids; `train_layers` are layer-output ids too.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from remotedbg.agent.findings import ERROR, INFO, WARNING, finding
from remotedbg.analysis.crosscheck import AUX_KEYS_ELSEWHERE, aux_layers_ignored

CHECK_IDS = (
    "algorithm-mismatch",
    "aux-layers-mismatch",
    "fc-shape-mismatch",
    "norm-flag-unsupported",
    "embedding-missing",
    "token-map-ignored",
    "accept-length-low",
)
CAPTURE_METHODS = ("set_eagle3_layers_to_capture", "set_aux_hidden_state_layers")
CAPTURE_ATTRS = ("layers_to_capture", "aux_hidden_state_layers")
NORM_FLAGS = ("norm_output", "norm_before_fc", "fc_norm", "norm_before_residual")
NORM_TENSOR_PARTS = ("input_norm", "fc_norm", "hidden_norm", "norm_before_fc", "output_norm")
WRAPPERS = ("model",)
LOW_ACCEPT_RATIO = 0.4
MAX_PATHS = 64


def _result(check: str) -> dict[str, Any]:
    return {"check": check, "ran": True, "findings": [], "inconclusive": None, "facts": {}}


def _skip(result: dict[str, Any], reason: str) -> dict[str, Any]:
    result["ran"] = False
    result["inconclusive"] = f"{result['check']}: {reason}"
    return result


# ------------------------------------------------------------------------ architecture families
def arch_family(architectures: list[str]) -> str | None:
    """'eagle3', 'eagle' (EAGLE-1/2), 'mtp' (MTP/NextN heads) or None."""
    names = [a for a in architectures or [] if isinstance(a, str)]
    low = [a.lower() for a in names]
    if any("eagle3" in a or "eagle-3" in a for a in low):
        return "eagle3"
    if any("eagle" in a for a in low):
        return "eagle"
    if any("mtp" in a or "nextn" in a for a in low):
        return "mtp"
    return None


def _algorithm_family(engine: str, algorithm: str) -> str | None:
    algo = algorithm.strip().lower().replace("-", "_")
    if engine == "vllm":
        if algo == "eagle3":
            return "eagle3"
        if algo == "eagle":
            return "eagle"
        if "mtp" in algo:
            return "mtp"
        return None
    if algo == "eagle3":
        return "eagle3"
    if algo in ("eagle", "nextn"):
        return "eagle"  # SGLang maps NEXTN to EAGLE
    return None


def algorithm_mismatch(
    architectures: list[str] | None, algorithm: str | None, engine: str = "sglang"
) -> dict[str, Any]:
    """The draft's architectures against --speculative-algorithm (vLLM: speculative-config
    method). An EAGLE-3 head run as EAGLE/NEXTN accepts nothing: accept length exactly 1.00."""
    result = _result("algorithm-mismatch")
    if not architectures:
        return _skip(result, "the draft config names no architectures")
    if not algorithm:
        return _skip(
            result, "the speculative algorithm is unknown (no running server; pass --var args=...)"
        )
    drafted = arch_family(architectures)
    served = _algorithm_family(engine, str(algorithm))
    result["facts"] = {"draft_family": drafted, "algorithm": algorithm, "served_as": served}
    if drafted is None or served is None:
        return _skip(
            result,
            f"no rule for architectures {architectures} with algorithm {algorithm!r} ({engine})",
        )
    flag = "--speculative-config method" if engine == "vllm" else "--speculative-algorithm"
    if drafted == "eagle3" and served != "eagle3":
        result["findings"].append(
            finding(
                "algorithm-mismatch",
                ERROR,
                f"an EAGLE-3 draft is served with {flag} {algorithm}",
                f"The draft's architectures {architectures} name an EAGLE-3 head, but the server "
                f"runs it as {algorithm}: the head gets the wrong inputs and no draft token is "
                "accepted (accept length exactly 1.00, no error in the log). Use "
                + ("method 'eagle3'." if engine == "vllm" else "--speculative-algorithm EAGLE3."),
                {"architectures": architectures, "algorithm": algorithm, "engine": engine},
            )
        )
    elif drafted == "eagle" and served == "eagle3":
        result["findings"].append(
            finding(
                "algorithm-mismatch",
                ERROR,
                f"an EAGLE-1/2 draft is served with {flag} {algorithm}",
                f"The draft's architectures {architectures} name an EAGLE (not EAGLE-3) head; "
                "EAGLE3 feeds it three concatenated target layers it was not trained on.",
                {"architectures": architectures, "algorithm": algorithm, "engine": engine},
            )
        )
    return result


# ------------------------------------------------------------------ the target's layer capture
class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = _Unknown()


class _Config:
    def __init__(self, data: dict) -> None:
        self.data = data


class _Self:
    def __init__(self, config: dict) -> None:
        self.config = _Config(config)


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
        if isinstance(base, _Self) and node.attr == "config":
            return base.config
        if isinstance(base, _Config):
            return base.data.get(node.attr, UNKNOWN)
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
                return left * right
            if isinstance(node.op, ast.FloorDiv):
                return left // right
            if isinstance(node.op, ast.Mod):
                return left % right
        except (TypeError, ZeroDivisionError):
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
        if name in ("getattr", "hasattr") and len(args) >= 2 and isinstance(args[0], _Config):
            if name == "hasattr":
                return args[1] in args[0].data
            default = args[2] if len(args) > 2 else UNKNOWN
            return args[0].data.get(args[1], default)
    return UNKNOWN


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
        if node.func.attr in CAPTURE_METHODS:
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
            path["captures"].append(("delegate", ast.unparse(call.func), value, stmt.lineno))
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


def _fork(path: dict) -> dict:
    return {
        "env": dict(path["env"]),
        "captures": list(path["captures"]),
        "done": path["done"],
        "raised": path.get("raised", False),
    }


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def _method(cls: ast.ClassDef, names: tuple[str, ...]) -> ast.FunctionDef | None:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            return node
    return None


def _entry_classes(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets
        ):
            value = node.value
            elts = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            return [e.id for e in elts if isinstance(e, ast.Name)]
    return []


def _resolve_method(
    classes: dict[str, ast.ClassDef], name: str
) -> tuple[ast.ClassDef | None, ast.FunctionDef | None, str | None]:
    """The class (itself or an in-file base) defining the capture method for class `name`."""
    seen = set()
    todo = [name]
    while todo:
        current = todo.pop(0)
        if current in seen:
            continue
        seen.add(current)
        cls = classes.get(current)
        if cls is None:
            return None, None, current
        method = _method(cls, CAPTURE_METHODS)
        if method is not None:
            return cls, method, None
        todo.extend(b.id for b in cls.bases if isinstance(b, ast.Name))
    return None, None, None


def _run_method(
    method: ast.FunctionDef, layer_ids: Any, config: dict
) -> tuple[list[Any], list[str]]:
    """Distinct captured values over the method's paths, plus notes."""
    params = [a.arg for a in method.args.args]
    env: dict[str, Any] = {}
    if params:
        env[params[0]] = _Self(config)
    if len(params) > 1:
        env[params[1]] = layer_ids
    path = {"env": env, "captures": [], "done": False, "raised": False}
    paths = _exec(method.body, [path])
    values: list[Any] = []
    notes: list[str] = []
    for p in paths:
        if not p["captures"]:
            if p.get("raised"):
                notes.append("a path raises (the engine refuses this input)")
            continue
        kind, target, value, line = p["captures"][-1]
        item = {"kind": kind, "target": target, "value": value, "line": line}
        if item not in values:
            values.append(item)
    return values, notes


def _as_int_list(value: Any) -> list[int] | None:
    if isinstance(value, (list, tuple)) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return list(value)
    return None


def capture_indices(
    source: str,
    layer_ids: list[int] | None,
    target_config: dict | None,
    target_class: str | None = None,
) -> dict[str, Any]:
    """Evaluate the target model file's set_eagle3_layers_to_capture for `layer_ids` (None: the
    draft gives none). Returns {"layers_to_capture", "class", "line", "target", "delegated"} or
    {"error": reason}."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return {"error": f"the target model source does not parse: {exc}"}
    classes = _classes(tree)
    names = []
    if target_class:
        names.append(target_class)
    names += [n for n in _entry_classes(tree) if n not in names]
    names += [n for n, c in classes.items() if _method(c, CAPTURE_METHODS) and n not in names]
    cls = method = None
    missing_base = None
    for name in names:
        cls, method, missing = _resolve_method(classes, name)
        if method is not None:
            break
        if name == target_class and missing and missing != name:
            missing_base = missing
    if method is None or cls is None:
        if missing_base:
            return {
                "error": f"{target_class} inherits set_eagle3_layers_to_capture from "
                f"{missing_base}, defined in another file"
            }
        return {"error": "no class in the target model file defines set_eagle3_layers_to_capture"}
    config = dict(target_config or {})
    try:
        values, notes = _run_method(method, layer_ids, config)
    except _Unsupported as exc:
        return {"error": f"{cls.name}.{method.name}: {exc}"}
    if not values:
        return {"error": f"{cls.name}.{method.name} sets no capture layers we could follow"}
    distinct = []
    for item in values:
        if item["value"] not in distinct:
            distinct.append(item["value"])
    if len(distinct) > 1:
        return {
            "error": f"{cls.name}.{method.name} depends on something we cannot evaluate: {distinct}"
        }
    # the same value on every path: follow a delegation to the inner model when there is one
    chosen = next((v for v in values if v["kind"] == "delegate"), values[0])
    out = {
        "class": cls.name,
        "method_line": method.lineno,
        "line": chosen["line"],
        "target": chosen["target"],
        "layers_to_capture": chosen["value"],
        "delegated": None,
        "notes": notes,
    }
    if chosen["kind"] == "delegate":
        # `self.model.set_eagle3_layers_to_capture(v)`: follow the inner model's own method
        for other_name, other in classes.items():
            if other_name == cls.name:
                continue
            inner = _method(other, CAPTURE_METHODS)
            if inner is None:
                continue
            try:
                inner_values, _ = _run_method(inner, chosen["value"], config)
            except _Unsupported:
                continue
            if len(inner_values) == 1 and inner_values[0]["kind"] == "assign":
                out["delegated"] = {"class": other_name, "line": inner_values[0]["line"]}
                out["layers_to_capture"] = inner_values[0]["value"]
                break
    if out["layers_to_capture"] is UNKNOWN or _as_int_list(out["layers_to_capture"]) is None:
        missing = [] if "num_hidden_layers" in config else ["num_hidden_layers"]
        why = " (the target config's num_hidden_layers is unknown)" if missing else ""
        return {"error": f"{cls.name}.{method.name}: capture layers not computable{why}"}
    out["layers_to_capture"] = _as_int_list(out["layers_to_capture"])
    return out


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


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def capture_point(source: str) -> dict[str, Any]:
    """Whether the model's layer loop captures a layer's input ('input': index c = output of
    layer c - 1) or its output ('output'), from the order of `if i in self.layers_to_capture`
    and the layer call in the loop body. 'unknown' when no such loop is in the file."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {"point": "unknown", "evidence": None}
    found = []
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For):
            continue
        layer_names = _names_in(loop.target)
        for stmt in loop.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript):
                    if isinstance(node.value.value, ast.Attribute) and node.value.value.attr in (
                        "layers",
                        "h",
                        "blocks",
                    ):
                        layer_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        capture_at = call_at = None
        for index, stmt in enumerate(loop.body):
            for node in ast.walk(stmt):
                if (
                    capture_at is None
                    and isinstance(node, ast.Compare)
                    and any(isinstance(op, ast.In) for op in node.ops)
                    and any(
                        isinstance(c, ast.Attribute) and c.attr in CAPTURE_ATTRS
                        for c in node.comparators
                    )
                ):
                    capture_at = (index, node.lineno)
                if call_at is None and isinstance(node, ast.Call):
                    func = node.func
                    if isinstance(func, ast.Name) and func.id in layer_names:
                        call_at = (index, node.lineno)
                    elif isinstance(func, ast.Subscript) and isinstance(func.value, ast.Attribute):
                        if func.value.attr in ("layers", "h", "blocks"):
                            call_at = (index, node.lineno)
        if capture_at and call_at and capture_at[0] != call_at[0]:
            point = "input" if capture_at[0] < call_at[0] else "output"
            found.append({"point": point, "capture_line": capture_at[1], "call_line": call_at[1]})
    points = {f["point"] for f in found}
    if len(points) == 1:
        return {"point": points.pop(), "evidence": found[0]}
    if len(points) > 1:
        return {"point": "ambiguous", "evidence": found[:3]}
    return {"point": "unknown", "evidence": None}


def _draft_aux_ids(draft_config: dict) -> list[int] | None:
    eagle = draft_config.get("eagle_config")
    if isinstance(eagle, dict):
        return _as_int_list(eagle.get("eagle_aux_hidden_state_layer_ids"))
    return None


def _elsewhere_ids(draft_config: dict) -> tuple[str, list[int]] | None:
    for key in AUX_KEYS_ELSEWHERE:
        ids = _as_int_list(draft_config.get(key))
        if ids is not None:
            return key, ids
    eagle = draft_config.get("eagle_config")
    if isinstance(eagle, dict):
        for key in AUX_KEYS_ELSEWHERE:
            if key == "eagle_aux_hidden_state_layer_ids":
                continue
            ids = _as_int_list(eagle.get(key))
            if ids is not None:
                return f"eagle_config.{key}", ids
    return None


def parse_layers(value: Any) -> list[int] | None:
    """'1,29,57' / '[1, 29, 57]' / [1, 29, 57] -> [1, 29, 57]; '' / None -> None."""
    if value in (None, "", []):
        return None
    if isinstance(value, str):
        parts = [p for p in re.split(r"[\s,\[\]]+", value) if p]
        try:
            return [int(p) for p in parts] or None
        except ValueError:
            return None
    if isinstance(value, (list, tuple)):
        try:
            return [int(v) for v in value] or None
        except (TypeError, ValueError):
            return None
    return None


def aux_layers_mismatch(
    draft_config: dict,
    target_config: dict | None,
    target_source: str | None,
    train_layers: list[int] | None = None,
    target_class: str | None = None,
    source_path: str | None = None,
) -> dict[str, Any]:
    """The layers the engine will capture (the target file's set_eagle3_layers_to_capture applied
    to eagle_config.eagle_aux_hidden_state_layer_ids, or its default) against the training layers:
    `train_layers` when given, else the ids the draft config records (eagle_config's, else a key
    SGLang does not read). Also runs crosscheck.aux_layers_ignored."""
    result = _result("aux-layers-mismatch")
    result["findings"] += aux_layers_ignored(draft_config, target_config)
    if arch_family(draft_config.get("architectures") or []) not in ("eagle3", None):
        return _skip(result, "not an EAGLE-3 draft: no aux hidden states are captured")
    if not target_source:
        return _skip(result, "the target model's source file was not found or not read")
    if not target_class and target_config:
        archs = target_config.get("architectures") or []
        target_class = archs[0] if archs and isinstance(archs[0], str) else None
    given = _draft_aux_ids(draft_config)
    computed = capture_indices(target_source, given, target_config, target_class)
    rule = conversion_rule(target_source, target_class)
    point = capture_point(target_source)
    facts: dict[str, Any] = {
        "source": source_path,
        "target_class": target_class,
        "draft_layer_ids": given,
        "ids_read_from": "eagle_config.eagle_aux_hidden_state_layer_ids" if given else None,
        "conversion": rule,
        "capture_point": point["point"],
        "capture_point_evidence": point["evidence"],
    }
    result["facts"] = facts
    if "error" in computed:
        return _skip(result, computed["error"])
    capture = computed["layers_to_capture"]
    facts["layers_to_capture"] = capture
    facts["set_at"] = f"{source_path or 'target model'}:{computed['line']} ({computed['class']})"
    if computed.get("delegated"):
        facts["set_at"] += f" -> {computed['delegated']['class']}:{computed['delegated']['line']}"
    assumed = point["point"] not in ("input", "output")
    offset = 0 if point["point"] == "output" else 1
    physical = [c - offset for c in capture]
    facts["physical_layers"] = physical
    facts["capture_point_assumed"] = assumed
    if train_layers is not None:
        trained, trained_from, severity = list(train_layers), "--var train_layers", ERROR
    elif given is not None:
        trained, trained_from, severity = (
            given,
            "eagle_config.eagle_aux_hidden_state_layer_ids",
            (WARNING),
        )
    elif _elsewhere_ids(draft_config):
        key, trained = _elsewhere_ids(draft_config)  # type: ignore[misc]
        trained_from, severity = key, WARNING
    else:
        return _skip(
            result,
            f"the training layers are unknown (the engine captures layer outputs {physical}); "
            "pass --var train_layers=...",
        )
    facts["train_layers"] = trained
    facts["train_layers_from"] = trained_from
    if sorted(trained) == sorted(physical):
        return result
    note = ""
    if assumed:
        note = (
            " (capture point assumed to be the layer input, SGLang's usual: the layer loop was "
            "not found in this file)"
        )
    result["findings"].append(
        finding(
            "aux-layers-mismatch",
            severity,
            "the target captures other hidden-state layers than the draft was trained on",
            f"The engine will capture layers_to_capture={capture}, i.e. the outputs of layers "
            f"{physical}{note}; training used the outputs of layers {trained} ({trained_from}). "
            f"Conversion rule of {target_class or 'the target'}'s set_eagle3_layers_to_capture: "
            f"{rule}."
            + (
                " The draft config's ids are taken as the training record (trainers write layer "
                "outputs); pass --var train_layers to confirm."
                if severity == WARNING
                else ""
            ),
            {
                "set_at": facts["set_at"],
                "draft_layer_ids": given,
                "layers_to_capture": capture,
                "physical_layers": physical,
                "train_layers": trained,
                "train_layers_from": trained_from,
                "conversion": rule,
                "capture_point": point["point"],
                "target_num_hidden_layers": (target_config or {}).get("num_hidden_layers"),
            },
        )
    )
    return result


# ------------------------------------------------------------------------------ tensor checks
def _parts(name: str) -> list[str]:
    parts = name.split(".")
    while parts and parts[0] in WRAPPERS:
        parts = parts[1:]
    return parts


def _shape_of(tensors: list[dict], wanted: list[str]) -> tuple[str, list[int]] | None:
    for t in tensors:
        if _parts(t.get("name", "")) == wanted:
            return t["name"], list(t.get("shape") or [])
    return None


def fc_shape_mismatch(
    tensors: list[dict],
    draft_config: dict,
    target_config: dict | None,
    aux_count: int | None = None,
) -> dict[str, Any]:
    """fc.weight's input width against target hidden size x number of captured layers."""
    result = _result("fc-shape-mismatch")
    if arch_family(draft_config.get("architectures") or []) != "eagle3":
        return _skip(result, "not an EAGLE-3 draft (its fc is not fed aux hidden states)")
    fc = _shape_of(tensors, ["fc", "weight"])
    if fc is None:
        return _skip(result, "the checkpoint has no fc.weight")
    name, shape = fc
    if len(shape) != 2:
        return _skip(result, f"{name} has shape {shape}, not 2-D")
    hidden, hidden_from = None, None
    if target_config and isinstance(target_config.get("hidden_size"), int):
        hidden, hidden_from = target_config["hidden_size"], "target config hidden_size"
    elif isinstance(draft_config.get("target_hidden_size"), int):
        hidden, hidden_from = draft_config["target_hidden_size"], "draft config target_hidden_size"
    if hidden is None:
        return _skip(result, "the target hidden size is unknown (no target config)")
    ids = _draft_aux_ids(draft_config)
    count = aux_count or (len(ids) if ids else 3)
    expected = hidden * count
    result["facts"] = {
        "tensor": name,
        "shape": shape,
        "target_hidden_size": hidden,
        "hidden_size_from": hidden_from,
        "aux_layers": count,
        "expected_in": expected,
    }
    if shape[1] != expected:
        result["findings"].append(
            finding(
                "fc-shape-mismatch",
                ERROR,
                f"fc.weight takes {shape[1]} inputs, the engine will feed {expected}",
                f"{name} has shape {shape} ([out, in]); the target's hidden size {hidden} "
                f"({hidden_from}) x {count} captured layers = {expected}. The draft was trained "
                "for another target or another number of aux layers.",
                result["facts"],
            )
        )
    return result


def source_identifiers(source: str) -> set[str]:
    """Every identifier the code uses (names, attributes, args, defs) and every identifier-like
    word inside its string constants; comments do not count."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", source))
    words: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.arg):
            words.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            words.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            words.add(node.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", node.value))
    return words


def _config_flags(draft_config: dict) -> dict[str, Any]:
    flags = {}
    for key in NORM_FLAGS:
        if key in draft_config:
            flags[key] = draft_config[key]
    eagle = draft_config.get("eagle_config")
    if isinstance(eagle, dict):
        for key in NORM_FLAGS:
            if key in eagle:
                flags[f"eagle_config.{key}"] = eagle[key]
    return flags


def norm_flag_unsupported(
    draft_config: dict,
    tensor_names: list[str],
    class_source: str | None,
    class_path: str | None = None,
) -> dict[str, Any]:
    """A norm flag set in the draft config, or a trained norm tensor, that the engine's draft
    model code never references: the engine builds the head without it."""
    result = _result("norm-flag-unsupported")
    flags = {k: v for k, v in _config_flags(draft_config).items() if v}
    trained: dict[str, list[str]] = {}
    for name in tensor_names:
        for part in _parts(name):
            if part in NORM_TENSOR_PARTS:
                trained.setdefault(part, []).append(name)
    result["facts"] = {"flags_set": flags, "norm_tensors": trained, "source": class_path}
    if not flags and not trained:
        return result  # nothing optional was trained or asked for
    if not class_source:
        return _skip(result, "the engine's draft-model source was not found or not read")
    words = source_identifiers(class_source)
    unsupported = []
    for key, value in flags.items():
        word = key.split(".")[-1]
        if word not in words:
            unsupported.append({"config": key, "value": value})
    for part, names in trained.items():
        if part not in words:
            unsupported.append({"tensor": names[:5]})
    result["facts"]["unsupported"] = unsupported
    if unsupported:
        labels = [u.get("config") or ", ".join(u["tensor"]) for u in unsupported]
        result["findings"].append(
            finding(
                "norm-flag-unsupported",
                ERROR,
                "the draft was trained with a norm the engine's draft model does not have",
                f"{class_path or 'The engine draft-model file'} never references "
                f"{', '.join(labels)}: the flag is ignored and/or the trained weight is skipped, "
                "so the served head computes something else than the trained one. Use an engine "
                "version that implements it, or retrain without it.",
                {"source": class_path, "unsupported": unsupported, "flags_set": flags},
            )
        )
    return result


def _methods_named(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def embedding_missing(
    draft_config: dict,
    target_config: dict | None,
    tensor_names: list[str],
    class_source: str | None,
    class_path: str | None = None,
) -> dict[str, Any]:
    """The draft keeps its own embedding (hidden size differs from the target's, so the engine
    cannot share the target's; or its class has embed_tokens and no set_embed*), but the
    checkpoint has no embed_tokens weight: the head runs on an uninitialised embedding."""
    result = _result("embedding-missing")
    has_embed = [n for n in tensor_names if "embed_tokens" in _parts(n)]
    draft_hidden = draft_config.get("hidden_size")
    target_hidden = (target_config or {}).get("hidden_size") or draft_config.get(
        "target_hidden_size"
    )
    reasons = []
    if isinstance(draft_hidden, int) and isinstance(target_hidden, int):
        if draft_hidden != target_hidden:
            reasons.append(
                f"draft hidden_size {draft_hidden} != target hidden size {target_hidden}: the "
                "engine cannot share the target's embedding"
            )
    methods = _methods_named(class_source) if class_source else set()
    words = source_identifiers(class_source) if class_source else set()
    if class_source and "embed_tokens" in words:
        if not methods & {"set_embed", "set_embed_and_head"}:
            reasons.append(f"{class_path or 'the draft class'} has embed_tokens and no set_embed*")
    result["facts"] = {
        "checkpoint_embed_tensors": has_embed,
        "draft_hidden_size": draft_hidden,
        "target_hidden_size": target_hidden,
        "own_embedding_reasons": reasons,
        "source": class_path,
    }
    if has_embed:
        return result
    if not reasons:
        if not class_source and not (
            isinstance(draft_hidden, int) and isinstance(target_hidden, int)
        ):
            return _skip(
                result,
                "cannot tell whether the draft shares the target's embedding (no hidden sizes, "
                "no draft-model source)",
            )
        return result  # shares the target's embedding: none needed in the checkpoint
    result["findings"].append(
        finding(
            "embedding-missing",
            ERROR,
            "the draft needs its own embedding but the checkpoint has none",
            "; ".join(reasons) + ". No tensor named *embed_tokens* is in the checkpoint, so the "
            "draft embeds tokens with untrained weights.",
            result["facts"],
        )
    )
    return result


# --------------------------------------------------------------------------- launch + figures
def token_map_ignored(spec: dict | None, engine: str = "sglang") -> dict[str, Any]:
    result = _result("token-map-ignored")
    if not spec:
        return _skip(result, "the launch arguments are unknown")
    token_map = spec.get("token_map")
    algorithm = spec.get("algorithm")
    result["facts"] = {"token_map": token_map, "algorithm": algorithm}
    if not token_map:
        return result
    if not algorithm:
        return _skip(result, "--speculative-token-map is set but the algorithm is unknown")
    if str(algorithm).upper() == "EAGLE3":
        result["findings"].append(
            finding(
                "token-map-ignored",
                WARNING,
                "--speculative-token-map is ignored with EAGLE3",
                "EAGLE-3 drafts carry their own vocab map (d2t) in the checkpoint; SGLang drops "
                f"the given token map {token_map} for EAGLE3 (it only applies to EAGLE/FR-Spec).",
                {"token_map": token_map, "algorithm": algorithm, "engine": engine},
            )
        )
    return result


def observed_accept_length(server: dict) -> tuple[float | None, str | None, dict]:
    """The accept length seen: log window mean, else /metrics gauge, else /server_info."""
    seen: dict[str, Any] = {}
    log = server.get("log") or {}
    fig = (log.get("figures") or {}).get("accept_length")
    if fig:
        seen["log"] = {
            "mean": fig["mean"],
            "first": fig["first"],
            "last": fig["last"],
            "lines": fig["count"],
            "path": log.get("path"),
        }
    metrics = server.get("metrics") or {}
    if metrics.get("spec_accept_length") is not None:
        seen["metrics"] = metrics["spec_accept_length"]
    info = server.get("server_info") or {}
    if info.get("avg_spec_accept_length") is not None:
        seen["server_info"] = info["avg_spec_accept_length"]
    if "log" in seen:
        return seen["log"]["mean"], f"the log, mean of {seen['log']['lines']} lines", seen
    if "metrics" in seen:
        return seen["metrics"], "/metrics spec_accept_length", seen
    if "server_info" in seen:
        return seen["server_info"], "/server_info avg_spec_accept_length", seen
    return None, None, seen


def accept_length_low(server: dict | None, ratio: float = LOW_ACCEPT_RATIO) -> dict[str, Any]:
    result = _result("accept-length-low")
    if not server:
        return _skip(result, "no server and no log to read accept length from")
    spec = server.get("spec") or {}
    observed, how, seen = observed_accept_length(server)
    steps = spec.get("num_steps")
    ceiling = steps + 1 if isinstance(steps, int) else None
    draft_tokens = spec.get("num_draft_tokens")
    if ceiling is not None and isinstance(draft_tokens, int) and 0 < draft_tokens < ceiling:
        ceiling = draft_tokens
    result["facts"] = {"observed": observed, "from": how, "seen": seen, "ceiling": ceiling}
    if observed is None:
        notes = [str(m.get("error")) for m in (server.get("metrics"), server.get("log")) if m]
        extra = f" ({'; '.join(n for n in notes if n and n != 'None')})" if any(notes) else ""
        return _skip(result, "no accept length observed (no decode lines, no metrics)" + extra)
    if ceiling is None:
        return _skip(
            result,
            f"accept length {observed} seen but the ceiling is unknown "
            "(no --speculative-num-steps in the args or the log's ServerArgs)",
        )
    result["facts"]["ratio"] = round(observed / ceiling, 3)
    if observed < ratio * ceiling:
        nothing = observed < 1.05
        result["findings"].append(
            finding(
                "accept-length-low",
                ERROR if nothing else WARNING,
                f"accept length {observed:.2f} of a possible {ceiling}",
                f"The observed accept length ({how}) is {observed:.2f}, under "
                f"{int(ratio * 100)}% of its ceiling num_steps + 1 = {ceiling}. "
                + (
                    "1.00 means no draft token is ever accepted: typical of an algorithm "
                    "mismatch, a wrong vocab map, or a head fed other layers than in training."
                    if nothing
                    else "Check the aux layers, norm flags and the vocab map."
                ),
                {
                    "observed": observed,
                    "from": how,
                    "ceiling": ceiling,
                    "num_steps": steps,
                    "num_draft_tokens": draft_tokens,
                    "seen": seen,
                },
            )
        )
    return result


# ------------------------------------------------------------------------------------ all
def run_checks(
    *,
    draft_config: dict | None,
    tensors: list[dict] | None,
    target_config: dict | None = None,
    target_source: str | None = None,
    target_source_path: str | None = None,
    draft_class_source: str | None = None,
    draft_class_path: str | None = None,
    server: dict | None = None,
    train_layers: list[int] | None = None,
) -> dict[str, Any]:
    """All checks for one draft (and the server that runs it, if any).
    Returns {"findings", "inconclusive": [reasons], "checks": {id: CheckResult}}."""
    engine = (server or {}).get("engine") or "sglang"
    spec = (server or {}).get("spec") if server else None
    checks: dict[str, dict[str, Any]] = {}
    config = draft_config or {}
    names = [t.get("name", "") for t in tensors or []]
    if draft_config is None:
        for check in CHECK_IDS[:5]:
            checks[check] = _skip(_result(check), "the draft checkpoint was not read")
    else:
        checks["algorithm-mismatch"] = algorithm_mismatch(
            config.get("architectures"), (spec or {}).get("algorithm"), engine
        )
        checks["aux-layers-mismatch"] = aux_layers_mismatch(
            config, target_config, target_source, train_layers, None, target_source_path
        )
        captured = checks["aux-layers-mismatch"]["facts"].get("layers_to_capture")
        checks["fc-shape-mismatch"] = fc_shape_mismatch(
            tensors or [], config, target_config, len(captured) if captured else None
        )
        checks["norm-flag-unsupported"] = norm_flag_unsupported(
            config, names, draft_class_source, draft_class_path
        )
        checks["embedding-missing"] = embedding_missing(
            config, target_config, names, draft_class_source, draft_class_path
        )
    checks["token-map-ignored"] = token_map_ignored(spec, engine)
    checks["accept-length-low"] = accept_length_low(server)
    findings = [f for c in checks.values() for f in c["findings"]]
    inconclusive = [c["inconclusive"] for c in checks.values() if c["inconclusive"]]
    if not findings and not inconclusive:
        findings.append(
            finding(
                "spec-config-cleared",
                INFO,
                "the speculative-decoding configuration checks found nothing wrong",
                "Checked: " + ", ".join(checks) + ".",
                {},
            )
        )
    return {"findings": findings, "inconclusive": inconclusive, "checks": checks}
