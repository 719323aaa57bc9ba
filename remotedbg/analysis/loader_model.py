"""Which checkpoint tensors an engine's draft-model loader keeps, drops or chokes on.

The engine's own code decides, read from the box: the draft class's `__init__` (through its
bases, across files) gives the module tree and so the parameter names; its `load_weights` (and
the base-class or child-module `load_weights` it calls) is then executed abstractly over the
checkpoint's tensor names. Names are concrete strings, so every `"d2t" in name`, `name.replace`,
`params_dict[name]` is decided exactly; tensors are opaque. Whatever the interpreter cannot decide
(a condition on an unknown value, an unsupported statement, a budget exceeded) makes the whole
model `unknown` with the reason and the line: the checks built on it then say inconclusive.

Engine helpers that are not worth interpreting (vLLM's AutoWeightsLoader, leaf layer classes)
are modelled in remotedbg.engines.loader_rules, once, with the releases they were read in.
"""

from __future__ import annotations

from remotedbg.analysis.interp import Budget, Decisions, TooManyPaths, Visitor, explore
from remotedbg.analysis.loader_builtins import BuiltinsByName
from remotedbg.analysis.loader_calls import Calls
from remotedbg.analysis.loader_engine import EngineHelpers
from remotedbg.analysis.loader_expressions import Expressions
from remotedbg.analysis.loader_statements import Statements
from remotedbg.analysis.loader_tree import TreeBuilder
from remotedbg.analysis.loader_values import (
    Config,
    EngineRaises,
    LoadModel,
    Node,
    Obj,
    Tensor,
    Undecidable,
)
from remotedbg.analysis.pysource import ClassRef, SourceIndex

STEP_LIMIT = 400_000
DEPTH_LIMIT = 16


class Interpreter(Statements, Expressions, Calls, BuiltinsByName, EngineHelpers, Visitor):
    """The loader model's abstract interpreter: the run's state (the config, the decisions
    forced on this run, the budgets, what was loaded, consumed, dropped or logged) and the
    module tree; each part of the visitor is a module of its own (loader_statements,
    loader_expressions, loader_calls, loader_builtins, loader_engine; the `__init__` walk:
    loader_tree)."""

    def __init__(
        self,
        index: SourceIndex,
        config: dict,
        forced: dict | None = None,
        engine_params: dict | None = None,
    ) -> None:
        self.index = index
        self.config = Config(config)
        self.decisions = Decisions(forced or {})
        self.engine_params = engine_params or {}
        self.budget = Budget(STEP_LIMIT, DEPTH_LIMIT, Undecidable)
        self.loads: list[tuple[str, str, str]] = []  # (tensor, param, where)
        self.special: dict[str, str] = {}
        self.dropped_by_rule: dict[str, str] = {}
        self.logged: set[str] = set()
        self.current: str | None = None
        self.root: Obj | None = None
        self.tree = TreeBuilder(self)

    # ------------------------------------------------------------------ the module tree
    def next_in_mro(self, obj: Obj, cls: ClassRef) -> ClassRef | None:
        if obj.ref is None:
            return None
        chain = self.index.mro(obj.ref)
        for i, item in enumerate(chain):
            if item.node is cls.node and i + 1 < len(chain):
                return chain[i + 1]
        return None

    def path_of(self, node: Node) -> str:
        """`model.layers.0.` for a node below the root module ('' for the root)."""
        todo: list[tuple[Node, str]] = [(self.root.node, "")] if self.root else []
        seen: set[int] = set()
        while todo:
            current, prefix = todo.pop()
            if current is node:
                return prefix
            if id(current) in seen:
                continue
            seen.add(id(current))
            todo += [(child, f"{prefix}{key}.") for key, child in current.children.items()]
        return ""

    # ------------------------------------------------------------------ execution
    def tick(self) -> None:
        self.budget.tick()

def simulate_load(
    index: SourceIndex,
    draft_module_path: str,
    class_name: str,
    tensor_names: list[str],
    draft_config: dict,
    engine_params: dict | None = None,
    max_runs: int = 16,
) -> LoadModel:
    """Run the draft class's load_weights over the checkpoint's tensor names. A condition the
    code leaves open (a launch setting not known here) is tried both ways; when the ways
    disagree on any tensor, the model is `unknown` and says which condition decides."""

    def run(decisions: Decisions) -> LoadModel:
        return _simulate_once(index, draft_module_path, class_name, tensor_names, draft_config,
                              engine_params, decisions.forced)  # fmt: skip

    try:
        results = [(path.forced, path.result) for path in explore(run, max_runs=max_runs)]
    except TooManyPaths:
        return LoadModel("unknown", reason="too many undecided conditions in the loader code")
    first = results[0][1]
    for _, other in results[1:]:
        if _signature(other) != _signature(first):
            keys = sorted({k for f, _ in results for k in f})
            conditions = "; ".join(f"line {k[0]}: `{k[2][:80]}`" for k in keys)
            return LoadModel(
                "unknown",
                reason=f"what the loader does depends on settings not known here ({conditions})",
                draft_class=first.draft_class,
            )
    return first


def _signature(model: LoadModel) -> tuple:
    return (
        model.status,
        model.reason,
        tuple(sorted((k, v["outcome"]) for k, v in model.outcomes.items())),
        tuple(model.unfilled()),
    )


def _simulate_once(
    index: SourceIndex,
    draft_module_path: str,
    class_name: str,
    tensor_names: list[str],
    draft_config: dict,
    engine_params: dict | None,
    forced: dict,
) -> LoadModel:
    mod = index.module_at(draft_module_path)
    if mod is None:
        return LoadModel("unknown", reason=f"{draft_module_path} was not read or does not parse")
    ref = index.resolve(mod, class_name)
    if ref is None:
        return LoadModel("unknown", reason=f"no class {class_name} in {draft_module_path}")
    interp = Interpreter(index, draft_config, forced, engine_params)
    result = LoadModel("ok", draft_class=f"{class_name} ({ref.where})")
    try:
        obj = interp.tree.instantiate(ref)
        interp.root = obj
        result.required = obj.node.leaves()
        weights = [(n, Tensor(n)) for n in tensor_names]
        interp.call_method(obj, ref, "load_weights", [weights])
    except EngineRaises as exc:
        result.status = "raises"
        result.raised = {
            "kind": exc.kind,
            "message": exc.message,
            "at": f"{exc.path}:{exc.line}",
            "tensor": interp.current,
        }
    except Undecidable as exc:
        return LoadModel("unknown", reason=str(exc), draft_class=result.draft_class)
    except RecursionError:
        return LoadModel("unknown", reason="the loader code nests too deeply to follow")
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        # engine code is hostile input: an operation the interpreter does not model on the
        # values it met (unhashable keys, odd types) makes the model unknown, never a crash
        return LoadModel(
            "unknown",
            reason=f"the loader code does something not modelled ({type(exc).__name__}: {exc})",
            draft_class=result.draft_class,
        )
    result.approximate = interp.tree.approximate
    for tensor, param, where in interp.loads:
        result.outcomes.setdefault(tensor, {"outcome": "loaded", "params": [], "at": where})
        result.outcomes[tensor]["params"].append(param)
    result.loaded_params = sorted({p for _, p, _ in interp.loads})
    for name in tensor_names:
        if name in result.outcomes:
            continue
        if name in interp.special:
            result.outcomes[name] = {"outcome": "consumed", "as": interp.special[name]}
        elif result.raised and result.raised.get("tensor") == name:
            result.outcomes[name] = {"outcome": "raises", **result.raised}
        elif result.status == "raises" and name not in interp.logged:
            result.outcomes[name] = {"outcome": "not-reached"}
        else:
            how = "logged" if name in interp.logged else "silent"
            entry = {"outcome": "dropped", "how": how}
            if name in interp.dropped_by_rule:
                entry["by"] = interp.dropped_by_rule[name]
            result.outcomes[name] = entry
    return result
