"""An install's draft-model files classified together (pure; more files are read by a
caller-given function): each file by d2t_handling, then where a d2t that one file only loads is
applied, by its class's bases and mixins in other files of the same install.

vLLM 0.33's `models/muse_spark/common/dspark.py` loads the checkpoint's d2t into
`draft_id_to_target_id` and never uses it: the inherited `map_draft_to_target` of
`model_executor/models/qwen3_dspark.py` (and `LocalArgmaxMixin.get_top_tokens` further up) adds
the draft ids to it. One file alone reads as "unknown"; the class's MRO decides.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from remotedbg.analysis.d2t_handling import (
    NONE,
    OFFSETS,
    UNKNOWN,
    _module_of,
    classify_source,
    registry_architectures,
)
from remotedbg.analysis.pysource import ClassRef, SourceIndex, module_path
from remotedbg.engines.knowledge import ENGINES
from remotedbg.engines.profiles import engine_profile

_ROOT = "/install"  # the index's package root: model paths are relative to the package
MAX_ROUNDS = 4  # reads of more modules, one MRO level each (vLLM 0.33: 3 levels to the mixin)
MAX_FILES = 64

Reader = Callable[[list[str]], dict[str, str]]


def classify_install(
    install: dict[str, Any],
    classify: Callable[[str, str], dict[str, Any]] | None = None,
    read: Callable[[list[str]], dict[str, str]] | None = None,
) -> dict[str, Any]:
    """Classify every draft-model source of one `engine_scan` install (with `classify`, e.g. a
    cached classify_source, when given). A class that only loads d2t is decided by the base
    that applies it (follow_bases), in the draft files or in the modules `read(paths)`
    gives (paths relative to the package).

    Returns {"engine", "version", "path", "draft_models": [classify_source results],
    "unread": [paths whose source was omitted], "registry": {arch: [module, class]} | None,
    "followed": [paths read to follow bases]}.
    """
    models, unread, sources = [], [], {}
    for f in install.get("draft_files") or []:
        if f.get("source") is None:
            unread.append(f["path"])
            continue
        result = (classify or classify_source)(f["source"], f["path"])
        result = {**result, "classes": [dict(c) for c in result.get("classes", [])]}
        result["capped"] = bool(f.get("capped"))
        sources[f["path"]] = f["source"]
        models.append(result)
    package = ENGINES.get(install.get("engine") or "", {}).get("package", install.get("engine"))
    followed = follow_bases(models, sources, package or "", read, classify or classify_source)
    registry = None
    reg = install.get("registry")
    if reg and reg.get("source"):
        try:
            registry = {k: list(v) for k, v in registry_architectures(
                reg["source"], engine=install.get("engine")).items()}
        except SyntaxError:
            registry = None
    elif engine_profile(install.get("engine")).registry_is_entry_classes:
        registry = {name: [_module_of(m["path"]), name]
                    for m in models for name in m.get("entry_classes") or []}  # fmt: skip
    return {
        "engine": install.get("engine"),
        "version": install.get("version"),
        "path": install.get("path"),
        "draft_models": models,
        "unread": unread,
        "registry": registry,
        "followed": followed,
    }


def follow_bases(
    models: list[dict[str, Any]],
    sources: dict[str, str],
    package: str,
    read: Reader | None = None,
    classify: Callable[[str, str], dict[str, Any]] = classify_source,
) -> list[str]:
    """Decide the classes of `models` (classify_source results, paths relative to the package,
    their texts in `sources`) that load d2t without applying it, by the first class of their
    MRO that applies it in a method they do not override. `read(paths)` gives the text of more
    modules of the package (their paths relative to it) when the MRO leaves the given files.
    Changes `models` in place; returns the paths read."""
    pending = [(m, row) for m in models for row in m.get("classes", []) if row.get("stores_only")]
    if not pending:
        return []
    index = SourceIndex(package, _ROOT)
    rows: dict[str, dict[str, dict]] = {}
    for model in models:
        if model["path"] in sources:
            index.add(f"{_ROOT}/{model['path']}", sources[model["path"]], lazy=True)
            rows[model["path"]] = {c["name"]: c for c in model.get("classes", [])}
    read_paths: list[str] = []
    for round_ in range(MAX_ROUNDS + 1):
        missing: list[str] = []
        still = []
        for model, row in pending:
            found = _applier(index, rows, model["path"], row["name"], missing)
            if found is None:
                still.append((model, row))
            else:
                _decide(model, row, *found)
        pending = still
        missing = [p for p in dict.fromkeys(missing) if p not in read_paths]
        missing = missing[: max(0, MAX_FILES - len(read_paths))]
        if not pending or not missing or read is None or round_ == MAX_ROUNDS:
            break
        read_paths += missing
        for path, text in read(missing).items():
            if index.add(f"{_ROOT}/{path}", text) is not None:
                rows[path] = {c["name"]: c for c in classify(text, path).get("classes", [])}
    return read_paths


def _rel(ref: ClassRef) -> str:
    return ref.module.path[len(_ROOT) + 1 :]


def _applier(
    index: SourceIndex, rows: dict[str, dict[str, dict]], path: str, name: str, missing: list
) -> tuple[str, dict, dict] | None:
    """(path, class row, applying line) of the first base that applies d2t in a method the
    classes before it in the MRO do not define; the modules still to read go to `missing`."""
    mod = index.module_at(f"{_ROOT}/{path}")
    ref = index.resolve(mod, name) if mod is not None else None
    if ref is None:
        return None
    defined: set[str] = set()
    for cls in index.mro(ref):
        missing += _unread_bases(index, cls)
        row = rows.get(_rel(cls), {}).get(cls.node.name) if cls is not ref else None
        live = [a for a in (row or {}).get("applies", []) if a["method"] not in defined]
        if row is not None and live:
            return _rel(cls), row, live[0]
        defined |= {n.name for n in cls.node.body if isinstance(n, ast.FunctionDef)}
    return None


def _unread_bases(index: SourceIndex, cls: ClassRef) -> list[str]:
    """The package modules a class's unresolved bases are imported from, as a module file and
    as a package's __init__ (paths relative to the package)."""
    out = []
    for base in cls.node.bases:
        if not isinstance(base, ast.Name) or base.id in cls.module.classes:
            continue
        module = cls.module.imports.get(base.id, "").partition(":")[0]
        if not module or module in index.modules:
            continue
        path = module_path(module, _ROOT, index.package)
        if path:
            rel = path[len(_ROOT) + 1 :]
            out += [rel, rel[: -len(".py")] + "/__init__.py"]
    return out


def _decide(model: dict, row: dict, path: str, base: dict, line: dict) -> None:
    handling = base["d2t_handling"]
    row["d2t_handling"] = handling
    row["applied_in"] = {"path": path, "class": base["name"], **line}
    for other in model.get("classes", []):
        if other.get("inherited_from") == row["name"]:
            other["d2t_handling"] = handling
    own = {c["d2t_handling"] for c in model["classes"] if c.get("inherited_from") is None}
    own |= {model.get("top_level_handling", NONE)}
    own -= {NONE}
    if model["d2t_handling"] != UNKNOWN or len(own) != 1:
        return
    model["d2t_handling"] = handling
    meaning = (
        "treats d2t as offsets (target = draft + d2t[draft])"
        if handling == OFFSETS
        else "uses d2t as target ids, which is wrong for EAGLE-3 checkpoints that store offsets"
    )
    model["reason"] = (
        f"{row['name']} loads d2t and leaves it to its base {base['name']}: "
        f"{path}:{line['line']} (`{line['text']}`, in {line['method']}) {meaning}."
    )
    model["evidence"] = [e for e in model.get("evidence", []) if e["role"] == "source"] + [
        {
            "line": line["line"],
            "text": line["text"],
            "symbol": "d2t",
            "role": line["role"],
            "note": f"applied by {base['name']}.{line['method']}",
            "path": path,
        }
    ]
