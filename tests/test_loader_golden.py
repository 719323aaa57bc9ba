"""The loader model answers as recorded (tests/loader_golden.py): every draft class of every
release, over the conformance checkpoints, gives the answer tests/golden/loader_model.json holds,
so a refactor of remotedbg.analysis.loader_model changes nothing a user sees. A change that is
meant to change answers rewrites the file (`python -m tests.loader_golden`) and the diff shows
every answer it changed.

The table's releases run with the suite; the rest of the sweep (91 releases, about 10 minutes on
2 cores) only with REMOTEDBG_LOADER_GOLDEN_FULL=1, for a refactor's check (docs/development.md)."""

from __future__ import annotations

import os

import pytest

from tests.loader_golden import record, recorded
from tests.releases import RELEASES, SWEEP

pytestmark = [pytest.mark.network]


def _differences(releases: list[tuple[str, str]]) -> list[str]:
    golden = recorded()
    got = record(releases)
    out = []
    for label, rows in got["releases"].items():
        want = golden["releases"].get(label)
        if want is None:
            out.append(f"{label}: not recorded")
            continue
        if sorted(rows) != sorted(want):
            out.append(f"{label}: other draft classes {sorted(set(rows) ^ set(want))[:5]}")
        for key in sorted(set(rows) & set(want)):
            answer, expected = got["answers"][rows[key]], golden["answers"][want[key]]
            if answer != expected:
                keys = {*answer, *expected}
                changed = sorted(k for k in keys if answer.get(k) != expected.get(k))
                out.append(f"{label} {key}: {changed} differ")
    return out


def test_the_table_releases_answer_as_recorded():
    differences = _differences(RELEASES)
    assert not differences, "\n".join(differences[:40])


@pytest.mark.skipif(
    os.environ.get("REMOTEDBG_LOADER_GOLDEN_FULL") != "1",
    reason="opt-in: REMOTEDBG_LOADER_GOLDEN_FULL=1 (the sweep's other 91 releases, ~10 min)",
)
def test_every_release_of_the_sweep_answers_as_recorded():
    differences = _differences([r for r in SWEEP if r not in RELEASES])
    assert not differences, "\n".join(differences[:40])
