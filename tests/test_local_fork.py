"""remotedbg.local_fork: a cold audit's parsing shared with forked children on the client's
cores. What a user relies on: the answers are those a loop in one process gives, in order;
a child that fails costs only its share computed again; no child is left behind."""

from __future__ import annotations

import json
import os

import pytest

from remotedbg import local_fork


@pytest.fixture
def four_cores(monkeypatch):
    monkeypatch.setattr(local_fork, "processes_for", lambda count: 4 if count >= 4 else 1)


def _children() -> set[int]:
    me = str(os.getpid())
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me:
                found.add(int(entry))
    return found


def test_the_answers_are_a_loop_s_in_order_and_the_work_is_shared(four_cores):
    items = [f"item {n}" for n in range(37)]
    before = _children()
    got = local_fork.map_forked(lambda text: json.dumps([text, os.getpid()]), items)
    assert [json.loads(g)[0] for g in got] == items
    workers = {json.loads(g)[1] for g in got}
    assert os.getpid() in workers and len(workers) == 4  # three children and this process
    assert _children() == before


def test_a_child_that_dies_costs_only_its_share_computed_here(four_cores):
    parent = os.getpid()

    def compute(text: str) -> str:
        if os.getpid() != parent and text.endswith("1"):
            os._exit(3)  # the child with items 1, 5, 9, ... dies halfway
        return json.dumps(text.upper())

    items = [f"item {n}" for n in range(12)]
    assert local_fork.map_forked(compute, items) == [json.dumps(i.upper()) for i in items]


def test_an_exception_in_this_process_leaves_no_child(four_cores):
    parent = os.getpid()
    before = _children()

    def compute(text: str) -> str:
        if os.getpid() == parent:
            raise KeyboardInterrupt  # Ctrl-C while this process does its share
        return json.dumps(text)

    with pytest.raises(KeyboardInterrupt):
        local_fork.map_forked(compute, [str(n) for n in range(16)])
    assert _children() == before


def test_few_items_are_not_worth_a_fork():
    assert local_fork.processes_for(local_fork.MIN_ITEMS_PER_PROCESS - 1) == 1
