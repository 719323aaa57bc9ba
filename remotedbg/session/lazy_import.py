"""Modules a dependency imports at its own import but rarely uses, made to load on first use."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types


class _Deferred(types.ModuleType):
    """Stands in sys.modules for a module not loaded yet; the first attribute asked of it
    loads the real one (which then replaces it there) and answers from it."""

    def __getattr__(self, attr: str) -> object:
        if attr.startswith("__"):
            raise AttributeError(attr)  # what the import system asks of any module
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), attr)


def defer(name: str) -> None:
    """Make `import name` cheap: the module's code runs when one of its attributes is first
    read. Nothing happens when it is already imported or not installed."""
    if name not in sys.modules and importlib.util.find_spec(name) is not None:
        sys.modules[name] = _Deferred(name)
