"""Run one playbook on many hosts in parallel, and compare what should agree between them."""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from remotedbg.contract import VERDICT_EXIT
from remotedbg.errors import ConnectionFailed, ExitCode, Interrupted, RemotedbgError, UsageError
from remotedbg.host_spec import is_slurm_selection
from remotedbg.inventory import expand, hosts_from_file
from remotedbg.playbook import Playbook, RunOutcome, run_playbook
from remotedbg.remote import calls
from remotedbg.remote.primitives import Remote
from remotedbg.session import ConnectOptions, Session
from remotedbg.session import open_session as _open_one

MAX_PARALLEL = 16
# OpenSSH's default `MaxStartups 10:30:100` drops handshakes past 10 at a time on a jump host
# (the client reads "Error reading SSH protocol banner"): at most this many at once through one,
# and a handshake dropped before its banner is tried again after a growing, jittered pause.
PER_JUMP_HOST = 8
RETRY_PAUSES = (0.3, 0.8, 2.0)
_DROPPED = ("banner exchange", "Connection closed by remote host", "Connection reset by peer")
_gates: dict[str, threading.Semaphore] = {}
_gates_lock = threading.Lock()


@contextmanager
def _handshake_slot(options: ConnectOptions) -> Iterator[None]:
    """A slot among the handshakes in flight through this host's first jump host, if any."""
    jump = None
    if options.host and options.host != "local":
        from remotedbg.session.target import resolve

        try:
            jump = (resolve(options).proxy_jump or "").split(",")[0] or None
        except RemotedbgError:
            jump = None  # open_session reports it
    if jump is None:
        yield
        return
    with _gates_lock:
        gate = _gates.setdefault(jump, threading.Semaphore(PER_JUMP_HOST))
    with gate:
        yield


def open_session(options: ConnectOptions) -> Session:
    """A fleet host's session: handshakes through a shared jump host bounded, a handshake the
    server dropped before its banner retried with backoff."""
    with _handshake_slot(options):
        for pause in (*RETRY_PAUSES, None):
            try:
                return _open_one(options)
            except ConnectionFailed as error:
                if pause is None or not any(words in str(error) for words in _DROPPED):
                    raise
            time.sleep(pause * (1 + random.random()))
    raise AssertionError("unreachable")


class _Open:
    """The fleet's open sessions: Ctrl-C closes them all at once (each remote executor then
    stops its command as its channel closes) instead of waiting for every host to finish."""

    def __init__(self) -> None:
        self.sessions: set[Session] = set()
        self.lock = threading.Lock()
        self.stopping = False

    @contextmanager
    def session(self, options: ConnectOptions) -> Iterator[Session]:
        session = open_session(options)
        with self.lock:
            if self.stopping:
                session.close()
                raise Interrupted("interrupted: the remote commands were stopped")
            self.sessions.add(session)
        try:
            yield session
        finally:
            with self.lock:
                self.sessions.discard(session)
            session.close()

    def close_all(self) -> None:
        with self.lock:
            self.stopping = True
            sessions, self.sessions = list(self.sessions), set()
        for session in sessions:
            try:
                session.close()
            except Exception:  # noqa: BLE001 - a session half torn down by its worker
                pass


def _in_parallel(hosts: list[str], one: Callable[[str], Any], opened: _Open,
                 on_done: Callable[[Any], None] | None = None) -> list[Any]:  # fmt: skip
    """`one(host)` for every host on a thread pool, results in the hosts' order."""
    pool = ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(hosts)))
    try:
        futures = [pool.submit(one, host) for host in hosts]
        results = []
        for future in futures:
            results.append(future.result())
            if on_done:
                on_done(results[-1])
        return results
    except KeyboardInterrupt:
        opened.close_all()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=False)
FINGERPRINT_TENSORS = ["d2t", "t2d", "fc.weight", "lm_head.weight"]
# worst first: what we know least about ranks highest
EXIT_RANK = [ExitCode.OK, ExitCode.FINDINGS, ExitCode.REMOTE, ExitCode.CONNECTION]


def parse_hosts(
    host_option: str,
    hosts_file: Path | None,
    group: str | None = None,
    options: ConnectOptions | None = None,
) -> list[str]:
    """Every host of a fleet run: `--host` as a hostlist (`gpu[01-16],box`), then the hosts
    file (a plain list or an Ansible inventory, `--group` choosing a group of it); a Slurm
    selection (`slurm:JOB/*`, `slurm:name=serve`) becomes the nodes squeue names, squeue run
    where srun would run with `options` (the login node's)."""
    hosts = expand(host_option) if host_option else []
    if hosts_file is not None:
        try:
            text = hosts_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise UsageError(f"--hosts-file {hosts_file}: {reason}") from None
        hosts += hosts_from_file(text, group)
    elif group:
        raise UsageError("--group selects hosts of an inventory: give it with --hosts-file")
    hosts = [h for h in dict.fromkeys(hosts) if h]
    if not hosts:
        raise UsageError("no host given: --host H[,H...], --host 'gpu[01-16]' or --hosts-file FILE")
    if not any(is_slurm_selection(host) for host in hosts):
        return hosts
    from remotedbg.session.slurm import select_hosts

    selected: list[str] = []
    for host in hosts:
        is_selection = is_slurm_selection(host)
        selected += select_hosts(host, options or ConnectOptions(host)) if is_selection else [host]
    return list(dict.fromkeys(selected))


@dataclasses.dataclass
class HostResult:
    host: str
    exit_code: int
    outcome: RunOutcome | None = None
    error: str | None = None
    fingerprints: dict[str, Any] = dataclasses.field(default_factory=dict)


def worst_exit(codes: list[int]) -> int:
    return max(codes, key=lambda code: EXIT_RANK.index(code) if code in EXIT_RANK else 99)


def _fingerprint_request(outcome: RunOutcome) -> dict[str, Any]:
    audit = outcome.section("drafts")
    files = [d["loader"]["path"] for d in audit.get("drafts", []) if d.get("loader")]
    tensors = {d["draft"]: FINGERPRINT_TENSORS for d in audit.get("drafts", [])}
    return {"files": files, "tensors": tensors}


def audit_host(
    host: str,
    base: ConnectOptions,
    playbook: Playbook,
    variables: dict[str, Any],
    allow_write: bool,
    opened: _Open | None = None,
) -> HostResult:
    options = dataclasses.replace(base, host=host)
    try:
        with (opened or _Open()).session(options) as session:
            remote = Remote(session)
            outcome = run_playbook(playbook, remote, variables, allow_write)
            prints = remote.call(calls.FingerprintFiles(_fingerprint_request(outcome)))
        return HostResult(host, VERDICT_EXIT[outcome.verdict], outcome, fingerprints=prints)
    except RemotedbgError as error:
        return HostResult(host, error.exit_code, error=str(error))
    except Exception as error:  # noqa: BLE001 - one host's surprise is that host's row only
        return HostResult(
            host,
            VERDICT_EXIT["inconclusive"],
            error=f"{host}: could not be audited ({type(error).__name__}: {error})",
        )


def run_fleet(
    hosts: list[str],
    base: ConnectOptions,
    playbook: Playbook,
    variables: dict[str, Any],
    allow_write: bool,
    on_done: Callable[[HostResult], None] | None = None,
) -> list[HostResult]:
    opened = _Open()
    return _in_parallel(
        hosts,
        lambda host: audit_host(host, base, playbook, variables, allow_write, opened),
        opened,
        on_done,
    )


@dataclasses.dataclass
class HostRun:
    """One host's share of `run` on several hosts."""

    host: str
    exit_code: int
    stdout: bytes = b""
    stderr: bytes = b""
    error: str | None = None


def run_on_hosts(
    hosts: list[str], base: ConnectOptions, command: str, cwd: str | None = None
) -> list[HostRun]:
    """The same command on every host in parallel (as `ansible -m shell`), output captured per
    host and returned in the hosts' order."""

    opened = _Open()

    def one(host: str) -> HostRun:
        try:
            with opened.session(dataclasses.replace(base, host=host)) as session:
                result = session.run(command, cwd=cwd)
        except RemotedbgError as error:
            return HostRun(host, error.exit_code, error=str(error))
        status = result.exit_status if result.exit_status is not None else ExitCode.REMOTE
        return HostRun(host, status, result.stdout_bytes, result.stderr_bytes)

    return _in_parallel(hosts, one, opened)


@dataclasses.dataclass
class HostValue:
    """One host's share of an action run on several hosts: its value, or why there is none."""

    host: str
    value: Any = None
    error: str | None = None
    exit_code: int = ExitCode.OK


def map_hosts(
    hosts: list[str], base: ConnectOptions, work: Callable[[Remote], Any]
) -> list[HostValue]:
    """`work(remote)` on every host in parallel, in the hosts' order; a host's failure is that
    host's row, never the run's end."""

    opened = _Open()

    def one(host: str) -> HostValue:
        try:
            with opened.session(dataclasses.replace(base, host=host)) as session:
                return HostValue(host, work(Remote(session)))
        except RemotedbgError as error:
            return HostValue(host, error=str(error), exit_code=error.exit_code)

    return _in_parallel(hosts, one, opened)


def _host_facts(result: HostResult) -> dict[str, Any]:
    """What should agree between hosts serving the same model."""
    if result.outcome is None:
        return {}
    facts: dict[str, Any] = {}
    located = result.outcome.section("engines")
    for engine in located.get("engines", []):
        if engine.get("running") or len(located.get("engines", [])) == 1:
            facts[f"{engine['name']} version"] = engine.get("version")
    for path, digest in result.fingerprints.get("files", {}).items():
        facts[f"sha256 {Path(path).name}"] = digest[:16]
    for checkpoint, tensors in result.fingerprints.get("tensors", {}).items():
        for name, digest in tensors.items():
            facts[f"sha256 {Path(checkpoint).name}:{name}"] = digest[:16]
    servers = result.outcome.section("servers").get("servers") or []
    for server in servers:
        for flag, value in sorted((server.get("args") or {}).items()):
            facts[f"--{flag}"] = value
    return facts


def differences(results: list[HostResult]) -> dict[str, dict[str, Any]]:
    """Facts whose value is not the same on every reachable host: {fact: {host: value}}."""
    facts = {r.host: _host_facts(r) for r in results if r.outcome is not None}
    names = sorted({name for host_facts in facts.values() for name in host_facts})
    out = {}
    for name in names:
        values = {host: host_facts.get(name) for host, host_facts in facts.items()}
        if len({repr(v) for v in values.values()}) > 1:
            out[name] = values
    return out
