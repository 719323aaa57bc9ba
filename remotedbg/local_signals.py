"""SIGTERM and SIGHUP on this machine (`kill`, a closed terminal, a job scheduler's stop): by
default they end Python at once, skipping every `finally`, so a raw terminal stays raw and a
temporary file stays behind. Here they raise `Terminated` in the main thread instead, which
unwinds like Ctrl-C does but is not mistaken for one (the REPL does not go back to its prompt)."""

from __future__ import annotations

import signal
import threading

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """The process was asked to stop by `signum`; it exits 128 + signum, as a shell reports."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _raise(signum: int, _frame: object) -> None:
    for other in SIGNALS:  # a second signal while unwinding must not interrupt the clean-up
        signal.signal(other, signal.SIG_IGN)
    raise Terminated(signum)


def unwind_on_termination() -> None:
    """From now on SIGTERM/SIGHUP raise Terminated (main thread only; an ignored signal, as
    under `nohup`, stays ignored)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _raise)


# Code that takes a lock in steps an exception can fall between (`Condition.__enter__` in
# Python, paramiko's `lock.acquire(); try:`): an interrupt raised there leaves the lock held,
# and the next thread to take it (paramiko's transport thread, feeding the channel) waits for
# good. Measured: `run -- seq 1 2000000 | head -1` through a daemon hung 1 run in ~80 under load.
_LOCK_CODE = ("/threading.py", "/queue.py", "/paramiko/", "/chunk_pipe.py")


def in_lock_code(frame: object) -> bool:
    """Whether the interrupted Python frame is inside lock machinery: no exception may be
    raised there (defer it to the next bytecode outside)."""
    filename = getattr(getattr(frame, "f_code", None), "co_filename", "") or ""
    return any(part in filename.replace("\\", "/") for part in _LOCK_CODE)
