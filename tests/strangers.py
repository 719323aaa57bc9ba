"""The strangers of a busy GPU box, running for the whole suite: users run these tests on shared
machines, so every run has them. No test may report them unless it asked for them, and none may
depend on a machine without them.

- root's own SGLang server (wrong algorithm, missing draft, a log of `accept len: 1.00`);
- another user, with an SGLang checkout whose loader reads d2t as direct ids and a vLLM venv in
  their home under /home, serving from that venv with a compact-JSON `--speculative-config`;
- a root podman container serving SGLang code the ssh user cannot read from the host.

Another user and a container need root; run as an ordinary user, the suite has root's server
only (it runs as that ordinary user then, and so is the stranger to nothing).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.engine_trees import write_sglang_checkout, write_sglang_direct_variant, write_vllm_venv

ROOT_SERVER_ARGS = [
    "-m", "sglang.launch_server", "--model-path", "/nonexistent/foreign-target",
    "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path",
    "/nonexistent/foreign-draft", "--speculative-num-steps", "3", "--port", "31999",
]  # fmt: skip

SLEEP = "import time; time.sleep(7200)"
HOME_PARENT = Path("/home")


@dataclass
class Strangers:
    root_server: subprocess.Popen
    user: str | None = None
    home: Path | None = None
    user_server: subprocess.Popen | None = None  # runuser; its child is the server
    user_server_pid: int | None = None
    container_pid: int | None = None
    paths: list[Path] = field(default_factory=list)  # what a scoped audit must never name

    @property
    def pids(self) -> list[int]:
        found = [self.root_server.pid]
        if self.user_server_pid is not None:
            found.append(self.user_server_pid)
        if self.container_pid is not None:
            found.append(self.container_pid)
        return found


def _root_server(directory: Path) -> subprocess.Popen:
    log = directory / "server.log"
    log.write_text("Decode batch, #running-req: 1, accept len: 1.00, accept rate: 0.00\n" * 50)
    with open(log, "a") as out:
        return subprocess.Popen(
            [sys.executable, "-c", SLEEP, *ROOT_SERVER_ARGS],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip


@contextmanager
def _other_user() -> Iterator[tuple[str, Path, subprocess.Popen]]:
    """A user with engine installs in their home, serving from their venv."""
    from tests.unprivileged import throwaway_user

    with throwaway_user("rdbgst", HOME_PARENT) as user:
        home = Path(user.pw_dir)
        try:
            yield user.pw_name, home, _serve_as(user, home)
        finally:
            shutil.rmtree(home, ignore_errors=True)


def _serve_as(user, home: Path) -> subprocess.Popen:
    """The user's installs (an SGLang checkout with a direct-map loader, a vLLM venv) and a
    server of theirs running from the venv, launched with compact JSON as scripts write it."""
    home.chmod(0o755)  # as most homes are: others may read, which is why a scan must not
    write_sglang_direct_variant(write_sglang_checkout(home))
    # the distribution's python3: a pyenv under /root is not theirs to run
    write_vllm_venv(home / "venv", python="/usr/bin/python3")
    spec = {"method": "eagle3", "model": str(home / "drafts" / "d"), "num_speculative_tokens": 3}
    argv = [str(home / "venv" / "bin" / "python3"), "-c", SLEEP, "-m",
            "vllm.entrypoints.openai.api_server", "--model", str(home / "models" / "t"),
            "--speculative-config", json.dumps(spec, separators=(",", ":")),
            "--port", "31998"]  # fmt: skip
    subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(home)], check=True)
    return subprocess.Popen(
        ["runuser", "-u", user.pw_name, "--", *argv], cwd=home,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _server_child(process: subprocess.Popen) -> int:
    """The server's own PID under `runuser` (its child)."""
    deadline = time.monotonic() + 10
    path = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    while time.monotonic() < deadline:
        children = path.read_text().split() if path.exists() else []
        if children:
            return int(children[0])
        time.sleep(0.02)
    raise RuntimeError("the stranger's server did not start")


@contextmanager
def busy_box(directory: Path) -> Iterator[Strangers]:
    with ExitStack() as stack:
        root_server = _root_server(directory)
        stack.callback(lambda: (root_server.kill(), root_server.wait()))
        strangers = Strangers(root_server)
        if os.geteuid() == 0:
            name, home, user_server = stack.enter_context(_other_user())
            stack.callback(lambda: (user_server.kill(), user_server.wait()))
            strangers.user, strangers.home, strangers.user_server = name, home, user_server
            strangers.paths.append(home)
            strangers.user_server_pid = _server_child(user_server)
            strangers.container_pid = stack.enter_context(_root_container(directory))
        yield strangers


@contextmanager
def _root_container(directory: Path) -> Iterator[int]:
    """A root podman container serving an SGLang tree (a direct-map loader among its files)."""
    from tests.podman import Podman

    podman = Podman()
    try:
        tree = write_sglang_checkout(directory / "container-tree")
        podman.build_image("rdbg-stranger", tree)
        models = directory / "container-models"
        (models / "target").mkdir(parents=True)
        (models / "target" / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
        launch = ["-m", "sglang.launch_server", "--model-path", "/models/target",
                  "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                  "/models/draft", "--port", "31997"]  # fmt: skip
        yield podman.run("rdbg-stranger", "rdbg-stranger", {str(models): "/models"}, launch)
    finally:
        podman.close()
