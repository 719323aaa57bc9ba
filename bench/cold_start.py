"""One command from a fresh CLI process, against OpenSSH, in one run on loopback.

    python bench/cold_start.py [--runs 20]

Medians of: `ssh box true` (a new connection each time), `ssh` through an existing
ControlMaster socket, `remotedbg run -H box -- true` with no persistent session
(`--no-persist`: connect, executor, command), and the same served by a persistent session's
daemon (the client process hands its command line over the daemon's socket). Each remotedbg
run is a new `python -m remotedbg` process, as a user's shell starts it; the ratios are
against ssh measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.timing import median_ms, timed  # noqa: E402
from tests.sshd import start_box  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="remotedbg-bench-"))
    server, config = start_box(work)
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(config), REMOTEDBG_PERSIST="600")
    env.update(REMOTEDBG_RUNTIME_DIR=str(work / "run"), XDG_STATE_HOME=str(work / "state"))
    remotedbg = [sys.executable, "-m", "remotedbg", "run", "-H", "benchbox"]

    def quiet(argv: list[str]) -> None:
        subprocess.run(argv, check=True, env=env, capture_output=True, stdin=subprocess.DEVNULL)

    try:
        ssh = ["ssh", "-F", str(config)]
        fresh = timed(lambda: quiet(ssh + ["benchbox", "true"]), args.runs)
        control = ["-o", f"ControlPath={work}/cm-%C", "-o", "ControlMaster=auto",
                   "-o", "ControlPersist=60"]  # fmt: skip
        quiet(ssh + control + ["benchbox", "true"])
        multiplexed = timed(lambda: quiet(ssh + control + ["benchbox", "true"]), args.runs)
        quiet(ssh + control + ["-O", "exit", "benchbox"])
        cold = timed(lambda: quiet(remotedbg + ["--no-persist", "--", "true"]), args.runs)
        quiet(remotedbg + ["--", "true"])  # leaves the daemon
        warm = timed(lambda: quiet(remotedbg + ["--", "true"]), args.runs)
        python = timed(lambda: quiet([sys.executable, "-c", "pass"]), args.runs)
        quiet([sys.executable, "-m", "remotedbg", "sessions", "--stop"])
    finally:
        server.stop()
    base, cm = median_ms(fresh), median_ms(multiplexed)
    rows = [
        ("ssh box true (new connection)", base),
        ("ssh through a ControlMaster socket", cm),
        ("remotedbg run, no persistent session", median_ms(cold)),
        ("remotedbg run, persistent session", median_ms(warm)),
        ("python3 -c pass (the interpreter's own start)", median_ms(python)),
    ]
    print(f"{'':48} {'median ms':>10} {'/ ssh':>7} {'/ ssh CM':>8}")
    for name, value in rows:
        print(f"{name:48} {value:10.1f} {value / base:7.2f} {value / cm:8.2f}")


if __name__ == "__main__":
    main()
