"""The built-in actions a playbook step can call, by name. Each takes the step's resolved `with`
parameters and returns plain data; `findings` (a list of findings) and `inconclusive` (a list
of reasons, one sentence each, never joined) are collected by the runner.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from remotedbg.actions.audit import audit_drafts, find_drafts, find_target
from remotedbg.actions.container_route import unreadable_line
from remotedbg.actions.locate import locate_engines
from remotedbg.actions.spec import find_servers, spec_checks
from remotedbg.analysis.d2t_handling import classify_source
from remotedbg.engines.profiles import engines_named
from remotedbg.engines.text_config import TEXT_CONFIG_PATHS
from remotedbg.remote import calls
from remotedbg.remote.primitives import Remote


@dataclass(frozen=True)
class Action:
    name: str
    run: Callable[..., dict]  # run(remote, **params): its parameters are the step's `with` keys
    writes: bool = False  # may change the remote: needs --allow-write (unless the step says not)
    description: str = ""
    # runs code of the playbook's own on the box: it may write whatever it declares, so it
    # always needs --allow-write
    executes: bool = False
    # parameters that reach the box's shell: a ${...} value is quoted into them, as one word
    shell_params: tuple[str, ...] = ()

    @property
    def params(self) -> tuple[str, ...]:
        """The parameters a step may give, read from the signature of `run` (after the
        remote): one place says what an action takes."""
        names = list(inspect.signature(self.run).parameters)
        return tuple(names[1:])


def _as_list(value: Any) -> list:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        return [v for v in value.split(",") if v]
    return list(value)


def _as_bool(value: Any) -> bool:
    """Playbook values come as YAML booleans or as --var text."""
    if isinstance(value, str):
        return value.strip().lower() not in ("", "0", "false", "no", "off")
    return bool(value)


def _search_home(value: Any) -> bool | str:
    """`search_home`: true (this user's home), false, or "all" (every home under /home)."""
    if isinstance(value, str) and value.strip().lower() == "all":
        return "all"
    return _as_bool(value)


def _locate(
    remote: Remote,
    roots: Any = None,
    search_home: Any = True,
    architectures: Any = None,
    servers: Any = True,
) -> dict:
    found = locate_engines(
        remote,
        _as_list(roots),
        _search_home(search_home),
        _as_list(architectures),
        servers=_as_bool(servers),
    )
    reasons = [unreadable_line(server) for server in found["unreadable"]]
    if not found["engines"]:
        reasons.insert(0, f"no {engines_named()} install found")
    if reasons:
        found["inconclusive"] = reasons
    return found


def _run(remote: Remote, command: str, timeout: float | None = None) -> dict:
    result = remote.session.run(command, timeout=timeout)
    return {"exit_status": result.exit_status, "stdout": result.stdout, "stderr": result.stderr}


def _classify(remote: Remote, path: str) -> dict:
    files = remote.read_text([path])
    return {"files": [classify_source(f["text"], f["path"]) for f in files if "text" in f]}


def _spec_checks(
    remote: Remote,
    servers: Any = None,
    located: Any = None,
    drafts_audit: Any = None,
    train_layers: Any = "",
    target: Any = None,
    draft: Any = "",
) -> dict:
    return spec_checks(
        remote, servers, located, drafts_audit, train_layers, target or None, str(draft or "")
    )


def _python(remote: Remote, code: str, args: Any = None) -> dict:
    return remote.ask(calls.Snippet(code=code, args=args or {})).value


ACTIONS: dict[str, Action] = {
    a.name: a
    for a in [
        Action(
            "locate-engines",
            _locate,
            description="engine installs, draft-model files and their d2t handling",
        ),
        Action(
            "find-drafts",
            lambda r, draft="", processes=None, search=None: find_drafts(
                r, str(draft or ""), processes, _as_list(search)
            ),
            description="draft checkpoints: --var draft, a running server's, or a bounded search",
        ),
        Action(
            "find-target",
            lambda r, target="", servers=None, drafts=None: find_target(
                str(target or ""), servers, drafts
            ),
            description="the target model: --var, or a server's",
        ),
        Action(
            "audit-drafts",
            lambda r, drafts=None, target=None, located=None, targets=None, next_steps=True,
            without_model=None, none_because=None: (
                audit_drafts(
                    r,
                    drafts,
                    target or None,
                    located,
                    targets if isinstance(targets, dict) else None,
                    next_steps=str(next_steps).lower() not in ("false", "0", "no"),
                    without_model=without_model if isinstance(without_model, list) else None,
                    none_because=none_because if isinstance(none_because, list) else None,
                )
            ),
            description="vocab map in place + loader cross-checks for each draft",
        ),
        Action(
            "find-servers",
            lambda r, log="", args="", outside=None, server="": find_servers(
                r, str(log or ""), str(args or ""), outside=outside, server=str(server or ""),
                unknown_on_failure=True,
            ),
            description="running SGLang/vLLM servers: launch args, decode-log figures, metrics",
        ),
        Action(
            "spec-checks",
            _spec_checks,
            description="speculative-decoding configuration checks for each draft and server",
        ),
        Action(
            "vocab-check",
            lambda r, path, target=None: asdict(
                r.ask(calls.VocabCheck(path=path, target_path=target or None,
                                       text_config_paths=TEXT_CONFIG_PATHS))
            ),
            description="the d2t/t2d vocab-map check of one checkpoint",
        ),
        Action(
            "tensors",
            lambda r, path: asdict(r.ask(calls.ListTensors(path=path))),
            description="tensor listing of a checkpoint",
        ),
        Action(
            "classify-loader",
            _classify,
            description="d2t handling of engine source files, by ast",
        ),
        Action("glob", lambda r, patterns: {"results": r.glob(_as_list(patterns))}),
        Action(
            "find",
            lambda r, root, names=None, type=None, max_depth=None: r.find(
                root, _as_list(names), type, max_depth
            ),
        ),
        Action(
            "grep",
            lambda r, pattern, paths, context=0: r.grep(pattern, _as_list(paths), int(context)),
        ),
        Action(
            "read",
            lambda r, paths, max_bytes=1 << 20: {
                "files": r.read_text(_as_list(paths), int(max_bytes))
            },
        ),
        Action(
            "python",
            _python,
            writes=True,
            description="a small Python check run on the remote; set `result` (may hold "
            "`findings`); runs code, so it needs --allow-write",
            executes=True,
        ),
        Action(
            "run",
            _run,
            writes=True,
            description="a remote shell command; runs code, so it needs --allow-write; a "
            "${...} value in it is one quoted word",
            executes=True,
            shell_params=("command",),
        ),
    ]
}
