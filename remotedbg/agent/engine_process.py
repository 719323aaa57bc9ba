"""Runs on the box: whether a process is an engine server, a wrapper that started one, or
neither. One rule for every scan (engine_scan, server_scan, log_follow). Stdlib only.

A process is the engine when its *program* is: the interpreter's module or script (`python
-m sglang.launch_server`, `python .../bin/vllm serve`), an entry script run directly, or an
engine worker's own title (`sglang::scheduler_TP0`, `VLLM::EngineCore`). Words further on are
arguments: `python -m remotedbg ... --var args="python -m sglang.launch_server ..."`, `grep
sglang.launch_server`, `tmux new 'vllm serve ...'` and an editor carry the words but are not
the engine. `python -c CODE ...` is judged by its whole line (the code is the program, and what
it execs is not known without running it). A wrapper (bash -c, runuser, timeout, numactl...) is
followed to the engine it started by the caller; remotedbg's own processes never count.
"""

from __future__ import annotations

import os
import re

ENGINE, WRAPPER = "engine", "wrapper"
# defaults for a standalone call; the client sends remotedbg.engines.knowledge's own
SERVER_WRAPPERS = ("runuser", "sudo", "su", "bash", "sh", "dash", "zsh", "nohup", "env",
                   "setsid", "stdbuf", "timeout", "nice", "ionice", "taskset", "numactl",
                   "chrt", "time", "tini", "dumb-init", "uv", "conda", "mamba", "micromamba",
                   "pixi", "poetry", "pipenv")  # fmt: skip
# the interpreter's own options that take a value (python3 --help): skipped with the value
PY_VALUE_OPTIONS = ("-W", "-X", "--check-hash-based-pycs")
_OWN = "remotedbg"


def _interpreter(name):
    return name.startswith(("python", "pypy"))


def interpreter_target(args):
    """What `python ARGS` runs: ("-m", MODULE), ("-c", CODE), ("script", PATH), or (None,
    None) when nothing (the interpreter's own options skipped)."""
    i = 0
    while i < len(args):
        word = args[i]
        if word in ("-m", "-c"):
            return word, args[i + 1] if i + 1 < len(args) else ""
        if word.startswith(("-m", "-c")) and len(word) > 2:
            return word[:2], word[2:]
        if word in PY_VALUE_OPTIONS:
            i += 2
            continue
        if word.startswith("-") and word != "-":
            i += 1
            continue
        return "script", word
    return None, None


def program_words(argv):
    """The words that name the program a process runs: for an interpreter, its `-m MODULE` or
    its script (`.../bin/vllm`), or the whole line after `-c`; else the executable and its
    first word (`vllm serve`)."""
    if not argv:
        return []
    if not _interpreter(os.path.basename(argv[0])):
        return argv[:2]
    kind, value = interpreter_target(argv[1:])
    if kind == "-c":
        return list(argv)
    if kind == "-m":
        return [argv[0], "-m", value]
    return [argv[0], value] if kind == "script" else argv[:1]


def is_own(argv):
    """remotedbg itself (its CLI as a script or `-m remotedbg`), wherever its words point."""
    words = program_words(argv)
    names = [os.path.basename(w) for w in words[:2]]
    return _OWN in names or (len(words) > 2 and words[1] == "-m" and
                             words[2].split(".")[0] == _OWN)  # fmt: skip


def process_role(argv, exe, patterns, wrappers):
    """(ENGINE | WRAPPER | None, engine name | None) for one process. `patterns` maps engine
    name to regexes of its programs; `wrappers` are launcher names (their whole line is
    matched: a wrapper names the engine it starts in its arguments)."""
    if not argv or is_own(argv):
        return None, None
    names = [os.path.basename(exe or ""), os.path.basename(argv[0])]
    wrapper = any(n in wrappers for n in names if n)
    program = " ".join(argv if wrapper else program_words(argv))
    engine = None
    for name, sources in patterns.items():
        if any(re.search(source, program) for source in sources):
            engine = name
            break
    if engine is None:
        return None, None
    if wrapper:
        return WRAPPER, engine
    # the program named the engine: an interpreter, the engine's own entry script or a
    # worker's title (`sglang::scheduler`: the title replaces argv[0], exe stays python)
    first = os.path.basename(argv[0])
    # (also another user's entry script, `vllm serve`, whose exe is not readable)
    if any(_interpreter(n) for n in names if n) or first.split(":")[0].lower() in patterns:
        return ENGINE, engine
    return None, None


def ancestors(pid, ppid_of):
    """The chain of parents of `pid` (the scanning process's own: never a server)."""
    out = set()
    parent = ppid_of(pid)
    while parent and parent not in out and parent > 1:
        out.add(parent)
        parent = ppid_of(parent)
    return out


_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


def _socket_inodes(pid):
    """Inodes of the sockets `pid` holds (its own processes only: another user's fds are not
    readable, and then none)."""
    out = set()
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return out
    for name in names:
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, name))
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


def _listening_inodes(pid):
    """{socket inode: port} of the TCP sockets listening in `pid`'s network namespace."""
    out = {}
    for table in ("tcp", "tcp6"):
        try:
            with open("/proc/%d/net/%s" % (pid, table)) as handle:
                lines = handle.read(4 << 20).splitlines()[1:]
        except (OSError, ValueError):
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _LISTEN:
                try:
                    out[fields[9]] = int(fields[1].rsplit(":", 1)[1], 16)
                except (IndexError, ValueError):
                    continue
    return out


def listening_ports(pids, tables=None):
    """TCP ports the processes `pids` listen on (the socket table of the first one's network
    namespace, /proc/PID/net/tcp and tcp6, matched to their sockets by inode), sorted.
    `tables`: a dict a scan keeps, so each namespace's table is read once, not per server (a
    busy box's table holds thousands of sockets)."""
    inodes = set()
    for pid in pids:
        inodes |= _socket_inodes(pid)
    if not inodes or not pids:
        return []
    key = None
    if tables is not None:
        try:
            key = os.readlink("/proc/%d/ns/net" % pids[0])
        except OSError:
            pass  # another user's namespace link: read its table, uncached
    if key is None or key not in tables:
        listening = _listening_inodes(pids[0])
        if key is not None:
            tables[key] = listening
    else:
        listening = tables[key]
    return sorted({listening[inode] for inode in inodes if inode in listening})
