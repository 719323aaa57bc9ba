"""Real podman containers for the container tests, hermetic: every bit of podman's state lives
in a temp dir chosen through CONTAINERS_CONF / CONTAINERS_STORAGE_CONF (never --root/--runroot
flags: mixing the two breaks podman's cleanup), no network (`--network none`), no registry (the
image is imported from a root filesystem built here from this machine's python3 and the engine
release under test), and everything is removed at the end, system paths podman writes whatever
its configuration included when they were not there before.

This machine's root lacks CAP_SYS_RESOURCE, so the runtime may not raise rlimits: the config
sets default_ulimits (nofile, nproc) to what the test box allows."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from tests.procs import pids_where

SYSTEM_PATHS = ("/var/lib/containers", "/run/containers", "/run/runc")
# The system paths are shared by every Podman of this machine (runc keeps each container's state
# under /run/runc whatever podman's configuration says): pytest-xdist workers each run one. They
# are removed by the last Podman to close, and only those absent before the first one started.
SHARED_STATE = Path(tempfile.gettempdir()) / "remotedbg-podman-shared.json"

# A stand-in engine process: prints the lines SGLang prints (ServerArgs at startup, decode
# lines with accept len, sglang/srt/managers/scheduler_components/metrics_reporter.py:963-1043)
# to its stdout, which podman keeps in its k8s-file log, then waits; SIGTERM ends it (as PID 1
# it would otherwise ignore it).
SERVER = r"""
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
args = sys.argv[1:]
print("[%s] server_args=ServerArgs(model_path=%r, speculative_algorithm='EAGLE3')"
      % (time.strftime("%Y-%m-%d %H:%M:%S"), args[args.index("--model-path") + 1]), flush=True)
for _ in range(3):
    print("[%s] Decode batch, #running-req: 1, #token: 90, token usage: 0.01, accept len: 1.02, "
          "accept rate: 0.01, cuda graph: True, gen throughput (token/s): 40.00, #queue-req: 0"
          % time.strftime("%Y-%m-%d %H:%M:%S"), flush=True)
while True:
    time.sleep(3600)
"""


# A stand-in that speaks SGLang's HTTP API (tests/engine_standins.py, from the repository
# bind-mounted at /opt/repo), listening on 127.0.0.1 inside the container's own network.
HTTP_SERVER = """
import sys
sys.path.insert(0, "/opt/repo")
from tests.engine_standins import main
main("sglang")
"""


class Podman:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="remotedbg-podman-"))
        with _shared() as state:
            if not state["users"]:
                state["before"] = {p: os.path.exists(p) for p in SYSTEM_PATHS}
            state["users"].append(str(self.dir))
        self.dir.chmod(0o755)
        for sub in ("tmp", "net"):
            (self.dir / sub).mkdir()
        (self.dir / "containers.conf").write_text(
            "[containers]\n"
            'default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n'
            "[engine]\n"
            'cgroup_manager = "cgroupfs"\nevents_logger = "file"\nruntime = "runc"\n'
            f'tmp_dir = "{self.dir}/tmp"\nvolume_path = "{self.dir}/root/volumes"\n'
            f'[network]\nnetwork_config_dir = "{self.dir}/net"\n'
        )
        (self.dir / "storage.conf").write_text(
            f'[storage]\ndriver = "overlay"\ngraphroot = "{self.dir}/root"\n'
            f'runroot = "{self.dir}/runroot"\n'
        )
        self.env = dict(
            os.environ,
            CONTAINERS_CONF=str(self.dir / "containers.conf"),
            CONTAINERS_STORAGE_CONF=str(self.dir / "storage.conf"),
        )

    def podman(self, *args: str, check: bool = True, timeout: float = 120) -> str:
        done = subprocess.run(
            ["podman", *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"podman {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def build_image(self, name: str, engine_tree: Path) -> None:
        """An image holding this machine's python3 (binary, libraries, standard library), the
        engine package at /sgl-workspace/sglang/python/sglang, as SGLang's image keeps it, and
        the stand-in server at /opt/standin/serve.py."""
        rootfs = self.dir / "rootfs.tar"
        python = Path(os.path.realpath("/usr/bin/python3"))
        libs = subprocess.run(["ldd", str(python)], capture_output=True, text=True).stdout
        with tarfile.open(rootfs, "w") as tar:
            for link, target in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
                info = tarfile.TarInfo(link)
                info.type, info.linkname = tarfile.SYMTYPE, target
                tar.addfile(info)
            tar.add(python, f"usr/bin/{python.name}")
            info = tarfile.TarInfo("usr/bin/python3")
            info.type, info.linkname = tarfile.SYMTYPE, python.name
            tar.addfile(info)
            for line in libs.splitlines():
                parts = line.split()
                path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
                if path.startswith("/") and os.path.exists(path):
                    real = os.path.realpath(path)
                    tar.add(real, "usr/lib/x86_64-linux-gnu/" + os.path.basename(path))
            tar.add("/lib64/ld-linux-x86-64.so.2", "usr/lib64/ld-linux-x86-64.so.2")
            tar.add(os.path.realpath("/bin/sh"), "usr/bin/sh")  # images have a shell
            stdlib = Path(f"/usr/lib/{python.name}")
            skip = {"test", "idlelib", "tkinter", "turtledemo", "__pycache__", "ensurepip"}
            tar.add(stdlib, f"usr/lib/{python.name}",
                    filter=lambda m: None if set(Path(m.name).parts) & skip else m)  # fmt: skip
            tar.add(engine_tree, "sgl-workspace/sglang/python/sglang",
                    filter=lambda m: None if "__pycache__" in m.name else m)  # fmt: skip
            for name_, text in (("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
                                ("opt/standin/serve.py", SERVER),
                                ("opt/standin/http_standin.py", HTTP_SERVER)):  # fmt: skip
                data = text.encode()
                info = tarfile.TarInfo(name_)
                info.size = len(data)
                tar.addfile(info, fileobj=__import__("io").BytesIO(data))
        self.podman("import", "-q", str(rootfs), name)
        rootfs.unlink()

    def run(self, name: str, image: str, binds: dict[str, str], argv: list[str],
            user: str | None = None, program: str = "serve.py",
            ready: str = "Decode batch") -> int:  # fmt: skip
        """Start a detached container running /opt/standin/`program` with `argv`; returns the
        host PID of its server process once its log shows `ready`."""
        args = ["run", "-d", "--name", name, "--network", "none", "-w",
                "/sgl-workspace/sglang/python"]  # fmt: skip
        for host, inside in binds.items():
            args += ["-v", f"{host}:{inside}:ro"]
        if user:
            args += ["--user", user]
        # `python3 -c` puts the working directory first on sys.path, as the image's own
        # `python3 -m sglang.launch_server` does: the stand-in's Python imports the engine there
        loader = f"exec(compile(open('/opt/standin/{program}').read(), '{program}', 'exec'))"
        self.podman(*args, image, "python3", "-c", loader, *argv)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if ready in self.podman("logs", name, check=False):
                return int(self.podman("inspect", "-f", "{{.State.Pid}}", name).strip())
            time.sleep(0.05)
        raise RuntimeError(f"{name} did not start: {self.podman('logs', name, check=False)}")

    def serve_api(self, group: int) -> str:
        """podman's API socket (what `podman --remote` and docker clients talk to), usable by
        `group` as the docker group makes /var/run/docker.sock usable; its CONTAINER_HOST."""
        socket_path = self.dir / "api.sock"
        self.api = subprocess.Popen(
            ["podman", "system", "service", "--time=0", f"unix://{socket_path}"],
            env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while not socket_path.exists():
            if time.monotonic() > deadline or self.api.poll() is not None:
                raise RuntimeError("podman system service did not start")
            time.sleep(0.05)
        os.chown(socket_path, 0, group)
        socket_path.chmod(0o660)
        return f"unix://{socket_path}"

    def inspect(self, name: str) -> dict:
        return json.loads(self.podman("inspect", name))[0]

    def close(self) -> None:
        api = getattr(self, "api", None)
        if api is not None and api.poll() is None:
            os.killpg(api.pid, 15)
            api.wait(20)
        self.podman("rm", "-a", "-f", "-t", "0", check=False)
        self.podman("system", "reset", "-f", check=False)
        mounts = Path("/proc/mounts").read_text().splitlines()
        for mount in sorted((m.split()[1] for m in mounts if str(self.dir) in m), reverse=True):
            subprocess.run(["umount", "-l", mount], capture_output=True)
        _kill_conmons(self.dir)  # what podman could not stop: never left running
        shutil.rmtree(self.dir, ignore_errors=True)
        with _shared() as state:
            if str(self.dir) in state["users"]:
                state["users"].remove(str(self.dir))
            if not state["users"]:
                for path, existed in state["before"].items():
                    if not existed:
                        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def _shared() -> Iterator[dict]:
    """The machine's Podman users and what the system paths were before the first, under a
    lock; users whose directory is gone (a killed run) are dropped."""
    with open(f"{SHARED_STATE}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            state = json.loads(SHARED_STATE.read_text())
        except (OSError, ValueError):
            state = {"users": [], "before": {}}
        state["users"] = [u for u in state["users"] if os.path.isdir(u)]
        yield state
        if state["users"]:
            SHARED_STATE.write_text(json.dumps(state))
        else:  # the last one leaves nothing behind
            SHARED_STATE.unlink(missing_ok=True)
            Path(lock.name).unlink(missing_ok=True)


def _kill_conmons(directory: Path) -> None:
    """SIGKILL the conmon processes of containers kept under `directory`, and what they run."""
    mine = str(directory).encode()
    doomed = set(pids_where(lambda cmdline: cmdline.split(b"\0")[0].endswith(b"conmon")
                            and mine in cmdline))  # fmt: skip
    for pid in sorted(doomed):
        children = Path(f"/proc/{pid}/task/{pid}/children")
        with suppress(OSError):
            doomed |= {int(c) for c in children.read_text().split()}
    for pid in doomed:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
