"""Python's comparison and arithmetic operators on known values, written once for every domain.
Each returns UNKNOWN where Python would raise (or the operator is not modelled)."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from remotedbg.analysis.interp.values import UNKNOWN
from remotedbg.analysis.pysource import bounded_product

ORDERINGS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
COMPARISONS: dict[type, Callable[[Any, Any], Any]] = {
    **ORDERINGS,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: bounded_product,  # `"x" * n` with an n from a hostile file stays small
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def compare(op: ast.cmpop, left: Any, right: Any) -> Any:
    """`left <op> right` (TypeError propagates: the caller decides what it means)."""
    fn = COMPARISONS.get(type(op))
    return UNKNOWN if fn is None else fn(left, right)


def arithmetic(op: ast.operator, left: Any, right: Any) -> Any:
    fn = ARITHMETIC.get(type(op))
    if fn is None:
        return UNKNOWN
    try:
        return fn(left, right)
    except (TypeError, ZeroDivisionError, ValueError):
        return UNKNOWN


UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos,
                                           ast.Invert: operator.invert}  # fmt: skip


def unary(op: ast.unaryop, operand: Any) -> Any:
    """`-x`, `+x`, `~x` on a known number; UNKNOWN otherwise."""
    fn = UNARY.get(type(op))
    if fn is None or isinstance(operand, bool) or not isinstance(operand, (int, float)):
        return UNKNOWN
    return fn(operand)
