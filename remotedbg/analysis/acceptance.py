"""Live acceptance, measured by the probe: per request, per kind of prompt, per draft position,
and what the shape says. Pure: takes the agent's measurements, returns figures and check results.

A measurement (one request, remotedbg.agent.http_probe) carries the engine's own counters for
that request: `verify_steps` (SGLang's spec_verify_ct; vLLM's num_drafts delta),
`completion_tokens`, `accepted` (draft tokens accepted), `drafted` (draft tokens proposed,
when known) and `accepted_per_position` (how many verify steps accepted the token at each
draft position).
Accept length = tokens produced per verify step, bonus token included: completion_tokens /
verify_steps for SGLang, 1 + accepted / verify_steps for vLLM; the ceiling is num_steps + 1.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from remotedbg.agent.findings import ERROR, WARNING, finding
from remotedbg.analysis.spec_checks import LOW_ACCEPT_RATIO
from remotedbg.contract import add_finding, check_result, not_applicable, unknown
from remotedbg.engines.knowledge import drafts_without_a_model, low_acceptance
from remotedbg.engines.profiles import launch_profile

#: Position-0 acceptance below this: the head proposes nothing the target agrees with.
POSITION0_COLLAPSE = 0.1
#: A category whose accept length gains (above 1) are below this share of the best category's.
DOMAIN_GAP_SHARE = 0.5
#: ...and at least this many tokens per step behind it, so noise on short runs is not a gap.
DOMAIN_GAP_TOKENS = 0.5


@dataclass
class Group:
    """Sums over some requests (all, one category, one mode)."""

    requests: int = 0
    completion_tokens: int = 0
    verify_steps: int = 0
    accepted: int = 0
    drafted: int = 0
    prompt_tokens: int = 0
    seconds: float = 0.0
    no_drafts: int = 0  # requests the method proposed nothing for (an n-gram found no match)
    per_request: list[float] = field(default_factory=list)

    def add(self, m: dict[str, Any], engine: str) -> None:
        self.requests += 1
        self.no_drafts += not m.get("verify_steps")
        self.completion_tokens += int(m.get("completion_tokens") or 0)
        self.verify_steps += int(m.get("verify_steps") or 0)
        self.accepted += int(m.get("accepted") or 0)
        self.drafted += int(m.get("drafted") or 0)
        self.prompt_tokens += int(m.get("prompt_tokens") or 0)
        self.seconds += float(m.get("latency_s") or 0.0)
        one = accept_length(engine, m)
        if one is not None:
            self.per_request.append(one)

    def figures(self, engine: str) -> dict[str, Any]:
        length = accept_length(engine, vars(self))
        spread = self.per_request
        return {
            "requests": self.requests,
            "accept_length": length,
            "min": round(min(spread), 3) if spread else None,
            "max": round(max(spread), 3) if spread else None,
            "stdev": round(statistics.pstdev(spread), 3) if len(spread) > 1 else 0.0,
            "completion_tokens": self.completion_tokens,
            "prompt_tokens": self.prompt_tokens,
            "verify_steps": self.verify_steps,
            "accepted": self.accepted,
            "drafted": self.drafted,
            "no_drafts": self.no_drafts,
            "tokens_per_s": round(self.completion_tokens / self.seconds, 1)
            if self.seconds > 0
            else None,
        }


def accept_length(engine: str | None, counts: dict[str, Any]) -> float | None:
    return launch_profile(engine).accept_length(counts)


def per_position(measurements: list[dict[str, Any]], positions: int = 0) -> list[float] | None:
    """Share of verify steps that accepted the draft token at each position, over all requests
    that reported per-position counts. A histogram only reaches the largest count seen, so the
    `positions` drafted (ceiling - 1) are filled in: a position no step reached accepted 0."""
    counted = [m for m in measurements if m.get("accepted_per_position") is not None]
    steps = sum(int(m.get("verify_steps") or 0) for m in counted)
    if not counted or steps <= 0:
        return None
    width = max([positions] + [len(m["accepted_per_position"]) for m in counted])
    totals = [0] * width
    for m in counted:
        for index, count in enumerate(m["accepted_per_position"]):
            totals[index] += int(count)
    return [round(t / steps, 3) for t in totals]


@dataclass
class ProbeSummary:
    engine: str
    ceiling: int | None
    overall: dict[str, Any]
    by_category: dict[str, dict[str, Any]]
    by_mode: dict[str, dict[str, Any]]
    positions: list[float] | None
    failed: list[dict[str, Any]]
    other_traffic_tokens: int = 0
    algorithm: str | None = None


def summarize(
    engine: str,
    ceiling: int | None,
    measurements: list[dict[str, Any]],
    algorithm: str | None = None,
) -> ProbeSummary:
    """Every answered request with draft counts is counted, those the method drafted nothing
    for too (verify_steps 0): they produced tokens, and a summary without them contradicts the
    engine's totals."""
    answered = [m for m in measurements if m.get("ok") and m.get("verify_steps") is not None]
    overall, categories, modes = Group(), {}, {}
    for m in answered:
        overall.add(m, engine)
        # kinds of prompt compared like with like (raw, greedy); modes over the same prompts
        if m["mode"] == "greedy" and not m.get("context_pair"):
            categories.setdefault(m["category"], Group()).add(m, engine)
        if m.get("paired") or m.get("context_pair"):
            modes.setdefault(m["mode"], Group()).add(m, engine)
    return ProbeSummary(
        engine,
        ceiling,
        overall.figures(engine),
        {name: g.figures(engine) for name, g in categories.items()},
        {name: g.figures(engine) for name, g in modes.items()},
        per_position(answered, (ceiling or 1) - 1),
        [m for m in measurements if not m.get("ok")],
        sum(int(m.get("other_tokens") or 0) for m in measurements),
        algorithm,
    )


# ------------------------------------------------------------------------------------ checks
def _no_figures(result: dict[str, Any], summary: ProbeSummary, spec_off: bool) -> dict[str, Any]:
    if spec_off:
        return not_applicable(
            result, "speculative decoding is off on this server: its answers carry no draft counts"
        )
    if summary.failed:
        return unknown(result, f"no request answered ({summary.failed[0].get('error')})")
    return unknown(result, "no answer carried speculative-decoding counts")


def accept_length_low(summary: ProbeSummary, spec_off: bool = False) -> dict[str, Any]:
    result = check_result("accept-length-low")
    observed = summary.overall.get("accept_length")
    if observed is None:
        return _no_figures(result, summary, spec_off)
    if not summary.ceiling:
        return unknown(result, f"accept length {observed} measured; the number of draft steps "
                       "is unknown, so its ceiling is too")  # fmt: skip
    ratio = observed / summary.ceiling
    result["facts"] = {"observed": observed, "ceiling": summary.ceiling, "ratio": round(ratio, 3)}
    if ratio >= LOW_ACCEPT_RATIO:
        return result
    severity, why = low_acceptance(summary.algorithm)
    return add_finding(
        result,
        finding(
            "accept-length-low",
            severity,
            f"accept length {observed:.2f} of a possible {summary.ceiling}, measured live",
            f"{measured_steps(summary)}: {observed:.2f} per step, {100 * ratio:.0f}% of the "
            f"ceiling {summary.ceiling}. Speculation costs more than it saves."
            + (f" {why}" if severity != ERROR else ""),
            {"measured": summary.overall, "ceiling": summary.ceiling},
        ),
    )


def measured_steps(summary: ProbeSummary) -> str:
    """What the accept length was computed from, in the engine's own terms: SGLang's tokens
    per verify step; vLLM's 1 + accepted / drafts, over the steps that drafted."""
    overall = summary.overall
    requests, steps = overall["requests"], overall["verify_steps"]
    tokens = overall["completion_tokens"]
    text = f"Over {requests} probe requests the server produced {tokens} tokens"
    if launch_profile(summary.engine).counts_accepted_drafts:
        text += (f"; in the {steps} verify steps that had drafts it accepted "
                 f"{overall['accepted']} of {overall['drafted']} draft tokens")  # fmt: skip
    else:
        text += f" in {steps} verify steps"
    if overall.get("no_drafts"):
        text += f" ({overall['no_drafts']} of the {requests} requests got no draft at all)"
    return text


def _no_head(result: dict[str, Any], summary: ProbeSummary) -> dict[str, Any] | None:
    """Not applicable when the method drafts without a model: there is no head to judge."""
    if drafts_without_a_model(summary.algorithm):
        return not_applicable(result, f"{summary.algorithm} drafts without a model: there is "
                              "no head whose acceptance could be judged")  # fmt: skip
    return None


def position0_collapse(summary: ProbeSummary, spec_off: bool = False) -> dict[str, Any]:
    result = check_result("accept-position0-collapse")
    if (headless := _no_head(result, summary)) is not None:
        return headless
    if summary.positions is None:
        observed = summary.overall.get("accept_length")
        if observed is None:
            return _no_figures(result, summary, spec_off)
        # no per-position counts (SGLang before 0.5.14, vLLM without /metrics): a step accepts
        # at most ceiling - 1 drafts, so position 0 is accepted in at least (L - 1) / (c - 1)
        if summary.ceiling and summary.ceiling > 1:
            bound = (observed - 1) / (summary.ceiling - 1)
            if bound >= POSITION0_COLLAPSE:
                result["facts"] = {"position0_at_least": round(bound, 3), "from": "accept length"}
                return result
        return unknown(result, "the server reports no per-position counts")
    first = summary.positions[0] if summary.positions else 0.0
    result["facts"] = {"per_position": summary.positions}
    if first >= POSITION0_COLLAPSE:
        return result
    return add_finding(
        result,
        finding(
            "accept-position0-collapse",
            ERROR,
            f"the first draft token is accepted in {100 * first:.1f}% of verify steps",
            "Acceptance at draft position 0 near zero means the head proposes nothing the "
            "target agrees with, whatever the prompt: a broken head, not a weak one. Causes: "
            "the d2t/t2d vocab map (remotedbg playbook vocab-audit), the wrong "
            "--speculative-algorithm, hidden-state layers other than in training, or weights "
            "the loader skipped (remotedbg playbook spec-audit).",
            {"per_position": summary.positions, "verify_steps": summary.overall["verify_steps"]},
        ),
    )


def domain_gap(summary: ProbeSummary, spec_off: bool = False) -> dict[str, Any]:
    result = check_result("accept-domain-gap")
    if (headless := _no_head(result, summary)) is not None:
        return headless
    lengths = {
        name: figures["accept_length"]
        for name, figures in summary.by_category.items()
        if figures.get("accept_length") is not None
    }
    if len(lengths) < 2:
        if summary.overall.get("accept_length") is None:
            return _no_figures(result, summary, spec_off)
        return not_applicable(result, "fewer than two kinds of prompt were measured")
    best_name = max(lengths, key=lambda name: lengths[name])
    best = lengths[best_name]
    result["facts"] = {"by_category": lengths}
    for name, length in sorted(lengths.items(), key=lambda kv: kv[1]):
        gain, best_gain = length - 1, best - 1
        if best_gain <= 0 or best - length < DOMAIN_GAP_TOKENS:
            continue
        if gain < DOMAIN_GAP_SHARE * best_gain:
            add_finding(
                result,
                finding(
                    "accept-domain-gap",
                    WARNING,
                    f"{name} prompts accept {length:.2f} per step against {best:.2f} on "
                    f"{best_name}",
                    f"The draft gains {gain:.2f} tokens per step on {name} prompts and "
                    f"{best_gain:.2f} on {best_name}: its training data or its draft vocabulary "
                    f"do not cover {name} traffic. Retrain or extend the draft vocab with such "
                    "data if this traffic matters.",
                    {
                        "category": name,
                        "accept_length": length,
                        "best": best_name,
                        "best_accept_length": best,
                        "by_category": lengths,
                    },  # fmt: skip
                ),
            )
    return result


def long_context_drop(summary: ProbeSummary, limit: int | None) -> dict[str, Any]:
    """The same text within the draft's position limit and past it (--compare long)."""
    result = check_result("accept-long-context-drop")
    if (headless := _no_head(result, summary)) is not None:
        return headless
    within = summary.by_mode.get("within-draft-context", {}).get("accept_length")
    past = summary.by_mode.get("past-draft-context", {}).get("accept_length")
    if within is None or past is None:
        return not_applicable(result, "no long-context pair was sent (--compare long, with the "
                              "served draft's config readable)")  # fmt: skip
    result["facts"] = {"within": within, "past": past, "draft_context": limit}
    if within - past < DOMAIN_GAP_TOKENS or (past - 1) >= DOMAIN_GAP_SHARE * (within - 1):
        return result
    return add_finding(result, finding(
        "accept-long-context-drop", WARNING,
        f"past the draft's {limit} positions accept length falls from {within:.2f} to {past:.2f}",
        f"The same text, {summary.by_mode['within-draft-context']['prompt_tokens']} prompt tokens "
        f"vs {summary.by_mode['past-draft-context']['prompt_tokens']}: the draft was not trained "
        "past its max_position_embeddings (remotedbg playbook spec-audit: "
        "context-exceeds-draft). Train it with the served context.",
        {"within": within, "past": past, "draft_context": limit},
    ))  # fmt: skip


CHECKS = (accept_length_low, position0_collapse, domain_gap)


def run_checks(summary: ProbeSummary, spec_off: bool = False) -> list[dict[str, Any]]:
    return [check(summary, spec_off) for check in CHECKS]
