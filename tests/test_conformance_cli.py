"""A few conformance scenarios end to end: the installed CLI, over the real sshd, on real releases.

tests/test_conformance.py runs every release x scenario in-process; here the same boxes are
audited the way a user does (`remotedbg playbook spec-audit -H box --json --var ...`), checking
the exit codes and the JSON document the contract promises.
"""

from __future__ import annotations

import json

import pytest

from tests.conformance_table import TABLE
from tests.releases import release
from tests.test_conformance import build_box, engine_root

pytestmark = pytest.mark.network

CASES = [
    ("correct", "sglang", "0.5.23", 0),
    ("prefix-model", "sglang", "0.5.23", 1),
    ("correct", "vllm", "0.33.0", 0),
    ("lm-head-missing", "vllm", "0.33.0", 1),
    ("nextn-as-eagle3", "sglang", "0.4.6.post5", 1),
]


@pytest.mark.parametrize("scenario,engine,version,code", CASES)
def test_spec_audit_through_the_cli(cli, tmp_path, scenario, engine, version, code):
    variables = build_box(tmp_path, engine, version, scenario)
    roots = engine_root(release(engine, version), "venv")
    argv = ["playbook", "spec-audit", "-H", "testbox", "--json"]
    for key, value in dict(variables, roots=roots, search_home="false").items():
        argv += ["--var", f"{key}={value}"]
    result = cli(*argv, timeout=120)
    doc = json.loads(result.stdout)
    expected = TABLE[scenario][(engine, version)]
    assert result.returncode == code, doc["headline"]
    assert doc["verdict"] == expected["verdict"]
    errors = sorted({f["id"] for f in doc["findings"] if f["severity"] == "error"})
    assert errors == expected["errors"]
    for item in doc["findings"]:
        if item["severity"] == "error":
            assert item["evidence"]["draft"] == variables["draft"]


def test_a_typo_in_the_draft_path_is_inconclusive_not_a_defect(cli, tmp_path):
    """Nothing was seen, so nothing is wrong: exit 4 with the reason, through every path."""
    missing = str(tmp_path / "no-such-draft")
    audit = cli("playbook", "vocab-audit", "-H", "testbox", "--json", "--var", f"draft={missing}",
                "--var", "search_home=false")  # fmt: skip
    doc = json.loads(audit.stdout)
    assert audit.returncode == 4 and doc["verdict"] == "inconclusive"
    assert not [f for f in doc["findings"] if f["severity"] == "error"]
    assert "no such file or directory" in " ".join(doc["inconclusive"])
    check = cli("vocab-check", "-H", "testbox", "--json", missing)
    assert check.returncode == 4 and json.loads(check.stdout)["unknown"][0]["code"] == "unreadable"
