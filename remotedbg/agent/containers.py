"""Processes inside containers, seen from the host: which container, how to reach its files, and
where its paths are on the host. Runs on the box; read-only; starts nothing.

A process runs in a container when its mount namespace differs from the agent's
(`/proc/PID/ns/mnt` against `/proc/self/ns/mnt`; `/proc/1` is not compared: on some hosts even
root may not read it) or, when that link is unreadable, when its cgroup names a container
(podman `libpod-<id>`, docker `docker-<id>.scope` or `/docker/<id>`, containerd, CRI-O).

Its files are read through `/proc/PID/root`, which the kernel lets through only to the process's
own user or root (a ptrace-read check); a bind mount whose source the host can see is translated
to the host path (from `/proc/PID/mountinfo` and the agent's own mountinfo, matched on the
device), so `--model-path /models/x` names the checkpoint where it lives on the host.
"""

from __future__ import annotations

import json
import os
import re

_CGROUP_IDS = (
    ("podman", re.compile(r"libpod-(?:conmon-)?([0-9a-f]{64})")),
    ("docker", re.compile(r"docker[-/]([0-9a-f]{64})")),
    ("containerd", re.compile(r"cri-containerd[-:]([0-9a-f]{64})")),
    ("cri-o", re.compile(r"crio[-:]([0-9a-f]{64})")),
)
_MAX_LINKS = 40


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def _read(path, limit=1 << 20):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def container_id(cgroup_text):
    """(runtime, id) from a /proc/PID/cgroup text, or (None, None)."""
    for runtime, pattern in _CGROUP_IDS:
        m = pattern.search(cgroup_text or "")
        if m:
            return runtime, m.group(1)
    return None, None


def parse_mountinfo(text):
    """[{"device", "root", "mount_point", "fstype", "source"}] of a mountinfo text (proc(5))."""
    mounts = []
    for line in (text or "").splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5:
            continue
        tail = right.split()
        mounts.append({
            "device": fields[2],
            "root": _unescape(fields[3]),
            "mount_point": _unescape(fields[4]),
            "fstype": tail[0] if tail else "",
            "source": _unescape(tail[1]) if len(tail) > 1 else "",
        })  # fmt: skip
    return mounts


def _unescape(field):
    # mountinfo escapes space, tab, newline and backslash as \040, \011, \012, \134
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _under(path, top):
    return path == top or path.startswith(top.rstrip("/") + "/")


def binds(container_mounts, host_mounts):
    """The container's mounts whose source is visible on the host: [{"container", "host"}],
    longest container path first. A mount's `root` is its path inside the source filesystem;
    the host sees that filesystem at the mount point of a host mount of the same device whose
    root contains it."""
    out = []
    for mount in container_mounts:
        if mount["mount_point"] == "/" or mount["fstype"] in ("proc", "sysfs",
                                                               "devpts", "mqueue", "cgroup",
                                                               "cgroup2", "overlay"):  # fmt: skip
            continue
        for host in host_mounts:
            if host["device"] != mount["device"] or not _under(mount["root"], host["root"]):
                continue
            rest = mount["root"][len(host["root"].rstrip("/")) :]
            out.append({"container": mount["mount_point"],
                        "host": host["mount_point"].rstrip("/") + rest or "/"})  # fmt: skip
            break
    out.sort(key=lambda b: len(b["container"]), reverse=True)
    return out


def conmons():
    """[(argv, uid)] of the conmon processes podman keeps beside its containers (their command
    lines are readable by anyone): one walk of /proc, which a scan shares between servers."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        raw = _read("/proc/%s/cmdline" % entry, 65536)
        if raw and "conmon" in raw.split("\0", 1)[0]:
            out.append((raw.split("\0"), process_uid(int(entry))))
    return out


def _conmon(container, found=None):
    """The command line and uid of the conmon process beside a container: it carries `-c ID`,
    `-n NAME` and `-l k8s-file:PATH` (the container's log); its uid is the user whose podman
    (and storage) the container belongs to. `found`: conmons() already walked."""
    for argv, uid in conmons() if found is None else found:
        if container in argv:
            return argv, uid
    return [], None


def _flag(argv, *flags):
    for flag in flags:
        if flag in argv and argv.index(flag) + 1 < len(argv):
            return argv[argv.index(flag) + 1]
    return None


def runtime_log_of(info):
    """{"path", "how_found", "format"} of the log file the runtime keeps of the container's
    stdout/stderr (podman k8s-file, docker json-file), when it can be read; else None."""
    if info.get("runtime") == "podman" and info.get("id"):
        value = info.get("log_option") or ""  # conmon's -l, read once by container_info
        path = value[len("k8s-file:") :] if value.startswith("k8s-file:") else value
        if path.startswith("/") and os.access(path, os.R_OK):
            return {"path": path, "how_found": "podman log (conmon -l)", "format": "k8s-file"}
    if info.get("runtime") == "docker" and info.get("id"):
        path = "/var/lib/docker/containers/%s/%s-json.log" % (info["id"], info["id"])
        if os.access(path, os.R_OK):
            return {"path": path, "how_found": "docker json-file log", "format": "json-file"}
    return None


def _podman_image(bundle, container):
    """The image name podman recorded for the container: its storage's containers.json (the
    directory above the bundle `.../overlay-containers/ID/userdata`), readable by root."""
    if not bundle:
        return None
    listing = _read(os.path.join(os.path.dirname(os.path.dirname(bundle)), "containers.json"))
    try:
        for entry in json.loads(listing) if listing else []:
            if entry.get("id") == container:
                return json.loads(entry.get("metadata") or "{}").get("image-name")
    except (ValueError, AttributeError, TypeError):
        return None
    return None


def _docker_name(container):
    config = _read("/var/lib/docker/containers/%s/config.v2.json" % container)
    try:
        doc = json.loads(config) if config else {}
    except ValueError:
        return None, None
    return (doc.get("Name") or "").lstrip("/") or None, (doc.get("Config") or {}).get("Image")


def container_info(pid, shared=None):
    """None when the process shares the agent's mount namespace; else what is known of its
    container and how to reach its files. `shared`: a dict a scan keeps across its servers
    (the conmon processes, walked once)."""
    own_ns = _readlink("/proc/self/ns/mnt")
    its_ns = _readlink("/proc/%d/ns/mnt" % pid)
    runtime, cid = container_id(_read("/proc/%d/cgroup" % pid, 65536))
    if its_ns is not None and its_ns == own_ns:
        return None
    if its_ns is None and cid is None:
        return None  # nothing says it is elsewhere
    root = "/proc/%d/root" % pid
    readable = os.access(root + "/", os.R_OK | os.X_OK) and _readlink(root) is not None
    name = image = log_option = owner = None
    if runtime == "podman" and cid:
        if shared is not None and "conmons" not in shared:
            shared["conmons"] = conmons()
        conmon, owner = _conmon(cid, None if shared is None else shared["conmons"])
        name = _flag(conmon, "-n", "--name")
        image = _podman_image(_flag(conmon, "-b", "--bundle"), cid)
        log_option = _flag(conmon, "-l", "--log-path")
    elif runtime == "docker" and cid:
        name, image = _docker_name(cid)
    container_mounts = parse_mountinfo(_read("/proc/%d/mountinfo" % pid))
    host_mounts = parse_mountinfo(_read("/proc/self/mountinfo"))
    info = {
        "pid": pid,
        "runtime": runtime,
        "id": cid,
        "name": name,
        "image": image,
        "root": root,
        "root_readable": bool(readable),
        "binds": binds(container_mounts, host_mounts),
        "log_option": log_option,
        "runtime_uid": owner,  # podman: whose podman (and storage) the container is in
        "podman_state_here": _podman_state_here(),
        "why_unreadable": None,
        "own_network": _differs("/proc/%d/ns/net" % pid, "/proc/self/ns/net"),
    }
    if not readable:
        info["why_unreadable"] = (
            "%s is not readable: the server runs as another user (uid %s) and the kernel lets "
            "only that user or root read a process's root" % (root, process_uid(pid))
        )
    return info


def _podman_state_here():
    """Whether this user's podman is set up already, so running it creates nothing: a remote
    service it talks to (CONTAINER_HOST, as a docker group's socket) or its own storage."""
    if os.environ.get("CONTAINER_HOST") or os.environ.get("CONTAINER_CONNECTION"):
        return True
    home = os.path.expanduser("~")
    return os.path.isdir(os.path.join(home, ".local/share/containers")) or os.path.isdir(
        os.path.join(home, ".config/containers")
    )


def _differs(link, own):
    """Whether the process has a namespace of its own (None: not readable, as for ns/mnt)."""
    theirs = _readlink(link)
    return None if theirs is None else theirs != _readlink(own)


def process_uid(pid):
    try:
        return os.stat("/proc/%d" % pid).st_uid
    except OSError:
        return "?"


def host_path(info, path):
    """Where a path of the container is on the host: through a bind mount when the host sees
    its source, else through /proc/PID/root (when readable), else None."""
    if not path or not path.startswith("/"):
        return None
    for bind in info.get("binds") or []:
        if _under(path, bind["container"]):
            return bind["host"].rstrip("/") + path[len(bind["container"].rstrip("/")) :] or "/"
    if info.get("root_readable"):
        return info["root"] + path
    return None


def real_path(path):
    """os.path.realpath, except that a path under /proc/PID/root resolves its symlinks inside
    that root (the kernel shows the root link itself as "/", which realpath would follow out of
    the container)."""
    m = re.match(r"^(/proc/\d+/root)(/.*)?$", path or "")
    if not m:
        return os.path.realpath(path)
    root, rest = m.group(1), m.group(2) or "/"
    parts = [p for p in rest.split("/") if p]
    resolved = []
    links = 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        candidate = root + "/" + "/".join(resolved + [part])
        target = _readlink(candidate)
        if target is None:
            resolved.append(part)
            continue
        links += 1
        if links > _MAX_LINKS:
            return candidate  # a symlink loop: stop where it starts
        if target.startswith("/"):
            resolved = []
        parts = [p for p in target.split("/") if p] + parts
    return root + "/" + "/".join(resolved) if resolved else root


def container_path(info, host):
    """The container's own name for a host path (the inverse of host_path), or None."""
    if _under(host, info["root"]):
        return host[len(info["root"]) :] or "/"
    for bind in info.get("binds") or []:
        if _under(host, bind["host"].rstrip("/") or "/"):
            return bind["container"].rstrip("/") + host[len(bind["host"].rstrip("/")) :]
    return None


def container_place(info, host):
    """What a finding says about a path of a container: which container, and both names."""
    return {"runtime": info.get("runtime"), "id": (info.get("id") or "")[:12] or None,
            "name": info.get("name"), "image": info.get("image"),
            "path_in_container": container_path(info, host), "route": "proc"}  # fmt: skip
