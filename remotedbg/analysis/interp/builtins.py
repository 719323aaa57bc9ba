"""Python builtins (and `str` methods, `re` on constant patterns) on known values, for the
domains to call by name. Each returns UNKNOWN when an argument is unknown or not of a type it
models; a domain extends or narrows the table with the objects only it knows."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from remotedbg.analysis.interp.values import UNKNOWN, known

RANGE_MAX = 4096  # a `range` the interpreter unrolls
SEQUENCES = (list, tuple, set, dict)


def _len(args: list) -> Any:
    if len(args) == 1 and isinstance(args[0], (list, tuple, str, dict)):
        return len(args[0])
    return UNKNOWN


def _converter(kind: Callable[[Any], Any]) -> Callable[[list], Any]:
    def convert(args: list) -> Any:
        if not args:
            return kind(())
        return kind(args[0]) if isinstance(args[0], SEQUENCES) else UNKNOWN

    return convert


def _int(args: list) -> Any:
    if args and isinstance(args[0], (str, int)):
        try:
            return int(args[0])
        except ValueError:
            return UNKNOWN
    return UNKNOWN


def _str(args: list) -> Any:
    return str(args[0]) if args and isinstance(args[0], (str, int)) else UNKNOWN


def _range(args: list) -> Any:
    if not args or len(args) > 3 or not all(isinstance(a, int) for a in args):
        return UNKNOWN
    try:
        span = range(*args)
    except ValueError:  # a zero step
        return UNKNOWN
    return list(span) if len(span) <= RANGE_MAX else UNKNOWN


def _enumerate(args: list) -> Any:
    return list(enumerate(args[0])) if args and isinstance(args[0], (list, tuple)) else UNKNOWN


def _zip(args: list) -> Any:
    if all(isinstance(a, (list, tuple)) for a in args):
        return list(zip(*args, strict=False))
    return UNKNOWN


def _truth_of_all(combine: Callable[[list], bool]) -> Callable[[list], Any]:
    def reduce(args: list) -> Any:
        if args and isinstance(args[0], list) and known(*args[0]):
            return combine(args[0])
        return UNKNOWN

    return reduce


BUILTINS: dict[str, Callable[[list], Any]] = {
    "len": _len,
    "list": _converter(list),
    "tuple": _converter(tuple),
    "set": _converter(set),
    "sorted": _converter(sorted),
    "int": _int,
    "str": _str,
    "range": _range,
    "enumerate": _enumerate,
    "zip": _zip,
    "any": _truth_of_all(any),
    "all": _truth_of_all(all),
}


def call(name: str, args: list, table: dict[str, Callable[[list], Any]] = BUILTINS) -> Any:
    """The builtin `name` on known arguments, else UNKNOWN."""
    fn = table.get(name)
    if fn is None or not known(*args):
        return UNKNOWN
    try:
        return fn(args)
    except (TypeError, ValueError):
        return UNKNOWN


STR_METHODS = {
    "replace", "startswith", "endswith", "split", "rsplit", "strip", "lstrip", "rstrip",
    "removeprefix", "removesuffix", "format", "join", "lower", "upper", "count", "find",
    "partition", "rpartition", "isdigit",
}  # fmt: skip


def str_method(text: str, name: str, args: list) -> Any:
    """`text.<name>(*args)` for the str methods above, on string or number arguments."""
    if name not in STR_METHODS:
        return UNKNOWN
    try:
        return getattr(text, name)(*args)
    except (TypeError, ValueError, AttributeError):
        return UNKNOWN


def container_method(base: dict | list | set, name: str, args: list) -> Any:
    """The dict, list and set methods engine code calls, run on the container (they mutate it,
    as Python does); UNKNOWN for any other."""
    if isinstance(base, dict):
        if name == "items":
            return list(base.items())
        if name == "keys":
            return list(base)
        if name == "values":
            return list(base.values())
        if name == "get":
            return base.get(args[0], args[1] if len(args) > 1 else None) if args else UNKNOWN
        if name == "update" and args and isinstance(args[0], dict):
            base.update(args[0])
            return None
        if name == "pop" and args:
            return base.pop(args[0], args[1] if len(args) > 1 else None)
    if isinstance(base, list):
        if name == "append" and args:
            base.append(args[0])
            return None
        if name == "extend" and args and isinstance(args[0], (list, tuple)):
            base.extend(args[0])
            return None
        if name in ("index", "count") and len(args) == 1 and known(*args):
            # `rest[rest.index("linear") + 1 :]` (vLLM 0.25+ Medusa._remap_old_checkpoint_key)
            try:
                return getattr(base, name)(args[0])
            except ValueError:
                return UNKNOWN
    if isinstance(base, set) and name == "add" and args:
        base.add(args[0])
        return None
    return UNKNOWN


# `re.sub(r"^layers\.0\.", "midlayer.", name)` (SGLang 0.5.12+ kimi_k25_eagle3.py:432) on a
# known name: run, with patterns that cannot backtrack without bound (no quantified group, no
# backreference) on short strings only
REGEX_FUNCTIONS = {"re.sub", "re.match", "re.search", "re.fullmatch"}
_REGEX_UNSAFE = re.compile(r"\)[*+?{]|\\[1-9]|\(\?P=")
_REGEX_MAX = 512


def regex(name: str, args: list, kwargs: dict) -> Any:
    """re.sub/match/search/fullmatch on constant patterns and known strings, else UNKNOWN."""
    want = 3 if name == "re.sub" else 2
    if len(args) != want or kwargs or not all(isinstance(a, str) for a in args):
        return UNKNOWN
    pattern, text = args[0], args[-1]
    if len(pattern) > _REGEX_MAX or len(text) > _REGEX_MAX or _REGEX_UNSAFE.search(pattern):
        return UNKNOWN
    try:
        compiled = re.compile(pattern)
        if name == "re.sub":  # a replacement with group references is not modelled
            return UNKNOWN if "\\" in args[1] else compiled.sub(args[1], text)
        return getattr(compiled, name[3:])(text) is not None  # the match's truth only
    except re.error:
        return UNKNOWN
