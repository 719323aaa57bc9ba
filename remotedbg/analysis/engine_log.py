"""What an engine's log says about how it ended: the exception of its last traceback, when
nothing ran after it (an engine that died of it). Pure: lines in, a dict out."""

from __future__ import annotations

import re
from typing import Any

# An exception line: at the start of the line or right after the prefix the engines put before
# each line of a logged traceback (vLLM "(EngineCore_DP0 pid=123) ERROR 12-01 10:00:00
# [core.py:780] ", SGLang "[2026-12-01 10:00:00 TP0] "); a quoted source line is indented there.
_EXCEPTION = re.compile(
    r"(?:^|\] |\) )((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit)): (.*)$"
)
_TRACEBACK = "Traceback (most recent call last):"
#: Lines that show the engine served on after a traceback (it did not die of it).
_ALIVE = re.compile(r"accept len:|SpecDecoding metrics|Avg prompt throughput|Decode batch")


def died_of(lines: list[str]) -> dict[str, Any] | None:
    """{"exception", "line", "last"} of how the engine died: the first traceback after its last
    sign of serving (a dying engine logs a cascade, the root cause first: vLLM's worker
    IndexError, then EngineCore's RuntimeError, then the API server's EngineDeadError). None
    when there is no traceback since it last served."""
    alive = max((i for i, line in enumerate(lines) if _ALIVE.search(line)), default=-1)
    found: dict[str, Any] | None = None
    in_traceback = False
    for index in range(alive + 1, len(lines)):
        if _TRACEBACK in lines[index]:
            in_traceback = True
            continue
        match = _EXCEPTION.search(lines[index]) if in_traceback else None
        if match:
            text = f"{match.group(1)}: {match.group(2).strip()}"
            if found is None:
                found = {"exception": text, "line": index}
            found["last"] = text
            in_traceback = False
    return found
