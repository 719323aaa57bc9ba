"""Engine source code as an index of modules, for analyses that follow code across files.

Runs on the client over text read from the box, so it treats that text as hostile: parses are
bounded in size, serialised (CPython's AST construction is not safe from several threads at once,
see python/cpython#106905), cached by content hash, and a parse that fails for any reason
(syntax, recursion, memory) is reported as unparsable, never raised.
"""

from __future__ import annotations

import ast
import hashlib
import os
import posixpath
import threading
from dataclasses import dataclass, field

MAX_SOURCE_BYTES = 4 << 20
_PARSE_LOCK = threading.Lock()
_CACHE: dict[str, ast.Module | None] = {}
_CACHE_LIMIT = 4096


def _new_lock_in_child() -> None:
    """A child forked (remotedbg.local_fork) while another thread parsed would wait forever on
    the lock that thread holds in the parent."""
    global _PARSE_LOCK
    _PARSE_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


def parse(source: str) -> ast.Module | None:
    """The module's AST, or None when it is too large or cannot be parsed."""
    if len(source) > MAX_SOURCE_BYTES:
        return None
    key = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    with _PARSE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
        try:
            tree: ast.Module | None = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
            tree = None
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[key] = tree
        return tree


def walk(node: ast.AST) -> list[ast.AST]:
    """`node` and every node under it, in `ast.walk`'s order (breadth first), as a list: half
    the time of `ast.walk`, and a parsed module's list is kept with it, since the analyses walk
    the same few hundred modules many times over."""
    kept = getattr(node, "_remotedbg_nodes", None)
    if kept is not None:
        return kept
    nodes = [node]
    add = nodes.append
    for each in nodes:  # grows as it goes: each node's children are appended behind it
        for name in each._fields:
            value = getattr(each, name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        add(item)
            elif isinstance(value, ast.AST):
                add(value)
    if isinstance(node, ast.Module):
        node._remotedbg_nodes = nodes  # type: ignore[attr-defined]
    return nodes


def names_in(node: ast.AST) -> set[str]:
    """Every bare name read or bound anywhere under `node`."""
    return {n.id for n in walk(node) if isinstance(n, ast.Name)}


def import_bindings(node: ast.Import | ast.ImportFrom, package: str) -> dict[str, str]:
    """The names an import statement binds -> `module:name` (`module:` for a plain import),
    relative imports resolved against `package`."""
    if isinstance(node, ast.Import):
        return {alias.asname or alias.name.split(".")[0]: f"{alias.name}:" for alias in node.names}
    base = node.module or ""
    if node.level:
        up = package.split(".")
        up = up[: len(up) - (node.level - 1)] if node.level > 1 else up
        base = ".".join(up + ([base] if base else []))
    return {alias.asname or alias.name: f"{base}:{alias.name}" for alias in node.names}


def module_name(path: str, package_root: str, package: str) -> str | None:
    """`/x/site-packages/sglang/srt/models/llama.py` -> `sglang.srt.models.llama` given the
    package directory `/x/site-packages/sglang` and its import name `sglang`."""
    root = package_root.rstrip("/")
    if not path.startswith(root + "/") or not path.endswith(".py"):
        return None
    rel = path[len(root) + 1 : -3].split("/")
    if rel[-1] == "__init__":
        rel = rel[:-1]
    return ".".join([package, *rel])


def module_path(module: str, package_root: str, package: str) -> str | None:
    """Inverse of module_name (a module file, not a package's __init__)."""
    parts = module.split(".")
    if parts[0] != package:
        return None
    return posixpath.join(package_root.rstrip("/"), *parts[1:]) + ".py"


@dataclass
class Module:
    name: str
    path: str
    tree: ast.Module
    source: str = ""
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)  # local name -> "module:attr"

    @classmethod
    def build(cls, name: str, path: str, tree: ast.Module, source: str = "") -> Module:
        mod = cls(name, path, tree, source)
        package = name.rsplit(".", 1)[0]
        for node in _runtime_body(tree.body):
            if isinstance(node, ast.ClassDef):
                mod.classes[node.name] = node
            elif isinstance(node, ast.FunctionDef):
                mod.functions[node.name] = node
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                mod.imports.update(import_bindings(node, package))
            elif (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Name)
            ):
                # `Base = ImportedName`: an alias, resolved like an import of the same thing
                alias_of = node.value.id
                if alias_of in mod.classes:
                    mod.classes[node.targets[0].id] = mod.classes[alias_of]
                elif alias_of in mod.imports:
                    mod.imports[node.targets[0].id] = mod.imports[alias_of]
        return mod


def _runtime_body(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level statements as they run: `if TYPE_CHECKING:` blocks are replaced by their
    else branch, other top-level `if`/`try` blocks contribute both branches."""
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if test in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                out += _runtime_body(node.orelse)
            else:
                out += _runtime_body(node.body) + _runtime_body(node.orelse)
        elif isinstance(node, ast.Try):
            out += _runtime_body(node.body)
            for handler in node.handlers:
                out += _runtime_body(handler.body)
        else:
            out.append(node)
    return out


@dataclass
class ClassRef:
    module: Module
    node: ast.ClassDef

    @property
    def where(self) -> str:
        return f"{self.module.path}:{self.node.lineno}"


class _Modules(dict):
    """Modules by dotted name; an entry added lazily is parsed when first looked up (a file
    read for one question is not parsed unless something asks about its code)."""

    def __init__(self, index: SourceIndex) -> None:
        super().__init__()
        self._index = index
        self.pending: dict[str, tuple[str, str]] = {}  # name -> (path, source)

    def _built(self, name: str) -> None:
        path, source = self.pending.pop(name)
        tree = parse(source)
        if tree is None:
            self._index.unparsable.append(path)
        else:
            super().__setitem__(name, Module.build(name, path, tree, source))

    def __getitem__(self, name: str) -> Module:
        if name in self.pending:
            self._built(name)
        return super().__getitem__(name)

    def get(self, name: str, default: Module | None = None) -> Module | None:  # type: ignore[override]
        if name in self.pending:
            self._built(name)
        return super().get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self.pending or super().__contains__(name)

    def __len__(self) -> int:
        return len(self.pending) + super().__len__()

    def _all(self) -> None:
        for name in list(self.pending):
            self._built(name)

    def values(self):  # type: ignore[override]
        self._all()
        return super().values()

    def items(self):  # type: ignore[override]
        self._all()
        return super().items()

    def __iter__(self):  # type: ignore[override]
        self._all()
        return super().__iter__()


class SourceIndex:
    """Modules of one engine install that were read, by dotted name."""

    def __init__(self, package: str, package_root: str) -> None:
        self.package = package
        self.package_root = package_root
        #: import name -> directory of every package whose modules the index holds: the
        #: engine's, and the plugins' it loads (their classes subclass the engine's)
        self.roots: dict[str, str] = {package: package_root}
        self.modules = _Modules(self)
        self.unparsable: list[str] = []
        self._order: dict[str, None] = {}  # names as they were added

    def add_root(self, package: str, package_root: str) -> None:
        """Hold the modules of another package too (a plugin's, beside the engine's)."""
        self.roots.setdefault(package, package_root)

    def name_of(self, path: str) -> str | None:
        """The dotted name of a file of one of the index's packages (None: of none)."""
        for package, root in self.roots.items():
            name = module_name(path, root, package)
            if name is not None:
                return name
        return None

    def path_of(self, module: str) -> str | None:
        """The file of a dotted module name of one of the index's packages (None: of none)."""
        root = self.roots.get(module.split(".")[0])
        return module_path(module, root, module.split(".")[0]) if root else None

    def add(self, path: str, source: str, lazy: bool = False) -> Module | None:
        """The module (None: outside the packages or unparsable); `lazy`: parsed when first
        looked up, and None is returned."""
        name = self.name_of(path)
        if name is None:
            return None
        self._order.setdefault(name)
        if lazy:
            self.modules.pop(name, None)
            self.modules.pending[name] = (path, source)
            return None
        tree = parse(source)
        if tree is None:
            self.unparsable.append(path)
            return None
        mod = Module.build(name, path, tree, source)
        self.modules.pending.pop(name, None)
        self.modules[name] = mod
        return mod

    def module_at(self, path: str) -> Module | None:
        return self.modules.get(self.name_of(path) or "")

    def text_at(self, path: str) -> str | None:
        """The source read for this path, parsed or not (None: not read, or unparsable)."""
        return self._text(self.name_of(path) or "")

    def read_from(self, path: str) -> bool:
        """This very file was read (`pkg/config.py` and `pkg/config/__init__.py` are one module
        name, and only one of them is on a box)."""
        name = self.name_of(path) or ""
        pending = self.modules.pending.get(name)
        mod = dict.get(self.modules, name)
        held = pending[0] if pending is not None else (mod.path if mod is not None else None)
        return held == path

    def texts_mentioning(self, word: str) -> list[tuple[str, str]]:
        """(path, source) of the files read whose source contains `word`, none parsed here."""
        out = []
        for name in self._order:
            pending = self.modules.pending.get(name)
            mod = dict.get(self.modules, name)
            if pending is not None and word in pending[1]:
                out.append(pending)
            elif pending is None and mod is not None and word in mod.source:
                out.append((mod.path, mod.source))
        return out

    def _text(self, name: str) -> str | None:
        pending = self.modules.pending.get(name)
        if pending is not None:
            return pending[1]
        mod = dict.get(self.modules, name)
        return mod.source if mod is not None else None

    def resolve(self, mod: Module, name: str, depth: int = 0) -> ClassRef | None:
        """The class a bare name means inside `mod` (defined there or imported from a module
        that was read), following re-exports a few levels."""
        if depth > 4:
            return None
        if name in mod.classes:
            return ClassRef(mod, mod.classes[name])
        target = mod.imports.get(name)
        if not target:
            return None
        module, _, attr = target.partition(":")
        other = self.modules.get(module)
        if other is None or not attr:
            return None
        return self.resolve(other, attr, depth + 1)

    def resolve_expr(self, mod: Module, node: ast.expr) -> ClassRef | None:
        if isinstance(node, ast.Name):
            return self.resolve(mod, node.id)
        return None

    def wanted_modules(self, mod: Module) -> list[str]:
        """Paths of engine modules `mod` imports names from, not read yet."""
        out = []
        for target in mod.imports.values():
            module = target.partition(":")[0]
            if module in self.modules or "." not in module:
                continue
            path = self.path_of(module)
            if path and path not in out:
                out.append(path)
        return out

    def bases(self, ref: ClassRef) -> list[ClassRef | str]:
        """Base classes, resolved where their module was read, else their source text."""
        out: list[ClassRef | str] = []
        for base in ref.node.bases:
            found = self.resolve_expr(ref.module, base)
            if found is not None and found.node is ref.node:
                # `class LlamaDecoderLayer(LlamaDecoderLayer)`: the base is the imported name
                target = ref.module.imports.get(getattr(base, "id", ""), "")
                module, _, attr = target.partition(":")
                other = self.modules.get(module)
                found = self.resolve(other, attr) if other is not None and attr else None
            out.append(found if found is not None else ast.unparse(base))
        return out

    def mro(self, ref: ClassRef) -> list[ClassRef]:
        """The class and its resolvable bases, depth first (enough for single inheritance)."""
        out, todo, seen = [], [ref], set()
        while todo:
            current = todo.pop(0)
            key = (current.module.name, current.node.name)
            if key in seen:
                continue
            seen.add(key)
            out.append(current)
            todo[:0] = [b for b in self.bases(current) if isinstance(b, ClassRef)]
        return out

    def find_method(self, ref: ClassRef, name: str) -> tuple[ClassRef, ast.FunctionDef] | None:
        for cls in self.mro(ref):
            for node in cls.node.body:
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    return cls, node
        return None


MAX_SEQUENCE = 100_000  # a list or string the engine code builds while being evaluated here


def bounded_product(left: object, right: object) -> object:
    """`a * b` as the analysed code means it, except that a sequence repeated past
    MAX_SEQUENCE items raises (`[0] * 10**8` in hostile code must not exhaust this machine)."""
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, (list, tuple, str)) and isinstance(count, int):
            if len(seq) * max(count, 0) > MAX_SEQUENCE:
                raise ValueError("sequence too large to evaluate")
    return left * right  # type: ignore[operator]
