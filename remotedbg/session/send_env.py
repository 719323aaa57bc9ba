"""ssh_config's SendEnv and SetEnv, applied to each command as ssh applies them to its one.

ssh sends, on the channel of its command, an `env` request for every variable of its own
environment that a SendEnv pattern matches, then one for each SetEnv pair (a later request
for a name wins in sshd, so SetEnv beats SendEnv); sshd keeps the names its AcceptEnv allows
and drops the rest silently (no reply is asked for). remotedbg runs commands through a
resident executor (agent/executor.py) that outlives one command, so:
- the values are taken from the environment each command is typed in (a persistent session's
  daemon runs each client's line in that client's environment) and travel with the command;
- which names sshd accepts is learnt from the channel that starts the executor: the client
  sends the env requests there as ssh would, and the executor reports the names that arrived
  with the values sent (`EnvLearning`); a name never sent that way starts a fresh executor.
Pure: no I/O here.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

#: What sshd sets itself after the client's env requests (session.c do_setup_env): a client's
#: value for these never reaches the command, whatever AcceptEnv says.
SSHD_SETS = frozenset(
    {"USER", "LOGNAME", "HOME", "PATH", "MAIL", "SHELL", "SSH_CLIENT", "SSH_CONNECTION",
     "SSH_TTY", "SSH_ORIGINAL_COMMAND", "SSH_AUTH_SOCK"}
)  # fmt: skip


def _matches(name: str, patterns: list[str]) -> bool:
    """ssh's match_pattern_list for SendEnv: `*` and `?` (no classes); a later `-pattern`
    removes what earlier ones added (`ssh -G` has applied those already; kept for the parser
    fallback)."""
    matched = False
    for pattern in patterns:
        negative = pattern.startswith("-")
        body = pattern[1:] if negative else pattern
        if fnmatch.fnmatchcase(name, body.replace("[", "[[]")):
            matched = not negative
    return matched


def command_env(
    send_env: list[str], set_env: list[tuple[str, str]], environ: Mapping[str, str]
) -> dict[str, str]:
    """The variables ssh would send for a command typed in `environ`: SendEnv's matches of it,
    then SetEnv's pairs over them."""
    sent = {
        name: value
        for name, value in environ.items()
        if send_env and "=" not in name and _matches(name, send_env)
    }
    sent.update(set_env)
    return {name: value for name, value in sent.items() if name not in SSHD_SETS}


def env_request_bytes(env: Mapping[str, str]) -> dict[bytes, bytes]:
    """The env requests' names and values as the bytes of this machine's environment (a value
    that is not UTF-8 goes as it is, as ssh sends it)."""
    return {os.fsencode(name): os.fsencode(value) for name, value in env.items()}


@dataclass
class EnvLearning:
    """What a session knows of the server's AcceptEnv: the names sent on an executor's start
    channel (`probed`) and those that arrived (`accepted`). Acceptance depends on the name
    only (AcceptEnv patterns), so it holds for the connection's life."""

    probed: set[str] = field(default_factory=set)
    accepted: set[str] = field(default_factory=set)

    def unknown(self, env: Mapping[str, str]) -> bool:
        """Does `env` name a variable no executor start has tried (a fresh one must)?"""
        return not set(env) <= self.probed

    def learn(self, sent: Mapping[str, str], arrived: list[str]) -> None:
        self.probed |= set(sent)
        self.accepted |= set(arrived) & set(sent)

    def for_command(self, env: Mapping[str, str]) -> dict[str, str]:
        """The part of `env` the command sees: the names the server accepts."""
        return {name: value for name, value in env.items() if name in self.accepted}
