"""Facts about how an engine install serves a draft, read from its code (pure).

Each function takes the install's code as read (remotedbg.actions.engine_code.EngineCode, or any
object with `index`, `serving_hits`, `engine`, `install`, `rel()`, `path()`) and returns a plain
dict with the answer, the evidence (file:line) and, when the code does not decide, `None` and the
reason. Nothing here guesses: an undecided fact makes the checks built on it inconclusive.
"""

from __future__ import annotations

import ast
from typing import Any

from remotedbg.analysis import vllm_runner
from remotedbg.analysis.loader_model import Interpreter
from remotedbg.analysis.loader_values import Config, EngineRaises, Undecidable
from remotedbg.analysis.pysource import ClassRef, Module, parse, walk
from remotedbg.engines import code_markers
from remotedbg.engines.profiles import engine_profile
from remotedbg.engines.text_config import text_config


def file_facts(source: str) -> dict[str, Any] | None:
    """What one serving file says, in one walk of its tree (None: it does not parse): the
    embedding-sharing evidence [line, text], where it reads the aux-ids key [line, nested in
    eagle_config], the capture methods it calls, the draft decode backends it accepts (None:
    not this file), the default of vLLM's runner env var [found, default] (a non-constant
    default is "?")."""
    tree = parse(source)
    if tree is None:
        return None
    embed: list[list] = []
    head: list[list] = []
    aux: list[list] = []
    calls: list[str] = []
    for node in walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in code_markers.EMBED_SHARING_CALLS:
                embed.append([node.lineno, f"{node.func.attr}(...)"])
            if node.func.attr in code_markers.HEAD_SHARING_CALLS:
                head.append([node.lineno, f"{node.func.attr}(...)"])
            if node.func.attr in code_markers.CAPTURE_METHODS:
                calls.append(node.func.attr)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == "embed_tokens" for t in node.targets
        ):
            value = ast.unparse(node.value)
            if "target" in value:
                embed.append([node.lineno, f"embed_tokens = {value[:60]}"])
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == "lm_head" for t in node.targets
        ):
            value = ast.unparse(node.value)
            if "target" in value:
                head.append([node.lineno, f"lm_head = {value[:60]}"])
        if isinstance(node, (ast.Call, ast.Subscript)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Constant) and child.value == code_markers.AUX_IDS_KEY:
                    aux.append([getattr(node, "lineno", 0), "eagle_config" in ast.unparse(node)])
    env = code_markers.VLLM_RUNNER_ENV
    found, default = _getenv_default(tree, env) if env in source else (False, None)
    return {
        "embed": embed,
        "head": head,
        "aux": aux,
        "calls": list(dict.fromkeys(calls)),
        "backends": _decode_backends(tree, source),
        "runner_env": [found, default if default is None or isinstance(default, str) else "?"],
    }


def import_candidates(name: str, source: str, path: str = "") -> list[str]:
    """The modules (dotted, absolute) that module `name`'s classes may come from: those its
    capitalised names are imported from, and those of the helpers it calls with the config as
    an argument (`is_deepseek_dsa(config)`: the loader model computes their answer from the
    draft's config). Empty when the source does not parse."""
    tree = parse(source)
    if tree is None:
        return []
    helpers = {
        node.func.id
        for node in walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and any(isinstance(a, ast.Name) and a.id == "config" for a in node.args)
    }
    mod = Module.build(name, path, tree, source)
    out: list[str] = []
    for local, target in mod.imports.items():
        if local[:1].isupper() or local in helpers:
            out.append(target.partition(":")[0])
    return list(dict.fromkeys(out))


def serving_facts(
    code: Any, env: dict | None = None, target: dict | None = None
) -> list[tuple[str, dict]]:
    """(path, file_facts) of the serving files that were read and parse, in grep order; the
    V1-only files are left out when Model Runner V2 serves (`env`: a running server's
    environment, whose own runner choice decides; `target`: see vllm_v2_for_target;
    vllm_v2_serves). `code.facts_of(path)` gives a file's facts (remotedbg.actions.engine_code
    keeps them by content)."""
    paths = dict.fromkeys(h["path"] for h in code.serving_hits)
    v2 = engine_profile(code.engine).chooses_model_runner and vllm_v2_serves(code, env, target)
    out = []
    for path in paths:
        if v2 and any(code.rel(path) == rel for rel in code_markers.VLLM_V1_ONLY):
            continue  # only the V1 runner reads it, and V2 serves
        facts = code.facts_of(path)
        if facts is not None:
            out.append((path, facts))
    return out


def _getenv_default(tree: ast.AST, name: str) -> tuple[bool, object]:
    """(found, default) of `os.getenv(name, default)` in a module (envs.py)."""
    for node in walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "getenv"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == name
        ):
            if len(node.args) < 2:
                return True, None
            default = node.args[1]
            return True, default.value if isinstance(default, ast.Constant) else default
    return False, None


def vllm_v2_by_default(code: Any) -> bool:
    """vLLM: does Model Runner V2 serve when the launch environment does not choose? No V2 files:
    no. Else the default of VLLM_USE_V2_MODEL_RUNNER in the release's envs.py: "0" -> V1; unset
    (None) -> the config's choice, V2 (code_markers.VLLM_V2_MARKER's comment); envs.py unread ->
    V2, as before this was read."""
    if not vllm_has_v2(code):
        return False
    envs = code.facts_of(code.path(code_markers.VLLM_ENVS))
    if envs is None:
        return True
    found, default = envs["runner_env"]
    if not found or default is None:
        return True
    if isinstance(default, str) and default != "?":
        return default.strip().lower() in ("1", "true")
    return True


def vllm_v2_serves(code: Any, env: dict | None = None, target: dict | None = None) -> bool:
    """vLLM: does Model Runner V2 serve this deployment? A running server's own
    VLLM_USE_V2_MODEL_RUNNER (`env`: its environment as the server scan read it) decides over
    the release's default: envs.py parses it with `bool(int(value))` in every release that has
    V2 (0.12.0 envs.py:1550-1552; 0.33.0 :2149-2150 maybe_convert_bool, :360-363), and 0.33.0's
    VllmConfig.use_v2_model_runner returns a set value as is (config/vllm.py:748-750). A value
    that does not parse (the server would not start) or no V2 files leave it to the default.
    Unset where the release leaves it to VllmConfig: its per-target rule decides for `target`
    (vllm_v2_for_target), else V2."""
    value = (env or {}).get(code_markers.VLLM_RUNNER_ENV)
    if value is not None and vllm_has_v2(code):
        try:
            return bool(int(value))
        except ValueError:
            pass
    if not vllm_v2_by_default(code):
        return False
    choice = vllm_v2_for_target(code, target) if target else None
    return True if choice is None else choice["v2"]


def vllm_v2_for_target(code: Any, target: dict) -> dict | None:
    """vLLM 0.22.0-0.28.0: VllmConfig's per-target runner choice when the env var is unset
    (remotedbg.analysis.vllm_runner), {"v2": bool, "where": "config/vllm.py:line"}; None: the
    release has no such rule, its files were not read, or it reads what is not known.
    `target`: vllm_target's {"config": the target's config.json, "text": its text config,
    "bases": the base names of its model class, None when it was not read}."""
    path = code.path(code_markers.VLLM_RUNNER_CONFIG)
    if code_markers.VLLM_V2_TARGET_RULE not in (code.index.text_at(path) or ""):
        return None  # no per-target rule (0.29.0 on): not parsed (0.16 MB in 0.33.0)
    mod = code.index.module_at(path)
    convertor = code.index.module_at(code.path(code_markers.VLLM_ARCH_CONVERTOR))
    keys = vllm_runner.expert_keys(convertor)
    if mod is None or keys is None:
        return None
    model = vllm_runner.target_facts(target.get("config"), target.get("text") or {},
                                     target.get("bases"), keys)  # fmt: skip
    choice = vllm_runner.per_target_choice(mod, model)
    if choice is None:
        return None
    return {"v2": choice["v2"], "where": f"{code.rel(mod.path)}:{choice['where']}"}


def vllm_target(code: Any, config: dict | None, path: str | None, name: str | None) -> dict:
    """The target as vllm_v2_for_target reads it: its config, text config and the base names
    of its model class (in `path`, when read)."""
    ref = resolve_class(code, path, name) if path and name else None
    bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in ref.node.bases] if ref else None
    return {"config": config or {}, "text": text_config(config), "bases": bases}


def vllm_has_v2(code: Any) -> bool:
    return code.has(code_markers.VLLM_V2_MARKER) or any(
        h["path"].endswith(code_markers.VLLM_V2_MARKER) for h in code.serving_hits
    )


def eagle3_target_types(code: Any, types_in: Any = None) -> dict[str, Any] | None:
    """vLLM: the model types the release's SpeculativeConfig accepts as EAGLE-3 targets,
    {"types": [...], "where": "file:line"}; None when no spec config of the install tests them
    (SGLang, releases without the check). The check is an `if` on the method being "eagle3"
    and the target's model_type that raises, in one of three forms: `"llama" not in
    ...model_type` (0.8.5 config.py:2588-2592), a list named `eagle3_target_supported` (0.10.2
    config/__init__.py:2372-2379; 0.13.0 config/speculative.py:621-632) or
    `aux_hidden_states_supported` (0.17.0 config/speculative.py:768-789, also for
    extract_hidden_states) tested as substrings with any(...). `types_in(text, path)`:
    eagle3_target_test_in of one file (remotedbg.actions.spec keeps it by content)."""
    order = code_markers.VLLM_SPEC_CONFIGS
    read = [(p, t) for p, t in code.index.texts_mentioning("eagle3") if code.rel(p) in order]
    for path, text in sorted(read, key=lambda item: order.index(code.rel(item[0]))):
        found = (types_in or (lambda t, _p: eagle3_target_test_in(t)))(text, path)
        if found is not None:
            return {"types": found["types"], "where": f"{code.rel(path)}:{found['line']}"}
    return None


def eagle3_target_test_in(source: str) -> dict[str, Any] | None:
    """One spec config file's EAGLE-3 target check: {"types": [...], "line": n}, or None."""
    tree = parse(source)
    for func in walk(tree) if tree is not None else ():
        if not isinstance(func, ast.FunctionDef):
            continue
        for node in walk(func):
            if isinstance(node, ast.If) and _eagle3_target_test(node):
                found = _tested_types(node.test, _string_lists(func))
                if found is not None:
                    types, at = found
                    return {"types": types, "line": getattr(at or node, "lineno", 0)}
    return None


def _eagle3_target_test(node: ast.If) -> bool:
    """An `if` that tests the method against "eagle3" and reads a model_type, and raises."""
    names = {n.attr for n in walk(node.test) if isinstance(n, ast.Attribute)}
    consts = {n.value for n in walk(node.test) if isinstance(n, ast.Constant)}
    return (
        code_markers.VLLM_EAGLE3_METHOD in consts
        and code_markers.VLLM_TARGET_TYPE_FIELD in names
        and any(isinstance(s, ast.Raise) for s in node.body)
    )


def _string_lists(func: ast.FunctionDef) -> dict[str, ast.Assign]:
    """The assignments `name = [str, ...]` in a function, by name."""
    out = {}
    for node in walk(func):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.List | ast.Tuple)
            and node.value.elts
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                    for e in node.value.elts)
        ):  # fmt: skip
            out.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
    return out


def _tested_types(test: ast.expr, lists: dict[str, ast.Assign]) -> tuple[list, Any] | None:
    """The model types a target test accepts, and the node that lists them (None: the test's
    own line): `any(s in ...model_type for s in NAME)` with NAME a string list of the function,
    or `"llama" not in ...model_type`."""
    for node in walk(test):
        if isinstance(node, ast.comprehension) and isinstance(node.iter, ast.Name):
            assign = lists.get(node.iter.id)
            if assign is not None:
                return [e.value for e in assign.value.elts], assign  # type: ignore[attr-defined]
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and [type(op) for op in node.ops] == [ast.NotIn]
            and code_markers.VLLM_TARGET_TYPE_FIELD in ast.unparse(node.comparators[0])
        ):
            return [node.left.value], None
    return None


def _where(code: Any, mod: Module, node: ast.AST) -> str:
    return f"{code.rel(mod.path)}:{getattr(node, 'lineno', 0)}"


def embedding_sharing(code: Any, serving: list[tuple[str, dict]]) -> dict[str, Any]:
    """Does the engine give an EAGLE draft the target's embedding? SGLang's worker calls
    draft.set_embed / set_embed_and_head; vLLM's proposer assigns the target's embed_tokens.
    `serving`: serving_facts(code)."""
    evidence = [f"{code.rel(path)}:{line} {text}" for path, facts in serving
                for line, text in facts["embed"]]  # fmt: skip
    head = [f"{code.rel(path)}:{line} {text}" for path, facts in serving
            for line, text in facts.get("head") or []]  # fmt: skip
    if evidence:
        return {"shared": True, "evidence": evidence[:4], "head": head[:4]}
    if not code.serving_hits:
        return {"shared": None, "reason": "the engine's worker code was not found or not read"}
    return {"shared": False, "evidence": [], "reason": "no worker code shares the embedding"}


def capture_calls(serving: list[tuple[str, dict]]) -> list[str]:
    """Which capture methods the engine's runner calls on the target model."""
    return list(dict.fromkeys(m for _, facts in serving for m in facts["calls"]))


def aux_ids_source(code: Any, serving: list[tuple[str, dict]]) -> dict[str, Any]:
    """Where the engine reads the draft config's eagle_aux_hidden_state_layer_ids: from the
    `eagle_config` dict, from the top level of the config, both or neither."""
    places: dict[str, list[str]] = {"eagle_config": [], "top_level": []}
    for path, facts in serving:
        if any(part in code.rel(path) for part in code_markers.AUX_IDS_OTHER_READERS):
            continue
        for line, nested in facts["aux"]:
            places["eagle_config" if nested else "top_level"].append(f"{code.rel(path)}:{line}")
    return {
        "eagle_config": bool(places["eagle_config"]),
        "top_level": bool(places["top_level"]),
        "where": places["eagle_config"] + places["top_level"],
        "read": bool(code.serving_hits),
    }


def acceptance_includes_bonus(code: Any) -> bool | None:
    """vLLM: whether 'Mean acceptance length' counts the bonus token (`1 + accepted/drafts`,
    0.10.1.1+) or not (`accepted/drafts`, 0.8.5). None when the metrics code was not read."""
    mod = code.index.module_at(code.path(code_markers.VLLM_METRICS))
    if mod is None:
        return None
    for node in walk(mod.tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "mean_acceptance_length" for t in node.targets
        ):
            value = node.value
            return (
                isinstance(value, ast.BinOp)
                and isinstance(value.op, ast.Add)
                and isinstance(value.left, ast.Constant)
                and value.left.value == 1
            )
    return None


def vllm_class_by_method(code: Any) -> dict[str, str] | None:
    """vLLM 0.8.5's proposer builds the draft class per method itself instead of asking the
    registry (v1/spec_decode/eagle.py:228-236 `self.model = Eagle3LlamaForCausalLM(...)`):
    {"eagle3": "Eagle3LlamaForCausalLM", "eagle": "EagleLlamaForCausalLM"} when it does."""
    mod = code.index.module_at(code.path(code_markers.VLLM_PROPOSER))
    if mod is None:
        return None
    imported: dict[str, str] = {}
    for node in walk(mod.tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            method = {"llama_eagle3": "eagle3", "llama_eagle": "eagle"}.get(
                node.module.rsplit(".", 1)[-1]
            )
            if method:
                imported[node.names[0].asname or node.names[0].name] = method
    built = {
        node.func.id
        for node in walk(mod.tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    found = {method: name for name, method in imported.items() if name in built}
    return found or None


def vllm_served_architectures(code: Any, architectures: list[str], method: str) -> list[str]:
    """The architectures vLLM looks up for a draft: EAGLEConfig's rewrite for the method
    (transformers_utils/configs/eagle.py), evaluated from the install's own code."""
    mod = code.index.module_at(code.path(code_markers.VLLM_EAGLE_CONFIG))
    if mod is None:
        return list(architectures)
    for node in walk(mod.tree):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
            continue
        test = node.test
        if not (
            isinstance(test.left, ast.Name)
            and test.left.id == "method"
            and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == method
        ):
            continue
        for stmt in node.body:
            if (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.targets[0], ast.Subscript)
                and ast.unparse(stmt.targets[0].slice).strip("'\"") == "architectures"
            ):
                # `[f"Eagle3{arch}" if ... else arch for arch in self.model.architectures]`
                model = Config({"model": {"architectures": list(architectures)}})
                try:
                    value = Interpreter(code.index, {}).eval(
                        stmt.value, {"self": model, "method": method}, mod, None
                    )
                except (Undecidable, EngineRaises):
                    return list(architectures)
                if isinstance(value, list) and all(isinstance(v, str) for v in value):
                    return value
    return list(architectures)


def field_defaults(code: Any, class_name: str, defaults_in: Any = None) -> dict[str, Any]:
    """Constant defaults of a config dataclass's fields (e.g. vLLM's SpeculativeConfig), from
    whichever of the files read defines it. `defaults_in(text, path)`: class_field_defaults of
    one file (remotedbg.actions.spec keeps it by content)."""
    for path, text in code.index.texts_mentioning(f"class {class_name}"):
        found = (defaults_in or (lambda t, _p: class_field_defaults(t, class_name)))(text, path)
        if found is not None:
            return found
    return {}


def class_field_defaults(source: str, class_name: str) -> dict[str, Any] | None:
    """The constant (str, number, bool, None) defaults of `class_name`'s annotated fields in
    this module's top level; None: it does not define the class (or does not parse)."""
    tree = parse(source)
    if tree is None:
        return None
    mod = Module.build("m", "", tree, source)
    cls = mod.classes.get(class_name)
    if cls is None:
        return None
    out: dict[str, Any] = {}
    for stmt in cls.body:
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str | int | float | bool | type(None))
        ):
            out[stmt.target.id] = stmt.value.value
    return out


def resolve_class(code: Any, path: str, name: str) -> ClassRef | None:
    mod = code.index.module_at(path)
    return code.index.resolve(mod, name) if mod is not None else None


def draft_decode_backends(serving: list[tuple[str, dict]]) -> list[str] | None:
    """The attention backends SGLang's EAGLE draft decode accepts, read from the install (see
    _decode_backends). None when no such code was read."""
    for _, facts in serving:
        if facts["backends"]:
            return facts["backends"]
    return None


def _decode_backends(tree: ast.Module, source: str) -> list[str] | None:
    """The keys of the `backend_map` of the decode-backend function (0.5.6+ draft_utils.py),
    else the strings compared with `attention_backend` in the function that raises "EAGLE is
    not supported in ..." (before 0.5.6). None: the file has no such error."""
    if code_markers.DRAFT_BACKEND_ERROR not in source:
        return None
    found: list[str] = []
    for func in walk(tree):
        if not isinstance(func, ast.FunctionDef):
            continue
        if "decode" in func.name:
            found += _backend_map_keys(func)
        segment = ast.get_source_segment(source, func) or ""
        if not found and code_markers.DRAFT_BACKEND_ERROR in segment:
            found += _compared_backends(func)
    return sorted(set(found))


def _backend_map_keys(func: ast.FunctionDef) -> list[str]:
    keys = []
    for node in walk(func):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Dict)
            and any(isinstance(t, ast.Name) and t.id == "backend_map" for t in node.targets)
        ):
            keys += [k.value for k in node.value.keys
                     if isinstance(k, ast.Constant) and isinstance(k.value, str)]  # fmt: skip
    return keys


def _compared_backends(func: ast.FunctionDef) -> list[str]:
    out = []
    for node in walk(func):
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Attribute)
            and node.left.attr == "attention_backend"
        ):
            out += [c.value for c in node.comparators
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)]  # fmt: skip
    return out
