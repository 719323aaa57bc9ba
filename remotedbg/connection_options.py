"""The connection options, declared once: flags, value, default, variable, help, and whether a
persistent session serves only its own value of it. The command line's options
(front/cli/context.py), the defaults a variable or the config file may give (settings.py) and
the options that key a persistent session (persist/protocol.py) are read from here. Stdlib
only: the persistent-session client reads it before anything else is imported."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ConnectionOption:
    name: str  # the parameter (ConnectOptions' field where it is one; config.toml's key)
    flags: tuple[str, ...]
    kind: Any  # the value as the command line reads it
    default: Any  # on the command line (None: from ssh_config, a variable or built in)
    help: str
    envvar: str | None = None  # a variable (and config.toml) may set it ...
    built_in: Any = None  # ... and this is its value when nothing does (`remotedbg config`)
    metavar: str | None = None
    min: float | None = None
    max: float | None = None
    keys_session: bool = False  # a persistent session serves only the value it was opened with

    @property
    def setting_kind(self) -> type:
        """The type of a value from a variable or the config file."""
        return float if self.kind is float else str


OPTIONS: tuple[ConnectionOption, ...] = (
    ConnectionOption(
        "host", ("--host", "-H"), str, "",
        "ssh_config alias, user@host[:port], 'local', or a Slurm job slurm:JOB, "
        "slurm:JOB/NODE, slurm:JOB@LOGIN; playbooks take several, comma-separated, or the "
        "nodes of Slurm jobs: 'slurm:JOB/*', slurm:name=NAME.",
        envvar="REMOTEDBG_HOST", built_in="",
    ),
    ConnectionOption(
        "ssh_config", ("--ssh-config",), str | None, None,
        "ssh_config file (default ~/.ssh/config).",
        envvar="REMOTEDBG_SSH_CONFIG", built_in="~/.ssh/config", keys_session=True,
    ),
    ConnectionOption(
        "identity", ("--identity", "-i"), list[str] | None, None,
        "Private key file (repeatable).", keys_session=True,
    ),
    ConnectionOption(
        "user", ("--user", "-l"), str | None, None, "Remote user (ssh -l).", keys_session=True
    ),
    ConnectionOption(
        "port", ("--port", "-p"), int | None, None, "Remote SSH port (ssh -p).",
        min=1, max=65535, keys_session=True,
    ),
    ConnectionOption(
        "connect_timeout", ("--connect-timeout",), float, 10.0, "Seconds to connect.",
        envvar="REMOTEDBG_CONNECT_TIMEOUT", built_in=10.0, min=0.1,
    ),
    ConnectionOption(
        "timeout", ("--timeout",), float, 120.0, "Seconds per remote command.",
        envvar="REMOTEDBG_TIMEOUT", built_in=120.0, min=0.1,
    ),
    ConnectionOption(
        "accept_new_host_key", ("--accept-new-host-key",), bool, False,
        "Record the key of a host never seen before (OpenSSH accept-new). A changed key is "
        "always refused.",
    ),
    ConnectionOption(
        "transport", ("--transport",), str, "auto",
        "How to reach the host: paramiko, or the system ssh client (auto: ssh when the "
        "ssh_config needs what paramiko cannot do, e.g. CertificateFile).",
        envvar="REMOTEDBG_TRANSPORT", built_in="auto", metavar="auto|ssh|paramiko",
    ),
    ConnectionOption(
        "container", ("--container",), str | None, None,
        "Work inside this container of the host (name or id), through its runtime's exec "
        "(docker or podman): paths, processes and ports as it sees them.",
        metavar="NAME", keys_session=True,
    ),
    ConnectionOption(
        "persist", ("--persist",), float, 600.0,
        "Keep the connection open in the background for the next command, until idle this "
        "long (0: do not).",
        envvar="REMOTEDBG_PERSIST", built_in=600.0, metavar="SECONDS", min=0,
    ),
    ConnectionOption(
        "no_persist", ("--no-persist",), bool, False,
        "Neither use nor leave a background connection (same as --persist 0).",
    ),
    ConnectionOption(
        "python", ("--python",), str | None, None,
        "Remote Python interpreter for in-place checks (default python3).",
        envvar="REMOTEDBG_PYTHON", built_in="python3",
    ),
)  # fmt: skip
BY_NAME = {option.name: option for option in OPTIONS}


def flags_of(name: str) -> tuple[str, ...]:
    return BY_NAME[name].flags


#: The flags whose value a persistent session is opened with, in the order of OPTIONS.
KEY_FLAGS: tuple[str, ...] = tuple(f for o in OPTIONS if o.keys_session for f in o.flags)
