"""The one result contract: every check ends as ok, found, unknown or not-applicable.

A check result is a plain dict (agents and actions pass JSON around):

    {"check": id, "status": "ok" | "found" | "unknown" | "not-applicable",
     "findings": [finding, ...], "reason": str | None, "code": reason code | None,
     "facts": {...}}

`found` means findings were seen (their severities decide the verdict); `unknown` means the check
could not be done, with a reason code (READABLE_CODES) and a sentence; `not-applicable` means it
does not concern this deployment. A defect is only ever what was seen, never what could not be
read: `verdict()` and `exit_code()` are the single place verdicts and exit codes come from, for the
CLI, playbooks, fleets and the REPL alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from remotedbg.agent.findings import ERROR
from remotedbg.errors import ExitCode

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

OK = "ok"
FOUND = "found"
UNKNOWN = "unknown"
NOT_APPLICABLE = "not-applicable"
STATUSES = (OK, FOUND, UNKNOWN, NOT_APPLICABLE)

#: Reason codes of an unknown result.
UNREADABLE = "unreadable"
NEEDS_TORCH = "needs-torch"
TIMEOUT = "timeout"
UNSUPPORTED_CODE = "unsupported-engine-code"
MISSING_INPUT = "missing-input"
READABLE_CODES = (UNREADABLE, NEEDS_TORCH, TIMEOUT, UNSUPPORTED_CODE, MISSING_INPUT)

VERDICT_OK = "ok"
VERDICT_DEFECT = "defect"
VERDICT_INCONCLUSIVE = "inconclusive"
VERDICT_EXIT = {
    VERDICT_OK: ExitCode.OK,
    VERDICT_DEFECT: ExitCode.FINDINGS,
    VERDICT_INCONCLUSIVE: ExitCode.REMOTE,
}


def check_result(check: str) -> dict[str, Any]:
    return {
        "check": check,
        "status": OK,
        "findings": [],
        "reason": None,
        "code": None,
        "facts": {},
    }


def add_finding(result: dict[str, Any], item: dict) -> dict[str, Any]:
    result["findings"].append(item)
    result["status"] = FOUND
    return result


def unknown(result: dict[str, Any], reason: str, code: str = MISSING_INPUT) -> dict[str, Any]:
    """The check could not be done. Findings already seen stay (a proven defect is still one)."""
    result["reason"] = reason
    result["code"] = code
    if result["status"] != FOUND:
        result["status"] = UNKNOWN
    else:
        result["unknown_too"] = True
    return result


def not_applicable(result: dict[str, Any], reason: str) -> dict[str, Any]:
    result["status"] = NOT_APPLICABLE
    result["reason"] = reason
    return result


def unknowns(results: list[dict[str, Any]]) -> list[str]:
    """The reasons of every result that could not be checked (fully)."""
    return [
        f"{r['check']}: {r['reason']}"
        for r in results
        if r["status"] == UNKNOWN or r.get("unknown_too")
    ]


def verdict(findings: list[dict], inconclusive: list[str]) -> tuple[str, str]:
    """defect when an error-level finding was seen; else inconclusive when something could not
    be checked; else ok."""
    errors = [f for f in findings if f["severity"] == ERROR]
    if errors:
        ids = ", ".join(dict.fromkeys(f["id"] for f in errors))
        return VERDICT_DEFECT, f"{len(errors)} error-level finding(s): {ids}"
    if inconclusive:
        return VERDICT_INCONCLUSIVE, "could not check everything: " + "; ".join(inconclusive)
    return VERDICT_OK, "no error-level finding"


def exit_code(verdict_name: str) -> int:
    return VERDICT_EXIT[verdict_name]


@runtime_checkable
class Result(Protocol):
    """What a command hands the front end's one writer (remotedbg.front.writer): it shows
    itself in a terminal (rich's renderable protocol), as its --json document, and as a
    Markdown report."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult: ...

    def to_json(self) -> Any: ...

    def to_markdown(self) -> str: ...
