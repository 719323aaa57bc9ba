"""Ship agent code to the remote Python and get JSON back, in one round trip."""

from __future__ import annotations

import json
from typing import Any

from remotedbg.errors import RemoteCommandError, RemoteInputMissing, UsageError
from remotedbg.remote.calls import AgentCall
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
    request: AgentCall[Any],
    args: dict[str, Any] | None = None,
    *,
    python: str | None = None,
    timeout: float | None = None,
    cwd: str | None = None,
) -> Any:
    """Run the request's agent function on the remote Python (with `args` instead of the
    request's own, when given) and return its JSON value, checked against its shape.

    Raises RemoteCommandError with the agent's one-line error when the function raised, or when
    no usable Python was found; AgentAnswerError when the answer has not the entry's shape.
    """
    entry = request.entry
    args = request.args() if args is None else args
    interpreter = python or agent_bundle.DEFAULT_PYTHON
    label = f"{interpreter} <agent {entry}> {json.dumps(args, default=str)[:500]}"
    if python is None:
        answer = session.agent_call(entry, args, timeout, label, cwd)
        if answer is not None:
            return _unwrap(session, request, answer)
    bundle = {"modules": sources(), "entry": entry, "args": args}
    result = session.run(
        boot_command(interpreter),
        stdin=bundle_bytes(bundle),
        timeout=timeout,
        label=label,
        cwd=cwd,
    )
    if result.truncated:
        raise RemoteCommandError(
            f"{session.name}: the {request.what} check's answer passed the output cap"
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
            f"{session.name}: the {request.what} check failed: {last}"
        ) from None
    return _unwrap(session, request, answer)


# Agent exceptions whose message is already a sentence for the user ("PATH: reason"); any other
# type is a fault in the check itself and keeps its type name.
USER_FACING_ERRORS = {"CheckpointError": RemoteCommandError, "MissingInput": RemoteInputMissing}


def _unwrap(session: Session, request: AgentCall[Any], answer: Any) -> Any:
    what = f"{session.name}: the {request.what} check"
    answer = answers.call_answer(answer, what)
    if answer["ok"]:
        return request.check(answer["value"], what)
    error = answer["error"]
    kind, _, message = error.partition(": ")
    if kind in USER_FACING_ERRORS:
        raise USER_FACING_ERRORS[kind](f"{session.name}: {message}")
    raise RemoteCommandError(f"{what} failed: {error}")
