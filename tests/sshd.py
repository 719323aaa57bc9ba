"""A real OpenSSH server on 127.0.0.1 with throwaway keys, for tests and benchmarks."""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
SFTP_SERVERS = ["/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def keygen(path: Path, kind: str = "ed25519") -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "remotedbg-test", "-f", str(path)],
        check=True,
    )
    return path


@dataclass
class Sshd:
    directory: Path
    port: int
    user: str
    host_key: Path
    user_key: Path
    process: subprocess.Popen | None = None
    sftp: bool = True
    extra_config: tuple[str, ...] = ()

    @property
    def host_key_line(self) -> str:
        kind, blob = self.host_key.with_suffix(".pub").read_text().split()[:2]
        return f"[127.0.0.1]:{self.port} {kind} {blob}\n"

    def start(self) -> Sshd:
        config = self.directory / "sshd_config"
        lines = [
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {self.host_key}",
            f"PidFile {self.directory / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.directory / 'authorized_keys'}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "StrictModes no",
            "UsePAM no",
            "MaxSessions 64",
            "MaxStartups 100:30:200",
            "AllowTcpForwarding yes",
            "LogLevel ERROR",
        ]
        server = next((p for p in SFTP_SERVERS if os.path.exists(p)), None)
        if self.sftp and server:
            lines.append(f"Subsystem sftp {server}")
        # sshd takes a keyword's first value: a test's own setting replaces the default above
        overridden = {line.split()[0].lower() for line in self.extra_config if line.strip()}
        lines = [line for line in lines if line.split()[0].lower() not in overridden]
        lines += list(self.extra_config)
        config.write_text("\n".join(lines) + "\n")
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", exist_ok=True)
        log = open(self.directory / "sshd.log", "ab")
        self.process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=log, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError((self.directory / "sshd.log").read_text())
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("sshd did not start listening")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(5)
        self.process = None


def make_sshd(
    directory: Path, user_key: Path, sftp: bool = True, extra_config: tuple[str, ...] = ()
) -> Sshd:
    directory.mkdir(parents=True, exist_ok=True)
    host_key = keygen(directory / "host_key")
    (directory / "authorized_keys").write_text(user_key.with_suffix(".pub").read_text())
    return Sshd(
        directory,
        free_port(),
        getpass.getuser(),
        host_key,
        user_key,
        sftp=sftp,
        extra_config=tuple(extra_config),
    ).start()


def write_client_config(
    path: Path,
    servers: dict[str, Sshd],
    known_hosts: Path,
    extra: dict[str, list[str]] | None = None,
) -> Path:
    """An ssh_config with one alias per server, all trusting their host keys."""
    blocks = []
    for alias, server in servers.items():
        block = [
            f"Host {alias}",
            "  HostName 127.0.0.1",
            f"  Port {server.port}",
            f"  User {server.user}",
            f"  IdentityFile {server.user_key}",
            f"  UserKnownHostsFile {known_hosts}",
            "  StrictHostKeyChecking yes",
            "  BatchMode yes",
        ]
        block += [f"  {line}" for line in (extra or {}).get(alias, [])]
        blocks.append("\n".join(block))
    path.write_text("\n\n".join(blocks) + "\n")
    with open(known_hosts, "a") as handle:
        for server in servers.values():
            handle.write(server.host_key_line)
    return path


def start_box(work: Path, alias: str = "benchbox") -> tuple[Sshd, Path]:
    """One sshd with a fresh user key under `work`, and an ssh_config naming it `alias`."""
    server = make_sshd(work / "sshd", keygen(work / "user_key"))
    return server, write_client_config(work / "ssh_config", {alias: server}, work / "known_hosts")
