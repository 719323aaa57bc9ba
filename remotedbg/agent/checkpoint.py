"""Checkpoints on the remote: find the weight files, list tensors, read a few tensors in place.

A checkpoint is a directory (single file or sharded through `*.index.json` `weight_map`), a single
weight file, or a Hugging Face cache folder (`models--org--name`, resolved through `refs/main`,
or one of its `snapshots/<hash>` folders). Safetensors files are read without the safetensors
library and only the byte ranges of the tensors asked for. `pytorch_model.bin` / `.pt` / `.pth`
need torch on the remote (`torch.load(map_location="cpu", weights_only=True)`).

Entry functions (one dict in, JSON out): list_tensors, tensor_stats, tensor_ranges. Problems
raise CheckpointError with a one-line message naming the path.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys

from remotedbg.agent.safetensors_file import (
    DTYPE_BITS,
    PACKED_DTYPES,
    CheckpointError,
    MissingInput,
    _fail,
    _missing,
    decode,
    did_you_mean,
    dtype_kind,
    numpy_or_none,
    read_bytes,
    read_header,
    with_site_packages,
)

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "MissingInput",
    "open_checkpoint",
    "resolve_checkpoint_dir",
    "load_json_file",
    "list_tensors",
    "tensor_stats",
    "tensor_ranges",
]

INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
TORCH_SUFFIXES = (".bin", ".pt", ".pth")
WRAPPER_KEYS = ("state_dict", "model", "module", "model_state_dict")
STATS_CHUNK_BYTES = 16 * 1024 * 1024
UNIQUE_LIMIT = 16 * 1024 * 1024  # elements; unique counts are skipped past this
STDLIB_STATS_LIMIT = 16 * 1024 * 1024  # elements; without numpy, stats are skipped past this
CONFIG_CAP = 16 * 1024 * 1024

_TORCH_DTYPES = {
    "torch.bool": "BOOL",
    "torch.uint8": "U8",
    "torch.int8": "I8",
    "torch.int16": "I16",
    "torch.uint16": "U16",
    "torch.int32": "I32",
    "torch.uint32": "U32",
    "torch.int64": "I64",
    "torch.uint64": "U64",
    "torch.float16": "F16",
    "torch.bfloat16": "BF16",
    "torch.float32": "F32",
    "torch.float64": "F64",
    "torch.complex64": "C64",
    "torch.float8_e4m3fn": "F8_E4M3",
    "torch.float8_e5m2": "F8_E5M2",
    "torch.float8_e4m3fnuz": "F8_E4M3FNUZ",
    "torch.float8_e5m2fnuz": "F8_E5M2FNUZ",
    "torch.float8_e8m0fnu": "F8_E8M0",
}


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except PermissionError:
        _fail(path, "permission denied (cannot list the directory)")
    except OSError as exc:
        _fail(path, "cannot list the directory: %s" % (exc.strerror or exc,))


def load_json_file(path, what="JSON file", cap=CONFIG_CAP):
    """Parse a JSON file of at most `cap` bytes; CheckpointError with a one-line reason else."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(cap + 1)
    except FileNotFoundError:
        _fail(path, "no such file")
    except PermissionError:
        _fail(path, "permission denied (cannot read the %s)" % what)
    except OSError as exc:
        _fail(path, "cannot read the %s: %s" % (what, exc.strerror or exc))
    if len(raw) > cap:
        _fail(path, "%s is larger than %d bytes" % (what, cap))
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        _fail(path, "%s is not valid JSON: %s" % (what, str(exc).splitlines()[0]))


def _hub_cached(repo_id):
    """A Hugging Face repo id (`org/name`, as `vllm serve` and a speculators verifier name
    models) as the hub's cache holds it: $HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub;
    None when it is not there or not such a name."""
    if not re.match(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$", repo_id or ""):
        return None
    hf_home = os.environ.get("HF_HOME") or os.path.expanduser("~/.cache/huggingface")
    folder = "models--" + repo_id.replace("/", "--")
    for cache in (os.environ.get("HF_HUB_CACHE"), os.path.join(hf_home, "hub")):
        if cache and os.path.isdir(os.path.join(cache, folder)):
            return os.path.join(cache, folder)
    return None


def resolve_checkpoint_dir(path):
    """Expand ~, check existence, and resolve a Hugging Face cache `models--*` folder to the
    snapshot `refs/main` names (or the only snapshot); a repo id no local path has is looked up
    in the hub's cache. Returns an absolute path."""
    cached = None if os.path.lexists(os.path.expanduser(str(path))) else _hub_cached(str(path))
    path = cached or os.path.abspath(os.path.expanduser(str(path)))
    if not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent and os.path.isdir(parent) and not os.access(parent, os.X_OK):
            _fail(path, "permission denied (cannot search %s)" % parent)
        _missing(path, "no such file or directory")
    if not os.path.exists(path):
        _fail(path, "dangling symlink (target %s is missing)" % os.path.realpath(path))
    if not os.path.isdir(path):
        return path
    snapshots = os.path.join(path, "snapshots")
    if os.path.basename(path).startswith("models--") or (
        os.path.isdir(snapshots) and os.path.isdir(os.path.join(path, "refs"))
    ):
        if not os.path.isdir(snapshots):
            _fail(path, "Hugging Face cache folder without snapshots/ (download incomplete?)")
        ref = os.path.join(path, "refs", "main")
        if os.path.isfile(ref):
            try:
                with open(ref) as fh:
                    commit = fh.read().strip()
            except OSError as exc:
                _fail(ref, "cannot read: %s" % (exc.strerror or exc,))
            target = os.path.join(snapshots, commit)
            if not commit or not os.path.isdir(target):
                _fail(path, "refs/main names snapshot %r which is not in snapshots/" % commit)
            return target
        names = [n for n in _listdir(snapshots) if os.path.isdir(os.path.join(snapshots, n))]
        if len(names) == 1:
            return os.path.join(snapshots, names[0])
        _fail(
            path,
            "no refs/main and %d snapshots (%s); pass the snapshots/<hash> folder"
            % (len(names), ", ".join(names[:5]) or "none"),
        )
    return path


def _weight_files(root):
    """(files, index_map or None, index path or None) for a checkpoint directory."""
    names = _listdir(root)
    for index_name in INDEX_FILES:
        if index_name in names:
            index_path = os.path.join(root, index_name)
            index = load_json_file(index_path, "index file")
            weight_map = index.get("weight_map") if isinstance(index, dict) else None
            if not isinstance(weight_map, dict) or not weight_map:
                _fail(index_path, "no weight_map object in the index")
            files = []
            for shard in weight_map.values():
                if not isinstance(shard, str):
                    _fail(index_path, "weight_map value %r is not a file name" % (shard,))
                if shard not in files:
                    files.append(shard)
            paths = []
            real_root = os.path.realpath(root)
            for shard in sorted(files):
                full = os.path.join(root, shard)
                inside = os.path.realpath(full)
                if os.path.isabs(shard) or not inside.startswith(real_root + os.sep):
                    # an index is data from the box: it names files in this checkpoint only
                    _fail(index_path, "weight_map names %r, outside the checkpoint" % (shard,))
                if not os.path.exists(full):
                    _fail(full, "shard listed in %s is missing" % index_name)
                if not os.path.isfile(full):
                    _fail(full, "shard listed in %s is not a regular file" % index_name)
                paths.append(full)
            return paths, weight_map, index_path
    found = [n for n in names if n.endswith(".safetensors")]
    if not found:
        found = [n for n in names if n.endswith(TORCH_SUFFIXES)]
    found = [n for n in found if os.path.isfile(os.path.join(root, n))]
    if not found:
        _fail(
            root,
            "no weights in this directory (looked for *.safetensors, %s, *.bin, *.pt, *.pth)"
            % ", ".join(INDEX_FILES),
        )
    return [os.path.join(root, n) for n in found], None, None


def _flatten_state(obj, prefix, out, skipped):
    if _is_torch_tensor(obj):
        out[prefix] = obj
    elif isinstance(obj, dict):
        keys = list(obj.keys())
        if (
            not prefix
            and len(keys) == 1
            and keys[0] in WRAPPER_KEYS
            and isinstance(obj[keys[0]], dict)
        ):
            return _flatten_state(obj[keys[0]], "", out, skipped)
        for key in keys:
            _flatten_state(obj[key], "%s.%s" % (prefix, key) if prefix else str(key), out, skipped)
    elif isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            _flatten_state(item, "%s.%d" % (prefix, i) if prefix else str(i), out, skipped)
    else:
        skipped.append(prefix)


def _is_torch_tensor(obj):
    return (
        type(obj).__module__.startswith("torch") and hasattr(obj, "dtype") and hasattr(obj, "shape")
    )


def _load_torch(path):
    ext = os.path.splitext(path)[1] or os.path.basename(path)
    with_site_packages()
    try:
        import torch
    except ImportError:
        _fail(
            path,
            "reading a %s file needs torch, which %s on this machine cannot import "
            "(install torch there, or convert the file to safetensors)" % (ext, sys.executable),
        )
    if not os.access(path, os.R_OK):
        _fail(path, "permission denied (cannot open for reading)")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except TypeError:
        _fail(path, "this torch is too old for torch.load(weights_only=True); refusing to unpickle")
    except Exception as exc:
        _fail(path, "torch.load failed: %s: %s" % (type(exc).__name__, _one_line(exc)))
    out, skipped = {}, []
    stem = os.path.splitext(os.path.basename(path))[0]
    _flatten_state(obj, "" if isinstance(obj, (dict, list, tuple)) else stem, out, skipped)
    if "" in out:
        out[stem] = out.pop("")
    return out


def _one_line(exc):
    text = str(exc).strip().splitlines()
    return text[0] if text else "(no message)"


class Checkpoint:
    """Weight files of one checkpoint and the tensors in them (headers only until read)."""

    def __init__(self, path):
        self.given = str(path)
        resolved = resolve_checkpoint_dir(path)
        self.index_path = None
        self.problems = []
        weight_map = None
        if os.path.isdir(resolved):
            self.root = resolved
            self.files, weight_map, self.index_path = _weight_files(resolved)
        else:
            self.root = os.path.dirname(resolved)
            base = os.path.basename(resolved)
            if base in INDEX_FILES:
                self.files, weight_map, self.index_path = _weight_files(self.root)
            elif base == "config.json":
                self.files, weight_map, self.index_path = _weight_files(self.root)
            else:
                self.files = [resolved]
        self.headers = {}
        self.torch_states = {}
        self.tensors = {}
        for file in self.files:
            self._scan(file)
        if weight_map:
            for name, shard in weight_map.items():
                info = self.tensors.get(name)
                if info is None:
                    self.problems.append(
                        "index lists %r in %s but that file lacks it" % (name, shard)
                    )
                elif os.path.basename(info["file"]) != os.path.basename(shard):
                    self.problems.append(
                        "index puts %r in %s, found in %s" % (name, shard, info["file"])
                    )
        self.config, self.config_error = None, None
        config_path = os.path.join(self.root, "config.json")
        if os.path.exists(config_path):
            try:
                config = load_json_file(config_path, "config.json")
                if isinstance(config, dict):
                    self.config = config
                else:
                    self.config_error = "%s: not a JSON object" % config_path
            except CheckpointError as exc:
                self.config_error = str(exc)

    def _scan(self, file):
        if file.endswith(TORCH_SUFFIXES):
            state = _load_torch(file)
            self.torch_states[file] = state
            for name, tensor in state.items():
                dtype = _TORCH_DTYPES.get(str(tensor.dtype), str(tensor.dtype))
                self._add(
                    name,
                    {
                        "name": name,
                        "dtype": dtype,
                        "shape": [int(d) for d in tensor.shape],
                        "bytes": int(tensor.numel()) * int(tensor.element_size()),
                        "file": file,
                        "offset": None,
                    },
                )
            return
        header = read_header(file)
        self.headers[file] = header
        for name, entry in header["tensors"].items():
            self._add(
                name,
                {
                    "name": name,
                    "dtype": entry["dtype"],
                    "shape": entry["shape"],
                    "bytes": entry["bytes"],
                    "file": file,
                    "offset": entry["offset"],
                },
            )

    def _add(self, name, info):
        if name in self.tensors:
            self.problems.append(
                "tensor %r is in both %s and %s" % (name, self.tensors[name]["file"], info["file"])
            )
            return
        self.tensors[name] = info

    def find(self, name):
        """Full tensor name for `name`: exact, else the shortest name ending in "." + name."""
        if name in self.tensors:
            return name
        suffix = "." + name
        matches = [n for n in self.tensors if n.endswith(suffix)]
        if not matches:
            return None
        return min(matches, key=lambda n: (len(n), n))

    def info(self, name):
        full = self.find(name)
        if full is None:
            _missing(
                self.root,
                "no tensor named %r among %d tensors%s"
                % (name, len(self.tensors), did_you_mean(name, self.tensors)),
            )
        return self.tensors[full]

    def read(self, name, use_numpy=None):
        """Values of one tensor (numpy ndarray, or a flat sequence without numpy)."""
        info = self.info(name)
        if info["offset"] is None:
            return _torch_values(self.torch_states[info["file"]][info["name"]], use_numpy)
        raw = read_bytes(info["file"], info["offset"], info["bytes"])
        return decode(raw, info["dtype"], info["shape"], use_numpy=use_numpy)

    def describe(self):
        out = {
            "path": self.root,
            "real_path": os.path.realpath(self.root),
            "given": self.given,
            "files": list(self.files),
            "config": self.config,
        }
        if self.index_path:
            out["index"] = self.index_path
        if self.config_error:
            out["config_error"] = self.config_error
        if self.problems:
            out["problems"] = self.problems[:20]
        return out


def _torch_values(tensor, use_numpy=None):
    tensor = tensor.detach().cpu()
    if str(tensor.dtype) not in ("torch.bool",) and (
        tensor.is_floating_point() and str(tensor.dtype) not in ("torch.float32", "torch.float64")
    ):
        tensor = tensor.float()
    np = numpy_or_none() if use_numpy is not False else None
    if np is not None:
        try:
            return tensor.numpy()
        except Exception:  # torch built without numpy support
            return np.array(tensor.tolist())
    return tensor.reshape(-1).tolist()


def open_checkpoint(path):
    if not path:
        raise CheckpointError("no checkpoint path given")
    return Checkpoint(path)


# ----------------------------------------------------------------------------- entry functions


def read_model_config(target_path):
    """(config dict, directory holding it) for a model dir, a Hugging Face cache folder
    (`models--org--name` or a snapshot) or a config.json: the one reader of a model's config."""
    resolved = resolve_checkpoint_dir(target_path)
    if os.path.isdir(resolved):
        config_path = os.path.join(resolved, "config.json")
        if not os.path.exists(config_path):
            raise CheckpointError("%s: no config.json in the target model directory" % resolved)
    else:
        config_path = resolved
    config = load_json_file(config_path, "target config")
    if not isinstance(config, dict):
        raise CheckpointError("%s: target config is not a JSON object" % config_path)
    return config, os.path.dirname(config_path)


def list_tensors(args):
    """{"path"} -> {"path", "files", "tensors": [{"name","dtype","shape","bytes","file","offset"}],
    "config"}."""
    ckpt = open_checkpoint(args.get("path"))
    out = ckpt.describe()
    out["tensors"] = [dict(info) for info in ckpt.tensors.values()]
    return out


def tensor_ranges(args):
    """{"path", "names"} -> where each tensor's bytes are, plus each file's header range and
    __metadata__, so the local side can pull exactly those bytes and write a new file."""
    ckpt = open_checkpoint(args.get("path"))
    names = args.get("names") or []
    if isinstance(names, str):
        names = [names]
    tensors, files = [], {}
    for name in names:
        info = ckpt.info(name)
        if info["offset"] is None:
            _fail(info["file"], "byte ranges exist only for safetensors files, not %r" % name)
        header = ckpt.headers[info["file"]]
        entry = header["tensors"][info["name"]]
        tensors.append(
            {
                "name": info["name"],
                "requested": name,
                "file": info["file"],
                "offset": info["offset"],
                "length": info["bytes"],
                "dtype": info["dtype"],
                "shape": info["shape"],
                "data_offsets": entry["data_offsets"],
            }
        )
        if info["file"] not in files:
            files[info["file"]] = {
                "file": info["file"],
                "file_size": header["file_size"],
                "header_offset": 0,
                "header_length": header["header_length"],
                "header_range": [0, header["data_start"]],
                "data_start": header["data_start"],
                "metadata": header["metadata"],
            }
    return {"path": ckpt.root, "tensors": tensors, "files": list(files.values())}


def tensor_stats(args):
    """{"path", "name", "head": 10} -> shape, dtype, min/max/mean over finite values, nan/inf
    counts, unique count (integer/bool), first values. Reads the tensor in 16 MiB chunks."""
    ckpt = open_checkpoint(args.get("path"))
    info = ckpt.info(args.get("name") or "")
    head = int(args.get("head", 10) or 0)
    np = numpy_or_none()
    numel = 1
    for dim in info["shape"]:
        numel *= dim
    out = {
        "name": info["name"],
        "file": info["file"],
        "offset": info["offset"],
        "dtype": info["dtype"],
        "shape": info["shape"],
        "numel": numel,
        "bytes": info["bytes"],
        "kind": dtype_kind(info["dtype"]),
        "numpy": np is not None,
    }
    kind = out["kind"]
    if info["dtype"] in PACKED_DTYPES or info["dtype"] == "C64" or kind == "other":
        out["note"] = "no statistics for %s tensors" % info["dtype"]
        out["head"] = []
        return out
    acc = _Stats(kind, numel, np)
    for chunk in _chunks(ckpt, info):
        acc.add(chunk, head)
    out.update(acc.result())
    return out


def _chunks(ckpt, info):
    if info["offset"] is None:
        values = ckpt.read(info["name"])
        yield values.reshape(-1) if hasattr(values, "reshape") else values
        return
    width = DTYPE_BITS[info["dtype"]] // 8
    step = max(width, STATS_CHUNK_BYTES - STATS_CHUNK_BYTES % width)
    done = 0
    while done < info["bytes"]:
        size = min(step, info["bytes"] - done)
        raw = read_bytes(info["file"], info["offset"] + done, size)
        values = decode(raw, info["dtype"], [size // width])
        yield values
        done += size


def _json_number(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


class _Stats:
    def __init__(self, kind, numel, np):
        self.kind, self.np = kind, np
        self.count = 0
        self.finite = 0
        self.nan = 0
        self.inf = 0
        self.lo = self.hi = None
        self.total = 0
        self.head = []
        self.note = None
        self.want_unique = kind in ("int", "bool") and numel <= UNIQUE_LIMIT
        self.uniques = [] if np is not None else set()
        if np is None and numel > STDLIB_STATS_LIMIT:
            self.note = "numpy missing: statistics skipped for %d elements (head only)" % numel
            self.want_unique = False

    def add(self, chunk, head):
        np = self.np
        if len(self.head) < head:
            part = chunk[: head - len(self.head)]
            self.head.extend(_json_number(v) for v in (part.tolist() if np is not None else part))
        self.count += len(chunk)
        if self.note:
            return
        if np is not None:
            self._add_numpy(np, chunk)
        else:
            self._add_stdlib(chunk)

    def _merge(self, lo, hi):
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)

    def _add_numpy(self, np, chunk):
        if self.kind == "float":
            finite_mask = np.isfinite(chunk)
            self.nan += int(np.isnan(chunk).sum())
            self.inf += int(len(chunk) - finite_mask.sum()) - int(np.isnan(chunk).sum())
            chunk = chunk[finite_mask]
            if len(chunk):
                self._merge(float(chunk.min()), float(chunk.max()))
                self.total += float(chunk.sum(dtype=np.float64))
        elif len(chunk):
            as_int = chunk.astype(np.int64) if self.kind == "bool" else chunk
            self._merge(int(as_int.min()), int(as_int.max()))
            self.total += int(as_int.sum(dtype=np.uint64 if as_int.dtype.kind == "u" else np.int64))
            if self.want_unique:
                self.uniques.append(np.unique(as_int))
        self.finite += len(chunk)

    def _add_stdlib(self, chunk):
        if self.kind == "float":
            finite = [v for v in chunk if math.isfinite(v)]
            self.nan += sum(1 for v in chunk if v != v)
            self.inf += len(chunk) - len(finite) - sum(1 for v in chunk if v != v)
            chunk = finite
            if chunk:
                self._merge(min(chunk), max(chunk))
                self.total += math.fsum(chunk)
        elif chunk:
            values = [int(v) for v in chunk] if self.kind == "bool" else chunk
            self._merge(int(min(values)), int(max(values)))
            self.total += sum(values)
            if self.want_unique:
                self.uniques.update(values)
        self.finite += len(chunk)

    def result(self):
        out = {"head": self.head}
        if self.note:
            out["note"] = self.note
            return out
        out["min"] = self.lo
        out["max"] = self.hi
        out["mean"] = (self.total / self.finite) if self.finite else None
        if self.kind == "float":
            out["nan"] = self.nan
            out["inf"] = self.inf
        if self.kind in ("int", "bool"):
            if self.want_unique:
                if self.np is not None:
                    merged = (
                        self.np.unique(self.np.concatenate(self.uniques)) if self.uniques else []
                    )
                    out["unique"] = int(len(merged))
                else:
                    out["unique"] = len(self.uniques)
            else:
                out["unique"] = None
                out["unique_note"] = "more than %d elements: unique count skipped" % UNIQUE_LIMIT
        if self.kind == "bool":
            out["true"] = int(self.total)
        return out
