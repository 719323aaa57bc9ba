"""vocab-audit on a fleet of 16 loopback sshd hosts against one host, in one run.

    python bench/fleet.py [--hosts 16] [--reps 3] [--real-engine]

Target: the fleet's wall time at most 1.5x the single host's, as the box is and again with a
CPU-bound process beside it; one host and the fleet are run alternately `--reps` times (each
with a cold analysis cache) and the medians compared. Every "host" runs on this machine, so
the fleet also shares its 2 cores with 16 sshd sessions and their executors. The client's CPU
seconds (this process: connections, parsing, analysis; not sshd or the remote executors) are
printed per host. `--real-engine` audits against SGLang 0.5.23 as released (every host
has the same files: the analysis cache makes the hosts after the first cost little).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remotedbg.demo import build_demo_box  # noqa: E402
from remotedbg.fleet import run_fleet  # noqa: E402
from remotedbg.playbook import bind_variables, find_playbook, load_playbook  # noqa: E402
from remotedbg.session import ConnectOptions  # noqa: E402
from tests.sshd import keygen, make_sshd, write_client_config  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--real-engine", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="remotedbg-bench-"))
    os.environ["REMOTEDBG_CACHE_DIR"] = str(work / "cache")  # a cold analysis cache
    box = build_demo_box(work / "box")
    if args.real_engine:
        from tests.releases import release

        box["engine"] = work / "box" / "sglang" / "python" / "sglang"
        shutil.copytree(release("sglang", "0.5.23").package, box["engine"],
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    user_key = keygen(work / "user_key")
    servers = {f"gpu{i:02d}": make_sshd(work / f"sshd{i}", user_key) for i in range(args.hosts)}
    config = write_client_config(work / "ssh_config", servers, work / "known_hosts")
    playbook = load_playbook(find_playbook("vocab-audit"))
    variables = bind_variables(
        playbook,
        {"draft": str(box["bad"]), "target": str(box["target"]), "roots": str(box["engine"])},
    )
    base = ConnectOptions(host="", ssh_config=str(config))
    hosts = list(servers)

    def timed_fleet(names: list[str]) -> tuple[float, float]:
        shutil.rmtree(work / "cache", ignore_errors=True)  # each run starts cold
        start, cpu = time.perf_counter(), time.process_time()
        results = run_fleet(names, base, playbook, variables, False)
        wall, used = time.perf_counter() - start, time.process_time() - cpu
        assert all(r.outcome and r.outcome.verdict == "defect" for r in results)
        return wall, used

    try:
        for loaded in (False, True):
            load = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if loaded else None
            one: list[tuple[float, float]] = []
            many: list[tuple[float, float]] = []
            try:
                for _ in range(args.reps):
                    one.append(timed_fleet(hosts[:1]))
                    many.append(timed_fleet(hosts))
            finally:
                if load is not None:
                    load.kill()
                    load.wait()
            wall1 = statistics.median(w for w, _ in one)
            walln = statistics.median(w for w, _ in many)
            cpun = statistics.median(c for _, c in many)
            how = "with a CPU-bound process beside" if loaded else "box as is"
            print(f"{how} (load {os.getloadavg()[0]:.1f}, medians of {args.reps}, alternating):")
            print(f"  1 host    {wall1 * 1000:8.0f} ms wall, "
                  f"{statistics.median(c for _, c in one):6.2f} s client CPU")  # fmt: skip
            print(f"  {len(hosts)} hosts  {walln * 1000:8.0f} ms wall, {cpun:6.2f} s client CPU, "
                  f"{cpun / len(hosts):.3f} s per host")  # fmt: skip
            print(f"  ratio     {walln / wall1:8.2f}x (target <= 1.5x)")
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
