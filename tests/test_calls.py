"""The typed agent calls (remote/calls.py) against answers the real agent gave
(tests/answers/<entry>/*.json, recorded by tests/record_answers.py through a real session):
each is accepted by its entry's shape and made into its dataclass; actions read them without
an sshd or a box; a malformed answer is AgentAnswerError (exit 4), never a TypeError."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from remotedbg.actions import interpreter
from remotedbg.errors import ExitCode
from remotedbg.remote import calls
from remotedbg.remote.primitives import Remote
from remotedbg.session import ConnectOptions, open_session
from remotedbg.session.answers import AgentAnswerError, Opt

ANSWERS = Path(__file__).resolve().parent / "answers"
RECORDED = sorted(ANSWERS.glob("*/*.json"))


def _recorded(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_entry_has_a_recorded_answer():
    entries = {_recorded(path)["entry"] for path in RECORDED}
    assert entries == set(calls.BY_ENTRY), set(calls.BY_ENTRY) ^ entries


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_process_makes_the_dataclass_of_a_recorded_answer(path):
    recorded = _recorded(path)
    request = calls.BY_ENTRY[recorded["entry"]](recorded["args"])
    answer = request.process(recorded["value"], path.stem)
    assert type(answer) is request.answer and dataclasses.is_dataclass(answer)
    fields = [f.name for f in dataclasses.fields(answer)]
    if isinstance(request.shape, dict):  # an object: its keys are the fields, as answered
        for field in dataclasses.fields(answer):
            name = field.name
            if name not in recorded["value"]:  # an optional key the agent left out: the default
                assert isinstance(request.shape[name], Opt), name
                assert getattr(answer, name) == _default(field), name
            elif name == "unknown":
                assert [dataclasses.asdict(u) for u in answer.unknown] == recorded["value"][name]
            else:
                assert getattr(answer, name) == recorded["value"][name], name
    elif fields == ["found"]:  # the interpreters: one dataclass each
        assert [dataclasses.asdict(c) for c in answer.found] == [
            {"python": c["python"], "modules": c["modules"]} for c in recorded["value"]
        ]
    else:
        assert getattr(answer, fields[0]) == recorded["value"]


def _default(field: dataclasses.Field) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def test_each_dataclass_has_the_fields_its_shape_names():
    """Every key the agent always answers is a field without a default; an optional key is
    either a field with a default or left out of the dataclass."""
    for request in calls.CALLS:
        if isinstance(request.shape, dict):
            fields = dataclasses.fields(request.answer)
            wanted = {k for k, v in request.shape.items() if not isinstance(v, Opt)}
            required = {f.name for f in fields if _default(f) is dataclasses.MISSING}
            assert wanted == required, request
            optional = {f.name for f in fields} - required
            assert all(isinstance(request.shape.get(n), Opt) for n in optional), request


@pytest.mark.parametrize(
    ("request_", "value", "fault"),
    [
        (calls.VocabCheck(), {"findings": [], "unknown": [{"code": 3}], "summary": {},
                              "checkpoint": {}}, "unknown[0].code: expected a string"),  # fmt: skip
        (calls.FindInterpreters(), [{"python": "/x"}], "[0].modules: missing"),
        (calls.ListTensors(), {"path": "/d", "tensors": "all"}, "tensors: expected a list"),
        (calls.Sha256Range(), {"sha256": "ab", "size": 2**70, "mtime": 0.0, "short": False},
         "size: an integer past 64 bits"),  # fmt: skip
    ],
)
def test_a_malformed_answer_is_exit_4_with_where(request_, value, fault):
    with pytest.raises(AgentAnswerError) as error:
        request_.process(value, "box: the check")
    assert fault in str(error.value) and error.value.exit_code == ExitCode.REMOTE


class Replay(Remote):
    """A Remote that answers from the recordings: an action tested without sshd or a box."""

    def __init__(self, case: str) -> None:
        super().__init__(open_session(ConnectOptions(host="local")))
        self.case = case
        self.asked: list[calls.AgentCall[Any]] = []

    def call(self, request: calls.AgentCall[Any], timeout: float | None = None) -> Any:
        self.asked.append(request)
        folder = ANSWERS / request.entry.removeprefix(f"{calls.AGENT}.").replace(":", "--")
        return request.check(_recorded(folder / f"{self.case}.json")["value"], self.case)


def test_interpreters_with_reads_the_typed_answer():
    """The venv the recording ran in, as recorded (numpy in it, no vllm): asked for numpy it is
    chosen; for vllm nothing is."""
    remote = Replay("this-box")
    recorded = _recorded(ANSWERS / "probe--interpreters" / "this-box.json")["value"]
    with_numpy = [c["python"] for c in recorded if c["modules"]["numpy"]]
    assert with_numpy and not any(c["modules"]["vllm"] for c in recorded)
    assert interpreter.interpreters_with(remote, "numpy") == with_numpy
    assert interpreter.interpreters_with(remote, "vllm") == []
    assert [type(r) for r in remote.asked] == [calls.FindInterpreters] * 2
