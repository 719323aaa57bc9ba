"""find-servers and spec-checks: the speculative-decoding configuration audit as actions.

find_servers: one agent round trip (remotedbg.agent.server_scan:scan_servers).
spec_checks: per draft, its tensor listing + config (1 round trip), then once for all drafts the
target configs (1), a grep for the target's model class in the engine install (1 per target
architecture) and one read of the target-model and draft-model files (1); everything else is the
pure checks of remotedbg.analysis.spec_checks.
"""

from __future__ import annotations

import os
from typing import Any

from remotedbg.actions.audit import loader_for
from remotedbg.analysis.spec_checks import parse_layers, run_checks
from remotedbg.engines.knowledge import ENGINES
from remotedbg.errors import RemoteCommandError
from remotedbg.remote.primitives import Remote

SCAN = "remotedbg.agent.server_scan:scan_servers"
LIST = "remotedbg.agent.checkpoint:list_tensors"
CONFIGS = "remotedbg.agent.draft_search:read_configs"
SOURCE_CAP = 2 << 20


def _server_argv(server: dict) -> list[str]:
    """A normalised command line for crosscheck.server_paths (find-drafts / find-target)."""
    spec = server.get("spec") or {}
    argv: list[str] = []
    if spec.get("target_model"):
        argv += ["--model-path", spec["target_model"]]
    if spec.get("draft_model"):
        argv += ["--speculative-draft-model-path", spec["draft_model"]]
    if spec.get("algorithm"):
        argv += ["--speculative-algorithm", spec["algorithm"]]
    return argv


def find_servers(
    remote: Remote, log: str = "", args: str = "", tail_lines: int = 200, metrics: Any = None
) -> dict[str, Any]:
    """Running servers (and/or the --var log / --var args one): parsed args, log figures,
    metrics. `processes` is shaped for find-drafts (`processes:` parameter)."""
    scan = remote.call(
        SCAN,
        {
            "log": str(log or ""),
            "args": str(args or ""),
            "tail_lines": int(tail_lines or 200),
            "metrics": metrics if metrics in (True, False) else None,
        },
    )
    servers = scan["servers"]
    processes = [
        {
            "pid": s.get("pid") if s.get("pid") is not None else s["source"],
            "engine": s.get("engine"),
            "cmdline": _server_argv(s),
        }
        for s in servers
        if _server_argv(s)
    ]
    return {
        "servers": servers,
        "processes": processes,
        "notes": scan.get("notes", []),
        "elapsed_s": scan.get("elapsed_s"),
    }


def _servers_list(servers: Any) -> list[dict]:
    if isinstance(servers, dict):
        servers = servers.get("servers")
    return [s for s in servers or [] if isinstance(s, dict)]


def _same_path(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    return os.path.normpath(os.path.expanduser(a)) == os.path.normpath(os.path.expanduser(b))


def _pair(draft: str, servers: list[dict]) -> tuple[dict | None, str | None]:
    for server in servers:
        if _same_path((server.get("spec") or {}).get("draft_model"), draft):
            return server, None
    if len(servers) == 1:
        where = servers[0].get("pid") or servers[0].get("source")
        return servers[0], f"draft {draft} paired with the only server ({where})"
    return None, None


def _install_for(server: dict | None, located: dict | None) -> dict | None:
    engines = (located or {}).get("engines") or []
    if not engines:
        return None
    pid = (server or {}).get("pid")
    name = (server or {}).get("engine")
    for engine in engines:
        if pid is not None and pid in (engine.get("running") or []):
            return engine
    for engine in engines:
        if name and engine.get("name") == name and engine.get("running"):
            return engine
    for engine in engines:
        if name and engine.get("name") == name:
            return engine
    return engines[0]


def _grep_class(remote: Remote, install: dict, class_name: str) -> tuple[str | None, str | None]:
    models_dir = ENGINES.get(install.get("name"), {}).get("models_dir")
    if not models_dir:
        return None, f"no models dir known for engine {install.get('name')}"
    folder = f"{install['path']}/{models_dir}"
    pattern = f"^class[[:space:]]+{class_name}[[:space:]]*[(:]"
    try:
        found = remote.grep(pattern, [folder], limit=20)
    except RemoteCommandError as exc:
        return None, f"grep for class {class_name} in {folder}: {exc}"
    records = found.get("records") or []
    if not records:
        return None, f"no class {class_name} in {folder}"
    paths = sorted({r["path"] for r in records}, key=lambda p: (len(p), p))
    return paths[0], None


def spec_checks(
    remote: Remote,
    servers: Any,
    located: dict | None,
    drafts_audit: dict | None = None,
    train_layers: Any = "",
    target: str | None = None,
) -> dict[str, Any]:
    """Run remotedbg.analysis.spec_checks for every draft (from the audit step, else the servers'
    --speculative-draft-model-path), paired with the server that runs it."""
    server_list = _servers_list(servers)
    trained = parse_layers(train_layers)
    inconclusive: list[str] = []
    notes: list[str] = []
    drafts: list[dict] = []
    for report in (drafts_audit or {}).get("drafts") or []:
        drafts.append({"path": report["draft"], "loader": report.get("loader")})
    if not drafts:
        for server in server_list:
            path = (server.get("spec") or {}).get("draft_model")
            if path and not any(_same_path(path, d["path"]) for d in drafts):
                drafts.append({"path": path, "loader": None})
    # 1) each draft's tensors and config
    for item in drafts:
        try:
            listing = remote.call(LIST, {"path": item["path"]})
            item["config"] = listing.get("config") or {}
            item["tensors"] = listing.get("tensors") or []
        except RemoteCommandError as exc:
            item["config"] = None
            item["tensors"] = None
            item["error"] = str(exc)
        item["server"], note = _pair(item["path"], server_list)
        if note:
            notes.append(note)
        spec = (item["server"] or {}).get("spec") or {}
        item["target"] = target or spec.get("target_model")
    # 2) target configs, one round trip
    targets = sorted({d["target"] for d in drafts if d.get("target")})
    target_configs: dict[str, Any] = {}
    if targets:
        try:
            target_configs = remote.call(CONFIGS, {"paths": targets})
        except RemoteCommandError as exc:
            inconclusive.append(f"target configs: {exc}")
    # 3) where the target's model class and the draft's model class live
    wanted: dict[str, str | None] = {}
    for item in drafts:
        cfg = target_configs.get(item.get("target") or "")
        if isinstance(cfg, dict) and "error" in cfg:
            item["target_error"] = cfg["error"]
            cfg = None
        item["target_config"] = cfg if isinstance(cfg, dict) else None
        install = _install_for(item["server"], located)
        item["install"] = install.get("path") if install else None
        archs = (item["target_config"] or {}).get("architectures") or []
        item["target_class"] = archs[0] if archs and isinstance(archs[0], str) else None
        item["target_source_path"] = None
        if install and item["target_class"]:
            key = f"{install['path']}|{item['target_class']}"
            if key not in wanted:
                wanted[key], error = _grep_class(remote, install, item["target_class"])
                if error:
                    item["target_source_error"] = error
            item["target_source_path"] = wanted[key]
        loader = item.get("loader")
        if loader is None and located and item.get("config"):
            archs = [a for a in item["config"].get("architectures") or [] if isinstance(a, str)]
            loader = loader_for(archs, located)
        item["draft_class_path"] = (loader or {}).get("path")
    # 4) read the sources, one round trip
    paths = sorted(
        {p for d in drafts for p in (d["target_source_path"], d["draft_class_path"]) if p}
    )
    texts: dict[str, str] = {}
    if paths:
        try:
            for entry in remote.read_text(paths, SOURCE_CAP):
                if "text" in entry:
                    texts[entry["path"]] = entry["text"]
                    texts[entry["pattern"]] = entry["text"]
        except RemoteCommandError as exc:
            inconclusive.append(f"reading engine sources: {exc}")
    # 5) the checks
    per_draft = []
    findings: list[dict] = []
    audited_ids: set[tuple[Any, str]] = set()
    for f in (drafts_audit or {}).get("findings") or []:
        audited_ids.add(((f.get("evidence") or {}).get("draft"), f["id"]))
    for item in drafts:
        reasons = []
        if item.get("error"):
            reasons.append(f"{item['path']}: {item['error']}")
        if not item.get("target"):
            reasons.append("the target model is unknown (pass --var target=...)")
        elif item.get("target_error"):
            reasons.append(f"target config: {item['target_error']}")
        if item.get("target_source_error"):
            reasons.append(item["target_source_error"])
        elif item["target_config"] is not None and not item.get("install"):
            reasons.append("no engine install found: the target model source is unknown")
        checked = run_checks(
            draft_config=item.get("config"),
            tensors=item.get("tensors"),
            target_config=item["target_config"],
            target_source=texts.get(item["target_source_path"] or ""),
            target_source_path=item["target_source_path"],
            draft_class_source=texts.get(item["draft_class_path"] or ""),
            draft_class_path=item["draft_class_path"],
            server=item["server"],
            train_layers=trained,
        )
        for f in checked["findings"]:
            if (item["path"], f["id"]) in audited_ids:
                continue  # already reported by the audit step for this draft
            f = dict(f)
            f["evidence"] = dict(f.get("evidence") or {}, draft=item["path"])
            findings.append(f)
        reasons += checked["inconclusive"]
        inconclusive += [f"{item['path']}: {r}" for r in reasons]
        server = item["server"] or {}
        per_draft.append(
            {
                "draft": item["path"],
                "server": server.get("pid") or server.get("source"),
                "target": item.get("target"),
                "target_class": item["target_class"],
                "target_source": item["target_source_path"],
                "draft_class_source": item["draft_class_path"],
                "install": item.get("install"),
                "checks": {
                    k: {"ran": c["ran"], "inconclusive": c["inconclusive"], "facts": c["facts"]}
                    for k, c in checked["checks"].items()
                },
            }
        )
    # servers that run no audited draft still have launch/figure checks
    for server in server_list:
        if any(d["server"] is server for d in drafts):
            continue
        checked = run_checks(draft_config=None, tensors=None, server=server)
        label = server.get("pid") or server.get("source")
        for f in checked["findings"]:
            if f["id"] == "spec-config-cleared":
                continue
            f = dict(f)
            f["evidence"] = dict(f.get("evidence") or {}, server=label)
            findings.append(f)
        skipped = [r for r in checked["inconclusive"] if "draft checkpoint was not read" not in r]
        inconclusive += [f"server {label}: {r}" for r in skipped]
        per_draft.append(
            {
                "draft": None,
                "server": label,
                "checks": {
                    k: {"ran": c["ran"], "inconclusive": c["inconclusive"], "facts": c["facts"]}
                    for k, c in checked["checks"].items()
                },
            }
        )
    result: dict[str, Any] = {"spec": per_draft, "findings": findings, "notes": notes}
    if not drafts and not server_list:
        inconclusive.append(
            "no draft and no server: nothing to check (pass --var draft=..., --var args=... "
            "or --var log=...)"
        )
    if inconclusive:
        result["inconclusive"] = "; ".join(dict.fromkeys(inconclusive))
    return result
