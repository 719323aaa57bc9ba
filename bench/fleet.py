"""vocab-audit on a fleet of 16 loopback sshd hosts against one host, in one run.

    python bench/fleet.py [--hosts 16]

Target: the fleet's wall time at most 2x the single host's. Every "host" runs on this machine,
so the fleet also shares its 2 cores with 16 sshd sessions and their executors.
"""

from __future__ import annotations

import argparse
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
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="remotedbg-bench-"))
    box = build_demo_box(work / "box")
    user_key = keygen(work / "user_key")
    servers = {f"gpu{i:02d}": make_sshd(work / f"sshd{i}", user_key) for i in range(args.hosts)}
    config = write_client_config(work / "ssh_config", servers, work / "known_hosts")
    playbook = load_playbook(find_playbook("vocab-audit"))
    variables = bind_variables(
        playbook,
        {"draft": str(box["bad"]), "target": str(box["target"]), "roots": str(box["engine"])},
    )
    base = ConnectOptions(host="", ssh_config=str(config))
    try:
        hosts = list(servers)
        start = time.perf_counter()
        single = run_fleet(hosts[:1], base, playbook, variables, False)
        one = time.perf_counter() - start
        start = time.perf_counter()
        fleet = run_fleet(hosts, base, playbook, variables, False)
        many = time.perf_counter() - start
    finally:
        for server in servers.values():
            server.stop()
    assert all(r.outcome and r.outcome.verdict == "defect" for r in single + fleet)
    print(f"1 host     {one * 1000:8.0f} ms")
    print(f"{len(hosts)} hosts   {many * 1000:8.0f} ms")
    print(f"ratio      {many / one:8.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
