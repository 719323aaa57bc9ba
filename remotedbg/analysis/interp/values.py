"""The unknown value: what an interpreter could not compute, with why and where."""

from __future__ import annotations

from typing import Any


class Unknown:
    """A value not known statically. `reason` and `line` say why and where it became unknown
    (empty and 0 for the plain UNKNOWN, a value the engine code itself leaves open)."""

    __slots__ = ("reason", "line")

    def __init__(self, reason: str = "", line: int = 0) -> None:
        self.reason = reason
        self.line = line

    def __repr__(self) -> str:
        return "<unknown>"

    # every unknown is the same value to the code being interpreted (paths that each reach an
    # unknown agree); why and where are what tells them apart
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unknown)

    def __hash__(self) -> int:
        return hash(Unknown)

    def describe(self) -> str:
        if not self.reason:
            return "unknown"
        return f"line {self.line}: {self.reason}" if self.line else self.reason


UNKNOWN = Unknown()


class Config:
    """A model config (a dict): attributes are its keys, nested dicts are Configs too, a
    missing key is UNKNOWN unless a default is given."""

    def __init__(self, data: dict) -> None:
        self.data = data

    def get(self, key: str, default: Any = UNKNOWN) -> Any:
        value = self.data.get(key, default)
        return Config(value) if isinstance(value, dict) else value


def is_unknown(value: Any) -> bool:
    return isinstance(value, Unknown)


def known(*values: Any) -> bool:
    """No value among them is unknown."""
    return not any(isinstance(v, Unknown) for v in values)
