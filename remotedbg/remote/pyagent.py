"""Ship agent code to the remote Python and get JSON back, in one round trip."""

from __future__ import annotations

import json
from typing import Any

from remotedbg.errors import RemoteCommandError, RemoteInputMissing, UsageError
from remotedbg.session import Session, agent_bundle, answers
from remotedbg.session.agent_bundle import (
    ANSWER_MARKER,
    MISSING_PYTHON_STATUS,
    NOT_EXECUTABLE_STATUS,
    OLD_PYTHON_STATUS,
    boot_command,
    bundle_bytes,
    sources,
)


def call(
    session: Session,
    entry: str,
    args: dict[str, Any],
    *,
    python: str | None = None,
    timeout: float | None = None,
    cwd: str | None = None,
) -> Any:
    """Run `module:function(args)` on the remote Python and return its JSON value.

    `entry` is like "remotedbg.agent.fsops:glob_paths". Raises RemoteCommandError with the agent's
    one-line error when the function raised, or when no usable Python was found.
    """
    interpreter = python or agent_bundle.DEFAULT_PYTHON
    label = f"{interpreter} <agent {entry}> {json.dumps(args, default=str)[:500]}"
    if python is None:
        answer = session.agent_call(entry, args, timeout, label, cwd)
        if answer is not None:
            return _unwrap(session, entry, answer)
    bundle = {"modules": sources(), "entry": entry, "args": args}
    result = session.run(
        boot_command(interpreter),
        stdin=bundle_bytes(bundle),
        timeout=timeout,
        label=label,
        cwd=cwd,
    )
    if result.truncated:
        check = entry.rpartition(":")[2].replace("_", " ")
        raise RemoteCommandError(
            f"{session.name}: the {check} check's answer passed the output cap"
        )
    if result.exit_status == OLD_PYTHON_STATUS:
        found = (result.stderr.strip().splitlines() or ["python ?"])[-1].rpartition(" ")[2]
        raise UsageError(
            f"{session.name}: remote {interpreter} is {found}; remotedbg needs 3.8+; "
            "pass --python PATH"
        )
    if result.exit_status in (MISSING_PYTHON_STATUS, NOT_EXECUTABLE_STATUS):
        why = "" if result.exit_status == MISSING_PYTHON_STATUS else " that this user may run"
        raise RemoteCommandError(
            f"no Python at {interpreter!r}{why} on {session.name} (pass --python PATH)"
        )
    try:
        answer = json.loads(result.stdout_bytes.rsplit(ANSWER_MARKER, 1)[1])
    except (ValueError, IndexError, RecursionError):
        said = result.stderr.strip() or result.stdout.strip()  # `nologin` says it on stdout
        last = (said.splitlines() or ["no output"])[-1][:300]
        raise RemoteCommandError(
            f"{session.name}: the {_check(entry)} check failed: {last}"
        ) from None
    return _unwrap(session, entry, answer)


# Agent exceptions whose message is already a sentence for the user ("PATH: reason"); any other
# type is a fault in the check itself and keeps its type name.
USER_FACING_ERRORS = {"CheckpointError": RemoteCommandError, "MissingInput": RemoteInputMissing}


def _unwrap(session: Session, entry: str, answer: Any) -> Any:
    what = f"{session.name}: the {_check(entry)} check"
    answer = answers.call_answer(answer, what)
    if answer["ok"]:
        return answers.value_of(entry, answer["value"], what)
    error = answer["error"]
    kind, _, message = error.partition(": ")
    if kind in USER_FACING_ERRORS:
        raise USER_FACING_ERRORS[kind](f"{session.name}: {message}")
    raise RemoteCommandError(f"{session.name}: the {_check(entry)} check failed: {error}")


def _check(entry: str) -> str:
    """What the user calls an agent entry: "remotedbg.agent.checkpoint:list_tensors" -> "list
    tensors" (module paths are internal)."""
    return entry.rpartition(":")[2].replace("_", " ")
