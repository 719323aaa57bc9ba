"""The two transports side by side, in one run on loopback: paramiko and the system ssh client.

    python bench/transports.py [--runs 20] [--commands 200]

Medians of a cold `remotedbg run --no-persist -H box -- true` (a new CLI process: connect,
command) over each transport, against `ssh box true` measured in the same run; then a warm
session's `true` and an agent check (a glob) over each, where both speak to the same resident
executor and the transport carries only its frames.
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
from remotedbg.remote.primitives import Remote  # noqa: E402
from remotedbg.session import ConnectOptions, open_session  # noqa: E402
from tests.sshd import start_box  # noqa: E402

TRANSPORTS = ("paramiko", "ssh")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--commands", type=int, default=200)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="remotedbg-bench-"))
    server, config = start_box(work)
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(config), REMOTEDBG_PERSIST="0",
               XDG_STATE_HOME=str(work / "state"))  # fmt: skip

    def quiet(argv: list[str]) -> None:
        subprocess.run(argv, check=True, env=env, capture_output=True, stdin=subprocess.DEVNULL)

    cold, warm, check = {}, {}, {}
    try:
        base = median_ms(timed(lambda: quiet(["ssh", "-F", str(config), "benchbox", "true"]),
                               args.runs))  # fmt: skip
        for transport in TRANSPORTS:
            argv = [sys.executable, "-m", "remotedbg", "run", "-H", "benchbox", "--transport",
                    transport, "--", "true"]  # fmt: skip
            cold[transport] = median_ms(timed(lambda argv=argv: quiet(argv), args.runs))
            options = ConnectOptions(host="benchbox", ssh_config=str(config), transport=transport)
            session = open_session(options)
            session.run("true")
            warm[transport] = median_ms(timed(lambda s=session: s.run("true"), args.commands))
            remote = Remote(session)
            check[transport] = median_ms(timed(lambda r=remote: r.glob([str(work / "*")]),
                                               args.commands))  # fmt: skip
            session.close()
    finally:
        server.stop()
    print(f"{'':52} {'paramiko':>9} {'ssh':>9} {'ssh/paramiko':>13}")
    for name, values in (("cold `remotedbg run -- true`, ms (median)", cold),
                         ("warm session, `true`, ms", warm),
                         ("warm session, a glob (agent check), ms", check)):  # fmt: skip
        ratio = values["ssh"] / values["paramiko"]
        print(f"{name:52} {values['paramiko']:9.1f} {values['ssh']:9.1f} {ratio:13.2f}")
    print(f"{'ssh box true (new connection), ms':52} {base:9.1f}")
    print(f"cold over ssh / plain ssh: {cold['ssh'] / base:.2f}; "
          f"over paramiko / plain ssh: {cold['paramiko'] / base:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
