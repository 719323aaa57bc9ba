"""What the engine's served code changed from its release, and what that does to the draft (pure).

The box answers which files of an install differ from the release (remotedbg.agent.drift:
RECORD hashes, or git's index and HEAD), with the served text of each changed Python file and,
from git, the released one. Here:
- `hunks`: the changed lines, numbered as served and as released;
- `capture_sites`: where a model's forward collects the hidden states an EAGLE-3 draft is fed
  (`aux_hidden_states.append(...)`, `.capture(...)`), each placed (before the layer loop: the
  embedding output; in it; after it) and whether it keeps the residual stream;
- `capture_change`: what a change does to those sites, released against served where the
  released text is known, else served against the trainer's convention
  (remotedbg.engines.trainer.CAPTURE).
"""

from __future__ import annotations

import ast
import difflib
import re
from typing import Any

from remotedbg.agent.findings import ERROR, WARNING, finding
from remotedbg.analysis.pysource import parse, walk
from remotedbg.contract import add_finding, check_result, not_applicable
from remotedbg.engines.code_markers import CAPTURE_METHODS
from remotedbg.engines.knowledge import ENGINES
from remotedbg.engines.trainer import CAPTURE

#: Names of the collections captures go into, and of the capture tests' attributes.
AUX_NAME = re.compile(r"aux|captur", re.IGNORECASE)
CAPTURE_CALLS = ("append", "capture")
#: Code that makes a file part of the speculative path when a change touches it: the capture,
#: the vocab map, the draft's loading and layer ids.
SPECULATIVE_WORDS = re.compile(
    r"aux_hidden_state|layers_to_capture|captured_last_layer|hot_token_id|\bd2t\b|\bt2d\b"
    r"|eagle|draft|speculative|set_embed|" + "|".join(CAPTURE_METHODS)
)
MAX_HUNKS = 12
MAX_HUNK_LINES = 12


def hunks(released: str, served: str) -> list[dict[str, Any]]:
    """The changed blocks: {"released_line", "served_line", "removed": [...], "added": [...]}
    (1-based first lines; at most MAX_HUNKS, each at most MAX_HUNK_LINES lines a side)."""
    old, new = released.splitlines(), served.splitlines()
    out = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        out.append({"released_line": i1 + 1, "served_line": j1 + 1,
                    "removed": old[i1:i2][:MAX_HUNK_LINES],
                    "added": new[j1:j2][:MAX_HUNK_LINES]})  # fmt: skip
        if len(out) >= MAX_HUNKS:
            break
    return out


def functions_at(source: str, lines: list[int]) -> list[str]:
    """The innermost function or class defining each line (module level: "<module>")."""
    tree = parse(source)
    spans = []
    for node in walk(tree) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            spans.append((node.lineno, getattr(node, "end_lineno", node.lineno), node.name))
    out = []
    for line in lines:
        inside = [s for s in spans if s[0] <= line <= s[1]]
        out.append(max(inside, key=lambda s: s[0])[2] if inside else "<module>")
    return out


def speculative_hunks(served: str, changed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The hunks whose lines, or the function around them, touch the speculative path."""
    found = []
    names = functions_at(served, [h["served_line"] for h in changed])
    bodies = _function_texts(served)
    for hunk, name in zip(changed, names, strict=True):
        text = "\n".join(hunk["removed"] + hunk["added"])
        if SPECULATIVE_WORDS.search(text) or SPECULATIVE_WORDS.search(bodies.get(name, "")):
            found.append({**hunk, "function": name})
    return found


def _function_texts(source: str) -> dict[str, str]:
    tree = parse(source)
    lines = source.splitlines()
    out: dict[str, str] = {}
    for node in walk(tree) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            end = getattr(node, "end_lineno", node.lineno)
            out[node.name] = out.get(node.name, "") + "\n".join(lines[node.lineno - 1 : end])
    return out


def capture_sites(source: str) -> list[dict[str, Any]]:
    """Every `<aux>.append(X)` / `<aux>.capture(X)` in a function that has a layer loop:
    {"line", "function", "expr", "where": "before-loop" | "in-loop" | "after-loop",
    "residual": whether X (through the aux names assigned before it) adds the residual}."""
    tree = parse(source)
    out: list[dict[str, Any]] = []
    for func in walk(tree) if tree is not None else ():
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        loops = [n for n in walk(func) if isinstance(n, ast.For) and _calls_a_layer(n)]
        if not loops:
            continue
        first, last = loops[0].lineno, max(getattr(n, "end_lineno", n.lineno) for n in loops)
        assigned = _aux_assignments(func)
        for node in walk(func):
            expr = _captured(node)
            if expr is None:
                continue
            line = node.lineno
            where = "before-loop" if line < first else ("after-loop" if line > last else "in-loop")
            out.append({"line": line, "function": func.name, "expr": ast.unparse(expr),
                        "where": where, "residual": _keeps_residual(expr, assigned)})  # fmt: skip
    return out


def _calls_a_layer(loop: ast.For) -> bool:
    """A loop over the model's decoder layers: it calls `layer(...)` / `self.layers[i](...)`
    or iterates `self.layers`."""
    text = ast.unparse(loop.iter)
    if "layers" in text:
        return True
    return any(
        isinstance(n, ast.Call) and "layer" in ast.unparse(n.func).lower() for n in walk(loop)
    )


def _captured(node: ast.AST) -> ast.expr | None:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    if node.func.attr not in CAPTURE_CALLS or len(node.args) != 1:
        return None
    owner = node.func.value
    name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
    return node.args[0] if AUX_NAME.search(name or "") else None


def _aux_assignments(func: ast.AST) -> dict[str, list[ast.expr]]:
    """`aux_x = value` in the function: the values an aux-named local takes."""
    out: dict[str, list[ast.expr]] = {}
    for node in walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and AUX_NAME.search(target.id):
                out.setdefault(target.id, []).append(node.value)
    return out


def _keeps_residual(expr: ast.expr, assigned: dict[str, list[ast.expr]]) -> bool:
    seen: set[str] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        for name in (n.id for n in walk(node) if isinstance(n, ast.Name)):
            if "residual" in name:
                return True
            if name in assigned and name not in seen:
                seen.add(name)
                stack += assigned[name]
    return False


def _loop_has_residual(source: str, function: str) -> bool:
    """The function's layer loop carries a separate residual (`h, residual = layer(...)`)."""
    tree = parse(source)
    for func in walk(tree) if tree is not None else ():
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and func.name == function:
            for node in walk(func):
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
                    if any(isinstance(t, ast.Name) and "residual" in t.id
                           for t in node.targets[0].elts):  # fmt: skip
                        return True
    return False


def capture_change(served: str, released: str | None) -> dict[str, Any] | None:
    """What the served code does differently to the hidden states fed to the draft, or None.
    {"what": sentence, "sites": served sites that differ, "released_sites"?: ...}."""
    now = capture_sites(served)
    if released is not None:
        before = capture_sites(released)
        if _signature(now) == _signature(before):
            return None
        return {"what": _describe(now, before), "sites": _differing(now, before),
                "released_sites": _differing(before, now)}  # fmt: skip
    # no released text (a pip install's RECORD has only hashes): the trainer's convention
    extra = [s for s in now if s["where"] == "before-loop"]
    bare = [s for s in now if s["where"] == "in-loop" and not s["residual"]
            and _loop_has_residual(served, s["function"])]  # fmt: skip
    if not extra and not bare:
        return None
    what = []
    if extra:
        what.append(f"also captures the embedding output ({extra[0]['expr']}, before the first "
                    "layer): the draft gets one hidden state more per token than it was "
                    "trained on")  # fmt: skip
    if bare:
        what.append(f"captures `{bare[0]['expr']}` without the residual: the layer's output is "
                    f"{CAPTURE['point']}, which the draft was trained on")  # fmt: skip
    return {"what": "; ".join(what), "sites": extra + bare}


def _key(site: dict[str, Any]) -> tuple[str, str, str, bool]:
    return (site["function"], site["where"], _norm(site["expr"]), site["residual"])


def _signature(sites: list[dict[str, Any]]) -> list[tuple[str, str, str, bool]]:
    return sorted(_key(s) for s in sites)


def _norm(expr: str) -> str:
    return re.sub(r"\s+", "", expr)


def _differing(sites: list[dict[str, Any]], other: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = {_key(s) for s in other}
    return [s for s in sites if _key(s) not in keys]


def _describe(now: list[dict[str, Any]], before: list[dict[str, Any]]) -> str:
    added, removed = _differing(now, before), _differing(before, now)
    parts = []
    for site in added:
        if site["where"] == "before-loop":
            parts.append(f"adds a capture of the embedding output ({site['expr']}, line "
                         f"{site['line']}, before the first layer): the draft gets one hidden "
                         "state more per token than it was trained on")  # fmt: skip
        elif not site["residual"] and any(r["residual"] for r in removed):
            was = removed[0]["expr"]
            instead = "" if _norm(was) == _norm(site["expr"]) else f" (the release: `{was}`)"
            parts.append(f"captures `{site['expr']}` (line {site['line']}) without the "
                         f"residual{instead}: the layer output alone, not {CAPTURE['point']}, "
                         "which the draft was trained on")  # fmt: skip
        else:
            parts.append(f"captures `{site['expr']}` {site['where']} (line {site['line']})")
    if removed and not added:
        parts.append(f"no longer captures `{removed[0]['expr']}` ({removed[0]['where']})")
    return "; ".join(parts) or "the hidden-state capture differs from the release"


def on_speculative_path(served: str | None, released: str | None = None) -> bool:
    """A file whose code (as served or as released) holds any of the speculative path."""
    return any(text and SPECULATIVE_WORDS.search(text) for text in (served, released))


def summarize(drift: dict[str, Any]) -> dict[str, Any]:
    """One install's drift as shown and judged: per changed file its change, whether it is on
    the speculative path, its hunks there (where the released text is known) and what it does
    to the capture; the texts themselves are dropped."""
    files = []
    for item in drift.get("changed") or []:
        served, released = item.get("served_text"), item.get("released_text")
        entry: dict[str, Any] = {"path": item["path"], "change": item["change"]}
        if item["path"].endswith(".py"):
            entry["speculative"] = on_speculative_path(served, released)
        if served is not None and released is not None:
            changed = hunks(released, served)
            entry["hunks"] = speculative_hunks(served, changed) if entry.get("speculative") else []
            entry["hunk_count"] = len(changed)
            # the released text tells where: a change off the capture/loading code is off it
            entry["speculative"] = bool(entry["hunks"])
        if served is not None and entry.get("speculative"):
            effect = capture_change(served, released)
            if effect:
                entry["capture_change"] = effect
        files.append(entry)
    out = {k: v for k, v in drift.items() if k != "changed"}
    out["files"] = files
    return out


def drift_line(drift: dict[str, Any] | None) -> str:
    """`as released (RECORD, 4959 files)`, `modified: 2 files (...)`, or why it is unknown."""
    if not drift:
        return "not checked"
    how = {"record": "its dist-info RECORD", "git": "git index and HEAD"}.get(
        drift.get("method") or "", "")
    if drift["status"] == "unknown":
        return f"unknown: {drift.get('reason')}"
    if drift["status"] == "as-released":
        return f"as released ({how}, {drift.get('checked')} files)"
    files = drift.get("files") or []
    shown = ", ".join(f"{f['path']} ({f['change']})" for f in files[:6])
    more = f", +{len(files) - 6} more" if len(files) > 6 else ""
    return f"modified: {len(files)} files against {how}: {shown}{more}"


# ------------------------------------------------------------------------------ the check
CHECK = "served-code-modified"
FIX = ("restore the released file (`pip install --force-reinstall --no-deps ENGINE==VERSION`, "
       "or `git checkout -- FILE` in the checkout), or retrain the draft on the hidden states "
       "the served code captures")  # fmt: skip


def deployment_files(dep: Any, install: str) -> set[str]:
    """The install-relative files this deployment runs through: the target's model file (and a
    wrapper's language model), the draft's loader."""
    files = {dep.capture_source} if dep.capture_source else set()
    capture = dep.capture or {}
    for inner in (capture.get("delegated"), capture.get("layers_of")):
        path = (inner or {}).get("path") if isinstance(inner, dict) else None
        if path:
            files.add(path[len(install) + 1 :] if path.startswith(install + "/") else path)
    if dep.draft_class:
        files.add(dep.draft_class.split(":", 1)[0])
    return files


def _relevant(item: dict[str, Any], own: set[str], models_dirs: tuple[str, ...]) -> bool:
    """A changed speculative-path file that concerns this deployment: one of its own files, or
    shared code outside the model files (another model's file decides nothing here)."""
    if not item.get("speculative"):
        return False
    return item["path"] in own or not item["path"].startswith(models_dirs)


def served_code_modified(dep: Any) -> dict[str, Any]:
    """The served code against its release: `capture-modified` (error) where a change feeds
    the draft other hidden states than it was trained on; `engine-code-modified` (warning) for
    any other change on this deployment's speculative path; nothing for changes off it."""
    result = check_result(CHECK)
    drift = dep.drift
    if not drift:
        return not_applicable(result, "the install was not compared with its release")
    if drift.get("status") == "unknown":
        # the other checks read the served code all the same: this one adds, never blocks
        return not_applicable(result, f"not compared with the release: {drift.get('reason')}")
    install = drift.get("path") or ""
    result["facts"] = {"install": install, "status": drift["status"],
                       "files_changed": len(drift.get("files") or []),
                       "compared_with": drift.get("method")}  # fmt: skip
    own = deployment_files(dep, install)
    scan = ENGINES.get(dep.engine or "", {})
    models_dirs = tuple(d + "/" for d in [scan.get("models_dir")] + list(
        scan.get("extra_models_dirs") or []) if d)  # fmt: skip
    for item in drift.get("files") or []:
        if not _relevant(item, own, models_dirs):
            continue
        where = f"{install}/{item['path']}"
        evidence = {"file": where, "change": item["change"], "compared_with": drift.get("method"),
                    "engine": f"{dep.engine} {dep.engine_version or ''}".strip()}  # fmt: skip
        for number, hunk in enumerate((item.get("hunks") or [])[:3], 1):
            evidence[f"hunk {number}"] = _hunk_text(hunk)
        effect = item.get("capture_change")
        if effect and item["path"] in own:
            sites = effect.get("sites") or []
            if sites:
                evidence["served"] = "; ".join(f"{where}:{s['line']} {s['expr']} ({s['where']})"
                                               for s in sites[:3])  # fmt: skip
            evidence["trained_on"] = f"{CAPTURE['point']}, {CAPTURE['count']}"
            add_finding(result, finding(
                "capture-modified", ERROR,
                f"the served {item['path']} is not the released one: it {effect['what']}",
                f"{where} differs from {dep.engine} {dep.engine_version or ''}'s release "
                f"({_compared(drift)}) in the code that captures the hidden states fed to the "
                f"draft: it {effect['what']}. Fix: {FIX}.",
                evidence,
            ))  # fmt: skip
            continue
        how = (f"{len(item.get('hunks') or [])} hunk(s) on it" if item.get("hunks") is not None
               else "where in the file is unknown: the RECORD holds hashes only")  # fmt: skip
        add_finding(result, finding(
            "engine-code-modified", WARNING,
            f"{item['path']} on the speculative path is not the released file ({item['change']})",
            f"{where} differs from the release ({_compared(drift)}); {how}. Every check read "
            f"it as served. Fix: {FIX}.",
            evidence,
        ))  # fmt: skip
    return result


def _compared(drift: dict[str, Any]) -> str:
    return {"record": "sha256 against its dist-info RECORD",
            "git": "against the checkout's HEAD"}.get(drift.get("method") or "", "")  # fmt: skip


def _hunk_text(hunk: dict[str, Any]) -> str:
    lines = [f"-{line.strip()}" for line in hunk["removed"][:4]]
    lines += [f"+{line.strip()}" for line in hunk["added"][:4]]
    return f"line {hunk['served_line']} ({hunk.get('function')}): " + " | ".join(lines)
