"""The same commands with stdin a pipe, a file and /dev/null, side by side in one run on
loopback (issue 47): a script's stdin must not cost it the persistent session. Also `run`'s
input streaming against OpenSSH's `ssh` (a ControlMaster, the same box) in the same run.

    python bench/stdin_kinds.py [--hog]

`--hog` runs two busy loops beside (a loaded box). Each command is a new `python -m
remotedbg` process, as a script types it; medians of 15 after a warm-up, the three
kinds of stdin interleaved.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.timing import median_ms  # noqa: E402
from remotedbg.front.demo import build_demo_box  # noqa: E402
from tests.sshd import start_box  # noqa: E402

RUNS = 15
STREAM_BYTES = 64 << 20
SCRIPT_COMMANDS = 100


def _timed(argv: list[str], env: dict, stdin: str, work: Path) -> float:
    start = time.perf_counter()
    if stdin == "pipe":
        done = subprocess.run(argv, input=b"piped input\n", capture_output=True, env=env)
    elif stdin == "file":
        with open(work / "input.txt", "rb") as handle:
            done = subprocess.run(argv, stdin=handle, capture_output=True, env=env)
    else:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=env)
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv}: exit {done.returncode}: {done.stderr[-300:]!r}")
    return took


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="remotedbg-bench-"))
    (work / "input.txt").write_bytes(b"file input\n")
    box = build_demo_box(work / "box")
    server, config = start_box(work)
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(config), REMOTEDBG_PERSIST="600",
               REMOTEDBG_RUNTIME_DIR=str(work / "run"),
               XDG_STATE_HOME=str(work / "state"))  # fmt: skip
    cli = [sys.executable, "-m", "remotedbg"]
    commands = {
        "vocab-audit": [*cli, "playbook", "vocab-audit", "-H", "benchbox", "--json", "--var",
                        f"draft={box['bad']}", "--var", f"target={box['target']}"],
        "tensors pull d2t+t2d": [*cli, "tensors", "pull", "-H", "benchbox", str(box["bad"]),
                                 "d2t", "t2d", "-o", str(work / "pulled"), "--force"],
        "run -n -- true": [*cli, "run", "-H", "benchbox", "-n", "--", "true"],
        "run -- wc -c": [*cli, "run", "-H", "benchbox", "--", "wc", "-c"],  # reads its input
    }  # fmt: skip
    hogs = ([subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
            if "--hog" in sys.argv else [])  # fmt: skip
    try:
        print(f"{'command':22} {'/dev/null ms':>12} {'pipe ms':>8} {'file ms':>8} "
              f"{'pipe/null':>9} {'file/null':>9}")  # fmt: skip
        for name, argv in commands.items():
            _timed(argv, env, "null", work)  # the daemon and its caches warm
            samples: dict[str, list[float]] = {"null": [], "pipe": [], "file": []}
            for round_ in range(RUNS):  # interleaved, the order turning: a load's drift is shared
                kinds = list(samples)[round_ % 3:] + list(samples)[: round_ % 3]
                for kind in kinds:
                    samples[kind].append(_timed(argv, env, kind, work))
            medians = {kind: median_ms(times) for kind, times in samples.items()}
            print(f"{name:22} {medians['null']:12.0f} {medians['pipe']:8.0f} "
                  f"{medians['file']:8.0f} {medians['pipe'] / medians['null']:9.2f} "
                  f"{medians['file'] / medians['null']:9.2f}")  # fmt: skip
        data = work / "stream.bin"
        data.write_bytes(os.urandom(STREAM_BYTES))
        master = work / "cm.sock"
        ssh = ["ssh", "-F", str(config), "-o", "ControlMaster=auto", "-o",
               f"ControlPath={master}", "-o", "ControlPersist=60", "benchbox"]  # fmt: skip
        subprocess.run([*ssh, "true"], check=True, stdin=subprocess.DEVNULL)
        streams = (("ssh (ControlMaster)", [*ssh, "wc -c"]),
                   ("remotedbg run", [*cli, "run", "-H", "benchbox", "--", "wc", "-c"]))
        for label, argv in streams:
            start = time.perf_counter()
            with open(data, "rb") as handle:
                done = subprocess.run(argv, stdin=handle, capture_output=True, env=env)
            took = time.perf_counter() - start
            assert done.stdout.split()[0] == str(STREAM_BYTES).encode(), done
            print(f"stream 64 MiB into wc -c, {label:20} {took:6.2f} s "
                  f"{STREAM_BYTES / took / (1 << 20):7.1f} MiB/s")  # fmt: skip
        # a script of 100 commands, stdin a pipe (as a loop in a shell script has it)
        hostname = ["cat", "/etc/hostname"]
        scripts = (("ssh (ControlMaster)", [*ssh, *hostname]),
                   ("remotedbg cat", [*cli, "cat", "-H", "benchbox", hostname[1]]))
        for label, argv in scripts:
            start = time.perf_counter()
            for _ in range(SCRIPT_COMMANDS):
                subprocess.run(argv, input=b"", capture_output=True, env=env, check=True)
            took = time.perf_counter() - start
            print(f"script of {SCRIPT_COMMANDS} commands, {label:20} {took:6.2f} s "
                  f"{took / SCRIPT_COMMANDS * 1000:6.1f} ms each")  # fmt: skip
        subprocess.run([*ssh, "-O", "exit"], capture_output=True)
    finally:
        for hog in hogs:
            hog.kill()
        subprocess.run([*cli, "sessions", "--stop"], env=env, capture_output=True)
        server.stop()


if __name__ == "__main__":
    main()
