"""A real two-node Slurm cluster for the Slurm tests, hermetic: Debian's `slurm-wlm` (22.05)
and `munge`, every bit of state in a temp dir (its own munge key and socket, its own
slurm.conf on free ports, spool and state dirs there), `munged`, `slurmctld` and one `slurmd`
per node (both on this machine, each `-N NAME` with its own port and spool dir) run as root,
and all of it stopped at the end with nothing left: no job, no step, no process of the
cluster's, no file.

Hermetic, so no cgroup: `ProctrackType=proctrack/linuxproc` (the job's processes are found by
walking /proc from the step's) and `TaskPlugin=task/none` (proctrack/cgroup would make cgroups in
this machine's shared hierarchy and need a cgroup.conf); no accounting (`accounting_storage/none`,
`jobacct_gather/none`). Clients (`srun`, `sbatch`, `squeue`, and remotedbg's Slurm session) reach
this cluster through `SLURM_CONF` in `env`."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

NODES = ("rdbg1", "rdbg2")  # two slurmd on this machine, each its own port and spool
BINARIES = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "scancel")


def available() -> str | None:
    """Why this machine cannot run the cluster; None when it can."""
    if os.geteuid() != 0:
        return "slurmctld and slurmd run as root here"
    missing = [name for name in BINARIES if not _which(name)]
    if missing:
        return "not installed: " + ", ".join(missing) + " (apt-get install slurm-wlm munge)"
    return None


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _conf(root: Path, ctld_port: int, node_ports: list[int], srun_ports: tuple[int, int]) -> str:
    cpus = os.cpu_count() or 1
    nodes = [f"NodeName={name} NodeAddr=127.0.0.1 NodeHostname={socket.gethostname()}"
             f" Port={port} CPUs={cpus} State=UNKNOWN"
             for name, port in zip(NODES, node_ports, strict=True)]  # fmt: skip
    return "\n".join(
        [
            "ClusterName=rdbgtest",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            f"SrunPortRange={srun_ports[0]}-{srun_ports[1]}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"AuthInfo=socket={root}/munge/munge.sock",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"StateSaveLocation={root}/state",
            f"SlurmdSpoolDir={root}/spool/%n",
            f"SlurmctldPidFile={root}/slurmctld.pid",
            f"SlurmdPidFile={root}/slurmd-%n.pid",
            f"SlurmctldLogFile={root}/slurmctld.log",
            f"SlurmdLogFile={root}/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SwitchType=switch/none",
            "MpiDefault=none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/builtin",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            "KillWait=2",
            "MinJobAge=2",
            "InactiveLimit=0",
            *nodes,
            # jobs share the nodes' CPUs: the tests run several at once on two cores
            f"PartitionName=debug Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE"
            " State=UP OverSubscribe=FORCE:4",
            "",
        ]
    )


class Cluster:
    """munged + slurmctld + slurmd on free ports under one temp dir; `env` for the clients."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="remotedbg-slurm-"))
        self.root.chmod(0o755)
        for sub in ("munge", "state", "spool", *(f"spool/{name}" for name in NODES)):
            (self.root / sub).mkdir(mode=0o700)
        (self.root / "munge").chmod(0o755)  # clients of any user reach the socket
        key = self.root / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        ctld, low, *node_ports = _free_ports(2 + len(NODES))
        self.conf = self.root / "slurm.conf"
        self.conf.write_text(_conf(self.root, ctld, node_ports, (low, low + 20)))
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self._daemons: list[subprocess.Popen[bytes]] = []
        self._key = key

    def start(self, timeout: float = 30) -> Cluster:
        munge = self.root / "munge"
        self._daemon(
            [_which("munged") or "munged", "-F", "--force", f"--socket={munge}/munge.sock",
             f"--key-file={self._key}", f"--pid-file={munge}/munged.pid",
             f"--log-file={munge}/munged.log", f"--seed-file={munge}/seed", "--num-threads=2"],
            "munged",
        )  # fmt: skip
        self._wait(lambda: (munge / "munge.sock").exists(), timeout, "munged")
        self._daemon([_which("slurmctld") or "slurmctld", "-D", "-i", "-f", str(self.conf)],
                     "slurmctld")  # fmt: skip
        for name in NODES:
            self._daemon([_which("slurmd") or "slurmd", "-D", "-N", name, "-f", str(self.conf)],
                         f"slurmd-{name}")  # fmt: skip
        self._wait(self._nodes_idle, timeout, "the nodes")
        return self

    def _daemon(self, argv: list[str], name: str) -> None:
        log = open(self.root / f"{name}.out", "ab")
        with log:
            self._daemons.append(
                subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=self.env, start_new_session=True)
            )  # fmt: skip

    def _nodes_idle(self) -> bool:
        done = self.run("sinfo", "-h", "-N", "-o", "%t", check=False)
        states = done.stdout.split()
        return len(states) == len(NODES) and set(states) <= {"idle", "mix", "alloc"}

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for process in self._daemons:
                if process.poll() is not None:
                    raise RuntimeError(f"{process.args[0]} exited: {self.logs()}")
            if ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{what} not ready after {timeout:g}s: {self.logs()}")

    def logs(self) -> str:
        texts = []
        for path in sorted(self.root.glob("*.log")) + sorted(self.root.glob("*.out")):
            texts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}")
        return "\n".join(texts)

    def run(self, *argv: str, check: bool = True, timeout: float = 30,
            input: str | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=timeout,
            check=check, input=input,
        )  # fmt: skip

    def submit(self, script: str, name: str = "rdbg", nodes: int = 1, timeout: float = 20) -> str:
        """Submit `script` (a shell command line) as a batch job and wait until it runs: its id."""
        out = self.run("sbatch", "--parsable", "-J", name, "-N", str(nodes), "-o",
                       str(self.root / "job-%j.out"), "--wrap", script).stdout  # fmt: skip
        job = out.strip().split(";")[0]
        self._wait(lambda: self.state(job) == "RUNNING", timeout, f"job {job}")
        return job

    def state(self, job: str) -> str:
        done = self.run("squeue", "-h", "-j", job, "-o", "%T", check=False)
        return done.stdout.strip()

    def steps(self, job: str) -> list[str]:
        """The job's steps other than its batch script's."""
        done = self.run("squeue", "-h", "-s", "-j", job, "-o", "%i", check=False)
        return [s for s in done.stdout.split() if not s.endswith((".batch", ".extern"))]

    def jobs(self) -> list[str]:
        return self.run("squeue", "-h", "-o", "%i").stdout.split()

    def cancel(self, job: str, timeout: float = 15) -> None:
        self.run("scancel", job, check=False)
        self._wait(lambda: job not in self.jobs(), timeout, f"job {job}'s end")

    def stop(self) -> None:
        """Every job cancelled, the daemons stopped (slurmd, slurmctld, munged), the dir removed;
        raises when a job's process or a daemon outlived it."""
        leftovers: list[str] = []
        try:
            for job in self.jobs():
                self.cancel(job)
        except Exception as error:  # noqa: BLE001 - stop the daemons whatever happened
            leftovers.append(f"jobs: {error}")
        for process in reversed(self._daemons):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    leftovers.append(f"{process.args[0]} ignored SIGTERM")
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        stray = self.processes()
        for pid in stray:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if stray:
            leftovers.append(f"processes left: {stray}")
        shutil.rmtree(self.root, ignore_errors=True)
        if leftovers:
            raise RuntimeError("; ".join(leftovers))

    def processes(self) -> list[int]:
        """Processes whose environment or command line names this cluster's dir (its daemons,
        slurmstepd, the jobs' and steps' processes)."""
        mark = str(self.root).encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if mark in (entry / "cmdline").read_bytes() or mark in (
                    entry / "environ"
                ).read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
        return found


if __name__ == "__main__":  # a look by hand: python3 -m tests.slurm
    cluster = Cluster()
    try:
        cluster.start()
        job = cluster.submit("sleep 300")
        print("job", job, cluster.state(job))
        done = cluster.run("srun", "--overlap", "--jobid", job, "python3", "-c",
                           "import sys; print(sys.stdin.read().upper())", input="hello\n")
        print(done.stdout, done.stderr)
    finally:
        print(cluster.logs()[-2000:])
        cluster.stop()
