"""Quantized draft weights without scales, and a draft tokenizer that is not the target's: read
in place by the agent (tokenizer files, safetensors headers), judged by remotedbg.analysis.
fit_checks, and raised by spec-audit over the real sshd.

Tokenizer files are written in the Hugging Face `tokenizers` serialization (tokenizer.json:
"model": {"type": "BPE", "vocab": {token: id}}, "added_tokens": [{"id", "content", ...}];
tokenizer_config.json: "eos_token" etc., as transformers' PreTrainedTokenizerFast saves them).
FP8 weights are stored as safetensors dtype F8_E4M3 with their `weight_scale_inv` companions as
DeepSeek-V3's and Qwen3-FP8's checkpoints ship them (block scales, float32)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from remotedbg.agent.tokenizer_files import fingerprint
from remotedbg.analysis.fit_checks import draft_scales_missing, tokenizer_mismatch
from tests.checkpoints import write_eagle3_checkpoint, write_target_config
from tests.test_spec_checks import _launch, _run, spec_world  # noqa: F401 - the fixture

BASE = {f"tok{i}": i for i in range(200)}


def write_tokenizer(folder: Path, vocab: dict[str, int], added: dict[str, int], eos: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = {
        "version": "1.0",
        "added_tokens": [{"id": i, "content": t, "special": True} for t, i in added.items()],
        "model": {"type": "BPE", "vocab": vocab, "merges": []},
    }
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": eos}))


def write_raw_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> None:
    """A safetensors file by its format (8-byte header length, JSON header, data): lets the
    test store dtypes numpy has no name for (F8_E4M3)."""
    header, offset = {}, 0
    for name, (dtype, shape, itemsize) in tensors.items():
        size = itemsize
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


def test_scales_rule():
    fp8 = {"name": "midlayer.mlp.up_proj.weight", "dtype": "F8_E4M3", "shape": [8, 4]}
    scale = {"name": "midlayer.mlp.up_proj.weight_scale_inv", "dtype": "F32", "shape": [1, 1]}
    bf16 = {"name": "fc.weight", "dtype": "BF16", "shape": [4, 12]}
    assert draft_scales_missing([bf16])["status"] == "not-applicable"
    assert draft_scales_missing([fp8, scale, bf16])["status"] == "ok"
    found = draft_scales_missing([fp8, bf16])
    assert found["status"] == "found"
    assert found["findings"][0]["evidence"]["weights"] == ["midlayer.mlp.up_proj.weight"]


def test_tokenizer_rule(tmp_path):
    write_tokenizer(tmp_path / "target", BASE, {"<|eot|>": 200}, "<|eot|>")
    same = tmp_path / "same"
    write_tokenizer(same, BASE, {"<|eot|>": 200}, "<|eot|>")
    one_off = dict(BASE)
    one_off["tok199"], one_off["tokX"] = 199, 198  # one token differs
    del one_off["tok198"]
    write_tokenizer(tmp_path / "other", one_off, {"<|eot|>": 200}, "<|eot|>")
    write_tokenizer(tmp_path / "moved", BASE, {"<|eot|>": 201}, "<|eot|>")
    target = fingerprint(str(tmp_path / "target"))

    def judge(folder: Path | None) -> dict:
        draft = fingerprint(str(folder)) if folder else {"present": False}
        return tokenizer_mismatch({"draft": draft, "target": target})

    assert judge(None)["status"] == "not-applicable"
    assert judge(same)["status"] == "ok"
    assert [f["severity"] for f in judge(tmp_path / "other")["findings"]] == ["error"]
    moved = judge(tmp_path / "moved")["findings"]
    assert moved[0]["evidence"]["tokens"] == {"<|eot|>": [201, 200]}


def test_spec_audit_raises_both(box, monkeypatch, spec_world, tmp_path):  # noqa: F811
    draft = write_eagle3_checkpoint(tmp_path / "fp8-draft")
    write_raw_safetensors(
        draft / "quant.safetensors",
        {"midlayer.self_attn.qkv_proj.weight": ("F8_E4M3", [64, 128], 1)},
    )
    write_tokenizer(draft, {**BASE, "extra": 200}, {}, "tok1")
    target = write_target_config(tmp_path / "target")
    write_tokenizer(target, BASE, {}, "tok1")
    outcome = _run(box, monkeypatch, args=_launch(target, draft, "EAGLE3"),
                   roots=str(spec_world["engine"]))  # fmt: skip
    found = {f["id"]: f for f in outcome.findings}
    assert found["draft-scales-missing"]["evidence"]["weights"] == [
        "midlayer.self_attn.qkv_proj.weight"
    ]
    assert found["tokenizer-mismatch"]["evidence"]["draft_vocab"] == 201
    assert outcome.verdict == "defect"
