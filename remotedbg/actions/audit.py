"""find-drafts, find-target and audit-drafts: the vocab-audit investigation as actions."""

from __future__ import annotations

import posixpath
from typing import Any

from remotedbg.actions.engine_code import EngineCodeCache, read_files, registry_lookup
from remotedbg.actions.interpreter import checkpoint_ask
from remotedbg.agent.findings import ERROR, INFO, finding
from remotedbg.analysis import speculators
from remotedbg.analysis.crosscheck import loader_direct_map, server_paths
from remotedbg.analysis.d2t_handling import resolve_architectures
from remotedbg.engines.knowledge import draft_family, drafts_without_a_model
from remotedbg.engines.profiles import engine_profile, launch_profile, release_version
from remotedbg.engines.text_config import TEXT_CONFIG_PATHS
from remotedbg.errors import RemoteCommandError
from remotedbg.remote import calls
from remotedbg.remote.primitives import Remote

DEFAULT_SEARCH = ["~", "/models", "/data", "~/.cache/huggingface/hub"]
NEXT_STEPS = [
    "the server's --speculative-algorithm matches the draft (EAGLE3 for an Eagle3 architecture)",
    "the target captures the hidden-state layers used in training "
    "(eagle_config.eagle_aux_hidden_state_layer_ids)",
    "norm flags (norm_before_fc, fc_norm, norm_output) mean the same in trainer and engine",
    "accept length in the server log against its ceiling (num_steps + 1)",
]


def _own_vocab(servers: list[dict], draft: str) -> bool:
    """Every launch serving `draft` asks that it keep its own vocabulary (vLLM's
    use_heterogeneous_vocab); whether the release honours it is decided with its install."""
    path = posixpath.normpath(draft)
    serving = [s for s in servers if s.get("draft") and posixpath.normpath(s["draft"]) == path]
    return bool(serving) and all(s.get("heterogeneous_vocab") for s in serving)


def _algorithms(servers: list[dict], draft: str) -> list[str]:
    """The speculative algorithms of the launches (running, or --var args) serving `draft`."""
    path = posixpath.normpath(draft)
    return sorted({s["algorithm"] for s in servers
                   if s.get("draft") and posixpath.normpath(s["draft"]) == path
                   and s.get("algorithm")})  # fmt: skip


def find_drafts(
    remote: Remote, draft: str = "", processes: list | None = None, search: list[str] | None = None
) -> dict[str, Any]:
    servers = server_paths(processes or [])
    explicit_search = bool(search) and list(search or []) != DEFAULT_SEARCH
    if draft:
        # a named draft that a running server serves is judged as that server loads it
        serving: dict[str, list] = {}
        for server in servers:
            if server.get("draft") and server.get("pid") is not None:
                serving.setdefault(posixpath.normpath(server["draft"]), []).append(server["pid"])
        paths = [p for p in str(draft).split(",") if p]
        named = [
            {"path": p, "how_found": "--var draft", "pids": serving.get(posixpath.normpath(p), []),
             "algorithms": _algorithms(servers, p), "own_vocab": _own_vocab(servers, p)}
            for p in paths
        ]  # fmt: skip
        return {"drafts": named, "servers": servers, "without_model": []}
    by_path: dict[str, dict] = {}
    for server in servers:
        if not server.get("draft"):
            continue
        flag = launch_profile(server.get("engine")).draft_flag
        fresh = {"path": server["draft"], "pids": [], "how_found": f"running server {flag}",
                 "algorithms": _algorithms(servers, server["draft"]),
                 "own_vocab": _own_vocab(servers, server["draft"])}  # fmt: skip
        draft = by_path.setdefault(server["draft"], fresh)
        if server.get("pid") is not None:
            draft["pids"].append(server["pid"])
        if (server.get("paths_in_container") or {}).get("draft_model"):
            draft["path_in_container"] = server["paths_in_container"]["draft_model"]
    if by_path and not explicit_search:
        return {"drafts": list(by_path.values()), "servers": servers, "without_model": []}
    given = [s for s in servers if s.get("pid") == "--var args"]
    if given and len(given) == len(servers) and not explicit_search and not any(
            s.get("algorithm") for s in given):  # fmt: skip
        # the launch typed names no speculation: a checkpoint found on the box would be a
        # stranger's, judged as this launch's
        return {"drafts": [], "servers": servers, "without_model": [], "inconclusive": [
            "the launch given names no speculative algorithm and no draft: no checkpoint is "
            "searched for (pass --var draft=PATH to audit one)"]}  # fmt: skip
    model_free = [s for s in servers if drafts_without_a_model(s.get("algorithm"))]
    if servers and len(model_free) == len(servers) and not explicit_search:
        # nothing to search for: a checkpoint found on the box would be a stranger's
        return {"drafts": [], "servers": servers, "without_model": model_free,
                "findings": [_no_draft_model(s) for s in model_free]}  # fmt: skip
    found = remote.ask(calls.FindDrafts(roots=search or DEFAULT_SEARCH))
    drafts = [{"path": d["path"], "how_found": f"search: {d['reason']}"} for d in found.drafts]
    result: dict[str, Any] = {"drafts": drafts, "servers": servers, "searched": found.searched,
                              "without_model": []}  # fmt: skip
    if not drafts:
        result["inconclusive"] = [
            "no draft checkpoint found (searched "
            f"{', '.join(found.searched) or 'nothing'}); "
            "pass --var draft=PATH"
        ]
    return result


def _no_draft_model(server: dict) -> dict:
    """The info finding for a server whose method drafts without a model (knowledge.
    drafts_without_a_model): there is no draft checkpoint, so no vocabulary map or head."""
    label = f"pid {server['pid']}" if server.get("pid") is not None else "the launch given"
    return finding(
        "no-draft-model", INFO,
        f"{label} drafts with method {server['algorithm']}, without a draft model: no draft "
        "checkpoint to audit",
        f"{server['algorithm']} proposes tokens by looking them up in the text so far, so there "
        "is no head, vocabulary map or draft checkpoint to check; measure what it gains with "
        "`remotedbg probe`.",
        {"pid": server.get("pid"), "algorithm": server["algorithm"],
         "target": server.get("target")},
    )  # fmt: skip


def find_target(
    target: str = "", servers: list | None = None, drafts: list | None = None
) -> dict[str, Any]:
    """--var target, else for each draft the --model-path of the server that serves it (another
    server on the box serves another model). `target` is the first found, `by_draft` maps each
    served draft to its own target."""
    if target:
        return {"target": target, "how_found": "--var target", "by_draft": {}}
    audited = {posixpath.normpath(d["path"]) for d in drafts or [] if d.get("path")}
    by_draft: dict[str, str] = {}
    first = None
    for server in servers or []:
        draft = server.get("draft")
        if drafts is not None and (not draft or posixpath.normpath(draft) not in audited):
            continue
        if server.get("target"):
            if draft:
                by_draft.setdefault(draft, server["target"])
            first = first or server
    if first is not None:
        return {
            "target": first["target"],
            "how_found": f"server pid {first['pid']} --model-path",
            "by_draft": by_draft,
        }
    return {
        "target": None,
        "how_found": None,
        "by_draft": {},
        "skipped": [
            "target vocab size from the target's own config (taken from the draft config instead)",
            "eos ids of the target",
            "decoded token sample",
            "aux layer defaults of the target",
        ],
    }


def loader_for(architectures: list[str], located: dict, install: str | None = None) -> dict | None:
    """The draft-model file and class that would load these architectures: in `install` when
    given, else in the install the user pointed at (--var roots), then one a running server
    uses, then the others."""
    models = [m for m in located.get("draft_models", [])]
    engines = sorted(
        located.get("engines", []),
        key=lambda e: ("root-arg" not in e.get("how_found", []), not e.get("running")),
    )
    if install is not None:
        engines = [e for e in engines if e["path"] == install]
    for engine in engines:
        # a plugin's class whose gate stops its registration loads nothing
        here = [dict(m, path=m["relative_path"]) for m in models
                if m["install"] == engine["path"] and not m.get("disabled")]  # fmt: skip
        for hit in resolve_architectures(architectures, here, engine.get("registry")):
            if hit.get("resolved"):
                model = next(
                    m
                    for m in models
                    if m["install"] == engine["path"] and m["relative_path"] == hit["path"]
                )
                return {
                    "engine": engine["name"],
                    "version": engine.get("version"),
                    "install": engine["path"],
                    "path": model["path"],
                    "class": hit.get("class"),
                    "d2t_handling": hit.get("d2t_handling"),
                    "evidence": model["evidence"],
                    "running": bool(engine.get("running")),
                    # a class a plugin registers: named with the plugin
                    "plugin": model.get("plugin"),
                    "relative_path": model["relative_path"],
                }
    return None


def _engine_name(located: dict, install: str) -> str | None:
    return next((e.get("name") for e in located.get("engines") or [] if e["path"] == install), None)


def _architectures_as_built(config: dict, located: dict | None, install: str | None
                            ) -> list[str]:  # fmt: skip
    """The draft config's architectures, else those the engine's config class gives a config
    that names none (vLLM's MedusaConfig: MedusaModel, for FasterDecoding's Medusa heads)."""
    named = [a for a in config.get("architectures", []) if isinstance(a, str)]
    family = draft_family(config)
    if named or family is None:
        return named
    for engine in (located or {}).get("engines") or []:
        if install not in (None, engine.get("path")):
            continue
        built = engine_profile(engine.get("name")).draft_config_as_built(config, family, {})
        found = [a for a in built.get("architectures") or [] if isinstance(a, str)]
        if found:
            return found
    return named


def _loader_by_method(
    remote: Remote,
    located: dict,
    config: dict,
    tensors: list,
    only: str | None = None,
    algorithm: str | None = None,
) -> dict | None:
    """An install that looks the draft's architecture up in its registry (vLLM) resolves a
    draft by the method it is served with: the draft's own family says which (an EAGLE-3 head
    is served with eagle3), else the `algorithm` of the one launch that serves it (a plain
    LlamaForCausalLM whose fc fits no target). `only`: that install."""
    archs = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    cache = EngineCodeCache(remote)
    for install in located.get("engines") or []:
        profile = engine_profile(install.get("name"))
        if not profile.registers_draft_architectures or only not in (None, install["path"]):
            continue
        family = draft_family(config, profile.name if algorithm else None, algorithm, tensors)
        if family not in ("eagle3", "eagle"):
            continue
        method = profile.launch_algorithms.get(family)
        if not method:
            continue
        # the profile's fixed rule (LMDeploy's, TokenSpeed's renames), else vLLM's own code's
        lookup = profile.served_architectures(archs, method)
        if lookup is None:
            lookup = registry_lookup(cache.get(install), archs, method)["lookup"]
        loader = loader_for(lookup, located, install["path"])
        if loader is not None:
            return loader
    return None


def audit_draft(
    remote: Remote,
    draft: str,
    target: str | None,
    located: dict | None,
    install: str | None = None,
    served_by: list[int] | None = None,
    algorithm: str | None = None,
    spec_follows: bool = False,
    own_vocab: bool = False,
) -> dict[str, Any]:
    """One draft's vocab map in place, then the loader that would load it: in `install` (the
    install of the server that serves it) when known; a draft no server serves as loader_for
    chooses; one served by a server whose install is unknown gets no loader (never borrowed).
    `algorithm`: the one speculative algorithm its launches name (running or --var args).
    `spec_follows`: spec-audit's spec step judges the loader next (its draft-arch-unsupported
    and draft-weights checks say what a missing loader means), so none is noted here.
    `own_vocab`: the release serves the draft with its own vocabulary (vLLM's
    use_heterogeneous_vocab), so its sizes are not the target's to match."""
    report: dict[str, Any] = {"draft": draft, "findings": [], "inconclusive": []}
    ask = calls.VocabCheck(path=draft, target_path=target, own_vocab=own_vocab,
                           text_config_paths=TEXT_CONFIG_PATHS)  # fmt: skip
    vocab = checkpoint_ask(remote, ask)
    report["vocab"] = vocab.summary
    report["findings"] += vocab.findings
    report["inconclusive"] += [f"{draft}: {u.reason}" for u in vocab.unknown]
    if not vocab.summary:
        return report
    try:
        listing = checkpoint_ask(remote, calls.ListTensors(path=draft))
    except RemoteCommandError as error:
        report["inconclusive"].append(str(error))
        return report
    config = listing.config or {}
    if speculators.is_speculators(config) and located:
        config = _as_the_engine_reads(remote, located, config, install, report)
    architectures = _architectures_as_built(config, located, install)
    report["architectures"] = architectures
    if located is None or not located.get("engines"):
        report["inconclusive"].append("no engine install found: loader checks skipped")
        report["loader"] = None
        return report
    if served_by and not install:
        why = [
            p["install_unknown"]
            for p in located.get("processes") or []
            if p.get("pid") in served_by and p.get("install_unknown")
        ] or [f"the install pid {', '.join(map(str, served_by))} imports was not found"]
        report["inconclusive"] += [
            f"{reason}: no other install's loader is taken for it (pass --var roots=...)"
            for reason in why
        ]
        report["loader"] = None
        return report
    if install:
        # the install that serves the draft loads it: another install's loader is never borrowed
        loader = loader_for(architectures, located, install)
        if loader is None and engine_profile(
            _engine_name(located, install)
        ).registers_draft_architectures:
            loader = _loader_by_method(
                remote, located, config, listing.tensors, install, algorithm
            )
    else:
        # served by no running server: judged with each install that could load it, best first
        loaders = _each_install(
            remote, located, config, architectures, listing.tensors, algorithm
        )
        loader = loaders[0] if loaders else None
        if len(loaders) > 1:
            report["loaders"] = loaders
            for other in loaders[1:]:
                report["findings"] += loader_direct_map(report["vocab"], other)
    report["loader"] = loader
    no_map = _no_vocab_map(report["vocab"], own_vocab)
    if no_map and (loader is None and not spec_follows
                   or loader is not None and loader["d2t_handling"] == "unknown"):  # fmt: skip
        # an MTP/NextN head, or any draft over the full target vocab (vLLM's Llama-4 EAGLE head,
        # whose class also reads a d2t when one is given: 0.18.0 llama4_eagle.py:212-224): it
        # proposes target ids as they are, so no loader's d2t handling can mis-map them
        shared = report["vocab"].get("shared_tokenizer_ids")
        vocab = ("its own, which the release maps" if own_vocab
                 else f"the target's tokenizer's {shared} ids, padded" if shared
                 else f"the target's {report['vocab'].get('target_vocab')}")  # fmt: skip
        report["notes"] = [f"no vocab map (no d2t or t2d; the draft's vocab is {vocab}): the "
                           "loader's d2t handling does not apply"]  # fmt: skip
    elif loader is None and not spec_follows:
        report["inconclusive"].append(
            f"no draft-model class on the box registers {', '.join(architectures) or '(none)'}"
        )
    elif loader is not None:
        report["findings"] += loader_direct_map(report["vocab"], loader)
        if loader["d2t_handling"] == "unknown":
            report["inconclusive"].append(f"{loader['path']}: d2t handling unknown")
    return report


def _as_the_engine_reads(remote: Remote, located: dict, config: dict, install: str | None,
                         report: dict[str, Any]) -> dict:  # fmt: skip
    """A speculators checkpoint's config as the install that reads the format makes it
    (remotedbg.analysis.speculators): `install` when known, else the first that can."""
    cache = EngineCodeCache(remote)
    for engine in located.get("engines") or []:
        if install not in (None, engine["path"]):
            continue
        if not engine_profile(engine.get("name")).reads_speculators_format:
            continue
        code = cache.get(engine)
        path = code.path(speculators.ALGOS)
        read_files(remote, code, [path])
        text = code.index.text_at(path)
        if text is None:
            continue
        try:
            converted = speculators.draft_config(text, config)
        except speculators.Unsupported:
            continue
        report["speculators"] = {"read_by": path, "type": config.get(speculators.TYPE_KEY)}
        return converted
    return config


def _no_vocab_map(summary: dict[str, Any], own_vocab: bool = False) -> bool:
    """The checkpoint has neither d2t nor t2d and its vocab is the target's whole vocab (or
    the one tokenizer both ship, padded to another size), or its own that the release maps
    (`own_vocab`)."""
    if summary.get("d2t_present") or summary.get("t2d_present"):
        return False
    if summary.get("shared_tokenizer_ids"):
        return True
    # no draft_vocab_size: the config's vocab_size is the draft's (engines fall back to it)
    draft = summary.get("draft_vocab") or (summary.get("draft_config") or {}).get("vocab_size")
    return own_vocab or (isinstance(draft, int) and draft == summary.get("target_vocab"))


def _each_install(
    remote: Remote,
    located: dict,
    config: dict,
    architectures: list[str],
    tensors: list,
    algorithm: str | None = None,
) -> list[dict]:
    """The loader of every install that resolves these architectures, in loader_for's order
    of preference (the install named with --var roots, then one a server runs, then the rest)."""
    ordered = loader_for(architectures, located)
    found = [ordered] if ordered else []
    for engine in located.get("engines") or []:
        if ordered is not None and engine["path"] == ordered["install"]:
            continue
        loader = loader_for(architectures, located, engine["path"])
        if loader is None and engine_profile(engine.get("name")).registers_draft_architectures:
            loader = _loader_by_method(
                remote, located, config, tensors, engine["path"], algorithm
            )
        if loader is not None:
            found.append(loader)
    if not found:
        loader = _loader_by_method(remote, located, config, tensors, algorithm=algorithm)
        found = [loader] if loader else []
    return found


def _own_vocab_served(draft: dict, located: dict | None) -> bool:
    """The draft's launches ask for its own vocabulary and the install serving it honours that
    (the engine profile's draft_model_vocab says "allowed")."""
    if not draft.get("own_vocab"):
        return False
    engines = (located or {}).get("engines") or []
    path = _serving_install(draft, located)
    install = next((e for e in engines if e.get("path") == path), None)
    running = [p for p in draft.get("pids") or [] if isinstance(p, int)]
    if install is None and not running:  # a launch given as --var args: the install
        given = [e for e in engines if "root-arg" in (e.get("how_found") or [])]  # named
        install = (given or engines)[0] if len(given or engines) == 1 else None
    if install is None:
        return False
    version = release_version(install.get("name"), install.get("version"), install.get("fork"))
    rule = engine_profile(install.get("name")).draft_model_vocab(
        version, {"use_heterogeneous_vocab": True})
    return rule is not None and rule[0] == "allowed"


def _served_algorithm(draft: dict) -> str | None:
    """The speculative algorithm every launch serving this draft names (None: none, or two)."""
    named = set(draft.get("algorithms") or [])
    return named.pop() if len(named) == 1 else None


def _serving_install(draft: dict, located: dict | None) -> str | None:
    """The install whose running server serves this draft (two servers on a box may run two
    installs of one release, e.g. in two containers)."""
    pids = set(draft.get("pids") or [])
    for engine in (located or {}).get("engines") or []:
        if pids & set(engine.get("running") or []):
            return engine["path"]
    return None


def audit_drafts(
    remote: Remote,
    drafts: list | None,
    target: str | None,
    located: dict | None,
    targets: dict | None = None,
    next_steps: bool = True,
    without_model: list | None = None,
    none_because: list | None = None,
) -> dict[str, Any]:
    """Each draft against its own server's target when one serves it, else `target`. A cleared
    vocab map says where to look next unless a later step (spec-audit's) checks those itself.
    `without_model`: find-drafts' servers whose method drafts without a model (it said so):
    no draft is then nothing to audit, not an unknown. `none_because`: why find-drafts found
    none (its own inconclusive, already said): not said a second time here."""
    per_draft = []
    for d in drafts or []:
        report = audit_draft(
            remote, d["path"], (targets or {}).get(d["path"], target), located,
            _serving_install(d, located), [p for p in d.get("pids") or [] if isinstance(p, int)],
            _served_algorithm(d), spec_follows=not next_steps,
            own_vocab=_own_vocab_served(d, located),
        )  # fmt: skip
        if d.get("path_in_container"):
            report["draft_in_container"] = d["path_in_container"]
        per_draft.append(report)
    findings = []
    for report in per_draft:
        for item in report["findings"]:
            item = dict(item)
            item["evidence"] = dict(item.get("evidence", {}), draft=report["draft"])
            if report.get("draft_in_container"):
                item["evidence"]["draft_in_container"] = report["draft_in_container"]
            findings.append(item)
    inconclusive = [reason for report in per_draft for reason in report["inconclusive"]]
    cleared = (
        per_draft
        and not any(f["severity"] == ERROR for f in findings)
        and all(r.get("loader") for r in per_draft)  # how the loader uses d2t was checked too
    )
    if cleared and not inconclusive:
        findings.append(
            finding(
                "vocab-map-cleared",
                INFO,
                "the vocab mapping is not at fault: look elsewhere",
                "Checked: d2t/t2d format and agreement, sizes, eos, and how the engine's loader "
                "uses d2t." + (" Next: " + "; ".join(NEXT_STEPS) + "." if next_steps else ""),
                {"drafts": [r["draft"] for r in per_draft]},
            )
        )
    result: dict[str, Any] = {"drafts": per_draft, "findings": findings}
    if inconclusive:
        result["inconclusive"] = inconclusive
    if not per_draft and not without_model and not none_because:
        result["inconclusive"] = ["no draft checkpoint to audit"]
    return result
