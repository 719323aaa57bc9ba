from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from remotedbg.session import ConnectOptions, Session, open_session
from tests.procs import persist_daemons, wait_for
from tests.sshd import Sshd, keygen, make_sshd, write_client_config
from tests.strangers import Strangers, busy_box


def pytest_configure(config: pytest.Config) -> None:
    """The signals a user's terminal delivers, whatever started the suite: a runner under
    `nohup` or in a background job ignores SIGHUP or SIGINT, every process a test starts would
    inherit that, and the tests of Ctrl-C and hang-up would measure the launcher instead."""
    for number, handler in ((signal.SIGINT, signal.default_int_handler),
                            (signal.SIGHUP, signal.SIG_DFL),
                            (signal.SIGQUIT, signal.SIG_DFL)):  # fmt: skip
        if signal.getsignal(number) == signal.SIG_IGN:
            signal.signal(number, handler)


@dataclass
class Box:
    """A loopback sshd reachable as an ssh_config alias, as a user would have it set up."""

    alias: str
    server: Sshd
    ssh_config: Path
    known_hosts: Path

    def options(self, **overrides) -> ConnectOptions:
        values = {"host": self.alias, "ssh_config": str(self.ssh_config), "timeout": 30.0}
        values.update(overrides)
        return ConnectOptions(**values)

    def session(self, **overrides) -> Session:
        return open_session(self.options(**overrides))


@dataclass
class SshWorld:
    root: Path
    user_key: Path
    box: Box
    nosftp: Box


@pytest.fixture(scope="session")
def ssh_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshWorld]:
    root = tmp_path_factory.mktemp("ssh")
    user_key = keygen(root / "user_key")
    main = make_sshd(root / "box", user_key)
    bare = make_sshd(root / "nosftp", user_key, sftp=False)
    known_hosts = root / "known_hosts"
    config = write_client_config(
        root / "ssh_config", {"testbox": main, "nosftp": bare}, known_hosts
    )
    try:
        yield SshWorld(
            root,
            user_key,
            Box("testbox", main, config, known_hosts),
            Box("nosftp", bare, config, known_hosts),
        )
    finally:
        main.stop()
        bare.stop()


@pytest.fixture
def box(ssh_world: SshWorld) -> Box:
    return ssh_world.box


@pytest.fixture(scope="session", autouse=True)
def strangers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Strangers]:
    """Users run this suite on busy GPU boxes: so does every run (tests/strangers.py). No test
    may report a stranger unless it asked for it, and none may depend on their absence."""
    with busy_box(tmp_path_factory.mktemp("strangers")) as found:
        yield found


@pytest.fixture(autouse=True)
def isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own XDG state dir (transcript, REPL history)."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.delenv("REMOTEDBG_TRANSCRIPT", raising=False)
    monkeypatch.delenv("REMOTEDBG_SSH_CONFIG", raising=False)
    # the user's own defaults (config file, REMOTEDBG_HOST, ...) must not steer the tests
    monkeypatch.setenv("REMOTEDBG_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.setenv("REMOTEDBG_CACHE_DIR", str(tmp_path / "cache"))
    # no persistent-session daemon outlives a test (tests/test_persist.py turns them on)
    monkeypatch.setenv("REMOTEDBG_PERSIST", "0")
    monkeypatch.setenv("REMOTEDBG_RUNTIME_DIR", str(tmp_path / "run"))
    for name in (
        "REMOTEDBG_HOST",
        "REMOTEDBG_TIMEOUT",
        "REMOTEDBG_CONNECT_TIMEOUT",
        "REMOTEDBG_PYTHON",
    ):
        monkeypatch.delenv(name, raising=False)
    return state


@pytest.fixture
def cli(box: Box, isolated_state: Path):
    """Run the installed CLI in a subprocess, the way a user does, against the test box."""

    def run(
        *args: str,
        input: bytes | None = None,
        timeout: float = 60,
        env: dict | None = None,
        prefix: list[str] | None = None,
    ) -> subprocess.CompletedProcess:
        full_env = dict(
            os.environ,
            REMOTEDBG_SSH_CONFIG=str(box.ssh_config),
            XDG_STATE_HOME=str(isolated_state),
            COLUMNS="200",
        )
        full_env.update(env or {})
        return subprocess.run(
            [*(prefix or []), sys.executable, "-m", "remotedbg", *args],
            input=input,
            capture_output=True,
            timeout=timeout,
            env=full_env,
            stdin=None if input is not None else subprocess.DEVNULL,
        )

    return run


@pytest.fixture
def persistent(box, isolated_state, tmp_path):
    """A CLI runner with persistence on, the default a user has (isolated_state turns it off for
    the `cli` runner); every daemon it started is stopped and checked gone at the test's end."""
    runtime = tmp_path / "run"
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(box.ssh_config), COLUMNS="200",
               REMOTEDBG_PERSIST="600", REMOTEDBG_RUNTIME_DIR=str(runtime))  # fmt: skip

    def run(*args: str, timeout: float = 60, **overrides: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "remotedbg", *args], capture_output=True,
                              timeout=timeout, env=dict(env, **overrides),
                              stdin=subprocess.DEVNULL)  # fmt: skip

    run.env = env  # type: ignore[attr-defined]
    run.runtime = runtime  # type: ignore[attr-defined]
    yield run
    for pid in persist_daemons(runtime):
        os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not persist_daemons(runtime), timeout=5)


# -- stand-in engine servers (tests/engine_standins.py) ----------------------------------
REPO = Path(__file__).resolve().parent.parent
SHIMS = {
    "sglang": ("sglang/launch_server.py", ["-m", "sglang.launch_server"]),
    "vllm": ("vllm/entrypoints/openai/api_server.py", ["-m", "vllm.entrypoints.openai.api_server"]),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Standin:
    def __init__(self, process: subprocess.Popen, port: int, log: Path) -> None:
        self.process, self.port, self.log = process, port, log

    @property
    def pid(self) -> int:
        """The server's own PID (the python process), not a wrapper's."""
        if Path(f"/proc/{self.process.pid}/cmdline").read_bytes().startswith(b"bash"):
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
            return int(children.read_text().split()[0])
        return self.process.pid


@pytest.fixture
def standin(tmp_path):
    started: list[subprocess.Popen] = []

    def start(
        engine: str,
        script: dict | None = None,
        args: list[str] | None = None,
        wrapper: list[str] | None = None,
        engine_tree: Path | None = None,
    ) -> Standin:
        """A stand-in server with a real launch command line, its output in a log file;
        `wrapper` (e.g. ["bash", "-c"]) starts it the way people do, through a shell. With
        `engine_tree` (an engine package dir) the shim package is a copy of it: the server's
        Python imports that engine's code, as a server run from a checkout does."""
        shim_root = tmp_path / f"shim-{len(started)}"
        shim_file, module_args = SHIMS[engine]
        target = shim_root / shim_file
        if engine_tree is not None:
            shutil.copytree(engine_tree, shim_root / Path(shim_file).parts[0])
        target.parent.mkdir(parents=True, exist_ok=True)
        for parent in target.relative_to(shim_root).parents:
            if str(parent) != ".":
                (shim_root / parent / "__init__.py").write_text("")
        target.write_text(f"from tests.engine_standins import main\nmain({engine!r})\n")
        port = free_port()
        if args is None:
            args = (
                ["--model-path", "/models/target", "--speculative-algorithm", "EAGLE3",
                 "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                 "--speculative-num-draft-tokens", "4"]
                if engine == "sglang"
                else ["--model", "/models/target", "--speculative-config",
                      '{"method": "eagle3", "model": "/models/draft", "num_speculative_tokens": 3}']
            )  # fmt: skip
        log = tmp_path / f"server-{len(started)}.log"
        env = dict(os.environ, STANDIN_SCRIPT=json.dumps({"engine": engine, **(script or {})}),
                   PYTHONPATH=f"{shim_root}{os.pathsep}{REPO}")  # fmt: skip
        argv = [sys.executable, *module_args, *args, "--port", str(port)]
        if wrapper:
            argv = [*wrapper, shlex.join(argv) + f" >> {shlex.quote(str(log))} 2>&1"]
        with open(log, "a") as out:
            # a group of its own: a shell wrapper's child is stopped with it at the end
            process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=True,
            )  # fmt: skip
        started.append(process)

        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return True
            except OSError:
                return False

        assert wait_for(listening, timeout=10), log.read_text()
        return Standin(process, port, log)

    yield start
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


# -- the real engine: vLLM's CPU build serving models built here (tests/vllm_engine.py) ------
@dataclass
class VllmWorld:
    install: object  # tests.vllm_engine.Install
    models: object  # tests.vllm_engine.Models
    cold_s: float  # install + model build in this session (about 0 when cached)


@pytest.fixture(scope="session")
def vllm_world() -> VllmWorld:
    import time

    from tests.vllm_engine import build_models, install

    started = time.monotonic()
    installed = install()
    return VllmWorld(installed, build_models(installed), time.monotonic() - started)


@pytest.fixture(scope="session")
def vllm_server(vllm_world: VllmWorld, tmp_path_factory: pytest.TempPathFactory):
    """start(draft, method) -> a ready VllmServer, one per (draft, method) for the session.
    Each takes ~3 GiB: starting another stops the one before (so order tests by server)."""
    from tests.vllm_engine import VllmServer

    root = tmp_path_factory.mktemp("vllm")
    running: dict[tuple, VllmServer] = {}

    def start(
        draft: str | None = "eagle3", method: str | None = "eagle3", ready: bool = True,
        shorthand: bool = False,
    ) -> VllmServer:
        """ready=False: as soon as it is started (a server the engine may refuse to finish);
        shorthand: the settings given as --spec-method, --spec-model and --spec-tokens."""
        key = (draft, method, shorthand)
        server = running.get(key)
        if server is not None and server.alive():
            return server
        for other in running.values():
            other.stop()
        running.clear()
        log = root / f"{draft or method or 'none'}.log"
        server = VllmServer.start(vllm_world.install, vllm_world.models, log, method, draft,
                                  shorthand=shorthand)
        running[key] = server
        if ready:
            server.wait_ready()
        return server

    yield start
    for server in running.values():
        server.stop()
