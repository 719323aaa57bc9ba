"""The values the loader model's interpreter computes with (remotedbg.analysis.loader_model):
checkpoint tensors, parameters, the module tree, configs, engine helpers it models, the
control-flow signals, and the LoadModel it ends with."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

# the core's unknown, config and fork signal, named here for loader_model and engine_facts
from remotedbg.analysis.interp import UNKNOWN as UNKNOWN
from remotedbg.analysis.interp import Config as Config
from remotedbg.analysis.interp import NeedsFork as NeedsFork
from remotedbg.analysis.interp import is_unknown
from remotedbg.analysis.pysource import ClassRef
from remotedbg.engines import loader_rules


class Undecidable(Exception):
    """The interpreter cannot follow the code here."""


class EngineRaises(Exception):
    """The engine's code raises here (the load would fail and the server not start)."""

    def __init__(self, kind: str, message: str, line: int, path: str) -> None:
        super().__init__(message)
        self.kind, self.message, self.line, self.path = kind, message, line, path


@dataclass(frozen=True)
class Tensor:
    """A checkpoint tensor (or a value computed from one). `parts`: the tensors a
    concatenation was made of (all of them are loaded where it is)."""

    name: str
    parts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Param:
    name: str


class Node:
    """One module in the parameter tree. `wild`: any name below it is a parameter (a leaf layer,
    or a class whose code was not read)."""

    def __init__(
        self, cls: str, wild: bool = False, approximate: bool = False, is_param: bool = False
    ) -> None:
        self.cls = cls
        self.children: dict[str, Node] = {}
        self.wild = wild
        self.approximate = approximate
        self.is_param = is_param
        #: a leaf layer's parameters known not to exist (`bias` of a Linear built bias=False)
        self.absent: frozenset[str] = frozenset()

    def has(self, name: str) -> bool:
        node = self
        parts = name.split(".")
        for i, part in enumerate(parts):
            if node.wild:
                return i < len(parts) and ".".join(parts[i:]) not in node.absent
            child = node.children.get(part)
            if child is None:
                return False
            node = child
        return node.is_param

    def leaves(self, prefix: str = "") -> list[str]:
        """Module paths whose parameters the loader must fill (leaf layers and unread classes)."""
        if self.approximate:
            return []  # not known to hold parameters: never reported as unfilled
        if self.wild or self.is_param:
            return [prefix.rstrip(".")]
        out: list[str] = []
        for key, child in self.children.items():
            out += child.leaves(f"{prefix}{key}.")
        return out


def merge_nodes(one: Node, other: Node) -> Node:
    """A module either of two branches builds: any parameter of either is one; none is required
    (approximate: which branch runs is not known)."""
    merged = Node(other.cls, wild=one.wild or other.wild, approximate=True,
                  is_param=one.is_param or other.is_param)  # fmt: skip
    merged.absent = one.absent & other.absent
    merged.children = dict(one.children)
    for key, child in other.children.items():
        merged.children[key] = merge_nodes(merged.children[key], child) if key in merged.children \
            else child
    return merged


class Obj:
    """An instance of an engine class: its module tree node and its plain attributes."""

    def __init__(self, ref: ClassRef | None, node: Node, config: Config) -> None:
        self.ref = ref
        self.node = node
        self.config = config
        self.attrs: dict[str, Any] = {}


class ParamDict:
    """`dict(module.named_parameters())`: names relative to `obj`, `prefix` its path from the
    root module (loads are recorded with absolute names)."""

    def __init__(self, obj: Obj, prefix: str = "") -> None:
        self.obj = obj
        self.prefix = prefix


@dataclass
class Bound:
    obj: Obj
    cls: ClassRef
    func: ast.FunctionDef


@dataclass
class Closure:
    """A function defined inside the code being run (a nested `def` or a lambda): called with
    the scope it was defined in, as Python does (`map(transform, weights)` in vLLM's
    llama_eagle.py load_weights)."""

    func: ast.FunctionDef | ast.Lambda
    scope: dict
    module: Any  # remotedbg.analysis.pysource.Module
    frame: dict


@dataclass
class Super:
    obj: Obj
    after: ClassRef


@dataclass
class Loader:
    """A weight_loader bound to a parameter."""

    param: Param


@dataclass
class AutoLoader:
    obj: Obj
    skip_prefixes: list[str]
    skip_substrs: list[str]
    # names it drops instead of raising on (`ignore_unexpected_prefixes/suffixes`, given and
    # added by the release's own load_weights); None: the release's class was not read
    ignore_prefixes: list[str] | None = None
    ignore_suffixes: list[str] | None = None


@dataclass(frozen=True)
class Named:
    """A callable we know only by name (engine helper, torch function...)."""

    name: str


@dataclass
class Mapper:
    """vLLM's WeightsMapper: substring, stacked, prefix and suffix renames; None drops."""

    substr: dict
    stacked: dict
    prefix: dict
    suffix: dict

    def map_name(self, key: str) -> str | None:
        for old, new in self.substr.items():
            if isinstance(old, str) and old in key:
                if new is None:
                    return None
                if isinstance(new, str):
                    key = key.replace(old, new, 1)
        for old, new in self.stacked.items():
            if isinstance(old, str) and old in key and isinstance(new, tuple) and new:
                if isinstance(new[0], str):
                    key = key.replace(old, new[0], 1)
        for old, new in self.prefix.items():
            if isinstance(old, str) and key.startswith(old):
                if new is None:
                    return None
                if isinstance(new, str):
                    key = key.replace(old, new, 1)
        for old, new in self.suffix.items():
            if isinstance(old, str) and key.endswith(old):
                if new is None:
                    return None
                if isinstance(new, str):
                    key = key[: -len(old)] + new
        return key


Const = loader_rules.KnownResult


def opaque(value: Any) -> bool:
    """Unknown, or known only by name or as a tensor: its truth and contents are not known."""
    return is_unknown(value) or isinstance(value, (Tensor, Named))


class BreakSignal(Exception):
    pass


class ContinueSignal(Exception):
    pass


class ReturnSignal(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


@dataclass
class LoadModel:
    """What the loader does with each checkpoint tensor."""

    status: str  # "ok" | "raises" | "unknown"
    outcomes: dict[str, dict] = field(default_factory=dict)  # tensor -> {"outcome", ...}
    required: list[str] = field(default_factory=list)  # module paths needing weights
    loaded_params: list[str] = field(default_factory=list)
    reason: str | None = None
    raised: dict | None = None
    approximate: bool = False
    draft_class: str | None = None

    def unfilled(self) -> list[str]:
        """Required module paths that no tensor was loaded into."""
        out = []
        for path in self.required:
            if not any(p == path or p.startswith(path + ".") for p in self.loaded_params):
                out.append(path)
        return out


NOT_HANDLED = object()  # an engine helper's or builtin's rule does not apply to these arguments
