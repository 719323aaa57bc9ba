"""A server is the engine process itself (issue 45): launched the ways people launch it, beside
processes that merely carry its words, with a worker that retitles itself and a port its
command line never spells. Every command's list of servers is exactly the engine processes;
a port, a PID and a worker's PID select the same server.

The engine is a shim package run as `python -m sglang.launch_server` (the real launch form);
what its entry does is the test's: sleep, listen on a port, start a titled worker."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from remotedbg.agent.engine_process import ENGINE, WRAPPER, process_role
from remotedbg.engines.knowledge import server_scan_knowledge
from tests.procs import wait_for

ENTRY = """\
import os, socket, sys, time
port = int(os.environ.get("SHIM_LISTEN") or 0)
if port:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(1)
if os.environ.get("SHIM_WORKER") and os.fork() == 0:
    # SGLang's scheduler retitles itself (setproctitle "sglang::scheduler_TP0"): its argv[0]
    os.execv(sys.executable, ["sglang::scheduler_TP0", "-c", "import time; time.sleep(600)"])
time.sleep(600)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def launched(tmp_path):
    shim = tmp_path / "shim"
    (shim / "sglang").mkdir(parents=True)
    (shim / "sglang" / "__init__.py").write_text("")
    (shim / "sglang" / "launch_server.py").write_text(ENTRY)
    env = dict(os.environ, PYTHONPATH=str(shim))
    started: list[subprocess.Popen] = []

    def start(argv: list[str], **extra: str) -> subprocess.Popen:
        with open(tmp_path / f"out-{len(started)}.log", "ab") as out:  # the server's log
            process = subprocess.Popen(argv, env=dict(env, **extra), stdin=subprocess.PIPE,
                                       stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True, cwd=tmp_path)  # fmt: skip
        started.append(process)
        return process

    start.tmux = f"rdbg-{os.getpid()}"  # type: ignore[attr-defined]
    yield start
    subprocess.run(["tmux", "-L", start.tmux, "kill-server"], capture_output=True)  # type: ignore[attr-defined]
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _engine_pid(outer: subprocess.Popen) -> int:
    """The python process under a wrapper that stays (timeout, bash -c), or the process."""
    def found() -> int | None:
        for pid in [outer.pid, *_children(outer.pid)]:
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[0].split(b"/")[-1].startswith(b"python") and b"sglang.launch_server" in argv:
                return pid
        return None

    assert wait_for(lambda: found() is not None, timeout=10)
    pid = found()
    assert pid is not None
    return pid


def test_the_role_of_each_launch_form_as_processes_run():
    """What each process *is*, from its argv as /proc shows it (the programs below are those
    the issue met: remotedbg's own command line, a grep, tmux, an editor, wrappers)."""
    knowledge = server_scan_knowledge()
    patterns, wrappers = knowledge["process_patterns"], knowledge["server_wrappers"]
    py = "/usr/bin/python3"
    cases = {
        (py, "-m", "remotedbg", "playbook", "spec-audit", "-H", "local", "--var",
         "args=python3 -m sglang.launch_server --model-path /m"): None,
        ("/v/bin/remotedbg", "diagnose", "--var", "args=vllm serve /m"): None,
        ("grep", "-r", "sglang.launch_server", "."): None,
        ("tmux", "new", "-d", "python -m sglang.launch_server --model-path /m"): None,
        ("vim", "/srv/sglang/python/sglang/launch_server.py"): None,
        ("less", "vllm serve.log"): None,
        (py, "notes.py", "python -m sglang.launch_server"): None,
        (py, "-u", "-m", "sglang.launch_server", "--model-path", "/m"): ENGINE,
        (py, "-X", "utf8", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"): ENGINE,
        (py, "/v/bin/vllm", "serve", "/m"): ENGINE,
        (py, "/v/bin/sglang", "serve", "--model-path", "/m"): ENGINE,
        ("sglang::scheduler_TP0",): ENGINE,
        ("VLLM::EngineCore",): ENGINE,
        ("timeout", "600", py, "-m", "sglang.launch_server"): WRAPPER,
        ("bash", "-c", "python -m sglang.launch_server > log 2>&1; true"): WRAPPER,
        ("runuser", "-u", "svc", "--", py, "-m", "vllm.entrypoints.openai.api_server"): WRAPPER,
        ("/opt/conda/bin/conda", "run", "-n", "serve", "python", "-m", "sglang.launch_server"):
            WRAPPER,
        ("/usr/local/bin/uv", "run", "vllm", "serve", "/m"): WRAPPER,
        (py, "-m", "pip", "install", "vllm"): None,
    }  # fmt: skip
    for argv, role in cases.items():
        exe = None if argv[0].startswith(("/v/", "sglang::", "VLLM::")) else argv[0]
        assert process_role(list(argv), exe, patterns, wrappers)[0] == role, argv


def test_every_command_lists_exactly_the_engine_processes(cli, launched, tmp_path):
    port = _free_port()
    python = [sys.executable, "-m", "sglang.launch_server", "--model-path"]
    timeout_wrapped = launched(["timeout", "600", *python, "/m/timeout"])
    shell_wrapped = launched(["bash", "-c", " ".join([*python, "/m/bash"]) + " ; true"])
    # its port is its own business (a config file's): the command line never spells it
    titled = launched([*python, "/m/titled"], SHIM_LISTEN=str(port), SHIM_WORKER="1")
    log = tmp_path / "vllm serve.log"
    log.write_text("")
    notes = tmp_path / "notes.py"
    notes.write_text("import time; time.sleep(600)\n")
    carriers = [
        launched(["grep", "sglang.launch_server"]),
        launched(["tail", "-f", str(log)]),
        launched(["tmux", "-L", launched.tmux, "-f", "/dev/null", "new-session", "-d",
                  "sleep 600 # python -m sglang.launch_server --model-path /m/tmux"]),
        launched([sys.executable, str(notes), "python -m sglang.launch_server --model-path /m"]),
    ]  # fmt: skip
    engines = {_engine_pid(timeout_wrapped), _engine_pid(shell_wrapped), _engine_pid(titled)}
    assert wait_for(lambda: len(_children(titled.pid)) == 1, timeout=10)
    [worker] = _children(titled.pid)
    assert wait_for(lambda: Path(f"/proc/{worker}/cmdline").read_bytes().startswith(b"sglang::"))
    assert wait_for(lambda: _listening(titled.pid, port), timeout=10)
    # tmux's server (detached, words in its argv) and the shell it runs them in
    assert wait_for(lambda: _tmux_server(launched.tmux) is not None, timeout=10)
    tmux = _tmux_server(launched.tmux)
    made = engines | {worker, timeout_wrapped.pid, shell_wrapped.pid, tmux} | {
        p.pid for p in carriers
    } | set(_children(tmux))

    result = cli("playbook", "spec-audit", "-H", "testbox", "--json", timeout=240)
    doc = json.loads(result.stdout)
    servers = {s["pid"]: s for s in doc["results"]["servers"]["servers"] if s.get("pid") in made}
    assert set(servers) == engines, {p: s["cmdline"] for p, s in servers.items()}
    assert servers[titled.pid]["children"] == [worker]
    assert servers[titled.pid]["listening"] == [port]
    assert servers[titled.pid]["spec"]["port"] == port  # not the default 30000
    wrapped = {s["wrapped_by"]["pid"] for s in servers.values() if s.get("wrapped_by")}
    assert wrapped == {timeout_wrapped.pid, shell_wrapped.pid}

    located = json.loads(cli("locate-eagle", "-H", "testbox", "--json", timeout=240).stdout)
    listed = {p["pid"] for p in located["processes"] if p["pid"] in made}
    assert listed - {worker} == engines, listed  # no wrapper, grep, tail, tmux or notes.py

    # a port, the PID and the worker's PID select the same server
    for named in (str(port), str(titled.pid), str(worker)):
        shown = cli("logs", "-H", "testbox", "--server", named, "--json", "-n", "1")
        assert shown.returncode == 0, (named, shown.stderr)
        assert json.loads(shown.stdout)["server"]["pid"] == titled.pid, named
        audited = cli("playbook", "spec-audit", "-H", "testbox", "--json", "--var",
                      f"server={named}", timeout=240)  # fmt: skip
        judged = json.loads(audited.stdout)["results"]["servers"]["servers"]
        assert [s["pid"] for s in judged] == [titled.pid], named


def test_remotedbg_on_the_box_is_never_a_server(launched, tmp_path):
    """remotedbg run on the box itself (-H local), naming a launch in --var args: its own
    process carries `python3 -m sglang.launch_server` in its words, and is not a server."""
    env = dict(os.environ, REMOTEDBG_PERSIST="0", COLUMNS="200")
    args = "python3 -m sglang.launch_server --model-path /m/named --speculative-algorithm EAGLE3"
    client = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "playbook", "spec-audit", "-H", "local", "--json",
         "--var", f"args={args}", "--var", "search_home=false"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    out, err = client.communicate(timeout=240)
    doc = json.loads(out)
    servers = doc["results"]["servers"]["servers"]
    assert client.pid not in [s.get("pid") for s in servers], err.decode()[-500:]
    own = [s for s in servers if "-m remotedbg " in (s.get("cmdline") or "")]
    assert not own, own  # not this client, nor its agent
    named = [s for s in servers if s.get("source") == "--var args"]
    assert [s["spec"]["target_model"] for s in named] == ["/m/named"]
    assert "-m remotedbg " not in json.dumps(doc["results"]["servers"].get("also_on_box") or [])


def _tmux_server(name: str) -> int | None:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[0].endswith(b"tmux") and name.encode() in argv:
                return int(entry)
    return None


def _listening(pid: int, port: int) -> bool:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return any(r.split()[3] == "0A" and r.split()[9] in inodes
               and int(r.split()[1].rsplit(":", 1)[1], 16) == port for r in rows)  # fmt: skip



def test_on_a_shared_box_the_users_own_server_is_taken(box, launched, tmp_path):
    """Servers of two users (one started through runuser as `nobody`, as a service account's
    is): the scan says whose each is, and the commands that take the only server take the
    user's own, saying so; with two of the user's own they ask, the user's listed first."""
    from remotedbg.actions.probe import choose_server
    from remotedbg.errors import UsageError
    from remotedbg.remote import calls
    from remotedbg.remote.primitives import Remote
    from tests.unprivileged import NOBODY, shared_dir

    if os.geteuid() != 0:
        pytest.skip("starting another user's server needs root (CI runs as root)")
    with shared_dir() as shared:
        shim = shared / "sglang"
        shim.mkdir()
        (shim / "__init__.py").write_text("")
        (shim / "launch_server.py").write_text(ENTRY)
        python = ["-m", "sglang.launch_server", "--model-path"]
        theirs = launched(["runuser", "-u", NOBODY, "--", "env", f"PYTHONPATH={shared}",
                           "/usr/bin/python3", *python, "/m/theirs"])  # fmt: skip
        mine = launched([sys.executable, *python, "/m/mine"])
        theirs_pid = _engine_pid(theirs)
        session = box.session()
        try:
            scan = Remote(session).call(
                calls.ScanServers(metrics=False, knowledge=server_scan_knowledge())
            )
        finally:
            session.close()
        by_pid = {s["pid"]: s for s in scan["servers"] if s["pid"] in (theirs_pid, mine.pid)}
        assert by_pid[mine.pid]["own"] is True and by_pid[theirs_pid]["own"] is False
        chosen = choose_server([by_pid[theirs_pid], by_pid[mine.pid]], "")
        assert chosen is not None and chosen["pid"] == mine.pid
        assert chosen["taken_because"] == "the only server of yours among 2 running"
        second = dict(by_pid[mine.pid], pid=mine.pid + 100000)
        with pytest.raises(UsageError) as asked:
            choose_server([by_pid[theirs_pid], by_pid[mine.pid], second], "")
        listed = str(asked.value)
        assert listed.index(f"pid {mine.pid}") < listed.index(f"pid {theirs_pid}"), listed
