"""The one boundary every answer from the box crosses: the executor's frames and each agent
call's value are checked against the shape that call returns before any caller reads them (the
frames' shapes are here; each call's, with its entry, in remote/calls.py).
The box is someone else's machine and its `python3` may be anything (a wrapper, a patched
interpreter): a wrong type, a missing key or an integer no C call can take (`exit: 2**70`) is
`AgentAnswerError`, one line and exit 4, never a TypeError deep in a caller.

A shape is plain data: a type (`int` never accepts a bool; `float` accepts an int; `dict` and
`list` any object and list), `[shape]` (a list of it), `{key: shape}` (a dict with those keys,
others allowed; `Opt(shape)` for a key that may be absent), `Nullable(shape)`, or `object`
(anything JSON). Every integer anywhere in
an answer must fit in 64 bits, whatever the shape says."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from remotedbg.errors import RemoteCommandError

INT_LIMIT = 1 << 63  # sizes, offsets, pids and statuses all fit; C calls refuse more
MAX_DEPTH = 64


class AgentAnswerError(RemoteCommandError):
    """An answer from the box that does not have the shape its request returns."""


@dataclass(frozen=True)
class Opt:
    shape: Any


@dataclass(frozen=True)
class Nullable:
    shape: Any


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, int):
        return "an integer" if -INT_LIMIT <= value < INT_LIMIT else "an integer past 64 bits"
    return {str: "a string", float: "a number", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def _expected(shape: Any) -> str:
    if isinstance(shape, Nullable):
        return _expected(shape.shape) + " or null"
    if isinstance(shape, list):
        return "a list"
    if isinstance(shape, dict):
        return "an object"
    return {int: "an integer", str: "a string", bool: "a bool", float: "a number"}.get(
        shape, "JSON"
    )


def _bad(where: str, shape: Any, value: Any) -> ValueError:
    got = _describe(value)
    return ValueError(f"{where or 'the answer'}: expected {_expected(shape)}, got {got}")


def _check(value: Any, shape: Any, where: str, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"{where}: nested past {MAX_DEPTH} levels")
    if isinstance(shape, Nullable):
        if value is not None:
            _check(value, shape.shape, where, depth)
        return
    if isinstance(value, int) and not -INT_LIMIT <= value < INT_LIMIT:
        raise ValueError(f"{where or 'the answer'}: an integer past 64 bits")
    if shape is object:
        _check_json(value, where, depth)
    elif shape in (dict, list):  # an object / a list, of anything JSON
        if not isinstance(value, shape):
            raise _bad(where, {} if shape is dict else [], value)
        _check_json(value, where, depth)
    elif shape is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _bad(where, shape, value)
    elif shape is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _bad(where, shape, value)
    elif shape in (str, bool):
        if not isinstance(value, shape):
            raise _bad(where, shape, value)
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise _bad(where, shape, value)
        for index, item in enumerate(value):
            _check(item, shape[0], f"{where}[{index}]", depth + 1)
    elif isinstance(shape, dict):
        if not isinstance(value, dict):
            raise _bad(where, shape, value)
        for key, inner in shape.items():
            if key not in value:
                if isinstance(inner, Opt):
                    continue
                raise ValueError(f"{where}.{key}: missing" if where else f"{key}: missing")
            sub = f"{where}.{key}" if where else key
            _check(value[key], inner.shape if isinstance(inner, Opt) else inner, sub, depth + 1)
        for key, item in value.items():
            if key not in shape:
                _check_json(item, f"{where}.{key}" if where else str(key), depth + 1)
    else:  # pragma: no cover - a shape table entry that is not a shape
        raise TypeError(f"not a shape: {shape!r}")


def _check_json(value: Any, where: str, depth: int) -> None:
    """Anything JSON, with every integer within 64 bits."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{where}: nested past {MAX_DEPTH} levels")
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return
    if isinstance(value, int):
        if not -INT_LIMIT <= value < INT_LIMIT:
            raise ValueError(f"{where or 'the answer'}: an integer past 64 bits")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]", depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_json(item, f"{where}.{key}" if where else str(key), depth + 1)


def checked(value: Any, shape: Any, what: str) -> Any:
    """`value` when it has `shape`, else AgentAnswerError naming `what` and the first fault."""
    try:
        _check(value, shape, "")
    except ValueError as fault:
        raise AgentAnswerError(f"{what}: malformed answer from the box ({fault})") from None
    return value


# -- the executor's frames (agent/executor.py) ----------------------------------------------
HELLO = {"pid": int, "ready": bool}
STATUS = {"exit": Nullable(int)}
CALL_ANSWER = {"ok": bool, "value": Opt(object), "error": Opt(object)}
FILE_HEADER = {"length": int}  # G: the raw bytes that follow
FILE_END = {"short": int}  # R's value after them: how many were zeros for bytes the file lost


def exit_status(frame: Any, what: str) -> int | None:
    """A command's exit status from its S frame: 0-255, or None."""
    status = checked(frame, STATUS, what)["exit"]
    if status is not None and not 0 <= status <= 255:
        raise AgentAnswerError(f"{what}: malformed answer from the box (exit status {status})")
    return status


def call_answer(frame: Any, what: str) -> dict:
    """An agent call's R frame: ok with a value, or not ok with an error string."""
    answer = checked(frame, CALL_ANSWER, what)
    if answer["ok"] and "value" not in answer:
        raise AgentAnswerError(f"{what}: malformed answer from the box (value: missing)")
    if not answer["ok"] and not isinstance(answer.get("error"), str):
        raise AgentAnswerError(f"{what}: malformed answer from the box (error: not a string)")
    return answer
