"""Read safetensors files without the safetensors library (runs on the remote's stock Python).

Layout: 8-byte little-endian header length N, N bytes of UTF-8 JSON (an object mapping tensor
names to {"dtype", "shape", "data_offsets": [begin, end]}, plus an optional "__metadata__"
object), then the data area; offsets are relative to the start of the data area.

The header is validated strictly and every failure raises `CheckpointError` with a one-line
reason naming the file. Memory stays bounded on malformed input: the header length is checked
against the file size and a cap before anything is read. Tensor data is read by byte range
(seek + read) only for the tensors asked for, and decoded to numpy when numpy is importable,
otherwise to a flat `array.array` / list (F16 and BF16 are decoded too; F8 kinds through a
256-entry table; the packed F4/F6 kinds are returned as raw bytes).
"""

from __future__ import annotations

import array
import json
import math
import os
import struct
import sys

HEADER_CAP = 100 * 1024 * 1024  # 100 MiB, the limit the reference implementation uses too
METADATA_KEY = "__metadata__"

# dtype -> bits per element (sub-byte kinds are packed; byte span = ceil-free bits * n / 8)
DTYPE_BITS = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "I16": 16,
    "U16": 16,
    "I32": 32,
    "U32": 32,
    "I64": 64,
    "U64": 64,
    "F16": 16,
    "BF16": 16,
    "F32": 32,
    "F64": 64,
    "C64": 64,
    "F8_E4M3": 8,
    "F8_E5M2": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "F8_E8M0": 8,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "F4": 4,
}

INTEGER_DTYPES = ("U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64")
FLOAT_DTYPES = (
    "F16",
    "BF16",
    "F32",
    "F64",
    "F8_E4M3",
    "F8_E5M2",
    "F8_E4M3FNUZ",
    "F8_E5M2FNUZ",
    "F8_E8M0",
)
PACKED_DTYPES = ("F4", "F6_E2M3", "F6_E3M2")

# stdlib decoding: dtype -> (array typecode wanted, itemsize)
_ARRAY_CODES = {
    "U8": "B",
    "I8": "b",
    "I16": "h",
    "U16": "H",
    "I32": "i",
    "U32": "I",
    "I64": "q",
    "U64": "Q",
    "F32": "f",
    "F64": "d",
}
_NUMPY_CODES = {
    "BOOL": "|b1",
    "U8": "|u1",
    "I8": "|i1",
    "I16": "<i2",
    "U16": "<u2",
    "I32": "<i4",
    "U32": "<u4",
    "I64": "<i8",
    "U64": "<u8",
    "F16": "<f2",
    "F32": "<f4",
    "F64": "<f8",
    "C64": "<c8",
}


class CheckpointError(ValueError):
    """A checkpoint (file, directory, header) that cannot be read; the message is one line."""


class MissingInput(CheckpointError):
    """The path or tensor the user named is not there (a typo, most often): the host side
    reports it like a glob that matched nothing, not like a failed check."""


def _fail(path, reason):
    raise CheckpointError("%s: %s" % (path, reason))


def _missing(path, reason):
    raise MissingInput("%s: %s" % (path, reason))


def did_you_mean(name, names):
    """'; did you mean a, b?' from the names closest to `name` (whole or last component)."""
    import difflib

    names = list(names)
    by_last = {}
    for full in names:
        by_last.setdefault(full.split(".")[-1], full)
    near = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    for last in difflib.get_close_matches(name.split(".")[-1], list(by_last), n=3, cutoff=0.6):
        if by_last[last] not in near:
            near.append(by_last[last])
    return "; did you mean %s?" % ", ".join(near[:3]) if near else ""


_site_added = []  # once site.main() has run in this process


def with_site_packages():
    """Make the interpreter's site-packages importable: the agent starts without `site`
    (`python3 -S`, remotedbg/session/agent_bundle.py), and numpy or torch live there. (Under
    -S a module may import `site` without its main() running: its being imported says nothing.)"""
    if sys.flags.no_site and not _site_added:
        _site_added.append(True)
        import site

        site.main()


def numpy_or_none():
    """numpy when importable (tests hide it by putting None in sys.modules)."""
    with_site_packages()
    try:
        import numpy

        return numpy
    except ImportError:
        return None


def dtype_kind(dtype):
    """'bool', 'int', 'float' or 'other' for a safetensors dtype name."""
    if dtype == "BOOL":
        return "bool"
    if dtype in INTEGER_DTYPES:
        return "int"
    if dtype in FLOAT_DTYPES:
        return "float"
    return "other"


def span_bytes(dtype, shape):
    """Bytes taken by a tensor of this dtype and shape, or None when the bit count is not whole."""
    count = 1
    for dim in shape:
        count *= dim
    bits = count * DTYPE_BITS[dtype]
    if bits % 8:
        return None
    return bits // 8


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _open(path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        _missing(path, "no such file")
    except PermissionError:
        _fail(path, "permission denied (cannot open for reading)")
    except IsADirectoryError:
        _fail(path, "is a directory, not a safetensors file")
    except OSError as exc:
        _fail(path, "cannot open: %s" % (exc.strerror or exc,))


def read_header(path):
    """Parse and validate the header of a safetensors file.

    Returns {"path", "file_size", "header_length", "data_start", "metadata", "tensors"} where
    "tensors" maps name -> {"dtype", "shape", "data_offsets", "offset" (absolute), "bytes"} in
    file order. Raises CheckpointError on anything malformed.
    """
    with _open(path) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            prefix = fh.read(8)
        except OSError as exc:
            _fail(path, "read failed: %s" % (exc.strerror or exc,))
        if len(prefix) < 8:
            _fail(path, "file is %d bytes, too short for a safetensors header" % size)
        (length,) = struct.unpack("<Q", prefix)
        if length > HEADER_CAP:
            _fail(path, "header length %d exceeds the %d-byte cap" % (length, HEADER_CAP))
        if 8 + length > size:
            _fail(
                path,
                "header length %d runs past the end of the %d-byte file (truncated?)"
                % (length, size),
            )
        try:
            raw = fh.read(length)
        except OSError as exc:
            _fail(path, "read failed: %s" % (exc.strerror or exc,))
        if len(raw) != length:
            _fail(path, "header truncated: read %d of %d bytes" % (len(raw), length))
    return parse_header_bytes(path, raw, size)


def _decode_header(path, raw):
    """The header bytes as a JSON object."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        _fail(path, "header is not UTF-8 (byte %d)" % exc.start)
    try:
        header = json.loads(text)
    except ValueError as exc:
        _fail(path, "header is not valid JSON: %s" % (str(exc).splitlines()[0],))
    except RecursionError:
        _fail(path, "header JSON is nested too deeply")
    if not isinstance(header, dict):
        _fail(path, "header JSON is a %s, not an object" % type(header).__name__)
    return header


def _entry_fields(path, where, entry):
    """(dtype, shape, data_offsets) of a tensor's header entry, each of the right kind."""
    if not isinstance(entry, dict):
        _fail(path, "%s: entry is a %s, not an object" % (where, type(entry).__name__))
    for key in ("dtype", "shape", "data_offsets"):
        if key not in entry:
            _fail(path, "%s: missing %r" % (where, key))
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        _fail(path, "%s: unknown dtype %r" % (where, dtype))
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        _fail(path, "%s: shape %r is not a list of non-negative integers" % (where, shape))
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(_is_int(o) and o >= 0 for o in offsets)
    ):
        _fail(path, "%s: data_offsets %r is not [begin, end]" % (where, offsets))
    return dtype, shape, offsets


def _check_span(path, where, dtype, shape, offsets, data_size):
    """The byte range lies in the data area and is exactly what dtype and shape take."""
    begin, end = offsets
    if begin > end:
        _fail(path, "%s: data_offsets %r end before they begin" % (where, offsets))
    if end > data_size:
        _fail(
            path,
            "%s: data_offsets %r run past the %d-byte data area (file truncated?)"
            % (where, offsets, data_size),
        )
    expected = span_bytes(dtype, shape)
    if expected is None:
        _fail(path, "%s: %s shape %r is not a whole number of bytes" % (where, dtype, shape))
    if expected != end - begin:
        _fail(
            path,
            "%s: %s shape %r needs %d bytes but data_offsets %r span %d"
            % (where, dtype, shape, expected, offsets, end - begin),
        )


def _check_overlaps(path, tensors):
    """`tensors` as (begin, end, name, dtype, shape) sorted by offsets."""
    previous = None
    for begin, end, name, _dtype, _shape in tensors:
        if previous is not None and begin < previous[1] and end > begin:
            _fail(
                path,
                "tensors %r and %r overlap (bytes %d-%d and %d-%d)"
                % (previous[2], name, previous[0], previous[1], begin, end),
            )
        if end > begin or previous is None:
            previous = (begin, end, name)


def parse_header_bytes(path, raw, file_size):
    """Validate header JSON bytes `raw` of a file of `file_size` bytes (see read_header)."""
    header = _decode_header(path, raw)
    data_start = 8 + len(raw)
    data_size = file_size - data_start
    metadata = header.get(METADATA_KEY)
    if metadata is not None and not isinstance(metadata, dict):
        _fail(path, "__metadata__ is a %s, not an object" % type(metadata).__name__)
    tensors = []
    for name, entry in header.items():
        if name == METADATA_KEY:
            continue
        where = "tensor %r" % (name,)
        dtype, shape, offsets = _entry_fields(path, where, entry)
        _check_span(path, where, dtype, shape, offsets, data_size)
        begin, end = offsets
        tensors.append((begin, end, name, dtype, shape))
    tensors.sort(key=lambda t: (t[0], t[1]))
    _check_overlaps(path, tensors)
    out = {}
    for begin, end, name, dtype, shape in tensors:
        out[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [begin, end],
            "offset": data_start + begin,
            "bytes": end - begin,
        }
    return {
        "path": path,
        "file_size": file_size,
        "header_length": len(raw),
        "data_start": data_start,
        "metadata": metadata,
        "tensors": out,
    }


def read_bytes(path, offset, length):
    """Exactly `length` bytes at absolute `offset` of `path` (CheckpointError if short)."""
    with _open(path) as fh:
        try:
            fh.seek(offset)
            data = fh.read(length)
        except OSError as exc:
            _fail(path, "read failed at byte %d: %s" % (offset, exc.strerror or exc))
    if len(data) != length:
        _fail(path, "short read at byte %d: %d of %d bytes" % (offset, len(data), length))
    return data


def read_tensor(path, name, header=None, use_numpy=None):
    """Decode one tensor. numpy (shaped ndarray) when available unless use_numpy is False; else a
    flat array.array / list (see decode)."""
    if header is None:
        header = read_header(path)
    info = header["tensors"].get(name)
    if info is None:
        _missing(path, "no tensor named %r%s" % (name, did_you_mean(name, header["tensors"])))
    raw = read_bytes(path, info["offset"], info["bytes"])
    return decode(raw, info["dtype"], info["shape"], use_numpy=use_numpy)


def decode(raw, dtype, shape, use_numpy=None):
    """Bytes of a tensor -> values.

    With numpy: an ndarray of `shape` (BF16 and F8 kinds widened to float32; packed F4/F6 left
    as uint8 bytes). Without numpy: a flat sequence (array.array for numbers, list of bool for
    BOOL, list of float for F16/BF16/F8; packed kinds as array('B') of raw bytes).
    """
    np = numpy_or_none() if use_numpy is not False else None
    if np is not None:
        return _decode_numpy(np, raw, dtype, shape)
    return decode_flat(raw, dtype)


def _decode_numpy(np, raw, dtype, shape):
    if dtype in _NUMPY_CODES:
        values = np.frombuffer(raw, dtype=np.dtype(_NUMPY_CODES[dtype]))
        values = values.astype(values.dtype.newbyteorder("="), copy=False)
    elif dtype == "BF16":
        halves = np.frombuffer(raw, dtype=np.dtype("<u2")).astype(np.uint32)
        values = (halves << 16).view(np.float32)
    elif dtype in _F8_FORMATS:
        table = np.array(f8_table(dtype), dtype=np.float32)
        values = table[np.frombuffer(raw, dtype=np.uint8)]
    else:  # packed sub-byte kinds: raw bytes, no logical shape
        return np.frombuffer(raw, dtype=np.uint8).copy()
    return values.reshape(shape)


def decode_flat(raw, dtype):
    """Stdlib decoding to a flat sequence (see decode)."""
    if dtype == "BOOL":
        return list(map(bool, raw))
    if dtype in _ARRAY_CODES:
        values = _typed_array(_ARRAY_CODES[dtype], raw)
        if values is not None:
            return values
        # odd platform where the array typecode has another width: struct's "<" sizes are fixed
        width = DTYPE_BITS[dtype] // 8
        return list(struct.unpack("<%d%s" % (len(raw) // width, _ARRAY_CODES[dtype]), raw))
    if dtype == "F16":
        return list(struct.unpack("<%de" % (len(raw) // 2), raw))
    if dtype == "BF16":
        halves = struct.unpack("<%dH" % (len(raw) // 2), raw)
        widened = struct.pack("<%dI" % len(halves), *[h << 16 for h in halves])
        return list(struct.unpack("<%df" % len(halves), widened))
    if dtype == "C64":
        parts = struct.unpack("<%df" % (len(raw) // 4), raw)
        return [complex(parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]
    if dtype in _F8_FORMATS:
        table = f8_table(dtype)
        return [table[b] for b in raw]
    return array.array("B", raw)


def _typed_array(code, raw):
    values = array.array(code)
    width = {"b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "f": 4, "d": 8}[code]
    if values.itemsize != width:
        return None
    values.frombytes(raw)
    if sys.byteorder != "little":
        values.byteswap()
    return values


# F8 formats: (exponent bits, mantissa bits, bias, style). style "fn": no inf, NaN only at all-ones;
# "ieee": inf/NaN at max exponent; "fnuz": no inf, no negative zero, NaN at 0x80; "e8m0": 2**(e-127)
_F8_FORMATS = {
    "F8_E4M3": (4, 3, 7, "fn"),
    "F8_E5M2": (5, 2, 15, "ieee"),
    "F8_E4M3FNUZ": (4, 3, 8, "fnuz"),
    "F8_E5M2FNUZ": (5, 2, 16, "fnuz"),
    "F8_E8M0": (8, 0, 127, "e8m0"),
}
_F8_TABLES = {}


def f8_table(dtype):
    """The 256 float values of an 8-bit float format, indexed by byte."""
    table = _F8_TABLES.get(dtype)
    if table is not None:
        return table
    ebits, mbits, bias, style = _F8_FORMATS[dtype]
    table = []
    for byte in range(256):
        if style == "e8m0":
            table.append(float("nan") if byte == 255 else math.ldexp(1.0, byte - bias))
            continue
        sign = -1.0 if byte >> 7 else 1.0
        exponent = (byte >> mbits) & ((1 << ebits) - 1)
        mantissa = byte & ((1 << mbits) - 1)
        top = (1 << ebits) - 1
        if style == "fnuz" and byte == 0x80:
            table.append(float("nan"))
        elif style == "fn" and exponent == top and mantissa == (1 << mbits) - 1:
            table.append(float("nan"))
        elif style == "ieee" and exponent == top:
            table.append(sign * float("inf") if mantissa == 0 else float("nan"))
        elif exponent == 0:
            table.append(sign * math.ldexp(mantissa, 1 - bias - mbits))
        else:
            table.append(sign * math.ldexp((1 << mbits) | mantissa, exponent - bias - mbits))
    _F8_TABLES[dtype] = table
    return table
