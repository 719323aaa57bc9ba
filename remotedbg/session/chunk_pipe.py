"""A channel's receive buffer that keeps the packets' bytes as they came (paramiko's
`BufferedPipe` copies each into one array and copies it out again, and a read of part of a
fuller buffer moves the rest to its front). Given to bulk channels only: it is what
`Channel.in_buffer` must be (feed, read, read_ready, set_event, close, len), nothing more."""

from __future__ import annotations

import threading
import time
from collections import deque

from paramiko.buffered_pipe import PipeTimeout


class ChunkPipe:
    def __init__(self) -> None:
        self._cv = threading.Condition(threading.Lock())
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._closed = False
        self._event: threading.Event | None = None

    def set_event(self, event: threading.Event) -> None:
        with self._cv:
            self._event = event
            if self._chunks or self._closed:
                event.set()
            else:
                event.clear()

    def feed(self, data: bytes) -> None:
        with self._cv:
            self._chunks.append(data)
            self._size += len(data)
            if self._event is not None:
                self._event.set()
            self._cv.notify_all()

    def read_ready(self) -> bool:
        with self._cv:
            return bool(self._chunks)

    def read(self, nbytes: int, timeout: float | None = None) -> bytes:
        """The next chunk (at most `nbytes` of it); b"" once closed and drained."""
        with self._cv:
            deadline = None if timeout is None else time.monotonic() + timeout
            while not self._chunks:
                if self._closed:
                    return b""
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise PipeTimeout()
                self._cv.wait(left)
            chunk = self._chunks.popleft()
            if len(chunk) > nbytes:
                self._chunks.appendleft(chunk[nbytes:])
                chunk = chunk[:nbytes]
            self._size -= len(chunk)
            if not self._chunks and self._event is not None and not self._closed:
                self._event.clear()
            return chunk

    def close(self) -> None:
        with self._cv:
            self._closed = True
            if self._event is not None:
                self._event.set()
            self._cv.notify_all()

    def __len__(self) -> int:
        with self._cv:
            return self._size
