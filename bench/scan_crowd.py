"""The server scan on a box crowded with other people's servers: N = 1, 10, 25 SGLang servers
of another user (tests/crowd.py; run as root, else of this user) that accept and never answer,
the worst a scan meets (each request waits its whole timeout).

    python bench/scan_crowd.py [--counts 1,10,25] [--reps 3] [--log-mib 16]

Per N: spec-audit's server step (`find_servers`: the scan, then every server's /metrics and
/server_info asked at once; the HTTP timeout is the scan's default, 2 s) through a `-H local`
session, medians of `--reps` after one untimed call; and the servers it listed (the crowd plus
whatever else serves on this machine). Twice: the servers writing nothing, and writing a log of
`--log-mib` MiB of access lines (a server without speculation; the scan reads a log back to its
16 MiB cap looking for decode lines, as root for another user's servers too). Target (issue
50): a box with 20+ servers of other users scans in seconds, whatever N.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remotedbg.actions.spec import find_servers  # noqa: E402
from remotedbg.remote.primitives import Remote  # noqa: E402
from remotedbg.session import ConnectOptions, open_session  # noqa: E402
from tests.crowd import crowd  # noqa: E402

TARGET_S = 10.0  # "in seconds"


def scan_once(remote: Remote) -> tuple[float, int]:
    start = time.perf_counter()
    found = find_servers(remote)
    return time.perf_counter() - start, len(found["servers"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1,10,25")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--log-mib", type=int, default=16)
    options = parser.parse_args()
    session = open_session(ConnectOptions(host="local", timeout=600.0))
    remote = Remote(session)
    whose = "another user's" if os.geteuid() == 0 else "this user's"
    print(f"load {os.getloadavg()[0]:.1f}; the crowd: {whose} hung SGLang servers")
    print("| N | their logs | servers listed | scan, median | min-max |")
    print("| --- | --- | --- | --- | --- |")
    try:
        for count in (int(c) for c in options.counts.split(",")):
            for log_mib in (0, options.log_mib):
                with crowd(count, log_mib):
                    scan_once(remote)  # untimed: the executor started, its modules imported
                    runs = [scan_once(remote) for _ in range(options.reps)]
                walls = [wall for wall, _ in runs]
                median = statistics.median(walls)
                mark = "" if median <= TARGET_S else " (over the target)"
                logs = f"{log_mib} MiB each" if log_mib else "none"
                print(f"| {count} | {logs} | {runs[-1][1]} | {median:.2f} s{mark} | "
                      f"{min(walls):.2f}-{max(walls):.2f} s |", flush=True)  # fmt: skip
    finally:
        session.close()


if __name__ == "__main__":
    main()
