"""Read the engine code that decides how a draft is served: the draft and target model files,
the modules their classes come from, and the serving code (workers, runners, configs) that a
grep for the markers in remotedbg.engines.code_markers finds. Three round trips at most."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from remotedbg.actions.analysis_cache import (
    cached_by_content,
    keep_read,
    kept_read,
    last_read,
    remember,
    remembered,
)
from remotedbg.analysis import engine_facts
from remotedbg.analysis.plugins import plugin_packages
from remotedbg.analysis.pysource import SourceIndex
from remotedbg.engines import code_markers
from remotedbg.engines.knowledge import ENGINES
from remotedbg.engines.profiles import engine_profile
from remotedbg.errors import RemoteCommandError
from remotedbg.remote.primitives import Remote

SOURCE_CAP = 2 << 20

_file_facts = cached_by_content(
    "serving-file-facts", lambda text, _path: {"facts": engine_facts.file_facts(text)}
)
# keyed by "<module name>\n<source>": a relative import's meaning depends on the module's name
_import_candidates = cached_by_content(
    "import-candidates",
    lambda keyed, path: {"modules": engine_facts.import_candidates(*keyed.split("\n", 1), path)},
)


class EngineCode:
    """One install's code as read: the module index plus the serving-code grep hits."""

    def __init__(self, engine: str, install: str, plugins: list[dict] | None = None) -> None:
        self.engine = engine
        self.install = install.rstrip("/")
        package = ENGINES.get(engine, {}).get("package", engine)
        self.index = SourceIndex(package, self.install)
        for plugin in plugins or []:  # the plugins it loads: their classes are followed too
            for top in plugin_packages(plugin):
                self.index.add_root(top, f"{plugin['site'].rstrip('/')}/{top}")
        self.serving_hits: list[dict] = []  # {path, line, text}
        self.errors: list[str] = []
        self.tried: set[str] = set()

    def rel(self, path: str) -> str:
        return path[len(self.install) + 1 :] if path.startswith(self.install + "/") else path

    def path(self, rel: str) -> str:
        return posixpath.join(self.install, rel)

    def facts_of(self, path: str) -> dict | None:
        """engine_facts.file_facts of a file read (None: not read, or it does not parse),
        kept by its content (remotedbg.actions.analysis_cache)."""
        text = self.index.text_at(path)
        return None if text is None else _file_facts(text, path).get("facts")

    def has(self, rel: str) -> bool:
        return self.index.text_at(self.path(rel)) is not None

    def first_read(self, rels: Iterable[str]) -> str | None:
        """The first of `rels` read from that very file, else the first whose module was read
        (`config.py` and `config/__init__.py` are one module name: the cite names the file)."""
        rels = list(rels)
        exact = next((r for r in rels if self.index.read_from(self.path(r))), None)
        return exact or next((r for r in rels if self.has(r)), None)


def _read(remote: Remote, code: EngineCode, paths: list[str]) -> None:
    todo = [
        p for p in dict.fromkeys(paths) if code.index.text_at(p) is None and p not in code.tried
    ]
    todo = todo[: max(0, code_markers.MAX_FILES - len(code.index.modules))]
    code.tried.update(todo)
    if not todo:
        return
    known = {p: sha for p in todo if (sha := last_read(p)) is not None}
    try:
        entries = remote.read_text(todo, SOURCE_CAP, known=known, suggest=False)
        lost = [e["path"] for e in entries if e.get("same") and kept_read(e["sha256"]) is None]
        if lost:  # dropped from the cache since the offer: read them again
            entries = [e for e in entries if e.get("path") not in lost]
            entries += remote.read_text(lost, SOURCE_CAP)
    except RemoteCommandError as exc:
        code.errors.append(f"reading engine sources: {exc}")
        return
    for entry in entries:
        if entry.get("truncated"):
            continue
        if entry.get("same"):
            text = kept_read(entry["sha256"])
        else:
            text = entry.get("text")
            if text is not None:
                keep_read(entry["path"], text)
        if text is not None:
            code.index.add(entry["path"], text, lazy=True)


def _class_imports(code: EngineCode, paths: list[str]) -> list[str]:
    """Engine modules that the classes of these files may come from, and the config helpers
    they call (engine_facts.import_candidates, kept by the file's content and module name)."""
    wanted: list[str] = []
    keyed = {}
    for path in paths:
        name = code.index.name_of(path)
        text = code.index.text_at(path)
        if name is not None and text is not None:
            keyed[path] = f"{name}\n{text}"
    _import_candidates.prefill(list(keyed.values()))
    for path, key in keyed.items():
        for module in _import_candidates(key, path)["modules"]:
            if module in code.index.modules:
                continue
            file = code.index.path_of(module) if "." in module else None
            if file is None:
                continue
            # a module, or a package whose __init__ re-exports the class (TokenSpeed 0.1.1
            # runtime/models/base/__init__.py: BaseCausalLM from .causal_lm); a candidate
            # named like a class (`a.b.Llama`, the imported name read as a module) is no package
            candidates = [file]
            if not module.rpartition(".")[2][:1].isupper():
                candidates.append(file.removesuffix(".py") + "/__init__.py")
            for candidate in candidates:
                if candidate not in wanted:
                    wanted.append(candidate)
    return wanted


def gather_serving(remote: Remote, engine: str, install: str, plugins: list[dict] | None = None
                   ) -> EngineCode:  # fmt: skip
    """Round 1: the install's serving code (workers, runners, configs) that the markers find,
    plus the files the engine's profile names (vLLM: those that may hold SpeculativeConfig, and
    its runner choice)."""
    code = EngineCode(engine, install, plugins)
    knowledge = ENGINES.get(engine, {})
    model_dirs = [knowledge.get("models_dir") or "", *knowledge.get("extra_models_dirs", [])]
    models = [code.path(d) for d in model_dirs if d]  # model files, not serving code
    key = f"{code.install}\0{code_markers.SERVING_CODE_PATTERN}"
    last = remembered("serving-grep", key) or {}
    try:
        found = remote.grep(code_markers.SERVING_CODE_PATTERN, [code.install], limit=4000,
                            stamp=last.get("stamp") or "", prune_paths=models or None)  # fmt: skip
        if found.get("same") and "records" in last:
            records = last["records"]  # nothing in the install changed since that grep
        else:
            records = found.get("records") or []
            if found.get("stamp") and not found.get("truncated"):
                remember("serving-grep", key, {"stamp": found["stamp"], "records": records})
    except RemoteCommandError as exc:
        code.errors.append(f"grep in {code.install}: {exc}")
        records = []
    for record in sorted(records, key=lambda r: (r["path"], r["line"])):  # not readdir's order
        path = record["path"]
        if not path.endswith(".py") or any(path.startswith(d + "/") for d in models):
            continue
        code.serving_hits.append({"path": path, "line": record["line"], "text": record["text"]})
    serving = list(dict.fromkeys(h["path"] for h in code.serving_hits))
    extra = [code.path(p) for p in engine_profile(engine).extra_serving_files]
    _read(remote, code, serving[: code_markers.MAX_SERVING_FILES] + extra)
    _file_facts.prefill([text for p in serving if (text := code.index.text_at(p)) is not None])
    return code


def read_files(remote: Remote, code: EngineCode, paths: list[str]) -> None:
    """These files of the install into its index (one round trip; kept by content)."""
    _read(remote, code, paths)


def add_modules(remote: Remote, code: EngineCode, seeds: list[str]) -> None:
    """Rounds 2-3: the draft and target model files, then the engine modules their classes
    come from (bases and layers in other files)."""
    _read(remote, code, seeds)
    frontier = list(seeds)
    for _ in range(code_markers.MAX_IMPORT_ROUNDS):
        wanted = _class_imports(code, frontier)
        if not wanted:
            break
        _read(remote, code, wanted)
        frontier = wanted


def registry_lookup(code: EngineCode, architectures: list[str], method: str) -> dict:
    """How a vLLM install finds the draft class for these architectures and method: the class
    its proposer builds per method (0.8.5), else the registry names its EAGLEConfig makes."""
    by_method = engine_facts.vllm_class_by_method(code)
    served = engine_facts.vllm_served_architectures(code, architectures, method)
    lookup = [by_method[method]] if by_method and method in by_method else served
    return {"lookup": lookup, "class_by_method": by_method, "served_architectures": served}


class EngineCodeCache:
    """Engine code per install, read once per run."""

    def __init__(self, remote: Remote) -> None:
        self.remote = remote
        self.code: dict[str, EngineCode] = {}

    def get(self, install: dict) -> EngineCode:
        key = install["path"]
        if key not in self.code:
            self.code[key] = gather_serving(self.remote, install["name"], install["path"],
                                            install.get("plugins"))
        return self.code[key]
