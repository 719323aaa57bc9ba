"""EAGLE-3 draft vocab map checks: d2t (offsets) and t2d (mask) against each other and the configs.

Facts the checks rest on: a draft with a reduced vocab of N ids stores `d2t` (int64, length N)
as OFFSETS, so the engine maps draft id i to target id i + d2t[i]; `t2d` (bool, length V = target
vocab) marks the target ids in the draft vocab, so nonzero(t2d) == arange(N) + d2t. A broken
converter stores the absolute target ids in d2t instead; the engine then adds arange again.

`analyze_vocab_map` is pure and takes numpy arrays or plain lists: one analysis, written against a
handful of vector primitives (`_NumpyOps` when numpy imports, `_ListOps` otherwise), so both paths
give identical answers. `vocab_check` is the agent entry reading the tensors in place.
"""

from __future__ import annotations

import itertools
import operator
import os
import re
from collections import Counter

from remotedbg.agent import tokenizer_files
from remotedbg.agent.checkpoint import (
    CheckpointError,
    load_json_file,
    open_checkpoint,
    read_model_config,
)
from remotedbg.agent.findings import ERROR, WARNING, finding
from remotedbg.agent.safetensors_file import numpy_or_none

FEW = 5  # examples in evidence
HEAD = 10  # leading values shown
TOKENIZER_CAP = 64 * 1024 * 1024
DEFAULT_TOKENIZER_SAMPLE = 8

DRAFT_CONFIG_FIELDS = (
    "architectures",
    "draft_vocab_size",
    "vocab_size",
    "hidden_size",
    "target_hidden_size",
    "eos_token_id",
)
TARGET_CONFIG_FIELDS = ("architectures", "vocab_size", "hidden_size", "eos_token_id")


# ------------------------------------------------------------------------------ vector primitives


_INT64_MAX = (1 << 63) - 1


class _ListOps:
    """Stdlib vectors: Python lists of int/bool/float."""

    name = "stdlib"

    def vec(self, values):
        if isinstance(values, list):
            out = values
        elif hasattr(values, "tolist"):
            out = values.tolist()
        else:
            out = list(values)
        if out and isinstance(out[0], list):  # nested (2-D) input: flatten
            out = _flatten(out)
        return out

    def kind(self, v):
        if all(isinstance(x, bool) for x in v):
            return "bool"
        if all(isinstance(x, int) for x in v):
            return "int"
        if all(isinstance(x, (int, float)) for x in v):
            return "float"
        return "other"

    def to_int(self, v):
        """(int vector, None) or (None, first offending value) when values are not integral."""
        if all(type(x) is int for x in v):  # already integers (an int64 tensor): no copy
            return v, None
        out = []
        for x in v:
            if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
                return None, x
            if x != int(x):
                return None, x
            out.append(int(x))
        return out, None

    def mask(self, v):
        return list(map(bool, v))

    def head(self, v, k):
        return [_py(x) for x in v[:k]]

    def add_arange(self, v):
        # int64 arithmetic as the engines do it (torch, numpy): a d2t near int64's limit wraps
        # instead of growing past 64 bits; it is out of range either way (d2t-out-of-range)
        out = list(map(operator.add, v, range(len(v))))
        if out and (max(out) > _INT64_MAX or min(out) < -_INT64_MAX - 1):
            out = [((x + _INT64_MAX + 1) % (1 << 64)) - _INT64_MAX - 1 for x in out]
        return out

    def nonzero(self, v):
        return list(itertools.compress(range(len(v)), v))

    def count_true(self, v):
        return sum(map(bool, v))

    def equal(self, a, b):
        return len(a) == len(b) and all(x == y for x, y in zip(a, b))  # noqa: B905 (3.8)

    def setdiff(self, a, b):
        other = set(b)
        missing = sorted(set(x for x in a if x not in other))
        return len(missing), missing[:FEW]

    def strictly_increasing(self, v):
        return all(x < y for x, y in zip(v, v[1:]))  # noqa: B905

    def nondecreasing(self, v):
        return all(x <= y for x, y in zip(v, v[1:]))  # noqa: B905

    def all_ge_index(self, v):
        return all(x >= i for i, x in enumerate(v))

    def vmin(self, v):
        return min(v) if v else None

    def vmax(self, v):
        return max(v) if v else None

    def outside(self, v, lo, hi):
        bad = [i for i, x in enumerate(v) if x < lo or (hi is not None and x >= hi)]
        return len(bad), bad[:FEW]

    def value_counts(self, v, k):
        """(distinct, [(value, count, first draft ids)] for the k most repeated, ties by first
        occurrence)."""
        counts = Counter(v)  # keys in order of first occurrence; most_common keeps ties so
        out = []
        for value, count in counts.most_common(k):
            out.append((value, count, _first_indices(v, value, FEW)))
        return len(counts), out

    def contains(self, v, values):
        present = set(v)
        return [x in present for x in values]


class _NumpyOps:
    """numpy vectors: 1-D arrays."""

    name = "numpy"

    def __init__(self, np):
        self.np = np

    def vec(self, values):
        return self.np.asarray(values).reshape(-1)

    def kind(self, v):
        return {"b": "bool", "i": "int", "u": "int", "f": "float"}.get(v.dtype.kind, "other")

    def to_int(self, v):
        np = self.np
        if v.dtype.kind in "iub":
            return v.astype(np.int64), None
        if v.dtype.kind != "f":
            return None, _py(v[0]) if len(v) else None
        bad = ~np.isfinite(v)
        if not bad.any():
            bad = v != np.floor(v)
        if bad.any():
            return None, _py(v[int(np.flatnonzero(bad)[0])])
        return v.astype(np.int64), None

    def mask(self, v):
        return v.astype(bool)

    def head(self, v, k):
        return [_py(x) for x in v[:k].tolist()]

    def add_arange(self, v):
        return v + self.np.arange(len(v), dtype=v.dtype)

    def nonzero(self, v):
        return self.np.flatnonzero(v).astype(self.np.int64)

    def count_true(self, v):
        return int(self.np.count_nonzero(v))

    def equal(self, a, b):
        return bool(self.np.array_equal(a, b))

    def setdiff(self, a, b):
        missing = self.np.setdiff1d(a, b)
        return int(len(missing)), [int(x) for x in missing[:FEW]]

    def strictly_increasing(self, v):
        return bool((self.np.diff(v) > 0).all())

    def nondecreasing(self, v):
        return bool((self.np.diff(v) >= 0).all())

    def all_ge_index(self, v):
        return bool((v >= self.np.arange(len(v))).all())

    def vmin(self, v):
        return int(v.min()) if len(v) else None

    def vmax(self, v):
        return int(v.max()) if len(v) else None

    def outside(self, v, lo, hi):
        bad = v < lo
        if hi is not None:
            bad |= v >= hi
        where = self.np.flatnonzero(bad)
        return int(len(where)), [int(i) for i in where[:FEW]]

    def value_counts(self, v, k):
        np = self.np
        values, first, counts = np.unique(v, return_index=True, return_counts=True)
        order = np.lexsort((first, -counts))[:k]
        out = []
        for j in order:
            ids = np.flatnonzero(v == values[j])[:FEW]
            out.append((int(values[j]), int(counts[j]), [int(i) for i in ids]))
        return int(len(values)), out

    def contains(self, v, values):
        if not values:
            return []
        return [bool(x) for x in self.np.isin(self.np.asarray(values, dtype=self.np.int64), v)]


def _first_indices(v, value, k):
    ids = []
    while len(ids) < k:
        try:
            ids.append(v.index(value, ids[-1] + 1 if ids else 0))
        except ValueError:
            break
    return ids


def _flatten(nested):
    out = []
    stack = [nested]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        else:
            out.append(item)
    return out


def _py(x):
    if hasattr(x, "item"):
        x = x.item()
    return x


def _ops(*vectors):
    """numpy's primitives for numpy input (a large map, read with numpy), else the stdlib's:
    importing numpy costs more CPU than the stdlib analysis of a map up to STDLIB_MAP_LIMIT."""
    if any(type(v).__module__ == "numpy" for v in vectors if v is not None):
        np = numpy_or_none()
        if np is not None:
            return _NumpyOps(np)
    return _ListOps()


# ------------------------------------------------------------------------------------- analysis


def dtype_kind_from_name(name):
    """'bool' / 'int' / 'float' / 'other' for a dtype spelled the safetensors, numpy or torch way
    ("I64", "int64", "torch.int64", "BOOL", "bool", "BF16", "float32")."""
    if name is None:
        return None
    text = str(name).lower().replace("torch.", "").replace("numpy.", "").strip("<>|=")
    if text in ("bool", "bool_", "b1", "?"):
        return "bool"
    if re.match(r"^(u?int\d*|[iu]\d+|long|short|int)$", text):
        return "int"
    if re.match(r"^(b?f(loat)?\d+.*|half|double|float|bfloat16|f8_.*|f[46].*)$", text):
        return "float"
    return "other"


def _as_int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _eos_ids(config):
    value = (config or {}).get("eos_token_id")
    if value is None:
        return []
    values = value if isinstance(value, (list, tuple)) else [value]
    return [v for v in values if _as_int(v) is not None]


def _fields(config, names):
    config = config or {}
    return {name: config.get(name) for name in names if name in config}


def _vector_kind(ops, vec, dtype_name, empty_kind):
    """The element kind the dtype name says, else the values' (`empty_kind` when there are
    none); None when there is no vector and no dtype name."""
    kind = dtype_kind_from_name(dtype_name) if dtype_name else None
    if vec is not None and kind is None:
        kind = ops.kind(vec) if len(vec) else empty_kind
    return kind


def _len_or_none(vec):
    return len(vec) if vec is not None else None


def _target_vocab(target_cfg_vocab, draft_cfg_vocab, t2d_len):
    """(target vocab size, where it comes from), best source first."""
    if target_cfg_vocab is not None:
        return target_cfg_vocab, "target config vocab_size"
    if draft_cfg_vocab is not None:
        return draft_cfg_vocab, "draft config vocab_size"
    if t2d_len is not None:
        return t2d_len, "len(t2d)"
    return None, None


def _integral_d2t(ops, d2t_v, notes):
    """d2t as integers; None (and a note) when it holds a non-integral value."""
    if d2t_v is None:
        return None
    d2t_i, offending = ops.to_int(d2t_v)
    if d2t_i is None:
        notes.append("d2t holds non-integral value %r: map not analysed" % (offending,))
    return d2t_i


class _VocabMap:
    """What every check of analyze_vocab_map reads: the vectors, their kinds and the sizes,
    worked out once; the checks add findings and notes, and the format check its verdict."""

    def __init__(self, d2t, t2d, draft_config, target_config, lm_head_shape, d2t_dtype, t2d_dtype,
                 shared_ids=None):  # fmt: skip

        ops = _ops(d2t, t2d)
        dc = draft_config or {}
        tc = target_config or {}
        findings = []
        notes = []

        d2t_v = ops.vec(d2t) if d2t is not None else None
        t2d_v = ops.vec(t2d) if t2d is not None else None
        d2t_kind = _vector_kind(ops, d2t_v, d2t_dtype, "int")
        t2d_kind = _vector_kind(ops, t2d_v, t2d_dtype, "bool")

        cfg_draft_vocab = _as_int(dc.get("draft_vocab_size"))
        draft_cfg_vocab = _as_int(dc.get("vocab_size"))
        target_cfg_vocab = _as_int(tc.get("vocab_size"))
        lm_rows = _as_int(int(lm_head_shape[0])) if lm_head_shape else None
        n_d2t = _len_or_none(d2t_v)
        t2d_len = _len_or_none(t2d_v)
        t2d_mask = ops.mask(t2d_v) if t2d_v is not None else None
        t2d_count = ops.count_true(t2d_mask) if t2d_mask is not None else None
        vocab, vocab_source = _target_vocab(target_cfg_vocab, draft_cfg_vocab, t2d_len)
        draft_vocab = next(
            (v for v in (n_d2t, cfg_draft_vocab, lm_rows, t2d_count) if v is not None), None
        )

        d2t_i = _integral_d2t(ops, d2t_v, notes)

        self.__dict__.update(
            ops=ops,
            dc=dc,
            tc=tc,
            findings=findings,
            notes=notes,
            d2t_v=d2t_v,
            t2d_v=t2d_v,
            d2t_kind=d2t_kind,
            t2d_kind=t2d_kind,
            cfg_draft_vocab=cfg_draft_vocab,
            draft_cfg_vocab=draft_cfg_vocab,
            target_cfg_vocab=target_cfg_vocab,
            lm_rows=lm_rows,
            n_d2t=n_d2t,
            t2d_len=t2d_len,
            t2d_mask=t2d_mask,
            t2d_count=t2d_count,
            draft_vocab=draft_vocab,
            d2t_i=d2t_i,
            vocab=vocab,
            vocab_source=vocab_source,
            d2t_dtype=d2t_dtype,
            t2d_dtype=t2d_dtype,
            shared_ids=shared_ids,
            padded_only=False,  # _check_sizes: one tokenizer, padded to the two sizes
            lm_head_shape=lm_head_shape,
            target_config=target_config,
        )
        self.fmt, self.fmt_evidence = "unknown", None
        self.mapped = self.t2d_ids = self.collapse = self.vocab_ids = None
        self.eos_ids, self.eos_missing = [], []


def _check_dtypes(m):
    ops, findings, d2t_v, t2d_v, d2t_kind, t2d_kind, d2t_dtype, t2d_dtype = (
        m.ops,
        m.findings,
        m.d2t_v,
        m.t2d_v,
        m.d2t_kind,
        m.t2d_kind,
        m.d2t_dtype,
        m.t2d_dtype,
    )
    wrong = []
    if d2t_v is not None and d2t_kind != "int":
        wrong.append("d2t is %s, not an integer type" % (d2t_dtype or d2t_kind))
    if t2d_v is not None and t2d_kind != "bool":
        wrong.append("t2d is %s, not bool" % (t2d_dtype or t2d_kind))
    if wrong:
        findings.append(
            finding(
                "d2t-wrong-dtype",
                ERROR,
                "Vocab map tensors have the wrong dtype",
                "; ".join(wrong) + ". Engines expect d2t int64 (offsets added to int64 ids) "
                "and t2d bool; a float d2t breaks the index arithmetic or loses precision.",
                {
                    "d2t_dtype": d2t_dtype or d2t_kind,
                    "t2d_dtype": t2d_dtype or t2d_kind,
                    "d2t_head": ops.head(d2t_v, HEAD) if d2t_v is not None else None,
                    "expected": {"d2t": "int64", "t2d": "bool"},
                },
            )
        )


def _check_d2t_present(m):
    findings, d2t_v, t2d_v, cfg_draft_vocab, lm_rows, t2d_count, vocab, vocab_source = (
        m.findings,
        m.d2t_v,
        m.t2d_v,
        m.cfg_draft_vocab,
        m.lm_rows,
        m.t2d_count,
        m.vocab,
        m.vocab_source,
    )
    if d2t_v is None:
        smaller = [v for v in (cfg_draft_vocab, lm_rows, t2d_count) if v is not None]
        if vocab is not None and smaller and min(smaller) < vocab:
            findings.append(
                finding(
                    "d2t-missing",
                    ERROR,
                    "Draft vocab is smaller than the target's but there is no d2t",
                    "Without d2t the engine cannot map the %d draft ids back to the %d target "
                    "ids: draft tokens come out as the wrong target tokens (or the engine "
                    "refuses to load)." % (min(smaller), vocab),
                    {
                        "draft_vocab_size": cfg_draft_vocab,
                        "lm_head_rows": lm_rows,
                        "t2d_true_count": t2d_count,
                        "target_vocab": vocab,
                        "target_vocab_source": vocab_source,
                        "t2d_present": t2d_v is not None,
                    },
                )
            )


def _d2t_format(ops, d2t_i, mapped, t2d_ids):
    """(format, evidence source, whether nonzero(t2d) equals arange(N) + d2t): "offsets" or
    "absolute" from t2d when it decides, else from the shape of d2t (heuristic)."""
    n = len(d2t_i)
    strictly = ops.strictly_increasing(d2t_i)
    heuristic_absolute = (
        n > 1 and strictly and ops.all_ge_index(d2t_i) and (ops.vmax(d2t_i) or 0) >= n
    )
    t2d_matches = t2d_ids is not None and ops.equal(t2d_ids, mapped)
    if t2d_matches:
        return "offsets", "t2d", t2d_matches
    if t2d_ids is not None and ops.equal(t2d_ids, d2t_i):
        return "absolute", "t2d", t2d_matches
    if heuristic_absolute:
        return "absolute", "heuristic", t2d_matches
    if ops.nondecreasing(d2t_i) and (ops.vmin(d2t_i) or 0) >= 0:
        return "offsets", "heuristic", t2d_matches
    return "unknown", None, t2d_matches


def _collapse(ops, d2t_i):
    """How many draft ids d2t sends to the same target id."""
    distinct, top = ops.value_counts(d2t_i, 3)
    return {
        "distinct_targets": distinct,
        "draft_ids": len(d2t_i),
        "max_collapse": top[0][1] if top else 0,
        "examples": [
            {"target_id": value, "count": count, "draft_ids": ids}
            for value, count, ids in top
            if count > 1
        ],
    }


def _report_absolute_ids(m, mapped, t2d_ids, fmt_evidence, n_out):
    ops, d2t_i, n = m.ops, m.d2t_i, len(m.d2t_i)
    evidence = {
        "d2t_head": ops.head(d2t_i, HEAD),
        "engine_ids_head (arange + d2t)": ops.head(mapped, HEAD),
        "evidence_source": fmt_evidence,
        "engine_ids_out_of_range": n_out,
        "target_vocab": m.vocab,
    }
    if fmt_evidence == "t2d":
        evidence["nonzero_t2d_head"] = ops.head(t2d_ids, HEAD)
        detail = (
            "nonzero(t2d) equals d2t itself, not arange(N) + d2t: d2t holds absolute "
            "target ids. The engine adds arange(N) again, so draft id i becomes "
            "d2t[i] + i (%d of %d land outside the target vocab). Fix: d2t = ids - "
            "arange(N)." % (n_out, n)
        )
    else:
        detail = (
            "No usable t2d to confirm, so this is a heuristic (weaker evidence): d2t "
            "is strictly increasing with d2t[i] >= i and values up to %s >= N=%d, "
            "which is what absolute target ids look like; offsets from a frequency-"
            "chosen vocab repeat. As offsets, %d of %d ids land outside the target "
            "vocab." % (ops.vmax(d2t_i), n, n_out, n)
        )
    m.findings.append(
        finding(
            "d2t-absolute-ids",
            ERROR,
            "d2t holds absolute target ids, not offsets",
            detail,
            evidence,
        )
    )


def _report_out_of_range(m, mapped, n_out, first_out):
    ops, vocab = m.ops, m.vocab
    n_dup, dup_top = (len(m.d2t_i) - distinct_mapped(ops, mapped)), None
    if n_dup:
        _d, dup_top = ops.value_counts(mapped, 3)
    if n_out or n_dup:
        m.findings.append(
            finding(
                "d2t-out-of-range",
                ERROR,
                "d2t maps draft ids outside the target vocab or onto the same id",
                "target id = draft id + d2t[draft id] must be unique and in [0, %s): "
                "%d outside, %d repeated." % (vocab, n_out, n_dup),
                {
                    "target_vocab": vocab,
                    "target_vocab_source": m.vocab_source,
                    "out_of_range_count": n_out,
                    "out_of_range_draft_ids": first_out,
                    "out_of_range_target_ids": [_py(mapped[i]) for i in first_out],
                    "repeated_count": n_dup,
                    "repeated_examples": [
                        {"target_id": v, "draft_ids": ids} for v, c, ids in (dup_top or []) if c > 1
                    ],
                    "mapped_min": ops.vmin(mapped),
                    "mapped_max": ops.vmax(mapped),
                },
            )
        )


def _report_t2d_mismatch(m, mapped, t2d_ids):
    ops = m.ops
    only_t2d, first_t2d = ops.setdiff(t2d_ids, mapped)
    only_d2t, first_d2t = ops.setdiff(mapped, t2d_ids)
    m.findings.append(
        finding(
            "t2d-mismatch",
            ERROR,
            "t2d does not mark the target ids that d2t maps to",
            "nonzero(t2d) should equal arange(N) + d2t: %d ids are marked in t2d "
            "but not reached by d2t, %d reached by d2t but not marked." % (only_t2d, only_d2t),
            {
                "t2d_true_count": m.t2d_count,
                "len_d2t": len(m.d2t_i),
                "in_t2d_not_d2t_count": only_t2d,
                "in_t2d_not_d2t": first_t2d,
                "in_d2t_not_t2d_count": only_d2t,
                "in_d2t_not_t2d": first_d2t,
                "expected_head (arange + d2t)": ops.head(mapped, HEAD),
                "found_head (nonzero t2d)": ops.head(t2d_ids, HEAD),
            },
        )
    )


def _check_format(m):
    ops, d2t_i = m.ops, m.d2t_i
    fmt, fmt_evidence = "unknown", None
    mapped = None
    t2d_ids = ops.nonzero(m.t2d_mask) if m.t2d_mask is not None else None
    collapse = None
    vocab_ids = None  # the set of target ids the draft vocab is meant to cover
    if d2t_i is not None:
        mapped = ops.add_arange(d2t_i)
        fmt, fmt_evidence, t2d_matches = _d2t_format(ops, d2t_i, mapped, t2d_ids)
        vocab_ids = d2t_i if fmt == "absolute" else mapped
        n_out, first_out = ops.outside(mapped, 0, m.vocab)
        collapse = _collapse(ops, d2t_i)
        if fmt == "absolute":
            _report_absolute_ids(m, mapped, t2d_ids, fmt_evidence, n_out)
        else:
            _report_out_of_range(m, mapped, n_out, first_out)
            if t2d_ids is not None and not t2d_matches:
                _report_t2d_mismatch(m, mapped, t2d_ids)
    elif t2d_ids is not None:
        vocab_ids = t2d_ids
    m.fmt, m.fmt_evidence, m.mapped, m.t2d_ids, m.collapse, m.vocab_ids = (
        fmt,
        fmt_evidence,
        mapped,
        t2d_ids,
        collapse,
        vocab_ids,
    )


def _check_t2d_length(m):
    findings, t2d_len, vocab, vocab_source = m.findings, m.t2d_len, m.vocab, m.vocab_source
    if (
        t2d_len is not None
        and vocab is not None
        and t2d_len != vocab
        and vocab_source != "len(t2d)"
    ):
        findings.append(
            finding(
                "t2d-mismatch",
                ERROR,
                "t2d length differs from the target vocab size",
                "t2d must have one entry per target id: len(t2d) = %d but %s = %d."
                % (t2d_len, vocab_source, vocab),
                {"len_t2d": t2d_len, "target_vocab": vocab, "target_vocab_source": vocab_source},
            )
        )


def _check_sizes(m):
    findings, cfg_draft_vocab, draft_cfg_vocab, target_cfg_vocab, lm_rows, n_d2t, t2d_count = (
        m.findings,
        m.cfg_draft_vocab,
        m.draft_cfg_vocab,
        m.target_cfg_vocab,
        m.lm_rows,
        m.n_d2t,
        m.t2d_count,
    )
    sizes = {}
    if cfg_draft_vocab is not None:
        sizes["config draft_vocab_size"] = cfg_draft_vocab
    elif draft_cfg_vocab is not None and (n_d2t is not None or lm_rows is not None):
        sizes["config vocab_size (no draft_vocab_size; engines fall back to it)"] = draft_cfg_vocab
    if n_d2t is not None:
        sizes["len(d2t)"] = n_d2t
    if t2d_count is not None:
        sizes["t2d true count"] = t2d_count
    if lm_rows is not None:
        sizes["lm_head rows"] = lm_rows
    problems = []
    if len(set(sizes.values())) > 1:
        problems.append("draft vocab sizes disagree")
    mapped = n_d2t is not None or t2d_count is not None or cfg_draft_vocab is not None
    padded_only = (not mapped and m.shared_ids is not None and draft_cfg_vocab is not None
                   and target_cfg_vocab is not None
                   and min(draft_cfg_vocab, target_cfg_vocab) >= m.shared_ids)  # fmt: skip
    if padded_only and draft_cfg_vocab != target_cfg_vocab:
        m.padded_only = True
        m.notes.append(
            "draft config vocab_size %d and target's %d differ only past the %d ids of the one "
            "tokenizer both ship (embeddings padded to different sizes)"
            % (draft_cfg_vocab, target_cfg_vocab, m.shared_ids)
        )
    elif (
        draft_cfg_vocab is not None
        and target_cfg_vocab is not None
        and (draft_cfg_vocab != target_cfg_vocab)
    ):
        problems.append(
            "draft config vocab_size %d != target config vocab_size %d"
            % (draft_cfg_vocab, target_cfg_vocab)
        )
    if problems:
        evidence = dict(sizes)
        evidence["draft config vocab_size"] = draft_cfg_vocab
        evidence["target config vocab_size"] = target_cfg_vocab
        findings.append(
            finding(
                "draft-vocab-size-mismatch",
                ERROR,
                "Draft vocab size disagrees between config and tensors",
                "; ".join(problems)
                + ": "
                + ", ".join("%s=%s" % (k, v) for k, v in sizes.items())
                + ". The engine sizes the draft lm_head from the config, so loading fails or "
                "ids are misread.",
                evidence,
            )
        )


def _check_eos(m):
    """A warning only when the draft can propose none of the ids that end a turn. Those are the
    target's (the engine stops on the target's eos; the draft config's, when the target config
    names none); an id is in the draft vocab when d2t maps to it or t2d marks it."""
    ops, dc, tc, findings, vocab, vocab_ids = m.ops, m.dc, m.tc, m.findings, m.vocab, m.vocab_ids
    eos_sources = [("target config", e) for e in _eos_ids(tc)]
    if not eos_sources:
        eos_sources = [("draft config", e) for e in _eos_ids(dc)]
    eos_ids = sorted(set(e for _l, e in eos_sources))
    eos_missing = []
    reduced = vocab_ids is not None and (vocab is None or len(vocab_ids) < vocab)
    if reduced and eos_ids:
        present = ops.contains(vocab_ids, eos_ids)
        if m.t2d_ids is not None:
            marked = ops.contains(m.t2d_ids, eos_ids)
            present = [a or b for a, b in zip(present, marked)]  # noqa: B905
        eos_missing = [e for e, ok in zip(eos_ids, present) if not ok]  # noqa: B905
    if eos_missing and len(eos_missing) == len(eos_ids):
        findings.append(
            finding(
                "eos-not-in-draft-vocab",
                WARNING,
                "no EOS token id is in the draft vocab",
                "The draft can never propose %s, so it cannot end a turn: each sequence's last "
                "draft is rejected." % ", ".join(str(e) for e in eos_missing),
                {
                    "missing_eos_ids": eos_missing,
                    "eos_ids": [{"id": e, "from": label} for label, e in eos_sources],
                    "draft_vocab": len(vocab_ids),
                },
            )
        )
    m.eos_ids, m.eos_missing = eos_ids, eos_missing


def _note_shapes(m):
    dc, tc, notes, lm_head_shape = m.dc, m.tc, m.notes, m.lm_head_shape
    if lm_head_shape and len(lm_head_shape) > 1 and _as_int(dc.get("hidden_size")) is not None:
        if int(lm_head_shape[1]) != dc["hidden_size"]:
            notes.append(
                "lm_head hidden dim %s != config hidden_size %s"
                % (lm_head_shape[1], dc["hidden_size"])
            )
    if tc and _as_int(dc.get("target_hidden_size")) is not None and _as_int(tc.get("hidden_size")):
        if dc["target_hidden_size"] != tc["hidden_size"]:
            notes.append(
                "draft target_hidden_size %s != target hidden_size %s"
                % (dc["target_hidden_size"], tc["hidden_size"])
            )
    architectures = dc.get("architectures")
    if (
        isinstance(architectures, list)
        and architectures
        and not any("eagle" in str(a).lower() for a in architectures)
    ):
        notes.append("draft architectures %r do not name an EAGLE model" % (architectures,))


def _summary(m):
    (
        ops,
        dc,
        tc,
        notes,
        d2t_v,
        t2d_v,
        d2t_kind,
        t2d_kind,
        n_d2t,
        t2d_len,
        t2d_count,
        draft_vocab,
        d2t_i,
        vocab,
        vocab_source,
        d2t_dtype,
        t2d_dtype,
        lm_head_shape,
        target_config,
        fmt,
        fmt_evidence,
        mapped,
        collapse,
        eos_ids,
        eos_missing,
    ) = (
        m.ops,
        m.dc,
        m.tc,
        m.notes,
        m.d2t_v,
        m.t2d_v,
        m.d2t_kind,
        m.t2d_kind,
        m.n_d2t,
        m.t2d_len,
        m.t2d_count,
        m.draft_vocab,
        m.d2t_i,
        m.vocab,
        m.vocab_source,
        m.d2t_dtype,
        m.t2d_dtype,
        m.lm_head_shape,
        m.target_config,
        m.fmt,
        m.fmt_evidence,
        m.mapped,
        m.collapse,
        m.eos_ids,
        m.eos_missing,
    )
    summary = {
        "backend": ops.name,
        "draft_vocab": draft_vocab,
        "target_vocab": vocab,
        "target_vocab_source": vocab_source,
        "format": fmt,
        "format_evidence": fmt_evidence,
        "d2t_present": d2t_v is not None,
        "t2d_present": t2d_v is not None,
        "d2t_dtype": d2t_dtype or d2t_kind,
        "t2d_dtype": t2d_dtype or t2d_kind,
        "len_d2t": n_d2t,
        "len_t2d": t2d_len,
        "t2d_true_count": t2d_count,
        "lm_head_shape": list(lm_head_shape) if lm_head_shape else None,
        "d2t_head": ops.head(d2t_i, HEAD) if d2t_i is not None else None,
        "mapped_head": ops.head(mapped, HEAD) if mapped is not None else None,
        "mapped_min": ops.vmin(mapped) if mapped is not None else None,
        "mapped_max": ops.vmax(mapped) if mapped is not None else None,
        "eos_ids": eos_ids,
        "eos_missing": eos_missing,
        "direct_loader_collapse": collapse,
        "draft_config": _fields(dc, DRAFT_CONFIG_FIELDS),
        "target_config": _fields(tc, TARGET_CONFIG_FIELDS) if target_config else None,
        "notes": notes,
        # one tokenizer in both, embeddings padded to other sizes: its ids, else None
        "shared_tokenizer_ids": m.shared_ids if m.padded_only else None,
    }
    return summary


def _wrong_rank(refs):
    """d2t (one entry per draft id) and t2d (one per target id) are vectors: the engines index
    them as such (SGLang `hot_token_id = d2t + arange(d2t.shape[0])`); another shape is read
    flat by nothing and fails or mis-maps where it is served."""
    out = []
    for key in ("d2t", "t2d"):
        ref = refs.get(key)
        shape = (ref or {}).get("shape")
        if isinstance(shape, list) and len(shape) != 1:
            out.append(finding(
                "d2t-wrong-shape", ERROR,
                "%s is not a vector: shape %s" % (key, shape),
                "%s must hold one entry per %s id (1-D); this checkpoint stores it as %s. Fix: "
                "save it flat, as SpecForge and speculators do." % (
                    key, "draft" if key == "d2t" else "target", shape),
                {"tensor": key, "shape": shape},
            ))  # fmt: skip
    return out


def analyze_vocab_map(
    d2t,
    t2d,
    draft_config,
    target_config=None,
    lm_head_shape=None,
    d2t_dtype=None,
    t2d_dtype=None,
    shared_ids=None,
):
    """Check an EAGLE-3 draft vocab map. Returns {"findings": [...], "summary": {...}}.

    d2t / t2d: numpy arrays or lists (or None when absent); configs: dicts (draft config.json,
    target config.json or None); lm_head_shape: [rows, hidden] of the draft lm_head weight;
    *_dtype: the stored dtype names (safetensors/numpy/torch spelling) when known;
    shared_ids: the ids of the one tokenizer draft and target both ship (tokenizer_files.
    shared_ids), when they do.
    """
    m = _VocabMap(d2t, t2d, draft_config, target_config, lm_head_shape, d2t_dtype, t2d_dtype,
                  shared_ids)  # fmt: skip
    for check in (
        _check_dtypes,
        _check_d2t_present,
        _check_format,
        _check_t2d_length,
        _check_sizes,
        _check_eos,
        _note_shapes,
    ):
        check(m)
    return {"findings": m.findings, "summary": _summary(m)}


def distinct_mapped(ops, mapped):
    return ops.value_counts(mapped, 0)[0]


# ---------------------------------------------------------------------------------- agent entry


def _tokenizer_tokens(tokenizer_path, ids):
    """{id: token string} for `ids`, from tokenizer.json's model.vocab and added_tokens."""
    data = load_json_file(tokenizer_path, "tokenizer.json", cap=TOKENIZER_CAP)
    wanted = set(ids)
    found = {}
    model = data.get("model") if isinstance(data, dict) else None
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if isinstance(vocab, dict):
        for token, token_id in vocab.items():
            if token_id in wanted:
                found[token_id] = token
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        for token_id in wanted:
            if isinstance(token_id, int) and 0 <= token_id < len(vocab):
                entry = vocab[token_id]
                found[token_id] = entry[0] if isinstance(entry, list) and entry else entry
    for added in (data.get("added_tokens") or []) if isinstance(data, dict) else []:
        if isinstance(added, dict) and added.get("id") in wanted:
            found[added["id"]] = added.get("content")
    return found


def _tokenizer_sample(tokenizer_path, d2t, fmt, eos_ids, count):
    d2t = d2t.reshape(-1) if hasattr(d2t, "reshape") else d2t
    n = len(d2t)
    picks = list(range(min(n, (count + 1) // 2)))
    picks += [i for i in range(max(0, n - count // 2), n) if i not in picks]
    rows = []
    for i in picks:
        value = int(d2t[i])
        row = {"draft_id": i, "target_id": i + value}
        if fmt == "absolute":
            row["intended_target_id"] = value
        rows.append(row)
    ids = [r["target_id"] for r in rows] + [r.get("intended_target_id") for r in rows] + eos_ids
    tokens = _tokenizer_tokens(tokenizer_path, [i for i in ids if i is not None])
    for row in rows:
        row["token"] = tokens.get(row["target_id"])
        if "intended_target_id" in row:
            row["intended_token"] = tokens.get(row["intended_target_id"])
    return {
        "tokenizer": tokenizer_path,
        "mapped": rows,
        "eos": [{"id": e, "token": tokens.get(e)} for e in eos_ids],
    }


def _tensor_ref(ckpt, name):
    full = ckpt.find(name)
    if full is None:
        return None
    info = ckpt.tensors[full]
    return {k: info[k] for k in ("name", "dtype", "shape", "file", "offset")}


def language_view(config, paths):
    """A config as its language model's fields read: where one of `paths` (dotted, the first
    that is an object: the client's TEXT_CONFIG_PATHS) holds them, as in a multimodal wrapper,
    that sub-config with the wrapper's architectures; else the config itself."""
    for path in paths or ():
        value = config
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, dict):
            view = dict(value)
            view.setdefault("architectures", config.get("architectures"))
            return view
    return config


def vocab_check(args):
    """{"path", "target_path"?, "tokenizer_sample"?, "own_vocab"?, "text_config_paths"?} ->
    {"findings", "unknown", "summary", "checkpoint"}.

    Reads only d2t / t2d bytes and the lm_head header entry of the draft at `path`, plus the
    target's config.json (and tokenizer.json, to decode a few mapped ids) when target_path is
    given. What cannot be read is not a finding: it is listed under "unknown" with a reason code
    (`unreadable`, `needs-torch`), and makes the verdict inconclusive, never a defect.
    """
    path = args.get("path")
    # a draft served with its own vocabulary (vLLM's use_heterogeneous_vocab): the target's
    # sizes are not its to match
    own_vocab = bool(args.get("own_vocab"))
    target_path = None if own_vocab else args.get("target_path")
    sample = args.get("tokenizer_sample")
    sample = DEFAULT_TOKENIZER_SAMPLE if sample is None else int(sample)
    unknown = []
    paths = args.get("text_config_paths") or ()
    target_config, target_dir = None, None
    if target_path:
        try:
            target_config, target_dir = read_model_config(target_path)
            target_config = language_view(target_config, paths)
        except CheckpointError as exc:
            unknown.append(_unknown(exc, "the target model's config", target_path))
    try:
        ckpt = open_checkpoint(path)
        draft_config = language_view(ckpt.config or {}, paths)
        refs = {key: _tensor_ref(ckpt, key) for key in ("d2t", "t2d", "lm_head.weight")}
        oversized = _oversized(refs, draft_config, target_config)
        if oversized:
            return oversized
        # numpy (and the site-packages it needs) only for a map large enough to pay for it
        use_numpy = None if _numel(refs["d2t"]) + _numel(refs["t2d"]) > STDLIB_MAP_LIMIT else False
        d2t = ckpt.read(refs["d2t"]["name"], use_numpy) if refs["d2t"] else None
        t2d = ckpt.read(refs["t2d"]["name"], use_numpy) if refs["t2d"] else None
    except CheckpointError as exc:
        return {
            "findings": [],
            "unknown": unknown + [_unknown(exc, "the draft checkpoint", path)],
            "summary": {},
            "checkpoint": {"path": path, "error": str(exc)},
        }
    checkpoint = ckpt.describe()
    checkpoint.update(refs)
    if ckpt.config is None:
        checkpoint["config_missing"] = True
    if ckpt.config_error:  # there but unreadable: the checks that need it cannot decide
        unknown.append(_unknown(ckpt.config_error, "the draft's config.json", path))
    lm = refs["lm_head.weight"]
    shared = None
    if target_dir and d2t is None and t2d is None:  # a model of its own: its tokenizer decides
        shared = tokenizer_files.shared_ids(tokenizer_files.fingerprint(path),
                                            tokenizer_files.fingerprint(target_dir))  # fmt: skip
    result = analyze_vocab_map(
        d2t,
        t2d,
        draft_config,
        target_config,
        lm_head_shape=lm["shape"] if lm else None,
        d2t_dtype=refs["d2t"]["dtype"] if refs["d2t"] else None,
        t2d_dtype=refs["t2d"]["dtype"] if refs["t2d"] else None,
        shared_ids=shared,
    )
    result["findings"] += _wrong_rank(refs)
    summary = result["summary"]
    if own_vocab:
        summary["notes"].append("served with its own vocabulary (use_heterogeneous_vocab): not "
                                "compared with the target's")
    if ckpt.config is None:
        summary["notes"].append(
            "no config.json next to the weights%s"
            % ((" (%s)" % ckpt.config_error) if ckpt.config_error else "")
        )
    if target_dir and sample > 0 and d2t is not None and summary["d2t_head"] is not None:
        tokenizer_path = os.path.join(target_dir, "tokenizer.json")
        if os.path.exists(tokenizer_path):
            try:
                summary["tokenizer_sample"] = _tokenizer_sample(
                    tokenizer_path, d2t, summary["format"], summary["eos_ids"], sample
                )
            except CheckpointError as exc:
                summary["notes"].append("tokenizer sample skipped: %s" % exc)
        else:
            summary["notes"].append("no tokenizer.json next to the target config")
    return {
        "findings": result["findings"],
        "unknown": unknown,
        "summary": summary,
        "checkpoint": checkpoint,
    }


# entries of d2t + t2d up to which the stdlib analysis costs less CPU than importing numpy:
# 0.05 s against 0.13-0.17 s (+0.1 s of site-packages) for 32,000 + 163,840 (bench/fleet.py)
STDLIB_MAP_LIMIT = 1 << 19
MAX_VOCAB = 1 << 24  # no tokenizer has more ids: a longer map is not read whatever it says


def _numel(ref):
    count = 1
    for dim in (ref or {}).get("shape") or []:
        count *= int(dim)
    return count


def _oversized(refs, draft_config, target_config):
    """Sizes from the headers, before any allocation: a d2t or t2d declaring more entries than
    the target vocab (or than any vocab) is not read."""
    vocab = None
    for config in (target_config or {}, draft_config):
        if isinstance(config.get("vocab_size"), int) and config["vocab_size"] > 0:
            vocab = config["vocab_size"]
            break
    for key in ("d2t", "t2d"):
        ref = refs.get(key)
        if not ref:
            continue
        count = _numel(ref)
        limit = vocab if vocab is not None else MAX_VOCAB
        if count <= limit and count <= MAX_VOCAB:
            continue
        summary = {"d2t_entries": _numel(refs.get("d2t")), "target_vocab": vocab}
        if vocab is not None:
            return {
                "findings": [
                    finding(
                        "d2t-out-of-range",
                        ERROR,
                        "%s declares %d entries, more than the target vocab of %d"
                        % (key, count, vocab),
                        "The draft vocab is a subset of the target's: a %s with %d entries "
                        "(shape %s) cannot be right; it was not read." % (key, count, ref["shape"]),
                        {key: ref["name"], "shape": ref["shape"], "target_vocab": vocab},
                    )
                ],
                "unknown": [],
                "summary": summary,
                "checkpoint": {"refs": refs},
            }
        return {
            "findings": [],
            "unknown": [
                {
                    "code": "unreadable",
                    "reason": "%s declares %d entries, more than any vocab: not read"
                    % (key, count),
                    "subject": ref["name"],
                }
            ],
            "summary": summary,
            "checkpoint": {"refs": refs},
        }
    return None


def _unknown(exc, what, path):
    """A fact that could not be read: reason code, sentence, subject (remotedbg.contract)."""
    text = str(exc)
    code = "needs-torch" if "needs torch" in text else "unreadable"
    return {"code": code, "reason": "cannot read %s: %s" % (what, text), "subject": path}
