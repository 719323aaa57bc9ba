"""Pure work over many inputs on the client's other cores, by fork and join.

A cold audit parses and classifies a hundred engine files on the client while the box waits;
the work is CPU-bound Python (threads would share one core), its inputs are already in memory
(a forked child has them for free) and its answers are JSON. Each child computes its share,
writes the answers to a pipe and exits with `os._exit`, so nothing of the parent (sessions,
the persistent daemon's sockets, atexit handlers) runs in it. Anything that goes wrong in a
child (it cannot fork, dies, answers garbage) only means its share is computed here after all.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

Item = TypeVar("Item")

MAX_PROCESSES = 4  # the caller's included: past this the forks cost more than they save
MIN_ITEMS_PER_PROCESS = 8


def processes_for(count: int) -> int:
    """How many processes (the caller's included) share `count` items."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_PROCESSES, count // MIN_ITEMS_PER_PROCESS))


def map_forked(compute: Callable[[Item], str], items: Sequence[Item]) -> list[str]:
    """[compute(item) for item in items], each a JSON text, the items shared out round-robin
    between this process and forked children."""
    share = processes_for(len(items))
    if share == 1 or not hasattr(os, "fork"):
        return [compute(item) for item in items]
    children: dict[int, tuple[int, int]] = {}  # share index -> (pid, read end)
    answers: list[str | None] = [None] * len(items)
    try:
        for index in range(1, share):
            started = _fork(compute, items, index, share)
            if started is not None:
                children[index] = started
        for index in range(share):
            if index not in children:
                for at in range(index, len(items), share):
                    answers[at] = compute(items[at])
        for index, (pid, reader) in list(children.items()):
            got = _join(pid, reader)
            del children[index]
            slots = range(index, len(items), share)
            if got is None or len(got) != len(slots):
                got = [compute(items[at]) for at in slots]
            for at, answer in zip(slots, got, strict=True):
                answers[at] = answer
    finally:
        for pid, reader in children.values():  # interrupted: no child outlives the command
            _stop(pid, reader)
    return [a if a is not None else compute(i) for a, i in zip(answers, items, strict=True)]


def _fork(
    compute: Callable[[Item], str], items: Sequence[Item], index: int, share: int
) -> tuple[int, int] | None:
    try:
        reader, writer = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(reader)
        os.close(writer)
        return None
    if pid == 0:  # the child: compute, answer, leave without running anything of the parent's
        status = 1
        try:
            os.close(reader)
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it with the parent
            data = json.dumps([compute(items[at]) for at in range(index, len(items), share)])
            view = memoryview(data.encode("utf-8", "surrogatepass"))
            while view:
                view = view[os.write(writer, view) :]
            status = 0
        finally:
            os._exit(status)
    os.close(writer)
    return pid, reader


def _join(pid: int, reader: int) -> list[str] | None:
    """The child's answers; None when it failed."""
    chunks = []
    try:
        while chunk := os.read(reader, 1 << 20):
            chunks.append(chunk)
    except OSError:
        chunks = []
    finally:
        os.close(reader)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        status = 1
    if status != 0:
        return None
    try:
        got: Any = json.loads(b"".join(chunks).decode("utf-8", "surrogatepass"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return got if isinstance(got, list) and all(isinstance(g, str) for g in got) else None


def _stop(pid: int, reader: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.close(reader)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
