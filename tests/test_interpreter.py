"""Picking the remote Python for files only torch can read."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from remotedbg.actions import interpreter
from remotedbg.agent.probe import interpreters
from remotedbg.errors import RemoteCommandError
from remotedbg.remote import calls
from remotedbg.remote.primitives import Remote

# A stand-in for torch, enough for torch.load(weights_only=True) of a tiny JSON "checkpoint".
FAKE_TORCH = textwrap.dedent("""
    import json

    class dtype:
        def __init__(self, name):
            self.name = name
        def __str__(self):
            return "torch." + self.name

    class Tensor:
        def __init__(self, values, kind):
            self.values, self.dtype, self.shape = values, dtype(kind), (len(values),)
        def detach(self):
            return self
        def cpu(self):
            return self
        def is_floating_point(self):
            return self.dtype.name.startswith("float")
        def numpy(self):
            import numpy
            return numpy.array(self.values, dtype=self.dtype.name)
        def reshape(self, *shape):
            return self
        def tolist(self):
            return list(self.values)
        def numel(self):
            return len(self.values)
        def element_size(self):
            return {"int64": 8, "bool": 1, "float32": 4}[self.dtype.name]

    def load(path, map_location=None, weights_only=False):
        with open(path) as handle:
            raw = json.load(handle)
        return {name: Tensor(v["data"], v["dtype"]) for name, v in raw.items()}
""")


@pytest.fixture
def torch_venv(tmp_path):
    venv = tmp_path / "engine-venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)
    return venv


@pytest.fixture
def bin_checkpoint(tmp_path):
    draft = tmp_path / "old-draft"
    draft.mkdir()
    (draft / "pytorch_model.bin").write_text(
        json.dumps({"d2t": {"data": [1, 1, 2, 4], "dtype": "int64"}})
    )
    return draft


def test_probe_finds_pythons_and_their_packages_on_disk(torch_venv, tmp_path):
    found = interpreters({"prefixes": [str(tmp_path / "*venv*")], "modules": ["torch", "vllm"]})
    assert found == [
        {
            "python": str(torch_venv / "bin" / "python3"),
            "prefix": str(torch_venv),
            "modules": {"torch": True, "vllm": False},
        }
    ]


def test_a_torch_file_is_read_with_a_python_that_has_torch(
    box, torch_venv, bin_checkpoint, monkeypatch
):
    monkeypatch.setattr(
        interpreter,
        "interpreters_with",
        lambda remote, module: [str(torch_venv / "bin" / "python3")],
    )
    with box.session() as session:
        remote = Remote(session)
        with pytest.raises(RemoteCommandError, match="needs torch"):
            remote.call(calls.ListTensors(path=str(bin_checkpoint)))
        listing = interpreter.checkpoint_call(remote, calls.ListTensors(path=str(bin_checkpoint)))
    assert [t["name"] for t in listing["tensors"]] == ["d2t"]


def test_without_any_torch_the_error_says_so(box, bin_checkpoint, monkeypatch):
    monkeypatch.setattr(interpreter, "interpreters_with", lambda remote, module: [])
    with box.session() as session, pytest.raises(RemoteCommandError, match="needs torch"):
        interpreter.checkpoint_call(Remote(session), calls.ListTensors(path=str(bin_checkpoint)))
