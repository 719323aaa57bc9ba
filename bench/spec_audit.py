"""spec-audit of one correct draft against the newest vLLM release of the sweep (its venv
layout), from the command line over the loopback sshd, cold and warm, against `ssh host true`
in the same run.

    python bench/spec_audit.py [repetitions]

Each audit is a new `python -m remotedbg playbook spec-audit` process, as typed, after one
untimed run (bytecode compiled, files in the page cache). Cold: an empty analysis cache dir
(REMOTEDBG_CACHE_DIR) each time, no persistent session (REMOTEDBG_PERSIST=0); warm: the cache
the previous run filled, no persistent session; warm, persistent: the cache filled and the
persistent session (the default) the previous command left, i.e. a user's second audit. The
baseline is `ssh -F <config> benchbox true`, the same login without remotedbg. The CLI
process's CPU time is printed too: on a loaded machine it moves less than the wall time.
Targets (issue 24): cold <= 3 s, warm <= 1 s. The release comes from ~/.cache/remotedbg-tests
(tests/releases.py).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.releases import VLLM_SWEEP, sweep_release  # noqa: E402
from tests.sshd import start_box  # noqa: E402
from tests.test_conformance import build_box  # noqa: E402

COLD_S, WARM_S = 3.0, 1.0


def _spread(samples: list[float]) -> str:
    return (
        f"median {statistics.median(samples):6.2f} s  "
        f"range {min(samples):.2f}-{max(samples):.2f} s  (n={len(samples)})"
    )


def main() -> None:
    repetitions = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    version = VLLM_SWEEP[-1]
    rel = sweep_release("vllm", version)
    work = Path(tempfile.mkdtemp(prefix="remotedbg-bench-"))
    variables = build_box(work / "box", "vllm", version, "correct")
    server, config = start_box(work)
    argv = [sys.executable, "-m", "remotedbg", "playbook", "spec-audit", "-H", "benchbox",
            "--json"]  # fmt: skip
    given = dict(variables, roots=str(rel.venv), search_home="false")
    for key, value in given.items():
        argv += ["--var", f"{key}={value}"]
    cache = work / "cache"
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(config), REMOTEDBG_PERSIST="0",
               REMOTEDBG_RUNTIME_DIR=str(work / "run"), XDG_STATE_HOME=str(work / "state"),
               REMOTEDBG_CACHE_DIR=str(cache))  # fmt: skip
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed remotedbg has its bytecode

    served = dict(env)
    served.pop("REMOTEDBG_PERSIST")
    cpu: dict[str, list[float]] = {"cold": [], "warm": [], "warm, persistent": []}

    def audit(kind: str = "", counted: bool = True) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        given = served if kind == "warm, persistent" else env
        done = subprocess.run(argv, env=given, capture_output=True, stdin=subprocess.DEVNULL)
        took = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"spec-audit exit {done.returncode}: {done.stderr[-600:]!r}")
        if kind and counted:
            spent = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            cpu[kind].append(spent)
        return took

    def ssh_true() -> float:
        start = time.perf_counter()
        subprocess.run(["ssh", "-F", str(config), "benchbox", "true"], check=True,
                       capture_output=True, stdin=subprocess.DEVNULL)  # fmt: skip
        return time.perf_counter() - start

    load = os.getloadavg()[0]
    cold, warm, persistent, baseline = [], [], [], []
    try:
        audit()  # bytecode written, the release's files in the page cache: not counted
        for _ in range(repetitions):
            baseline.append(ssh_true())
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(audit("cold"))
            warm.append(audit("warm"))
            audit("warm, persistent", counted=False)  # the daemon's first command
            persistent.append(audit("warm, persistent"))
            subprocess.run([sys.executable, "-m", "remotedbg", "sessions", "--stop"], env=served,
                           capture_output=True, stdin=subprocess.DEVNULL)  # fmt: skip
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    load = max(load, os.getloadavg()[0])
    base = statistics.median(baseline)
    print(f"spec-audit, vLLM {version} (venv), one correct draft, loopback sshd; load {load:.2f}")
    print(f"ssh host true            {_spread(baseline)}")
    for name, samples, target in (("cold (empty cache)", cold, COLD_S),
                                  ("warm (cache filled)", warm, WARM_S),
                                  ("warm, persistent", persistent, WARM_S)):  # fmt: skip
        median = statistics.median(samples)
        verdict = "meets" if median <= target else "MISSES"
        print(f"{name:24} {_spread(samples)}  {median / base:5.1f}x ssh true  "
              f"({verdict} the {target:g} s target)")  # fmt: skip
    for kind, spent in cpu.items():
        print(f"client CPU, {kind}: median {statistics.median(spent):.2f} s (the CLI process; "
              "the box's side is sshd's)")  # fmt: skip


if __name__ == "__main__":
    main()
