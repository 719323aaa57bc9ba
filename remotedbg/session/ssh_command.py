"""The system ssh client's side of the ssh transport, as pure functions: which transport a host
gets, the `ssh` command line that runs a command there, and what ssh's failure means (the
one-line error and exit code paramiko's transport gives for the same failure)."""

from __future__ import annotations

import math
import os
import re

from remotedbg.errors import ConnectionFailed, HostKeyError, RemotedbgError, UsageError
from remotedbg.session.ssh_words import missing_identities, unresolved
from remotedbg.session.target import (
    ConnectOptions,
    ResolvedTarget,
    command_line_port,
    command_line_user,
    parse_host_spec,
    user_known_hosts,
)

TRANSPORTS = ("auto", "ssh", "paramiko")


def choose_transport(requested: str, targets: list[ResolvedTarget], ssh: str | None) -> str:
    """'ssh' or 'paramiko' for a host (its jump hosts in `targets` too): auto picks the system
    client when the config needs what paramiko cannot do and an ssh client is installed."""
    if requested not in TRANSPORTS:
        raise UsageError(f"--transport {requested!r}: expected one of {', '.join(TRANSPORTS)}")
    needs = any(t.needs_system_ssh for t in targets)
    if requested == "ssh" or (requested == "auto" and needs and ssh):
        if not ssh:
            raise UsageError("--transport ssh: no OpenSSH client (ssh) on PATH")
        return "ssh"
    return "paramiko"


def ssh_argv(
    ssh: str, target: ResolvedTarget, options: ConnectOptions, command: str, tty: bool = False
) -> list[str]:
    """The ssh command line that runs `command` on the target."""
    host = parse_host_spec(target.spec)[1]
    user = command_line_user(options, target.spec)
    port = command_line_port(options, target.spec)
    argv = [ssh, "-tt" if tty else "-T"]
    if target.ssh_config_explicit and target.ssh_config:
        argv += ["-F", target.ssh_config]
    settings = [
        "BatchMode=yes",
        # ssh refuses a command line together with RemoteCommand ("Cannot execute command-line
        # and remote command."): ours replaces it, as `ssh -o RemoteCommand=none host cmd`
        "RemoteCommand=none",
        "LogLevel=ERROR",  # errors only: no banner, no "Permanently added" on our stderr
        f"ConnectTimeout={max(1, math.ceil(options.connect_timeout))}",
    ]
    if options.accept_new_host_key and target.strict_host_key_checking not in ("no", "off"):
        settings.append("StrictHostKeyChecking=accept-new")
    settings += target.ssh_overrides
    if target.server_alive_interval == 0:  # a dead peer noticed within ~12 s, as with paramiko
        settings += ["ServerAliveInterval=3", "ServerAliveCountMax=4"]
    for setting in settings:
        argv += ["-o", setting]
    for identity in options.identity:
        argv += ["-i", os.path.expanduser(identity)]
    if user:
        argv += ["-l", user]
    if port:
        argv += ["-p", str(port)]
    return [*argv, "--", host, command]


_CONNECT = re.compile(r"^ssh: connect to host \S+ port \d+: (.+)$")
_RESOLVE = re.compile(r"^ssh: Could not resolve hostname \S+: (.+)$")
_UNKNOWN_KEY = re.compile(r"^No (\S+) host key is known for (\S+)")
_OFFENDING = re.compile(r"^Offending \S+ key in (\S+:\d+)")
_NEW_KEY = re.compile(r"^The fingerprint for the (\S+) key sent by the remote host is")
_LOST = ("Connection to ", "client_loop:", "Broken pipe", "Connection reset", "Timeout, server")


def ssh_failure(stderr: bytes, target: ResolvedTarget) -> RemotedbgError:
    """What ssh said when it exited 255 before the command started, as the one-line error (and
    exit code) the paramiko transport gives for the same failure."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    where = f"{target.spec} ({target.user}@{target.hostname}:{target.port})"
    for line in lines:
        if match := _RESOLVE.match(line):
            return ConnectionFailed(unresolved(target, match.group(1)))
        if match := _CONNECT.match(line):
            return ConnectionFailed(f"{where}: cannot connect: {match.group(1)}")
        if match := _UNKNOWN_KEY.match(line):
            return HostKeyError(
                f"{target.spec}: unknown host key {match.group(1)} for {match.group(2)}; check "
                f"it, then re-run with --accept-new-host-key to record it in "
                f"{user_known_hosts(target)}"
            )
        if "REMOTE HOST IDENTIFICATION HAS CHANGED" in line:
            offending = [m.group(1) for m in map(_OFFENDING.match, lines) if m]
            at = ", ".join(offending) or "your known_hosts files"
            now = [
                f"{m.group(1)} {after.rstrip('.')}"
                for m, after in zip(map(_NEW_KEY.match, lines), [*lines[1:], ""], strict=True)
                if m
            ]
            return HostKeyError(
                f"{target.spec}: HOST KEY CHANGED for {target.known_hosts_key}"
                f"{f' (now {now[0]})' if now else ''}; refusing to connect. If the change is "
                f"expected, remove the old entry at {at}"
            )
        if line.startswith("Host key verification failed"):
            return HostKeyError(f"{where}: host key verification failed (ssh: {line})")
        if "Permission denied" in line:
            return ConnectionFailed(
                f"{where}: authentication failed: {line}{missing_identities(target)}"
            )
    for line in lines:
        if "banner exchange" in line:
            return ConnectionFailed(f"{where}: cannot connect: {line.split(': ')[-1]}")
        if line.startswith("kex_exchange_identification"):
            return ConnectionFailed(f"{where}: cannot connect: Connection closed by remote host")
    detail = lines[-1] if lines else "ssh exited 255 and said nothing"
    return ConnectionFailed(f"{where}: cannot connect: {detail}")


def lost_connection(stderr: bytes) -> bool:
    """Did ssh end (255) because the connection dropped, not because the command exited 255?"""
    tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
    return bool(tail) and tail[0].strip().startswith(_LOST)
