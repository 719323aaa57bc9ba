"""Test checkpoint generators: EAGLE-3 drafts (correct and with one defect each), target configs,
and a corpus of malformed safetensors files. Written with the real `safetensors` library so the
reader under test is checked against files it did not write itself."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

DEFECTS = (
    None,
    "absolute",
    "no-d2t",
    "float-d2t",
    "t2d-mismatch",
    "out-of-range",
    "vocab-size",
    "eos-missing",
)
SEED = 1234


def eos_for(target_vocab: int) -> int:
    """An EOS id near the top of the vocab, like real chat models (e.g. 163586 of 163840)."""
    return max(0, target_vocab - 254)


def frequent_ids(draft_vocab: int, target_vocab: int, seed: int = SEED) -> np.ndarray:
    """The N most frequent target ids of a fixed-seed Zipf-like draw, sorted (as trainers do).

    Frequency rank is mapped to token id through a fixed permutation (ids are not ordered by
    frequency in real tokenizers); the EOS id is forced in, as it is in every real corpus.
    """
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, target_vocab + 1, dtype=np.float64)
    weights = 1.0 / ranks**1.1
    weights /= weights.sum()
    permutation = rng.permutation(target_vocab)
    draws = rng.choice(target_vocab, size=max(4 * target_vocab, 200_000), p=weights)
    counts = np.bincount(permutation[draws], minlength=target_vocab)
    counts[eos_for(target_vocab)] = counts.max() + 1
    top = np.argsort(-counts, kind="stable")[:draft_vocab]
    return np.sort(top).astype(np.int64)


def write_eagle3_checkpoint(
    directory: Path | str,
    draft_vocab: int = 32000,
    target_vocab: int = 163840,
    defect: str | None = None,
    sharded: bool = False,
    hidden: int = 64,
    target_hidden: int | None = None,
) -> Path:
    """Write an EAGLE-3 draft (safetensors + config.json) into `directory`; return it."""
    if defect not in DEFECTS:
        raise ValueError(f"unknown defect {defect!r}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target_hidden = target_hidden or hidden * 2
    ids = frequent_ids(draft_vocab, target_vocab)
    d2t = ids - np.arange(draft_vocab, dtype=np.int64)
    t2d = np.zeros(target_vocab, dtype=bool)
    t2d[ids] = True
    eos = eos_for(target_vocab)
    rng = np.random.default_rng(SEED + 1)
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "draft_vocab_size": draft_vocab,
        "vocab_size": target_vocab,
        "hidden_size": hidden,
        "target_hidden_size": target_hidden,
        "intermediate_size": hidden * 2,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "eos_token_id": eos,
        "torch_dtype": "float16",
    }
    if defect == "absolute":
        d2t = ids.copy()
    elif defect == "float-d2t":
        d2t = d2t.astype(np.float32)
    elif defect == "t2d-mismatch":
        t2d[ids[3]] = False
        t2d[ids[-5]] = False
        outside = np.flatnonzero(~t2d)
        t2d[outside[outside != ids[3]][:2]] = True
    elif defect == "out-of-range":
        d2t[-1] += target_vocab
    elif defect == "vocab-size":
        config["draft_vocab_size"] = draft_vocab + 16
    elif defect == "eos-missing":
        # the trainer's vocab left out the end-of-turn id: neither d2t nor t2d has it
        if eos in ids:
            ids = np.sort(np.append(ids[ids != eos], np.flatnonzero(~t2d)[0]))
        d2t = ids - np.arange(draft_vocab, dtype=np.int64)
        t2d = np.zeros(target_vocab, dtype=bool)
        t2d[ids] = True

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float16)

    tensors = {
        "t2d": t2d,
        "fc.weight": weight(hidden, 3 * target_hidden),
        "midlayer.hidden_norm.weight": np.ones(hidden, dtype=np.float16),
        "midlayer.input_layernorm.weight": np.ones(hidden, dtype=np.float16),
        "midlayer.self_attn.q_proj.weight": weight(hidden, 2 * hidden),
        "midlayer.mlp.down_proj.weight": weight(hidden, 2 * hidden),
        "norm.weight": np.ones(hidden, dtype=np.float16),
        "lm_head.weight": weight(draft_vocab, hidden),
    }
    if defect != "no-d2t":
        tensors["d2t"] = d2t
    if sharded:
        names = sorted(tensors)
        shards = [names[: len(names) // 2], names[len(names) // 2 :]]
        weight_map = {}
        for number, shard in enumerate(shards, 1):
            file = f"model-{number:05d}-of-{len(shards):05d}.safetensors"
            save_file({n: tensors[n] for n in shard}, str(directory / file))
            weight_map.update({n: file for n in shard})
        index = {"metadata": {"total_size": sum(t.nbytes for t in tensors.values())}}
        index["weight_map"] = weight_map
        (directory / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    else:
        save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def write_target_config(
    directory: Path | str,
    vocab_size: int = 163840,
    hidden_size: int = 128,
    eos_token_id: int | list[int] | None = None,
    tokenizer: bool = False,
) -> Path:
    """A target model folder with config.json (and a tiny BPE-style tokenizer.json if asked)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "vocab_size": vocab_size,
        "hidden_size": hidden_size,
        "eos_token_id": eos_for(vocab_size) if eos_token_id is None else eos_token_id,
    }
    (directory / "config.json").write_text(json.dumps(config))
    if tokenizer:
        eos = eos_for(vocab_size)
        vocab = {f"tok{i}": i for i in range(vocab_size) if i != eos}
        data = {
            "version": "1.0",
            "added_tokens": [{"id": eos, "content": "<|im_end|>", "special": True}],
            "model": {"type": "BPE", "vocab": vocab, "merges": []},
        }
        (directory / "tokenizer.json").write_text(json.dumps(data))
    return directory


def _raw(header: dict | bytes, data: bytes = b"", length: int | None = None) -> bytes:
    body = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(body) if length is None else length) + body + data


def write_malformed_corpus(directory: Path | str) -> dict[str, Path]:
    """Files that must each be rejected with CheckpointError: name -> path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    good = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}
    valid = _raw(good, bytes(16))
    cases = {
        "empty": b"",
        "short": b"\x01\x02\x03",
        "truncated": valid[:-5],
        "huge-header": struct.pack("<Q", 2**60) + b"{}",
        "header-past-end": _raw(good, bytes(16), length=4096),
        "invalid-json": _raw(b'{"a": {"dtype": "F32",'),
        "not-utf8": _raw(b'{"\xff\xfe": 1}'),
        "not-object": _raw([1, 2, 3]),  # type: ignore[arg-type]
        "entry-not-object": _raw({"a": 5}),
        "missing-dtype": _raw({"a": {"shape": [1], "data_offsets": [0, 4]}}, bytes(4)),
        "bad-dtype": _raw({"a": {"dtype": "F33", "shape": [1], "data_offsets": [0, 4]}}, bytes(4)),
        "bad-shape": _raw({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, bytes(4)),
        "offsets-past-end": _raw(
            {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, bytes(8)
        ),
        "offsets-reversed": _raw(
            {"a": {"dtype": "U8", "shape": [0], "data_offsets": [4, 0]}}, bytes(4)
        ),
        "overlapping": _raw(
            {
                "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
            },
            bytes(12),
        ),
        "shape-bytes-mismatch": _raw(
            {"a": {"dtype": "I64", "shape": [3], "data_offsets": [0, 16]}}, bytes(16)
        ),
        "metadata-not-object": _raw({"__metadata__": [1], **good}, bytes(16)),
        "deep-nesting": _raw(b"[" * 100_000 + b"]" * 100_000),
    }
    paths = {}
    for name, content in cases.items():
        path = directory / f"{name}.safetensors"
        path.write_bytes(content)
        paths[name] = path
    return paths
