"""Which remote Python reads a checkpoint: --python wins; otherwise the session's own python3,
and, for files only torch can read, the first interpreter on the box that has torch (an engine's
venv usually does)."""

from __future__ import annotations

from typing import Any, TypeVar

from remotedbg.engines.knowledge import PREFIX_GLOBS_HOME, PREFIX_GLOBS_SYSTEM
from remotedbg.engines.profiles import ENGINE_PACKAGES
from remotedbg.errors import RemoteCommandError
from remotedbg.remote import calls
from remotedbg.remote.calls import AgentCall
from remotedbg.remote.primitives import Remote

A = TypeVar("A")

TORCH_NEEDED = "needs torch"


def interpreters_with(remote: Remote, module: str) -> list[str]:
    found = remote.ask(
        calls.FindInterpreters(
            prefixes=PREFIX_GLOBS_HOME + PREFIX_GLOBS_SYSTEM, modules=[module, *ENGINE_PACKAGES]
        )
    ).found
    # an engine's own environment first: it is what serves the model
    found.sort(key=lambda c: not any(c.modules.get(p) for p in ENGINE_PACKAGES))
    return [c.python for c in found if c.modules.get(module)]


def _needs_torch(value: Any) -> bool:
    """A vocab-check answer whose checkpoint could not be read for want of torch."""
    unknown = value.get("unknown", []) if isinstance(value, dict) else []
    return any(u.get("code") == "needs-torch" for u in unknown)


def checkpoint_ask(remote: Remote, request: AgentCall[A]) -> A:
    """checkpoint_call's answer as its dataclass (remote/calls.py)."""
    return request.build(checkpoint_call(remote, request))


def checkpoint_call(remote: Remote, request: AgentCall[Any]) -> Any:
    """Call a checkpoint-reading agent function; retry under a torch-capable interpreter when
    the file needs torch and the chosen one has none. The answer as plain data, checked: what
    `tensors` prints as it is (checkpoint_ask: as its dataclass)."""
    try:
        value = remote.call(request)
    except RemoteCommandError as error:
        if TORCH_NEEDED not in str(error) or remote.python:
            raise
        value, failure = None, error
    else:
        if not _needs_torch(value) or remote.python:
            return value
        failure = None
    for python in interpreters_with(remote, "torch")[:1]:
        return Remote(remote.session, python).call(request)
    if failure is not None:
        raise failure
    return value
