"""Every --help page names values by what they are (HOST, PATH, SECONDS, N), never by a Python
type such as <str> or <list[str]>, and loses no text to markup."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import typer

from remotedbg.cli import app


def _command_paths(command, prefix=()):
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from _command_paths(sub, (*prefix, name))


COMMANDS = list(_command_paths(typer.main.get_command(app)))


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w) or "remotedbg")
def test_help_names_values_not_python_types(words) -> None:
    page = subprocess.run(
        [sys.executable, "-m", "remotedbg", *words, "--help"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "120", "PATH": "/usr/bin:/bin", "TERM": "dumb"},
        timeout=60,
    )
    assert page.returncode == 0, page.stderr
    assert not re.findall(r"<(?:bool|str|int|float|list\[[a-z]+\]|[a-z]+ range)>", page.stdout)
    assert "...}..." not in page.stdout


def test_connection_help_keeps_its_defaults() -> None:
    page = subprocess.run(
        [sys.executable, "-m", "remotedbg", "glob", "--help"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "TERM": "dumb"},
        timeout=60,
    )
    assert "(default python3)" in page.stdout and "(default ~/.ssh/config)" in page.stdout
    assert re.search(r"--timeout\s+SECONDS", page.stdout)
    assert re.search(r"--host\s+-H\s+HOST", page.stdout)
