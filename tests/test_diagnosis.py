"""The ranking of causes (remotedbg.analysis.diagnosis), as pure functions."""

from __future__ import annotations

from remotedbg.analysis.diagnosis import diagnose, rank


def _f(id_: str, severity: str, **evidence) -> dict:
    return {"id": id_, "severity": severity, "title": id_, "detail": "x. Fix: do y.",
            "evidence": evidence}  # fmt: skip


def test_a_proven_mismatch_leads_and_the_symptom_comes_last() -> None:
    found = [_f("accept-length-low", "error"), _f("rope-mismatch", "warning"),
             _f("accept-domain-gap", "warning"), _f("d2t-absolute-ids", "error"),
             _f("draft-settings", "error")]  # fmt: skip
    order = [c.id for c in rank(found, {"ratio": 0.3})]
    assert order == ["d2t-absolute-ids", "draft-settings", "accept-domain-gap", "rope-mismatch",
                     "accept-length-low"]  # fmt: skip
    assert rank(found, {})[0].fix == "do y."


def test_a_measurement_near_the_ceiling_contradicts_a_static_warning() -> None:
    warning = [_f("chat-template-drift", "warning")]
    near = diagnose(warning, [], [], [], {"accept_length": 3.5, "ceiling": 4, "ratio": 0.875})
    assert near.verdict == "ok" and near.causes[0].id == "chat-template-drift"
    far = diagnose(warning, [], [], [], {"accept_length": 1.5, "ceiling": 4, "ratio": 0.375})
    # a warning ranks and shows, and is never a defect by itself (issue 42: severities decide)
    assert far.verdict == "ok" and far.headline.startswith("with warnings: chat-template-drift")
    assert "with warnings" not in near.headline  # contradicted by the measurement: decides nothing


def test_only_an_error_level_cause_makes_a_defect() -> None:
    warnings = [_f("rope-mismatch", "warning"), _f("context-exceeds-draft", "warning")]
    found = diagnose(warnings, [], [], [], {})
    assert found.verdict == "ok"
    assert found.headline == "with warnings: rope-mismatch: rope-mismatch (+1 more)"
    assert [c.id for c in found.causes] == ["rope-mismatch", "context-exceeds-draft"]
    with_error = diagnose(warnings + [_f("aux-layers-mismatch", "error")], [], [], [], {})
    assert with_error.verdict == "defect" and with_error.causes[0].id == "aux-layers-mismatch"


def test_what_was_cleared_and_what_could_not_be_checked() -> None:
    checks = {"fc-shape-mismatch": {"status": "ok", "facts": {"expected_in": 192}},
              "tokenizer-mismatch": {"status": "unknown", "reason": "unreadable"},
              "accept-length-low": {"status": "unknown", "reason": "no log"}}  # fmt: skip
    rows = [{"checks": checks}]
    drafts = [{"vocab": {"format": "offsets", "draft_vocab": 32000, "target_vocab": 163840},
               "loader": {"d2t_handling": "offsets", "path": "/e/llama_eagle3.py",
                          "evidence": [{"line": 241}]}}]  # fmt: skip
    found = diagnose([], rows, drafts, [], {"from": "probe", "accept_length": 3.0, "ceiling": 4,
                                           "ratio": 0.75})  # fmt: skip
    assert {r["hypothesis"] for r in found.ruled_out} == {
        "vocab map", "fc width = target hidden size x captured layers"}  # fmt: skip
    assert "/e/llama_eagle3.py:241" in found.ruled_out[0]["how"]
    # the probe measured acceptance: the log's missing figure is no gap; the tokenizer still is
    assert [u["check"] for u in found.unknown] == ["tokenizer-mismatch"]
    assert found.verdict == "inconclusive"


def test_a_modified_capture_leads_and_its_layer_ids_rule_nothing_out() -> None:
    rows = [{"checks": {"aux-layers-mismatch": {"status": "ok", "facts": {"physical": [1]}},
                        "fc-shape-mismatch": {"status": "ok", "facts": {}}}}]  # fmt: skip
    found = diagnose([_f("rope-mismatch", "warning"), _f("capture-modified", "error"),
                      _f("fc-shape-mismatch", "warning")], rows, [], [], {})  # fmt: skip
    assert found.verdict == "defect" and found.causes[0].id == "capture-modified"
    assert [r["check"] for r in found.ruled_out] == []  # fc raised; aux layers cleared nothing
