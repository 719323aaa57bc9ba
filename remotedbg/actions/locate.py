"""locate-engines: the engine installs on the box, their draft-model code and its d2t handling."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from remotedbg.actions.analysis_cache import (
    SOURCE_CAP,
    cached_by_content,
    fill_sources,
    remember,
    remembered,
)
from remotedbg.actions.container_route import SCAN, scan_inside, unreadable_servers
from remotedbg.agent import engine_scan
from remotedbg.analysis import plugin_gate
from remotedbg.analysis.d2t_handling import (
    classify_source,
    evidence_lines,
    resolve_architectures,
)
from remotedbg.analysis.d2t_install import classify_install
from remotedbg.analysis.plugins import (
    disabled,
    install_plugins,
    loader_gate,
    plugin_registry,
    unguarded_gate,
)
from remotedbg.analysis.served_code import summarize
from remotedbg.engines import plugin_gates
from remotedbg.engines.knowledge import ENGINES, scan_args
from remotedbg.engines.profile import EngineProfile
from remotedbg.engines.profiles import engine_profile, install_fork, install_label
from remotedbg.errors import RemoteCommandError
from remotedbg.remote.calls import InstallDrift
from remotedbg.remote.primitives import Remote

#: classify_source, by content: identical files in several installs or runs are read once
CLASSIFY = cached_by_content("d2t-handling", classify_source)
#: the lines that mention d2t and its kin, by content likewise (a regex pass over every line)
EVIDENCE = cached_by_content("evidence-lines", lambda text, _path: {"lines": evidence_lines(text)})


@functools.cache
def _scan_code() -> str:
    """sha256 of the agent's engine scan: which files it lists is its rule as much as theirs."""
    return hashlib.sha256((Path(engine_scan.__file__)).read_bytes()).hexdigest()


def _keep_draft_lists(installs: list[dict], kept: dict[str, Any], key: str) -> None:
    """An install whose model directories the scan found unchanged (`draft_files_same`: the
    stamp given is theirs) gets the draft-file list kept from the scan that read them; a list
    the scan read now is kept, by the stamp it answered (before fill_sources adds the texts)."""
    lists = dict(kept)
    for install in installs:
        path, stamp = install.get("path"), install.get("draft_stamp")
        if install.get("draft_files_same") and path in kept:
            install["draft_files"] = kept[path]["files"]
        elif path and stamp:
            lists[path] = {"stamp": stamp, "files": install.get("draft_files") or []}
    if lists != kept:
        remember("draft-file-lists", key, lists)


def locate_engines(
    remote: Remote,
    roots: list[str] | None = None,
    search_home: bool | str = True,
    architectures: list[str] | None = None,
    servers: bool = True,
) -> dict[str, Any]:
    """One remote round trip for the search; parsing and classification happen here. With
    `roots` named only they are searched and decide; servers that run other code are listed
    under `also_on_box` (no container of theirs is entered). `servers` False reads no process."""
    args = dict(
        scan_args(roots, search_home=search_home, search_processes=servers), hashes_first=True
    )
    lists_key = json.dumps({"scan": _scan_code(), **args}, sort_keys=True, default=str)
    kept_lists = remembered("draft-file-lists", lists_key) or {}
    args["draft_stamps"] = {path: kept["stamp"] for path, kept in kept_lists.items()}
    scan = remote.ask(SCAN(args))
    if not roots:
        scan_inside(remote, scan, args)
    _keep_draft_lists(scan.installs, kept_lists, lists_key)
    processes = scan.processes or []
    strangers = [p for p in processes if _outside(p, scoped=bool(roots))]
    # a named server's own workers are left out of both: part of it, not another server
    own = _workers_of([p for p in processes if p not in strangers], processes)
    judged = [p for p in processes if p not in strangers]
    also_on_box = [_stranger(p) for p in strangers if p not in own]
    fill_sources(remote, scan.installs)
    drifts = install_drift(remote, scan.installs)
    drafts = [f for install in scan.installs for f in install.get("draft_files") or []]
    CLASSIFY.prefill([f["source"] for f in drafts if f.get("source")])  # on the client's cores
    engines, draft_models, workers = [], [], []
    for install in scan.installs:
        engines.append(
            {
                "name": install["engine"],
                "version": install.get("version"),
                # a distribution of another name or a dev build, named so in every output
                "fork": install_fork(install["engine"], install.get("version"),
                                     install.get("fork")),
                "label": install_label(install["engine"], install.get("version"),
                                       install.get("fork")),
                "path": install["path"],
                "kind": install.get("kind"),
                "how_found": install.get("how_found", []),
                "running": install.get("running", []),
                "container": install.get("container"),
                "error": install.get("error"),
                "drift": drifts.get(install["path"]),
            }
        )
        classified = classify_install(install, CLASSIFY, _reader(remote, install["path"]))
        profile = engine_profile(install["engine"])
        plugins, plugin_models = install_plugins(install, classified["draft_models"], profile,
                                                 CLASSIFY)  # fmt: skip
        _gate_plugins(remote, install, plugins, profile)
        plugin_models = [dict(m, disabled=True) if m.get("plugin") in {
            p["label"] for p in plugins if disabled(p)} else m for m in plugin_models]
        engines[-1]["plugins"] = plugins
        engines[-1]["registry"] = _with_plugins(classified.get("registry"), plugins, profile)
        engines[-1]["followed"] = classified.get("followed", [])
        classified["draft_models"] += plugin_models
        sources = {f["path"]: f.get("source") for f in install.get("draft_files") or []}
        sources |= {f["path"]: f.get("source") for p in install.get("plugins") or []
                    for f in p.get("files") or []}  # fmt: skip
        for model in classified["draft_models"]:
            source = sources.get(model["path"]) or ""
            draft_models.append(
                {
                    "engine": install["engine"],
                    "install": install["path"],
                    "path": f"{model.get('site') or install['path']}/{model['path']}",
                    # a plugin's file: its path is relative to the site-packages
                    "plugin": model.get("plugin"),
                    "disabled": bool(model.get("disabled")),
                    "relative_path": model["path"],
                    "architectures": model.get("architectures", []),
                    "classes": model.get("classes", []),
                    "entry_classes": model.get("entry_classes", []),
                    "d2t_handling": model["d2t_handling"],
                    "reason": model.get("reason", ""),
                    "evidence": model.get("evidence", []),
                    "evidence_lines": EVIDENCE(source, model["path"])["lines"] if source else [],
                    "capped": model.get("capped", False),
                }
            )
        for path in classified["unread"]:
            draft_models.append(
                {
                    "engine": install["engine"],
                    "install": install["path"],
                    "path": f"{install['path']}/{path}",
                    "relative_path": path,
                    "architectures": [],
                    "classes": [],
                    "d2t_handling": "unknown",
                    "reason": "source not read (size cap)",
                    "evidence": [],
                    "evidence_lines": [],
                    "capped": True,
                }
            )
        workers += [
            {
                "engine": install["engine"],
                "install": install["path"],
                "path": f"{install['path']}/{w}",
            }
            for w in install.get("worker_files", [])
        ]
        if architectures:
            models_here = [m for m in classified["draft_models"]]
            for hit in resolve_architectures(
                architectures, models_here, classified.get("registry")
            ):
                hit["install"] = install["path"]
                hit["engine"] = install["engine"]
                if hit.get("path"):
                    hit["path"] = f"{install['path']}/{hit['path']}"
                install.setdefault("_resolved", []).append(hit)
    resolved = [hit for install in scan.installs for hit in install.get("_resolved", [])]
    return {
        "engines": engines,
        "draft_models": draft_models,
        "workers": workers,
        "resolved": resolved,
        "processes": judged,
        "unreadable": unreadable_servers(judged),
        "also_on_box": also_on_box,
        "searched": scan.searched,
        "limits": scan.limits,
        "elapsed_s": scan.elapsed_s,
    }


def _gate_plugins(remote: Remote, install: dict, plugins: list[dict], profile: EngineProfile
                  ) -> None:  # fmt: skip
    """Each plugin's gate on this install (analysis.plugin_gate): its hook table, where one is
    known, evaluated against the engine's code (one read of the table, one of the engine files
    it names); else the early return its registrations sit behind, undecided."""
    package = str(profile.scan.get("package") or profile.name)
    loader = profile.plugin_loader_file if plugins else None
    loader_text, absent = _loader_file(remote, install["path"], loader) if loader else (None, False)
    for plugin in plugins:
        where = plugin_gates.hook_table(plugin["label"].split(" ")[0], profile.name)
        stopped = (loader_gate(plugin, loader, loader_text)
                   if loader and (absent or loader_text is not None) else None)  # fmt: skip
        if stopped is not None:
            gate = stopped
        elif where is None:
            gate = unguarded_gate(plugin)
        else:
            site = plugin["site"].rstrip("/")
            table = _reader(remote, site)([where["file"]]).get(where["file"])
            hooks = plugin_gate.hook_table(table, where["table"]) if table else None
            read = _reader(remote, install["path"])
            texts = read(plugin_gate.hook_modules(hooks or [], package))
            for _ in range(3):  # the bases of the hooks' classes, a level a round
                more = plugin_gate.base_modules(hooks or [], package, texts.get)
                if not more:
                    break
                texts |= {p: "" for p in more} | read(more)
            gate = plugin_gate.evaluate(hooks, package, texts.get,
                                        {**where, "table": f"{where['file']} {where['table']}"})
        if gate is not None:
            plugin["gate"] = gate
            plugin["gate_line"] = plugin_gate.gate_line(
                plugin["label"], install_label(install["engine"], install.get("version"),
                                               install.get("fork")), gate)  # fmt: skip


def _loader_file(remote: Remote, install: str, rel: str) -> tuple[str | None, bool]:
    """(the engine's plugin loader's text, whether the release has no such file); (None,
    False) when it could not be read (then nothing is said of what it loads)."""
    try:
        (answer,) = remote.read_text([f"{install}/{rel}"], SOURCE_CAP) or [{}]
    except (RemoteCommandError, ValueError):
        return None, False
    if "text" in answer and not answer.get("truncated"):
        return answer["text"], False
    return None, answer.get("error") == "no such file"


def _with_plugins(registry: dict | None, plugins: list[dict], profile: EngineProfile
                  ) -> dict | None:  # fmt: skip
    """The engine's registry with the architectures its plugins register: where the engine
    looks drafts up in a registry, a plugin's entry replaces its own when the engine lets it
    (vLLM's register_model overwrites), else the engine's stays."""
    added = plugin_registry(plugins)
    if not profile.registers_draft_architectures or not added:
        return registry
    if profile.plugin_models_override:
        return {**(registry or {}), **added}
    return {**added, **(registry or {})}


def install_drift(remote: Remote, installs: list[dict]) -> dict[str, dict[str, Any]]:
    """Each install's drift from its release (remotedbg.agent.drift), summarized, by path; one
    round trip for all. An install in a container is not checked (said so)."""
    asked = [
        {"path": i["path"], "kind": i.get("kind"), "site_packages": i.get("site_packages"),
         "git": i.get("git"), "version": i.get("version"),
         "package": ENGINES.get(i["engine"], {}).get("package"),
         "dist_names": [*(ENGINES.get(i["engine"], {}).get("dist_names") or []),
                        *([i["fork"]["distribution"]] if i.get("fork") else [])]}
        for i in installs if not i.get("container") and i.get("path")
    ]  # fmt: skip
    out: dict[str, dict[str, Any]] = {
        i["path"]: {"path": i["path"], "status": "unknown", "files": [],
                    "reason": "inside a container: not compared with its release"}
        for i in installs if i.get("container") and i.get("path")
    }  # fmt: skip
    if not asked:
        return out
    try:
        answer = remote.ask(InstallDrift({"installs": asked}))
    except RemoteCommandError as error:
        return out | {a["path"]: {"path": a["path"], "status": "unknown", "files": [],
                                  "reason": f"not compared: {error}"} for a in asked}  # fmt: skip
    for drift in answer.installs:
        out[drift["path"]] = summarize(drift)
    return out


def _reader(remote: Remote, install: str) -> Callable[[list[str]], dict[str, str]]:
    """Engine modules by their path in the install (the bases a draft class leaves d2t to);
    a file that is missing, unreadable or over the cap is left out."""

    def read(paths: list[str]) -> dict[str, str]:
        try:
            answers = remote.read_text([f"{install}/{p}" for p in paths], SOURCE_CAP)
        except RemoteCommandError:
            return {}
        wanted = {f"{install}/{p}": p for p in paths}
        return {
            wanted[a["pattern"]]: a["text"]
            for a in answers
            if a.get("pattern") in wanted and "text" in a and not a.get("truncated")
        }

    return read


def _outside(process: dict, scoped: bool) -> bool:
    """A server that is not this audit's: with roots named, one that runs none of them; always,
    one in a container the runtime this user reaches does not know."""
    return bool((scoped and not process.get("installs"))
                or (process.get("container") or {}).get("elsewhere"))  # fmt: skip


def _workers_of(servers: list[dict], processes: list[dict]) -> list[dict]:
    """Processes started by one of `servers` (vLLM's `VLLM::EngineCore`, forked workers): part
    of that server, not another one on the box."""
    parent = {p["pid"]: p.get("ppid") for p in processes}
    inside = {p["pid"] for p in servers}
    workers = []
    for process in processes:
        seen, up = set(), process.get("ppid")
        while up is not None and up not in seen and up not in inside:
            seen.add(up)
            up = parent.get(up)
        if up in inside and process not in servers:
            workers.append(process)
    return workers


def _stranger(process: dict) -> dict[str, Any]:
    """A server outside the named scope: listed, never judged."""
    container = process.get("container") or {}
    stranger = {
        "pid": process["pid"],
        "engine": process.get("engine"),
        "cmdline": process.get("cmdline"),
        "container": container.get("name") or (container.get("id") or "")[:12] or None,
    }
    if container.get("elsewhere"):
        stranger["why"] = container["elsewhere"]
    return stranger
