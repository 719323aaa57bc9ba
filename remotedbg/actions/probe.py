"""probe: live acceptance on a running server, as an action. Two round trips: the server scan
(remotedbg.actions.spec.find_servers, metrics off) and the probe itself
(remotedbg.agent.http_probe:probe), which sends the planned requests from the box to the server's
loopback port. Every verdict is then a pure function (remotedbg.analysis.acceptance)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from remotedbg.actions.logs import DEATH_LINES, read_tail
from remotedbg.actions.server_arg import (
    may_be_port,
    parse_server,
    the_one_server,
    the_server_named,
)
from remotedbg.actions.spec import find_servers
from remotedbg.analysis import acceptance
from remotedbg.analysis.engine_log import died_of
from remotedbg.contract import check_result, unknown, unknowns
from remotedbg.engines.knowledge import engine_labels, not_speculating
from remotedbg.engines.probe_prompts import Prompt, context_filler
from remotedbg.engines.profiles import engines_named, launch_profile
from remotedbg.errors import RemoteCommandError, RemotedbgError, UsageError
from remotedbg.remote import calls
from remotedbg.remote.primitives import Remote

SAMPLED_TEMPERATURE = 0.8
#: A whole probe's time on the box; requests past it are not sent.
DEFAULT_BUDGET_S = 120.0


@dataclasses.dataclass
class ProbePlan:
    requests: list[dict[str, Any]]

    @property
    def max_new_tokens(self) -> int:
        return sum(r["max_tokens"] for r in self.requests)

    @property
    def prompt_chars(self) -> int:
        return sum(len(r["prompt"]) for r in self.requests)

    def describe(self) -> str:
        """The load, stated before anything is sent."""
        return (
            f"{len(self.requests)} requests, one at a time, at most {self.max_new_tokens:,} new "
            f"tokens and ~{self.prompt_chars // 4:,} prompt tokens in all"
        )


#: Side-by-side comparisons, each on the first prompt of every kind: mode -> request settings.
COMPARISONS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "sampled": [("sampled", {"temperature": SAMPLED_TEMPERATURE})],
    "chat": [("chat-template", {"chat": True})],
    "thinking": [
        ("thinking-on", {"chat": True, "thinking": True}),
        ("thinking-off", {"chat": True, "thinking": False}),
    ],
    "long": [],  # a pair around the served draft's position limit: add_context_pair
}


def plan_requests(prompts: list[Prompt], max_tokens: int, compare: list[str]) -> ProbePlan:
    """Every prompt raw and greedy (temperature 0: the mode `greedy`); for each comparison
    asked, the first prompt of each kind once more per mode it names, so the modes sit side by
    side: greedy vs sampled, raw vs the chat template applied, thinking on vs off."""
    unknown = [c for c in compare if c not in COMPARISONS]
    if unknown:
        raise UsageError(
            f"--compare {','.join(unknown)}: expected {', '.join(COMPARISONS)} or none"
        )
    requests, seen = [], set()
    for prompt in prompts:
        first = prompt.category not in seen
        requests.append(_request(len(requests), prompt, max_tokens, "greedy", {}, first))
        if first:
            for comparison in compare:
                for mode, settings in COMPARISONS[comparison]:
                    requests.append(
                        _request(len(requests), prompt, max_tokens, mode, settings, True)
                    )
        seen.add(prompt.category)
    return ProbePlan(requests)


def _request(
    number: int, prompt: Prompt, max_tokens: int, mode: str, settings: dict, paired: bool
) -> dict:
    """`paired`: one of the requests the modes are compared over (the first prompt of a kind)."""
    return {"id": number, "category": prompt.category, "mode": mode, "prompt": prompt.text,
            "max_tokens": max_tokens, "temperature": 0.0, "paired": paired, **settings}  # fmt: skip


@dataclasses.dataclass
class ProbeTarget:
    """The server a probe talks to, found on the box before anything is sent."""

    server: dict | None  # the scan's entry; None for a bare --server PORT
    port: int
    draft_context: int | None = None  # the served draft's position limit, when read

    @property
    def network_inside(self) -> dict | None:
        """The server's container when its port may be in the container's own network
        namespace (the host cannot reach it; the probe goes in through the runtime's exec)."""
        container = (self.server or {}).get("container")
        if container and container.get("id") and container.get("own_network") is not False:
            return container
        return None


def locate_target(remote: Remote, wanted: str = "", draft_context: bool = False) -> ProbeTarget:
    """The server to probe (one round trip) and, for the long-context pair, the limit of the
    draft it serves (one more)."""
    scan = find_servers(remote, tail_lines=1, metrics=False, ask_runtime=False)
    chosen = choose_server(scan["servers"], wanted)
    port = int(wanted) if chosen is None else (chosen.get("spec") or {}).get("port")
    if not port:
        raise RemoteCommandError(f"server pid {chosen and chosen.get('pid')}: no port known")
    target = ProbeTarget(chosen, int(port))
    draft = ((chosen or {}).get("spec") or {}).get("draft_model")
    if draft_context and draft:
        config = remote.ask(calls.ReadConfigs(paths=[draft])).by_path.get(draft) or {}
        if "error" not in config:
            target.draft_context = launch_profile(chosen.get("engine")).draft_context_length(config)
    return target


def add_context_pair(plan: ProbePlan, limit: int | None, max_tokens: int) -> ProbePlan:
    """One prompt well inside the draft's position limit and one past it, the same text: a
    draft trained only to its limit accepts less past it (context-exceeds-draft in spec-audit)."""
    if not limit:
        return plan
    long = Prompt("long", "")
    for mode, tokens in (("within-draft-context", limit // 2), ("past-draft-context",
                                                                  limit + 1024)):  # fmt: skip
        prompt = Prompt(long.category, context_filler(tokens))
        plan.requests.append(_request(len(plan.requests), prompt, max_tokens, mode, {}, False))
        plan.requests[-1]["context_pair"] = True
    return plan


def choose_server(servers: list[dict], wanted: str) -> dict | None:
    """The server to probe: `wanted` names a PID or a port; without it, the only server. None
    when `wanted` is a port no scanned server owns (probe the port as it is)."""
    live = [s for s in servers if s.get("pid") is not None]
    number = parse_server(wanted)
    if number is not None:
        named = the_server_named(live, number)
        if named:
            return named
        if not may_be_port(number):
            raise UsageError(f"--server {wanted}: no {engines_named()} server has that PID")
        return None
    if not live:
        raise RemoteCommandError(
            f"no {engines_named()} server is running on the box (pass --server PORT to probe one "
            "the scan cannot see)"
        )
    def label(server: dict) -> str:
        port = (server.get("spec") or {}).get("port")
        return f"pid {server['pid']} ({server.get('engine')}, port {port})"

    return the_one_server(live, label)


def _ceiling(server: dict | None, answer: dict) -> int | None:
    spec = (server or {}).get("spec") or {}
    if isinstance(spec.get("ceiling"), int):
        return spec["ceiling"]
    steps = (answer.get("server_settings") or {}).get("speculative_num_steps")
    return steps + 1 if isinstance(steps, int) else None


def probe_server(
    remote: Remote,
    target: ProbeTarget,
    plan: ProbePlan,
    api_key: str = "",
    budget_s: float = DEFAULT_BUDGET_S,
) -> dict[str, Any]:
    chosen, port = target.server, target.port
    container = target.network_inside
    answer = (remote.inside(container) if container else remote).ask(
        calls.HttpProbe(
            port=port,
            engine=(chosen or {}).get("engine"),
            engine_labels=engine_labels(),
            # inside a container the host's PID names another process: found there by port
            pid=None if container else (chosen or {}).get("pid"),
            find_pid=bool(container),
            api_key=api_key or None,
            requests=plan.requests,
            budget_s=budget_s,
            request_timeout_s=min(60.0, budget_s),
        ),
        timeout=budget_s + 30,
    ).value
    if answer.get("error"):
        raise RemoteCommandError(f"{remote.session.name}: {answer['error']}")
    for measurement in answer["measurements"]:
        request = plan.requests[measurement["id"]]
        measurement["paired"] = request["paired"]
        measurement["context_pair"] = bool(request.get("context_pair"))
    ceiling = _ceiling(chosen, answer)
    spec = (chosen or {}).get("spec") or {}
    algorithm = spec.get("algorithm") or (answer.get("server_settings") or {}).get(
        "speculative_algorithm"
    )
    summary = acceptance.summarize(answer["engine"], ceiling, answer["measurements"], algorithm)
    checks = acceptance.run_checks(summary, answer["spec_off"])
    checks.append(acceptance.long_context_drop(summary, target.draft_context))
    failed = any(not m.get("ok") for m in answer["measurements"])
    died = engine_death(remote, chosen) if failed else None
    if died:  # the requests failed because the engine died: say of what, from its own log
        why = f"the server died: {died['exception']} (its log {died['log']})"
        checks.append(unknown(check_result("engine-alive"), why))
    return {
        "server": {
            "pid": (chosen or {}).get("pid"),
            "port": port,
            "engine": answer["engine"],
            "version": answer.get("version"),
            "model": answer.get("model"),
            "algorithm": algorithm,
            "num_steps": spec.get("num_steps"),
            "ceiling": summary.ceiling,
            "draft_context": target.draft_context,
            "api_key_used": answer.get("api_key_used"),
        },
        "load": {"requests": len(plan.requests), "max_new_tokens": plan.max_new_tokens},
        "spec_off": answer["spec_off"],
        # why, from the launch line, when the scan read it (not for a bare --server PORT)
        "not_speculating": not_speculating(answer["engine"], spec)
        if answer["spec_off"] and chosen
        else "",
        "summary": dataclasses.asdict(summary),
        "measurements": answer["measurements"],
        "checks": checks,
        "findings": [f for check in checks for f in check["findings"]],
        "inconclusive": unknowns(checks),
        "engine_figure": answer.get("engine_figure"),
        "died_of": died,
        "notes": answer.get("notes", []),
    }


def engine_death(remote: Remote, server: dict | None) -> dict | None:
    """How the server died, from the end of its own log ({"exception", "log"}), or None."""
    path = ((server or {}).get("log") or {}).get("path")
    if not path:
        return None
    try:
        tail = read_tail(remote, {"log": path}, DEATH_LINES)
    except RemotedbgError:
        return None
    died = died_of(tail.get("lines") or [])
    return dict(died, log=path) if died else None


def probe_plan(prompts: str, per_category: int, max_tokens: int, compare: str) -> ProbePlan:
    """The requests a probe sends: `prompts` 'builtin' or a JSONL file of this machine,
    `compare` the comparisons asked (comma-separated, or none); `long` is left to each host
    (its pair depends on the served draft: prepare_probe)."""
    from pathlib import Path

    from remotedbg.engines.probe_prompts import builtin_prompts, read_prompt_file

    chosen = (
        builtin_prompts(per_category)
        if prompts == "builtin"
        else read_prompt_file(Path(prompts).expanduser(), per_category)
    )
    return plan_requests(chosen, max_tokens, compared(compare))


def compared(compare: str) -> list[str]:
    """The comparisons of a --compare value."""
    return [c for c in compare.split(",") if c and c != "none"]


def prepare_probe(
    remote: Remote, server: str, plan: ProbePlan, long: bool, max_tokens: int
) -> tuple[ProbeTarget, ProbePlan]:
    """The server to probe on this box, and the plan with its draft-context pair (`long`) when
    the served draft's limit could be read. The plan given is left as it is (a fleet shares
    it)."""
    target = locate_target(remote, server, long)
    mine = add_context_pair(copy.deepcopy(plan), target.draft_context, max_tokens)
    return target, mine


def probe_host(
    remote: Remote,
    server: str,
    plan: ProbePlan,
    long: bool,
    max_tokens: int,
    api_key: str,
    budget_s: float,
) -> dict[str, Any]:
    """One host of a fleet: its server probed with its own plan."""
    target, mine = prepare_probe(remote, server, plan, long, max_tokens)
    return probe_server(remote, target, mine, api_key, budget_s)
