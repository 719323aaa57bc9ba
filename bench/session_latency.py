"""Per-command latency of a warm remotedbg session against OpenSSH, in one run on loopback.

    python bench/session_latency.py [--commands 200]

Prints the median for: remotedbg (one warm connection and its resident executor), a new `ssh`
process per command, and OpenSSH ControlMaster multiplexing; then the ratios. sshd runs each
command through the login shell, which reads ~/.bashrc for SSH commands: the same run times that
start-up alone, which ssh pays per command and remotedbg once per session.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.timing import median_ms, timed  # noqa: E402
from remotedbg.session import ConnectOptions, open_session  # noqa: E402
from tests.sshd import start_box  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commands", type=int, default=200)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="remotedbg-bench-"))
    server, config = start_box(work)
    try:
        session = open_session(ConnectOptions(host="benchbox", ssh_config=str(config)))
        session.run("true")
        warm = timed(lambda: session.run("true"), args.commands)
        session.close()

        ssh = ["ssh", "-F", str(config)]
        fresh = timed(
            lambda: subprocess.run(ssh + ["benchbox", "true"], check=True),
            max(10, args.commands // 10),
        )
        control = [
            "-o",
            f"ControlPath={work}/cm-%C",
            "-o",
            "ControlMaster=auto",
            "-o",
            "ControlPersist=60",
        ]
        subprocess.run(ssh + control + ["benchbox", "true"], check=True)
        multiplexed = timed(
            lambda: subprocess.run(ssh + control + ["benchbox", "true"], check=True),
            args.commands // 2,
        )
        subprocess.run(ssh + control + ["-O", "exit", "benchbox"], capture_output=True)
        shell = subprocess.run(["getent", "passwd", server.user], capture_output=True, text=True)
        login_shell = shell.stdout.strip().split(":")[-1] or "/bin/sh"
        startup = timed(
            lambda: subprocess.run(
                [login_shell, "-c", "true"],
                env={"SSH_CLIENT": "127.0.0.1 1 22", "HOME": str(Path.home())},
            ),
            20,
        )
    finally:
        server.stop()

    rows = [
        ("remotedbg warm session", warm),
        ("new ssh process", fresh),
        ("ssh ControlMaster", multiplexed),
        (f"{login_shell} -c true (rc files)", startup),
    ]
    for name, samples in rows:
        print(f"{name:32s} median {median_ms(samples):8.2f} ms  (n={len(samples)})")
    base = median_ms(warm)
    print(f"ratio new-ssh / remotedbg        {median_ms(fresh) / base:8.1f}x")
    print(f"ratio ControlMaster / remotedbg  {median_ms(multiplexed) / base:8.1f}x")
    print(f"target: warm median <= 5 ms     {'met' if base <= 5 else 'NOT met'}")


if __name__ == "__main__":
    main()
