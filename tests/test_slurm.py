"""Slurm jobs as targets, on a real one-node Slurm cluster the suite starts (tests/slurm.py:
munged, slurmctld and slurmd as root in a temp dir, free ports, its own key and config)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.slurm import Cluster, available

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    started = Cluster()
    try:
        yield started.start()
    finally:
        started.stop()


def test_a_step_of_a_running_job_reads_its_stdin(cluster: Cluster) -> None:
    """What the executor's boot relies on: `srun --overlap --jobid J` runs beside the job's own
    step and hands the caller's stdin to the program in it."""
    job = cluster.submit("sleep 300")
    try:
        done = cluster.run("srun", "--overlap", "--jobid", job, "python3", "-c",
                           "import os, sys; print(sys.stdin.read().upper(), "
                           "os.environ['SLURM_JOB_ID'])", input="hello\n")  # fmt: skip
        assert done.stdout.split() == ["HELLO", job]
    finally:
        cluster.cancel(job)
    assert cluster.jobs() == []
