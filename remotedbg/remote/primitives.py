"""Remote primitives: one agent round trip each, every argument passed as data, never as shell."""

from __future__ import annotations

from typing import Any

from remotedbg.remote import pyagent
from remotedbg.session import Session

FS = "remotedbg.agent.fsops"


class Remote:
    """The primitives bound to one session and one remote interpreter."""

    def __init__(self, session: Session, python: str | None = None) -> None:
        self.session = session
        self.python = python

    def call(self, entry: str, args: dict[str, Any], timeout: float | None = None) -> Any:
        return pyagent.call(self.session, entry, args, python=self.python, timeout=timeout)

    def glob(self, patterns: list[str], limit: int = 10000) -> list[dict]:
        """Per pattern: matches (sorted), count, and suggestions when it matched nothing."""
        return self.call(f"{FS}:glob_paths", {"patterns": patterns, "limit": limit})

    def find(
        self,
        root: str,
        names: list[str] | None = None,
        type: str | None = None,
        max_depth: int | None = None,
        limit: int = 10000,
    ) -> dict:
        return self.call(
            f"{FS}:find",
            {
                "root": root,
                "names": names or ["*"],
                "type": type,
                "max_depth": max_depth,
                "limit": limit,
            },
        )

    def grep(
        self,
        pattern: str,
        paths: list[str],
        context: int = 0,
        ignore_case: bool = False,
        fixed: bool = False,
        limit: int = 5000,
        word: bool = False,
    ) -> dict:
        return self.call(
            f"{FS}:grep",
            {
                "pattern": pattern,
                "paths": paths,
                "context": context,
                "ignore_case": ignore_case,
                "fixed": fixed,
                "limit": limit,
                "word": word,
            },
        )

    def read_text(
        self,
        paths: list[str],
        max_bytes: int = 1 << 20,
        *,
        tail: int | None = None,
        binary: bool = False,
    ) -> list[dict]:
        args = {"paths": paths, "max_bytes": max_bytes, "tail": tail, "binary": binary}
        return self.call(f"{FS}:read_text", args)

    def stat(self, paths: list[str], follow: bool = False) -> list[dict]:
        return self.call(f"{FS}:stat_paths", {"paths": paths, "follow": follow})

    def sha256(self, paths: list[str]) -> list[dict]:
        return self.call(f"{FS}:sha256", {"paths": paths})
