"""From every check's result to a diagnosis: candidate causes ranked by how directly their
evidence explains the measured acceptance, the hypotheses that were checked and cleared (with
the check that cleared them), and what could not be checked. Pure: no I/O.

Only an error-level cause makes a defect; warnings rank and show, and the verdict is then ok
("with warnings"). Ranking, strongest first:
0. a proven mismatch that zeroes acceptance (the draft proposes the wrong tokens, or is fed the
   wrong hidden states, or the server cannot serve it): DECISIVE below;
1. any other error-level finding;
2. what the live measurement shows (a domain gap, a collapse at position 0, a drop past the
   draft's context);
3. warnings (settings that lower acceptance);
4. the symptom itself (accept length low), which explains nothing alone;
and a live measurement near the ceiling contradicts a static warning: that warning drops last
and decides nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from remotedbg.agent.findings import ERROR, WARNING
from remotedbg.engines.finding_catalog import fix_for

#: Findings whose cause, when proven, leaves (almost) nothing accepted or nothing served.
DECISIVE = {
    "d2t-absolute-ids", "loader-direct-map", "d2t-out-of-range", "t2d-d2t-disagree",
    "algorithm-mismatch", "aux-layers-mismatch", "fc-shape-mismatch", "target-unsupported",
    "draft-arch-unsupported", "draft-load-fails", "required-weights-missing", "embedding-missing",
    "tokenizer-mismatch", "draft-head-tied", "draft-scales-missing", "eos-not-in-draft-vocab",
    "capture-modified", "d2t-wrong-shape", "plugin-disabled",
}  # fmt: skip
#: The served code changed from its release on the speculative path: ranked before everything
#: else of its tier, since every other check read that code as served.
SERVED_CODE = ("capture-modified", "engine-code-modified")
#: Findings that are measurements of acceptance itself (probe, decode log): patterns that
#: point at a cause, and the symptom (acceptance is low), which explains nothing by itself.
MEASURED = {"accept-position0-collapse", "accept-domain-gap", "accept-long-context-drop"}
SYMPTOM = "accept-length-low"
#: Acceptance at or above this share of its ceiling counts as near the ceiling.
NEAR_CEILING = 0.8

#: What each check rules out when it passes, in the user's words.
HYPOTHESES = {
    "algorithm-mismatch": "speculative algorithm matches the draft's family",
    "target-unsupported": "the target can capture hidden states for the draft",
    "draft-arch-unsupported": "the engine registers the draft's architecture",
    "draft-model-vocab": "a draft model of its own shares the target's vocabulary",
    "aux-layers-mismatch": "hidden-state layers captured = the layers trained on",
    "aux-layers-ignored": "aux layer ids in the config are the ones used",
    "fc-shape-mismatch": "fc width = target hidden size x captured layers",
    "norm-flag-unsupported": "norm flags and norm tensors are honoured by the engine",
    "draft-weights": "every trained weight is loaded, none missing",
    "draft-scales-missing": "quantized weights carry their scales",
    "tokenizer-mismatch": "draft and target tokenize alike",
    "chat-template-drift": "chat template as in training",
    "context-exceeds-draft": "served context within the draft's trained positions",
    "rope-mismatch": "RoPE settings of draft and target agree",
    "quantization-mismatch": "quantization of draft and target are compatible",
    "draft-settings": "draft decode settings accepted by the engine",
    "draft-head-tied": "the draft's head is its own, not the target's embedding",
    "embedding": "the draft gets an embedding (its own or the target's)",
    "served-code-modified": "the served engine code is the released code",
    "accept-length": "accept length in the log is near its ceiling",
}


@dataclass
class Cause:
    id: str
    severity: str
    title: str
    evidence: dict[str, Any]
    fix: str
    source: str  # "static" (code, checkpoint, launch line) or "live" (probe, log)
    tier: int

    def __post_init__(self) -> None:
        self.evidence = dict(self.evidence or {})


@dataclass
class Diagnosis:
    causes: list[Cause] = field(default_factory=list)
    ruled_out: list[dict[str, str]] = field(default_factory=list)
    unknown: list[dict[str, str]] = field(default_factory=list)
    measured: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        # only an error-level cause is a defect: warnings rank and show, and end "ok, with
        # warnings" (the contract's rule: severities decide, for diagnose as for playbooks)
        if any(c.severity == ERROR for c in self.causes):
            return "defect"
        if self.unknown and not self.near_ceiling:
            return "inconclusive"
        return "ok"

    @property
    def warnings(self) -> list[Cause]:
        """Warnings that still count: not contradicted by a live measurement near the ceiling."""
        return [c for c in self.causes if c.severity == WARNING and c.tier < CONTRADICTED]

    @property
    def near_ceiling(self) -> bool:
        ratio = self.measured.get("ratio")
        return isinstance(ratio, (int, float)) and ratio >= NEAR_CEILING

    @property
    def headline(self) -> str:
        if self.verdict == "defect":
            first = self.causes[0]
            more = f" (+{len(self.causes) - 1} more)" if len(self.causes) > 1 else ""
            return f"{first.id}: {first.title}{more}"
        if self.verdict == "inconclusive":
            reasons = dict.fromkeys(u["reason"] for u in self.unknown)  # one reason, said once
            return "could not decide: " + "; ".join(list(reasons)[:3])
        shown = _measured_line(self.measured)
        measured = f"; {shown}" if shown else ""
        if self.warnings:
            first, more = self.warnings[0], len(self.warnings) - 1
            also = f" (+{more} more)" if more else ""
            return f"with warnings: {first.id}: {first.title}{also}{measured}"
        return f"no cause found; {len(self.ruled_out)} hypotheses ruled out{measured}"

    def document(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "headline": self.headline,
            "causes": [asdict(c) for c in self.causes],
            "ruled_out": self.ruled_out,
            "unknown": self.unknown,
            "measured": self.measured,
        }


def fix_of(item: dict[str, Any]) -> str:
    """The fix a finding states ("... Fix: X"), else the catalog's fix for its id (whole,
    never cut: `remotedbg explain ID` says more), else its detail."""
    detail = str(item.get("detail") or "")
    if "Fix:" in detail:
        return detail.split("Fix:", 1)[1].strip()
    known = fix_for(str(item.get("id")))
    if known:
        return f"{known} (remotedbg explain {item.get('id')})"
    return detail.strip()


#: The tier of a warning that a measurement near the ceiling contradicts.
CONTRADICTED = 5


def tier_of(item: dict[str, Any], near_ceiling: bool) -> int:
    if item["id"] == SYMPTOM:
        return 4  # whatever its severity: after every candidate that could explain it
    if item["id"] in DECISIVE and item.get("severity") == ERROR:
        return 0
    if item.get("severity") == ERROR:
        return 1
    if item["id"] in MEASURED:
        return 2
    return CONTRADICTED if near_ceiling else 3


def rank(findings: list[dict[str, Any]], measured: dict[str, Any]) -> list[Cause]:
    """Findings (info dropped) as causes, strongest first; equal tiers keep the checks' order."""
    near = isinstance(measured.get("ratio"), (int, float)) and measured["ratio"] >= NEAR_CEILING
    causes = [
        Cause(
            id=item["id"],
            severity=item.get("severity") or WARNING,
            title=str(item.get("title") or ""),
            evidence=item.get("evidence") or {},
            fix=fix_of(item),
            source="live" if item["id"] in MEASURED or item["id"] == SYMPTOM else "static",
            tier=tier_of(item, near),
        )
        for item in findings
        if item.get("severity") in (ERROR, WARNING)
    ]
    seen: set[tuple[str, str]] = set()
    unique = []
    for cause in sorted(causes, key=lambda c: (c.tier, c.id not in SERVED_CODE)):
        key = (cause.id, str(cause.evidence.get("draft") or cause.evidence.get("server") or ""))
        if key not in seen:
            seen.add(key)
            unique.append(cause)
    return unique


def ruled_out(
    spec_rows: list[dict[str, Any]], drafts: list[dict[str, Any]], raised: set[str]
) -> list[dict[str, str]]:
    """Each hypothesis a check cleared, with how: the vocab map from the drafts audit, the rest
    from spec-audit's per-draft checks (status ok, no finding of that id raised)."""
    out: list[dict[str, str]] = []
    for draft in drafts:
        vocab, loader = draft.get("vocab") or {}, draft.get("loader") or {}
        if vocab.get("format") == "offsets" and loader.get("d2t_handling") == "offsets":
            lines = [e.get("line") for e in loader.get("evidence") or [] if e.get("line")]
            line = lines[0] if lines else None
            where = f"{loader.get('path')}:{line}" if line else str(loader.get("path"))
            out.append({
                "hypothesis": "vocab map",
                "check": "vocab-audit",
                "how": f"d2t holds offsets ({vocab.get('draft_vocab')} -> "
                       f"{vocab.get('target_vocab')} ids), the loader adds arange: {where}",
            })  # fmt: skip
    # the served capture differs from the release: its layer ids matching the training's
    # clears nothing about the hidden states the draft is fed
    cleared_by_others = {"aux-layers-mismatch"} if "capture-modified" in raised else set()
    for row in spec_rows:
        for check, result in (row.get("checks") or {}).items():
            if result.get("status") != "ok" or check in raised or check in cleared_by_others:
                continue
            facts = result.get("facts") or {}
            shown = ", ".join(f"{k} {_short(v)}" for k, v in list(facts.items())[:4])
            out.append(
                {
                    "hypothesis": HYPOTHESES.get(check, check),
                    "check": check,
                    "how": shown or "checked",
                }
            )
    return out


#: Checks a live measurement answers: when the probe measured acceptance, their "could not
#: read the log" is no longer a gap.
ANSWERED_LIVE = ("accept-length-low",)


def unknowns(
    spec_rows: list[dict[str, Any]], inconclusive: list[str], live: bool = False
) -> list[dict[str, str]]:
    skip = ANSWERED_LIVE if live else ()
    out = [
        {"check": check, "reason": str(result.get("reason") or "")}
        for row in spec_rows
        for check, result in (row.get("checks") or {}).items()
        if result.get("status") == "unknown" and check not in skip
    ]
    known = {u["reason"] for u in out}
    out += [
        {"check": "audit", "reason": r}
        for r in inconclusive
        if not any(known_reason in r for known_reason in known)
        and not any(f"{check}:" in r for check in skip)
    ]
    return out


def measured_figures(server: dict[str, Any] | None, probe: dict[str, Any] | None) -> dict[str, Any]:
    """Acceptance as measured: the probe's (greedy, per kind and position), else the log's; with
    the ceiling, their ratio, and the engine's own running figure."""
    out: dict[str, Any] = {}
    spec = (server or {}).get("spec") or {}
    log = (((server or {}).get("log") or {}).get("figures") or {}).get("accept_length") or {}
    if log:
        out["log_accept_length"] = log.get("mean")
    if probe:
        summary = probe.get("summary") or {}
        overall = summary.get("overall") or {}
        out["accept_length"] = overall.get("accept_length")
        out["ceiling"] = summary.get("ceiling")
        out["by_category"] = {
            name: figures.get("accept_length")
            for name, figures in (summary.get("by_category") or {}).items()
        }
        out["positions"] = summary.get("positions")
        out["engine_figure"] = probe.get("engine_figure")
        out["from"] = "probe"
    elif log:
        out["accept_length"] = log.get("mean")
        out["ceiling"] = spec.get("ceiling")
        out["from"] = "server log"
    length, ceiling = out.get("accept_length"), out.get("ceiling")
    if isinstance(length, (int, float)) and isinstance(ceiling, (int, float)) and ceiling:
        out["ratio"] = round(length / ceiling, 3)
    return out


def diagnose(
    findings: list[dict[str, Any]],
    spec_rows: list[dict[str, Any]],
    drafts: list[dict[str, Any]],
    inconclusive: list[str],
    measured: dict[str, Any],
) -> Diagnosis:
    causes = rank(findings, measured)
    raised = {c.id for c in causes}
    return Diagnosis(
        causes=causes,
        ruled_out=ruled_out(spec_rows, drafts, raised),
        unknown=unknowns(spec_rows, inconclusive, live=measured.get("from") == "probe"),
        measured=measured,
    )


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _measured_line(measured: dict[str, Any]) -> str:
    length, ceiling = measured.get("accept_length"), measured.get("ceiling")
    if not isinstance(length, (int, float)):
        return ""
    of = f" of {ceiling}" if ceiling else ""
    return f"accept length {length:.2f}{of} ({measured.get('from')})"
