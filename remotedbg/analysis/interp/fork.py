"""Forking on conditions the code leaves open: a run that meets one raises NeedsFork, and
`explore` runs again with the condition forced each way (a decision sequence per path).

A rerun, not a split of the running state: the interpreters recurse through engine calls, so the
only point where a path can be copied is the start."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

R = TypeVar("R")
Key = tuple


class NeedsFork(Exception):
    """The run met an open condition `key` that no decision forces yet."""

    def __init__(self, key: Key, text: str) -> None:
        super().__init__(text)
        self.key, self.text = key, text


class TooManyPaths(Exception):
    """More runs or paths than the budget allows."""


class Decisions:
    """The decisions forced on one run: condition key -> taken (True) or not."""

    def __init__(self, forced: dict | None = None) -> None:
        self.forced: dict = forced if forced is not None else {}

    def decide(self, key: Key, text: str) -> bool:
        if key in self.forced:
            return self.forced[key]
        raise NeedsFork(key, text)


class Path(Generic[R]):
    __slots__ = ("forced", "result")

    def __init__(self, forced: dict, result: R) -> None:
        self.forced, self.result = forced, result

    def order(self) -> tuple[bool, ...]:
        """Depth-first position: the taken side of every decision first."""
        return tuple(not taken for taken in self.forced.values())


def explore(
    run: Callable[[Decisions], R], max_runs: int | None = None, max_paths: int | None = None
) -> list[Path[R]]:
    """Every path of `run` over the open conditions it meets, in the order they were completed
    (breadth first). TooManyPaths when more than `max_runs` runs would be needed, or the paths
    (completed and pending) exceed `max_paths`."""
    todo: list[dict] = [{}]
    done: list[Path[R]] = []
    runs = 0
    while todo:
        runs += 1
        if max_runs is not None and runs > max_runs:
            raise TooManyPaths("too many runs")
        forced = todo.pop(0)
        try:
            done.append(Path(forced, run(Decisions(forced))))
        except NeedsFork as fork:
            todo += [{**forced, fork.key: True}, {**forced, fork.key: False}]
        if max_paths is not None and len(done) + len(todo) > max_paths:
            raise TooManyPaths("too many paths")
    return done
