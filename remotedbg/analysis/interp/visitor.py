"""Dispatch on the node type (`visit_<NodeType>`, as mypy's visitor does), with a fallback that
says what was not interpreted and where, and the budgets that bound a run."""

from __future__ import annotations

import ast
from typing import Any

from remotedbg.analysis.interp.values import Unknown


class NotInterpreted(Exception):
    """A statement the interpreter has no rule for."""

    def __init__(self, node: ast.AST) -> None:
        self.line = getattr(node, "lineno", 0)
        self.kind = type(node).__name__
        super().__init__(f"line {self.line}: {self.kind} not interpreted")


class Visitor:
    """`visit(node, *context)` calls `visit_<NodeType>(node, *context)`; node types without a
    method go to `generic_stmt` (statements: NotInterpreted) or `generic_expr` (expressions: an
    Unknown naming the node and its line). A domain overrides either fallback."""

    _methods: dict[type, str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._methods = {}

    def visit(self, node: ast.AST, *context: Any) -> Any:
        kind = type(node)
        name = self._methods.get(kind)
        if name is None:
            name = f"visit_{kind.__name__}"
            if not hasattr(self, name):
                name = "generic_stmt" if isinstance(node, ast.stmt) else "generic_expr"
            self._methods[kind] = name
        return getattr(self, name)(node, *context)

    def generic_stmt(self, node: ast.stmt, *context: Any) -> Any:
        raise NotInterpreted(node)

    def generic_expr(self, node: ast.AST, *context: Any) -> Any:
        return Unknown(f"{type(node).__name__} not interpreted", getattr(node, "lineno", 0))


class Budget:
    """Steps and call depth a run may take; beyond either, `error` (the domain's exception for
    'cannot follow') is raised."""

    def __init__(self, steps: int, depth: int, error: type[Exception]) -> None:
        self.max_steps, self.max_depth, self.error = steps, depth, error
        self.steps = 0
        self.depth = 0

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise self.error("step budget exhausted")

    def enter(self) -> None:
        """A call begins (pair with `leave` in a `finally`)."""
        self.depth += 1
        if self.depth > self.max_depth:
            raise self.error("call depth exceeded")

    def leave(self) -> None:
        self.depth -= 1
