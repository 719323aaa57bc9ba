"""invoke, which paramiko imports for `Match exec` alone, loads only when a `Match exec` is
evaluated: a command's start does not pay for it, and such a config still resolves."""

from __future__ import annotations

import subprocess
import sys


def test_a_command_start_does_not_load_invoke():
    probe = "import sys, remotedbg.cli.tensors\n" + (
        "print(sorted(m for m in sys.modules if 'invoke' in m))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['invoke']"  # the stand-in alone, none of its code


def test_match_exec_still_resolves_without_a_local_ssh(tmp_path):
    """No OpenSSH client (the config is read by paramiko): `Match exec` runs its command
    (paramiko/config.py: `invoke.run(exec_cmd, hide="stdout", warn=True).ok`)."""
    config = tmp_path / "ssh_config"
    config.write_text(
        'Match host box exec "/bin/false"\n  HostName 127.0.0.8\n'
        'Match host box exec "/bin/true"\n  HostName 127.0.0.9\n'
    )
    probe = (
        "import shutil; assert shutil.which('ssh') is None\n"
        "from remotedbg.session.target import ConnectOptions, resolve\n"
        f"print(resolve(ConnectOptions(host='box', ssh_config={str(config)!r})).hostname)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True,
        stdin=subprocess.DEVNULL, env={"PATH": str(tmp_path / "empty")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "127.0.0.9"
