"""remotedbg.analysis.loader_model on small loaders written here (unit cases; the real engines'
loaders are run by tests/test_conformance.py)."""

from __future__ import annotations

import textwrap

from remotedbg.analysis.loader_model import simulate_load
from remotedbg.analysis.pysource import SourceIndex

BASE = """
from torch import nn


class Head(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(3 * config.hidden_size, config.hidden_size)
        self.norm = RMSNorm(config.hidden_size)
        self.lm_head = ParallelLMHead(config.draft_vocab_size, config.hidden_size)
        if getattr(config, "fc_norm", False):
            self.fc_norm = RMSNorm(config.hidden_size)
        self.hot_token_id = None

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, w in weights:
            if "d2t" in name:
                self.hot_token_id = w + 1
                continue
            {body}
"""
SILENT = """if name in params:
                params[name].data.copy_(w)"""
LOGGED = """if name in params:
                params[name].data.copy_(w)
            else:
                logger.warning(f"skipping {name}")"""
STRICT = """params[name].weight_loader(params[name], w)"""
CONFIG = {"hidden_size": 8, "draft_vocab_size": 10}


def model(body: str, names: list[str], config: dict | None = None, source: str = BASE):
    index = SourceIndex("eng", "/e/eng")
    text = textwrap.dedent(source).replace("{body}", body)
    index.add("/e/eng/models/head.py", text)
    return simulate_load(index, "/e/eng/models/head.py", "Head", names, config or CONFIG)


def outcomes(result) -> dict:
    return {name: entry["outcome"] for name, entry in result.outcomes.items()}


def test_loaded_consumed_and_silently_dropped():
    result = model(SILENT, ["fc.weight", "norm.weight", "lm_head.weight", "d2t", "x.weight"])
    assert result.status == "ok"
    assert outcomes(result) == {
        "fc.weight": "loaded",
        "norm.weight": "loaded",
        "lm_head.weight": "loaded",
        "d2t": "consumed",
        "x.weight": "dropped",
    }
    assert result.outcomes["x.weight"]["how"] == "silent"
    assert result.required == ["fc", "norm", "lm_head"] and result.unfilled() == []


def test_a_prefix_drops_everything_and_leaves_required_parameters_unfilled():
    result = model(SILENT, ["model.fc.weight", "model.lm_head.weight"])
    assert set(result.unfilled()) == {"fc", "norm", "lm_head"}
    logged = model(LOGGED, ["model.fc.weight"])
    assert logged.outcomes["model.fc.weight"]["how"] == "logged"


def test_a_loader_that_indexes_params_raises_on_an_unknown_name():
    result = model(STRICT, ["fc.weight", "wrapper.fc.weight", "norm.weight"])
    assert result.status == "raises"
    assert result.raised["kind"] == "KeyError" and result.raised["tensor"] == "wrapper.fc.weight"
    assert result.raised["at"].startswith("/e/eng/models/head.py:")
    assert outcomes(result)["norm.weight"] == "not-reached"


def test_config_decides_the_module_tree():
    names = ["fc.weight", "fc_norm.weight"]
    assert outcomes(model(SILENT, names))["fc_norm.weight"] == "dropped"
    with_norm = model(SILENT, names, dict(CONFIG, fc_norm=True))
    assert outcomes(with_norm)["fc_norm.weight"] == "loaded"


def test_a_setting_the_code_branches_on_is_tried_both_ways():
    same = model(
        """if self.mystery:
                pass
            if name in params:
                params[name].data.copy_(w)""",
        ["fc.weight"],
    )
    assert same.status == "ok"  # both ways load fc.weight: the answer does not depend on it
    differs = model(
        """if self.mystery:
                continue
            if name in params:
                params[name].data.copy_(w)""",
        ["fc.weight"],
    )
    assert differs.status == "unknown" and "self.mystery" in differs.reason


def test_hostile_loader_code_is_unknown_never_a_crash():
    unsupported = model("while True:\n                pass", ["fc.weight"])
    assert unsupported.status == "unknown" and "While" in unsupported.reason
    huge = model("x = [0] * 10**8", ["fc.weight"])
    assert huge.status == "ok"  # the product is refused (an unknown value), not allocated
    assert outcomes(huge)["fc.weight"] == "dropped"
    loop = model(
        """for i in range(4000):
                for j in range(4000):
                    pass""",
        ["fc.weight"],
    )
    assert loop.status == "unknown" and "budget" in loop.reason
    missing = simulate_load(SourceIndex("eng", "/e/eng"), "/e/eng/m.py", "Head", [], {})
    assert missing.status == "unknown"
