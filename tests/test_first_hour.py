"""A newcomer's first hour (issue 50): what ssh users type, as they type it, each answered with
what works (or works already), in one line, with the README's exit codes."""

from __future__ import annotations

import os
import subprocess
import sys


def _piped(line: str, box, isolated_state) -> subprocess.CompletedProcess:
    """`line` run by bash, the left command's exit status appended to stderr."""
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(box.ssh_config),
               XDG_STATE_HOME=str(isolated_state))  # fmt: skip
    return subprocess.run(["bash", "-c", line + '; echo "status=${PIPESTATUS[0]}" >&2'],
                          capture_output=True, timeout=60, env=env,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def test_a_closed_pipe_is_silent_as_with_ssh_and_exits_141(box, isolated_state):
    """`run -- cmd | head -1`: ssh prints nothing on stderr (its status: 255); neither does
    remotedbg, and its exit status (141, as a shell reports SIGPIPE) says the reader left."""
    ssh = _piped(f"ssh -F {box.ssh_config} testbox seq 1 300000 | head -1", box, isolated_state)
    assert ssh.stdout == b"1\n" and ssh.stderr == b"status=255\n", ssh.stderr
    ours = _piped(f"{sys.executable} -m remotedbg run -H testbox -- seq 1 300000 | head -1",
                  box, isolated_state)  # fmt: skip
    assert ours.stdout == b"1\n"
    assert ours.stderr == b"status=141\n", ours.stderr
