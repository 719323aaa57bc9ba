"""A container's log as its runtime keeps it, through `docker logs` / `podman logs` run on the
box: for a server that writes to the container's stdout when the runtime's log file is not
readable by the ssh user (docker's is root's; the docker group may still ask the daemon).
`command()` builds the command line, `process()` parses what it printed."""

from __future__ import annotations

import re
import shlex
from datetime import datetime
from typing import Any

from remotedbg.errors import RemoteCommandError
from remotedbg.remote.primitives import Remote

RUNTIMES = ("docker", "podman")
# both print RFC 3339 with nanoseconds before each line under --timestamps: docker in UTC
# ("...Z"), podman with the zone's offset ("...+00:00")
_STAMPED = re.compile(
    r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d) ?(.*)$", re.DOTALL
)


def command(runtime: str, container: str, lines: int | None, since: str | None) -> str:
    argv = [runtime, "logs", "--timestamps"]
    if lines is not None:
        argv += ["--tail", str(lines)]
    if since:
        argv += ["--since", since]
    # the container's stdout and stderr, interleaved as the runtime replays them
    return shlex.join([*argv, container]) + " 2>&1"


def _epoch(stamp: str, fraction: str | None, zone: str) -> float:
    zone = "+00:00" if zone == "Z" else zone if ":" in zone else zone[:3] + ":" + zone[3:]
    whole = datetime.fromisoformat(stamp + zone).timestamp()
    return whole + (float("0." + fraction) if fraction else 0.0)


def process(output: str, after: float | None = None) -> tuple[list[str], float | None, str | None]:
    """(lines, epoch of the last line, its timestamp text) of `logs --timestamps` output,
    without the timestamps; lines stamped at or before `after` are dropped (a poll's overlap)."""
    lines: list[str] = []
    last: float | None = after
    last_text: str | None = None
    keep = False
    for raw in output.splitlines():
        m = _STAMPED.match(raw)
        if not m:
            if keep:
                lines.append(raw)  # an unstamped line continues the one before it
            continue
        when = _epoch(m.group(1), m.group(2), m.group(3))
        keep = after is None or when > after
        if not keep:
            continue
        lines.append(m.group(4))
        last = when
        last_text = raw.split(" ", 1)[0]
    return lines, last, last_text


def _run(remote: Remote, runtime_log: dict, lines: int | None, since: str | None) -> str:
    text = command(runtime_log["runtime"], runtime_log["id"], lines, since)
    result = remote.session.run(text, label=text, timeout=60)
    if result.exit_status != 0:
        last = (result.stdout.strip().splitlines() or ["no output"])[-1]
        raise RemoteCommandError(
            f"{remote.session.name}: `{runtime_log['runtime']} logs` of "
            f"{runtime_log.get('name') or runtime_log['id'][:12]} failed: {last}"
        )
    return result.stdout


def tail(
    remote: Remote, runtime_log: dict, lines: int, since_s: float | None = None
) -> dict[str, Any]:
    since = f"{max(1, round(since_s))}s" if since_s else None
    got, last, last_text = process(_run(remote, runtime_log, lines, since))
    return {"path": runtime_log["how_found"], "lines": got, "offset": last,
            "since": last_text, "inode": None, "rotated": False}  # fmt: skip


def new_lines(remote: Remote, runtime_log: dict, after: float | None, since: str | None) -> dict:
    """Lines the runtime logged after the last one seen (the poll asks from that timestamp)."""
    got, last, last_text = process(_run(remote, runtime_log, None, since), after)
    return {"lines": got, "offset": last, "since": last_text or since, "inode": None,
            "rotated": False}  # fmt: skip


def runtime_log_of(server: dict) -> dict | None:
    """The runtime's log of the server's container, when it runs in one the box's docker or
    podman knows."""
    container = server.get("container") or {}
    if container.get("runtime") in RUNTIMES and container.get("id"):
        label = container.get("name") or container["id"][:12]
        return {"runtime": container["runtime"], "id": container["id"], "name": label,
                "how_found": f"{container['runtime']} logs {label}"}  # fmt: skip
    return None
