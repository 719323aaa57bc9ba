"""Nested target configs (multimodal wrappers) and capture calls that cross into another file.

Pure: configs are dicts, engine code is this file's own fixture source in a SourceIndex; the real
engines' behaviour is checked by tests/test_conformance.py (the kimi-* scenarios).
"""

from __future__ import annotations

import textwrap

import pytest

from remotedbg.analysis import capture as cap
from remotedbg.analysis import fit_checks as fc
from remotedbg.analysis import spec_checks as sc
from remotedbg.analysis.pysource import SourceIndex
from remotedbg.engines import sglang, vllm
from remotedbg.engines.loader_rules import vllm_engine_params
from remotedbg.engines.text_config import text_config, text_config_key, text_field

LANGUAGE = {
    "hidden_size": 7168,
    "num_hidden_layers": 61,
    "num_attention_heads": 64,
    "vocab_size": 163840,
    "max_position_embeddings": 262144,
    "rope_theta": 50000.0,
    "rope_scaling": {"type": "yarn", "factor": 64.0, "original_max_position_embeddings": 4096},
}
WRAPPER = {"architectures": ["WrapperForConditionalGeneration"], "text_config": LANGUAGE,
           "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27}}  # fmt: skip


@pytest.mark.parametrize(
    "config,key",
    [
        (WRAPPER, "text_config"),
        ({"llm_config": LANGUAGE}, "llm_config"),
        ({"language_config": LANGUAGE}, "language_config"),
        ({"thinker_config": {"text_config": LANGUAGE}}, "thinker_config.text_config"),
        ({"thinker_config": LANGUAGE}, "thinker_config"),
        # llm_config before text_config, as SGLang's get_hf_text_config orders them
        ({"llm_config": LANGUAGE, "text_config": {"hidden_size": 1}}, "llm_config"),
    ],
)
def test_nested_language_config_is_found(config, key):
    assert text_config_key(config) == key
    assert text_config(config) is LANGUAGE
    assert text_field(config, "num_hidden_layers") == 61


def test_flat_and_odd_configs():
    flat = dict(LANGUAGE)
    assert text_config_key(flat) == "" and text_config(flat) is flat
    assert text_config(None) == {} and text_field(None, "hidden_size") is None
    # a sub-config that is not a dict (a string, a null) is not one
    assert text_config({"text_config": "x", "hidden_size": 8}) == {"text_config": "x",
                                                                   "hidden_size": 8}  # fmt: skip
    # the wrapper's own keys are not merged into the language model's
    assert "vision_config" not in text_config(WRAPPER)


def test_context_and_rope_rules_read_the_language_model():
    # SGLang: yarn with original_max_position_embeddings -> no factor (get_context_length)
    assert sglang.context_length(WRAPPER) == sglang.context_length(LANGUAGE) == 262144
    assert vllm.context_length(WRAPPER, "0.33.0") == 262144
    draft = {"rope_theta": 10000.0, "max_position_embeddings": 262144}
    dep = sc.Deployment(draft_config=draft, target_config=WRAPPER, engine="sglang")
    rope = fc.rope_mismatch(dep)
    assert [f["id"] for f in rope["findings"]] == ["rope-mismatch"]
    assert rope["findings"][0]["evidence"]["target"]["rope_theta"] == 50000.0


def test_fc_width_reads_the_language_model_hidden_size():
    tensors = [{"name": "fc.weight", "shape": [7168, 3 * 7168], "dtype": "BF16"}]
    dep = sc.Deployment(draft_config={"architectures": ["LlamaForCausalLMEagle3"],
                                      "hidden_size": 7168, "draft_vocab_size": 32000},
                        tensors=tensors, target_config=WRAPPER, engine="sglang",
                        spec={"algorithm": "EAGLE3"})  # fmt: skip
    ok = sc.fc_shape_mismatch(dep)
    assert ok["status"] == "ok", ok
    assert ok["facts"]["hidden_size_from"] == "target config text_config.hidden_size"
    dep.tensors = [{"name": "fc.weight", "shape": [7168, 2 * 7168], "dtype": "BF16"}]
    assert [f["id"] for f in sc.fc_shape_mismatch(dep)["findings"]] == ["fc-shape-mismatch"]


def test_vllm_model_config_answers_from_the_language_model():
    params = vllm_engine_params({}, WRAPPER, {})
    model_config = params["vllm_config"]["model_config"]
    assert model_config["hf_config"] is WRAPPER  # the wrapper stays the hf_config
    assert model_config["get_vocab_size"].value == 163840
    assert model_config["get_num_layers"].value == 61


# ------------------------------------------------------------------ capture across files
# A wrapper in one file building its language model (defined in another file) from
# config.text_config; the language model's setter keeps ids unless the first is 1.
LANGUAGE_MODEL = """
from torch import nn


class InnerDecoder(nn.Module):
    def forward(self, hidden_states, residual):
        for i in range(len(self.layers)):
            if i in self.layers_to_capture:
                self.aux.append(hidden_states + residual)
            hidden_states, residual = self.layers[i](hidden_states, residual)


class BaseLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        if not self.pp_group.is_last_rank:
            return
        if layer_ids is None:
            n = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, n // 2, n - 3]
        elif layer_ids and layer_ids[0] == 1:
            self.model.layers_to_capture = [v + 1 for v in layer_ids]
        else:
            self.model.layers_to_capture = list(layer_ids)

    def default_layers(self):
        n = len(self.model.layers)
        return (2, n // 2, n - 3)


class DerivedLM(BaseLM):
    pass
"""
SGLANG_STYLE_WRAPPER = """
from pkg.models.language import DerivedLM


class WrapperForConditionalGeneration:
    def __init__(self, config, quant_config=None):
        self.config = config
        self.language_model = None
        if not config.encoder_only:
            self.language_model = DerivedLM(config.text_config, quant_config)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        if self.language_model is None or not hasattr(
            self.language_model, "set_eagle3_layers_to_capture"
        ):
            raise AttributeError("no EAGLE-3")
        self.language_model.set_eagle3_layers_to_capture(layer_ids)
"""
# vLLM's shape: the member comes from a registry factory, the runner asks a default getter
VLLM_STYLE_WRAPPER = """
from pkg.models.utils import build_registered


class SupportsCapture:
    def get_eagle3_default_aux_hidden_state_layers(self):
        holder = self
        if hasattr(self, "get_language_model"):
            holder = self.get_language_model()
        holder = getattr(holder, "model", holder)
        n = len(holder.layers)
        return (2, n // 2, n - 3)


class WrapperForConditionalGeneration(SupportsCapture):
    def get_language_model(self):
        return self.language_model

    def __init__(self, *, vllm_config, prefix=""):
        config = vllm_config.model_config.hf_config
        self.language_model = build_registered(
            vllm_config=vllm_config, hf_config=config.text_config, architectures=["DerivedLM"]
        )

    def set_aux_hidden_state_layers(self, layers):
        self.language_model.set_aux_hidden_state_layers(layers)
"""


def _index(wrapper: str) -> SourceIndex:
    index = SourceIndex("pkg", "/e/pkg")
    index.add("/e/pkg/models/language.py", textwrap.dedent(LANGUAGE_MODEL))
    index.add("/e/pkg/models/wrapper.py", textwrap.dedent(wrapper))
    return index


def _wrapper(index: SourceIndex):
    module = index.module_at("/e/pkg/models/wrapper.py")
    return index.resolve(module, "WrapperForConditionalGeneration")


@pytest.mark.parametrize(
    "ids,expected",
    [([1, 29, 57], [2, 30, 58]), ([2, 30, 58], [2, 30, 58]), ([0, 28, 56], [0, 28, 56]),
     (None, [2, 30, 58])],
)  # fmt: skip
def test_a_wrapper_delegation_runs_the_language_models_setter(ids, expected):
    index = _index(SGLANG_STYLE_WRAPPER)
    got = cap.evaluate_capture(index, _wrapper(index), ids, WRAPPER)
    assert got["layers_to_capture"] == expected, got
    assert got["class"] == "WrapperForConditionalGeneration"
    assert got["delegated"]["class"] == "BaseLM"
    assert got["delegated"]["path"] == "/e/pkg/models/language.py"
    assert cap.capture_point(index.module_at(got["delegated"]["path"]).source)["point"] == "input"


def test_without_the_language_models_file_the_wrapper_is_not_computable():
    index = SourceIndex("pkg", "/e/pkg")
    index.add("/e/pkg/models/wrapper.py", textwrap.dedent(SGLANG_STYLE_WRAPPER))
    got = cap.evaluate_capture(index, _wrapper(index), None, WRAPPER)
    assert "not computable" in got["error"]
    assert "config.text_config was not followed" in got["error"]


def test_a_registry_built_member_is_followed_for_the_default_getter():
    index = _index(VLLM_STYLE_WRAPPER)
    wrapper = _wrapper(index)
    assert cap.registry_members(index, wrapper) == ["DerivedLM"]
    language = index.module_at("/e/pkg/models/language.py")

    def registry(arch: str):
        return index.resolve(language, arch) if arch == "DerivedLM" else None

    methods = ("get_eagle3_default_aux_hidden_state_layers",)
    got = cap.evaluate_capture(index, wrapper, None, WRAPPER, methods, registry)
    assert got["layers_to_capture"] == [2, 30, 58], got
    assert got["layers_of"] == {"class": "DerivedLM", "path": "/e/pkg/models/language.py"}
    # without the registry the member's class is unknown: not computable, not a guess
    unresolved = cap.evaluate_capture(index, wrapper, None, WRAPPER, methods)
    assert "error" in unresolved


def test_a_flat_target_is_unchanged():
    index = _index(SGLANG_STYLE_WRAPPER)
    language = index.module_at("/e/pkg/models/language.py")
    got = cap.evaluate_capture(index, index.resolve(language, "DerivedLM"), [1, 29, 57], LANGUAGE)
    assert got["layers_to_capture"] == [2, 30, 58]
    assert got["delegated"] is None


# ------------------------------------------------------------------ a release without the class
def _unregistered(fallback: dict) -> sc.Deployment:
    dep = sc.Deployment(
        draft_config={"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 7168},
        target_config=WRAPPER, engine="sglang", engine_version="0.5.6",
        spec={"algorithm": "EAGLE3"},
    )  # fmt: skip
    dep.capture = {"error": "no class WrapperForConditionalGeneration in /e/pkg/srt/models",
                   "missing": True, "unregistered": True, "fallback": fallback}  # fmt: skip
    return dep


def test_a_target_the_release_lacks_is_unsupported_unless_its_fallback_captures():
    none = sc.target_unsupported(_unregistered({"files": ["srt/models/transformers.py"],
                                                "methods": []}))  # fmt: skip
    assert [f["id"] for f in none["findings"]] == ["target-unsupported"]
    assert "has no capture method either" in none["findings"][0]["detail"]
    no_fallback = sc.target_unsupported(_unregistered({"files": [], "methods": []}))
    assert "it has no Transformers fallback" in no_fallback["findings"][0]["detail"]
    captures = sc.target_unsupported(
        _unregistered({"files": ["m/transformers"], "methods": ["set_aux_hidden_state_layers"]})
    )
    assert captures["status"] == "unknown" and not captures["findings"]
    unread = sc.target_unsupported(_unregistered({"files": None, "methods": None}))
    assert unread["status"] == "unknown"
    # the aux-layer check leaves it to target-unsupported
    assert sc.aux_layers(_unregistered({"files": [], "methods": []}))["status"] == "not-applicable"


def test_a_fallback_that_captures_cannot_serve_a_model_type_the_release_does_not_accept():
    # vLLM 0.13.0 config/speculative.py:621-632: eagle3_target_supported = ["llama", "qwen",
    # "minicpm", "gpt_oss"], each a substring test on the target's hf_text_config.model_type,
    # else ValueError; its Transformers fallback defines get_eagle3_aux_hidden_state_layers
    fallback = {"files": ["model_executor/models/transformers"],
                "methods": ["get_eagle3_aux_hidden_state_layers"]}  # fmt: skip
    listed = {"types": ["llama", "qwen", "minicpm", "gpt_oss"],
              "where": "config/speculative.py:621"}  # fmt: skip
    dep = _unregistered(fallback)
    dep.engine, dep.eagle3_targets = "vllm", listed
    dep.target_config = dict(WRAPPER, text_config=dict(LANGUAGE, model_type="kimi_k2"))
    got = sc.target_unsupported(dep)
    assert [f["id"] for f in got["findings"]] == ["target-unsupported"]
    assert "config/speculative.py:621" in got["findings"][0]["detail"]
    # a listed type (a substring, as vLLM tests it) is left to the fallback: not decided here
    dep.target_config = dict(WRAPPER, text_config=dict(LANGUAGE, model_type="qwen3_moe"))
    assert sc.target_unsupported(dep)["status"] == "unknown"
