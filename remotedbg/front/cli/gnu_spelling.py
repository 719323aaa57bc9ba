"""GNU spellings of the file commands' options (`find -name`, `grep -rn`), rewritten to ours
before typer parses the command line: click would read `-name` as `-n ame`. A spelling that
means the same as one of ours is rewritten (or dropped, when ours always does it); one that
means something else, or that we lack, is refused in one line naming what to use. Pure: words
in, words out."""

from __future__ import annotations

import re
from typing import Any

from typer.core import TyperOption

from remotedbg.errors import UsageError

#: command -> GNU spelling -> our words for it ([]: ours always does this, the word is dropped)
SAME: dict[str, dict[str, list[str]]] = {
    "find": {
        "-name": ["--name"],
        "-type": ["--type"],
        "-maxdepth": ["--max-depth"],
        "-print": [],
    },
    "grep": {
        "-r": [],
        "-R": [],
        "--recursive": [],
        "--dereference-recursive": [],
        "-n": [],
        "--line-number": [],
        "-E": [],
        "--extended-regexp": [],
        "-I": [],
    },
}

_FIND_OURS = "use --name, --type, --max-depth or --limit (or: remotedbg run -- find ...)"
_GREP_CONTEXT = "use -C N (N lines before and after)"
_GREP_ELSE = "not supported here (or: remotedbg run -- grep ...)"

#: command -> GNU spelling -> why it is refused and what to use
REFUSED: dict[str, dict[str, str]] = {
    "find": {
        "-o": "names are ORed already: repeat --name",
        "-or": "names are ORed already: repeat --name",
        "-iname": "names match case-sensitively: use --name with [Xx] classes, as '*[Ee]agle*'",
    },
    "grep": {
        "-v": "inverted matching is " + _GREP_ELSE,
        "-A": _GREP_CONTEXT,
        "-B": _GREP_CONTEXT,
        "-c": "counting is " + _GREP_ELSE,
        "-o": "printing only the match is " + _GREP_ELSE,
        "-L": "listing files without a match is " + _GREP_ELSE,
        "-e": "give PATTERN as the first argument (after --, when it starts with -)",
    },
}

#: GNU find's other tests, actions and options: click would misread them (-newer as -n ewer)
GNU_FIND_ELSE = frozenset(
    "-a -and -not -amin -anewer -atime -cmin -cnewer -ctime -delete -depth -empty -exec"
    " -execdir -executable -false -fls -follow -fprint -fprint0 -fprintf -fstype -gid -group"
    " -ilname -inum -ipath -iregex -iwholename -links -lname -ls -mindepth -mmin -mount -mtime"
    " -newer -nogroup -nouser -ok -okdir -path -perm -print0 -printf -prune -quit -readable"
    " -regex -samefile -size -true -uid -used -user -wholename -writable -xdev -xtype".split()
)

#: command -> letter of a bundle (`-rni`) -> our flag (None: dropped, as in SAME)
BUNDLES: dict[str, dict[str, str | None]] = {
    "grep": {
        "r": None,
        "R": None,
        "n": None,
        "E": None,
        "I": None,
        "i": "-i",
        "w": "-w",
        "l": "-l",
        "F": "-F",
        "C": "-C",
    },
}

_BUNDLE = re.compile(r"^-[A-Za-z][A-Za-z0-9]+$")


def value_options(command: Any) -> set[str]:
    """The spellings of a command's options that take a value (the next word is theirs)."""
    return {
        name
        for param in command.params
        if isinstance(param, TyperOption) and not param.is_flag and not param.count
        for name in param.opts
    }


def ours(command: str, words: list[str], takes_value: set[str]) -> list[str]:
    """The arguments of `command` (the words after its name) with GNU spellings rewritten.
    Raises UsageError for a spelling that means something else here. Words after `--`, and
    the value of an option that takes one, are left as they are."""
    same, refused = SAME.get(command, {}), REFUSED.get(command, {})
    if not same and not refused:
        return list(words)
    out: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            out.extend(words[index - 1 :])
            break
        if word in refused:
            raise UsageError(f"{command} {word}: {refused[word]}")
        if word in same:
            rewritten = same[word]
        elif command == "find" and word in GNU_FIND_ELSE:
            # click would read it as -n with a value (-newer as --name ewer): never silently
            raise UsageError(f"find {word}: GNU find's {word} is not supported here; {_FIND_OURS}")
        elif word[:2] in takes_value:  # an option of ours, its value attached (-Hbox, -C2)
            rewritten = [word]
        elif command in BUNDLES and _BUNDLE.match(word):
            rewritten = _unbundle(command, word)
        else:
            rewritten = [word]
        out.extend(rewritten)
        if rewritten and rewritten[-1] in takes_value and index < len(words):
            out.append(words[index])  # the option's value, whatever it looks like
            index += 1
    return out


def _unbundle(command: str, word: str) -> list[str]:
    """`-rni` as the flags it bundles; `-rnC2` ends with -C's value."""
    letters = BUNDLES[command]
    flags: list[str] = []
    for position, letter in enumerate(word[1:], 1):
        if letter.isdigit() and flags and flags[-1] == "-C":
            flags[-1] = "-C" + word[position:]
            break
        if f"-{letter}" in REFUSED.get(command, {}):
            raise UsageError(f"{command} -{letter} (in {word}): {REFUSED[command]['-' + letter]}")
        if letter not in letters:
            raise UsageError(
                f"{command} -{letter} (in {word}): not an option here; remotedbg {command} --help"
            )
        flag = letters[letter]
        if flag:
            flags.append(flag)
    return flags


def typed_as_ours(group: Any, words: list[str], root_flags: set[str]) -> list[str]:
    """A whole command line (root flags, command name, its words) with the command's GNU
    spellings rewritten; lines of other commands come back as they are."""
    at = next((i for i, word in enumerate(words) if word not in root_flags), len(words))
    name = words[at] if at < len(words) else ""
    command = group.commands.get(name) if name in SAME or name in REFUSED else None
    if command is None:
        return list(words)
    return words[: at + 1] + ours(name, words[at + 1 :], value_options(command))
