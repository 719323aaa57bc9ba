"""In-place reads against copying shards, in one run on a loopback sshd.

    python bench/tensor_pull.py [--shard-mib 1024] [--tensor-mib 256] [--reps 3]

1. `vocab-check`-style pull of d2t and t2d from a checkpoint whose other shard is large, against
   `scp` of that shard: bytes moved and time.
2. `tensors pull` of one large tensor as typed (the first command of a persistent session, a
   later one, `--no-persist`) and on a warm session (the executor's file read; the same with
   paramiko's default window and packet size; `dd` on a channel of its own, as on a box without
   python3), against `scp` of the same bytes, interleaved `--reps` times, as the box is and again
   with a CPU-bound process beside it (target: >= 1.0x scp in both), and the client's CPU per MiB
   of each: wall times on a shared machine are noisy, CPU per byte is what decides who gives way
   first when the cores are busy.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remotedbg.remote import calls  # noqa: E402
from remotedbg.remote.fetch import fetch_range  # noqa: E402
from remotedbg.remote.primitives import Remote  # noqa: E402
from remotedbg.session import ConnectOptions, open_session  # noqa: E402
from remotedbg.session import ssh as ssh_session  # noqa: E402
from tests.sshd import keygen, make_sshd, write_client_config  # noqa: E402

DRAFT, TARGET = 32_000, 163_840


def cli(config: Path, runtime: Path, *args: str) -> float:
    """A new CLI process, as typed; persistent sessions live in `runtime` (stopped at the end)."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "remotedbg", *args],
        check=True,
        capture_output=True,
        env={
            "REMOTEDBG_SSH_CONFIG": str(config),
            "REMOTEDBG_RUNTIME_DIR": str(runtime),
            "PATH": "/usr/bin:/bin",
            "HOME": str(Path.home()),
        },
    )
    return time.perf_counter() - start


def warm_pull(
    config: Path, alias: str, checkpoint: Path, names: list[str], read_command: bool = False
) -> tuple[float, int]:
    """Tensors on an already open session: what a playbook step costs (connection excluded).
    `read_command`: the bytes come from `dd` on a channel of its own, as on a box without
    python3, instead of the executor's file read."""
    session = open_session(ConnectOptions(host=alias, ssh_config=str(config)))
    session.run("true")
    if read_command:
        session.read_file = lambda *args: None  # type: ignore[method-assign]
    start = time.perf_counter()
    ranges = Remote(session).call(calls.TensorRanges(path=str(checkpoint), names=names))
    moved = 0

    def sink(data: bytes) -> None:
        nonlocal moved
        moved += len(data)

    for tensor in ranges["tensors"]:
        fetch_range(session, tensor["file"], tensor["offset"], tensor["length"], sink)
    seconds = time.perf_counter() - start
    session.close()
    return seconds, moved


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def burner() -> subprocess.Popen:
    """A CPU-bound process beside the pull, as a busy box has."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def large_pulls(config: Path, work: Path, out: Path, mib: int, reps: int) -> None:
    """Interleaved runs of each way of moving one large tensor, medians and ratios to scp. The
    new CLI process and scp both pay for a connection; the warm-session rows do not."""
    path = work / "big.safetensors"
    size = mib << 20
    sizes = (ssh_session.EXECUTOR_WINDOW, ssh_session.BULK_PACKET)

    def pull(alias: str, window: int, packet: int, read_command: bool = False) -> float:
        ssh_session.EXECUTOR_WINDOW, ssh_session.BULK_PACKET = window, packet
        try:
            seconds, moved = warm_pull(config, alias, path, ["big"], read_command)
        finally:
            ssh_session.EXECUTOR_WINDOW, ssh_session.BULK_PACKET = sizes
        assert moved == size
        return seconds

    command = ["tensors", "pull", "-H", "box", str(path), "big", "--force",
               "-o", str(out / "big.pulled")]  # fmt: skip
    served = work / "served"

    def first_of_session() -> float:
        """The default path as typed the first time: the command starts the daemon."""
        fresh = work / "first"
        seconds = cli(config, fresh, *command)
        cli(config, fresh, "sessions", "--stop")
        return seconds

    cli(config, served, *command)  # leaves a persistent session for the row below
    ways = {
        "tensors pull, first of session": first_of_session,
        "tensors pull, persistent": lambda: cli(config, served, *command),
        "tensors pull --no-persist": lambda: cli(config, work / "run", *command, "--no-persist"),
        "warm session, executor's read": lambda: pull("box", *sizes),
        "  (box without SFTP)": lambda: pull("bare", *sizes),
        "  (paramiko default sizes)": lambda: pull("box", 2 << 20, 32 << 10),
        "warm session, dd on a channel": lambda: pull("box", *sizes, read_command=True),
        "scp": lambda: scp(config, "box", path, out / "big.copy"),
    }

    def remove_outputs() -> None:
        """Untimed, before each way: every way writes a new file. Replacing a 1 GiB file frees
        its pages and blocks inside the rename (or scp's O_TRUNC): 0.7-1.7 s here, longest
        while the old file is being written back, so it would fall on whichever way came after
        an old one rather than on the way itself (README)."""
        for name in ("big.pulled", "big.copy"):
            (out / name).unlink(missing_ok=True)

    try:
        _interleaved(ways, mib, reps, daemons={"tensors pull, first of session",
                                                "tensors pull, persistent"},
                     before_each=remove_outputs)  # fmt: skip
    finally:
        cli(config, served, "sessions", "--stop")


def _interleaved(
    ways: dict, mib: int, reps: int, daemons: set[str], before_each: Callable[[], None]
) -> None:
    for loaded in (False, True):
        load = burner() if loaded else None
        wall: dict[str, list[float]] = {name: [] for name in ways}
        cpu: dict[str, list[float]] = {name: [] for name in ways}
        try:
            for _ in range(reps):
                for name, way in ways.items():
                    before_each()
                    mine, theirs = time.process_time(), children_cpu()
                    wall[name].append(way())
                    # scp's CPU is its ssh and scp processes; a pull's is this process's (or
                    # the CLI process's: a child too)
                    cpu[name].append(time.process_time() - mine + children_cpu() - theirs)
        finally:
            if load is not None:
                load.kill()
                load.wait()
        scp_wall = statistics.median(wall["scp"])
        print(f"{mib} MiB tensor, {'with a CPU-bound process beside' if loaded else 'box as is'} "
              f"(load {os.getloadavg()[0]:.1f}, medians of {reps} interleaved):")  # fmt: skip
        for name in ways:
            seconds = statistics.median(wall[name])
            # a daemon is no child of this process: its CPU is not counted here
            used = f"client CPU {statistics.median(cpu[name]) * 1000 / mib:5.2f} ms/MiB"
            if name in daemons:
                used = ""
            rate = f"{mib / seconds:7.1f} MiB/s  {scp_wall / seconds:5.2f}x scp"
            print(f"  {name:31s} {rate}  {used}")


def scp(config: Path, alias: str, remote: Path, local: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["scp", "-q", "-F", str(config), f"{alias}:{remote}", str(local)], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shard-mib", type=int, default=1024)
    parser.add_argument("--tensor-mib", type=int, default=256)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="remotedbg-bench-"))
    ckpt = work / "draft"
    ckpt.mkdir()
    ids = np.sort(np.random.default_rng(0).choice(TARGET, DRAFT, replace=False))
    t2d = np.zeros(TARGET, dtype=bool)
    t2d[ids] = True
    save_file({"d2t": ids - np.arange(DRAFT), "t2d": t2d}, str(ckpt / "model-00002.safetensors"))
    rows = args.shard_mib * (1 << 20) // (4096 * 2)
    big = np.zeros((rows, 4096), dtype=np.float16)
    save_file({"lm_head.weight": big}, str(ckpt / "model-00001.safetensors"))
    tensor = np.random.default_rng(1).integers(0, 255, args.tensor_mib << 20, dtype=np.uint8)
    save_file({"big": tensor}, str(work / "big.safetensors"))
    del big, tensor
    server = make_sshd(work / "sshd", keygen(work / "user_key"))
    bare = make_sshd(work / "bare", server.user_key, sftp=False)
    config = write_client_config(
        work / "ssh_config", {"box": server, "bare": bare}, work / "known_hosts"
    )
    try:
        out = work / "out"
        out.mkdir()
        runtime = work / "run"
        pull = ["tensors", "pull", "-H", "box", str(ckpt), "d2t", "t2d", "--force", "-o",
                str(out / "map.safetensors")]  # fmt: skip
        pulled = cli(config, runtime, *pull, "--no-persist")
        cli(config, runtime, *pull)  # leaves a persistent session
        served = min(cli(config, runtime, *pull) for _ in range(5))
        cli(config, runtime, "sessions", "--stop")
        map_bytes = (out / "map.safetensors").stat().st_size
        warm, moved = warm_pull(config, "box", ckpt, ["d2t", "t2d"])
        shard = ckpt / "model-00001.safetensors"
        copied = scp(config, "box", shard, out / "shard.copy")
        (out / "shard.copy").unlink()
        print(f"d2t+t2d, CLI (cold process)  {pulled * 1000:8.0f} ms  {map_bytes:>13,} bytes")
        print(f"d2t+t2d, CLI (persistent)    {served * 1000:8.0f} ms  (best of 5)")
        print(
            f"d2t+t2d, warm session        {warm * 1000:8.1f} ms  {moved:>13,} bytes "
            f"(tensor bytes {DRAFT * 8 + TARGET:,})"
        )
        print(
            f"scp of the other shard       {copied * 1000:8.0f} ms  "
            f"{shard.stat().st_size:>13,} bytes"
        )
        print(
            f"ratio scp / pull: {copied / pulled:.1f}x cold CLI, {copied / served:.0f}x "
            f"persistent CLI, {copied / warm:.0f}x warm session; "
            f"file written {map_bytes / (DRAFT * 8 + TARGET) - 1:+.2%} over tensor bytes"
        )
        with open(work / "big.safetensors", "rb") as handle:  # in the page cache for all
            while handle.read(64 << 20):
                pass
        large_pulls(config, work, out, args.tensor_mib, args.reps)
    finally:
        server.stop()
        bare.stop()
        subprocess.run(["rm", "-rf", str(work)])


if __name__ == "__main__":
    main()
