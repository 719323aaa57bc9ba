from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from remotedbg.session import ConnectOptions, Session, open_session
from tests.sshd import Sshd, keygen, make_sshd, write_client_config


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


FOREIGN_SERVER_ARGS = [
    "-m", "sglang.launch_server", "--model-path", "/nonexistent/foreign-target",
    "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path",
    "/nonexistent/foreign-draft", "--speculative-num-steps", "3", "--port", "31999",
]  # fmt: skip


@pytest.fixture(scope="session", autouse=True)
def foreign_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen]:
    """Users run this suite on GPU boxes where an SGLang server is serving: so does every run.
    A stand-in with an SGLang command line (wrong algorithm, missing draft) and a log full of
    `accept len: 1.00` runs for the whole session; no test may report it unless the test asked
    for it, and none may depend on the machine having no server."""
    log = tmp_path_factory.mktemp("foreign") / "server.log"
    line = "Decode batch, #running-req: 1, accept len: 1.00, accept rate: 0.00\n"
    log.write_text(line * 50)
    with open(log, "a") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(7200)", *FOREIGN_SERVER_ARGS],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        yield process
    finally:
        process.kill()
        process.wait()


@pytest.fixture(autouse=True)
def isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own XDG state dir (transcript, REPL history)."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.delenv("REMOTEDBG_TRANSCRIPT", raising=False)
    monkeypatch.delenv("REMOTEDBG_SSH_CONFIG", raising=False)
    # the user's own defaults (config file, REMOTEDBG_HOST, ...) must not steer the tests
    monkeypatch.setenv("REMOTEDBG_CONFIG", str(tmp_path / "no-config.toml"))
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
