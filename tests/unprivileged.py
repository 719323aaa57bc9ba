"""Run a call as an unprivileged user, so permission checks mean something when the tests run
as root (CI does): root reads every file whatever its mode."""

from __future__ import annotations

import os
import pickle
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.procs import start_time

NOBODY = "nobody"


@contextmanager
def shared_dir() -> Iterator[Path]:
    """A folder every user can reach (pytest's tmp_path is private to its owner)."""
    path = Path(tempfile.mkdtemp(prefix="remotedbg-perm-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for dirpath, dirnames, _ in os.walk(path):
            for name in dirnames:
                os.chmod(os.path.join(dirpath, name), 0o755)
        shutil.rmtree(path, ignore_errors=True)


def call_unprivileged(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) in this process when not root; otherwise in a forked child running as nobody.
    The child's result or exception comes back pickled, so pytest.raises works either way."""
    if os.geteuid() != 0:
        return fn(*args)
    user = pwd.getpwnam(NOBODY)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        try:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            try:
                outcome: tuple[str, Any] = ("value", fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed back to the parent to raise
                outcome = ("raised", exc)
            with os.fdopen(write_end, "wb") as out:
                pickle.dump(outcome, out)
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as inp:
        data = inp.read()
    os.waitpid(pid, 0)
    kind, payload = pickle.loads(data)
    if kind == "raised":
        raise payload
    return payload


# the comment a throwaway user carries: who made it, so a later run can tell a user whose run was
# killed (SIGKILL runs no teardown) from one a live run still uses
MADE_BY = "remotedbg test user of pid"


def _remove_user(name: str, uid: int) -> None:
    """Kill what the user runs, wait until the kernel has let go of it (a killed process stays
    the user's until reaped, and userdel refuses a user with processes), then delete it."""
    subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
    deadline = time.monotonic() + 10
    while processes_of(uid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if subprocess.run(["userdel", name], capture_output=True).returncode != 0:
        subprocess.run(["userdel", "--force", name], capture_output=True)


def sweep_stale_users() -> list[str]:
    """Delete the throwaway users of runs that are gone, with their homes; the names deleted."""
    swept = []
    for entry in pwd.getpwall():
        words = entry.pw_gecos.removeprefix(MADE_BY).split()
        if not entry.pw_gecos.startswith(MADE_BY) or len(words) != 2:
            continue
        pid, started = words
        if pid.isdigit() and start_time(int(pid)) == started:
            continue  # its run is alive
        _remove_user(entry.pw_name, entry.pw_uid)
        home = Path(entry.pw_dir)
        if home.is_dir() and home.stat().st_uid == entry.pw_uid:
            shutil.rmtree(home, ignore_errors=True)
        swept.append(entry.pw_name)
    return swept


@contextmanager
def throwaway_user(
    prefix: str, home_parent: Path, shell: str = "/bin/sh"
) -> Iterator[pwd.struct_passwd]:
    """A user of its own (login `shell`, home under `home_parent`, its own group), for a test
    that logs in over ssh as someone the kernel treats as a stranger; removed afterwards,
    with whatever it left running (the test asserts there is nothing). The users of killed
    runs are removed first."""
    sweep_stale_users()
    name = f"{prefix}{os.getpid() % 100000}"
    home = home_parent / name
    subprocess.run(
        ["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", str(home),
         "--password", "*",  # no password, yet not locked: sshd refuses locked accounts
         "--comment", f"{MADE_BY} {os.getpid()} {start_time(os.getpid())}",
         "--shell", shell, name],
        check=True, capture_output=True,
    )  # fmt: skip
    user = pwd.getpwnam(name)
    try:
        home.mkdir(parents=True)
        os.chown(home, user.pw_uid, user.pw_gid)
        yield user
    finally:
        _remove_user(name, user.pw_uid)


def processes_of(uid: int) -> list[str]:
    """The command lines of the processes a user runs."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                found.append(Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" "))
        except OSError:
            continue
    return [c.decode(errors="replace") for c in found]
