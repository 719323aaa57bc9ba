"""Does the draft fit what it is served with: its quantized weights' scales and its tokenizer.
Pure checks over a Deployment, one function per finding, each returning a check result
(remotedbg.contract).

- draft-scales-missing: quantized weights (FP8, INT8, packed 4-bit) without the scale tensors
  that give them their values. This is a property of the checkpoint: no loader can dequantize
  them, so an engine either fails or computes with raw codes.
- tokenizer-mismatch: the draft ships a tokenizer whose token -> id map differs from the
  target's. Engines tokenize with the target's tokenizer (the draft's files are never loaded),
  so a draft trained on other ids proposes tokens the target reads as different ones.
"""

from __future__ import annotations

from typing import Any

from remotedbg.agent.findings import ERROR, WARNING, finding
from remotedbg.contract import add_finding, check_result, not_applicable, unknown

#: safetensors dtypes of quantized weights (FP8, INT8, and 4-bit formats packed into bytes).
QUANTIZED_DTYPES = ("F8_E4M3", "F8_E5M2", "F8_E8M0", "I8", "U8", "I4", "U4", "F4")
#: What a quantized weight `X.weight` needs beside it: any tensor `X.<suffix>`.
SCALE_SUFFIXES = ("weight_scale", "weight_scale_inv", "weight_scale_2", "scales", "scale",
                  "weight_scales", "input_scale", "qscale")  # fmt: skip


def _has_scale(weight: str, names: set[str]) -> bool:
    module = weight[: -len("weight")]
    return any(module + suffix in names for suffix in SCALE_SUFFIXES)


def draft_scales_missing(tensors: list[dict] | None) -> dict[str, Any]:
    result = check_result("draft-scales-missing")
    if tensors is None:
        return unknown(result, "the draft's tensors were not listed")
    names = {t["name"] for t in tensors}
    quantized = [t for t in tensors if t.get("dtype") in QUANTIZED_DTYPES
                 and t["name"].endswith(".weight") and len(t.get("shape") or []) == 2]  # fmt: skip
    if not quantized:
        return not_applicable(result, "no quantized weights in the draft")
    bare = [t for t in quantized if not _has_scale(t["name"], names)]
    result["facts"] = {"quantized": len(quantized), "without_scales": len(bare)}
    if not bare:
        return result
    shown = ", ".join(f"{t['name']} ({t['dtype']})" for t in bare[:6])
    return add_finding(
        result,
        finding(
            "draft-scales-missing",
            ERROR,
            f"{len(bare)} quantized draft weight(s) have no scale tensors",
            f"{shown}{' ...' if len(bare) > 6 else ''}: stored as {bare[0]['dtype']} codes with "
            "no `weight_scale`/`weight_scale_inv` beside them, so no loader can turn them back "
            "into values; an engine that copies them into a bf16 layer computes with the raw "
            "codes. Re-export the draft in bf16, or with its scales.",
            {
                "weights": [t["name"] for t in bare[:20]],
                "dtype": bare[0]["dtype"],
                "count": len(bare),
            },  # fmt: skip
        ),
    )


def tokenizer_mismatch(tokenizers: dict | None) -> dict[str, Any]:
    result = check_result("tokenizer-mismatch")
    draft = (tokenizers or {}).get("draft")
    target = (tokenizers or {}).get("target")
    if not draft or not draft.get("present"):
        why = "the draft ships no tokenizer: it is served with the target's"
        return not_applicable(result, why)
    if not target or not target.get("present"):
        return unknown(result, "the target's tokenizer files were not found")
    if not draft.get("vocab_sha256") or not target.get("vocab_sha256"):
        return unknown(result, draft.get("error") or target.get("error")
                       or "no tokenizer.json to compare (a slow tokenizer only)")  # fmt: skip
    result["facts"] = {"draft_vocab": draft["vocab_size"], "target_vocab": target["vocab_size"]}
    if draft["vocab_sha256"] != target["vocab_sha256"]:
        return add_finding(
            result,
            finding(
                "tokenizer-mismatch",
                ERROR,
                "the draft's tokenizer is not the target's",
                f"The draft ships a tokenizer of {draft['vocab_size']} base tokens and the target "
                f"one of {target['vocab_size']}, with a different token -> id map. The engine "
                "tokenizes with the target's, so ids the draft learned mean other tokens: "
                "train the draft on the target's tokenizer.",
                {
                    "draft_vocab": draft["vocab_size"],
                    "target_vocab": target["vocab_size"],
                    "draft_sha256": draft["vocab_sha256"][:16],
                    "target_sha256": target["vocab_sha256"][:16],
                },  # fmt: skip
            ),
        )
    moved = sorted(t for t, i in draft["added"].items() if t in target["added"]
                   and target["added"][t] != i)  # fmt: skip
    special = {k: (v, target["special"].get(k)) for k, v in draft["special"].items()
               if target["special"].get(k) not in (None, v)}  # fmt: skip
    if moved:
        add_finding(result, finding(
            "tokenizer-mismatch", ERROR,
            f"{len(moved)} added token(s) have other ids in the draft's tokenizer",
            "Same base vocabulary, but special or added tokens sit at other ids "
            f"({', '.join(moved[:5])}): the draft was trained with ids the target does not use.",
            {"tokens": {t: [draft["added"][t], target["added"][t]] for t in moved[:10]}},
        ))  # fmt: skip
    if special:
        add_finding(result, finding(
            "tokenizer-mismatch", WARNING,
            "the draft's tokenizer names other special tokens than the target's",
            "; ".join(f"{k}: draft {d!r}, target {t!r}" for k, (d, t) in special.items())
            + ". Training used other end-of-turn or padding tokens than serving does.",
            {"special": special},
        ))  # fmt: skip
    return result
