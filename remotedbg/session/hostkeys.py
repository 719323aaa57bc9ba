"""Host-key checking as OpenSSH does it: known keys only, `accept-new` on request, never a
silently replaced key (fabric's default AutoAddPolicy accepts anything; we never use it)."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import paramiko
from paramiko.hostkeys import HostKeyEntry, HostKeys

from remotedbg.errors import HostKeyError

SYSTEM_KNOWN_HOSTS = ["/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"]


def fingerprint(key: paramiko.PKey) -> str:
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


class StrictPolicy(paramiko.MissingHostKeyPolicy):
    """Refuse unknown hosts, or record them (first use only) when `accept_new` is set."""

    def __init__(
        self,
        accept_new: bool,
        record_to: Path,
        display: str,
        record_as: str | None = None,
        hashed: bool = False,
    ) -> None:
        self.accept_new = accept_new
        self.record_to = record_to
        self.display = display
        self.record_as = record_as  # HostKeyAlias: the name the key is known under
        self.hashed = hashed  # HashKnownHosts yes: the name is stored as OpenSSH hashes it

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        if not self.accept_new:
            raise HostKeyError(
                f"{self.display}: unknown host key {key.get_name()} {fingerprint(key)} for "
                f"{hostname}; check it, then re-run with --accept-new-host-key to record it "
                f"in {self.record_to}"
            )
        self.record_to.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.record_to, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a") as handle:
            name = self.record_as or hostname
            if self.hashed:
                name = HostKeys.hash_host(name)
            handle.write(f"{name} {key.get_name()} {key.get_base64()}\n")
        client.get_host_keys().add(hostname, key.get_name(), key)


def load_known_hosts(client: paramiko.SSHClient, files: list[str]) -> None:
    """Every known_hosts file, as OpenSSH reads them: a line that is not UTF-8 or not a host
    key entry is skipped, not fatal (it cannot vouch for any host)."""
    keys = client._system_host_keys  # noqa: SLF001 - what load_system_host_keys fills
    for path in SYSTEM_KNOWN_HOSTS + files:
        if not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
        except OSError as exc:
            raise HostKeyError(f"cannot read known hosts file {path}: {exc}") from exc
        for number, data in enumerate(raw.splitlines(), start=1):
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                entry = HostKeyEntry.from_line(line, number)
            except (paramiko.SSHException, ValueError, TypeError, IndexError):
                continue
            if entry is None:
                continue
            entry.hostnames = [h for h in entry.hostnames if not keys.check(h, entry.key)]
            if entry.hostnames:
                keys._entries.append(entry)  # noqa: SLF001 - as paramiko's HostKeys.load does


def alias_keys(client: paramiko.SSHClient, alias: str, connect_key: str) -> None:
    """HostKeyAlias: the keys known for `alias` vouch for the host paramiko connects to."""
    keys = client._system_host_keys  # noqa: SLF001 - what load_system_host_keys fills
    for keytype, key in (keys.lookup(alias) or {}).items():
        keys.add(connect_key, keytype, key)


def find_known_host_lines(files: list[str], hostname: str) -> list[str]:
    """`path:line` of every known_hosts entry for `hostname`, hashed entries included."""
    found = []
    for path in SYSTEM_KNOWN_HOSTS + files:
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                entry = HostKeyEntry.from_line(line, number) if line.strip() else None
                if entry and any(_names_host(name, hostname) for name in entry.hostnames):
                    found.append(f"{path}:{number}")
    return found


def _names_host(name: str, hostname: str) -> bool:
    if name.startswith("|1|"):
        return HostKeys.hash_host(hostname, name) == name
    return name == hostname


def changed_key_error(
    display: str, hostname: str, error: paramiko.BadHostKeyException, files: list[str]
) -> HostKeyError:
    lines = find_known_host_lines(files, hostname)
    where = ", ".join(lines) if lines else "your known_hosts files"
    return HostKeyError(
        f"{display}: HOST KEY CHANGED for {hostname} (now {error.key.get_name()} "
        f"{fingerprint(error.key)}); refusing to connect. If the change is expected, remove the "
        f"old entry at {where}"
    )
