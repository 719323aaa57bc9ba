"""`--host` as typed: an ssh_config alias, `user@host[:port]`, `[ipv6][:port]`, or ssh's URI
form `ssh://[user@]host[:port]`. Read here only: by session.target (which refuses what is none of
these) and by the persistent-session client, which must stay light and never refuses (the command
it hands over reports a bad host itself)."""

from __future__ import annotations

import re

_HOST_SPEC = re.compile(
    r"^(?:(?P<user>[^@\s]+)@)?(?:\[(?P<ipv6>[^\]]+)\]|(?P<host>[^:@\s\[\]]+))(?::(?P<port>\d+))?$"
)


def split_host_spec(spec: str) -> tuple[str | None, str, int | None] | None:
    """(user, host, port) of a host as typed, or None when it is none of the forms (an option
    spelled where a host goes counts as none). The port is not range-checked."""
    spec = spec.strip()
    if spec.startswith("ssh://"):
        spec = spec[len("ssh://") :].rstrip("/")
    match = _HOST_SPEC.match(spec)
    if not match or spec.startswith("-"):
        return None
    port = int(match.group("port")) if match.group("port") else None
    return match.group("user"), match.group("ipv6") or match.group("host"), port


# `slurm:JOB/*` (every node of a job) and `slurm:KEY=VALUE[:...]` (the jobs squeue selects):
# Slurm host forms that name nodes known only once squeue is asked (session/slurm.py)
_SLURM_SELECTION = re.compile(r"^slurm:(?:[^/@]*=|[^/@]*/\*(?:@|$))")


def is_slurm_selection(spec: str) -> bool:
    """Whether `spec` is a Slurm form that selects several nodes by asking squeue: a fleet's
    form, read without a cluster (the persistent-session client reads it too)."""
    return bool(_SLURM_SELECTION.match(spec.strip()))
