"""remotedbg.analysis.spec_checks: each finding raised by a case that should raise it, not by a
correct one; and the spec-audit playbook end to end on the test box (actions registered here)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from remotedbg.analysis import spec_checks as sc

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


# ------------------------------------------------------------------------ algorithm-mismatch
@pytest.mark.parametrize(
    "arch,algorithm,engine,raised",
    [
        ("LlamaForCausalLMEagle3", "EAGLE", "sglang", True),
        ("LlamaForCausalLMEagle3", "NEXTN", "sglang", True),
        ("LlamaForCausalLMEagle3", "EAGLE3", "sglang", False),
        ("LlamaForCausalLMEagle", "EAGLE3", "sglang", True),
        ("LlamaForCausalLMEagle", "EAGLE", "sglang", False),
        ("Eagle3LlamaForCausalLM", "eagle", "vllm", True),
        ("Eagle3LlamaForCausalLM", "eagle3", "vllm", False),
    ],
)
def test_algorithm_mismatch(arch, algorithm, engine, raised):
    result = sc.algorithm_mismatch([arch], algorithm, engine)
    assert result["ran"]
    assert ("algorithm-mismatch" in ids_of(result)) is raised
    if raised:
        item = result["findings"][0]
        assert item["severity"] == "error"
        assert item["evidence"] == {
            "architectures": [arch],
            "algorithm": algorithm,
            "engine": engine,
        }


def test_algorithm_mismatch_says_why_it_cannot_run():
    no_args = sc.algorithm_mismatch(["LlamaForCausalLMEagle3"], None)
    assert not no_args["ran"] and "algorithm is unknown" in no_args["inconclusive"]
    no_arch = sc.algorithm_mismatch([], "EAGLE3")
    assert not no_arch["ran"] and "architectures" in no_arch["inconclusive"]
    unknown = sc.algorithm_mismatch(["LlamaForCausalLM"], "EAGLE3")
    assert not unknown["ran"] and "no rule" in unknown["inconclusive"]


# ------------------------------------------------------------------------ aux-layers-mismatch
def test_conversion_rules_and_capture_point():
    assert sc.conversion_rule(target_source(ADD_1)) == "add-1"
    assert sc.conversion_rule(target_source(ADD_1_WHEN_FIRST_IS_1)) == "add-1-when-first-is-1"
    assert sc.conversion_rule(target_source(KEEP)) == "keep"
    assert sc.capture_point(target_source(KEEP))["point"] == "input"
    assert sc.capture_point(CAPTURES_OUTPUTS)["point"] == "output"
    assert sc.capture_point("x = 1\n")["point"] == "unknown"


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
    result = sc.aux_layers_mismatch(
        eagle3_config(draft_ids), TARGET_61, target_source(convert), train_layers=physical
    )
    assert result["ran"], result["inconclusive"]
    assert result["facts"]["layers_to_capture"] == capture
    assert result["facts"]["physical_layers"] == physical
    assert not result["findings"]  # trained on exactly what is captured


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
    result = sc.aux_layers_mismatch(
        eagle3_config(draft_ids), TARGET_61, target_source(convert), train, source_path="/e/m.py"
    )
    [item] = [f for f in result["findings"] if f["id"] == "aux-layers-mismatch"]
    assert item["severity"] == "error"
    assert item["evidence"]["train_layers"] == train
    assert item["evidence"]["physical_layers"] != train
    assert item["evidence"]["set_at"].startswith("/e/m.py:")


def test_config_ids_stand_in_for_training_layers_as_a_warning():
    result = sc.aux_layers_mismatch(
        eagle3_config([2, 30, 58]), TARGET_61, target_source(ADD_1_WHEN_FIRST_IS_1)
    )
    [item] = result["findings"]
    assert item["id"] == "aux-layers-mismatch" and item["severity"] == "warning"
    assert item["evidence"]["train_layers_from"] == "eagle_config.eagle_aux_hidden_state_layer_ids"
    fine = sc.aux_layers_mismatch(eagle3_config([1, 29, 57]), TARGET_61, target_source(ADD_1))
    assert fine["ran"] and not fine["findings"]


def test_ids_where_sglang_does_not_read_them():
    config = eagle3_config(None, eagle_aux_hidden_state_layer_ids=[1, 29, 57])
    result = sc.aux_layers_mismatch(config, TARGET_61, target_source(ADD_1))
    # crosscheck's placement finding is kept; the default capture happens to be those layers
    assert ids_of(result) == {"aux-layers-ignored"}
    assert result["facts"]["train_layers_from"] == "eagle_aux_hidden_state_layer_ids"
    other = eagle3_config(None, eagle_aux_hidden_state_layer_ids=[5, 29, 57])
    assert "aux-layers-mismatch" in ids_of(
        sc.aux_layers_mismatch(other, TARGET_61, target_source(ADD_1))
    )


def test_delegation_inheritance_and_output_capture():
    config = {"architectures": ["DerivedForCausalLM"], "num_hidden_layers": 32}
    result = sc.aux_layers_mismatch(eagle3_config([1, 15, 28]), config, DELEGATING, [1, 15, 28])
    assert result["facts"]["layers_to_capture"] == [2, 16, 29]
    assert "InnerModel" in result["facts"]["set_at"]
    assert not result["findings"]
    out_cfg = {"architectures": ["OutForCausalLM"], "num_hidden_layers": 32}
    kept = sc.aux_layers_mismatch(
        eagle3_config([1, 15, 28]), out_cfg, CAPTURES_OUTPUTS, [1, 15, 28]
    )
    assert kept["facts"]["capture_point"] == "output" and not kept["findings"]
    refused = sc.aux_layers_mismatch(eagle3_config(None), out_cfg, CAPTURES_OUTPUTS, [1, 15, 28])
    assert not refused["ran"] and "sets no capture layers" in refused["inconclusive"]


def test_aux_layers_mismatch_inconclusive_reasons():
    no_source = sc.aux_layers_mismatch(eagle3_config([1, 29, 57]), TARGET_61, None, [1, 29, 57])
    assert not no_source["ran"] and "source" in no_source["inconclusive"]
    no_train = sc.aux_layers_mismatch(eagle3_config(None), TARGET_61, target_source(ADD_1))
    assert not no_train["ran"] and "train_layers" in no_train["inconclusive"]
    assert "[1, 29, 57]" in no_train["inconclusive"]
    no_layers = {"architectures": ["DeepseekV3ForCausalLM"]}
    no_n = sc.aux_layers_mismatch(eagle3_config(None), no_layers, target_source(ADD_1), [1, 2, 3])
    assert not no_n["ran"] and "num_hidden_layers" in no_n["inconclusive"]
    elsewhere = "class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):\n    pass\n"
    inherited = sc.aux_layers_mismatch(eagle3_config(None), TARGET_61, elsewhere, [1, 2, 3])
    assert "DeepseekV2ForCausalLM, defined in another file" in inherited["inconclusive"]


# -------------------------------------------------------------------------- fc-shape-mismatch
def _tensors(**shapes) -> list[dict]:
    return [{"name": n.replace("__", "."), "shape": list(s)} for n, s in shapes.items()]


def test_fc_shape():
    good = _tensors(fc__weight=(64, 384))
    assert not sc.fc_shape_mismatch(good, eagle3_config(), TARGET_61)["findings"]
    wrong_target = dict(TARGET_61, hidden_size=256)
    bad = sc.fc_shape_mismatch(good, eagle3_config(), wrong_target)
    [item] = bad["findings"]
    assert item["id"] == "fc-shape-mismatch" and item["evidence"]["expected_in"] == 768
    four = sc.fc_shape_mismatch(good, eagle3_config([1, 10, 20, 57]), TARGET_61)
    assert four["findings"][0]["evidence"]["aux_layers"] == 4
    wrapped = _tensors(model__fc__weight=(64, 384))
    assert sc.fc_shape_mismatch(wrapped, eagle3_config(), TARGET_61)["facts"]["tensor"]
    # without a target config, the draft's own target_hidden_size is used
    assert not sc.fc_shape_mismatch(good, eagle3_config(), None)["findings"]
    no_fc = sc.fc_shape_mismatch([], eagle3_config(), TARGET_61)
    assert not no_fc["ran"] and "fc.weight" in no_fc["inconclusive"]
    eagle1 = sc.fc_shape_mismatch(good, dict(eagle3_config(), architectures=["EagleX"]), None)
    assert not eagle1["ran"]


# ---------------------------------------------------------------------- norm-flag-unsupported
DRAFT_CLASS = """
from torch import nn


class LlamaForCausalLMEagle3(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.fc = nn.Linear(config.target_hidden_size * 3, config.hidden_size)
        self.hidden_norm = nn.LayerNorm(config.hidden_size)
        {extra}

    def set_embed(self, embed):
        if self.config.target_hidden_size != self.config.hidden_size:
            return
        self.embed_tokens.weight = embed
    # norm_output is mentioned in this comment only: it does not count
"""


def draft_class(extra: str = "pass") -> str:
    return DRAFT_CLASS.replace("{extra}", extra)


def test_norm_flag_unsupported():
    names = ["fc.weight", "midlayer.hidden_norm.weight", "norm.weight"]
    ok = sc.norm_flag_unsupported(eagle3_config(), names, draft_class())
    assert ok["ran"] and not ok["findings"]
    flag = sc.norm_flag_unsupported(
        eagle3_config(norm_output=True), names, draft_class(), "/e/d.py"
    )
    [item] = flag["findings"]
    assert item["id"] == "norm-flag-unsupported" and item["severity"] == "error"
    assert item["evidence"]["unsupported"] == [{"config": "norm_output", "value": True}]
    supported = draft_class('self.norm_before_fc = getattr(config, "norm_before_fc", False)')
    in_eagle = eagle3_config(eagle_config={"norm_before_fc": True})
    assert not sc.norm_flag_unsupported(in_eagle, names, supported)["findings"]
    assert sc.norm_flag_unsupported(in_eagle, names, draft_class())["findings"]
    off = eagle3_config(norm_output=False)
    assert not sc.norm_flag_unsupported(off, names, draft_class())["findings"]
    trained = sc.norm_flag_unsupported(
        eagle3_config(), [*names, "input_norm.weight"], draft_class()
    )
    assert trained["findings"][0]["evidence"]["unsupported"] == [{"tensor": ["input_norm.weight"]}]
    no_source = sc.norm_flag_unsupported(eagle3_config(fc_norm=True), names, None)
    assert not no_source["ran"] and "source" in no_source["inconclusive"]


# -------------------------------------------------------------------------- embedding-missing
def test_embedding_missing():
    names = ["fc.weight", "midlayer.hidden_norm.weight"]
    missing = sc.embedding_missing(eagle3_config(), TARGET_61, names, draft_class(), "/e/d.py")
    [item] = missing["findings"]
    assert item["id"] == "embedding-missing" and item["severity"] == "error"
    assert "64 != target hidden size 128" in item["detail"]
    present = sc.embedding_missing(
        eagle3_config(), TARGET_61, [*names, "embed_tokens.weight"], draft_class()
    )
    assert present["ran"] and not present["findings"]
    shared = eagle3_config(hidden_size=128)
    assert not sc.embedding_missing(shared, TARGET_61, names, draft_class())["findings"]
    no_setter = draft_class().replace("def set_embed(", "def unrelated(")
    own = sc.embedding_missing(shared, TARGET_61, names, no_setter)
    assert "no set_embed" in own["findings"][0]["detail"]
    bare = {"architectures": ["LlamaForCausalLMEagle3"]}
    unknown = sc.embedding_missing(bare, None, names, None)
    assert not unknown["ran"] and "cannot tell" in unknown["inconclusive"]


# -------------------------------------------------------------------------- token-map-ignored
def test_token_map_ignored():
    warned = sc.token_map_ignored({"algorithm": "EAGLE3", "token_map": "/m/map.pt"})
    assert [f["severity"] for f in warned["findings"]] == ["warning"]
    assert warned["findings"][0]["evidence"]["token_map"] == "/m/map.pt"
    assert not sc.token_map_ignored({"algorithm": "EAGLE", "token_map": "/m/map.pt"})["findings"]
    assert not sc.token_map_ignored({"algorithm": "EAGLE3", "token_map": None})["findings"]
    assert not sc.token_map_ignored(None)["ran"]


# -------------------------------------------------------------------------- accept-length-low
def server_with(values: list[float] | None, steps: int | None = 3, metrics=None) -> dict:
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
        "spec": {"num_steps": steps, "num_draft_tokens": None, "algorithm": "EAGLE3"},
        "log": {"path": "/l/server.log", "figures": figures},
        "metrics": metrics,
        "server_info": None,
    }


def test_accept_length_low():
    nothing = sc.accept_length_low(server_with([1.0, 1.0, 1.0]))
    [item] = nothing["findings"]
    assert item["id"] == "accept-length-low" and item["severity"] == "error"
    assert item["evidence"]["observed"] == 1.0 and item["evidence"]["ceiling"] == 4
    low = sc.accept_length_low(server_with([1.4, 1.6]))
    assert [f["severity"] for f in low["findings"]] == ["warning"]
    assert not sc.accept_length_low(server_with([2.9, 3.1]))["findings"]
    from_metrics = sc.accept_length_low(server_with(None, metrics={"spec_accept_length": 1.0}))
    assert from_metrics["findings"][0]["evidence"]["from"] == "/metrics spec_accept_length"
    no_steps = sc.accept_length_low(server_with([1.0], steps=None))
    assert not no_steps["ran"] and "ceiling is unknown" in no_steps["inconclusive"]
    no_figures = sc.accept_length_low(server_with(None))
    assert not no_figures["ran"] and "no accept length observed" in no_figures["inconclusive"]


def test_run_checks_clears_a_correct_setup():
    tensors = _tensors(fc__weight=(64, 384), embed_tokens__weight=(16, 64))
    tensors += _tensors(midlayer__hidden_norm__weight=(64,))
    server = server_with([3.0, 3.2])
    result = sc.run_checks(
        draft_config=eagle3_config([1, 29, 57]),
        tensors=tensors,
        target_config=TARGET_61,
        target_source=target_source(ADD_1),
        draft_class_source=draft_class(),
        server=server,
        train_layers=[1, 29, 57],
    )
    assert result["inconclusive"] == []
    assert [f["id"] for f in result["findings"]] == ["spec-config-cleared"]
    assert set(result["checks"]) == set(sc.CHECK_IDS)


# --------------------------------------------------------------- the playbook, end to end
DRAFT_MODEL_FILE = '''
"""EAGLE-3 head (test fixture, fuller than tests/engine_trees.py's)."""
import torch
from torch import nn


class LlamaForCausalLMEagle3(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.fc = nn.Linear(config.target_hidden_size * 3, config.hidden_size, bias=False)
        self.hidden_norm = nn.LayerNorm(config.hidden_size)
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
        args=_launch(spec_world["target"], spec_world["bare"], "EAGLE")
        + " --speculative-token-map /models/map.pt",
        log=str(_decode_log(tmp_path / "bad.log", 1.0)),
        roots=str(spec_world["engine"]),
        train_layers="2,30,58",
    )
    found = {f["id"] for f in outcome.findings}
    assert {
        "algorithm-mismatch",
        "aux-layers-mismatch",
        "embedding-missing",
        "accept-length-low",
    } <= found, outcome.findings
    assert "token-map-ignored" not in found  # EAGLE, not EAGLE3
    assert outcome.verdict == "defect"
    for item in outcome.findings:
        if item["id"] in ("algorithm-mismatch", "embedding-missing"):
            assert item["evidence"]["draft"] == str(spec_world["bare"])


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
    assert outcome.verdict == "inconclusive", outcome.findings
    text = " ".join(outcome.inconclusive)
    assert "algorithm is unknown" in text and "train_layers" in text


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
