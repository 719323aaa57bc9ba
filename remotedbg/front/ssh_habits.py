"""Command lines as ssh users type them, read or answered before typer parses them: connection
options before the command (`remotedbg -H box run -- ls`, as `ssh -l me box`), ssh's own form
(`remotedbg box nvidia-smi`), a shell command for a command name (`remotedbg ls`), and a `~`
the local shell expanded. Pure and stdlib-only: the persistent-session client reads the moved
options before anything heavy is imported."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable

#: The connection options every remote command takes (front/cli/context.py
#: CONNECTION_PARAMETERS; tests/test_first_hour.py keeps the two alike): those with a value,
#: and the flags.
CONNECTION_VALUES = frozenset({
    "-H", "--host", "-i", "--identity", "-l", "--user", "-p", "--port", "--ssh-config",
    "--connect-timeout", "--timeout", "--transport", "--container", "--persist", "--python",
})  # fmt: skip
CONNECTION_FLAGS = frozenset({"--accept-new-host-key", "--no-persist", "--json"})
_SHORT_VALUES = frozenset(o for o in CONNECTION_VALUES if len(o) == 2)
_PATHLESS = CONNECTION_VALUES - {"-l"}  # after a shell command, `-l` is its own (`ls -l`)
#: Commands whose own short options are spelled as a connection option's: the connection
#: option, moved there, is given its long name (`-l me grep ...` is `grep ... --user me`).
OWN_SHORTS = {"grep": {"-l": "--user", "-i": "--identity"}}
#: Commands whose options end at their first argument (click's allow_interspersed_args=False):
#: moved options go right after the name, never among the remote command's words.
OPTIONS_FIRST = frozenset({"run"})


def _leading(words: list[str], at: int) -> int:
    """How many words from `at` are one connection option (with its value), 0 when none."""
    word = words[at]
    if word in CONNECTION_FLAGS:
        return 1
    if word in CONNECTION_VALUES:
        return 2 if at + 1 < len(words) else 0
    if word.startswith("--") and word.partition("=")[0] in CONNECTION_VALUES:
        return 1  # --host=box
    if word[:2] in _SHORT_VALUES and len(word) > 2:
        return 1  # -Hbox
    return 0


def options_after_command(words: list[str], root_flags: frozenset[str]) -> list[str]:
    """`-H box run -- ls` as `run -H box -- ls`: connection options typed before the command
    name (mixed with the root's own flags) moved to where the command reads them: after `run`,
    else before the command's `--`, else at the end. Any other line comes back as it is."""
    root: list[str] = []
    moved: list[str] = []
    at = 0
    while at < len(words):
        if words[at] in root_flags:
            root.append(words[at])
            at += 1
            continue
        taken = _leading(words, at)
        if not taken:
            break
        moved += words[at : at + taken]
        at += taken
    if not moved or at == len(words) or words[at].startswith("-"):
        return list(words)  # nothing moved, or no command to move them to: typer says so
    command, rest = words[at], words[at + 1 :]
    moved = _long_where_taken(moved, OWN_SHORTS.get(command, {}))
    if command in OPTIONS_FIRST:
        return [*root, command, *moved, *rest]
    end = rest.index("--") if "--" in rest else len(rest)
    return [*root, command, *rest[:end], *moved, *rest[end:]]


def _long_where_taken(moved: list[str], taken: dict[str, str]) -> list[str]:
    """The moved options, a short one the command uses for itself given its long name."""
    out: list[str] = []
    for word in moved:
        if word[:2] in taken and (out[-1:] == [] or out[-1] not in CONNECTION_VALUES):
            out += [taken[word[:2]], *([word[2:]] if len(word) > 2 else [])]
        else:
            out.append(word)
    return out


#: Shell commands people type for ours: what to use instead ({host}, {path} and {glob} filled in
#: from the command line, quoted, when it gives them).
SHELL_COMMANDS = {
    "ls": "to list files on the box: remotedbg glob -H {host} {glob} (or remotedbg find -H {host}"
    " {path} --max-depth 1)",
    "cp": "to copy files from the box: remotedbg get -H {host} {path} ./",
    "tail": "to read a file's end: remotedbg cat -H {host} --tail 50 {path} (a server's log: "
    "remotedbg logs -H {host})",
    "head": "to read a file: remotedbg cat -H {host} {path}",
    "ssh": "for a shell on the box: remotedbg repl -H {host} (one command: remotedbg run -H "
    "{host} -- CMD)",
}
SHELL_COMMANDS.update(dir=SHELL_COMMANDS["ls"], ll=SHELL_COMMANDS["ls"], scp=SHELL_COMMANDS["cp"],
                      less=SHELL_COMMANDS["head"], shell=SHELL_COMMANDS["ssh"])  # fmt: skip


def _value_of(words: list[str], *names: str) -> str | None:
    """The value of the first of `names` before `--` (`-H box`, `--host=box`, `-Hbox`)."""
    for at, word in enumerate(words):
        if word == "--":
            return None
        for name in names:
            if word == name and at + 1 < len(words):
                return words[at + 1]
            if word.startswith(name + "=") and name.startswith("--"):
                return word[len(name) + 1 :]
            if len(name) == 2 and word.startswith(name) and len(word) > 2:
                return word[2:]
    return None


def _shell_advice(name: str, rest: list[str], host: str | None) -> str:
    # the shell command's own flags stay its own (`ls -l` is no --user): only -H and the like
    # take the next word
    paths = [w for at, w in enumerate(rest) if not w.startswith("-")
             and (at == 0 or rest[at - 1] not in _PATHLESS)]  # fmt: skip
    path = (paths[0] if name in ("cp", "scp") else paths[-1]) if paths else ""
    return SHELL_COMMANDS[name].format(
        host=shlex.quote(host) if host else "HOST",
        path=shlex.quote(path) if path else "PATH",
        glob=shlex.quote(path.rstrip("/") + "/*") if path else "'PATH/*'",
    )


def _split_connection(words: list[str]) -> tuple[list[str], list[str]]:
    """(the connection options with their values, the other words) of words before `--`."""
    options, others, at = [], [], 0
    while at < len(words) and words[at] != "--":
        taken = _leading(words, at)
        (options if taken else others).extend(words[at : at + (taken or 1)])
        at += taken or 1
    return options, others + words[at:]


def mistaken_form(
    words: list[str],
    commands: list[str],
    root_flags: frozenset[str],
    hosts: Callable[[], list[str]] = list,
) -> str | None:
    """What to type instead, when the command line (as typed: connection options may lead) has
    no command of ours where one goes but reads as ssh's `[user@]HOST [COMMAND]` (a lone word:
    when it is one of `hosts`, the ssh_config's aliases), a shell command (`ls`), a remote
    command after -H (`-H box nvidia-smi`), or options alone; None for a command of ours, a
    typo of one (click suggests it), an option, or nothing at all."""
    leading, at = [], 0
    while at < len(words):
        taken = 1 if words[at] in root_flags else _leading(words, at)
        if not taken:
            break
        leading += [] if words[at] in root_flags else words[at : at + taken]
        at += taken
    given, after = shlex.join(leading), words[at:]
    if leading and after[:1] == ["--"] and after[1:]:
        right = f"remotedbg run {given} -- {shlex.join(after[1:])}"
        return f"no command given; to run one on the box: {right}"
    if leading and (not after or after[0].startswith("-")):
        return f"{given}: name the command, e.g. remotedbg run {given} -- CMD" \
            " (remotedbg --help lists the commands)"  # fmt: skip
    if not after or after[0] in commands or after[0].startswith("-"):
        return None
    first, rest = after[0], after[1:]
    host = _value_of(leading, "-H", "--host") or _value_of(rest, "-H", "--host")
    if first in SHELL_COMMANDS:
        return f"no command {first!r}; {_shell_advice(first, rest, host)}"
    import difflib  # here: the persistent-session client imports this module, never needs it

    if difflib.get_close_matches(first, commands):
        return None  # a typo of ours: click's "Did you mean" names it
    if host is not None:  # `remotedbg -H box nvidia-smi`: `run --` left out
        options, command = _split_connection(rest)
        right = shlex.join(["remotedbg", "run", *leading, *options, "--", first, *command])
        return f"no command {first!r} (remotedbg --help lists them); to run it on {host}: {right}"
    if "@" in first or rest or first in hosts():  # ssh's `[user@]host [command]`
        command = rest[1:] if rest[:1] == ["--"] else rest
        if command:
            right = shlex.join(["remotedbg", "run", *leading, "-H", first, "--", *command])
            return f"no command {first!r}; to run a command on a host (ssh {first} CMD): {right}"
        right = shlex.join(["remotedbg", "repl", *leading, "-H", first])
        return f"no command {first!r}; for a shell on a host (ssh {first}): {right}"
    return None


def local_home_hint(path: str) -> str:
    """A `no match` on the box for a path under the local home: the local shell most likely
    expanded an unquoted `~` before remotedbg saw it. '' when the path is not under it."""
    home = os.path.expanduser("~").rstrip("/")
    if not home or path != home and not path.startswith(home + "/"):
        return ""
    quoted = "~" + path[len(home) :]
    return f"your shell expanded ~ to {home}; quote it ('{quoted}') to mean the box's home"
