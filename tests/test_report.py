"""Verdicts and findings render themselves: the terminal text (rich's renderable protocol), the
Markdown and the JSON of one come from the one object."""

import io

from rich.console import Console

from remotedbg.front.report import Findings, Verdict

FINDINGS = [
    {"severity": "info", "id": "fine", "title": "looked", "evidence": {}},
    {"severity": "error", "id": "d2t-absolute-ids", "title": "absolute ids", "detail": "fix it",
     "evidence": {"engine_ids_out_of_range": 5287}},
]  # fmt: skip


def _text(renderable: object) -> str:
    console = Console(width=100, file=io.StringIO(), record=True)
    console.print(renderable)
    return console.export_text()


def test_findings_come_most_severe_first_in_every_form():
    findings = Findings(FINDINGS)
    text = _text(findings)
    assert text.index("d2t-absolute-ids") < text.index("fine")
    assert "\n         fix it\n         engine_ids_out_of_range: 5287\n" in text
    markdown = findings.to_markdown(3)
    assert markdown.startswith("### ERROR `d2t-absolute-ids`: absolute ids\n\nfix it\n")
    assert "- **engine_ids_out_of_range**: `5287`" in markdown
    assert findings.to_json() == FINDINGS


def test_no_findings_say_so():
    assert _text(Findings([])) == "no findings\n"
    assert Findings([]).to_markdown() == "No findings.\n"


def test_a_verdict_is_a_box_a_bold_line_and_two_keys():
    verdict = Verdict("defect", "1 error-level finding(s): d2t-absolute-ids")
    assert "│ DEFECT  1 error-level finding(s): d2t-absolute-ids │" in _text(verdict)
    assert verdict.to_markdown() == (
        "**Verdict: DEFECT**: 1 error-level finding(s): d2t-absolute-ids"
    )
    assert verdict.to_json() == {
        "verdict": "defect",
        "headline": "1 error-level finding(s): d2t-absolute-ids",
    }
