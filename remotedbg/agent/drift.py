"""Runs on the box: whether an engine install's files are the released ones (read-only).

A pip install is checked against its own `*.dist-info/RECORD` (sha256 of every file of the
package, as pip recorded it); a git checkout against its `.git`: the working tree against the
index, the index against `HEAD`, and `HEAD` against the tag of the version it claims. Git's
objects are read here (index, loose objects, packs with their deltas), never by running `git`:
`git status` may write the index, and the box need not have git. Stdlib only.

Answer per install: {"path", "method": "record" | "git" | None, "status": "as-released" |
"modified" | "unknown", "changed": [{"path", "change": "modified" | "missing" | "added" |
"staged", "served_text"?, "released_text"?}], "checked": files compared, "reason"?,
"release"?: {"tag", "tag_commit", "head", "at_tag"}}. Texts are sent for changed Python files
only, within MAX_TEXT_FILES and MAX_TEXT_BYTES.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import struct
import zlib

MAX_FILES = 30000
MAX_HASH_BYTES = 8 << 20  # a larger file (a compiled extension) is checked by its size only
MAX_TOTAL_BYTES = 512 << 20
MAX_TEXT_FILES = 24
MAX_TEXT_BYTES = 2 << 20
SKIPPED_DIRS = ("__pycache__",)
SKIPPED_SUFFIXES = (".pyc", ".pyo")


class _TooLarge(Exception):
    pass


class _Budget(object):
    def __init__(self, max_files, max_bytes):
        self.files, self.bytes = max_files, max_bytes

    def spend(self, size):
        self.files -= 1
        self.bytes -= size
        if self.files < 0 or self.bytes < 0:
            raise _TooLarge()


def install_drift(args):
    """{"installs": [drift of each install]} for args {"installs": [{"path", "package",
    "site_packages"?, "dist_names"?, "git"?: {"repo"}, "version"?}]}."""
    out = []
    for inst in args.get("installs") or []:
        budget = _Budget(int(args.get("max_files") or MAX_FILES),
                         int(args.get("max_bytes") or MAX_TOTAL_BYTES))  # fmt: skip
        try:
            out.append(_one(inst, budget))
        except _TooLarge:
            out.append(_unknown(inst, "the package has more than %d files or %d MiB to compare"
                                % (MAX_FILES, MAX_TOTAL_BYTES >> 20)))  # fmt: skip
        except (OSError, ValueError, KeyError, IndexError, struct.error, zlib.error) as exc:
            out.append(_unknown(inst, "unreadable: %s" % (exc,)))
    return {"installs": out}


def _unknown(inst, reason, method=None):
    return {"path": inst.get("path"), "method": method, "status": "unknown", "changed": [],
            "checked": 0, "reason": reason}  # fmt: skip


def _one(inst, budget):
    if inst.get("kind") in (None, "site-packages"):
        record = _record_of(inst)
        if record:
            return _record_drift(inst, record, budget)
    repo = (inst.get("git") or {}).get("repo") or _repo_above(inst["path"])
    found = _git_drift(inst, repo, budget) if repo else None
    if found is not None:
        return found
    return _unknown(inst, "neither a dist-info RECORD nor a git checkout that tracks the "
                    "package says what was released")  # fmt: skip


# ------------------------------------------------------------------------------ pip's RECORD
def _record_of(inst):
    """The RECORD, among the site-packages' dist-infos, that lists the most files of the
    package (a fork under another distribution name, such as sglang-kt, lists it too; a shim
    dist-info that names the distribution but lists nothing is passed over)."""
    site = inst.get("site_packages") or os.path.dirname(inst["path"])
    package = inst.get("package") or os.path.basename(inst["path"])
    try:
        entries = sorted(os.listdir(site))
    except OSError:
        return None
    best = (0, None)
    for entry in entries:
        if entry.endswith(".dist-info"):
            record = os.path.join(site, entry, "RECORD")
            listed = _listed_count(record, package)
            if listed > best[0]:
                best = (listed, record)
    return best[1]


def _listed_count(record, package):
    try:
        with open(record, "rb") as handle:
            text = handle.read(64 << 20).decode("utf-8", "replace")
    except OSError:
        return 0
    return ("\n" + text).count("\n%s/" % package)


def _record_drift(inst, record, budget):
    site = os.path.dirname(os.path.dirname(record))
    package = os.path.relpath(inst["path"], site)
    with open(record, "rb") as handle:
        rows = list(csv.reader(io.StringIO(handle.read(64 << 20).decode("utf-8", "replace"))))
    listed, changed, checked = set(), [], 0
    for row in rows:
        if len(row) < 2 or not row[0].startswith(package + "/"):
            continue
        rel = row[0][len(package) + 1 :]
        listed.add(rel)
        if not row[1] or _skipped(rel):
            continue  # pip records no hash for RECORD itself and the .pyc it compiles
        algo, _, want = row[1].partition("=")
        full = os.path.join(inst["path"], rel)
        try:
            size = os.path.getsize(full)
        except OSError:
            changed.append({"path": rel, "change": "missing"})
            continue
        checked += 1
        if size > MAX_HASH_BYTES:
            if len(row) > 2 and row[2].isdigit() and int(row[2]) != size:
                changed.append({"path": rel, "change": "modified"})
            continue
        budget.spend(size)
        if _digest(full, algo) != want:
            changed.append({"path": rel, "change": "modified"})
    for rel in _py_files(inst["path"], budget):
        if rel not in listed:
            changed.append({"path": rel, "change": "added"})
    _attach_texts(inst["path"], changed, None)
    return _answer(inst, "record", changed, checked, {"record": record})


def _digest(path, algo):
    digest = hashlib.new(algo or "sha256")
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode("ascii")


def _skipped(rel):
    parts = rel.split("/")
    return any(p in SKIPPED_DIRS for p in parts) or rel.endswith(SKIPPED_SUFFIXES)


def _py_files(top, budget):
    out = []
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith(".")]
        for name in files:
            if name.endswith(".py"):
                budget.files -= 1
                if budget.files < 0:
                    raise _TooLarge()
                out.append(os.path.relpath(os.path.join(root, name), top))
    return sorted(out)


def _answer(inst, method, changed, checked, extra):
    out = {"path": inst["path"], "method": method, "checked": checked,
           "status": "modified" if changed else "as-released", "changed": changed}  # fmt: skip
    out.update(extra)
    return out


def _attach_texts(top, changed, released):
    """Served (and, from git, released) texts of the changed Python files, within the caps."""
    sent = 0
    for item in changed:
        if sent >= MAX_TEXT_FILES or not item["path"].endswith(".py"):
            continue
        if item["change"] != "missing":
            text = _read_capped(os.path.join(top, item["path"]))
            if text is None:
                continue
            item["served_text"] = text
        if released is not None:
            old = released(item["path"])
            if old is not None and len(old) <= MAX_TEXT_BYTES:
                item["released_text"] = old.decode("utf-8", "replace")
        sent += 1


def _read_capped(path):
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TEXT_BYTES + 1)
    except OSError:
        return None
    return None if len(data) > MAX_TEXT_BYTES else data.decode("utf-8", "replace")


# ------------------------------------------------------------------------------ git
def _repo_above(path, levels=4):
    d = path
    for _ in range(levels):
        d = os.path.dirname(d)
        if os.path.exists(os.path.join(d, ".git")):
            return d
    return None


def _git_drift(inst, repo, budget):
    git = _GitDir(repo)
    package = os.path.relpath(inst["path"], repo).replace(os.sep, "/")
    prefix = package + "/"
    index = {p: e for p, e in git.index().items() if p.startswith(prefix)}
    if not index:
        return None  # a repository around the package that does not track it (a home's dotfiles)
    head_commit = git.head()
    head = git.tree_files(head_commit, package) if head_commit else {}
    changed, checked = [], 0
    for path, entry in sorted(index.items()):
        rel = path[len(prefix) :]
        if entry["skip"] or _skipped(rel) or entry["mode"] == 0o160000:
            continue
        full = os.path.join(repo, path)
        checked += 1
        if head.get(path) != entry["sha"]:
            changed.append({"path": rel, "change": "staged" if path in head else "added"})
            continue
        try:
            if entry["mode"] == 0o120000:
                data = os.readlink(full).encode()
            else:
                size = os.path.getsize(full)
                budget.spend(size)
                with open(full, "rb") as handle:
                    data = handle.read()
        except OSError:
            changed.append({"path": rel, "change": "missing"})
            continue
        if _blob_id(data) != entry["sha"]:
            changed.append({"path": rel, "change": "modified"})
    for path in sorted(set(head) - set(index)):
        changed.append({"path": path[len(prefix) :], "change": "missing"})
    for rel in _py_files(inst["path"], budget):
        if prefix + rel not in index and prefix + rel not in head:
            changed.append({"path": rel, "change": "added"})

    def released(rel):
        sha = head.get(prefix + rel)
        return git.blob(sha) if sha else None

    _attach_texts(inst["path"], changed, released)
    return _answer(
        inst,
        "git",
        changed,
        checked,
        {"repo": repo, "release": git.release(inst.get("version"), head_commit)},
    )


def _blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class _GitDir(object):
    """A repository's .git, read as files: refs, the index, objects (loose and packed)."""

    def __init__(self, repo):
        dot = os.path.join(repo, ".git")
        if os.path.isfile(dot):  # a worktree or submodule: "gitdir: PATH"
            with open(dot) as handle:
                line = handle.read(4096).strip()
            dot = os.path.normpath(os.path.join(repo, line.split(":", 1)[1].strip()))
        self.git = dot
        common = self._text("commondir")
        self.common = os.path.normpath(os.path.join(dot, common.strip())) if common else dot
        self.object_dirs = [os.path.join(self.common, "objects")]
        alternates = self._text("objects/info/alternates", self.common) or ""
        self.object_dirs += [a.strip() for a in alternates.splitlines() if a.strip()]
        self._packs = None

    def _text(self, rel, base=None):
        try:
            with open(os.path.join(base or self.git, rel)) as handle:
                return handle.read(1 << 20)
        except OSError:
            return None

    # refs
    def ref(self, name):
        for base in (self.git, self.common):
            text = self._text(name, base)
            if text:
                return text.strip()
        for line in (self._text("packed-refs", self.common) or "").splitlines():
            if line.endswith(" " + name):
                return line.split(" ", 1)[0]
        return None

    def head(self):
        text = (self._text("HEAD") or "").strip()
        return self.ref(text[4:].strip()) if text.startswith("ref:") else (text or None)

    def release(self, version, head):
        """The tag named for the version (v0.5.21, 0.5.21), peeled to its commit."""
        if not version:
            return {"tag": None, "head": head, "at_tag": None}
        for tag in ("v" + version, version):
            sha = self.ref("refs/tags/" + tag)
            if sha:
                commit = self._peel(sha)
                return {"tag": tag, "tag_commit": commit, "head": head, "at_tag": commit == head}
        return {"tag": None, "head": head, "at_tag": None,
                "reason": "no tag v%s in the checkout" % version}  # fmt: skip

    def _peel(self, sha):
        for _ in range(8):
            kind, data = self.object(sha)
            if kind != "tag":
                return sha
            sha = data.split(b"\n", 1)[0].split(b" ", 1)[1].decode()
        return sha

    # the index
    def index(self):
        with open(os.path.join(self.git, "index"), "rb") as handle:
            data = handle.read()
        if data[:4] != b"DIRC":
            raise ValueError("%s/index is not a git index" % self.git)
        version, count = struct.unpack(">II", data[4:12])
        if version not in (2, 3, 4):
            raise ValueError("git index version %d" % version)
        entries, pos, name = {}, 12, b""
        for _ in range(count):
            start = pos
            mode = struct.unpack(">I", data[pos + 24 : pos + 28])[0]
            sha = data[pos + 40 : pos + 60].hex()
            flags = struct.unpack(">H", data[pos + 60 : pos + 62])[0]
            cur = pos + 62
            extended = 0
            if flags & 0x4000 and version >= 3:
                extended = struct.unpack(">H", data[cur : cur + 2])[0]
                cur += 2
            if version == 4:
                strip, cur = _offset_varint(data, cur)
                end = data.index(b"\0", cur)
                name = name[: len(name) - strip] + data[cur:end]
                pos = end + 1
            else:
                end = data.index(b"\0", cur)
                name = data[cur:end]
                pos = start + ((end - start + 8) & ~7)  # NUL-padded to a multiple of 8
            if (flags >> 12) & 3:
                continue  # a merge conflict's stages: the working tree decides
            entries[name.decode("utf-8", "replace")] = {
                "sha": sha, "mode": mode, "skip": bool(extended & 0x4000)}  # fmt: skip
        return entries

    # objects
    def object(self, sha):
        for base in self.object_dirs:
            path = os.path.join(base, sha[:2], sha[2:])
            if os.path.isfile(path):
                with open(path, "rb") as handle:
                    raw = zlib.decompress(handle.read())
                header, _, body = raw.partition(b"\0")
                return header.split(b" ", 1)[0].decode(), body
        for pack in self.packs():
            offset = pack.find(sha)
            if offset is not None:
                return pack.read(offset, self)
        raise KeyError("git object %s not found" % sha)

    def packs(self):
        if self._packs is None:
            self._packs = []
            for base in self.object_dirs:
                folder = os.path.join(base, "pack")
                try:
                    names = sorted(os.listdir(folder))
                except OSError:
                    continue
                for name in names:
                    if name.endswith(".idx"):
                        self._packs.append(_Pack(os.path.join(folder, name)))
        return self._packs

    def blob(self, sha):
        kind, data = self.object(sha)
        return data if kind == "blob" else None

    def tree_files(self, commit, package):
        """{path: blob sha} of every file under `package` in the commit's tree."""
        kind, data = self.object(commit)
        if kind != "commit":
            raise ValueError("HEAD is a %s, not a commit" % kind)
        tree = data.split(b"\n", 1)[0].split(b" ", 1)[1].decode()
        for part in package.split("/"):
            entries = self._tree(tree)
            if part not in entries or entries[part][0] != "tree":
                return {}
            tree = entries[part][1]
        out, stack = {}, [(package, tree)]
        while stack:
            where, sha = stack.pop()
            for name, (kind, child) in self._tree(sha).items():
                if kind == "tree":
                    stack.append((where + "/" + name, child))
                elif kind == "blob":
                    out[where + "/" + name] = child
        return out

    def _tree(self, sha):
        kind, data = self.object(sha)
        if kind != "tree":
            raise ValueError("git object %s is a %s, not a tree" % (sha, kind))
        out, pos = {}, 0
        while pos < len(data):
            space = data.index(b" ", pos)
            nul = data.index(b"\0", space)
            mode = data[pos:space]
            name = data[space + 1 : nul].decode("utf-8", "replace")
            child = data[nul + 1 : nul + 21].hex()
            kind = "tree" if mode == b"40000" else ("commit" if mode == b"160000" else "blob")
            out[name] = (kind, child)
            pos = nul + 21
        return out


def _offset_varint(data, pos):
    """git's offset encoding (index v4 name prefixes, OFS_DELTA): each more byte adds one."""
    byte = data[pos]
    value = byte & 0x7F
    pos += 1
    while byte & 0x80:
        byte = data[pos]
        value = ((value + 1) << 7) | (byte & 0x7F)
        pos += 1
    return value, pos


_KINDS = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}


class _Pack(object):
    """One pack and its v2 index: objects by offset, deltas applied."""

    def __init__(self, idx_path):
        with open(idx_path, "rb") as handle:
            self.idx = handle.read()
        if self.idx[:4] != b"\377tOc" or struct.unpack(">I", self.idx[4:8])[0] != 2:
            raise ValueError("%s: not a version 2 pack index" % idx_path)
        self.count = struct.unpack(">I", self.idx[8 + 255 * 4 : 8 + 256 * 4])[0]
        self.path = idx_path[:-4] + ".pack"

    def find(self, sha):
        want = bytes.fromhex(sha)
        first = want[0]
        lo = struct.unpack(">I", self.idx[8 + (first - 1) * 4 : 8 + first * 4])[0] if first else 0
        hi = struct.unpack(">I", self.idx[8 + first * 4 : 12 + first * 4])[0]
        names = 8 + 256 * 4
        while lo < hi:
            mid = (lo + hi) // 2
            got = self.idx[names + mid * 20 : names + mid * 20 + 20]
            if got == want:
                offsets = names + self.count * 24
                offset = struct.unpack(">I", self.idx[offsets + mid * 4 : offsets + mid * 4 + 4])[0]
                if offset & 0x80000000:
                    large = offsets + self.count * 4 + (offset & 0x7FFFFFFF) * 8
                    offset = struct.unpack(">Q", self.idx[large : large + 8])[0]
                return offset
            if got < want:
                lo = mid + 1
            else:
                hi = mid
        return None

    def read(self, offset, git, depth=0):
        if depth > 64:
            raise ValueError("delta chain deeper than 64")
        with open(self.path, "rb") as handle:
            handle.seek(offset)
            head = handle.read(32)
            byte = head[0]
            kind, size, pos, shift = (byte >> 4) & 7, byte & 15, 1, 4
            while byte & 0x80:
                byte = head[pos]
                size |= (byte & 0x7F) << shift
                shift += 7
                pos += 1
            base = None
            if kind == 6:
                back, pos = _offset_varint(head, pos)
                base = self.read(offset - back, git, depth + 1)
            elif kind == 7:
                base = git.object(head[pos : pos + 20].hex())
                pos += 20
            handle.seek(offset + pos)
            data = _inflate(handle, size if base is None else None)
        if base is None:
            return _KINDS[kind], data
        return base[0], _apply_delta(base[1], data)


def _inflate(handle, size):
    inflater = zlib.decompressobj()
    out = []
    total = 0
    while not inflater.eof:
        chunk = handle.read(1 << 16)
        if not chunk:
            break
        piece = inflater.decompress(chunk)
        out.append(piece)
        total += len(piece)
    data = b"".join(out)
    if size is not None and len(data) != size:
        raise ValueError("a packed object inflated to %d bytes, not %d" % (len(data), size))
    return data


def _size_varint(data, pos):
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _apply_delta(base, delta):
    src, pos = _size_varint(delta, 0)
    dst, pos = _size_varint(delta, pos)
    if src != len(base):
        raise ValueError("a delta's base is %d bytes, not %d" % (len(base), src))
    out = bytearray()
    while pos < len(delta):
        op = delta[pos]
        pos += 1
        if op & 0x80:
            offset = size = 0
            for bit in range(4):
                if op & (1 << bit):
                    offset |= delta[pos] << (8 * bit)
                    pos += 1
            for bit in range(3):
                if op & (1 << (4 + bit)):
                    size |= delta[pos] << (8 * bit)
                    pos += 1
            out += base[offset : offset + (size or 0x10000)]
        elif op:
            out += delta[pos : pos + op]
            pos += op
        else:
            raise ValueError("a delta opcode 0")
    if len(out) != dst:
        raise ValueError("a delta made %d bytes, not %d" % (len(out), dst))
    return bytes(out)
