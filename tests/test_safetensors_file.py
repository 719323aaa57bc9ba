"""The stdlib safetensors reader and checkpoint discovery (remotedbg.agent.safetensors_file,
remotedbg.agent.checkpoint), checked against files written by the real safetensors library."""

from __future__ import annotations

import json
import math
import os
import struct
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from remotedbg.agent import checkpoint as ckpt_mod
from remotedbg.agent.checkpoint import (
    CheckpointError,
    list_tensors,
    open_checkpoint,
    tensor_ranges,
    tensor_stats,
)
from remotedbg.agent.safetensors_file import (
    HEADER_CAP,
    decode,
    f8_table,
    read_header,
    read_tensor,
)
from tests.checkpoints import write_eagle3_checkpoint, write_malformed_corpus
from tests.unprivileged import call_unprivileged, shared_dir

ALL_NUMPY = {
    "b": np.array([True, False, True]),
    "u8": np.arange(7, dtype=np.uint8),
    "i8": np.array([-128, 0, 127], dtype=np.int8),
    "i16": np.array([-300, 2, 30000], dtype=np.int16),
    "u16": np.array([0, 65535], dtype=np.uint16),
    "i32": np.array([[-(2**31), 1], [2, 2**31 - 1]], dtype=np.int32),
    "u32": np.array([0, 2**32 - 1], dtype=np.uint32),
    "i64": np.array([-(2**63), 0, 2**63 - 1], dtype=np.int64),
    "u64": np.array([0, 2**64 - 1], dtype=np.uint64),
    "f16": np.array([0.5, -2.0, 65504.0, np.inf], dtype=np.float16),
    "f32": np.array([[1.5, -0.25, np.nan]], dtype=np.float32),
    "f64": np.array([math.pi, -1e300], dtype=np.float64),
    "empty": np.zeros((0, 4), dtype=np.float32),
}


def hide_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)


def same(a, b) -> bool:
    a, b = list(a), list(b)
    return len(a) == len(b) and all(
        (isinstance(x, float) and math.isnan(x) and math.isnan(y)) or x == y
        for x, y in zip(a, b, strict=True)
    )


@pytest.fixture
def all_dtypes(tmp_path: Path) -> Path:
    path = tmp_path / "all.safetensors"
    save_file(ALL_NUMPY, str(path), metadata={"format": "pt", "note": "x"})
    return path


def test_header_matches_the_library(all_dtypes: Path) -> None:
    header = read_header(str(all_dtypes))
    assert header["metadata"] == {"format": "pt", "note": "x"}
    with safe_open(str(all_dtypes), "np") as lib:
        assert set(lib.keys()) == set(header["tensors"])
        for name in lib.keys():
            assert header["tensors"][name]["shape"] == list(lib.get_slice(name).get_shape())
    raw = all_dtypes.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    assert header["data_start"] == 8 + length
    for name, info in header["tensors"].items():
        assert info["offset"] == header["data_start"] + info["data_offsets"][0]
        assert raw[info["offset"] : info["offset"] + info["bytes"]] == ALL_NUMPY[name].tobytes()


@pytest.mark.parametrize("name", sorted(ALL_NUMPY))
def test_decode_numpy_and_stdlib_agree(
    all_dtypes: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = ALL_NUMPY[name]
    got = read_tensor(str(all_dtypes), name)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    hide_numpy(monkeypatch)
    flat = read_tensor(str(all_dtypes), name)
    assert not hasattr(flat, "shape")
    assert same(flat, expected.reshape(-1).tolist())


def test_bf16_and_f8_decoding(tmp_path: Path) -> None:
    values = np.array([1.0, -2.5, 3.140625, 0.0], dtype=np.float32)
    bf16 = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    assert decode(bf16, "BF16", [4]).tolist() == values.tolist()
    assert decode(bf16, "BF16", [4], use_numpy=False) == values.tolist()
    e4m3 = f8_table("F8_E4M3")
    assert e4m3[0x38] == 1.0 and e4m3[0x7E] == 448.0 and math.isnan(e4m3[0x7F])
    assert e4m3[0x01] == 2.0**-9 and e4m3[0xB8] == -1.0
    e5m2 = f8_table("F8_E5M2")
    assert e5m2[0x3C] == 1.0 and e5m2[0x7B] == 57344.0 and e5m2[0x7C] == math.inf
    assert f8_table("F8_E8M0")[127] == 1.0
    raw = bytes([0x38, 0xB8, 0x7E])
    assert decode(raw, "F8_E4M3", [3]).tolist() == [1.0, -1.0, 448.0]
    assert decode(raw, "F8_E4M3", [3], use_numpy=False) == [1.0, -1.0, 448.0]
    # a hand-written file with F8 and packed F4 entries parses (F4: 2 per byte)
    header = {
        "a": {"dtype": "F8_E4M3", "shape": [3], "data_offsets": [0, 3]},
        "b": {"dtype": "F4", "shape": [2, 3], "data_offsets": [3, 6]},
    }
    body = json.dumps(header).encode()
    path = tmp_path / "f8.safetensors"
    path.write_bytes(struct.pack("<Q", len(body)) + body + raw + bytes(3))
    parsed = read_header(str(path))
    assert parsed["tensors"]["b"]["bytes"] == 3
    assert read_tensor(str(path), "a").tolist() == [1.0, -1.0, 448.0]


def test_malformed_corpus_raises_checkpoint_error(tmp_path: Path) -> None:
    corpus = write_malformed_corpus(tmp_path)
    for name, path in corpus.items():
        with pytest.raises(CheckpointError) as info:
            read_header(str(path))
        message = str(info.value)
        assert str(path) in message, name
        assert "\n" not in message, name
        assert isinstance(info.value, ValueError)
        # the agent entry reports the same error (the boot prints "CheckpointError: ...")
        with pytest.raises(CheckpointError):
            list_tensors({"path": str(path)})


@pytest.mark.parametrize(
    "name, words",
    [
        ("huge-header", "exceeds"),
        ("truncated", "past the"),
        ("invalid-json", "not valid JSON"),
        ("bad-dtype", "unknown dtype"),
        ("overlapping", "overlap"),
        ("shape-bytes-mismatch", "needs 24 bytes"),
        ("offsets-past-end", "past the"),
        ("missing-dtype", "missing 'dtype'"),
    ],
)
def test_malformed_reasons(tmp_path: Path, name: str, words: str) -> None:
    path = write_malformed_corpus(tmp_path)[name]
    with pytest.raises(CheckpointError, match=words):
        read_header(str(path))


def test_huge_header_length_does_not_allocate(tmp_path: Path) -> None:
    path = tmp_path / "huge.safetensors"
    path.write_bytes(struct.pack("<Q", 2**60) + b"{}")
    big = tmp_path / "big-but-capped.safetensors"
    big.write_bytes(struct.pack("<Q", HEADER_CAP + 1) + b"{}")
    tracemalloc.start()
    try:
        for p in (path, big):
            with pytest.raises(CheckpointError):
                read_header(str(p))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


def test_zero_length_tensors_and_metadata_only(tmp_path: Path) -> None:
    header = {
        "__metadata__": {"k": "v"},
        "z": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},
        "a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
        "y": {"dtype": "I64", "shape": [3, 0], "data_offsets": [2, 2]},
    }
    body = json.dumps(header).encode()
    path = tmp_path / "z.safetensors"
    path.write_bytes(struct.pack("<Q", len(body)) + body + b"\x01\x02")
    parsed = read_header(str(path))
    assert set(parsed["tensors"]) == {"z", "a", "y"}
    assert read_tensor(str(path), "a").tolist() == [1, 2]


# ------------------------------------------------------------------------------ checkpoint layer


def test_list_tensors_single_file_dir_and_config(tmp_path: Path) -> None:
    root = write_eagle3_checkpoint(tmp_path / "d", draft_vocab=300, target_vocab=2000, hidden=8)
    for path in (root, root / "model.safetensors", root / "config.json"):
        out = list_tensors({"path": str(path)})
        assert out["path"] == str(root)
        assert out["files"] == [str(root / "model.safetensors")]
        assert out["config"]["draft_vocab_size"] == 300
        by_name = {t["name"]: t for t in out["tensors"]}
        assert by_name["d2t"]["dtype"] == "I64" and by_name["d2t"]["shape"] == [300]
        assert by_name["lm_head.weight"]["shape"] == [300, 8]
        assert set(by_name["t2d"]) == {"name", "dtype", "shape", "bytes", "file", "offset"}
        json.dumps(out)


def test_sharded_checkpoint_and_missing_shard(tmp_path: Path) -> None:
    root = write_eagle3_checkpoint(
        tmp_path / "s", draft_vocab=300, target_vocab=2000, hidden=8, sharded=True
    )
    out = list_tensors({"path": str(root)})
    assert len(out["files"]) == 2 and out["index"].endswith("model.safetensors.index.json")
    files = {t["name"]: t["file"] for t in out["tensors"]}
    index = json.loads((root / "model.safetensors.index.json").read_text())
    assert {n: os.path.basename(f) for n, f in files.items()} == index["weight_map"]
    assert "problems" not in out
    os.remove(root / "model-00002-of-00002.safetensors")
    with pytest.raises(CheckpointError, match="shard listed in .* is missing"):
        list_tensors({"path": str(root)})


def test_hf_cache_layout(tmp_path: Path) -> None:
    repo = tmp_path / "hub" / "models--org--draft"
    blobs = repo / "blobs"
    src = write_eagle3_checkpoint(tmp_path / "src", draft_vocab=300, target_vocab=2000, hidden=8)
    blobs.mkdir(parents=True)
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    for name in ("model.safetensors", "config.json"):
        (blobs / name).write_bytes((src / name).read_bytes())
        (snap / name).symlink_to(Path("../../blobs") / name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123\n")
    for path in (repo, snap):
        out = list_tensors({"path": str(path)})
        assert out["path"] == str(snap)
        assert out["config"]["draft_vocab_size"] == 300
    (repo / "refs" / "main").unlink()
    assert list_tensors({"path": str(repo)})["path"] == str(snap)  # the only snapshot
    (repo / "snapshots" / "def456").mkdir()
    with pytest.raises(CheckpointError, match="pass the snapshots/<hash> folder"):
        list_tensors({"path": str(repo)})
    (repo / "refs" / "main").write_text("nope")
    with pytest.raises(CheckpointError, match="refs/main names snapshot 'nope'"):
        list_tensors({"path": str(repo)})


def test_missing_empty_and_unreadable(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no such file or directory"):
        list_tensors({"path": str(tmp_path / "nope")})
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="no weights in this directory"):
        list_tensors({"path": str(tmp_path / "empty")})
    with pytest.raises(CheckpointError, match="no checkpoint path"):
        list_tensors({})


def test_permission_denied() -> None:
    with shared_dir() as tmp:
        root = write_eagle3_checkpoint(tmp / "p", draft_vocab=100, target_vocab=1000, hidden=8)
        weights = root / "model.safetensors"
        weights.chmod(0)
        with pytest.raises(CheckpointError, match="permission denied"):
            call_unprivileged(list_tensors, {"path": str(root)})
        weights.chmod(0o644)
        root.chmod(0)
        with pytest.raises(CheckpointError, match="permission denied"):
            call_unprivileged(list_tensors, {"path": str(root)})


def test_torch_file_needs_torch(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    try:
        import torch  # noqa: F401

        pytest.skip("torch is installed here")
    except ImportError:
        pass
    (tmp_path / "pytorch_model.bin").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(CheckpointError, match="needs torch"):
        list_tensors({"path": str(tmp_path)})
    token_map = tmp_path / "map.pt"
    token_map.write_bytes(b"x")
    with pytest.raises(CheckpointError, match=r"\.pt file needs torch"):
        list_tensors({"path": str(token_map)})


def test_prefixed_names_match_by_last_component(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    save_file(
        {
            "model.d2t": np.zeros(4, dtype=np.int64),
            "model.lm_head.weight": np.zeros((4, 2), dtype=np.float32),
            "other.model.d2t": np.ones(4, dtype=np.int64),
        },
        str(path),
    )
    ckpt = open_checkpoint(str(tmp_path))
    assert ckpt.find("d2t") == "model.d2t"
    assert ckpt.find("lm_head.weight") == "model.lm_head.weight"
    assert ckpt.find("weight") == "model.lm_head.weight"
    assert ckpt.find("t2d") is None
    with pytest.raises(CheckpointError, match="no tensor named 't2d'"):
        tensor_stats({"path": str(tmp_path), "name": "t2d"})


def test_tensor_stats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.int64)
    floats = np.array([[0.5, np.nan], [np.inf, -1.5]], dtype=np.float32)
    save_file(
        {"ints": values, "floats": floats, "mask": values > 3}, str(tmp_path / "a.safetensors")
    )
    ints = tensor_stats({"path": str(tmp_path), "name": "ints", "head": 3})
    assert ints["head"] == [3, 1, 4] and ints["min"] == 1 and ints["max"] == 9
    assert ints["unique"] == 7 and ints["mean"] == pytest.approx(values.mean())
    fl = tensor_stats({"path": str(tmp_path), "name": "floats"})
    assert fl["nan"] == 1 and fl["inf"] == 1 and fl["min"] == -1.5 and fl["max"] == 0.5
    assert fl["head"] == [0.5, "nan", "inf", -1.5]
    mask = tensor_stats({"path": str(tmp_path), "name": "mask"})
    assert mask["true"] == 4 and mask["unique"] == 2
    json.dumps([ints, fl, mask], allow_nan=False)
    hide_numpy(monkeypatch)
    for name, head, expected in (("ints", 3, ints), ("floats", 10, fl), ("mask", 10, mask)):
        got = tensor_stats({"path": str(tmp_path), "name": name, "head": head})
        assert got.pop("numpy") is False
        want = dict(expected)
        want.pop("numpy")
        assert got.pop("mean") == pytest.approx(want.pop("mean"))
        assert got == want


def test_tensor_stats_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ckpt_mod, "STATS_CHUNK_BYTES", 64)
    values = np.arange(1000, dtype=np.int32) - 500
    save_file({"v": values}, str(tmp_path / "a.safetensors"))
    out = tensor_stats({"path": str(tmp_path), "name": "v"})
    assert (out["min"], out["max"], out["unique"]) == (-500, 499, 1000)
    assert out["mean"] == pytest.approx(values.mean())


def test_tensor_ranges_rebuild_a_file(tmp_path: Path) -> None:
    root = write_eagle3_checkpoint(
        tmp_path / "r", draft_vocab=300, target_vocab=2000, hidden=8, sharded=True
    )
    out = tensor_ranges({"path": str(root), "names": ["d2t", "t2d", "lm_head.weight"]})
    assert {f["file"] for f in out["files"]} == {t["file"] for t in out["tensors"]}
    tensors, offset = {}, 0
    data = b""
    for t in out["tensors"]:
        with open(t["file"], "rb") as fh:
            fh.seek(t["offset"])
            chunk = fh.read(t["length"])
        tensors[t["name"]] = {
            "dtype": t["dtype"],
            "shape": t["shape"],
            "data_offsets": [offset, offset + len(chunk)],
        }
        data += chunk
        offset += len(chunk)
    for f in out["files"]:
        with open(f["file"], "rb") as fh:
            head = fh.read(f["header_range"][1])
        (length,) = struct.unpack("<Q", head[:8])
        assert length == f["header_length"] and json.loads(head[8:])
    body = json.dumps(tensors).encode()
    rebuilt = tmp_path / "rebuilt.safetensors"
    rebuilt.write_bytes(struct.pack("<Q", len(body)) + body + data)
    loaded = load_file(str(rebuilt))
    ckpt = open_checkpoint(str(root))
    for name in ("d2t", "t2d", "lm_head.weight"):
        np.testing.assert_array_equal(loaded[name], ckpt.read(name))


def test_permission_denied_simulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same paths as test_permission_denied, reachable as root by faking the OS answer."""
    from remotedbg.agent import safetensors_file

    root = write_eagle3_checkpoint(tmp_path / "p", draft_vocab=100, target_vocab=1000, hidden=8)

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(safetensors_file, "open", denied, raising=False)
    with pytest.raises(CheckpointError, match="model.safetensors: permission denied"):
        list_tensors({"path": str(root)})
    monkeypatch.undo()
    monkeypatch.setattr(ckpt_mod.os, "listdir", denied)
    with pytest.raises(CheckpointError, match="permission denied .cannot list"):
        list_tensors({"path": str(root)})


def test_a_written_checkpoint_gets_the_mode_a_plain_open_would(tmp_path):
    """Written through a private temp file, yet not left 0600: a server running as another
    user (a container's root, a service account) must be able to read what was written."""
    import os

    from remotedbg.checkpoints.safetensors_writer import TensorSlot, write_safetensors

    old = os.umask(0o022)
    try:
        out = tmp_path / "model.safetensors"
        slot = TensorSlot("d2t", "I64", [2], 16)
        write_safetensors(out, [slot], lambda s, handle: handle.write(b"\0" * s.length))
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644
