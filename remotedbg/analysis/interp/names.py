"""What a name in engine code refers to, as a qualified name (`vllm.model_executor.models.utils.
AutoWeightsLoader`), through the file's imports and the re-exports of the files read: how engine
helpers are recognised (mypy's plugin hooks by full name)."""

from __future__ import annotations

from remotedbg.analysis.pysource import Module, SourceIndex

_MAX_REEXPORTS = 4


def qualified_name(index: SourceIndex, mod: Module, dotted: str) -> str | None:
    """The qualified name of `dotted` (`name` or `name.attr...`) as `mod` means it: imported
    (followed through modules read that re-export it) or defined in `mod`; None when `mod`
    neither imports nor defines its first part (a builtin, a local, an attribute of a value)."""
    head, _, rest = dotted.partition(".")
    if head in mod.functions or head in mod.classes:
        found = f"{mod.name}.{head}"
    else:
        target = mod.imports.get(head)
        if target is None:
            return None
        found = _origin(index, target)
    return f"{found}.{rest}" if rest else found


def _origin(index: SourceIndex, target: str) -> str:
    """`module:attr` (an import) followed to the module that defines attr, as far as the
    modules read show."""
    module, _, attr = target.partition(":")
    for _ in range(_MAX_REEXPORTS):
        other = index.modules.get(module) if attr else None
        if other is None or attr in other.functions or attr in other.classes:
            break
        onward = other.imports.get(attr)
        if onward is None:
            break
        module, _, attr = onward.partition(":")
    return f"{module}.{attr}" if attr else module
