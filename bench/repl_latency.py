"""What the REPL adds per line over a warm session, in one run on a loopback sshd.

    python bench/repl_latency.py [--commands 200]

Times, on the same loopback sshd and in the same run:
  * `Session.run("true")` on a warm session (the floor);
  * `true` as a REPL line through `Repl.execute` (script mode's per-line path: parsing, the
    remembered cwd and login environment, live streaming), on its own warm session;
  * script mode end to end: `remotedbg repl` with N `true` lines on stdin, minus the same
    process with none (start-up, connection, login-env capture), divided by N.
Medians for the first two; the third is a mean (one process cannot time its lines from outside).
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.timing import median_ms, timed  # noqa: E402
from remotedbg.front.repl import Repl  # noqa: E402
from remotedbg.session import ConnectOptions, open_session  # noqa: E402
from tests.sshd import start_box  # noqa: E402


def repl_argv() -> list[str]:
    return [sys.executable, "-m", "remotedbg", "repl"]


def script_seconds(lines: int, env: dict[str, str], repeats: int = 3) -> float:
    """Best wall time of `remotedbg repl -H benchbox` with `lines` x `true` on stdin."""
    script = "true\n" * lines
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(
            [*repl_argv(), "-H", "benchbox"], input=script.encode(), env=env, capture_output=True
        )
        best = min(best, time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"repl failed: {done.stderr.decode()}")
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commands", type=int, default=200)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="remotedbg-bench-"))
    server, config = start_box(work)
    env = dict(
        os.environ,
        REMOTEDBG_SSH_CONFIG=str(config),
        XDG_STATE_HOME=str(work / "state"),
        REMOTEDBG_TRANSCRIPT=str(work / "transcript.jsonl"),
    )
    os.environ["REMOTEDBG_TRANSCRIPT"] = env["REMOTEDBG_TRANSCRIPT"]
    options = ConnectOptions(host="benchbox", ssh_config=str(config))
    try:
        session = open_session(options)
        session.run("true")
        warm = timed(lambda: session.run("true"), args.commands)

        repl_session = open_session(options)
        repl = Repl(repl_session, "benchbox")
        repl.start()
        repl.execute("true")
        with redirect_stdout(io.StringIO()):
            lines = timed(lambda: repl.execute("true"), args.commands)

        # interleave the two so load changes hit both alike
        warm += timed(lambda: session.run("true"), args.commands)
        with redirect_stdout(io.StringIO()):
            lines += timed(lambda: repl.execute("true"), args.commands)
        session.close()
        repl_session.close()

        empty = script_seconds(0, env)
        full = script_seconds(args.commands, env)
    finally:
        server.stop()

    per_line_script = (full - empty) / args.commands * 1000
    base = median_ms(warm)
    print(f"Session.run('true'), warm          median {base:8.2f} ms  (n={len(warm)})")
    print(f"REPL line 'true' (Repl.execute)    median {median_ms(lines):8.2f} ms  (n={len(lines)})")
    print(f"  difference                              {median_ms(lines) - base:+8.2f} ms")
    print(
        f"script mode, end to end            mean   {per_line_script:8.2f} ms  "
        f"({args.commands} lines {full:.2f} s - empty script {empty:.2f} s)"
    )
    print(f"  difference                              {per_line_script - base:+8.2f} ms")


if __name__ == "__main__":
    main()
