"""Playbooks: YAML files of named steps that call built-in actions, chained by `${...}`.

    name: vocab-audit
    description: ...
    variables:
      draft: {default: "", description: "..."}
    steps:
      - id: engines
        action: locate-engines
        with: {roots: "${roots}"}
      - id: audit
        action: audit-drafts
        with: {located: "${steps.engines}"}
    report: {engines: engines, drafts: audit}

`report` names the step behind each section of the rendered report (REPORT_SECTIONS), so the
renderers and the fleet never depend on a step's id.

A value that is exactly `${path}` is replaced by the object at `path` (a variable, or
`steps.<id>.<key>...`); `${...}` inside a longer string is interpolated as text.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import remotedbg
from remotedbg.actions.registry import ACTIONS
from remotedbg.contract import verdict
from remotedbg.errors import ConnectionFailed, Interrupted, RemotedbgError, UsageError
from remotedbg.remote.primitives import Remote

USER_DIR = Path("~/.config/remotedbg/playbooks")
_REFERENCE = re.compile(r"\$\{([A-Za-z0-9_.-]+)\}")
_TOP_KEYS = {"name", "description", "variables", "steps", "report"}
_STEP_KEYS = {"id", "action", "with", "description", "writes"}


# report section -> (the action whose result it shows, what it is)
REPORT_SECTIONS: dict[str, tuple[str, str]] = {
    "engines": ("locate-engines", "engine installs: report provenance, fleet version facts"),
    "locate": ("locate-engines", "the draft-model file table, as locate-eagle prints it"),
    "drafts": ("audit-drafts", "one line per audited draft, fleet fingerprints"),
    "servers": ("find-servers", "one line per server, fleet launch-flag differences"),
}


class PlaybookError(UsageError):
    """A playbook that is not valid: `file:line: what was expected`."""


@dataclass
class Step:
    id: str
    action: str
    params: dict[str, Any]
    description: str = ""
    writes: bool = False
    line: int = 0


@dataclass
class Playbook:
    name: str
    description: str
    variables: dict[str, dict[str, Any]]
    steps: list[Step]
    path: Path
    report: dict[str, str] = field(default_factory=dict)  # section -> step id


# -- finding and loading ------------------------------------------------------------------------
def search_path(extra: list[str] | None = None) -> list[Path]:
    """Where playbooks are looked up, first match wins: --playbook-path, the user's folder,
    then the ones shipped with remotedbg."""
    places = [Path(p).expanduser() for p in extra or []]
    places.append(Path(os.environ.get("REMOTEDBG_PLAYBOOKS", str(USER_DIR))).expanduser())
    shipped = _shipped_dir()
    return places + ([shipped] if shipped else [])


def _shipped_dir() -> Path | None:
    package = Path(remotedbg.__file__).resolve().parent
    # installed: remotedbg/playbooks (package data); source checkout: the top-level playbooks/
    shipped = [package / "playbooks", package.parent / "playbooks"]
    return next((place for place in shipped if place.is_dir()), None)


def _others_may_write(place: Path) -> str | None:
    """Why playbooks in `place` could be someone else's (another user owns it, or others may
    write to it), else None: a playbook runs with the user's rights on their boxes."""
    try:
        info = place.stat()
    except OSError:
        return None
    if info.st_uid not in (os.getuid(), 0):
        return f"{place} belongs to another user"
    if info.st_mode & 0o022:
        return f"{place} is writable by other users"
    return None


def _found(extra: list[str] | None) -> tuple[dict[str, Path], dict[str, str], set[str]]:
    """The playbooks by name; why the ones left out were (a folder others may write to: its
    playbooks are ignored; one of the user's own with a shipped playbook's name, which only
    its path may run); and the names such a playbook of the user's shadows."""
    shipped_dir = _shipped_dir()
    shipped = {p.stem: p for p in _yaml_in(shipped_dir)} if shipped_dir else {}
    found: dict[str, Path] = {}
    refused: dict[str, str] = {}
    shadowing: dict[str, str] = {}
    for place in search_path(extra):
        if place == shipped_dir or not place.is_dir():
            continue
        why = _others_may_write(place)
        for path in _yaml_in(place):
            if why:
                refused.setdefault(path.stem, f"{why}: its playbooks are not run by name")
            elif path.stem in shipped:
                shadowing.setdefault(path.stem, f"{path} has the name of a shipped playbook; run "
                                     f"it by its path (remotedbg playbook {path})")  # fmt: skip
            else:
                found.setdefault(path.stem, path)
    for name, path in shipped.items():
        found.setdefault(name, path)
    return found, {**refused, **shadowing}, set(shadowing)


def _yaml_in(place: Path) -> list[Path]:
    return sorted(place.glob("*.yaml")) + sorted(place.glob("*.yml"))


def list_playbooks(extra: list[str] | None = None) -> dict[str, Path]:
    return _found(extra)[0]


def find_playbook(name: str, extra: list[str] | None = None) -> Path:
    if name.endswith((".yaml", ".yml")) and Path(name).is_file():
        return Path(name)
    available, refused, shadowed = _found(extra)
    if name in shadowed or (name in refused and name not in available):
        raise UsageError(f"playbook {name!r}: {refused[name]}")
    if name not in available:
        raise UsageError(f"no playbook {name!r}; available: {', '.join(sorted(available))}")
    return available[name]


def _fail(path: Path, node: yaml.Node | None, message: str) -> PlaybookError:
    line = node.start_mark.line + 1 if node is not None else 1
    return PlaybookError(f"{path}:{line}: {message}")


def _mapping(path: Path, node: yaml.Node, what: str) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        raise _fail(path, node, f"expected a mapping for {what}")
    out = {}
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            raise _fail(path, key, f"expected a plain key in {what}")
        out[key.value] = value
    return out


def _reject_unknown_keys(
    path: Path, fields: dict[str, yaml.Node], allowed: set[str], what: str
) -> None:
    for key, node in fields.items():
        if key not in allowed:
            raise _fail(
                path, node, f"unknown {what} {key!r}; expected one of {', '.join(sorted(allowed))}"
            )


def _plain(node: yaml.Node) -> Any:
    """The Python value of a composed node (an empty `with:` is None, not a parse error). A
    tag the safe loader does not build (`!!python/object:...`) is the playbook's error, at
    its line, never a traceback."""
    try:
        return yaml.SafeLoader("").construct_document(node)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or node.start_mark
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise PlaybookError(f"{mark.name}:{mark.line + 1}: {problem}") from None


def _compose(path: Path) -> yaml.Node:
    """The playbook's YAML as nodes (they keep the line numbers the errors cite)."""
    try:
        text = path.read_text(encoding="utf-8")
        loader = yaml.SafeLoader(text)
        loader.name = str(path)  # the marks name the file: _plain's errors cite it
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
    except OSError as exc:
        raise PlaybookError(f"{path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        raise PlaybookError(
            f"{path}:{line}: not valid YAML: {getattr(exc, 'problem', exc)}"
        ) from None
    if root is None:
        raise PlaybookError(f"{path}:1: empty playbook")
    return root


def _load_name(path: Path, node: yaml.Node) -> str:
    name = _plain(node)
    if not isinstance(name, str) or not name:
        raise _fail(path, node, "expected a name (text)")
    return name


def _load_variables(path: Path, node: yaml.Node) -> dict[str, dict[str, Any]]:
    """`variables:`, each as {"default": ..., "description": ...} (a bare value is the
    default)."""
    variables: dict[str, dict[str, Any]] = {}
    for var, value_node in _mapping(path, node, "variables").items():
        value = _plain(value_node)
        variables[var] = (
            value
            if isinstance(value, dict) and "default" in value
            else {"default": value, "description": ""}
        )
    return variables


def _check_parameters(path: Path, node: yaml.Node | None, action: str, params: Any) -> None:
    if not isinstance(params, dict):
        raise _fail(path, node, "expected a mapping of parameters for 'with'")
    for key in params:
        if key not in ACTIONS[action].params:
            raise _fail(
                path,
                node,
                f"action {action!r} takes no parameter "
                f"{key!r}; expected {', '.join(ACTIONS[action].params)}",
            )


def _check_references(
    path: Path, node: yaml.Node | None, params: dict, variables: dict, steps: list[Step]
) -> None:
    """Every ${...} in a step's parameters names a variable or an earlier step."""
    for ref in _references(params):
        head = ref.split(".")[0]
        known = head in variables or (
            head == "steps"
            and ref.split(".")[1:2]
            and any(s.id == ref.split(".")[1] for s in steps)
        )
        if not known:
            raise _fail(path, node, f"${{{ref}}} names no variable or earlier step")


def _load_step(path: Path, node: yaml.Node, variables: dict, steps: list[Step]) -> Step:
    """One step, checked against the actions and the variables and steps before it."""
    fields = _mapping(path, node, "a step")
    _reject_unknown_keys(path, fields, _STEP_KEYS, "step key")
    for key in ("id", "action"):
        if key not in fields:
            raise _fail(path, node, f"step is missing {key!r}")
    step_id, action = _plain(fields["id"]), _plain(fields["action"])
    if action not in ACTIONS:
        raise _fail(
            path,
            fields["action"],
            f"unknown action {action!r}; expected one of {', '.join(sorted(ACTIONS))}",
        )
    if any(s.id == step_id for s in steps):
        raise _fail(path, fields["id"], f"duplicate step id {step_id!r}")
    params = _plain(fields["with"]) if "with" in fields else {}
    _check_parameters(path, fields.get("with"), action, params)
    _check_references(path, fields.get("with"), params, variables, steps)
    writes = _plain(fields["writes"]) if "writes" in fields else ACTIONS[action].writes
    if ACTIONS[action].executes and not writes:
        raise _fail(path, fields["writes"], f"a {action} step runs code on the box, which may "
                    "write whatever it says: it cannot be `writes: false`")  # fmt: skip
    return Step(
        str(step_id),
        action,
        params,
        str(_plain(fields.get("description", yaml.ScalarNode("tag:yaml.org,2002:str", ""))) or ""),
        bool(writes),
        node.start_mark.line + 1,
    )


def _load_steps(path: Path, node: yaml.Node, variables: dict) -> list[Step]:
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise _fail(path, node, "expected a list of steps")
    steps: list[Step] = []
    for step_node in node.value:
        steps.append(_load_step(path, step_node, variables, steps))
    return steps


def load_playbook(path: Path) -> Playbook:
    root = _compose(path)
    top = _mapping(path, root, "the playbook")
    _reject_unknown_keys(path, top, _TOP_KEYS, "key")
    for key in ("name", "steps"):
        if key not in top:
            raise _fail(path, root, f"missing {key!r}")
    name = _load_name(path, top["name"])
    variables = _load_variables(path, top["variables"]) if "variables" in top else {}
    steps = _load_steps(path, top["steps"], variables)
    description = _plain(top["description"]) if "description" in top else ""
    report = _report_sections(path, top["report"], steps) if "report" in top else {}
    return Playbook(name, str(description or ""), variables, steps, path, report)


def _report_sections(path: Path, node: yaml.Node, steps: list[Step]) -> dict[str, str]:
    """`report: {section: step-id}`, each section shown from a step running the right action."""
    sections = {}
    for section, value in _mapping(path, node, "report").items():
        if section not in REPORT_SECTIONS:
            raise _fail(
                path,
                node,
                f"unknown report section {section!r}; expected one of {', '.join(REPORT_SECTIONS)}",
            )
        step_id = _plain(value)
        step = next((s for s in steps if s.id == step_id), None)
        if step is None:
            raise _fail(path, value, f"report section {section!r} names no step {step_id!r}")
        wanted = REPORT_SECTIONS[section][0]
        if step.action != wanted:
            raise _fail(
                path,
                value,
                f"report section {section!r} shows a {wanted} result; step {step_id!r} "
                f"runs {step.action}",
            )
        sections[section] = str(step_id)
    return sections


def _references(value: Any) -> list[str]:
    if isinstance(value, str):
        return _REFERENCE.findall(value)
    if isinstance(value, dict):
        return [r for v in value.values() for r in _references(v)]
    if isinstance(value, list):
        return [r for v in value for r in _references(v)]
    return []


# -- running --------------------------------------------------------------------------------
def _lookup(scope: dict[str, Any], ref: str) -> Any:
    value: Any = scope
    for part in ref.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        else:
            return None
    return value


def resolve(value: Any, scope: dict[str, Any], quote: Callable[[str], str] | None = None) -> Any:
    """`${name}` references replaced by their values; with `quote` (a shell command), every
    value interpolated into a string is quoted as one word."""
    if isinstance(value, str):
        whole = _REFERENCE.fullmatch(value)
        if whole and quote is None:
            return _lookup(scope, whole.group(1))

        def text(match: re.Match) -> str:
            found = str(_lookup(scope, match.group(1)) or "")
            return quote(found) if quote else found

        return _REFERENCE.sub(text, value)
    if isinstance(value, dict):
        return {k: resolve(v, scope, quote) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, scope, quote) for v in value]
    return value


def bind_variables(playbook: Playbook, given: dict[str, str]) -> dict[str, Any]:
    unknown = set(given) - set(playbook.variables)
    if unknown:
        raise UsageError(
            f"playbook {playbook.name} has no variable {', '.join(sorted(unknown))}"
            f"; it takes {', '.join(playbook.variables) or 'none'}"
        )
    values = {}
    for name, spec in playbook.variables.items():
        default = spec.get("default")
        if name in given:
            raw = given[name]
            values[name] = [v for v in raw.split(",") if v] if isinstance(default, list) else raw
        else:
            values[name] = default
    return values


@dataclass
class StepRecord:
    id: str
    action: str
    status: str  # ok | failed | skipped
    duration_ms: float
    error: str | None = None


@dataclass
class RunOutcome:
    playbook: str
    host: str
    verdict: str
    headline: str
    findings: list[dict]
    steps: list[StepRecord]
    results: dict[str, Any]
    inconclusive: list[str] = field(default_factory=list)
    round_trips: int = 0
    report: dict[str, str] = field(default_factory=dict)  # section -> step id

    def section(self, name: str) -> dict[str, Any]:
        """The result behind a declared report section; {} when the playbook declares none or
        its step failed."""
        step_id = self.report.get(name)
        result = self.results.get(step_id) if step_id else None
        return result if isinstance(result, dict) else {}


ProgressHook = Callable[[Step, str], None]  # (step, "start" | "ok" | "failed" | "skipped")


def run_playbook(
    playbook: Playbook,
    remote: Remote,
    variables: dict[str, Any],
    allow_write: bool = False,
    progress: ProgressHook | None = None,
) -> RunOutcome:
    writing = [s.id for s in playbook.steps if s.writes]
    if writing and not allow_write:
        raise UsageError(
            f"playbook {playbook.name}: step(s) {', '.join(writing)} may write on "
            "the remote; re-run with --allow-write if that is intended"
        )
    scope: dict[str, Any] = dict(variables)
    scope["steps"] = {}
    records, findings, inconclusive = [], [], []
    commands_before = remote.session.commands_run
    for step in playbook.steps:
        if progress:
            progress(step, "start")
        start = time.monotonic()
        params = resolve(step.params, scope)
        for name in ACTIONS[step.action].shell_params:
            if isinstance(step.params.get(name), str):  # a value is data, never shell syntax
                params[name] = resolve(step.params[name], scope, shlex.quote)
        try:
            result = ACTIONS[step.action].run(remote, **params)
            status, error = "ok", None
        except (ConnectionFailed, Interrupted):
            raise  # Ctrl-C stops the playbook; it is not one step's failure
        except RemotedbgError as exc:
            result, status, error = None, "failed", str(exc)
            inconclusive.append(f"step {step.id} failed: {exc}")
        scope["steps"][step.id] = result
        if isinstance(result, dict):
            findings += result.get("findings") or []
            reasons = result.get("inconclusive") or []  # a list of reasons, never joined
            # (a playbook's own `python` step may set one sentence)
            inconclusive += [reasons] if isinstance(reasons, str) else [str(r) for r in reasons]
        records.append(
            StepRecord(
                step.id, step.action, status, round((time.monotonic() - start) * 1000, 1), error
            )
        )
        if progress:
            progress(step, status)
    decided, headline = verdict(findings, inconclusive)
    return RunOutcome(
        playbook.name,
        remote.session.name,
        decided,
        headline,
        findings,
        records,
        scope["steps"],
        inconclusive,
        remote.session.commands_run - commands_before,
        dict(playbook.report),
    )
