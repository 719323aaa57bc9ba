"""Full vocab-audit of one full-size draft on a loopback box against the manual way, in one run.

    python bench/vocab_audit.py

Prints wall time and remote round trips for `remotedbg playbook vocab-audit` (warm process
excluded: timed in-process) and for the same investigation done by hand with separate `ssh`
commands (find the draft-model files, grep them for d2t, a Python one-liner that loads d2t/t2d).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remotedbg.front.cli.context import CommandContext  # noqa: E402
from remotedbg.front.demo import build_demo_box  # noqa: E402
from remotedbg.playbook import bind_variables, find_playbook, load_playbook, run_playbook  # noqa: E402
from remotedbg.session import ConnectOptions  # noqa: E402
from tests.sshd import start_box  # noqa: E402

MANUAL_PY = (
    "import json,struct,numpy as np;p='{p}/model.safetensors';f=open(p,'rb');"
    "n=struct.unpack('<Q',f.read(8))[0];h=json.loads(f.read(n));o=8+n;"
    "r=lambda k:(f.seek(o+h[k]['data_offsets'][0]),f.read(h[k]['data_offsets'][1]"
    "-h[k]['data_offsets'][0]))[1];d=np.frombuffer(r('d2t'),np.int64);"
    "t=np.frombuffer(r('t2d'),np.bool_);"
    "print((np.nonzero(t)[0]==np.arange(len(d))+d).all())"
)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="remotedbg-bench-"))
    box = build_demo_box(work / "box")
    server, config = start_box(work)
    try:
        playbook = load_playbook(find_playbook("vocab-audit"))
        variables = bind_variables(
            playbook,
            {"draft": str(box["bad"]), "target": str(box["target"]), "roots": str(box["engine"])},
        )
        start = time.perf_counter()
        ctx = CommandContext(ConnectOptions(host="benchbox", ssh_config=str(config)), json=True)
        outcome = run_playbook(playbook, ctx.remote, variables)
        ctx.close()
        audit = time.perf_counter() - start

        ssh = ["ssh", "-F", str(config), "benchbox"]
        models = f"{box['engine']}/srt/models"
        manual_steps = [
            ["find", str(box["engine"]), "-name", "*eagle*.py"],
            ["grep", "-n", "-E", "d2t|hot_token_id", f"{models}/llama_eagle3.py"],
            ["cat", f"{box['bad']}/config.json"],
            ["python3", "-c", f'"{MANUAL_PY.format(p=box["bad"])}"'],
        ]
        start = time.perf_counter()
        for step in manual_steps:
            subprocess.run(ssh + step, capture_output=True, check=False)
        manual = time.perf_counter() - start
    finally:
        server.stop()
    print(
        f"remotedbg vocab-audit   {audit * 1000:8.0f} ms  {outcome.round_trips} round trips "
        f"(verdict {outcome.verdict}, {len(outcome.findings)} findings)"
    )
    print(
        f"manual ssh commands     {manual * 1000:8.0f} ms  {len(manual_steps)} round trips "
        "(and no verdict, no loader cross-check)"
    )
    print(f"ratio manual / remotedbg {manual / audit:7.1f}x")


if __name__ == "__main__":
    main()
