"""remotedbg.analysis.spec_checks: each finding raised by a case that should raise it, not by a
correct one; and the spec-audit playbook end to end on the test box (actions registered here)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from remotedbg.analysis import capture as cap
from remotedbg.analysis import spec_checks as sc
from remotedbg.analysis.loader_values import LoadModel

# ----------------------------------------------------------- target-model sources (our own code)
# The layer loop captures a layer's INPUT (hidden + residual before the layer runs), as SGLang's
# model files do; the three set_eagle3_layers_to_capture variants differ in how they convert ids.
TARGET_MODEL = '''
"""A target model in SGLang's idiom (test fixture)."""
from typing import List, Optional

from torch import nn


class TinyDecoderModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers_to_capture = []

    def forward(self, input_ids, positions, hidden_states, residual=None):
        aux_hidden_states = []
        for i in range(len(self.layers)):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
            layer = self.layers[i]
            hidden_states, residual = layer(positions, hidden_states, residual)
        return hidden_states, aux_hidden_states


class {cls}(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = TinyDecoderModel(config)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        if not self.pp_group.is_last_rank:
            return
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
{convert}


EntryClass = [{cls}]
'''
ADD_1 = "            self.model.layers_to_capture = [val + 1 for val in layer_ids]"
ADD_1_WHEN_FIRST_IS_1 = """\
            if layer_ids[0] == 1:
                self.model.layers_to_capture = [val + 1 for val in layer_ids]
            else:
                self.model.layers_to_capture = list(layer_ids)"""
KEEP = "            self.model.layers_to_capture = list(layer_ids)"


def target_source(convert: str, cls: str = "DeepseekV3ForCausalLM") -> str:
    return TARGET_MODEL.replace("{convert}", convert).replace("{cls}", cls)


DELEGATING = """
class InnerModel:
    def set_eagle3_layers_to_capture(self, layers_to_capture):
        self.layers_to_capture = layers_to_capture

    def forward(self, hidden_states, residual):
        for index, layer in enumerate(self.layers):
            if index in self.layers_to_capture:
                self.aux.append(hidden_states + residual)
            hidden_states, residual = layer(hidden_states, residual)


class QwenLikeForCausalLM:
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            layers = [2, num_layers // 2, num_layers - 3]
        else:
            layers = [val + 1 for val in layer_ids]
        if hasattr(self.model, "set_eagle3_layers_to_capture"):
            self.model.set_eagle3_layers_to_capture(layers)
        else:
            self.model.layers_to_capture = layers


class DerivedForCausalLM(QwenLikeForCausalLM):
    pass
"""

CAPTURES_OUTPUTS = """
class OutModel:
    def forward(self, hidden_states):
        aux = []
        for i, layer in enumerate(self.layers):
            hidden_states = layer(hidden_states)
            if i in self.layers_to_capture:
                aux.append(hidden_states)
        return hidden_states, aux


class OutForCausalLM:
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        if layer_ids is None:
            raise ValueError("explicit layer ids are required")
        self.model.layers_to_capture = list(layer_ids)
"""

TARGET_61 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "num_hidden_layers": 61,
    "hidden_size": 128,
}


def eagle3_config(ids: list[int] | None = None, **extra) -> dict:
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "hidden_size": 64,
        "target_hidden_size": 128,
        "draft_vocab_size": 32000,
        "vocab_size": 163840,
    }
    if ids is not None:
        config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": ids}
    config.update(extra)
    return config


def ids_of(result: dict) -> set[str]:
    return {f["id"] for f in result["findings"]}


def capture_of(source: str, ids: list[int] | None, target: dict = TARGET_61) -> dict:
    return cap.capture_indices(source, ids, target, (target.get("architectures") or [None])[0])


def eagle3_dep(ids=None, convert=ADD_1, train=None, engine="sglang", **extra) -> sc.Deployment:
    """A correct SGLang-style deployment: the target's setter is evaluated for the ids the
    engine passes (it reads eagle_config ids, as SGLang 0.4.10+ does)."""
    config = eagle3_config(ids, **extra)
    source = target_source(convert)
    dep = sc.Deployment(
        draft_config=config,
        tensors=_tensors(fc__weight=(64, 384)),
        target_config=TARGET_61,
        engine=engine,
        spec={"algorithm": "EAGLE3", "num_steps": 3, "num_draft_tokens": 4},
        ids_source={"eagle_config": True, "top_level": False, "where": ["mr.py:1"]},
        train_layers=train,
        capture_point=cap.capture_point(source),
    )
    passed, _ = sc.engine_ids(dep)
    dep.capture = capture_of(source, passed)
    return dep


# ------------------------------------------------------------------------ algorithm-mismatch
@pytest.mark.parametrize(
    "arch,algorithm,engine,raised",
    [
        ("LlamaForCausalLMEagle3", "EAGLE", "sglang", True),
        ("LlamaForCausalLMEagle3", "NEXTN", "sglang", True),
        ("LlamaForCausalLMEagle3", "EAGLE3", "sglang", False),
        ("LlamaForCausalLMEagle", "EAGLE3", "sglang", True),
        ("LlamaForCausalLMEagle", "EAGLE", "sglang", False),
        ("DeepseekV3ForCausalLMNextN", "EAGLE3", "sglang", True),
        ("DeepseekV3ForCausalLMNextN", "NEXTN", "sglang", False),
        ("Eagle3LlamaForCausalLM", "eagle", "vllm", True),
        ("Eagle3LlamaForCausalLM", "eagle3", "vllm", False),
        ("DeepseekV3ForCausalLMNextN", "eagle3", "vllm", True),
        ("DeepseekV3ForCausalLMNextN", "deepseek_mtp", "vllm", False),
        ("LlamaForCausalLM", "eagle3", "vllm", False),  # vLLM names the head by method
    ],
)
def test_algorithm_mismatch(arch, algorithm, engine, raised):
    dep = sc.Deployment(
        draft_config={"architectures": [arch]}, engine=engine, spec={"algorithm": algorithm}
    )
    result = sc.algorithm_mismatch(dep)
    assert result["status"] == ("found" if raised else "ok")
    if raised:
        item = result["findings"][0]
        assert item["severity"] == "error" and item["evidence"]["algorithm"] == algorithm


def test_algorithm_family_from_the_fc_width_when_the_name_is_plain():
    tensors = _tensors(fc__weight=(64, 192))  # 3 x 64: an EAGLE-3 head named LlamaForCausalLM
    dep = sc.Deployment(
        draft_config={"architectures": ["LlamaForCausalLM"], "hidden_size": 64},
        tensors=tensors,
        engine="vllm",
        spec={"algorithm": "eagle"},
    )
    assert ids_of(sc.algorithm_mismatch(dep)) == {"algorithm-mismatch"}


def test_algorithm_mismatch_says_why_it_cannot_run():
    config = {"architectures": ["LlamaForCausalLMEagle3"]}
    no_args = sc.algorithm_mismatch(sc.Deployment(draft_config=config, engine="sglang"))
    # a draft no server runs has no launch line: nothing to get wrong there, said, not guessed
    assert no_args["status"] == "not-applicable" and "--var args" in no_args["reason"]
    bad_json = sc.Deployment(
        draft_config=config,
        engine="vllm",
        server={"notes": ["--speculative-config is not valid JSON (...)"]},
    )
    assert "not valid JSON" in sc.algorithm_mismatch(bad_json)["reason"]
    unread = sc.algorithm_mismatch(sc.Deployment(draft_error="no such file"))
    assert unread["status"] == "unknown" and "no such file" in unread["reason"]


# ------------------------------------------------------------------------ aux layers
def test_conversion_rules_and_capture_point():
    assert cap.conversion_rule(target_source(ADD_1)) == "add-1"
    assert cap.conversion_rule(target_source(ADD_1_WHEN_FIRST_IS_1)) == "add-1-when-first-is-1"
    assert cap.conversion_rule(target_source(KEEP)) == "keep"
    assert cap.capture_point(target_source(KEEP))["point"] == "input"
    assert cap.capture_point(CAPTURES_OUTPUTS)["point"] == "output"
    assert cap.capture_point("x = 1\n")["point"] == "unknown"


@pytest.mark.parametrize(
    "convert,draft_ids,capture,physical",
    [
        (ADD_1, [1, 29, 57], [2, 30, 58], [1, 29, 57]),
        (ADD_1, None, [2, 30, 58], [1, 29, 57]),
        (KEEP, [1, 29, 57], [1, 29, 57], [0, 28, 56]),
        (ADD_1_WHEN_FIRST_IS_1, [1, 29, 57], [2, 30, 58], [1, 29, 57]),
        (ADD_1_WHEN_FIRST_IS_1, [2, 30, 58], [2, 30, 58], [1, 29, 57]),
    ],
)
def test_captured_layers_per_variant(convert, draft_ids, capture, physical):
    result = sc.aux_layers(eagle3_dep(draft_ids, convert, train=physical))
    assert result["status"] == "ok", result
    assert result["facts"]["layers_to_capture"] == capture
    assert result["facts"]["physical_layers"] == physical


@pytest.mark.parametrize(
    "convert,draft_ids,train",
    [
        (KEEP, [1, 29, 57], [1, 29, 57]),  # keeps ids that name outputs: off by one
        (ADD_1_WHEN_FIRST_IS_1, [2, 30, 58], [2, 30, 58]),  # first id is not 1: kept
        (ADD_1, None, [2, 30, 58]),  # no ids: the default [2, 30, 58] captures outputs 1, 29, 57
        (ADD_1, [3, 30, 57], [1, 29, 57]),  # the config names other layers than training used
    ],
)
def test_aux_layers_mismatch_raised(convert, draft_ids, train):
    result = sc.aux_layers(eagle3_dep(draft_ids, convert, train=train))
    [item] = [f for f in result["findings"] if f["id"] == "aux-layers-mismatch"]
    assert item["severity"] == "error"
    assert item["evidence"]["train_layers"] == train
    assert item["evidence"]["physical_layers"] != train


def test_config_ids_stand_in_for_training_layers_as_a_warning():
    result = sc.aux_layers(eagle3_dep([2, 30, 58], ADD_1_WHEN_FIRST_IS_1))
    [item] = result["findings"]
    assert item["id"] == "aux-layers-mismatch" and item["severity"] == "warning"
    assert item["evidence"]["train_layers_from"] == "eagle_config.eagle_aux_hidden_state_layer_ids"
    fine = sc.aux_layers(eagle3_dep([1, 29, 57]))
    assert fine["status"] == "ok"
    default = sc.aux_layers(eagle3_dep(None))  # nothing recorded: the trainer's default
    assert default["status"] == "ok" and "default" in default["facts"]["train_layers"]


def test_ids_the_engine_does_not_read():
    dep = eagle3_dep(None, eagle_aux_hidden_state_layer_ids=[5, 29, 57])
    result = sc.aux_layers(dep)
    assert ids_of(result) == {"aux-layers-ignored", "aux-layers-mismatch"}
    same = sc.aux_layers(eagle3_dep(None, eagle_aux_hidden_state_layer_ids=[1, 29, 57]))
    assert same["status"] == "ok"  # recorded where unread, but they are what is captured
    unread = eagle3_dep([5, 29, 57])
    unread.ids_source = {"eagle_config": False, "top_level": False, "where": []}
    passed, _ = sc.engine_ids(unread)
    assert passed is None
    unread.capture = capture_of(target_source(ADD_1), None)
    assert "aux-layers-ignored" in ids_of(sc.aux_layers(unread))


def test_delegation_inheritance_and_output_capture():
    config = {"architectures": ["DerivedForCausalLM"], "num_hidden_layers": 32}
    found = capture_of(DELEGATING, [1, 15, 28], config)
    assert found["layers_to_capture"] == [2, 16, 29]
    assert found["delegated"]["class"] == "InnerModel"
    out_cfg = {"architectures": ["OutForCausalLM"], "num_hidden_layers": 32}
    assert capture_of(CAPTURES_OUTPUTS, [1, 15, 28], out_cfg)["layers_to_capture"] == [1, 15, 28]
    refused = capture_of(CAPTURES_OUTPUTS, None, out_cfg)
    assert "sets no capture layers" in refused["error"]


def test_aux_layers_unknown_reasons():
    no_source = eagle3_dep([1, 29, 57])
    no_source.capture = None
    assert sc.aux_layers(no_source)["status"] == "unknown"
    no_layers = {"architectures": ["DeepseekV3ForCausalLM"]}
    assert "num_hidden_layers" in capture_of(target_source(ADD_1), None, no_layers)["error"]
    elsewhere = (
        "from pkg.other import DeepseekV2ForCausalLM\n\n"
        "class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):\n    pass\n"
    )
    inherited = capture_of(elsewhere, None)
    assert "DeepseekV2ForCausalLM, whose code was not read" in inherited["error"]
    assert not inherited.get("missing")
    bare = capture_of(
        "import torch\n\nclass DeepseekV3ForCausalLM(torch.nn.Module):\n    pass\n", None
    )
    assert bare["missing"]  # the whole hierarchy was read: the target cannot capture


def test_target_unsupported():
    dep = eagle3_dep(None)
    dep.capture = capture_of(
        "import torch\n\nclass DeepseekV3ForCausalLM(torch.nn.Module):\n    pass\n", None
    )
    dep.capture_calls = ["set_eagle3_layers_to_capture"]
    [item] = sc.target_unsupported(dep)["findings"]
    assert item["id"] == "target-unsupported" and item["severity"] == "error"
    assert sc.aux_layers(dep)["status"] == "not-applicable"
    assert sc.target_unsupported(eagle3_dep(None))["status"] == "ok"
    served_eagle = eagle3_dep(None)
    served_eagle.spec = {"algorithm": "EAGLE"}
    assert sc.target_unsupported(served_eagle)["status"] == "not-applicable"


# -------------------------------------------------------------------------- fc-shape-mismatch
def _tensors(**shapes) -> list[dict]:
    return [{"name": n.replace("__", "."), "shape": list(s)} for n, s in shapes.items()]


def test_fc_shape():
    assert sc.fc_shape_mismatch(eagle3_dep())["status"] == "ok"
    wrong_target = eagle3_dep()
    wrong_target.target_config = dict(TARGET_61, hidden_size=256)
    [item] = sc.fc_shape_mismatch(wrong_target)["findings"]
    assert item["id"] == "fc-shape-mismatch" and item["evidence"]["expected_in"] == 768
    wrapped = eagle3_dep()
    wrapped.tensors = _tensors(model__fc__weight=(64, 384), eagle_wrapper__fc__weight=(4, 4))
    assert sc.fc_shape_mismatch(wrapped)["facts"]["tensor"] == "model.fc.weight"
    no_target = eagle3_dep()
    no_target.target_config = None  # the draft's own target_hidden_size is used
    assert sc.fc_shape_mismatch(no_target)["status"] == "ok"
    no_fc = eagle3_dep()
    no_fc.tensors = []
    assert sc.fc_shape_mismatch(no_fc)["status"] == "unknown"
    eagle1 = eagle3_dep(architectures=["EagleX"])
    eagle1.tensors = _tensors(fc__weight=(64, 128))
    assert sc.fc_shape_mismatch(eagle1)["status"] == "not-applicable"


# ---------------------------------------------------------------------- norm-flag-unsupported
def test_norm_flag_unsupported():
    words = {"fc", "hidden_norm", "norm_before_fc"}
    plain = eagle3_dep()
    plain.draft_words = words
    assert sc.norm_flag_unsupported(plain)["status"] == "ok"
    flag = eagle3_dep(norm_output=True)
    flag.draft_words = words
    [item] = sc.norm_flag_unsupported(flag)["findings"]
    assert item["evidence"]["unsupported"] == [{"config": "norm_output", "value": True}]
    in_eagle = eagle3_dep(eagle_config={"norm_before_fc": True})
    in_eagle.draft_words = words
    assert sc.norm_flag_unsupported(in_eagle)["status"] == "ok"
    off = eagle3_dep(norm_output=False)
    off.draft_words = words
    assert sc.norm_flag_unsupported(off)["status"] == "ok"
    no_source = eagle3_dep(fc_norm=True)
    assert sc.norm_flag_unsupported(no_source)["status"] == "unknown"


def _load(status="ok", outcomes=None, required=(), loaded=(), raised=None) -> LoadModel:
    return LoadModel(
        status,
        outcomes=outcomes or {},
        required=list(required),
        loaded_params=list(loaded),
        raised=raised,
        draft_class="Eagle3 (/e/d.py:1)",
    )


def test_norm_tensor_the_loader_drops():
    dep = eagle3_dep()
    dep.tensors = _tensors(fc__weight=(64, 384), input_norm__weight=(384,))
    dep.draft_words = set()
    dep.load = _load(outcomes={"input_norm.weight": {"outcome": "dropped", "how": "silent"}})
    [item] = sc.norm_flag_unsupported(dep)["findings"]
    assert item["evidence"]["unsupported"] == [{"tensor": ["input_norm.weight"]}]


# -------------------------------------------------------------------------- draft weights
def test_draft_weights():
    required = ["model.embed_tokens", "model.fc", "lm_head"]
    ok = eagle3_dep(hidden_size=128)
    ok.load = _load(required=required, loaded=["model.fc.weight", "lm_head.weight"])
    ok.embedding = {"shared": True, "evidence": ["w.py:3 set_embed(...)"]}
    assert sc.draft_weights(ok)["status"] == "ok"
    lost_head = eagle3_dep(hidden_size=128)
    lost_head.load = _load(
        required=required,
        loaded=["model.fc.weight"],
        outcomes={"model.lm_head.weight": {"outcome": "dropped", "how": "silent"}},
    )
    lost_head.embedding = ok.embedding
    [item] = sc.draft_weights(lost_head)["findings"]
    assert item["id"] == "required-weights-missing" and item["evidence"]["parameters"] == [
        "lm_head"
    ]
    assert "without a message" in item["detail"]
    not_shared = eagle3_dep(hidden_size=128)
    not_shared.load = _load(required=required, loaded=["model.fc.weight", "lm_head.weight"])
    not_shared.embedding = {"shared": False, "evidence": []}
    assert ids_of(sc.draft_weights(not_shared)) == {"embedding-missing"}
    other_width = eagle3_dep()  # shared, but the draft is 64 wide and the target 128
    other_width.load = not_shared.load
    other_width.embedding = ok.embedding
    assert ids_of(sc.draft_weights(other_width)) == {"embedding-missing"}
    raises = eagle3_dep()
    raises.load = _load(
        "raises",
        raised={
            "kind": "KeyError",
            "message": "KeyError: 'x'",
            "at": "l.py:9",
            "tensor": "model.fc.weight",
        },  # fmt: skip
    )
    [item] = sc.draft_weights(raises)["findings"]
    assert item["id"] == "draft-load-fails" and "l.py:9" in item["detail"]
    extra = eagle3_dep()
    extra.load = _load(
        required=["model.fc"],
        loaded=["model.fc.weight"],
        outcomes={"t2d": {"outcome": "dropped"}, "wrapper.x": {"outcome": "dropped"}},
    )
    [item] = sc.draft_weights(extra)["findings"]
    assert item["id"] == "unexpected-weights" and item["evidence"]["tensors"] == ["wrapper.x"]
    unknown = eagle3_dep()
    unknown.load = LoadModel("unknown", reason="line 9: While not interpreted")
    assert sc.draft_weights(unknown)["status"] == "unknown"
    mtp = sc.Deployment(draft_config={"architectures": ["DeepseekV3ForCausalLMNextN"]})
    assert sc.draft_weights(mtp)["status"] == "not-applicable"


# -------------------------------------------------------------------------- token-map-ignored
def test_token_map_ignored():
    def dep(algorithm, token_map):
        return sc.Deployment(engine="sglang", spec={"algorithm": algorithm, "token_map": token_map})

    warned = sc.token_map_ignored(dep("EAGLE3", "/m/map.pt"))
    assert [f["severity"] for f in warned["findings"]] == ["warning"]
    assert warned["findings"][0]["evidence"]["token_map"] == "/m/map.pt"
    assert sc.token_map_ignored(dep("EAGLE", "/m/map.pt"))["status"] == "ok"
    assert sc.token_map_ignored(dep("EAGLE3", None))["status"] == "ok"
    assert sc.token_map_ignored(sc.Deployment())["status"] == "not-applicable"


# -------------------------------------------------------------------------- accept-length-low
def server_with(values: list[float] | None, metrics=None) -> dict:
    figures = {}
    if values:
        figures["accept_length"] = {
            "values": values,
            "count": len(values),
            "first": values[0],
            "last": values[-1],
            "mean": sum(values) / len(values),
        }
    return {
        "engine": "sglang",
        "log": {"path": "/l/server.log", "figures": figures},
        "metrics": metrics,
        "server_info": None,
    }


def accept_dep(values, steps=3, metrics=None, running=False, engine="sglang", bonus=None):
    return sc.Deployment(
        engine=engine,
        spec={"num_steps": steps, "num_draft_tokens": None, "algorithm": "EAGLE3"},
        server=server_with(values, metrics),
        server_running=running,
        includes_bonus=bonus,
    )


def test_accept_length_low():
    nothing = sc.accept_length_low(accept_dep([1.0, 1.0, 1.0]))
    [item] = nothing["findings"]
    assert item["id"] == "accept-length-low" and item["severity"] == "error"
    assert item["evidence"]["observed"] == 1.0 and item["evidence"]["ceiling"] == 4
    low = sc.accept_length_low(accept_dep([1.4, 1.6]))  # 1.5 of 4: under 40%
    assert [f["severity"] for f in low["findings"]] == ["error"]
    assert sc.accept_length_low(accept_dep([2.9, 3.1]))["status"] == "ok"
    from_metrics = sc.accept_length_low(accept_dep(None, metrics={"spec_accept_length": 1.0}))
    assert from_metrics["findings"][0]["evidence"]["from"] == "/metrics spec_accept_length"
    no_steps = sc.accept_length_low(accept_dep([1.0], steps=None))
    assert no_steps["status"] == "unknown" and "draft steps" in no_steps["reason"]
    not_running = sc.accept_length_low(accept_dep(None))
    assert not_running["status"] == "not-applicable"
    # running, its log read but no figure in it yet: it has not drafted, no log to ask for
    running = sc.accept_length_low(accept_dep(None, running=True))
    assert running["status"] == "unknown" and "no accept-length line yet" in running["reason"]
    no_log = accept_dep(None, running=True)
    no_log.server["log"] = None
    unread = sc.accept_length_low(no_log)
    assert unread["status"] == "unknown" and "--var log" in unread["reason"]
    # vLLM 0.8.5's mean acceptance length leaves out the bonus token: the ceiling is steps
    no_bonus = sc.accept_length_low(accept_dep([1.5], engine="vllm", bonus=False))
    assert no_bonus["facts"]["ceiling"] == 3 and no_bonus["status"] == "ok"
    bonus = sc.accept_length_low(accept_dep([1.5], engine="vllm", bonus=True))
    assert bonus["facts"]["ceiling"] == 4 and bonus["status"] == "found"


def test_run_checks_clears_a_correct_setup():
    dep = eagle3_dep([1, 29, 57], train=[1, 29, 57])
    dep.draft_words = {"fc"}
    dep.load = _load(required=["model.fc"], loaded=["model.fc.weight"])
    dep.embedding = {"shared": True, "evidence": ["w.py:1"]}
    dep.server = server_with([3.0, 3.2])
    dep.capture_calls = ["set_eagle3_layers_to_capture"]
    result = sc.run_checks(dep)
    assert result["inconclusive"] == []
    assert [f["id"] for f in result["findings"]] == ["spec-config-cleared"]
    assert set(result["checks"]) == set(sc.CHECK_IDS)


# --------------------------------------------------------------- the playbook, end to end
DRAFT_MODEL_FILE = '''
"""EAGLE-3 head (test fixture, fuller than tests/engine_trees.py's)."""
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.q_proj = nn.Linear(2 * config.hidden_size, config.hidden_size)


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.down_proj = nn.Linear(2 * config.hidden_size, config.hidden_size)


class LlamaForCausalLMEagle3(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.fc = nn.Linear(config.target_hidden_size * 3, config.hidden_size, bias=False)
        self.hidden_norm = nn.LayerNorm(config.hidden_size)
        self.input_layernorm = nn.LayerNorm(config.hidden_size)
        self.self_attn = SelfAttention(config)
        self.mlp = MLP(config)
        self.norm = nn.LayerNorm(config.hidden_size)
        self.lm_head = nn.Linear(config.hidden_size, config.draft_vocab_size)
        self.hot_token_id = None

    def set_embed(self, embed):
        if self.config.target_hidden_size != self.config.hidden_size:
            return
        self.embed_tokens.weight = embed

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, loaded_weight in weights:
            if "d2t" in name:
                self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])
                continue
            name = name.replace("midlayer.", "")
            if name in params:
                params[name].data.copy_(loaded_weight)

    def get_hot_token_id(self):
        return self.hot_token_id


EntryClass = [LlamaForCausalLMEagle3]
'''


@pytest.fixture(scope="module")
def spec_world(tmp_path_factory):
    from tests.checkpoints import write_eagle3_checkpoint, write_target_config
    from tests.engine_trees import write_sglang_checkout

    root = tmp_path_factory.mktemp("spec")
    engine = write_sglang_checkout(root / "engine", direct_variant=False)
    models = engine / "srt" / "models"
    (models / "llama_eagle3.py").write_text(textwrap.dedent(DRAFT_MODEL_FILE).lstrip())
    (models / "deepseek_v2.py").write_text(target_source(ADD_1_WHEN_FIRST_IS_1))
    target = write_target_config(root / "target")
    cfg = json.loads((target / "config.json").read_text())
    cfg["num_hidden_layers"] = 61
    (target / "config.json").write_text(json.dumps(cfg))
    good = write_eagle3_checkpoint(root / "drafts" / "good")
    save_file(
        {"embed_tokens.weight": np.zeros((16, 64), dtype=np.float16)},
        str(good / "embed.safetensors"),
    )
    bare = write_eagle3_checkpoint(root / "drafts" / "bare")  # no embedding of its own
    return {"root": root, "engine": engine, "target": target, "good": good, "bare": bare}


def _launch(target: Path, draft: Path, algorithm: str) -> str:
    return (
        f"python -m sglang.launch_server --model-path {target} "
        f"--speculative-draft-model-path {draft} --speculative-algorithm {algorithm} "
        "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
    )


def _decode_log(path: Path, value: float) -> Path:
    line = (
        "Decode batch, #running-req: 1, #token: 90, token usage: 0.00, "
        f"accept len: {value:.2f}, accept rate: 0.50, gen throughput (token/s): 80.00"
    )
    path.write_text("\n".join([line] * 5) + "\n")
    return path


def _run(box, monkeypatch, **given):
    from remotedbg.playbook import bind_variables, find_playbook, load_playbook, run_playbook
    from remotedbg.remote.primitives import Remote

    playbook = load_playbook(find_playbook("spec-audit"))
    session = box.session()
    try:
        return run_playbook(playbook, Remote(session), bind_variables(playbook, given))
    finally:
        session.close()


def test_spec_audit_correct_setup_is_ok(box, monkeypatch, spec_world, tmp_path):
    outcome = _run(
        box,
        monkeypatch,
        args=_launch(spec_world["target"], spec_world["good"], "EAGLE3"),
        log=str(_decode_log(tmp_path / "good.log", 3.2)),
        roots=str(spec_world["engine"]),
        train_layers="1,29,57",
    )
    assert [s.status for s in outcome.steps] == ["ok"] * 6
    assert outcome.verdict == "ok", (outcome.findings, outcome.inconclusive)
    assert "spec-config-cleared" in {f["id"] for f in outcome.findings}
    [entry] = [e for e in outcome.results["spec"]["spec"] if e["draft"]]
    facts = entry["checks"]["aux-layers-mismatch"]["facts"]
    assert facts["layers_to_capture"] == [2, 30, 58] and facts["physical_layers"] == [1, 29, 57]
    assert entry["target_source"].endswith("srt/models/deepseek_v2.py")
    assert entry["draft_class_source"].endswith("srt/models/llama_eagle3.py")
    assert outcome.round_trips <= 14


def test_spec_audit_finds_each_defect(box, monkeypatch, spec_world, tmp_path):
    outcome = _run(
        box,
        monkeypatch,
        args=_launch(spec_world["target"], spec_world["bare"], "EAGLE3")
        + " --speculative-token-map /models/map.pt",
        log=str(_decode_log(tmp_path / "bad.log", 1.0)),
        roots=str(spec_world["engine"]),
        train_layers="2,30,58",
    )
    found = {f["id"] for f in outcome.findings}
    assert {
        "aux-layers-mismatch",
        "embedding-missing",
        "accept-length-low",
        "token-map-ignored",
    } <= found, outcome.findings
    assert outcome.verdict == "defect"
    for item in outcome.findings:
        if item["id"] in ("aux-layers-mismatch", "embedding-missing"):
            assert item["evidence"]["draft"] == str(spec_world["bare"])
    # served as EAGLE, the same head is first of all the wrong algorithm; what only concerns
    # an EAGLE-3 head served as EAGLE-3 (aux layers, its loader) is then not applicable
    wrong = _run(
        box,
        monkeypatch,
        args=_launch(spec_world["target"], spec_world["bare"], "EAGLE"),
        roots=str(spec_world["engine"]),
    )
    found = {f["id"] for f in wrong.findings if f["severity"] == "error"}
    assert found == {"algorithm-mismatch"}, wrong.findings


def test_spec_audit_without_args_says_what_it_could_not_check(
    box, monkeypatch, spec_world, tmp_path
):
    outcome = _run(
        box,
        monkeypatch,
        draft=str(spec_world["good"]),
        target=str(spec_world["target"]),
        roots=str(spec_world["engine"]),
    )
    # what was named decides: the draft, target and engine are fine; the launch flags that no
    # server and no --var args gave are recorded as not checked, with how to check them
    assert outcome.verdict == "ok", outcome.inconclusive
    (row,) = outcome.results["spec"]["spec"]
    algorithm = row["checks"]["algorithm-mismatch"]
    assert algorithm["status"] == "not-applicable" and "--var args" in algorithm["reason"]


def test_spec_audit_through_the_cli(cli, spec_world, tmp_path):
    report = tmp_path / "spec.md"
    result = cli(
        "playbook",
        "spec-audit",
        "-H",
        "testbox",
        "--report",
        str(report),
        "--var",
        "args=" + _launch(spec_world["target"], spec_world["bare"], "EAGLE"),
        "--var",
        f"log={_decode_log(tmp_path / 'bad.log', 1.0)}",
        "--var",
        f"roots={spec_world['engine']}",
    )
    out = result.stdout.decode()
    assert result.returncode == 1
    assert "DEFECT" in out and "algorithm-mismatch" in out and "accept-length-low" in out
    assert "accept length last 1.0" in out
    assert "`algorithm-mismatch`" in report.read_text()
