"""The exec route into containers: for a server in a container whose files this ssh user may
not read through /proc/PID/root, the engine scan runs inside the container through the
runtime's exec (`docker exec -i`, `podman exec -i`). What it finds joins the host's scan named
as the /proc route would name it (under the container's /proc/PID/root), and later reads of
those paths go through the same exec (Remote.route), so every later step reads the code the
server runs without knowing which route reached it."""

from __future__ import annotations

from typing import Any

from remotedbg.agent.containers import container_place
from remotedbg.errors import ContainerUnreachable
from remotedbg.remote import calls
from remotedbg.remote.primitives import Remote, add_prefix

SCAN = calls.ScanEngines
NOT_IN_THIS_RUNTIME = "no such container"  # docker's and podman's words for an unknown id


def _unread_containers(processes: list[dict]) -> dict[str, dict]:
    """Container id -> {"info", "pids"} for server processes whose container root is unreadable."""
    found: dict[str, dict] = {}
    for process in processes:
        info = process.get("container")
        if info and info.get("id") and not info.get("root_readable"):
            found.setdefault(info["id"], {"info": info, "pids": []})["pids"].append(process["pid"])
    return found


def scan_inside(remote: Remote, scan: calls.EngineScan, args: dict[str, Any]) -> None:
    """Add to `scan` the installs the exec route finds inside each container the host could not
    read; a refusal is added to the container's `why_unreadable`."""
    for container in _unread_containers(scan.processes or []).values():
        info, pids = container["info"], container["pids"]
        try:
            _may_exec(info)
            inner = remote.inside(info)
            inside = inner.ask(SCAN(args, roots=None, search_home=False))
        except ContainerUnreachable as refused:
            # a container the runtime this user reaches does not know (another user's podman
            # storage, another daemon) is somebody else's: listed, not a reason to give up
            elsewhere = NOT_IN_THIS_RUNTIME in str(refused).lower()
            for process in scan.processes:
                if process["pid"] in pids:
                    why = f"{info['why_unreadable']}; and {refused}"
                    process["container"]["elsewhere" if elsewhere else "why_unreadable"] = why
                    if elsewhere:
                        process["container"]["why_unreadable"] = None
            continue
        root = info["root"]
        remote.route(root, inner)
        label = info.get("name") or info["id"][:12]
        for install in inside.installs:
            running = bool(install.get("running"))
            placed = add_prefix(install, root)
            placed["running"] = list(pids) if running else []
            how = f"{info['runtime']} exec into container {label}"
            placed["how_found"] = [how] + list(install.get("how_found") or [])
            placed["container"] = dict(container_place(info, placed["path"]), route="exec")
            scan.installs.append(placed)
        for process in scan.processes:
            if process["pid"] in pids:
                process["container"]["route"] = "exec"
                process["container"]["why_unreadable"] = None
                process["installs"] = [
                    add_prefix(i["path"], root, "path")
                    for i in inside.installs
                    if i.get("running")
                ]


def _may_exec(info: dict) -> None:
    """podman keeps each user's containers in that user's own storage: run by anyone else it
    looks in theirs, and on the way creates it (~/.local/share/containers, a pause process).
    So podman is run only where this user's podman is set up already (its own storage, or a
    service it is pointed at); the route is reached only for a container whose root this user
    may not read, i.e. another user's."""
    if info.get("runtime") == "podman" and info.get("podman_state_here") is False:
        owner = info.get("runtime_uid")
        raise ContainerUnreachable(
            f"it belongs to the podman of uid {owner}, which this user's podman cannot reach "
            "(not run: it would create podman state for this user)"
        )


def unreadable_servers(processes: list[dict]) -> list[dict]:
    """Servers in containers whose engine code neither route could read: {pid, container, why}."""
    out = []
    for process in processes:
        info = process.get("container") or {}
        if info.get("why_unreadable"):
            label = info.get("name") or (info.get("id") or "?")[:12]
            out.append({"pid": process["pid"], "runtime": info.get("runtime"),
                        "container": label, "why": info["why_unreadable"]})  # fmt: skip
    return out


def unreadable_line(server: dict) -> str:
    return (
        f"server pid {server['pid']} in {server.get('runtime') or 'a'} container "
        f"{server['container']}: its engine code cannot be read: {server['why']}"
    )
