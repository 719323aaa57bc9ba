"""Remote primitives: one agent round trip each, every argument passed as data, never as shell."""

from __future__ import annotations

from typing import Any, TypeVar

from remotedbg.remote import calls, pyagent
from remotedbg.remote.calls import AgentCall
from remotedbg.session import Session
from remotedbg.session.container import inside

A = TypeVar("A")

_PATH_ARGS = ("paths", "root", "path", "prune_paths")
_PATH_KEYS = ("path", "paths", "matches", "pattern")


def _under(path: Any, prefix: str) -> bool:
    return isinstance(path, str) and (path == prefix or path.startswith(prefix + "/"))


def _strip(value: Any, prefix: str) -> Any:
    if isinstance(value, list):
        return [_strip(v, prefix) for v in value]
    return value[len(prefix) :] or "/" if _under(value, prefix) else value


def add_prefix(value: Any, prefix: str, key: str | None = None) -> Any:
    """The paths in an answer from inside a container, put back under `prefix`."""
    if isinstance(value, dict):
        return {k: add_prefix(v, prefix, k) for k, v in value.items()}
    if isinstance(value, list):
        return [add_prefix(v, prefix, key) for v in value]
    if key in _PATH_KEYS and isinstance(value, str) and value.startswith("/"):
        return prefix + value
    return value


class Remote:
    """The primitives bound to one session and one remote interpreter."""

    def __init__(self, session: Session, python: str | None = None) -> None:
        self.session = session
        self.python = python
        self.routes: dict[str, Remote] = {}  # a container's /proc/PID/root -> inside it

    def call(self, request: AgentCall[Any], timeout: float | None = None) -> Any:
        """The request's answer as plain data (checked against its entry's shape)."""
        args = request.args()
        routed = self._routed(request, args)
        if routed is not None:
            prefix, inner = routed
            inside = {k: _strip(v, prefix) if k in _PATH_ARGS else v for k, v in args.items()}
            return add_prefix(inner.call(request.with_args(inside), timeout), prefix)
        return pyagent.call(self.session, request, args, python=self.python, timeout=timeout)

    def ask(self, request: AgentCall[A], timeout: float | None = None) -> A:
        """The request's answer as its dataclass (remote/calls.py)."""
        return request.build(self.call(request, timeout))

    def inside(self, container: dict) -> Remote:
        """The primitives inside a container, through its runtime's exec. Raises
        ContainerUnreachable with what the runtime said."""
        label = container.get("name") or (container.get("id") or "?")[:12]
        return Remote(inside(self.session, container.get("runtime") or "", container["id"], label))

    def route(self, prefix: str, inner: Remote) -> None:
        """File reads under `prefix` (a container's /proc/PID/root, which this user may not
        read) go to `inner` with the prefix taken off; the paths they answer get it back."""
        self.routes[prefix.rstrip("/")] = inner

    def route_of(self, path: str) -> str:
        """The route prefix a path's reads go through ("" for the host's own): one read call
        must keep to one route."""
        return next((prefix for prefix in self.routes if _under(path, prefix)), "")

    def _routed(self, request: AgentCall[Any], args: dict[str, Any]) -> tuple[str, Remote] | None:
        if not self.routes or not request.reads_paths:
            return None
        paths = [p for k in _PATH_ARGS for p in _as_list(args.get(k))]
        for prefix, inner in self.routes.items():
            if paths and all(_under(p, prefix) for p in paths):
                return prefix, inner
        return None

    def glob(self, patterns: list[str], limit: int = 10000) -> list[dict]:
        """Per pattern: matches (sorted), count, and suggestions when it matched nothing."""
        return self.call(calls.GlobPaths(patterns=patterns, limit=limit))

    def find(
        self,
        root: str,
        names: list[str] | None = None,
        type: str | None = None,
        max_depth: int | None = None,
        limit: int = 10000,
        prune: list[str] | None = None,
    ) -> dict:
        """Paths below `root` by name and type; `prune` replaces the directories left out
        (`__pycache__`, `.git`...; [] walks everything)."""
        args = {
            "root": root,
            "names": names or ["*"],
            "type": type,
            "max_depth": max_depth,
            "limit": limit,
        }
        if prune is not None:
            args["prune"] = prune
        return self.call(calls.Find(args))

    def grep(
        self,
        pattern: str,
        paths: list[str],
        context: int = 0,
        ignore_case: bool = False,
        fixed: bool = False,
        limit: int = 5000,
        word: bool = False,
        include: list[str] | None = None,
        exclude: list[str] | None = None,
        stamp: str | None = None,
        prune_paths: list[str] | None = None,
    ) -> dict:
        """Matching lines; `include`/`exclude` are grep's --include/--exclude file globs;
        `prune_paths`: directories under `paths` left out, neither searched nor stamped.
        `stamp` ("" for none yet): the answer carries the tree's stamp, and when it is the one
        given, `same` and no records (nothing under `paths` changed since that answer)."""
        more: dict = {} if stamp is None else {"stamp": stamp}
        if prune_paths:
            more["prune_paths"] = prune_paths
        return self.call(
            calls.Grep(
                pattern=pattern,
                paths=paths,
                context=context,
                ignore_case=ignore_case,
                fixed=fixed,
                limit=limit,
                word=word,
                include=include or [],
                exclude=exclude or [],
                **more,
            )
        )

    def read_text(
        self,
        paths: list[str],
        max_bytes: int = 1 << 20,
        *,
        tail: int | None = None,
        binary: bool = False,
        known: dict[str, str] | None = None,
        suggest: bool = True,
    ) -> list[dict]:
        args: dict = {"paths": paths, "max_bytes": max_bytes, "tail": tail, "binary": binary}
        if known:
            args["known"] = known  # {path: sha256}: those files come back `same`, no text
        if not suggest:
            args["suggest"] = False  # candidates that may not exist: no walk for look-alikes
        return self.call(calls.ReadText(args))

    def stat(self, paths: list[str], follow: bool = False) -> list[dict]:
        return self.call(calls.StatPaths(paths=paths, follow=follow))

    def sha256(self, paths: list[str]) -> list[dict]:
        return self.call(calls.Sha256(paths=paths))

    def sha256_range(self, path: str, length: int) -> dict:
        """The sha256 of the first `length` bytes of `path`, with its size and mtime."""
        return self.call(calls.Sha256Range(path=path, length=length))


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value] if isinstance(value, str) else []
