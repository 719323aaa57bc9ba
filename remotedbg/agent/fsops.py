"""File-system primitives that run on the remote: glob (with suggestions), find, grep, read,
stat, sha256. Globs are expanded here (names read by agent/pathglob.py) and nowhere else."""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import os
import re
import stat as statmod
import subprocess
import time

from remotedbg.agent.file_stamp import add_file
from remotedbg.agent.pathglob import (
    expand_below,
    expand_path,
    literal_runs,
    plain_name,
    read_parts,
)

PRUNED_DIRS = (
    "__pycache__",
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
)
SUGGEST_WALK_LIMIT = 20000  # directory entries looked at when searching for suggestions
SUGGEST_WALK_SECONDS = 1.0


MAX_LINE_BYTES = 4096  # of one grep line returned
EXPAND_MAX_DIRS = 200000  # directories a `**` may walk
EXPAND_MAX_MATCHES = 100000
EXPAND_SECONDS = 10.0


class ExpandTruncated(Exception):
    pass


def expand(pattern, budget=None, max_matches=None):
    """Remote-side expansion of one pattern: `~`, `*`, `?`, `[...]`, `**` (recursive), each
    name read as agent/pathglob.py says (a name that exists as typed is that name; a backslash
    makes the next character plain).

    `**` walks below the directories before it without following symlinked directories (as
    `find` does: a symlink loop is not a way down) and skips hidden ones (as glob does), within
    EXPAND_MAX_DIRS directories, EXPAND_MAX_MATCHES matches and EXPAND_SECONDS; past a bound
    the matches so far are returned and `budget["truncated"]` says why."""
    expanded = os.path.expanduser(pattern)
    parts = expanded.split(os.sep)
    if "**" not in parts or os.path.lexists(expanded):
        return sorted(set(expand_path(expanded)))
    budget = {} if budget is None else budget
    max_matches = max(EXPAND_MAX_MATCHES, max_matches or 0)
    cut = parts.index("**")
    head = os.sep.join(parts[:cut]) or (os.sep if expanded.startswith(os.sep) else ".")
    tail = read_parts("*" if part == "**" else part for part in parts[cut + 1 :])
    bases = expand_path(head)
    found = []
    deadline = time.monotonic() + EXPAND_SECONDS
    walked = 0
    try:
        for base in sorted(bases):
            if not os.path.isdir(base):
                continue
            for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
                walked += 1
                if walked > EXPAND_MAX_DIRS or time.monotonic() > deadline:
                    raise ExpandTruncated("the walk passed its bounds (%d dirs)" % walked)
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                if tail:
                    found.extend(expand_below(dirpath, tail))
                else:
                    found.append(dirpath)
                    found.extend(
                        os.path.join(dirpath, n) for n in filenames if not n.startswith(".")
                    )
                if len(found) > max_matches:
                    raise ExpandTruncated("more than %d matches" % max_matches)
    except ExpandTruncated as why:
        budget["truncated"] = "%s: the ** walk stopped (%s)" % (pattern, why)
    return sorted(set(found))


def _deepest_existing_dir(expanded):
    parts = expanded.split(os.sep)
    base = os.sep if expanded.startswith(os.sep) else "."
    rest_start = 1 if expanded.startswith(os.sep) else 0
    for index in range(rest_start, len(parts)):
        part = parts[index]
        if not part:
            continue
        typed = os.path.join(base, part)
        name = part if os.path.isdir(typed) else plain_name(part)
        candidate = os.path.join(base, name) if name is not None else None
        if candidate is None or not os.path.isdir(candidate):
            return base, parts[index:]
        base = candidate
    return base, []


def suggest(pattern, limit=10):
    """Names that do exist near a pattern that matched nothing (the `eagle*.py` lesson)."""
    expanded = os.path.expanduser(pattern)
    base, rest = _deepest_existing_dir(expanded)
    first = rest[0] if rest else ""
    nearby = []
    try:
        names = sorted(os.listdir(base))
    except OSError:
        names = []
    if first:
        literal = "".join(literal_runs(first))
        scored = [
            (difflib.SequenceMatcher(None, literal.lower(), n.lower()).ratio(), n) for n in names
        ]
        nearby = [
            os.path.join(base, n)
            for score, n in sorted(scored, key=lambda s: -s[0])
            if score >= 0.5
        ][:5]
    last = rest[-1] if rest else ""
    runs = [r for r in literal_runs(last) if re.search(r"[A-Za-z0-9]", r)]
    ext = ""
    if runs and runs[-1].startswith(".") and last.endswith(runs[-1]):
        ext = runs[-1]
        runs = runs[:-1]
    stem = max((r.strip("._-") for r in runs), key=len, default="")
    containing = []
    if stem:
        seen = 0
        deadline = time.monotonic() + SUGGEST_WALK_SECONDS
        for directory, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in PRUNED_DIRS)
            seen += len(dirs) + len(files)
            for name in sorted(files + dirs):
                if stem.lower() in name.lower() and (not ext or name.endswith(ext)):
                    containing.append(os.path.join(directory, name))
            if len(containing) >= limit or seen > SUGGEST_WALK_LIMIT or time.monotonic() > deadline:
                break
    return {
        "searched_from": base,
        "stem": stem,
        "nearby": nearby,
        "containing_stem": containing[:limit],
    }


def _bounded_lines(stream, limit):
    """Lines of at most `limit` bytes: the rest of a longer line is read and dropped, so a
    300 MB line never sits in memory."""
    while True:
        line = stream.readline(limit)
        if not line:
            return
        if not line.endswith(b"\n"):
            while True:
                rest = stream.readline(limit)
                if not rest or rest.endswith(b"\n"):
                    break
            line += b"\n"
        yield line


def glob_paths(args):
    """Per pattern: its matches (at most `limit`), their count, and `truncated` when a bound
    was reached (`stopped` says which)."""
    results = []
    limit = args.get("limit", 10000)
    for pattern in args["patterns"]:
        budget = {}
        matches = expand(pattern, budget, limit)
        entry = {
            "pattern": pattern,
            "matches": matches[:limit],
            "count": len(matches),
            "truncated": bool(budget.get("truncated")) or len(matches) > limit,
        }
        if budget.get("truncated"):
            entry["stopped"] = budget["truncated"]
        if not matches:
            entry["suggestions"] = suggest(pattern)
        results.append(entry)
    return results


def _kind(mode):
    if statmod.S_ISLNK(mode):
        return "l"
    if statmod.S_ISDIR(mode):
        return "d"
    return "f" if statmod.S_ISREG(mode) else "o"


def find(args):
    """Walk `root` (a path or glob) for names matching any of `names` (fnmatch patterns)."""
    names = args.get("names") or ["*"]
    wanted_type = args.get("type")
    max_depth = args.get("max_depth")
    limit = args.get("limit", 10000)
    prune = set(args.get("prune", PRUNED_DIRS))
    found = []
    budget = {}
    roots = expand(args["root"], budget)
    stopped = [budget["truncated"]] if budget.get("truncated") else []
    for root in roots:
        root_depth = root.rstrip(os.sep).count(os.sep)
        for directory, dirs, files in os.walk(root):
            depth = directory.rstrip(os.sep).count(os.sep) - root_depth
            dirs[:] = sorted(d for d in dirs if d not in prune)
            if max_depth is not None and depth + 1 >= max_depth:
                dirs_here = list(dirs)
                dirs[:] = []  # entries of this directory are the last level asked for
            else:
                dirs_here = dirs
            entries = sorted(files + dirs_here)
            for name in entries:
                if not any(fnmatch.fnmatchcase(name, p) for p in names):
                    continue
                path = os.path.join(directory, name)
                try:
                    kind = _kind(os.lstat(path).st_mode)
                except OSError:
                    continue
                if wanted_type and kind != wanted_type:
                    continue
                if len(found) >= limit:  # one more than asked for: the bound is reached
                    return {"roots": roots, "results": found, "truncated": True,
                            "stopped": stopped + ["limit"]}  # fmt: skip
                found.append({"path": path, "type": kind})
    return {"roots": roots, "results": found, "truncated": bool(stopped), "stopped": stopped}


_GREP_LINE = re.compile(rb"^(.*?)\x00(\d+)([:-])(.*)$", re.S)


def grep(args):
    """Extended-regex search (the remote's own `grep -E`) in paths or globs, binary files skipped.

    Returns records {path, line, text, before, after}; `before`/`after` hold context lines.
    """
    paths = []
    unmatched = []
    stopped = []
    for pattern in args["paths"]:
        budget = {}
        matches = expand(pattern, budget)
        if budget.get("truncated"):
            stopped.append(budget["truncated"])
        if matches:
            paths.extend(matches)
        else:
            unmatched.append({"pattern": pattern, "suggestions": suggest(pattern)})
    if args.get("prune_paths"):
        pruned = [q.rstrip("/") for q in args["prune_paths"]]
        paths = [kept for path in paths for kept in _around(path.rstrip("/") or "/", pruned)]
    result = {"records": [], "unmatched": unmatched, "truncated": bool(stopped),
              "stopped": stopped, "searched": len(paths)}  # fmt: skip
    if not paths:
        return result
    if "stamp" in args:
        result["stamp"] = _tree_stamp(paths)
        if result["stamp"] is not None and result["stamp"] == args["stamp"]:
            result["same"] = True  # nothing under the paths changed since that answer
            return result
    context = int(args.get("context", 0))
    argv = ["grep", "-r", "-n", "-H", "-I", "-Z", "--color=never"]
    argv += ["-F"] if args.get("fixed") else ["-E"]
    argv += ["-i"] if args.get("ignore_case") else []
    argv += ["-w"] if args.get("word") else []
    argv += ["-C", str(context)] if context else []
    argv += ["--exclude-dir=" + d for d in PRUNED_DIRS]
    argv += ["--include=" + g for g in args.get("include") or []]
    argv += ["--exclude=" + g for g in args.get("exclude") or []]
    argv += ["-e", args["pattern"], "--"] + paths
    limit = int(args.get("limit", 5000))
    try:
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
    except OSError as exc:
        raise RuntimeError("cannot run grep on the remote: %s" % exc) from None
    records = result["records"]
    pending = []
    for raw in _bounded_lines(process.stdout, MAX_LINE_BYTES + 4096):
        raw = raw.rstrip(b"\n")
        match = _GREP_LINE.match(raw)
        if not match:
            pending = []  # a `--` group separator
            continue
        path = os.fsdecode(match.group(1))
        number = int(match.group(2))
        raw_text = match.group(4)
        if len(raw_text) > MAX_LINE_BYTES:  # a minified or binary-ish line: the start is enough
            raw_text = raw_text[:MAX_LINE_BYTES] + b"...[line cut]"
        text = raw_text.decode("utf-8", "surrogateescape")
        if match.group(3) == b":":
            if len(records) >= limit:  # one match more than asked for: the bound is reached
                result["truncated"] = True
                result["stopped"].append("limit")
                process.kill()
                break
            records.append(
                {"path": path, "line": number, "text": text, "before": pending, "after": []}
            )
            pending = []
        else:
            last = records[-1] if records else None
            if (
                last
                and last["path"] == path
                and 0 < number - last["line"] <= context
                and not pending
            ):
                last["after"].append({"line": number, "text": text})
            else:
                pending.append({"line": number, "text": text})
    process.stdout.close()
    errors = process.stderr.read().decode("utf-8", "replace").strip()
    status = process.wait()
    if status == 2 and not records:
        raise RuntimeError("grep: " + (errors.splitlines() or ["failed"])[-1])
    return result


def _around(path, pruned):
    """`path` for `grep -r` with the directories in `pruned` left out: a directory above one of
    them becomes its entries, as `grep -r` would meet them (symlinks below the top, which it
    does not follow, and PRUNED_DIRS left out)."""
    if path in pruned:
        return []
    if not any(q.startswith(path + "/") for q in pruned) or not os.path.isdir(path):
        return [path]
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return [path]
    out = []
    for name in names:
        entry = os.path.join(path, name)
        if name not in PRUNED_DIRS and not os.path.islink(entry):
            out.extend(_around(entry, pruned))
    return out


STAMP_MAX_FILES = 50000


def _tree_stamp(paths):
    """sha256 of the stamp (agent/file_stamp.py) of every file under `paths`, walked as
    `grep -r` walks them (symlinks below the top not followed, PRUNED_DIRS left out); None past
    STAMP_MAX_FILES."""
    digest = hashlib.sha256()
    count = 0
    for top in paths:
        if not os.path.isdir(top):
            count += add_file(digest, top)
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d not in PRUNED_DIRS)
            for name in sorted(filenames):
                count += add_file(digest, os.path.join(dirpath, name))
            if count > STAMP_MAX_FILES:
                return None
    return digest.hexdigest()


BINARY_PROBE = 8192  # a NUL in the first 8 KiB marks a binary file, as grep and git decide


def read_text(args):
    """The first `max_bytes` of each path (globs expanded), or its last `tail` lines (from at
    most the last `max_bytes`), decoded losslessly. Only regular files are opened, so a FIFO or
    device cannot block the read; a binary file's bytes are left out unless `binary` is set.
    `known` ({path: sha256} of texts the client keeps): each file read whole gets its sha256,
    and one whose bytes have the sha256 given is answered `same` without its text. `suggest`
    false: a missing path gets no suggestions (a caller trying candidate files, for which the
    walk that finds them would cost more than the read)."""
    max_bytes = int(args.get("max_bytes", 1 << 20))
    suggesting = args.get("suggest", True)
    tail = args.get("tail")
    known = args.get("known") or {}
    files = []
    for pattern in args["paths"]:
        budget = {}
        matches = expand(pattern, budget)
        if budget.get("truncated"):
            files.append({"pattern": pattern, "error": budget["truncated"], "stopped": True})
        if not matches:
            missing = {"pattern": pattern, "error": "no such file"}
            if suggesting:
                missing["suggestions"] = suggest(pattern)
            files.append(missing)
            continue
        for path in matches:
            entry = {"pattern": pattern, "path": path}
            try:
                info = os.stat(path)
                if not statmod.S_ISREG(info.st_mode):
                    is_dir = statmod.S_ISDIR(info.st_mode)
                    entry["error"] = "is a directory" if is_dir else "not a regular file"
                    files.append(entry)
                    continue
                with open(path, "rb") as handle:
                    if tail is None:
                        data = handle.read(max_bytes)
                        cut = capped = info.st_size > len(data)
                    else:
                        data, cut, capped = _last_lines(handle, info.st_size, int(tail), max_bytes)
            except OSError as exc:
                entry["error"] = exc.strerror or str(exc)
                files.append(entry)
                continue
            # truncated: not the whole file; capped: less than asked for, max_bytes reached
            entry.update(size=info.st_size, truncated=cut, capped=capped)
            if b"\0" in data[:BINARY_PROBE] and not args.get("binary"):
                entry["binary"] = True
            elif known and tail is None and not cut:
                entry["sha256"] = hashlib.sha256(data).hexdigest()
                if known.get(path) == entry["sha256"]:
                    entry["same"] = True
                else:
                    entry["text"] = data.decode("utf-8", "surrogateescape")
            else:
                entry["text"] = data.decode("utf-8", "surrogateescape")
            files.append(entry)
    return files


def _last_lines(handle, size, count, max_bytes):
    """The last `count` lines of a file (reading backwards in blocks, at most `max_bytes`),
    whether anything before them was left out, and whether `max_bytes` stopped the read
    before `count` lines were found."""
    start = size
    data = b""
    while start > 0 and data.count(b"\n") <= count and len(data) < max_bytes:
        step = min(65536, start, max_bytes - len(data))
        start -= step
        handle.seek(start)
        data = handle.read(step) + data
    body = data[:-1] if data.endswith(b"\n") else data
    lines = body.split(b"\n")
    if start > 0:
        handle.seek(start - 1)
        if handle.read(1) != b"\n":
            lines = lines[1:]  # the read began mid-line
    kept = lines[-count:] if count else []
    text = b"\n".join(kept) + (b"\n" if data.endswith(b"\n") and kept else b"")
    return text, start > 0 or len(lines) > len(kept), start > 0 and len(lines) < count


def stat_paths(args):
    """lstat of each path, or stat (links followed) when `follow` is set."""
    look = os.stat if args.get("follow") else os.lstat
    out = []
    for path in args["paths"]:
        full = os.path.expanduser(path)
        try:
            info = look(full)
        except OSError as exc:
            out.append({"path": full, "exists": False, "error": exc.strerror or str(exc)})
            continue
        out.append(
            {
                "path": full,
                "exists": True,
                "type": _kind(info.st_mode),
                "size": info.st_size,
                "mode": oct(statmod.S_IMODE(info.st_mode)),
                "mtime": info.st_mtime,
                "uid": info.st_uid,
            }
        )
    return out


def sha256_range(args):
    """{"path", "length"} -> the sha256 of the file's first `length` bytes, with its size and
    mtime (from the open file, so all three describe one file): `get` resumes a .part only when
    they match what it holds."""
    with open(os.path.expanduser(args["path"]), "rb") as handle:
        info = os.fstat(handle.fileno())
        digest, left = hashlib.sha256(), int(args["length"])
        while left > 0:
            block = handle.read(min(left, 1 << 20))
            if not block:
                break
            digest.update(block)
            left -= len(block)
    return {"sha256": digest.hexdigest(), "size": info.st_size, "mtime": info.st_mtime,
            "short": left > 0}  # fmt: skip


def sha256(args):
    out = []
    for pattern in args["paths"]:
        for path in expand(pattern) or [os.path.expanduser(pattern)]:
            digest = hashlib.sha256()
            try:
                with open(path, "rb") as handle:
                    for block in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(block)
            except OSError as exc:
                out.append({"path": path, "error": exc.strerror or str(exc)})
                continue
            out.append({"path": path, "sha256": digest.hexdigest()})
    return out
