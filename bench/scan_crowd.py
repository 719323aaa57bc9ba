"""The server scan on a box crowded with other people's servers: N = 1, 10, 25 SGLang servers
of another user (tests/crowd.py; run as root, else of this user) that accept and never answer,
the worst a scan meets (each request waits its whole timeout).

    python bench/scan_crowd.py [--counts 1,10,25] [--reps 3]

Per N: the scan (`scan_servers`, the agent call of find-servers / spec-audit, metrics as the
audit asks them: /metrics where --enable-metrics, /server_info of every SGLang server) through
a `-H local` session, medians of `--reps` after one untimed call; and the servers it listed
(the crowd plus whatever else serves on this machine). Target (issue 50): a box with 20+
servers of other users scans in seconds, whatever N. The per-request timeout is the scan's
default, 2 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remotedbg.engines.knowledge import server_scan_knowledge  # noqa: E402
from remotedbg.remote import calls  # noqa: E402
from remotedbg.remote.primitives import Remote  # noqa: E402
from remotedbg.session import ConnectOptions, open_session  # noqa: E402
from tests.crowd import crowd  # noqa: E402

TARGET_S = 10.0  # "in seconds"


def scan_once(remote: Remote) -> tuple[float, int]:
    start = time.perf_counter()
    found = remote.call(calls.ScanServers(tail_lines=200, knowledge=server_scan_knowledge()))
    return time.perf_counter() - start, len(found["servers"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1,10,25")
    parser.add_argument("--reps", type=int, default=3)
    options = parser.parse_args()
    session = open_session(ConnectOptions(host="local", timeout=600.0))
    remote = Remote(session)
    whose = "another user's" if os.geteuid() == 0 else "this user's"
    print(f"load {os.getloadavg()[0]:.1f}; the crowd: {whose} hung SGLang servers")
    print("| N | servers listed | scan, median | min-max |")
    print("| --- | --- | --- | --- |")
    try:
        for count in (int(c) for c in options.counts.split(",")):
            with crowd(count):
                scan_once(remote)  # untimed: the executor started, its modules imported
                runs = [scan_once(remote) for _ in range(options.reps)]
            walls = [wall for wall, _ in runs]
            median = statistics.median(walls)
            mark = "" if median <= TARGET_S else " (over the target)"
            print(f"| {count} | {runs[-1][1]} | {median:.2f} s{mark} | "
                  f"{min(walls):.2f}-{max(walls):.2f} s |")  # fmt: skip
    finally:
        session.close()


if __name__ == "__main__":
    main()
