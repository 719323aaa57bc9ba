"""What a fresh install has: only the declared dependencies (typer ships its own click)."""

from __future__ import annotations

import subprocess
import sys


def test_the_cli_imports_without_click_installed():
    code = (
        "import sys; sys.modules['click'] = None; import remotedbg.cli, remotedbg.repl; print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout == "ok\n", result.stderr
