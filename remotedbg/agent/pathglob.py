"""How a path argument names files on the box, for every command that takes one (through
fsops.expand): a part of the path that names an existing entry as typed is that entry, glob
characters and backslashes included (scp's `copy.glob[123]`); otherwise `*`, `?` and `[...]`
match, and a backslash makes the next character plain, as sftp's glob(3) reads `g-wild\\*`,
`g-q\\ space` and `g-quote\\"`. Pure name logic plus the directory reads it needs, stdlib only."""

from __future__ import annotations

import os
import re


def tokens(part):
    """(character, plain) for each character of one path component: plain is True where a
    backslash escaped it. A backslash at the end is itself, as glob(3) reads it."""
    out = []
    index = 0
    while index < len(part):
        if part[index] == "\\" and index + 1 < len(part):
            out.append((part[index + 1], True))
            index += 2
        else:
            out.append((part[index], False))
            index += 1
    return out


def _bracket_end(toks, start):
    """Where the `]` closing the `[` at `start` is, or None (the `[` is then a plain one). The
    first member, after an optional `!`, may be `]` itself, as in glob(3)."""
    index = start + 1
    if index < len(toks) and toks[index] == ("!", False):
        index += 1
    index += 1  # the first member, whatever it is
    while index < len(toks):
        if toks[index] == ("]", False):
            return index
        index += 1
    return None


def is_magic(toks):
    for index, (char, plain) in enumerate(toks):
        if plain:
            continue
        if char in "*?" or char == "[" and _bracket_end(toks, index) is not None:
            return True
    return False


def text(toks):
    """The name the characters spell, escapes undone."""
    return "".join(char for char, _ in toks)


def _bracket_regex(members, negated):
    parts = []
    index = 0
    while index < len(members):
        low = members[index][0]
        if index + 2 < len(members) and members[index + 1] == ("-", False):
            high = members[index + 2][0]
            if low <= high:  # a reversed range matches nothing, as in glob(3)
                parts.append(re.escape(low) + "-" + re.escape(high))
            index += 3
            continue
        parts.append(re.escape(low))
        index += 1
    if not parts:
        return "." if negated else "(?!)"
    return "[" + ("^" if negated else "") + "".join(parts) + "]"


def regex(toks):
    """The compiled pattern of one component: `*`, `?`, `[...]`/`[!...]` unless escaped."""
    out = []
    index = 0
    while index < len(toks):
        char, plain = toks[index]
        end = _bracket_end(toks, index) if char == "[" and not plain else None
        if plain or char not in "*?[" or (char == "[" and end is None):
            out.append(re.escape(char))
        elif char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        else:
            negated = toks[index + 1] == ("!", False)
            out.append(_bracket_regex(toks[index + 1 + negated : end], negated))
            index = end
        index += 1
    return re.compile("".join(out) + "\\Z", re.S)


def literal_runs(part):
    """The stretches of plain characters between a component's wildcards (for suggestions)."""
    toks = tokens(part)
    runs, current, index = [], [], 0
    while index < len(toks):
        char, plain = toks[index]
        end = _bracket_end(toks, index) if char == "[" and not plain else None
        if not plain and (char in "*?" or end is not None):
            runs.append("".join(current))
            current = []
            index = end if end is not None else index
        else:
            current.append(char)
        index += 1
    runs.append("".join(current))
    return [run for run in runs if run]


def plain_name(part):
    """The name a component spells (escapes undone) when it is no glob, else None."""
    toks = tokens(part)
    return None if is_magic(toks) else text(toks)


class Part:
    """One component, read once for every directory it is looked up in."""

    def __init__(self, typed):
        toks = tokens(typed)
        self.typed = typed
        self.magic = is_magic(toks)
        self.named = text(toks)
        self.escaped = "\\" in typed
        self.pattern = regex(toks) if self.magic else None
        self.hidden = toks[0][0] == "."  # a leading dot is matched only by one written, as glob's


def step(directory, part):
    """The paths one component (a Part) takes below `directory` ("" for the current one)."""
    if part.magic or part.escaped:
        typed = os.path.join(directory, part.typed)
        if os.path.lexists(typed):
            return [typed]  # the name exists as typed: that file, even with glob characters
    if not part.magic:
        named = os.path.join(directory, part.named)
        return [named] if os.path.lexists(named) else []
    try:
        names = os.listdir(directory or os.curdir)  # callers sort what they keep
    except OSError:
        return []
    match = part.pattern.match
    return [
        os.path.join(directory, name)
        for name in names
        if (part.hidden or not name.startswith(".")) and match(name)
    ]


def read_parts(parts):
    """Components as expand_below takes them: each read once (an empty one stays "")."""
    return [Part(typed) if typed else "" for typed in parts]


def expand_below(directory, parts):
    """The paths the components `parts` (read_parts) take below `directory`; an empty last
    component (a trailing slash) keeps directories only, written with the slash, as glob's."""
    paths = [directory]
    for index, part in enumerate(parts):
        if not part:
            if index == len(parts) - 1:
                paths = [os.path.join(path, "") for path in paths if os.path.isdir(path)]
            continue
        paths = [found for path in paths for found in step(path, part)]
        if not paths:
            break
    return paths


def expand_path(path):
    """The paths one pattern (`~` already expanded) takes, in no set order: sort them."""
    if os.path.lexists(path):
        return [path]  # the whole name exists as typed
    parts = path.split(os.sep)
    if path.startswith(os.sep):
        return expand_below(os.sep, read_parts(parts[1:]))
    return expand_below("", read_parts(parts))
