"""The catalog of finding ids (remotedbg/engines/finding_catalog.py): every id the code can
report has an entry, docs/findings.md is the catalog as generated, and `remotedbg explain`
prints an entry, lists them, and answers a wrong id in one line."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from remotedbg.analysis.diagnosis import rank
from remotedbg.engines.finding_catalog import CATALOG, catalog_markdown

ROOT = Path(__file__).resolve().parent.parent
#: the calls that make a finding, with the id as their first argument
MAKERS = {"finding"}
#: served_code.py picks one of its two ids by what the change does
DYNAMIC = {"remotedbg/analysis/served_code.py": {"capture-modified", "engine-code-modified"}}


def ids_in_code() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted((ROOT / "remotedbg").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name not in MAKERS:
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found[first.value] = f"{rel}:{node.lineno}"
            else:
                assert rel in DYNAMIC, f"{rel}:{node.lineno}: a finding id that is not literal"
                found.update({fid: rel for fid in DYNAMIC[rel]})
    return found


def test_every_finding_id_the_code_reports_is_in_the_catalog() -> None:
    found = ids_in_code()
    assert len(found) > 30  # the scan sees the checks (a broken scan finds none)
    missing = {fid: where for fid, where in found.items() if fid not in CATALOG}
    assert not missing, f"finding ids without a catalog entry: {missing}"


def test_every_finding_id_in_the_docs_tables_is_in_the_catalog() -> None:
    pages = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md"))
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \| (?:error|warning|info)", pages, re.M))
    assert listed and not listed - set(CATALOG)


def test_docs_page_is_the_catalog_as_generated() -> None:
    page = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    assert page == catalog_markdown(), "regenerate: python -m tests.test_finding_catalog"


def test_a_fix_line_is_never_cut() -> None:
    """A finding that states no `Fix:` gets its id's whole fix from the catalog (it was
    'see ID: ' and 200 characters of its detail, cut mid-sentence)."""
    item = {"id": "context-exceeds-draft", "severity": "warning", "title": "t",
            "detail": "x" * 400, "evidence": {}}  # fmt: skip
    fix = rank([item], {})[0].fix
    assert fix.startswith(CATALOG["context-exceeds-draft"].fix)
    assert fix.endswith("(remotedbg explain context-exceeds-draft)")


def _explain(*words: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "remotedbg", "explain", *words],
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_explain_prints_an_entry_and_lists_every_id() -> None:
    shown = _explain("d2t-absolute-ids")
    assert shown.returncode == 0, shown.stderr
    assert "d2t-absolute-ids" in shown.stdout and "arange" in shown.stdout
    listed = _explain("--json")
    assert listed.returncode == 0
    assert [e["id"] for e in json.loads(listed.stdout)["findings"]] == list(CATALOG)


def test_explain_a_wrong_id_is_one_line_with_the_nearest() -> None:
    wrong = _explain("d2t-absolute")
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert wrong.stderr.strip().count("\n") == 0 and "d2t-absolute-ids" in wrong.stderr


if __name__ == "__main__":
    (ROOT / "docs" / "findings.md").write_text(catalog_markdown(), encoding="utf-8")
