"""A server's log, read in place: where it is, its last lines (or those since a time), and what
was appended since the last read. Runs on the box; read-only; nothing is left running (`logs -f`
polls `read_log_from` instead of starting `tail -f`).

`server_logs(args)` with {"pid": optional int, "log": optional path, "knowledge": {...}} returns
    {"servers": [{"pid", "engine", "cmdline", "log": path | None, "how_found", "note"}]}
`read_log_tail(args)` with {"path", "lines": N, "since_s": seconds back | None, "max_bytes"}
    returns {"path", "lines": [...], "offset": end offset, "inode", "now", "partial": bool}
`read_log_from(args)` with {"path", "offset", "inode", "max_bytes"}
    returns {"lines": [...], "offset", "inode", "rotated": bool}; only whole lines are returned,
    a line still being written waits for the next read.
"""

from __future__ import annotations

import calendar
import json
import os
import re
import stat
import time

from remotedbg.agent.containers import container_info, runtime_log_of
from remotedbg.agent.engine_process import listening_ports
from remotedbg.agent.redact import redact_argv, redact_cmdline
from remotedbg.agent.safetensors_file import MissingInput
from remotedbg.agent.server_scan import (
    SERVER_WRAPPERS,
    _log_links,
    _owner_note,
    _uid,
    chunks_backwards,
    find_processes,
)

# SGLang: "[2025-08-01 12:00:00 TP0] Decode batch. ..." (also without " TP0")
_SGLANG_STAMP = re.compile(r"^\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
# TokenSpeed 0.1.1 colours its lines: "\x1b[38;20m[2026-12-06 09:00:00 None] - INFO - ..."
# (tokenspeed/runtime/utils/common.py:1139-1151); LMDeploy's stat line: "[2026-12-06 09:00:00
# DP0] Avg thr ..." (lmdeploy/metrics/loggers.py:110-113)
_COLOUR = re.compile(r"^\x1b\[[0-9;]*m")
# vLLM: "INFO 08-01 12:00:00 [loggers.py:118] SpecDecoding metrics: ..." (no year)
_VLLM_STAMP = re.compile(r"^(?:\(\w+ pid=\d+\)\s+)?[A-Z]+ (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
# podman's k8s-file log: "2026-11-29T16:36:12.302275495+00:00 stdout F <line>" (P: partial)
_K8S_FILE = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d+)?(Z|[+-]\d\d:\d\d)"
    r" (?:stdout|stderr) [FP] "
)


def plain_line(text):
    """A line as the server printed it: the runtime's wrapping (podman k8s-file prefix, docker
    json-file record) removed; (line, epoch seconds of the runtime's stamp or None)."""
    m = _K8S_FILE.match(text)
    if m:
        fields = [int(v) for v in m.groups()[:6]]
        zone = m.group(7)
        offset = (
            0
            if zone == "Z"
            else (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
        )
        return text[m.end() :], calendar.timegm(tuple(fields) + (0, 0, 0)) - offset
    if text.startswith('{"log":'):
        try:
            record = json.loads(text)
            return str(record.get("log", "")).rstrip("\n"), None
        except ValueError:
            pass
    return text, None


def line_time(line, year):
    """The epoch seconds (box-local time) a log line was written, or None if it has no stamp."""
    line = _COLOUR.sub("", line, count=1)
    m = _SGLANG_STAMP.match(line)
    if m:
        fields = [int(v) for v in m.groups()]
    else:
        m = _VLLM_STAMP.match(line)
        if not m:
            return None
        fields = [year] + [int(v) for v in m.groups()]
    try:
        return time.mktime((fields[0], fields[1], fields[2], fields[3], fields[4], fields[5],
                            0, 0, -1))  # fmt: skip
    except (OverflowError, ValueError):
        return None


def server_logs(args):
    knowledge = args.get("knowledge") or {}
    wanted = args.get("pid")
    out = []
    if args.get("log"):
        path = os.path.expanduser(args["log"])
        if not os.path.exists(path):
            raise MissingInput("%s: no such log file" % path)
        if not os.path.isfile(path):
            raise MissingInput("%s: not a regular file (a FIFO or device is not read)" % path)
        out.append({"pid": None, "engine": None, "cmdline": None, "log": path,
                    "how_found": "--log", "note": None})  # fmt: skip
        return {"servers": out}
    wrappers = tuple(knowledge.get("server_wrappers") or SERVER_WRAPPERS)
    for proc in find_processes(knowledge.get("process_patterns"), wrappers):
        if wanted is not None and wanted not in [proc["pid"]] + (proc.get("children") or []):
            continue  # a worker's PID (`sglang::scheduler_TP0`) names its server
        links = _log_links(proc["pid"])
        container = container_info(proc["pid"])
        runtime_log = runtime_log_of(container) if container and not links else None
        if runtime_log:
            links = [(runtime_log["path"], runtime_log["how_found"])]
        note = None
        if not links and container and not container.get("root_readable"):
            note = container.get("why_unreadable")
        elif not links:
            if _uid(proc["pid"]) not in (None, os.getuid()):
                note = "runs as another user%s: its stdout/stderr are hidden; pass --log PATH" % (
                    _owner_note(proc["pid"])
                )
            else:
                note = "stdout/stderr are not regular files (terminal, pipe, journald): pass --log"
        out.append(
            {
                "pid": proc["pid"],
                "engine": proc["engine"],
                "cmdline": redact_cmdline(proc["argv"]),
                "argv": redact_argv(proc["argv"]),  # parsed as is (e.g. its port)
                "log": links[0][0] if links else None,
                "how_found": links[0][1] if links else None,
                "note": note,
                "children": sorted(proc.get("children") or []),
                "listening": listening_ports([proc["pid"]] + (proc.get("children") or [])),
                "own": _uid(proc["pid"]) == os.getuid(),
                "container": {"runtime": container.get("runtime"), "id": container.get("id"),
                              "name": container.get("name")} if container else None,
            }
        )  # fmt: skip
    return {"servers": out}


def _open_log(path):
    try:
        # O_NONBLOCK: opening a FIFO someone put in the log's place must not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise MissingInput("%s: %s" % (path, exc.strerror or exc)) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise MissingInput("%s: not a regular file" % path)
    return os.fdopen(fd, "rb"), info


def read_log_tail(args):
    path = os.path.expanduser(args["path"])
    wanted = int(args.get("lines") or 50)
    since = time.time() - float(args["since_s"]) if args.get("since_s") is not None else None
    max_bytes = int(args.get("max_bytes") or 16 << 20)
    year = time.localtime().tm_year
    handle, info = _open_log(path)
    lines = []
    done = started = reached_start = False
    with handle:
        end = info.st_size
        for chunk, _, at_start in chunks_backwards(handle, max_bytes):
            reached_start = at_start
            for raw in chunk:
                if not started:
                    started = True
                    if not raw:
                        continue  # after the file's final newline: no line
                text, stamp = plain_line(raw.decode("utf-8", "replace").rstrip("\r"))
                if since is not None:
                    stamp = stamp if stamp is not None else line_time(text, year)
                    if stamp is not None and stamp < since:
                        done = True
                        break
                elif len(lines) >= wanted:
                    done = True
                    break
                lines.append(text)
            if done:
                break
        partial = end > 0 and not done and not reached_start
    lines.reverse()
    return {"path": path, "lines": lines, "offset": end, "inode": info.st_ino,
            "now": time.time(), "partial": partial}  # fmt: skip


def read_log_from(args):
    path = os.path.expanduser(args["path"])
    offset = int(args.get("offset") or 0)
    max_bytes = int(args.get("max_bytes") or 4 << 20)
    handle, info = _open_log(path)
    rotated = info.st_ino != args.get("inode") or info.st_size < offset
    if rotated:
        offset = 0
    with handle:
        handle.seek(offset)
        data = handle.read(max_bytes)
    whole = data.rfind(b"\n") + 1
    lines = [
        plain_line(raw.decode("utf-8", "replace").rstrip("\r"))[0]
        for raw in data[:whole].split(b"\n")[:-1]
    ]
    return {"lines": lines, "offset": offset + whole, "inode": info.st_ino, "rotated": rotated}
