"""A session inside a running Slurm job: `-H slurm:JOB[/NODE][@LOGIN]`.

JOB is a job id (`4242`, an array task `4242_7`) or the name of one running job of the user;
NODE one node of a multi-node job (the first when left out); LOGIN the host `srun` runs on,
in any form `--host` takes (an ssh_config alias, `user@host[:port]`), this machine when left out.

The executor (remotedbg/agent/executor.py) runs in a job step of its own, `srun --overlap
--jobid JOB -N1 -n1 [-w NODE] ... python3 -`, beside the job's own steps and on its resources,
so every command sees the job's node as the server does: its processes, its files, its
loopback ports. The step ends when the executor does, and the executor ends when its stdin
closes: srun hands the task EOF when its own stdin closes (the session closed, remotedbg or
the login node's ssh gone), and srun's end (a signal) ends the step with it.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from typing import TYPE_CHECKING, Any

from remotedbg.errors import ConnectionFailed, RemoteCommandError, RemotedbgError, UsageError
from remotedbg.host_spec import is_slurm_selection
from remotedbg.session.base import Session
from remotedbg.session.entered import EnteredSession
from remotedbg.session.target import LOCAL, ConnectOptions

if TYPE_CHECKING:  # executor_client brings paramiko: imported when the executor starts
    from remotedbg.session.executor_client import ExecutorChannel

PREFIX = "slurm:"
START_TIMEOUT = 60.0  # srun may wait for the controller to create the step
_JOB_ID = re.compile(r"^\d+(?:_\d+)?$")
_WORD = re.compile(r"^[^\s/@,]+$")
_TASK_EXITED = re.compile(r"task \d+: Exited with exit code")
FILTER_KEYS = ("user", "name", "partition")  # squeue's --user, --name, --partition


class SlurmJobGone(RemoteCommandError):
    """The job ended (cancelled, its time limit, its script done) under a command."""


@dataclasses.dataclass(frozen=True)
class JobSpec:
    job: str  # an id or a name
    node: str | None
    login: str | None  # the host srun runs on; None: this machine

    @property
    def by_id(self) -> bool:
        return bool(_JOB_ID.match(self.job))


def parse(host: str) -> JobSpec:
    """`slurm:JOB[/NODE][@LOGIN]` as typed; UsageError for what is none of it."""
    rest = host[len(PREFIX) :]
    where, at, login = rest.partition("@")
    job, slash, node = where.partition("/")
    usage = (
        f"--host {host}: expected slurm:JOB[/NODE][@LOGIN] (a job id or name, a node of it, "
        "the login node srun runs on)"
    )
    if not _WORD.match(job) or (slash and not _WORD.match(node)) or (at and not login.strip()):
        raise UsageError(usage)
    if is_slurm_selection(host):
        raise UsageError(
            f"--host {host}: selects nodes of jobs, a fleet's form: for run, diagnose, probe, "
            "logs and playbooks; name one node here (slurm:JOB[/NODE])"
        )
    return JobSpec(job, node or None, login.strip() or None)


@dataclasses.dataclass(frozen=True)
class Selection:
    """`slurm:JOB/*` or `slurm:KEY=VALUE[:KEY=VALUE...][/*][@LOGIN]` as typed: the nodes of
    one job, or the running jobs squeue's filters select (the user's own unless `user=`)."""

    job: str | None  # `JOB/*`: an id or a name
    filters: dict[str, tuple[str, ...]]  # key -> values (one key's values: any of them)
    every_node: bool  # `/*`; else each job's first node
    login: str | None

    def squeue_words(self) -> list[str]:
        words = [] if "user" in self.filters else ["--me"]
        for key, values in sorted(self.filters.items()):
            words.append(f"--{key}={','.join(values)}")
        return [*words, "--states=RUNNING", "--format=%i|%N"]

    def host(self, job_id: str, node: str | None) -> str:
        where = f"{job_id}/{node}" if node else job_id
        return f"{PREFIX}{where}@{self.login}" if self.login else PREFIX + where


def parse_selection(host: str) -> Selection:
    """A selection form as typed; UsageError (exit 2) for a key squeue is not asked by or a
    node part other than `/*`."""
    rest = host.strip()[len(PREFIX) :]
    where, at, login = rest.partition("@")
    jobs, slash, node = where.partition("/")
    if (slash and node != "*") or (at and not login.strip()) or not jobs:
        raise UsageError(
            f"--host {host}: expected slurm:JOB/* or slurm:KEY=VALUE[:KEY=VALUE...][/*][@LOGIN]"
        )
    login = login.strip() or None
    if "=" not in jobs:
        if not _WORD.match(jobs):
            raise UsageError(f"--host {host}: expected slurm:JOB/* (a job id or name)")
        return Selection(jobs, {}, True, login)
    filters: dict[str, tuple[str, ...]] = {}
    for part in jobs.split(":"):
        key, _, value = part.partition("=")
        if key not in FILTER_KEYS or not _WORD.match(value):
            raise UsageError(
                f"--host {host}: {part or 'an empty filter'}: filters are "
                f"{', '.join(f'{k}=VALUE' for k in FILTER_KEYS)}, joined by ':'"
            )
        filters[key] = (*filters.get(key, ()), value)
    return Selection(None, filters, bool(slash), login)


def select_hosts(host: str, options: ConnectOptions) -> list[str]:
    """The hosts a selection form names, one per node (`slurm:ID/NODE[@LOGIN]`, or `slurm:ID`
    for a job's first node), jobs in id order: squeue asked where srun would run (this machine,
    or the login node). A filter that selects no running job is a UsageError (exit 2)."""
    import hostlist

    from remotedbg.session import open_session

    selection = parse_selection(host)
    via = open_session(_via(dataclasses.replace(options, host=host), selection.login))
    try:
        if selection.job is not None:
            rows = [list(_find_job(via, host, selection.job))]
        else:
            rows = _squeue(via, host, *selection.squeue_words())
    finally:
        via.close()
    if not rows:
        mine = "" if "user" in selection.filters else " of yours"
        raise UsageError(f"--host {host}: selects no running job{mine}")
    hosts = []
    for job_id, nodelist in sorted({(r[0], r[-1]) for r in rows}, key=lambda r: _id_key(r[0])):
        if not selection.every_node:
            hosts.append(selection.host(job_id, None))
            continue
        hosts += [selection.host(job_id, node) for node in hostlist.expand_hostlist(nodelist)]
    return hosts


def _via(options: ConnectOptions, login: str | None) -> ConnectOptions:
    if options.container:
        raise UsageError(f"--host {options.host}: --container does not work inside a job")
    return dataclasses.replace(options, host=login or LOCAL)


def _id_key(job_id: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", job_id))


def _squeue(host: Session, name: str, *words: str) -> list[list[str]]:
    """squeue's rows (fields split on `|`) on the host srun runs on."""
    result = host.run(["squeue", "--noheader", *words], timeout=30)
    if "Invalid job id" in result.stderr:  # a job the controller has forgotten
        return []
    if result.exit_status == 127:
        where = host.name if host.kind != LOCAL else "this machine"
        raise RemoteCommandError(f"{name}: no squeue on {where}: no Slurm client there")
    if not result.ok:
        said = result.stderr.strip().splitlines()
        raise RemoteCommandError(
            f"{name}: squeue failed: {said[-1] if said else f'exit {result.exit_status}'}"
        )
    return [line.split("|") for line in result.stdout.splitlines() if line.strip()]


def _find_job(host: Session, name: str, job: str) -> tuple[str, str]:
    """The running job `job` names (an id, or the name of one job of the user's) and its
    nodes as squeue prints them; one line when there is none or several."""
    if _JOB_ID.match(job):
        rows = _squeue(host, name, "--jobs", job, "--format=%i|%T|%N")
        states = {row[1] for row in rows if row[0] == job}
        if not states:
            raise SlurmJobGone(f"{name}: no job {job} in the queue")
        if states != {"RUNNING"}:
            raise SlurmJobGone(f"{name}: job {job} is {'/'.join(sorted(states))}, not running")
        return job, next(row[2] for row in rows if row[0] == job)
    rows = _squeue(host, name, "--me", "--name", job, "--states=RUNNING", "--format=%i|%T|%N")
    ids = sorted({row[0] for row in rows})
    if not ids:
        raise SlurmJobGone(f"{name}: no running job named {job}")
    if len(ids) > 1:
        raise UsageError(
            f"{name}: {len(ids)} running jobs named {job} ({', '.join(ids)}): name one by id "
            f"(slurm:{ids[0]}), or all of them as a fleet (slurm:name={job})"
        )
    return ids[0], next(row[2] for row in rows if row[0] == ids[0])


def srun_words(job_id: str, node: str | None) -> list[str]:
    """The step the executor runs in: one task on one node of the job, beside its other steps
    (`--overlap`), stdio unbuffered (the executor's frames are binary, not lines), srun's own
    notices quiet."""
    words = ["srun", "--overlap", f"--jobid={job_id}", "--nodes=1", "--ntasks=1", "--unbuffered",
             "--quiet", "--job-name=remotedbg"]  # fmt: skip
    if node:
        words.append(f"--nodelist={node}")
    return words


class SlurmSession(EnteredSession):
    """Commands and agent calls in a step of a running Slurm job, through `srun` run by the
    host session (this machine's, or a login node's over ssh)."""

    kind = "slurm"

    @classmethod
    def via_options(cls, options: ConnectOptions) -> ConnectOptions:
        """The session srun runs in: the login node's (with the options given), or `local`."""
        return _via(options, parse(options.host).login)

    @classmethod
    def open(cls, options: ConnectOptions, max_output: int, via: Any) -> SlurmSession:
        assert isinstance(via, Session)
        try:
            return cls(via, parse(options.host), options.host)
        except BaseException:
            via.close()
            raise

    def __init__(self, host: Session, spec: JobSpec, name: str) -> None:
        super().__init__(name, host, "")
        self.spec = spec
        self.job_id = self._job_id()
        self._where = f" in job {self.job_id}"
        self._executor = self._start()

    # -- the job -------------------------------------------------------------------------
    def _squeue(self, *words: str) -> list[list[str]]:
        return _squeue(self.host, self.name, *words)

    def _job_id(self) -> str:
        """The running job the spec names; one line when there is none or several."""
        return _find_job(self.host, self.name, self.spec.job)[0]

    def job_state(self) -> str | None:
        """The job's state now ("" when it has left the queue; None when squeue could not be
        asked: the login node's connection gone)."""
        try:
            rows = self._squeue("--jobs", self.job_id, "--format=%i|%T")
        except RemotedbgError:
            return None
        return next((row[1] for row in rows if row[0] == self.job_id and len(row) > 1), "")

    # -- the executor --------------------------------------------------------------------
    def _channels(self) -> Any:
        channels = self.host.byte_channels()
        if channels is not None:
            return channels
        if self.host.kind != LOCAL:
            raise ConnectionFailed(f"{self.name}: {self.host.kind} sessions cannot start srun")
        from remotedbg.session.ssh_pipe import ProcessTransport

        # as a local session's commands: in the home directory, which a step inherits
        return ProcessTransport(lambda command: ["/bin/sh", "-c", f"cd && {command}"])

    def _start(self) -> ExecutorChannel:
        import paramiko

        from remotedbg.session import agent_bundle
        from remotedbg.session.executor_client import ExecutorChannel

        boot = shlex.join(srun_words(self.job_id, self.spec.node)) + " "
        boot += agent_bundle.boot_command(agent_bundle.DEFAULT_PYTHON)
        budget = START_TIMEOUT
        if self.host.default_timeout is not None:
            budget = min(budget, max(self.host.default_timeout, 5.0))
        try:
            executor, why = ExecutorChannel.start_or_why(
                self._channels(), boot, agent_bundle.executor_bundle, budget
            )
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionFailed(f"{self.name}: cannot start srun: {exc}") from None
        if executor is None:
            state = self.job_state()
            if state is not None and state != "RUNNING":
                raise self._gone(state)
            if _TASK_EXITED.search(why):  # srun's summary; slurmstepd's execve() line is above
                why += f" (is {agent_bundle.DEFAULT_PYTHON} on the job's PATH?)"
            raise RemoteCommandError(
                f"{self.name}: srun into job {self.job_id} failed: {why or 'no answer'}"
            )
        return executor

    def _gone(self, state: str) -> SlurmJobGone:
        return SlurmJobGone(
            f"{self.name}: job {self.job_id} ended"
            + (f" ({state})" if state else " (no longer in the queue)")
        )

    def _executor_failed(self, error: Exception) -> RemotedbgError:
        """The step ended under a request: the job's end, or the lost login node, says why in
        one line."""
        state = self.job_state()
        if state is None:
            return ConnectionFailed(
                f"{self.name}: the step stopped and {self.host.name} does not answer: {error}"
            )
        if state != "RUNNING":
            return self._gone(state)
        where = "this machine" if self.host.kind == LOCAL else self.host.name
        detail = f": {error}" if str(error) else ""
        return RemoteCommandError(
            f"{self.name}: the step stopped under the command (srun on {where} gone; job "
            f"{self.job_id} still runs){detail}"
        )

    def _execute_tty(self, text: str) -> int:
        words = [*srun_words(self.job_id, self.spec.node), "--pty", "sh", "-c"]
        words.remove("--unbuffered")
        return self.host._execute_tty(f"{shlex.join(words)} {shlex.quote(text)}")
