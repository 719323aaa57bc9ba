"""Write small SGLang-like and vLLM-like trees for tests (our own code, in the engines' layouts).

The model files only need to parse and to use the engines' idioms for d2t; they never run.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

SGLANG_VERSION = "0.5.6"
VLLM_VERSION = "0.11.2"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- SGLang model files
SGLANG_LLAMA_EAGLE3 = '''
"""Draft head for EAGLE-3 on Llama targets (test fixture)."""
from typing import Iterable, Optional, Tuple

import torch
from torch import nn

from sglang.srt.models.llama import LlamaForCausalLM, LlamaModel


class DraftLlamaModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.fc = nn.Linear(config.hidden_size * 3, config.hidden_size, bias=False)


class LlamaForCausalLMEagle3(LlamaForCausalLM):
    def __init__(self, config, quant_config=None, prefix=""):
        nn.Module.__init__(self)
        self.config = config
        self.model = DraftLlamaModel(config, quant_config)
        self.hot_token_id = None

    def load_weights(self, weights: Iterable[Tuple[str, torch.Tensor]]) -> None:
        params = dict(self.named_parameters())
        for name, loaded_weight in weights:
            if "d2t" in name:
                # the checkpoint keeps target_id - draft_id for every draft id
                self.hot_token_id = loaded_weight + torch.arange(
                    loaded_weight.shape[0], device=loaded_weight.device
                )
                continue
            if "t2d" in name:
                continue
            key = name if name in params else "model." + name
            if key in params:
                params[key].data.copy_(loaded_weight)

    def get_hot_token_id(self):
        return self.hot_token_id


EntryClass = [LlamaForCausalLMEagle3]
'''

SGLANG_KIMI_EAGLE3 = '''
"""EAGLE-3 head with MLA attention (test fixture)."""
import torch
from torch import nn


class Eagle3MLAModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.norm = nn.LayerNorm(config.hidden_size)


class Eagle3DeepseekV2ForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.model = Eagle3MLAModel(config)
        self.hot_token_id = None

    def get_hot_token_id(self):
        return self.hot_token_id

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for ckpt_name, tensor in weights:
            if ckpt_name == "d2t" or ckpt_name.endswith(".d2t"):
                shift = tensor.to(torch.long)
                positions = torch.arange(shift.numel(), dtype=torch.long)
                self.hot_token_id = positions + shift
                continue
            if ckpt_name.endswith("t2d"):
                continue
            params_dict["model." + ckpt_name].data.copy_(tensor)


EntryClass = [Eagle3DeepseekV2ForCausalLM]
'''

SGLANG_LLAMA_EAGLE3_DIRECT = '''
"""A patched EAGLE-3 loader that treats d2t as absolute ids (the bug this tool finds)."""
import torch
from torch import nn


class LlamaForCausalLMEagle3Direct(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.hot_token_id = None

    def load_weights(self, weights):
        for name, loaded_weight in weights:
            if "d2t" in name:
                self.hot_token_id = loaded_weight.to(torch.long)
                continue

    def get_hot_token_id(self):
        return self.hot_token_id


EntryClass = [LlamaForCausalLMEagle3Direct]
'''

SGLANG_QWEN2_EAGLE = '''
"""EAGLE (v1/v2) head for Qwen2 (test fixture): no reduced draft vocab."""
from torch import nn

from sglang.srt.models.qwen2 import Qwen2ForCausalLM


class Qwen2ForCausalLMEagle(Qwen2ForCausalLM):
    def __init__(self, config, quant_config=None, prefix=""):
        nn.Module.__init__(self)
        self.config = config

    def load_weights(self, weights):
        for name, loaded_weight in weights:
            if "lm_head" in name:
                continue
            super().load_weights([("model." + name, loaded_weight)])


EntryClass = [Qwen2ForCausalLMEagle]
'''

SGLANG_QWEN3_NEXT_MTP = '''
"""Multi-token-prediction head for Qwen3-Next (test fixture)."""
from torch import nn


class Qwen3NextForCausalLMMTP(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.fc = nn.Linear(2 * config.hidden_size, config.hidden_size, bias=False)

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, w in weights:
            if name.startswith("mtp."):
                params[name[4:]].data.copy_(w)


EntryClass = Qwen3NextForCausalLMMTP
'''

SGLANG_LLAMA = '''
"""A target model (test fixture): not a draft model."""
from torch import nn


class LlamaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList()


class LlamaForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.model = LlamaModel(config)
        self.capture_aux_hidden_states = False

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


EntryClass = [LlamaForCausalLM]
'''

SGLANG_MY_HEAD = '''
"""A draft head whose file name matches no pattern: found by content."""
import torch


class MyEagleHeadForCausalLM(torch.nn.Module):
    def load_weights(self, weights):
        for name, w in weights:
            if "d2t" in name:
                self.hot_token_id = torch.arange(w.shape[0]) + w


EntryClass = [MyEagleHeadForCausalLM]
'''

SGLANG_EAGLE_WORKER = '''
"""Speculative worker (test fixture)."""


class EAGLEWorker:
    def __init__(self, draft_runner, server_args):
        self.hot_token_id = draft_runner.model.get_hot_token_id()
        if server_args.speculative_token_map is not None:
            self.hot_token_id = load_token_map(server_args.speculative_token_map)


def load_token_map(path):
    import torch

    return torch.load(path)
'''


def write_sglang_checkout(root: Path, *, direct_variant: bool = True) -> Path:
    """An SGLang git checkout at `root/sglang`; returns its package dir (python/sglang)."""
    repo = root / "sglang"
    pkg = repo / "python" / "sglang"
    _write(
        repo / "python" / "pyproject.toml",
        f'[project]\nname = "sglang"\nversion = "{SGLANG_VERSION}"\n',
    )
    (repo / ".git" / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / ".git" / "refs" / "heads" / "main").write_text(
        "0123456789abcdef0123456789abcdef01234567\n"
    )
    _write(pkg / "__init__.py", "from sglang.version import __version__\n")
    _write(pkg / "version.py", f'__version__ = "{SGLANG_VERSION}"\n')
    _write(pkg / "srt" / "__init__.py", "")
    models = pkg / "srt" / "models"
    _write(models / "__init__.py", "")
    _write(models / "llama_eagle3.py", SGLANG_LLAMA_EAGLE3)
    _write(models / "kimi_k25_eagle3.py", SGLANG_KIMI_EAGLE3)
    _write(models / "qwen2_eagle.py", SGLANG_QWEN2_EAGLE)
    _write(models / "qwen3_next_mtp.py", SGLANG_QWEN3_NEXT_MTP)
    _write(models / "llama.py", SGLANG_LLAMA)
    _write(models / "qwen2.py", SGLANG_LLAMA.replace("Llama", "Qwen2"))
    _write(models / "my_head.py", SGLANG_MY_HEAD)
    if direct_variant:
        write_sglang_direct_variant(pkg)
    spec = pkg / "srt" / "speculative"
    _write(spec / "__init__.py", "")
    _write(spec / "eagle_worker.py", SGLANG_EAGLE_WORKER)
    _write(
        spec / "eagle_utils.py",
        "def fast_topk(values, topk, dim):\n    return values.topk(topk, dim)\n",
    )
    _write(spec / "spec_info.py", "class SpeculativeAlgorithm:\n    EAGLE3 = 'EAGLE3'\n")
    # unrelated bulk the scan must not read
    for i in range(30):
        _write(pkg / "srt" / "layers" / f"layer_{i}.py", f"X = {i}\n")
    return pkg


def write_sglang_direct_variant(pkg: Path) -> Path:
    """The patched loader that reads d2t as absolute target ids."""
    return _write(pkg / "srt" / "models" / "llama_eagle3_direct.py", SGLANG_LLAMA_EAGLE3_DIRECT)


# ----------------------------------------------------------------------------- vLLM model files
VLLM_LLAMA_EAGLE3 = """
# Test fixture in vLLM's layout: the draft vocab is scattered into the full vocab at logits time.
from collections.abc import Iterable
from typing import Optional

import torch
import torch.nn as nn

from vllm.model_executor.models.llama import LlamaForCausalLM


class LlamaModel(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.config = vllm_config.speculative_config.draft_model_config.hf_config


class Eagle3LlamaForCausalLM(LlamaForCausalLM):
    def __init__(self, *, vllm_config, prefix=""):
        nn.Module.__init__(self)
        self.config = vllm_config.speculative_config.draft_model_config.hf_config
        self.model = LlamaModel(vllm_config=vllm_config, prefix="model")
        self.draft_id_to_target_id = nn.Parameter(
            torch.zeros(self.config.draft_vocab_size, dtype=torch.long),
            requires_grad=False,
        )

    def compute_logits(self, hidden_states: torch.Tensor) -> Optional[torch.Tensor]:
        logits = self.logits_processor(self.lm_head, hidden_states)
        if self.draft_id_to_target_id is None:
            return logits
        draft_ids = torch.arange(self.config.draft_vocab_size, device=logits.device)
        target_ids = draft_ids + self.draft_id_to_target_id
        full = logits.new_full((logits.shape[0], self.config.vocab_size), float("-inf"))
        full[:, target_ids] = logits
        return full

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]):
        renamed = {}
        for name, loaded_weight in weights:
            if "t2d" in name:
                continue
            if "d2t" in name:
                name = name.replace("d2t", "draft_id_to_target_id")
            elif "lm_head" not in name:
                name = "model." + name
            renamed[name] = loaded_weight
        params = dict(self.named_parameters())
        for name, w in renamed.items():
            params[name].data.copy_(w)
"""

VLLM_REGISTRY = """
# Test fixture in the layout of vLLM's model registry.
_TEXT_GENERATION_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "Qwen2ForCausalLM": ("qwen2", "Qwen2ForCausalLM"),
}

_SPECULATIVE_DECODING_MODELS = {
    "MedusaModel": ("medusa", "Medusa"),
    "EagleLlamaForCausalLM": ("llama_eagle", "EagleLlamaForCausalLM"),
    "Eagle3LlamaForCausalLM": ("llama_eagle3", "Eagle3LlamaForCausalLM"),
    "LlamaForCausalLMEagle3": ("llama_eagle3", "Eagle3LlamaForCausalLM"),
    "DeepSeekMTPModel": ("deepseek_mtp", "DeepSeekMTP"),
}

_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_SPECULATIVE_DECODING_MODELS,
}
"""

VLLM_LLAMA_EAGLE = """
# EAGLE-1 head (test fixture): no d2t.
import torch.nn as nn


class EagleLlamaForCausalLM(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.config = vllm_config
"""

VLLM_DEEPSEEK_MTP = """
# MTP head (test fixture).
import torch.nn as nn


class DeepSeekMTP(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
"""

VLLM_SPEC_EAGLE = """
# Proposer (test fixture).
class EagleProposer:
    def __init__(self, vllm_config, device, runner=None):
        self.vllm_config = vllm_config
        self.device = device
"""


def write_vllm_venv(venv: Path, python_tag: str = "python3.11", python: str | None = None) -> Path:
    """A venv with vLLM installed into site-packages; returns the package dir.

    With `python` (a real interpreter), bin/python3 links to it as in a real venv, so a test can
    start "the venv's Python"; otherwise bin/python3 is a stub script.
    """
    home = os.path.dirname(os.path.realpath(python)) if python else "/usr/bin"
    _write(venv / "pyvenv.cfg", f"home = {home}\ninclude-system-site-packages = false\n")
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    link = venv / "bin" / "python3"
    if python and not link.exists():
        link.symlink_to(os.path.realpath(python))
    elif not link.exists():
        link.write_text("#!/bin/sh\nexit 0\n")
        link.chmod(0o755)
    site = venv / "lib" / python_tag / "site-packages"
    pkg = site / "vllm"
    _write(pkg / "__init__.py", "from vllm.version import __version__\n")
    _write(pkg / "version.py", "from vllm._version import __version__\n")
    _write(pkg / "_version.py", f"__version__ = version = '{VLLM_VERSION}'\n")
    models = pkg / "model_executor" / "models"
    _write(pkg / "model_executor" / "__init__.py", "")
    _write(models / "__init__.py", "")
    _write(models / "llama_eagle3.py", VLLM_LLAMA_EAGLE3)
    _write(models / "llama_eagle.py", VLLM_LLAMA_EAGLE)
    _write(models / "deepseek_mtp.py", VLLM_DEEPSEEK_MTP)
    _write(models / "registry.py", VLLM_REGISTRY)
    _write(models / "llama.py", "class LlamaForCausalLM:\n    pass\n")
    spec = pkg / "v1" / "spec_decode"
    _write(spec / "__init__.py", "")
    _write(spec / "eagle.py", VLLM_SPEC_EAGLE)
    dist = site / f"vllm-{VLLM_VERSION}.dist-info"
    _write(dist / "METADATA", f"Metadata-Version: 2.1\nName: vllm\nVersion: {VLLM_VERSION}\n")
    # another package in the same site-packages, never looked into
    _write(site / "numpy" / "__init__.py", "")
    return pkg


# A head that loads d2t and leaves it to a base and a mixin in other files (vLLM 0.33's
# muse_spark dspark.py -> qwen3_dspark.py -> interfaces.LocalArgmaxMixin, reduced to the idiom).
VLLM_LOADS_ONLY_HEAD = """
from vllm.model_executor.models.base_head import BaseHead


class MyDSparkForCausalLM(BaseHead):
    def load_weights(self, weights):
        for name, w in weights:
            if name == "d2t":
                name = "draft_id_to_target_id"
        {override}
"""
VLLM_BASE_HEAD = """
from .interfaces import ArgmaxMixin


class BaseHead(ArgmaxMixin):
    def forward(self, x):
        return x
"""
VLLM_ARGMAX_MIXIN = """
class ArgmaxMixin:
    def get_top_tokens(self, hidden):
        top = self.head(hidden).argmax(-1)
        d2t = getattr(self, "draft_id_to_target_id", None)
        if d2t is not None:
            top = {use}
        return top
"""
