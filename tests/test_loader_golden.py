"""The loader model answers as recorded (tests/loader_golden.py): every draft class of every
release, over the conformance checkpoints, gives the answer tests/golden/loader_model.json holds,
so a refactor of remotedbg.analysis.loader_model changes nothing a user sees. A change that is
meant to change answers rewrites the file (`python -m tests.loader_golden`) and the diff shows
every answer it changed."""

from __future__ import annotations

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


@pytest.mark.sweep
def test_every_release_of_the_sweep_answers_as_recorded():
    differences = _differences([r for r in SWEEP if r not in RELEASES])
    assert not differences, "\n".join(differences[:40])
