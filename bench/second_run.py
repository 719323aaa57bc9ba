"""locate-eagle and vocab-audit run twice from the command line, on a box holding SGLang
0.5.23 as released twice (a checkout and a copy), in one run on loopback.

    python bench/second_run.py

Each run is a new `python -m remotedbg` process, as typed. Three ways: no persistent session
and no analysis cache (every run from scratch), no persistent session with the cache (the
second run reuses the classifications kept by content), and a persistent session with the
cache (the second run also finds the connection, executor and parsed engine code warm). The
first needs `pip download sglang==0.5.23` (cached in ~/.cache/remotedbg-tests).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remotedbg.front.demo import build_demo_box  # noqa: E402
from tests.releases import release  # noqa: E402
from tests.sshd import start_box  # noqa: E402


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="remotedbg-bench-"))
    box = build_demo_box(work / "box")
    sglang = release("sglang", "0.5.23").package
    first = work / "box" / "sglang-a" / "python" / "sglang"
    second = work / "box" / "sglang-b" / "python" / "sglang"
    shutil.copytree(sglang, first, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(sglang, second, ignore=shutil.ignore_patterns("__pycache__"))
    server, config = start_box(work)
    commands = {
        "locate-eagle": ["locate-eagle", "-H", "benchbox", "--json", "--no-home",
                         "--root", str(first), "--root", str(second)],
        "playbook vocab-audit": ["playbook", "vocab-audit", "-H", "benchbox", "--json",
                                 "--var", f"draft={box['bad']}", "--var",
                                 f"target={box['target']}", "--var", f"roots={first},{second}"],
    }  # fmt: skip
    ways = {
        "no persistent session, no cache": {"REMOTEDBG_PERSIST": "0", "cache": "none"},
        "no persistent session, cache": {"REMOTEDBG_PERSIST": "0"},
        "persistent session, cache": {"REMOTEDBG_PERSIST": "600"},
    }
    rows = []
    try:
        for name, argv in commands.items():
            for way, settings in ways.items():
                cache = work / f"cache-{len(rows)}"
                env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(config),
                           REMOTEDBG_RUNTIME_DIR=str(work / f"run-{len(rows)}"),
                           XDG_STATE_HOME=str(work / "state"), REMOTEDBG_CACHE_DIR=str(cache),
                           REMOTEDBG_PERSIST=settings["REMOTEDBG_PERSIST"])  # fmt: skip
                times = []
                for _ in range(2):
                    if settings.get("cache") == "none":
                        shutil.rmtree(cache, ignore_errors=True)
                    start = time.perf_counter()
                    done = subprocess.run([sys.executable, "-m", "remotedbg", *argv],
                                          env=env, capture_output=True,
                                          stdin=subprocess.DEVNULL)  # fmt: skip
                    times.append(time.perf_counter() - start)
                    if done.returncode not in (0, 1):
                        raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr[-400:]}")
                subprocess.run([sys.executable, "-m", "remotedbg", "sessions", "--stop"], env=env,
                               capture_output=True)  # fmt: skip
                rows.append((name, way, times[0], times[1]))
    finally:
        server.stop()
    print(f"{'command':22} {'how':34} {'first s':>8} {'second s':>9}")
    for name, way, one, two in rows:
        print(f"{name:22} {way:34} {one:8.2f} {two:9.2f}")


if __name__ == "__main__":
    main()
