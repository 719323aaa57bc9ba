"""find-servers and spec-checks: the speculative-decoding configuration audit as actions.

find_servers: one agent round trip (remotedbg.agent.server_scan:scan_servers), and one more
for the HTTP figures of the servers it keeps (ask_http; none when no server serves them).
spec_checks: per draft its tensor listing and config (1 round trip each), the target configs
(1), then per engine install its serving code, draft and target model files and the modules
their classes come from (remotedbg.actions.engine_code: 3 at most); every verdict is then a pure
function (remotedbg.analysis.spec_checks) of what was read.

Scope: when the user names a draft (--var draft) or launch arguments (--var args / --var log),
the audit is about those; other servers running on the box are listed (`other_servers`) with
what they would have raised, but do not decide the verdict.
"""

from __future__ import annotations

import posixpath
from typing import Any

from remotedbg.actions import runtime_logs
from remotedbg.actions.analysis_cache import cached_by_content
from remotedbg.actions.audit import loader_for
from remotedbg.actions.engine_code import (
    EngineCode,
    EngineCodeCache,
    add_modules,
    read_files,
    registry_lookup,
)
from remotedbg.actions.server_arg import parse_server, the_server_named
from remotedbg.agent.server_scan import figure_unknown, figures_from_lines, parse_decode_line
from remotedbg.analysis import config_rewrite, draft_rename, engine_facts, speculators
from remotedbg.analysis.capture import capture_point, evaluate_capture, registry_members
from remotedbg.analysis.loader_model import simulate_load
from remotedbg.analysis.pysource import ClassRef
from remotedbg.analysis.spec_checks import (
    Deployment,
    engine_ids,
    parse_layers,
    run_checks,
    source_identifiers,
)
from remotedbg.engines import code_markers
from remotedbg.engines.knowledge import ENGINES, LOADER_MODELLED_FAMILIES, server_scan_knowledge
from remotedbg.engines.loader_rules import (
    DEFAULT_PIPELINE_SIZE,
    PIPELINE_SIZE_FLAGS,
    vllm_engine_params,
)
from remotedbg.engines.profiles import (
    engine_profile,
    engines_named,
    install_label,
    release_version,
)
from remotedbg.errors import Interrupted, RemoteCommandError, UsageError
from remotedbg.remote import calls
from remotedbg.remote.primitives import Remote

USER_SOURCES = ("--var args", "--var log")


def _served_paths(server: dict) -> bool:
    spec = server.get("spec") or {}
    return bool(spec.get("draft_model") or spec.get("target_model"))


def find_servers(
    remote: Remote,
    log: str = "",
    args: str = "",
    tail_lines: int = 200,
    metrics: Any = None,
    ask_runtime: bool = True,
    outside: Any = None,
    server: str = "",
    unknown_on_failure: bool = False,
) -> dict[str, Any]:
    """Running servers (and/or the --var log / --var args one): parsed args, log figures,
    metrics. `processes` is shaped for find-drafts (`processes:` parameter): when the user gave
    launch arguments, only that server. Servers `outside` what was named (locate-engines'
    `also_on_box`) are left out: listed there, never asked or judged. `server` (a PID, a
    worker's PID or a port, as --server takes) keeps that server only: the others are listed
    under `also_on_box`, so nothing of theirs (log, flags, draft) is judged as its.
    `unknown_on_failure`: a scan that fails (timed out, the agent gone) answers an explicit
    unknown, no servers and the reason (`unknown`, `inconclusive`), instead of raising: a
    playbook's later steps and its JSON readers get the result's shape either way."""
    number = parse_server(str(server or ""))
    try:
        scan = remote.ask(
            calls.ScanServers(
                log=str(log or ""),
                args=str(args or ""),
                tail_lines=int(tail_lines or 200),
                metrics=metrics if metrics in (True, False) else None,
                knowledge=server_scan_knowledge(),
                http_later=True,
            )
        )
    except Interrupted:
        raise
    except RemoteCommandError as error:
        if not unknown_on_failure:
            raise
        return scan_unknown(str(error))
    skip = {s.get("pid") for s in outside or [] if isinstance(s, dict)}
    servers = [s for s in scan.servers if s.get("pid") not in skip or s.get("pid") is None]
    others: list[dict] = []
    if number is not None:
        named = the_server_named(servers, number, flag="--var server=")
        if named is None:
            raise UsageError(
                f"--var server={number}: no {engines_named()} server has that PID or port"
            )
        others = [{"pid": s.get("pid"), "engine": s.get("engine"), "cmdline": s.get("cmdline")}
                  for s in servers if s is not named and s.get("pid") is not None]  # fmt: skip
        servers = [s for s in servers if s is named or s.get("pid") is None]
    _ask_http(remote, servers)
    for entry in scan.servers:
        entry.pop("http_asks", None)
    for server in servers if ask_runtime else []:  # a container's log from its runtime
        _runtime_log(remote, server, int(tail_lines or 200))
    _servers_without_draft(remote, servers)
    user = [s for s in servers if s.get("source") in USER_SOURCES]
    processes = [
        {
            "pid": s.get("pid") if s.get("pid") is not None else s["source"],
            "engine": s.get("engine"),
            "cmdline": s.get("cmdline"),  # for display: the launch is read from "spec"
            "spec": s.get("spec") or {},
            "paths_in_container": s.get("paths_in_container") or {},
        }
        for s in (user or servers)
        if _served_paths(s)
    ]
    return {
        "servers": servers,
        "processes": processes,
        "also_on_box": others,
        "notes": scan.notes,
        "elapsed_s": scan.elapsed_s,
    }


def _ask_http(remote: Remote, servers: list[dict]) -> None:
    """The HTTP figures (/metrics, /server_info) of the servers judged, all at once in one
    round trip; the servers left out (outside what was named) are never asked."""
    asked = [s for s in servers if s.get("http_asks")]
    if not asked:
        return
    jobs = [[s["spec"]["port"], s["http_asks"]] for s in asked]
    try:
        answers = remote.ask(calls.AskHttp(jobs=jobs)).answers
    except Interrupted:
        raise
    except RemoteCommandError as error:  # the servers stay; their figures are unknown, and why
        answers = [{kind: figure_unknown(port, kind, str(error)) for kind in asks}
                   for port, asks in jobs]  # fmt: skip
    for server, answer in zip(asked, answers, strict=True):
        server.update(answer)


def scan_unknown(reason: str) -> dict[str, Any]:
    """find_servers' answer when the scan itself failed: which servers run is not known."""
    return {"servers": [], "processes": [], "also_on_box": [], "notes": [], "elapsed_s": None,
            "unknown": reason, "inconclusive": [f"the server scan failed: {reason}"]}  # fmt: skip


def _servers_without_draft(remote: Remote, servers: list[dict]) -> None:
    """Speculative launches that name no draft, whose draft the engine takes from the model
    named: one round trip for every such server's model config, then `_speculator_as_model`
    and `_draft_in_target` read it."""
    bare = [s for s in servers if (s.get("spec") or {}).get("target_model")
            and not (s.get("spec") or {}).get("draft_model")
            and (s["spec"].get("algorithm")
                 or engine_profile(s.get("engine")).reads_speculators_format)]  # fmt: skip
    if not bare:
        return
    try:
        configs = remote.ask(calls.ReadConfigs(paths=sorted({s["spec"]["target_model"]
                                                             for s in bare}))).by_path  # fmt: skip
    except RemoteCommandError:
        return  # the model's config is read again, and its error said, by the checks
    for server in bare:
        config = configs.get(server["spec"]["target_model"])
        if not isinstance(config, dict):
            continue
        _speculator_as_model(server, config)
        _draft_in_target(server, config)


def _speculator_as_model(server: dict, config: dict) -> None:
    """`vllm serve SPECULATOR_DIR`: a speculators checkpoint as the only model is a speculative
    launch, the checkpoint the draft, its verifier the target, its method and token count the
    settings (0.33.0 transformers_utils/config.py:800-874 maybe_override_with_speculators; the
    launch's --speculative-config is applied over it, the method kept)."""
    profile = engine_profile(server.get("engine"))
    if not profile.reads_speculators_format or not speculators.is_speculators(config):
        return
    spec = server["spec"]
    launch = speculators.launch(config)
    spec["draft_model"], spec["target_model"] = spec["target_model"], launch["verifier"]
    spec["algorithm"] = launch["method"] or spec.get("algorithm")
    if spec.get("num_steps") is None:
        spec["num_steps"] = launch["num_speculative_tokens"]
    spec["speculators_model"] = True


def _draft_in_target(server: dict, config: dict) -> None:
    """A speculative launch with no draft whose engine then takes the target's checkpoint as
    the draft (a target carrying its MTP layer): the class it is loaded as is the engine's own
    rename of the target's config, read with the install's code (`_draft_architecture`)."""
    spec = server["spec"]
    if spec.get("draft_model") or not spec.get("algorithm"):
        return
    if engine_profile(server.get("engine")).draft_from_target(spec["algorithm"]):
        spec["draft_model"] = spec["target_model"]
        spec["draft_in_target"] = True


def _runtime_log(remote: Remote, server: dict, tail_lines: int) -> None:
    """A containerised server's decode figures from its runtime (`podman logs`, `docker
    logs`) when the runtime's log file was not readable on the box."""
    runtime = runtime_logs.runtime_log_of(server)
    if server.get("log") or runtime is None:
        return
    try:
        tail = runtime_logs.tail(remote, runtime, max(2000, tail_lines * 10))
    except RemoteCommandError as error:
        server.setdefault("notes", []).append(str(error))
        return
    decode = [line for line in tail["lines"] if parse_decode_line(line)][-tail_lines:]
    server["log"] = {"path": tail["path"], "how_found": runtime["how_found"],
                     "decode_lines": len(decode), "figures": figures_from_lines(decode),
                     "server_args_line": False, "error": None,
                     "last_line": decode[-1][-400:] if decode else None}  # fmt: skip
    server["notes"] = [n for n in server.get("notes") or [] if "log cannot be read" not in n]


def _servers_list(servers: Any) -> list[dict]:
    if isinstance(servers, dict):
        servers = servers.get("servers")
    return [s for s in servers or [] if isinstance(s, dict)]


def _label(server: dict) -> str:
    return str(server.get("pid") or server.get("source"))


def _norm(path: str | None) -> str | None:
    return posixpath.normpath(path) if path else None


def _pair(item: dict, servers: list[dict], scoped: bool) -> tuple[dict | None, str | None]:
    """The server that runs this draft: same path (as the box resolves it), else in a scoped
    audit the user's own --var args/log server, else the only server there is."""
    serving = _serving(item, servers)
    if serving:
        return serving[0], None
    user = [s for s in servers if s.get("source") in USER_SOURCES]
    if scoped and len(user) == 1:
        return user[0], None
    if not scoped and len(servers) == 1:
        return servers[
            0
        ], f"draft {item['path']} paired with the only server ({_label(servers[0])})"
    return None, None


def _install_for(server: dict | None, located: dict | None) -> dict | None:
    """The install a server runs (by pid; None when its install is unknown); for launch
    arguments given by hand, the install the user pointed at (--var roots), then one a running
    server of that engine uses, then any."""
    engines = (located or {}).get("engines") or []
    pid = (server or {}).get("pid")
    name = (server or {}).get("engine")
    if server and not name:
        return None  # a launch of an engine no profile knows: no install's rules are its
    candidates = [e for e in engines if not name or e.get("name") == name] or engines
    for engine in candidates:
        if pid is not None and pid in (engine.get("running") or []):
            return engine
    if pid is not None:
        return None  # a running server's install is the one it imports: never another's
    for engine in candidates:
        if "root-arg" in (engine.get("how_found") or []):
            return engine
    for engine in candidates:
        if engine.get("running"):
            return engine
    return candidates[0] if candidates else None


def _grep_class(remote: Remote, install: dict, class_name: str) -> tuple[str | None, str | None]:
    knowledge = ENGINES.get(install.get("name"), {})
    models_dir = knowledge.get("models_dir")
    if not models_dir:
        return None, f"no models dir known for engine {install.get('name')}"
    dirs = [models_dir, *(knowledge.get("extra_models_dirs") or [])]
    folders = [f"{install['path']}/{d}" for d in dirs]
    folder = folders[0]
    pattern = f"^class[[:space:]]+{class_name}[[:space:]]*[(:]"
    try:
        found = remote.grep(pattern, folders, limit=20)
    except RemoteCommandError as exc:
        return None, f"grep for class {class_name} in {folder}: {exc}"
    records = found.get("records") or []
    if not records:
        return None, f"no class {class_name} in {folder}"
    paths = sorted({r["path"] for r in records}, key=lambda p: (len(p), p))
    return paths[0], None


def _draft_items(remote: Remote, servers: list[dict], drafts_audit: dict | None) -> list[dict]:
    items: list[dict] = []
    for report in (drafts_audit or {}).get("drafts") or []:
        items.append({"path": report["draft"], "loader": report.get("loader")})
    if not items:
        for server in servers:
            path = (server.get("spec") or {}).get("draft_model")
            if path and not any(_norm(path) == _norm(d["path"]) for d in items):
                items.append({"path": path, "loader": None})
    unique: dict[str, dict] = {}
    for item in items:
        try:
            listing = remote.ask(calls.ListTensors(path=item["path"]))
            item["config"] = listing.config or {}
            item["tensors"] = listing.tensors or []
            item["real_path"] = listing.real_path or listing.path
            item["given"] = listing.given
            if listing.config_error:
                item["error"] = f"config.json: {listing.config_error}"
                item["config"] = None
        except RemoteCommandError as exc:
            item["config"] = item["tensors"] = None
            item["error"] = str(exc)
        key = item.get("real_path") or item["path"]
        unique.setdefault(key, item)  # `~/x` and `/home/u/x` are one draft
    return list(unique.values())


def _launched(item: dict, trained: list[int] | None) -> Deployment:
    """What the draft listing and its server say, before any engine code is read."""
    server = item.get("server") or {}
    return Deployment(
        draft_config=item.get("config"),
        tensors=item.get("tensors"),
        draft_error=item.get("error"),
        engine=server.get("engine"),
        spec=server.get("spec") if server else None,
        server=server or None,
        server_running=server.get("pid") is not None,
        train_layers=trained,
    )


def _method_from_draft_name(dep: Deployment) -> None:
    """The algorithm the engine derives from the draft's name when the launch names none (vLLM's
    SpeculativeConfig: remotedbg.engines.vllm)."""
    spec = dep.spec or {}
    if spec.get("algorithm") or not isinstance(spec.get("draft_model"), str):
        return
    derived = dep.engine_profile.method_from_draft_name(spec["draft_model"], dep.engine_version)
    if derived:
        dep.spec = dict(spec, algorithm=derived[0], algorithm_from=derived[1])


def _method_when_none(dep: Deployment) -> None:
    """A draft model named with no method that neither its name nor its model_type gave one:
    the method the release defaults to, or why it refuses such a launch (EngineProfile.
    method_when_none)."""
    spec = dep.spec or {}
    if spec.get("algorithm") or spec.get("draft_in_target") or not spec.get("draft_model"):
        return
    method, where = dep.engine_profile.method_when_none(dep.engine_version)
    if method:
        dep.spec = dict(spec, algorithm=method, algorithm_from=where)
    elif where:
        dep.spec = dict(spec, method_refused=where)


def _set_target_config(dep: Deployment, cfg: Any) -> None:
    if isinstance(cfg, dict) and "error" in cfg:
        dep.target_error = str(cfg["error"])
    elif isinstance(cfg, dict):
        dep.target_config = cfg


def _architectures(config: dict | None) -> list[str]:
    return [a for a in (config or {}).get("architectures") or [] if isinstance(a, str)]


def _draft_architecture(dep: Deployment, remote: Remote, code: EngineCode, same_checkpoint: bool
                        ) -> list[str] | None:  # fmt: skip
    """The architecture the engine's own code gives the draft's config before it looks the
    class up (remotedbg.analysis.draft_rename; None: the config's own). A draft taken from the
    target must be renamed to a draft class: where the code gives none, or cannot be decided,
    the draft's loading is unknown and says why."""
    rule = dep.engine_profile.draft_rename
    # the launch gave no draft and the draft read is the target's own checkpoint (not one
    # the launch names another way: SGLang's `--speculative-draft` prefix)
    in_target = bool((dep.spec or {}).get("draft_in_target")) and same_checkpoint
    if rule is None or not isinstance(dep.draft_config, dict):
        return None
    read_files(remote, code, [code.path(rel) for rel in rule.files])
    rel = code.first_read(rule.files)
    if rel is None:
        if in_target:
            dep.load_error = f"none of {', '.join(rule.files)} could be read in {code.install}"
        return None
    settings = {"speculative_algorithm": dep.algorithm}
    configs, undecided = _as_loaded(dep, remote, code, dep.draft_config)
    renames = [draft_rename.rename(code.index, code.path(rel), rule, c, settings, rel)
               for c in configs]  # fmt: skip
    found = renames[0]
    answers = {(r.architecture or (_architectures(c) or [None])[0], r.unknown)
               for r, c in zip(renames, configs, strict=True)}  # fmt: skip
    if len(answers) > 1:
        found = draft_rename.Renamed(where=found.where, unknown=undecided)
    elif configs[0] is not dep.draft_config and in_target:
        dep.draft_config = configs[0]
    _method_from_draft_type(dep, code, rel, found.model_type)
    if found.architecture:
        if in_target:
            dep.draft_config = dict(dep.draft_config, architectures=[found.architecture])
        return [found.architecture]
    if in_target:
        target = (_architectures(dep.draft_config) or ["(none)"])[0]
        dep.load_error = found.unknown or (
            f"the launch names no draft and {dep.engine_profile.label}'s {found.where} gives "
            f"the target's {target} no draft architecture: it carries no MTP layer this "
            "release serves"
        )
    return None


def _as_loaded(dep: Deployment, remote: Remote, code: EngineCode, config: dict
               ) -> tuple[list[dict], str]:  # fmt: skip
    """The draft's config as the engine's loader reads it (remotedbg.analysis.config_rewrite):
    one config where that is decided; both, with why, where it depends on a transformers that
    is not beside the install."""
    files = dep.engine_profile.config_loader_files
    if not files or not isinstance(config.get("model_type"), str):
        return [config], ""
    read_files(remote, code, [code.path(rel) for rel in files])
    modules = [(rel, mod) for rel in files if (mod := code.index.module_at(code.path(rel)))]
    rewrite = config_rewrite.applies(config, config_rewrite.rewrites(modules))
    if rewrite is None:
        return [config], ""
    site = posixpath.dirname(code.install)
    auto, own = config_rewrite.transformers_config_files(site, rewrite.model_type)
    try:
        present = {i["path"]: bool(i.get("exists")) for i in remote.stat([auto, own], True)}
    except RemoteCommandError:
        present = {}
    if present.get(own):
        return [config], ""  # transformers reads the type: nothing to rewrite
    if present.get(auto):
        return [config_rewrite.rewritten(config, rewrite)], ""
    return [config, config_rewrite.rewritten(config, rewrite)], (
        f"{dep.engine_profile.label}'s config loader rewrites a {rewrite.model_type} config "
        f"only where transformers cannot read it ({rewrite.where}), and no transformers is "
        f"beside {code.install} to say which")


def _method_from_draft_type(dep: Deployment, code: EngineCode, rel: str, model_type: str | None
                            ) -> None:  # fmt: skip
    """A launch that gives a draft and no method: vLLM takes the method from the draft config's
    model_type after its rename (an MTP type gives mtp: the target named as its own draft,
    tests/models/registry.py's Glm4MoeMTPModel), read from the install's own comparison
    (remotedbg.analysis.draft_rename.method_by_model_type)."""
    spec = dep.spec or {}
    if spec.get("algorithm") or not model_type or not dep.engine_profile.method_by_draft_type:
        return
    for rule in draft_rename.method_by_model_type(code.index, code.path(rel), rel):
        # a method remotedbg has no family for (medusa, mlp_speculator) is still the release's:
        # the checks then say they have no rules for it, never judge it as another method
        if model_type in rule.model_types:
            dep.spec = dict(spec, algorithm=rule.method, algorithm_from=(
                f"SpeculativeConfig: the draft config's model_type {model_type} ({rule.where})"))
            return


def _registry_lookup(
    dep: Deployment, code: EngineCode, install: dict, archs: list[str]
) -> list[str]:
    """Sets what vLLM's registry and speculative code say; returns the architectures to look
    the draft class up by."""
    dep.registry = install.get("registry")
    served = dep.engine_profile.served_architectures(archs, dep.algorithm)
    if served is not None:  # the profile's fixed rule (LMDeploy's config builder)
        dep.served_architectures = served
        return served
    dep.includes_bonus = engine_facts.acceptance_includes_bonus(code)
    found = registry_lookup(code, archs, dep.algorithm or "")
    dep.class_by_method = found["class_by_method"]
    dep.served_architectures = found["served_architectures"]
    return found["lookup"]


def _draft_loader(
    dep: Deployment,
    item: dict,
    code: EngineCode,
    located: dict | None,
    install: dict,
    lookup: list[str],
) -> dict | None:
    """The draft-model class the install registers for these architectures (None: none)."""
    loader = loader_for(lookup, located or {}, install["path"]) if lookup else None
    if loader and loader.get("plugin"):
        dep.draft_plugin = loader["plugin"]
        dep.draft_class = (f"{loader['relative_path']}:{loader['class']}, from plugin "
                           f"{loader['plugin']}")  # fmt: skip
        item["draft_class_source"] = loader["path"]
    elif loader:
        dep.draft_class = f"{code.rel(loader['path'])}:{loader['class']}"
        item["draft_class_source"] = loader["path"]
    return loader


def _fallback_capture(remote: Remote, install: dict, code: EngineCode) -> dict:
    """The release's Transformers fallback model files and the capture methods they define:
    {"files": [rel paths there], "methods": [names]} (None: the grep failed)."""
    rels = ENGINES.get(install.get("name"), {}).get("fallback_models") or []
    names = "|".join(code_markers.CAPTURE_METHODS)
    try:
        found = remote.grep(
            f"def[[:space:]]+({names})[[:space:]]*[(]", [code.path(r) for r in rels]
        )
    except RemoteCommandError:
        return {"files": None, "methods": None}
    missing = {u["pattern"] for u in found.get("unmatched") or []}
    records = found.get("records") or []
    defined = {m for r in records for m in code_markers.CAPTURE_METHODS if f"def {m}" in r["text"]}
    return {"files": [r for r in rels if code.path(r) not in missing], "methods": sorted(defined)}


def _locate_target(
    dep: Deployment, item: dict, remote: Remote, code: EngineCode, install: dict, target_class: str
) -> str | None:
    """The file that defines the target's class (None: not found, dep.capture says why)."""
    target_path, error = _grep_class(remote, install, target_class)
    if error and error.startswith("no class "):
        # not in the release's models: its registry cannot build it; what the Transformers
        # fallback offers decides whether the server can start
        dep.capture = {"error": error, "missing": True, "unregistered": True,
                       "fallback": _fallback_capture(remote, install, code)}  # fmt: skip
        return None
    if error:
        dep.capture = {"error": error}
        return None
    dep.capture_source = code.rel(target_path)
    item["target_source"] = target_path
    return target_path


def _read_code_facts(dep: Deployment, code: EngineCode, target: dict | None = None) -> None:
    # which runner serves (vLLM) is the running server's own choice where its env was read,
    # else the release's, which may depend on the target (engine_facts.vllm_target)
    serving = engine_facts.serving_facts(code, dep.env, target)
    dep.embedding = engine_facts.embedding_sharing(code, serving)
    dep.ids_source = engine_facts.aux_ids_source(code, serving)
    dep.capture_calls = engine_facts.capture_calls(serving)
    if engine_profile(code.engine).checks_draft_decode_backend:
        dep.draft_backends = engine_facts.draft_decode_backends(serving)
    else:
        dep.eagle3_targets = engine_facts.eagle3_target_types(code, _eagle3_targets_in)


def _registry_path(code: EngineCode, module: str) -> str | None:
    """The file of a vLLM registry entry's module: a short name is a file of the models dir
    (`deepseek_v2`), a dotted one is that module of the package."""
    if "." in module:
        return code.index.path_of(module)
    models_dir = ENGINES.get(code.engine, {}).get("models_dir")
    return code.path(f"{models_dir}/{module}.py") if models_dir else None


def _registry_class(code: EngineCode, registry: dict | None, arch: str) -> ClassRef | None:
    entry = (registry or {}).get(arch)
    path = _registry_path(code, entry[0]) if entry else None
    module = code.index.module_at(path) if path else None
    return code.index.resolve(module, entry[1]) if module is not None and entry else None


def _capture(
    dep: Deployment, remote: Remote, code: EngineCode, target_path: str, target_class: str
) -> None:
    """The layers the target captures: fixed by the engine (its profile), else from the
    target's code; an engine that fixes them for other targets only leaves them unknown."""
    profile = dep.engine_profile
    fixed = profile.fixed_capture(dep.target_config or {})
    if fixed is not None:
        dep.capture = dict(fixed)
        module = code.index.module_at(target_path)
        if module is not None:
            dep.capture_point = capture_point(module.source)
    elif profile.capture_in_target_code:
        _evaluate_capture(dep, remote, code, target_path, target_class)
    else:
        dep.code_error = (f"which layers {profile.label} captures for a {target_class} target "
                          "was not read")  # fmt: skip


def _evaluate_capture(
    dep: Deployment, remote: Remote, code: EngineCode, target_path: str, target_class: str
) -> None:
    ref = engine_facts.resolve_class(code, target_path, target_class)
    if ref is None:
        dep.capture = {"error": f"{target_path} does not parse or has no {target_class}"}
        return
    # a wrapper that builds its language model through the registry: read that model's file
    entries = [(dep.registry or {}).get(a) for a in registry_members(code.index, ref)]
    paths = [p for p in (_registry_path(code, e[0]) for e in entries if e) if p]
    if paths:
        add_modules(remote, code, paths)
    ids, _ = engine_ids(dep)
    methods = tuple(dep.capture_calls) or code_markers.CAPTURE_METHODS
    registry = lambda arch: _registry_class(code, dep.registry, arch)  # noqa: E731
    dep.capture = evaluate_capture(code.index, ref, ids, dep.target_config, methods, registry)
    if ids is not None and dep.capture.get("method") in code_markers.CAPTURE_GETTERS:
        dep.capture["layers_to_capture"] = list(ids)  # config ids replace the default
    # the layer loop that captures is in the file of the class whose layers were counted (a
    # wrapper's language model), else the target's own
    inner = dep.capture.get("delegated") or dep.capture.get("layers_of") or {}
    for path in (inner.get("path"), target_path):
        module = code.index.module_at(path) if path else None
        if module is not None:
            dep.capture_point = capture_point(module.source)
            if dep.capture_point.get("point") != "unknown":
                break


_identifiers = cached_by_content(
    "source-identifiers", lambda text, _path: {"words": sorted(source_identifiers(text))}
)


def _class_words(code: EngineCode, ref: ClassRef) -> set[str]:
    words: set[str] = set()
    for cls in code.index.mro(ref):
        words.update(_identifiers(cls.module.source, cls.module.path)["words"])
    return words


_eagle3_target_check = cached_by_content(
    "eagle3-target-check", lambda text, _path: {"found": engine_facts.eagle3_target_test_in(text)}
)


def _eagle3_targets_in(text: str, path: str) -> dict | None:
    return _eagle3_target_check(text, path)["found"]


_spec_config_defaults = cached_by_content(
    "speculative-config-defaults",
    lambda text, _path: {"defaults": engine_facts.class_field_defaults(text, "SpeculativeConfig")},
)


def _speculators_format(dep: Deployment, remote: Remote, code: EngineCode) -> None:
    """A `speculators` checkpoint as the release reads it: its algos.py's updater makes the
    draft config the checks see; the launch takes its method and token count from the
    checkpoint where the launch line does not say (base.py)."""
    path = code.path(speculators.ALGOS)
    read_files(remote, code, [path])
    text = code.index.text_at(path)
    original = dep.draft_config or {}
    if text is None:
        dep.speculators = {"error": f"{code.install} has no {speculators.ALGOS}: this release "
                           "does not read the speculators format"}  # fmt: skip
        return
    try:
        converted = speculators.draft_config(text, original)
    except speculators.Unsupported as error:
        dep.speculators = {"error": f"{speculators.ALGOS}: {error}"}
        return
    launch = speculators.launch(original)
    dep.speculators = {"type": original.get(speculators.TYPE_KEY), "read_by": speculators.ALGOS,
                       "launch": launch}  # fmt: skip
    dep.draft_config = converted
    spec = dict(dep.spec or {})
    if not spec.get("algorithm") and launch.get("method"):
        spec["algorithm"] = launch["method"]
    if spec.get("num_steps") is None and isinstance(launch.get("num_speculative_tokens"), int):
        spec["num_steps"] = launch["num_speculative_tokens"]
    dep.spec = spec if (dep.spec is not None or spec) else None


def _speculative_settings(dep: Deployment, code: EngineCode, server: dict) -> dict:
    """The launch's speculative settings over the release's SpeculativeConfig defaults."""
    defaults = engine_facts.field_defaults(
        code, "SpeculativeConfig", lambda text, path: _spec_config_defaults(text, path)["defaults"]
    )
    args = (server.get("args") or {}) if server else {}
    launch = dep.engine_profile.launch_settings(args)
    return dict(defaults, **(launch if isinstance(launch, dict) else {}))


def _launch_params(dep: Deployment, draft_config: dict, merged: dict, server: dict) -> dict:
    """What the draft loader's constructor takes from the launch (vLLM's speculative config,
    its defaults from the release, and --quantization)."""
    args = (server.get("args") or {}) if server else {}
    quantization = args.get("quantization")
    pipeline = next((args[k] for k in PIPELINE_SIZE_FLAGS if args.get(k) is not None), None)
    params = vllm_engine_params(
        draft_config,
        dep.target_config,
        merged,
        quantization if isinstance(quantization, str) else None,
        int(pipeline) if str(pipeline).isdigit() else DEFAULT_PIPELINE_SIZE,
        dep.engine_profile.draft_on_v0_worker(dep.engine_version, dep.family),
    )
    # the constructor's own name for it (a fork renames vLLM's `vllm_config`)
    params[dep.engine_profile.loader_config_argument] = params.pop("vllm_config")
    return params


def _model_load(dep: Deployment, code: EngineCode, loader: dict, server: dict) -> None:
    """The draft class's identifiers and, for the families the loader model covers, the
    simulated load of the draft's tensors."""
    ref = engine_facts.resolve_class(code, loader["path"], loader["class"])
    if ref is None:
        dep.load_error = f"{loader['path']} was not read or does not parse"
        return
    dep.draft_words = _class_words(code, ref)
    reads_launch = dep.engine_profile.loader_reads_launch
    settings = _speculative_settings(dep, code, server) if reads_launch else {}
    draft_config = dep.engine_profile.draft_config_as_built(
        dep.draft_config or {}, dep.family, settings, dep.engine_version, dep.target_config)
    params = _launch_params(dep, draft_config, settings, server) if reads_launch else {}
    # the settings a loader branches on: the server's environment where it was read, else the
    # engine's declared defaults (loader_model.Interpreter._setting)
    params["__env__"] = dep.env or {}
    if dep.family not in LOADER_MODELLED_FAMILIES:
        return
    if dep.draft_config is not None and dep.tensors is not None:
        dep.load = simulate_load(
            code.index,
            loader["path"],
            loader["class"],
            [t["name"] for t in dep.tensors],
            draft_config,
            params,
        )


def _auto_settings_in_code(dep: Deployment, remote: Remote, code: EngineCode) -> dict | None:
    """The draft settings this install's own code picks when the launch gives none (a fork or
    dev build, whose version gates no rule): the first of its profile's files that says."""
    profile = dep.engine_profile
    if not profile.auto_settings_files or (dep.spec or {}).get("num_steps") is not None:
        return None
    paths = [code.path(rel) for rel in profile.auto_settings_files]
    read_files(remote, code, paths)
    arch = ((dep.target_config or {}).get("architectures") or [None])[0]
    for rel, path in zip(profile.auto_settings_files, paths, strict=True):
        source = code.index.text_at(path)
        found = profile.auto_settings_in_source(source, arch, dep.algorithm) if source else None
        if found:
            return {"settings": found[0], "where": f"{rel}:{found[1]}"}
    return None


def _release_of(dep: Deployment, install: dict) -> None:
    """The install's release, its label and its plugins: what the launch's own rules read."""
    dep.engine = dep.engine or install["name"]
    fork = install.get("fork")
    # a fork's or dev build's version is no release the profile's rules were read from
    dep.engine_version = release_version(dep.engine, install.get("version"), fork)
    dep.engine_label = install_label(dep.engine, install.get("version"), fork)
    dep.plugins = install.get("plugins")


def _deployment(item: dict, located: dict | None, installs: EngineCodeCache, remote: Remote,
                read: dict, trained: list[int] | None) -> Deployment:  # fmt: skip
    """`read`: what one round trip each read for every draft: {"configs": target configs,
    "tokenizers": tokenizer fingerprints} by path."""
    server = item.get("server") or {}
    dep = _launched(item, trained)
    _set_target_config(dep, read["configs"].get(item.get("target") or ""))
    tokenizers = read["tokenizers"]
    dep.tokenizers = {"draft": tokenizers.get(item["path"]),
                      "target": tokenizers.get(item.get("target") or "")}  # fmt: skip
    install = _install_for(server or None, located)
    if install is None:
        unknown_why = next(
            (p.get("install_unknown") for p in (located or {}).get("processes") or []
             if p.get("pid") == server.get("pid") and p.get("install_unknown")),
            None,
        )  # fmt: skip
        dep.code_error = (
            f"the install server pid {server['pid']} imports is unknown ({unknown_why})"
            if server.get("pid") is not None and (located or {}).get("engines")
            else "no engine install found on the box"
        )
        dep.load_error = dep.code_error
        return dep
    _release_of(dep, install)
    dep.drift = install.get("drift")
    dep.env = server.get("env")
    code = installs.get(install)
    item["install"] = install["path"]
    if dep.engine_version is None:
        dep.auto_settings = _auto_settings_in_code(dep, remote, code)
    if speculators.is_speculators(dep.draft_config) and dep.engine_profile.reads_speculators_format:
        _speculators_format(dep, remote, code)
    _method_from_draft_name(dep)
    same = item["path"] == item.get("target")
    archs = _draft_architecture(dep, remote, code, same) or _architectures(
        dep.engine_profile.draft_config_as_built(dep.draft_config or {}, dep.family, dep.spec or {},
                                                 dep.engine_version, dep.target_config))
    _method_when_none(dep)
    lookup = (_registry_lookup(dep, code, install, archs)
              if dep.engine_profile.registers_draft_architectures else archs)  # fmt: skip
    loader = None if dep.load_error else _draft_loader(dep, item, code, located, install, lookup)
    seeds = [loader["path"]] if loader else []
    target_class = ((dep.target_config or {}).get("architectures") or [None])[0]
    target_path = None
    if target_class:
        target_path = _locate_target(dep, item, remote, code, install, target_class)
        if target_path is not None:
            seeds.append(target_path)
    add_modules(remote, code, seeds)
    target = (engine_facts.vllm_target(code, dep.target_config, target_path, target_class)
              if dep.engine_profile.chooses_model_runner else None)  # fmt: skip
    _read_code_facts(dep, code, target)
    if target_path and target_class:
        _capture(dep, remote, code, target_path, target_class)
    if loader is None:
        dep.load_error = dep.load_error or (
            f"no draft-model class in {install['path']} registers {lookup or archs or '(none)'}"
        )
        return dep
    _model_load(dep, code, loader, server)
    return dep


def _summary(dep: Deployment, checked: dict) -> dict:
    return {
        "draft_class": dep.draft_class,
        "engine": dep.engine,
        "checks": {
            k: {"status": c["status"], "reason": c["reason"], "facts": c["facts"]}
            for k, c in checked["checks"].items()
        },
    }


def _pair_drafts(
    items: list[dict], servers: list[dict], scoped: bool, target: str | None
) -> list[str]:
    """Gives every draft its server and target model; returns the notes on guessed pairings.
    A draft that several servers serve is one deployment per server (each judged with its own
    flags, log and install): its item is repeated, once per server."""
    notes: list[str] = []
    for item in list(items):
        for extra in reversed(_serving(item, servers)[1:]):
            items.insert(items.index(item) + 1, dict(item, server=extra))
        item["server"], note = _pair(item, servers, scoped)
        if note:
            notes.append(note)
    for item in items:
        spec = (item["server"] or {}).get("spec") or {}
        item["target"] = target or spec.get("target_model")
    return notes


def _serving(item: dict, servers: list[dict]) -> list[dict]:
    """The servers launched with this draft (its path as given or as the box resolves it)."""
    paths = {_norm(item.get("path")), _norm(item.get("real_path")), _norm(item.get("given"))}
    return [s for s in servers if _norm((s.get("spec") or {}).get("draft_model")) in paths - {None}]


def _read_target_configs(remote: Remote, items: list[dict]) -> tuple[dict[str, Any], list[str]]:
    """The target models' configs (one round trip), and why they could not be read."""
    targets = sorted({d["target"] for d in items if d.get("target")})
    if not targets:
        return {}, []
    try:
        return remote.ask(calls.ReadConfigs(paths=targets)).by_path, []
    except RemoteCommandError as exc:
        return {}, [f"target configs: {exc}"]


def _read_tokenizers(remote: Remote, items: list[dict]) -> dict[str, Any]:
    """Tokenizer fingerprints of every draft and target (one round trip); {} if unreadable
    (the tokenizer check then says it could not compare)."""
    paths = sorted({p for d in items for p in (d.get("path"), d.get("target")) if p})
    if not paths:
        return {}
    try:
        return remote.ask(calls.TokenizerFingerprints(paths=paths)).by_path
    except RemoteCommandError:
        return {}


def _audited(drafts_audit: dict | None) -> set[tuple[Any, str]]:
    """(draft, finding id) the drafts audit already raised: not raised again here."""
    return {
        ((f.get("evidence") or {}).get("draft"), f["id"])
        for f in (drafts_audit or {}).get("findings") or []
    }


def _draft_findings(item: dict, checked: dict, audited: set[tuple[Any, str]]) -> list[dict]:
    findings = []
    for f in checked["findings"]:
        if (item["path"], f["id"]) in audited:
            continue
        f = dict(f)
        f["evidence"] = dict(f.get("evidence") or {}, draft=item["path"])
        if item["server"]:
            f["evidence"]["server"] = _label(item["server"])
        findings.append(f)
    return findings


def _draft_row(item: dict, dep: Deployment, checked: dict) -> dict:
    row = {
        "draft": item["path"],
        "server": _label(item["server"]) if item["server"] else None,
        "target": item.get("target"),
        "install": item.get("install"),
        "target_source": item.get("target_source"),
        "draft_class_source": item.get("draft_class_source"),
    }
    row.update(_summary(dep, checked))
    return row


def _check_server(server: dict, located: dict | None) -> tuple[dict, list[dict], list[str]]:
    """A server no draft was paired with (a method without a draft model, or a draft not
    found): its row, the findings it raises, what is inconclusive."""
    dep = Deployment(engine=server.get("engine"), spec=server.get("spec"), server=server,
                     server_running=server.get("pid") is not None)  # fmt: skip
    install = _install_for(server, located)
    if install is not None:
        _release_of(dep, install)
    checked = run_checks(dep)
    raised = [
        dict(f, evidence=dict(f.get("evidence") or {}, server=_label(server)))
        for f in checked["findings"]
        if f["id"] != "spec-config-cleared"
    ]
    row = {"draft": None, "server": _label(server)}
    row.update(_summary(dep, checked))
    inconclusive = [f"server {_label(server)}: {r}" for r in checked["inconclusive"]]
    return row, raised, inconclusive


def spec_checks(
    remote: Remote,
    servers: Any,
    located: dict | None,
    drafts_audit: dict | None = None,
    train_layers: Any = "",
    target: str | None = None,
    draft: str = "",
) -> dict[str, Any]:
    """The checks of remotedbg.analysis.spec_checks for every draft (from the audit step, else
    the servers' --speculative-draft-model-path), paired with the server that runs it."""
    server_list = _servers_list(servers)
    scoped = bool(draft) or any(s.get("source") in USER_SOURCES for s in server_list)
    trained = parse_layers(train_layers)
    items = _draft_items(remote, server_list, drafts_audit)
    notes = _pair_drafts(items, server_list, scoped, target)
    target_configs, inconclusive = _read_target_configs(remote, items)
    read = {"configs": target_configs, "tokenizers": _read_tokenizers(remote, items)}
    installs = EngineCodeCache(remote)
    findings: list[dict] = []
    per_draft: list[dict] = []
    audited = _audited(drafts_audit)
    for item in items:
        dep = _deployment(item, located, installs, remote, read, trained)
        if not item.get("target"):
            dep.target_error = "the target model is unknown (pass --var target=...)"
        checked = run_checks(dep)
        findings += _draft_findings(item, checked, audited)
        shared = sum(d["path"] == item["path"] for d in items) > 1
        where = f"{item['path']} (server {_label(item['server'])})" if shared else item["path"]
        inconclusive += [f"{where}: {r}" for r in checked["inconclusive"]]
        per_draft.append(_draft_row(item, dep, checked))
    others: list[dict] = []
    for server in server_list:
        if any(d["server"] is server for d in items):
            continue
        row, raised, server_inconclusive = _check_server(server, located)
        if scoped and server.get("source") not in USER_SOURCES:
            row["findings"] = raised  # another server: listed, does not decide the verdict
            others.append(row)
            continue
        findings += raised
        inconclusive += server_inconclusive
        per_draft.append(row)
    result: dict[str, Any] = {"spec": per_draft, "findings": findings, "notes": notes,
                              "other_servers": others}  # fmt: skip
    if not items and not server_list:
        inconclusive.append(
            "no draft and no server: nothing to check (pass --var draft=..., --var args=... "
            "or --var log=...)"
        )
    if inconclusive:
        result["inconclusive"] = list(dict.fromkeys(inconclusive))
    return result
