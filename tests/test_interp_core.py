"""The interpreter core (remotedbg.analysis.interp): dispatch, unknown, forks, budgets, ops,
builtins."""

from __future__ import annotations

import ast

import pytest

from remotedbg.analysis.interp import (
    UNKNOWN,
    Budget,
    Decisions,
    NeedsFork,
    NotInterpreted,
    TooManyPaths,
    Unknown,
    Visitor,
    builtins,
    explore,
    is_unknown,
    known,
    ops,
)


class Calc(Visitor):
    def visit_Constant(self, node: ast.Constant, env: dict) -> object:
        return node.value

    def visit_Name(self, node: ast.Name, env: dict) -> object:
        return env.get(node.id, UNKNOWN)

    def visit_Assign(self, node: ast.Assign, env: dict) -> None:
        env[node.targets[0].id] = self.visit(node.value, env)  # type: ignore[attr-defined]


def test_dispatch_by_node_type_and_the_fallbacks_name_the_node_and_line():
    env: dict = {}
    tree = ast.parse("x = 3\ny = x\nz = x + y\nwhile x:\n    pass\n")
    calc = Calc()
    for stmt in tree.body[:3]:
        calc.visit(stmt, env)
    assert env["x"] == 3 and env["y"] == 3
    assert is_unknown(env["z"]) and env["z"].reason == "BinOp not interpreted"
    assert env["z"].line == 3 and env["z"].describe() == "line 3: BinOp not interpreted"
    with pytest.raises(NotInterpreted, match="line 4: While not interpreted"):
        calc.visit(tree.body[3], env)


def test_the_plain_unknown_is_one_value_and_known_tests_every_argument():
    assert is_unknown(UNKNOWN) and UNKNOWN.describe() == "unknown"
    assert not known(1, Unknown("x", 2)) and known(1, None, "a")
    assert repr(Unknown("why", 7)) == "<unknown>"


def test_explore_forks_each_open_condition_both_ways():
    def run(decisions: Decisions) -> str:
        first = decisions.decide(("a",), "a")
        if first:
            return "A" + ("b" if decisions.decide(("b",), "b") else "-")
        return "not a"

    paths = explore(run)
    assert [p.result for p in sorted(paths, key=lambda p: p.order())] == ["Ab", "A-", "not a"]
    assert [p.result for p in paths] == ["not a", "Ab", "A-"]  # breadth first
    with pytest.raises(TooManyPaths):
        explore(run, max_paths=2)
    with pytest.raises(TooManyPaths):
        explore(run, max_runs=2)
    with pytest.raises(NeedsFork):
        Decisions().decide(("c",), "c")


def test_budgets_raise_the_domains_error():
    budget = Budget(steps=2, depth=1, error=RuntimeError)
    budget.tick()
    budget.tick()
    with pytest.raises(RuntimeError, match="step budget exhausted"):
        budget.tick()
    budget.enter()
    with pytest.raises(RuntimeError, match="call depth exceeded"):
        budget.enter()


def test_operators_follow_python_and_say_unknown_where_python_would_raise():
    assert ops.compare(ast.In(), 2, [1, 2]) is True
    assert ops.compare(ast.IsNot(), None, 1) is True
    assert ops.arithmetic(ast.Add(), 1, 2) == 3
    assert ops.arithmetic(ast.FloorDiv(), 1, 0) is UNKNOWN
    assert ops.arithmetic(ast.Mult(), [0], 10**8) is UNKNOWN  # bounded
    assert ops.arithmetic(ast.Pow(), 2, 3) is UNKNOWN  # not modelled


def test_builtins_on_known_values_only():
    assert builtins.call("len", [[1, 2]]) == 2
    assert builtins.call("len", [UNKNOWN]) is UNKNOWN
    assert builtins.call("range", [3]) == [0, 1, 2]
    assert builtins.call("range", [10**6]) is UNKNOWN
    assert builtins.call("range", [1, 2, 0]) is UNKNOWN
    assert builtins.call("sorted", [[3, 1]]) == [1, 3]
    assert builtins.call("int", ["x"]) is UNKNOWN
    assert builtins.call("any", [[0, UNKNOWN]]) is UNKNOWN
    assert builtins.call("zip", [[1], [2]]) == [(1, 2)]
    assert builtins.call("nope", []) is UNKNOWN
    assert builtins.str_method("a.b", "split", ["."]) == ["a", "b"]
    assert builtins.str_method("a", "encode", []) is UNKNOWN
    assert builtins.regex("re.sub", [r"^a\.", "b.", "a.x"], {}) == "b.x"
    assert builtins.regex("re.match", [r"(a+)+$", "aaa"], {}) is UNKNOWN  # could backtrack


def test_a_name_resolves_to_where_it_is_defined_through_imports_and_re_exports():
    from remotedbg.analysis.interp.names import qualified_name
    from remotedbg.analysis.pysource import SourceIndex

    index = SourceIndex("eng", "/e/eng")
    mod = index.add(
        "/e/eng/models/head.py",
        "from .utils import Loader as L\nimport torch\ndef local():\n    pass\n",
    )
    index.add("/e/eng/models/utils.py", "from eng.loading import Loader\n")
    assert mod is not None
    assert qualified_name(index, mod, "L") == "eng.loading.Loader"  # re-exported by utils
    assert qualified_name(index, mod, "torch.cat") == "torch.cat"
    assert qualified_name(index, mod, "local") == "eng.models.head.local"
    assert qualified_name(index, mod, "param") is None  # neither imported nor defined


def test_container_methods_run_on_the_container():
    held: dict = {"a": 1}
    assert builtins.container_method(held, "get", ["b", 2]) == 2
    assert builtins.container_method(held, "update", [{"b": 3}]) is None and held["b"] == 3
    items: list = []
    builtins.container_method(items, "append", ["x"])
    assert items == ["x"]
    assert builtins.container_method(items, "sort", []) is UNKNOWN
