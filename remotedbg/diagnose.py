"""diagnose: from "acceptance is low" to the root cause, in one session. Finds the server (the
one named, or the only one), runs spec-audit scoped to what it serves (the install it imports,
its draft, its target, its launch line and log), then a short greedy probe of it within a
stated budget, and ranks every finding as a candidate cause (remotedbg.analysis.diagnosis)."""

from __future__ import annotations

from typing import Any

from remotedbg.actions.probe import (
    ProbeTarget,
    choose_server,
    plan_requests,
    probe_server,
)
from remotedbg.actions.spec import find_servers
from remotedbg.analysis.diagnosis import Diagnosis, diagnose, measured_figures
from remotedbg.engines.probe_prompts import builtin_prompts
from remotedbg.errors import RemotedbgError
from remotedbg.playbook import RunOutcome, bind_variables, find_playbook, load_playbook
from remotedbg.playbook import run_playbook as run_steps
from remotedbg.remote.primitives import Remote

#: The probe diagnose sends: one greedy prompt of each kind, short answers.
PROBE_PER_KIND = 1
PROBE_MAX_TOKENS = 48
DEFAULT_BUDGET_S = 60.0
#: Variables that name what to diagnose without a running server.
NAMING = ("draft", "args", "log")


def pick_server(remote: Remote, wanted: str, given: dict[str, str]) -> dict | None:
    """The server diagnosed: `wanted` (PID or port), else the only one; None when the user
    named a draft, launch line or log instead and none runs."""
    scan = find_servers(remote, tail_lines=1, metrics=False, ask_runtime=False)
    live = [s for s in scan["servers"] if s.get("pid") is not None]
    if not wanted and any(given.get(k) for k in NAMING):
        # what the user named is diagnosed: the server that serves the named draft, else none
        # (another server on the box is not what was asked about)
        serving = [s for s in live if given.get("draft")
                   and (s.get("spec") or {}).get("draft_model") == given["draft"]]  # fmt: skip
        return serving[0] if len(serving) == 1 and not given.get("args") else None
    return choose_server(scan["servers"], wanted)


def scoped_variables(server: dict | None, given: dict[str, str]) -> dict[str, str]:
    """spec-audit's variables: the server's own draft and target unless the user named them,
    and the server itself (by PID): another server on the box, even one serving the same
    draft, is listed, never judged as this one."""
    spec = (server or {}).get("spec") or {}
    out = dict(given)
    if (server or {}).get("pid") is not None and not out.get("server"):
        out["server"] = str(server["pid"])
    if spec.get("draft_model") and not out.get("draft"):
        out["draft"] = spec["draft_model"]
    if spec.get("target_model") and not out.get("target"):
        out["target"] = spec["target_model"]
    return out


def run_probe(remote: Remote, server: dict, budget_s: float) -> tuple[dict | None, str | None]:
    """A short greedy probe of the server: (result, None), or (None, why it could not run)."""
    port = (server.get("spec") or {}).get("port")
    if not port:
        return None, f"server pid {server.get('pid')}: no port known, nothing was sent"
    plan = plan_requests(builtin_prompts(PROBE_PER_KIND), PROBE_MAX_TOKENS, [])
    try:
        return probe_server(remote, ProbeTarget(server, int(port)), plan, "", budget_s), None
    except RemotedbgError as error:
        return None, f"probe: {error}"


def diagnose_host(
    remote: Remote,
    wanted: str = "",
    given: dict[str, str] | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
    probe: bool = True,
) -> dict[str, Any]:
    given = dict(given or {})
    server = pick_server(remote, wanted, given)
    playbook = load_playbook(find_playbook("spec-audit"))
    outcome: RunOutcome = run_steps(
        playbook, remote, bind_variables(playbook, scoped_variables(server, given))
    )
    inconclusive = list(outcome.inconclusive)
    probed: dict | None = None
    if not probe:
        probe_note: str | None = "not sent (--no-probe)"
    elif server is None:
        probe_note = "no running server to probe"
    else:
        probed, probe_note = run_probe(remote, server, budget_s)
        inconclusive += [probe_note] if probe_note else probed.get("inconclusive") or []
    judged = _server_row(outcome, server)
    findings = list(outcome.findings) + list((probed or {}).get("findings") or [])
    spec_rows = (outcome.results.get("spec") or {}).get("spec") or []
    drafts = outcome.section("drafts").get("drafts") or []
    found: Diagnosis = diagnose(
        findings, spec_rows, drafts, inconclusive, measured_figures(judged, probed)
    )
    return {
        "server": _server_summary(
            dict(judged, taken_because=server.get("taken_because")) if judged and server
            else judged or server
        ),
        "diagnosis": found,
        "outcome": outcome,
        "probe": probed,
        "probe_note": probe_note,
        "engines": _engines_of(outcome, server),
    }


def _engines_of(outcome: RunOutcome, server: dict | None) -> list[dict[str, Any]]:
    """The install the diagnosed server imports (another user's or another container's running
    install is not this server's); without a server, every install the audit judged with."""
    engines = outcome.section("engines").get("engines") or []
    pid = (server or {}).get("pid")
    if pid is not None:
        engines = [e for e in engines if pid in (e.get("running") or [])]
    return [{k: e.get(k) for k in ("name", "version", "path", "running")} for e in engines]


def _server_row(outcome: RunOutcome, server: dict | None) -> dict | None:
    """The chosen server as spec-audit read it (its log's figures included)."""
    if server is None:
        return None
    for row in outcome.section("servers").get("servers") or []:
        if row.get("pid") == server.get("pid"):
            return row
    return server


def _server_summary(server: dict | None) -> dict[str, Any] | None:
    if server is None:
        return None
    spec = server.get("spec") or {}
    return {
        "pid": server.get("pid"),
        "engine": server.get("engine"),
        "port": spec.get("port"),
        "algorithm": spec.get("algorithm"),
        "draft": spec.get("draft_model"),
        "target": spec.get("target_model"),
        "ceiling": spec.get("ceiling"),
        "taken_because": server.get("taken_because"),
    }
