"""Output helpers shared by the front ends: JSON on stdout, people-facing text via rich."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

stdout_console = Console(highlight=False, soft_wrap=True)
stderr_console = Console(stderr=True, highlight=False, soft_wrap=True)


def printable(text: str) -> str:
    """Names may hold undecodable bytes (carried as surrogates): show them escaped."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def write_raw(text: str) -> None:
    """Write text to stdout byte-exact (undecodable names come out as the original bytes)."""
    sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
    sys.stdout.buffer.flush()


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")
    sys.stdout.flush()


def error_line(message: str) -> None:
    stderr_console.print(
        f"[bold red]remotedbg:[/] {escape(printable(message))}",
        markup=True,
        highlight=False,
        emoji=False,
    )
