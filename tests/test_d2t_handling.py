"""The d2t classifier on each idiom and its variations (pure, no I/O)."""

from __future__ import annotations

import textwrap

import pytest

from remotedbg.analysis.d2t_handling import (
    classify_source,
    evidence_lines,
    registry_architectures,
    resolve_architectures,
)
from remotedbg.analysis.d2t_install import classify_install
from tests import engine_trees as trees


def classify(src: str) -> dict:
    return classify_source(textwrap.dedent(src), "m.py")


def loader(body: str, header: str = "import torch") -> str:
    """A minimal SGLang-style draft head whose d2t branch is `body`."""
    return (
        header
        + "\n\n\nclass HeadEagle3:\n"
        + "    def load_weights(self, weights):\n"
        + "        for name, loaded_weight in weights:\n"
        + '            if "d2t" in name:\n'
        + textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 16)
        + "\n                continue\n\n\nEntryClass = [HeadEagle3]\n"
    )


# ---------------------------------------------------------------------------------- offsets
@pytest.mark.parametrize(
    ("name", "src"),
    [
        ("sglang fixture", trees.SGLANG_LLAMA_EAGLE3),
        ("kimi fixture: intermediate vars, swapped", trees.SGLANG_KIMI_EAGLE3),
        ("my_head: arange first", trees.SGLANG_MY_HEAD),
        ("vllm fixture: logits time", trees.VLLM_LLAMA_EAGLE3),
        (
            "import torch as t",
            loader(
                "self.hot_token_id = loaded_weight + t.arange(loaded_weight.shape[0])",
                "import torch as t",
            ),
        ),
        (
            "from torch import arange",
            loader(
                "self.hot_token_id = arange(len(loaded_weight)) + loaded_weight",
                "from torch import arange",
            ),
        ),
        (
            "from torch import arange as ar",
            loader(
                "self.hot_token_id = loaded_weight + ar(loaded_weight.numel())",
                "from torch import arange as ar",
            ),
        ),
        (
            "numpy arange",
            loader(
                "self.hot_token_id = np.arange(loaded_weight.shape[0]) + loaded_weight",
                "import numpy as np",
            ),
        ),
        (
            "intermediate arange variable",
            loader(
                """
                base = torch.arange(loaded_weight.shape[0], device=loaded_weight.device)
                ids = base + loaded_weight
                self.hot_token_id = ids
                """
            ),
        ),
        (
            "register_buffer, chained .to()",
            loader(
                'self.register_buffer("hot_token_id", '
                "(torch.arange(len(loaded_weight)).to(loaded_weight.device) + loaded_weight))"
            ),
        ),
        (
            "tensor method add",
            loader(
                "self.hot_token_id = loaded_weight.long().add(torch.arange(len(loaded_weight)))"
            ),
        ),
        (
            "torch.add",
            loader(
                "self.hot_token_id = torch.add(torch.arange(len(loaded_weight)), loaded_weight)"
            ),
        ),
        (
            "augmented assignment",
            loader(
                """
                ids = torch.arange(loaded_weight.shape[0])
                ids += loaded_weight
                self.hot_token_id = ids
                """
            ),
        ),
        (
            "elif branch, endswith test, other loop names",
            """
            import torch

            class DraftMTP:
                def load_weights(self, weights):
                    for key, tensor in weights:
                        if key.startswith("lm_head"):
                            pass
                        elif key.endswith("d2t"):
                            self.hot_token_id = tensor + torch.arange(tensor.shape[0])
            """,
        ),
        (
            "raw store converted when read",
            """
            import torch

            class Eagle3Head:
                def __init__(self):
                    self.hot_token_id = None

                def load_weights(self, weights):
                    for name, w in weights:
                        if "d2t" in name:
                            self.hot_token_id = w

                def get_hot_token_id(self):
                    return self.hot_token_id + torch.arange(self.hot_token_id.shape[0])
            """,
        ),
        (
            "renamed parameter, logits time, swapped",
            """
            import torch
            from torch import nn

            class Eagle3Renamed(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.config = config
                    self.vocab_shift = nn.Parameter(torch.zeros(8, dtype=torch.long))

                def compute_logits(self, hidden):
                    logits = self.head(hidden)
                    targets = self.vocab_shift + torch.arange(self.config.draft_vocab_size)
                    out = logits.new_full((logits.shape[0], self.config.vocab_size), -1e9)
                    out[:, targets] = logits
                    return out

                def load_weights(self, weights):
                    for name, w in weights:
                        name = name.replace("d2t", "vocab_shift")
                        self.get_parameter(name).data.copy_(w)
            """,
        ),
        (
            "arange kept on self",
            """
            import torch

            class EagleLM:
                def __init__(self, n):
                    self.draft_ids = torch.arange(n)

                def compute_logits(self, logits):
                    full = logits.new_zeros((logits.shape[0], 100))
                    full[:, self.draft_ids + self.draft_id_to_target_id] = logits
                    return full
            """,
        ),
        (
            "per-element ids + d2t[ids]",
            """
            class EagleSampler:
                def to_target(self, draft_ids):
                    return draft_ids + self.draft_id_to_target_id[draft_ids]
            """,
        ),
        (
            "keyed read from a state dict",
            """
            import torch

            class Eagle3FromState:
                def load_state(self, state):
                    d2t = state.pop("d2t")
                    self.hot_token_id = d2t + torch.arange(d2t.numel())
            """,
        ),
    ],
)
def test_offsets(name: str, src: str) -> None:
    result = classify(src)
    assert result["d2t_handling"] == "offsets", (name, result["reason"], result["evidence"])
    assert any(e["role"] == "offsets" for e in result["evidence"])
    assert "arange" in result["reason"]


# ----------------------------------------------------------------------------------- direct
@pytest.mark.parametrize(
    ("name", "src"),
    [
        ("sglang direct fixture", trees.SGLANG_LLAMA_EAGLE3_DIRECT),
        ("plain store", loader("self.hot_token_id = loaded_weight")),
        ("store via a variable", loader("ids = loaded_weight.cuda()\nself.hot_token_id = ids")),
        ("register_buffer", loader('self.register_buffer("hot_token_id", loaded_weight)')),
        ("setattr", loader('setattr(self, "hot_token_id", loaded_weight.long())')),
        (
            "logits scattered through a variable",
            """
            class Eagle3Direct2:
                def compute_logits(self, logits):
                    target_ids = self.draft_id_to_target_id
                    out = logits.new_zeros((logits.shape[0], 10))
                    out[:, target_ids] = logits
                    return out
            """,
        ),
        (
            "logits scattered with d2t as ids",
            """
            import torch

            class Eagle3Direct:
                def compute_logits(self, hidden):
                    logits = self.head(hidden)
                    out = logits.new_full((logits.shape[0], self.config.vocab_size), -1e9)
                    out[:, self.draft_id_to_target_id] = logits
                    return out
            """,
        ),
        (
            "index_select with d2t",
            """
            class Eagle3Gather:
                def target_logits(self, full_logits):
                    return full_logits.index_select(-1, self.d2t)
            """,
        ),
    ],
)
def test_direct(name: str, src: str) -> None:
    result = classify(src)
    assert result["d2t_handling"] == "direct", (name, result["reason"], result["evidence"])
    assert result["evidence"] and all(e["line"] > 0 for e in result["evidence"])
    assert "without adding an arange" in result["reason"]


# ------------------------------------------------------------------------------------- none
@pytest.mark.parametrize(
    "src",
    [
        trees.SGLANG_QWEN2_EAGLE,
        trees.SGLANG_QWEN3_NEXT_MTP,
        trees.SGLANG_LLAMA,
        trees.VLLM_LLAMA_EAGLE,
        loader("pass").replace('"d2t" in name', '"t2d" in name'),
    ],
)
def test_none(src: str) -> None:
    assert classify(src)["d2t_handling"] == "none"


# ---------------------------------------------------------------------------------- unknown
@pytest.mark.parametrize(
    ("name", "src", "line_text"),
    [
        (
            "passed to a helper",
            loader("self.hot_token_id = remap_ids(loaded_weight)"),
            "remap_ids",
        ),
        ("multiplied", loader("self.hot_token_id = loaded_weight * 2"), "* 2"),
        (
            "added to something else",
            loader("self.hot_token_id = loaded_weight + self.table"),
            "self.table",
        ),
        ("stored elsewhere", loader("self.kept = loaded_weight"), "self.kept"),
    ],
)
def test_unknown(name: str, src: str, line_text: str) -> None:
    result = classify(src)
    assert result["d2t_handling"] == "unknown", (name, result)
    assert any(line_text in e["text"] for e in result["evidence"]), result["evidence"]


def test_classes_that_disagree_are_unknown_but_each_class_is_classified() -> None:
    src = trees.SGLANG_LLAMA_EAGLE3 + "\n\n" + trees.SGLANG_LLAMA_EAGLE3_DIRECT.split('"""', 2)[2]
    result = classify(src)
    assert result["d2t_handling"] == "unknown"
    assert "disagree" in result["reason"]
    by_name = {c["name"]: c["d2t_handling"] for c in result["classes"]}
    assert by_name["LlamaForCausalLMEagle3"] == "offsets"
    assert by_name["LlamaForCausalLMEagle3Direct"] == "direct"


def test_syntax_error_is_unknown_with_lines() -> None:
    result = classify_source("def f(:\n    hot_token_id = d2t\n", "broken.py")
    assert result["d2t_handling"] == "unknown"
    assert "does not parse" in result["reason"]
    assert result["evidence"][0]["line"] == 2


# ------------------------------------------------------------------------ classes, evidence
def test_architectures_classes_and_evidence_shape() -> None:
    result = classify_source(textwrap.dedent(trees.SGLANG_LLAMA_EAGLE3), "llama_eagle3.py")
    assert result["architectures"] == ["LlamaForCausalLMEagle3"]
    assert result["entry_classes"] == ["LlamaForCausalLMEagle3"]
    head = next(c for c in result["classes"] if c["name"] == "LlamaForCausalLMEagle3")
    assert head["registered"] and head["d2t_handling"] == "offsets"
    assert head["bases"] == ["LlamaForCausalLM"]
    other = next(c for c in result["classes"] if c["name"] == "DraftLlamaModel")
    assert other["d2t_handling"] == "none" and not other["registered"]
    for e in result["evidence"]:
        assert set(e) >= {"line", "text", "symbol"}
    lines = textwrap.dedent(trees.SGLANG_LLAMA_EAGLE3).splitlines()
    offsets = next(e for e in result["evidence"] if e["role"] == "offsets")
    assert lines[offsets["line"] - 1].strip() == offsets["text"]


def test_single_entry_class_and_no_entry_class() -> None:
    assert classify(trees.SGLANG_QWEN3_NEXT_MTP)["architectures"] == ["Qwen3NextForCausalLMMTP"]
    vllm = classify(trees.VLLM_LLAMA_EAGLE3)
    assert vllm["entry_classes"] == []
    assert vllm["architectures"] == ["Eagle3LlamaForCausalLM"]


def test_subclass_inherits_handling() -> None:
    src = trees.SGLANG_LLAMA_EAGLE3 + "\n\nclass Child(LlamaForCausalLMEagle3):\n    pass\n"
    result = classify(src)
    child = next(c for c in result["classes"] if c["name"] == "Child")
    assert child["d2t_handling"] == "offsets"
    assert child["inherited_from"] == "LlamaForCausalLMEagle3"
    assert result["d2t_handling"] == "offsets"


def test_evidence_lines_with_context() -> None:
    src = "a = 1\nx = d2t + 1\nb = 2\nhot_token_id = None\nnot_d2t_thing = 3\n"
    found = evidence_lines(src, ["d2t", "hot_token_id"], context=1)
    assert [f["line"] for f in found] == [2, 4]
    assert found[0]["symbol"] == "d2t"
    assert [c["line"] for c in found[0]["context"]] == [1, 2, 3]
    assert [c["line"] for c in found[1]["context"]] == [3, 4, 5]


def test_registry_architectures() -> None:
    reg = registry_architectures(trees.VLLM_REGISTRY)
    assert reg["Eagle3LlamaForCausalLM"] == ("llama_eagle3", "Eagle3LlamaForCausalLM")
    assert reg["LlamaForCausalLMEagle3"] == ("llama_eagle3", "Eagle3LlamaForCausalLM")
    assert reg["LlamaForCausalLM"] == ("llama", "LlamaForCausalLM")
    only = registry_architectures(trees.VLLM_REGISTRY, only=["_SPECULATIVE_DECODING_MODELS"])
    assert "LlamaForCausalLM" not in only and "DeepSeekMTPModel" in only


def test_resolve_architectures_sglang_and_vllm() -> None:
    sglang = [
        classify_source(textwrap.dedent(src), path)
        for path, src in [
            ("srt/models/llama_eagle3.py", trees.SGLANG_LLAMA_EAGLE3),
            ("srt/models/llama_eagle3_direct.py", trees.SGLANG_LLAMA_EAGLE3_DIRECT),
            ("srt/models/kimi_k25_eagle3.py", trees.SGLANG_KIMI_EAGLE3),
        ]
    ]
    got = resolve_architectures(
        [
            "LlamaForCausalLMEagle3",
            "Eagle3DeepseekV2ForCausalLM",
            "LlamaForCausalLMEagle3Direct",
            "Nope",
        ],
        sglang,
    )
    assert [(g["path"], g["d2t_handling"], g["via"]) for g in got] == [
        ("srt/models/llama_eagle3.py", "offsets", "EntryClass"),
        ("srt/models/kimi_k25_eagle3.py", "offsets", "EntryClass"),
        ("srt/models/llama_eagle3_direct.py", "direct", "EntryClass"),
        (None, None, None),
    ]
    assert got[-1]["resolved"] is False

    vllm = [classify_source(trees.VLLM_LLAMA_EAGLE3, "model_executor/models/llama_eagle3.py")]
    reg = registry_architectures(trees.VLLM_REGISTRY)
    got = resolve_architectures(["LlamaForCausalLMEagle3", "DeepSeekMTPModel"], vllm, reg)
    assert got[0]["class"] == "Eagle3LlamaForCausalLM" and got[0]["d2t_handling"] == "offsets"
    assert got[0]["via"] == "registry" and got[0]["resolved"]
    assert got[1]["resolved"] is False and got[1]["module"] == "deepseek_mtp"


def test_classify_install_from_scan_shape() -> None:
    install = {
        "engine": "vllm",
        "version": "0.11.2",
        "path": "/x/vllm",
        "draft_files": [
            {"path": "model_executor/models/llama_eagle3.py", "source": trees.VLLM_LLAMA_EAGLE3},
            {"path": "model_executor/models/big.py", "source": None, "omitted": True},
        ],
        "registry": {"path": "model_executor/models/registry.py", "source": trees.VLLM_REGISTRY},
    }
    result = classify_install(install)
    assert [m["d2t_handling"] for m in result["draft_models"]] == ["offsets"]
    assert result["unread"] == ["model_executor/models/big.py"]
    assert result["registry"]["Eagle3LlamaForCausalLM"] == [
        "llama_eagle3",
        "Eagle3LlamaForCausalLM",
    ]


def test_a_setattr_without_a_value_is_not_a_store() -> None:
    """setattr(self, "x") with two arguments fails when it runs; reading such code must not."""
    src = (
        "class LlamaForCausalLMEagle3:\n"
        "    def load_weights(self, weights):\n"
        "        for name, w in weights:\n"
        "            if 'd2t' in name:\n"
        "                setattr(self, 'hot_token_id')\n"
    )
    assert classify_source(src, "x.py")["d2t_handling"] == "unknown"


# ------------------------------------------------------------- d2t applied by a base or mixin
def _install(head: str, more: dict[str, str]) -> tuple[dict, list[list[str]]]:
    asked: list[list[str]] = []

    def read(paths: list[str]) -> dict[str, str]:
        asked.append(paths)
        return {p: more[p] for p in paths if p in more}

    install = {
        "engine": "vllm",
        "path": "/x/vllm",
        "draft_files": [{"path": "models/my_dspark.py", "source": head}],
    }
    return classify_install(install, read=read), asked


def _head(override: str = "pass") -> str:
    return trees.VLLM_LOADS_ONLY_HEAD.replace("{override}", override)


def _more(use: str) -> dict[str, str]:
    return {
        "model_executor/models/base_head.py": trees.VLLM_BASE_HEAD,
        "model_executor/models/interfaces.py": trees.VLLM_ARGMAX_MIXIN.replace("{use}", use),
    }


def test_a_head_that_only_loads_d2t_takes_the_handling_of_the_mixin_that_applies_it() -> None:
    alone = classify_source(_head(), "models/my_dspark.py")
    assert alone["d2t_handling"] == "unknown"  # one file cannot tell

    result, asked = _install(_head(), _more("top + d2t[top]"))
    [model] = result["draft_models"]
    assert model["d2t_handling"] == "offsets"
    [row] = model["classes"]
    assert row["applied_in"]["path"] == "model_executor/models/interfaces.py"
    assert row["applied_in"]["class"] == "ArgmaxMixin"
    assert row["applied_in"]["method"] == "get_top_tokens"
    assert "top + d2t[top]" in model["reason"]
    # one MRO level per round trip: the base's module, then the mixin's (relative import)
    assert asked[0][0] == "model_executor/models/base_head.py"
    assert asked[1][0] == "model_executor/models/interfaces.py"
    assert result["followed"][:1] == ["model_executor/models/base_head.py"]

    result, _ = _install(_head(), _more("torch.index_select(d2t, 0, top)"))
    assert result["draft_models"][0]["d2t_handling"] == "direct"


def test_a_base_method_the_head_overrides_does_not_decide() -> None:
    override = "def get_top_tokens(self, hidden):\n        return self.head(hidden).argmax(-1)"
    result, _ = _install(_head(override), _more("top + d2t[top]"))
    assert result["draft_models"][0]["d2t_handling"] == "unknown"


def test_a_head_that_drops_d2t_or_whose_bases_are_not_read_stays_unknown() -> None:
    dropped = _head("self.draft_id_to_target_id = None")
    result, _ = _install(dropped, _more("top + d2t[top]"))
    assert result["draft_models"][0]["d2t_handling"] == "unknown"

    result, asked = _install(_head(), {})
    assert result["draft_models"][0]["d2t_handling"] == "unknown"
    assert len(asked) == 1  # the base's module is missing: nothing further to ask
