"""Slurm jobs as targets (`-H slurm:JOB[/NODE][@LOGIN]`, remotedbg/session/slurm.py), on a real
two-node Slurm cluster the suite starts (tests/slurm.py: munged, slurmctld and two slurmd as root
in a temp dir, free ports, its own key and config). The server is a stand-in engine
(tests/engine_standins.py) started by a two-node batch job on its first node; every command
reaches it through a step of that job, directly and through the suite's sshd as the login node.
After each command no step of remotedbg's is left in the job."""

from __future__ import annotations

import getpass
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from remotedbg.errors import UsageError
from remotedbg.inventory import is_host_list
from remotedbg.persist.client import _is_fleet
from remotedbg.session.kinds import kind_of
from remotedbg.session.slurm import (
    JobSpec,
    Selection,
    SlurmSession,
    parse,
    parse_selection,
    srun_words,
)
from remotedbg.session.target import ConnectOptions
from tests.checkpoints import write_eagle3_checkpoint, write_target_config
from tests.conftest import REPO, SshWorld, free_port
from tests.procs import parent_of, persist_daemons, wait_for
from tests.slurm import NODES, Cluster, available
from tests.sshd import Sshd, make_sshd, write_client_config
from tests.test_probe import scripted_steps
from tests.test_tty import Terminal

HEALTHY = [3, 2, 3, 1]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    why = available()
    if why is not None:
        pytest.skip(why)
    started = Cluster()
    try:
        yield started.start()
    finally:
        started.stop()


@pytest.fixture(scope="module")
def served(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A batch job named `sglang-srv` serving a stand-in SGLang launched with EAGLE for an
    EAGLE3 draft (the mismatch diagnose and spec-audit name), its stdout in the job's file."""
    root = tmp_path_factory.mktemp("slurm-served")
    shim = root / "shim" / "sglang"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("")
    (shim / "launch_server.py").write_text(
        "from tests.engine_standins import main\nmain('sglang')\n"
    )
    target = write_target_config(root / "target")
    draft = write_eagle3_checkpoint(root / "draft")
    port = free_port()
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", str(target),
            "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", str(draft),
            "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
            "--speculative-num-draft-tokens", "4", "--port", str(port)]  # fmt: skip
    env = dict(cluster.env, PYTHONPATH=f"{root / 'shim'}{os.pathsep}{REPO}",
               STANDIN_SCRIPT=json.dumps({"engine": "sglang", "pattern": {"default": HEALTHY}}))
    done = subprocess.run(
        ["sbatch", "--parsable", "-J", "sglang-srv", "-N", str(len(NODES)), "-o",
         str(root / "job.out"), "--wrap", "exec " + shlex.join(argv)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    job = done.stdout.strip()
    assert wait_for(lambda: "serving on" in _read(root / "job.out"), timeout=20), cluster.logs()
    pid = next(p for p in _pids() if f"--port\0{port}\0".encode() in _cmdline(p))
    yield {"job": job, "port": port, "pid": pid, "log": root / "job.out", "draft": draft}
    cluster.cancel(job)


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _children(pid: int) -> list[int]:
    found = []
    for child in _pids():
        try:
            if parent_of(child) == pid:
                found.append(child)
        except OSError:
            continue
    return found


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def cli_env(cluster: Cluster, **extra: str) -> dict[str, str]:
    """The test's environment (conftest's isolated_state) with the cluster's SLURM_CONF."""
    return {**os.environ, "SLURM_CONF": str(cluster.conf), "COLUMNS": "200",
            "REMOTEDBG_PERSIST": "0", **extra}  # fmt: skip


def rdbg(cluster: Cluster, *args: str, ssh_config: Path | None = None, input: bytes = b"",
         timeout: float = 90) -> subprocess.CompletedProcess[bytes]:  # fmt: skip
    """The CLI with the cluster's SLURM_CONF; through a login node (`ssh_config`) without it:
    srun and squeue run there, with what the login node sets."""
    env = cli_env(cluster)
    if ssh_config:
        env["REMOTEDBG_SSH_CONFIG"] = str(ssh_config)
        del env["SLURM_CONF"]
    return subprocess.run([sys.executable, "-m", "remotedbg", *args], env=env, input=input,
                          capture_output=True, timeout=timeout)  # fmt: skip


def no_steps_left(cluster: Cluster, job: str) -> bool:
    """No step of the job but its batch script's, and no executor of remotedbg's running."""
    mark = f"SLURM_JOB_ID={job}\0".encode()
    executors = [p for p in _pids() if b"RDBG-AGENT" in _cmdline(p) and mark in _environ(p)]
    return cluster.steps(job) == [] and not executors


def test_the_host_forms_a_user_types() -> None:
    """Without a cluster: what each form names, and the forms that name nothing (exit 2)."""
    assert parse("slurm:4242") == JobSpec("4242", None, None)
    assert parse("slurm:4242_7").by_id and not parse("slurm:sglang-serve").by_id
    assert parse("slurm:4242/gpu017@alice@login1:2222") == JobSpec(
        "4242", "gpu017", "alice@login1:2222"
    )
    assert srun_words("4242", "gpu017")[:3] == ["srun", "--overlap", "--jobid=4242"]
    assert "--nodelist=gpu017" in srun_words("4242", "gpu017")
    for bad in ("slurm:", "slurm:/n1", "slurm:1/", "slurm:1@", "slurm:1/a/b", "slurm:a b"):
        with pytest.raises(UsageError) as raised:
            parse(bad)
        assert raised.value.exit_code == 2 and "slurm:JOB[/NODE][@LOGIN]" in str(raised.value)
    options = ConnectOptions(host="slurm:4242@login1", port=2222, user="alice")
    assert kind_of(options) == ("slurm", None)
    via = SlurmSession.via_options(options)
    assert (via.host, via.port, via.user) == ("login1", 2222, "alice")
    assert SlurmSession.via_options(ConnectOptions(host="slurm:4242")).host == "local"
    with pytest.raises(UsageError):
        SlurmSession.via_options(ConnectOptions(host="slurm:4242", container="c"))


def test_the_forms_that_select_nodes_of_jobs() -> None:
    """`slurm:JOB/*` and `slurm:KEY=VALUE[:...][/*][@LOGIN]` are fleet forms (never through a
    persistent session's daemon), asked of squeue with the user's filters; one line, exit 2,
    for a key squeue is not asked by, another node part, or one host's command."""
    assert parse_selection("slurm:4242/*@login1") == Selection("4242", {}, True, "login1")
    picked = parse_selection("slurm:name=serve:partition=gpu:name=eagle/*")
    assert picked == Selection(None, {"name": ("serve", "eagle"), "partition": ("gpu",)}, True,
                               None)  # fmt: skip
    assert picked.squeue_words() == ["--me", "--name=serve,eagle", "--partition=gpu",
                                     "--states=RUNNING", "--format=%i|%N"]  # fmt: skip
    assert parse_selection("slurm:user=alice").squeue_words()[0] == "--user=alice"  # not --me
    assert not parse_selection("slurm:user=alice@login1").every_node  # each job's first node
    for host in ("slurm:4242/*", "slurm:serve/*@login1", "slurm:name=serve",
                 "slurm:user=alice:name=x/*@a@login1:2222"):  # fmt: skip
        assert is_host_list(host) and _is_fleet(["run", "-H", host], host), host
        with pytest.raises(UsageError, match="a fleet's form"):
            parse(host)
    for host in ("slurm:4242", "slurm:4242/rdbg1", "slurm:serve@login1", "slurm:4242/*x"):
        assert not is_host_list(host) and not _is_fleet(["run", "-H", host], host), host
    for bad, said in (("slurm:color=red", "color=red: filters are user=VALUE, name=VALUE"),
                      ("slurm:name=", "name=: filters are"),
                      ("slurm:name=a/rdbg1", "expected slurm:JOB/* or slurm:KEY=VALUE"),
                      ("slurm:name=a@", "expected slurm:JOB/* or")):  # fmt: skip
        with pytest.raises(UsageError, match=re.escape(said)) as raised:
            parse_selection(bad)
        assert raised.value.exit_code == 2


def test_a_step_of_a_running_job_reads_its_stdin(cluster: Cluster) -> None:
    """What the executor's boot relies on: `srun --overlap --jobid J` runs beside the job's own
    step and hands the caller's stdin to the program in it."""
    job = cluster.submit("sleep 300")
    try:
        done = cluster.run("srun", "--overlap", "--jobid", job, "python3", "-c",
                           "import os, sys; print(sys.stdin.read().upper(), "
                           "os.environ['SLURM_JOB_ID'])", input="hello\n")  # fmt: skip
        assert done.stdout.split() == ["HELLO", job]
    finally:
        cluster.cancel(job)
    assert cluster.jobs() == []


def test_run_and_get_inside_the_job_by_id_name_and_node(cluster: Cluster, served: dict,
                                                        tmp_path: Path) -> None:  # fmt: skip
    job = served["job"]
    # the job's first node unless one is named
    for host, node in ((f"slurm:{job}", NODES[0]), ("slurm:sglang-srv", NODES[0]),
                       (f"slurm:{job}/{NODES[1]}", NODES[1])):  # fmt: skip
        done = rdbg(cluster, "run", "-H", host, "--", "sh", "-c",
                    "echo $SLURM_JOB_ID $SLURMD_NODENAME; cat",
                    input=b"through srun\n")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout.decode().splitlines() == [f"{job} {node}", "through srun"]
        assert wait_for(lambda: no_steps_left(cluster, job), timeout=10), cluster.steps(job)
    # files and globs as the job's node sees them
    out = tmp_path / "got"
    out.mkdir()
    done = rdbg(cluster, "get", "-H", f"slurm:{job}", f"{served['draft']}/*.json", str(out))
    assert done.returncode == 0, done.stderr
    assert (out / "config.json").read_bytes() == (served["draft"] / "config.json").read_bytes()
    pulled = tmp_path / "pulled.safetensors"
    done = rdbg(cluster, "tensors", "pull", "-H", f"slurm:{job}", str(served["draft"]), "d2t",
                "-o", str(pulled))  # fmt: skip
    assert done.returncode == 0, done.stderr
    original = {}
    for shard in served["draft"].glob("*.safetensors"):
        original.update(load_file(str(shard)))
    np.testing.assert_array_equal(load_file(str(pulled))["d2t"], original["d2t"])
    # the job's nodes as one fleet, in the hostlist form squeue prints them (`%N`): a row each
    nodelist = cluster.run("squeue", "-h", "-j", job, "-o", "%N").stdout.strip()
    done = rdbg(cluster, "run", "-H", f"slurm:{job}/{nodelist}", "--", "sh", "-c",
                "echo $SLURMD_NODENAME")  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.decode().splitlines() if line.strip()]
    assert rows == [part for node in NODES for part in (f"── slurm:{job}/{node}: exit 0", node)]
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=10), cluster.steps(job)


def test_diagnose_and_spec_audit_find_the_server_in_the_job(cluster: Cluster, served: dict):
    job, pid = served["job"], served["pid"]
    done = rdbg(cluster, "diagnose", "-H", f"slurm:{job}", "--server", str(served["port"]),
                "--json", "--no-probe", timeout=180)  # fmt: skip
    doc = json.loads(done.stdout)
    assert done.returncode == 1 and doc["server"]["pid"] == pid, done.stderr
    assert doc["causes"][0]["id"] == "algorithm-mismatch", doc["causes"]
    # scoped to the job's server: this machine may run others (the job's node is this machine)
    done = rdbg(cluster, "playbook", "spec-audit", "-H", "slurm:sglang-srv", "--json",
                "--var", f"server={served['port']}", timeout=180)  # fmt: skip
    doc = json.loads(done.stdout)
    assert [s["pid"] for s in doc["results"]["servers"]["servers"]] == [pid], done.stderr
    assert "algorithm-mismatch" in [f["id"] for f in doc["findings"]], doc["findings"]
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=10), cluster.steps(job)


def test_probe_and_logs_reach_the_server_from_inside_the_job(cluster: Cluster, served: dict):
    job = served["job"]
    done = rdbg(cluster, "probe", "-H", f"slurm:{job}", "--server", str(served["port"]),
                "--json", "--max-tokens", "32", "-n", "1", "--compare", "none")  # fmt: skip
    doc = json.loads(done.stdout)
    steps = scripted_steps(HEALTHY, 32)
    assert doc["summary"]["overall"]["accept_length"] == round(32 / len(steps), 3), done.stderr
    done = rdbg(cluster, "logs", "-H", f"slurm:{job}", "--server", str(served["pid"]), "-n",
                "3", "--json")  # fmt: skip
    doc = json.loads(done.stdout)
    assert done.returncode == 0 and doc["path"] == str(served["log"]), done.stderr
    assert doc["lines"] == served["log"].read_text().splitlines()[-3:]
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=10), cluster.steps(job)


def test_the_step_ends_with_the_command(cluster: Cluster, served: dict) -> None:
    """Ctrl-C, a timeout and a killed remotedbg each leave no step and no executor."""
    job = served["job"]
    for stop in ("SIGINT", "SIGKILL"):
        process = subprocess.Popen(
            [sys.executable, "-m", "remotedbg", "run", "-H", f"slurm:{job}", "--", "sleep", "987"],
            env=cli_env(cluster), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert wait_for(lambda: cluster.steps(job) != [], timeout=15)
        assert wait_for(lambda: any(_cmdline(p) == b"sleep\x00987\x00" for p in _pids()), 10)
        process.send_signal(getattr(signal, stop))
        _, stderr = process.communicate(timeout=15)
        if stop == "SIGINT":
            assert process.returncode == 130, stderr
        assert wait_for(lambda: no_steps_left(cluster, job), timeout=15), (stop, cluster.steps(job))
        assert not [p for p in _pids() if _cmdline(p) == b"sleep\x00987\x00"]
    done = rdbg(cluster, "run", "-H", f"slurm:{job}", "--timeout", "1", "--", "sleep", "60")
    assert done.returncode == 255 and b"timed out" in done.stderr, done.stderr
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=10), cluster.steps(job)


def test_a_job_that_ends_under_a_command_is_one_line(cluster: Cluster, tmp_path: Path) -> None:
    job = cluster.submit("sleep 300", name="short")
    process = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", "-H", f"slurm:{job}", "--", "sleep", "987"],
        env=cli_env(cluster), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert wait_for(lambda: cluster.steps(job) != [], timeout=15)
    cluster.run("scancel", job)
    _, stderr = process.communicate(timeout=30)
    lines = stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"remotedbg: slurm:{job}: job {job} ended")
    assert process.returncode == 255
    # a job no longer running, and the forms that name none, are one line each
    for host, code, said in ((f"slurm:{job}", 255, f"job {job}"),
                             ("slurm:nosuchjob", 255, "no running job named nosuchjob"),
                             ("slurm:", 2, "expected slurm:JOB[/NODE][@LOGIN]"),
                             ("slurm:1/a/b", 2, "expected slurm:JOB[/NODE][@LOGIN]")):  # fmt: skip
        done = rdbg(cluster, "run", "-H", host, "--", "true")
        lines = done.stderr.decode().strip().splitlines()
        assert (done.returncode, len(lines)) == (code, 1) and said in lines[0], done.stderr
    assert wait_for(lambda: job not in cluster.jobs(), timeout=15)
    done = subprocess.run([sys.executable, "-m", "remotedbg", "run", "-H", "slurm:1", "--", "true"],
                          env=cli_env(cluster, PATH="/nonexistent"), capture_output=True)
    assert done.returncode == 255 and done.stderr.decode().splitlines() == [
        "remotedbg: slurm:1: no squeue on this machine: no Slurm client there"
    ]
    twins = [cluster.submit("sleep 300", name="twin") for _ in range(2)]
    done = rdbg(cluster, "run", "-H", "slurm:twin", "--", "true")
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert f"2 running jobs named twin ({', '.join(sorted(twins))})" in lines[0]
    assert lines[0].endswith("or all of them as a fleet (slurm:name=twin)")
    # a node not in the job; a job whose PATH has no python3: srun's own words, one line
    bare = tmp_path / "bin"
    bare.mkdir()
    for program in ("srun", "squeue", "sh"):
        (bare / program).symlink_to(shutil.which(program))
    for host, env, said in (
        (f"slurm:{twins[0]}/othernode", {}, "Requested node configuration is not available"),
        # slurmstepd's execve() line or srun's summary after it, whichever came last
        (f"slurm:{twins[0]}", {"PATH": str(bare)}, "python3"),
    ):
        done = subprocess.run([sys.executable, "-m", "remotedbg", "run", "-H", host, "--", "true"],
                              env=cli_env(cluster, **env), capture_output=True)  # fmt: skip
        lines = done.stderr.decode().strip().splitlines()
        assert done.returncode == 255 and len(lines) == 1, done.stderr
        assert lines[0].startswith(f"remotedbg: {host}: srun into job {twins[0]} failed: ")
        assert said in lines[0], lines
    for twin in twins:
        assert wait_for(lambda: no_steps_left(cluster, twin), timeout=10)  # noqa: B023
        cluster.cancel(twin)


@pytest.fixture(scope="module")
def login_node(cluster: Cluster, ssh_world: SshWorld, tmp_path_factory) -> Iterator[Sshd]:
    """The suite's sshd as the cluster's login node (alias `login` in its directory's
    ssh_config): its sessions get the cluster's SLURM_CONF, as a login node's users get
    /etc/slurm/slurm.conf."""
    root = tmp_path_factory.mktemp("slurm-login")
    server = make_sshd(root / "sshd", ssh_world.user_key,
                       extra_config=(f"SetEnv SLURM_CONF={cluster.conf}",))  # fmt: skip
    write_client_config(root / "ssh_config", {"login": server}, root / "known_hosts")
    yield server
    server.stop()


def test_the_repl_in_the_job_as_a_user_drives_it(cluster: Cluster, served: dict,
                                                 login_node: Sshd) -> None:  # fmt: skip
    """At a terminal: the prompt, a glob and a shell line run in the job's node (its
    SLURM_ JOB and node), `exit`; piped through the login node: the same lines as a script.
    No step is left after either. (Before the login-node test, which stops that sshd.)"""
    job, draft = served["job"], served["draft"]
    env = cli_env(cluster, TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1")
    term = Terminal(["repl", "-H", f"slurm:{job}"], env, columns=120, lines=30)
    term.wait_for(f"slurm:{job}:~$".encode(), timeout=60)
    term.type(f"cd {draft}\r".encode())
    term.wait_for(f"slurm:{job}:{draft}$".encode())
    mark = len(term.seen)
    term.type(b":glob '*.js''on'\r")  # the quotes split the typed line from what it prints
    term.wait_for(b"config.json\r\n", after=mark)
    mark = len(term.seen)
    term.type(b'echo "in""side=$SLURM_JOB_ID/$SLURMD_NODENAME"\r')
    term.wait_for(f"inside={job}/{NODES[0]}".encode(), after=mark)
    term.type(b"exit\r")
    assert term.exit_status() == 0
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=10), cluster.steps(job)
    login = login_node.directory.parent / "ssh_config"
    lines = [f"cd {draft}", ":glob '*.json'", "echo $SLURM_JOB_ID/$SLURMD_NODENAME", "pwd"]
    done = rdbg(cluster, "repl", "-H", f"slurm:{job}@login", ssh_config=login,
                input="".join(f"{line}\n" for line in lines).encode())  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == ["config.json", f"{job}/{NODES[0]}", str(draft)]
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=10), cluster.steps(job)


def _rows(done: subprocess.CompletedProcess[bytes]) -> list[str]:
    return [line for line in done.stdout.decode().splitlines() if line.strip()]


def test_a_job_and_the_jobs_a_filter_selects_run_as_a_fleet(cluster: Cluster, served: dict,
                                                            login_node: Sshd) -> None:  # fmt: skip
    """`slurm:JOB/*`: every node of the job, a row each; `slurm:KEY=VALUE[:...]`: each running
    job squeue selects (the user's own unless `user=`), its first node or, with `/*`, every
    node; directly and through the login node. (Before the login-node test, which stops that
    sshd.)"""
    job = served["job"]
    echo = ["--", "sh", "-c", "echo $SLURM_JOB_ID $SLURMD_NODENAME"]
    every = [part for node in NODES for part in (f"── slurm:{job}/{node}: exit 0", f"{job} {node}")]
    for host in (f"slurm:{job}/*", "slurm:sglang-srv/*"):
        done = rdbg(cluster, "run", "-H", host, *echo)
        assert done.returncode == 0 and _rows(done) == every, done.stderr
    other = cluster.submit("sleep 300", name="fleet-b")
    try:
        node = cluster.run("squeue", "-h", "-j", other, "-o", "%N").stdout.strip()
        first = [f"── slurm:{job}: exit 0", f"{job} {NODES[0]}",
                 f"── slurm:{other}: exit 0", f"{other} {node}"]  # fmt: skip
        done = rdbg(cluster, "run", "-H", "slurm:partition=debug", *echo)
        assert done.returncode == 0 and _rows(done) == first, done.stderr
        # filters combine as squeue's (a key's values: any of them), `/*` every node of each
        host = f"slurm:user={getpass.getuser()}:name=fleet-b:name=sglang-srv:partition=debug/*"
        done = rdbg(cluster, "run", "-H", host, *echo)
        assert _rows(done) == [*every, f"── slurm:{other}/{node}: exit 0", f"{other} {node}"]
        login = login_node.directory.parent / "ssh_config"
        done = rdbg(cluster, "run", "-H", "slurm:name=fleet-b:name=sglang-srv@login", *echo,
                    ssh_config=login)  # fmt: skip
        assert _rows(done) == [line.replace(": exit", "@login: exit") for line in first]
        # a playbook over the filter: a row each
        done = rdbg(cluster, "playbook", "spec-audit", "-H", "slurm:partition=debug", "--json",
                    "--var", f"server={served['port']}", timeout=180)  # fmt: skip
        doc = json.loads(done.stdout)
        assert [(h["host"], h["exit_code"]) for h in doc["hosts"]] == [
            (f"slurm:{job}", 1), (f"slurm:{other}", 1)], done.stderr  # fmt: skip
        # diagnose over every node of the job (the nodes share this machine: each sees it)
        done = rdbg(cluster, "diagnose", "-H", f"slurm:{job}/*", "--server", str(served["port"]),
                    "--json", "--no-probe", timeout=180)  # fmt: skip
        doc = json.loads(done.stdout)
        assert [(h["host"], h["first_cause"]) for h in doc["hosts"]] == [
            (f"slurm:{job}/{node}", "algorithm-mismatch") for node in NODES], done.stderr
    finally:
        cluster.cancel(other)
    for host, code, said in (
        ("slurm:name=fleet-b", 2, "--host slurm:name=fleet-b: selects no running job of yours"),
        ("slurm:user=nobody:name=sglang-srv", 2,
         "--host slurm:user=nobody:name=sglang-srv: selects no running job"),
        ("slurm:colour=red", 2, "colour=red: filters are user=VALUE, name=VALUE, partition=VALUE"),
        # as slurm:JOB: "no job N in the queue", or "job N is CANCELLED" while squeue has it
        (f"slurm:{other}/*", 4, f"remotedbg: slurm:{other}/*: "),
    ):  # fmt: skip
        done = rdbg(cluster, "run", "-H", host, *echo)
        lines = done.stderr.decode().strip().splitlines()
        assert (done.returncode, len(lines)) == (code, 1) and said in lines[0], done.stderr
    done = rdbg(cluster, "get", "-H", f"slurm:{job}/*", "/etc/hostname", "/tmp")
    lines = done.stderr.decode().strip().splitlines()
    assert (done.returncode, len(lines)) == (2, 1) and "a fleet's form" in lines[0], lines
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=10), cluster.steps(job)


def test_through_a_login_node_over_ssh(cluster: Cluster, served: dict, login_node: Sshd) -> None:
    job = served["job"]
    login = login_node.directory.parent / "ssh_config"
    done = rdbg(cluster, "run", "-H", f"slurm:{job}@login", "--", "sh", "-c",
                "echo $SLURM_JOB_ID; cat", input=b"via login\n", ssh_config=login)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == [job, "via login"]
    done = rdbg(cluster, "diagnose", "-H", "slurm:sglang-srv@login", "--server",
                str(served["port"]), "--json", "--no-probe", ssh_config=login)  # fmt: skip
    doc = json.loads(done.stdout)
    assert doc["server"]["pid"] == served["pid"], done.stderr
    assert doc["causes"][0]["id"] == "algorithm-mismatch", doc["causes"]
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=10), cluster.steps(job)
    # the system ssh client too; killed, its connection's end ends the step on the login node
    env = cli_env(cluster, REMOTEDBG_SSH_CONFIG=str(login))
    del env["SLURM_CONF"]
    process = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", "--transport", "ssh", "-H",
         f"slurm:{job}@login", "--", "sleep", "987"], env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert wait_for(lambda: any(_cmdline(p) == b"sleep\x00987\x00" for p in _pids()), 20)
    process.kill()
    process.communicate()
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=15), cluster.steps(job)
    assert not [p for p in _pids() if _cmdline(p) == b"sleep\x00987\x00"]
    # the login node's connection lost under a command (its sshd's connection processes
    # killed): one line that says so, not that the job ended; the step ends with srun's end
    process = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", "-H", f"slurm:{job}@login", "--", "sleep",
         "987"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert wait_for(lambda: any(_cmdline(p) == b"sleep\x00987\x00" for p in _pids()), 20)
    for pid in _children(login_node.process.pid):
        os.kill(pid, signal.SIGKILL)
    _, stderr = process.communicate(timeout=30)
    lines = stderr.decode().strip().splitlines()
    assert lines == [f"remotedbg: slurm:{job}@login: the step stopped under the command (srun "
                     f"on login gone; job {job} still runs)"], lines
    assert process.returncode == 255
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=15), cluster.steps(job)
    # the login node gone for good (its sshd stopped too): a connection failure, one line
    process = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", "-H", f"slurm:{job}@login", "--", "sleep",
         "987"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert wait_for(lambda: any(_cmdline(p) == b"sleep\x00987\x00" for p in _pids()), 20)
    connections = _children(login_node.process.pid)
    login_node.stop()
    for pid in connections:
        os.kill(pid, signal.SIGKILL)
    try:
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    lines = stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "login does not answer" in lines[0], lines
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=15), cluster.steps(job)


def test_run_t_gets_a_terminal_in_the_job(cluster: Cluster, served: dict) -> None:
    job = served["job"]
    program = ("import os, sys; print('tty', sys.stdin.isatty(), os.environ['SLURM_JOB_ID']); "
               "print('got', input('name? ')); sys.exit(7)")  # fmt: skip
    env = cli_env(cluster, TERM="xterm")
    term = Terminal(["run", "-t", "-H", f"slurm:{job}", "--", "python3", "-c", program], env,
                    columns=90, lines=30)  # fmt: skip
    term.wait_for(b"name? ")
    assert f"tty True {job}".encode() in term.seen
    term.type(b"hello\r")
    term.wait_for(b"got hello")
    assert term.exit_status() == 7
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=10), cluster.steps(job)


def test_a_persistent_session_holds_one_step_until_its_daemon_goes(
    cluster: Cluster, served: dict, tmp_path: Path
) -> None:
    job = served["job"]
    runtime = tmp_path / "run"
    env = cli_env(cluster, REMOTEDBG_PERSIST="60", REMOTEDBG_RUNTIME_DIR=str(runtime))
    said = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "remotedbg", "run", "-H", f"slurm:{job}", "--", "sh", "-c",
             "echo $SLURM_STEP_ID"], env=env, capture_output=True, stdin=subprocess.DEVNULL,
            timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        said.append(done.stdout.decode().strip())
    assert said[0] == said[1] and cluster.steps(job) == [f"{job}.{said[0]}"]
    daemons = persist_daemons(runtime)
    assert daemons
    for pid in daemons:  # the worst end: killed, nothing of its own closes the step
        os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: no_steps_left(cluster, job), timeout=15), cluster.steps(job)
