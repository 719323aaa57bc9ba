"""`remotedbg demo`: vocab-audit on a built-in example box, no GPU machine and no network.

It writes a small box into a temp dir: an engine tree in SGLang's layout (written by this
project, not copied), a target config, and two full-size EAGLE-3 drafts (32,000 ids into a
163,840-token vocab): one built the way trainers build it, one whose converter stored absolute
target ids in d2t. Then it audits both with `--host local`, through the same code as over SSH.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from remotedbg.engines.sglang import SGLANG

DRAFT_VOCAB = 32_000
TARGET_VOCAB = 163_840
HIDDEN = 64
EOS = 163_585

LOADER = '''"""Draft head for Llama-style targets (remotedbg demo engine tree)."""
import torch
from torch import nn


class LlamaForCausalLMEagle3(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.hot_token_id = None

    def load_weights(self, weights):
        for name, loaded_weight in weights:
            if "d2t" in name:
                # d2t stores offsets: target id = draft id + d2t[draft id]
                self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])
                continue
            if "t2d" in name:
                continue
            self.load_param(name, loaded_weight)


EntryClass = [LlamaForCausalLMEagle3]
'''


def _write_engine(root: Path) -> Path:
    """An SGLang source checkout, as its profile says one is laid out."""
    name = SGLANG.scan["package"]
    package = root / name / "python" / name
    models = package / SGLANG.scan["models_dir"]
    workers = package / SGLANG.scan["worker_dirs"][0]
    models.mkdir(parents=True)
    workers.mkdir(parents=True)
    (package / "version.py").write_text('__version__ = "0.5.6-demo"\n')
    (package / "__init__.py").write_text("")
    (models / "llama_eagle3.py").write_text(LOADER)
    (models / "llama.py").write_text("class LlamaForCausalLM:\n    pass\n")
    (workers / "eagle_worker.py").write_text("class EAGLEWorker:\n    hot_token_id = None\n")
    return package


def _frequent_ids(seed: int = 0) -> np.ndarray:
    """The N most frequent target ids of a Zipf-like corpus, sorted, as trainers pick them."""
    rng = np.random.default_rng(seed)
    ranks = rng.permutation(TARGET_VOCAB)
    weights = 1.0 / (np.arange(TARGET_VOCAB) + 10.0)
    counts = rng.poisson(weights * 5e7)[ranks]
    counts[EOS] = counts.max() + 1  # eos is always frequent
    return np.sort(np.argsort(-counts, kind="stable")[:DRAFT_VOCAB])


def _write_draft(directory: Path, absolute_ids: bool) -> Path:
    directory.mkdir(parents=True)
    ids = _frequent_ids()
    d2t = ids if absolute_ids else ids - np.arange(DRAFT_VOCAB)
    t2d = np.zeros(TARGET_VOCAB, dtype=bool)
    t2d[ids] = True
    rng = np.random.default_rng(1)
    tensors = {
        "d2t": d2t.astype(np.int64),
        "t2d": t2d,
        "lm_head.weight": rng.standard_normal((DRAFT_VOCAB, HIDDEN)).astype(np.float16),
        "fc.weight": rng.standard_normal((HIDDEN, 3 * HIDDEN)).astype(np.float16),
        "midlayer.self_attn.q_proj.weight": rng.standard_normal((HIDDEN, 2 * HIDDEN)).astype(
            np.float16
        ),
        "norm.weight": np.ones(HIDDEN, dtype=np.float16),
    }
    save_file(tensors, str(directory / "model.safetensors"))
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "draft_vocab_size": DRAFT_VOCAB,
        "vocab_size": TARGET_VOCAB,
        "hidden_size": HIDDEN,
        "target_hidden_size": HIDDEN,
        "eos_token_id": EOS,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]},
    }
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def build_demo_box(root: Path) -> dict[str, Path]:
    engine = _write_engine(root / "engine")
    target = root / "models" / "target"
    target.mkdir(parents=True)
    (target / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLM"],
                "vocab_size": TARGET_VOCAB,
                "hidden_size": HIDDEN,
                "num_hidden_layers": 61,
                "eos_token_id": EOS,
            }
        )
    )
    return {
        "engine": engine,
        "target": target,
        "good": _write_draft(root / "models" / "draft-eagle3-good", absolute_ids=False),
        "bad": _write_draft(root / "models" / "draft-eagle3-absolute-d2t", absolute_ids=True),
    }


def demo_directory() -> Path:
    return Path(tempfile.mkdtemp(prefix="remotedbg-demo-"))
