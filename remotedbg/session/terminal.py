"""The local terminal lent to a remote program that needs one (`run -t`, as `ssh -t`): its size,
raw mode while the program runs, and window resizes passed on."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import termios
import threading
import tty
from collections.abc import Callable, Iterator


def size() -> tuple[int, int]:
    """(columns, lines) of the terminal on stdout, else stdin, else 80x24."""
    for stream in (sys.stdout, sys.stdin):
        try:
            found = os.get_terminal_size(stream.fileno())
            return found.columns, found.lines
        except (OSError, ValueError, AttributeError):
            continue
    fallback = shutil.get_terminal_size((80, 24))
    return fallback.columns, fallback.lines


@contextlib.contextmanager
def raw_mode(fd: int) -> Iterator[bool]:
    """Raw mode on `fd` (keys, Ctrl-C included, go to the remote program as bytes); yields
    whether `fd` is a terminal. The previous mode is restored whatever happens."""
    if not os.isatty(fd):
        yield False
        return
    saved = termios.tcgetattr(fd)
    try:
        tty.setraw(fd)
        yield True
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


@contextlib.contextmanager
def on_resize(callback: Callable[[int, int], None]) -> Iterator[None]:
    """Call `callback(columns, lines)` whenever the local window is resized (SIGWINCH)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals can be handled in the main thread only
        return

    def resized(_signum: int, _frame: object) -> None:
        with contextlib.suppress(Exception):
            callback(*size())

    previous = signal.signal(signal.SIGWINCH, resized)
    try:
        yield
    finally:
        signal.signal(signal.SIGWINCH, previous)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
