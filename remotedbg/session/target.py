"""What `--host` names, resolved through ssh_config the way OpenSSH itself resolves it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from remotedbg import settings
from remotedbg.errors import UsageError
from remotedbg.host_spec import split_host_spec

DEFAULT_SSH_CONFIG = "~/.ssh/config"
LOCAL = "local"


@dataclass
class ConnectOptions:
    """Connection settings from the command line; `None` means 'from ssh_config or default'."""

    host: str
    ssh_config: str | None = None
    identity: list[str] = field(default_factory=list)
    user: str | None = None
    port: int | None = None
    connect_timeout: float = 10.0
    timeout: float | None = 60.0
    accept_new_host_key: bool = False
    max_output: int | None = None
    container: str | None = None  # work inside this container of the host (its runtime's exec)
    transport: str = "auto"  # auto | ssh (the system OpenSSH client) | paramiko


@dataclass
class ResolvedTarget:
    spec: str  # what the user typed, shown in messages and the transcript
    hostname: str
    port: int
    user: str
    identity_files: list[str]
    proxy_jump: str | None
    known_hosts_files: list[str]
    ssh_config: str | None  # the file used, so jump hosts resolve through it too
    proxy_command: str | None = None  # with its %h %p %r tokens expanded
    host_key_alias: str | None = None
    missing_identity_files: list[str] = field(default_factory=list)  # named in ssh_config
    # OpenSSH offers only the identities it names (`ssh -G` lists its defaults when the config
    # names none); the agent only without IdentitiesOnly and with an IdentityAgent
    look_for_keys: bool = False
    allow_agent: bool = True
    hash_known_hosts: bool = False  # a key recorded with --accept-new-host-key is hashed
    # what the config needs that paramiko cannot do ("certificatefile ~/.ssh/id-cert.pub"):
    # such a host is reached through the system ssh client (session/ssh_process.py)
    needs_system_ssh: list[str] = field(default_factory=list)
    ssh_config_explicit: bool = False  # passed to ssh as -F (else ssh reads its defaults)
    strict_host_key_checking: str = "ask"
    server_alive_interval: int = 0
    # settings that would keep ssh from running our command on our stdin (`SessionType none`,
    # `StdinNull yes`, `ForkAfterAuthentication yes`): the system client overrides them
    ssh_overrides: list[str] = field(default_factory=list)
    # SendEnv's patterns and SetEnv's NAME=VALUE pairs: applied to every command as it is
    # sent, from the environment the command was typed in (send_env.py), never cached
    send_env: list[str] = field(default_factory=list)
    set_env: list[tuple[str, str]] = field(default_factory=list)

    @property
    def known_hosts_key(self) -> str:
        """The name OpenSSH and paramiko use for this host in known_hosts (HostKeyAlias when
        the config sets one)."""
        host = self.host_key_alias or self.hostname
        return host if self.port == 22 or self.host_key_alias else f"[{host}]:{self.port}"

    @property
    def connect_key(self) -> str:
        """The name paramiko looks the server's key up under."""
        return self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"


#: The identity files `ssh -G` lists when ssh_config names none; their absence is normal.
OPENSSH_DEFAULT_IDENTITIES = frozenset(
    f"~/.ssh/{name}"
    for name in (
        "id_rsa",
        "id_ecdsa",
        "id_ecdsa_sk",
        "id_ed25519",
        "id_ed25519_sk",
        "id_xmss",
        "id_dsa",
    )
)


#: How deep ssh follows Include inside included files (readconf.c's READCONF_MAX_DEPTH).
INCLUDE_MAX_DEPTH = 16


def _config_words(line: str) -> list[str]:
    """An ssh_config line's keyword and arguments (`Key=value` too; quotes as ssh reads them)."""
    import shlex

    line = line.strip()
    if not line or line.startswith("#"):
        return []
    match = re.match(r"([^\s=]+)\s*(?:=\s*)?(.*)$", line)
    if match is None:
        return []
    try:
        args = shlex.split(match.group(2), comments=True)
    except ValueError:
        args = match.group(2).split()
    return [match.group(1), *args]


def _included(pattern: str, home: str) -> list[str]:
    """The files one Include argument names: `~` is the user's home, a relative path is under
    ~/.ssh (a user's config, as ssh reads it), globs expand in sorted order, as glob(3)'s."""
    import glob

    if pattern == "~" or pattern.startswith("~/"):
        pattern = home + pattern[1:]
    elif not os.path.isabs(pattern):
        pattern = os.path.join(home, ".ssh", pattern)
    return sorted(glob.glob(pattern))


def _host_matches(name: str, patterns: list[str]) -> bool:
    """ssh's Host matching: a positive pattern matches and no `!pattern` does (`*`, `?`)."""
    import fnmatch

    def hit(pattern: str) -> bool:
        return fnmatch.fnmatchcase(name, pattern.replace("[", "[[]"))

    negated = [p[1:] for p in patterns if p.startswith("!")]
    positive = [p for p in patterns if not p.startswith("!")]
    return any(map(hit, positive)) and not any(map(hit, negated))


def config_host_names(text: str, home: str | None = None, depth: int = 0) -> list[str]:
    """The aliases an ssh_config text defines as ssh sees them: the literal names of its `Host`
    lines and of the files it `Include`s (followed as ssh follows them: an Include inside a
    Host block counts only for names that block matches; inside a Match block, whose
    condition is not evaluated here, it counts); patterns (`*`, `?`) and negations (`!name`)
    left out. `home` is whose ~/.ssh relative Includes are under (the user's passwd entry,
    as ssh takes it, not $HOME)."""
    if home is None:
        import pwd

        home = pwd.getpwuid(os.getuid()).pw_dir
    names: list[str] = []
    block: list[str] | None = None  # the Host patterns of the block a line is in
    for line in text.splitlines():
        words = _config_words(line)
        keyword = words[0].lower() if words else ""
        if keyword == "host":
            block = words[1:]
            names += [w for w in words[1:] if not any(c in w for c in "*?!")]
        elif keyword == "match":
            block = None
        elif keyword == "include" and depth < INCLUDE_MAX_DEPTH:
            for pattern in words[1:]:
                for path in _included(pattern, home):
                    found = _file_host_names(path, home, depth + 1)
                    names += [n for n in found if block is None or _host_matches(n, block)]
    return list(dict.fromkeys(names))


def _file_host_names(path: str, home: str | None, depth: int) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return config_host_names(fh.read(1 << 20), home, depth)
    except OSError:  # a directory, unreadable: ssh says so when it is used
        return []


def config_aliases(config: str | None, home: str | None = None) -> list[str]:
    """The aliases an ssh_config file names, Includes followed ([] when there is none or it
    cannot be read): what shell completion offers and "did you mean" chooses from."""
    return _file_host_names(config, home, 0) if config else []


def near_aliases(host: str, config: str | None) -> list[str]:
    """Aliases of the ssh_config file close to a name that did not resolve (a typo, most often)."""
    import difflib

    return difflib.get_close_matches(host, config_aliases(config), n=3, cutoff=0.6)


def parse_host_spec(spec: str) -> tuple[str | None, str, int | None]:
    """(user, host, port) of an alias, user@host[:port], or ssh's URI form ssh://[user@]host[:port]."""
    parts = split_host_spec(spec)
    if parts is None:
        raise UsageError(
            f"--host {spec.strip()!r}: expected an ssh_config alias, user@host[:port] or 'local'"
        )
    port = parts[2]
    if port is not None and not 0 < port < 65536:
        raise UsageError(f"--host {spec.strip()!r}: port {port} is out of range")
    return parts


def config_path(explicit: str | None) -> tuple[str | None, bool]:
    """The ssh_config file to read (--ssh-config, $REMOTEDBG_SSH_CONFIG, ~/.ssh/config) and
    whether it was named explicitly (then it replaces the system-wide file, as `ssh -F` does)."""
    named = settings.chosen("ssh_config", explicit, {}, default=None)
    if named:
        expanded = os.path.expanduser(named)
        if not os.path.isfile(expanded):
            raise UsageError(f"ssh config {named}: no such file")
        return expanded, True
    default = os.path.expanduser(DEFAULT_SSH_CONFIG)
    return (default if os.path.isfile(default) else None), False


def _ssh_dash_g(
    host: str, config: str | None, explicit: bool, user: str | None = None, port: int | None = None
) -> dict[str, list[str]] | None:
    """Resolve with `ssh -G`, which honours Include, Match and every default (with the command
    line's user and port, as `ssh -l USER -p PORT` resolves: `Match user`, the %r and %p it
    expands). None without ssh."""
    ssh = shutil.which("ssh")
    if not ssh:
        return None
    argv = [ssh, "-G"] + (["-F", config or "/dev/null"] if explicit else [])
    argv += (["-l", user] if user else []) + (["-p", str(port)] if port else [])
    argv += ["--", host]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        raise UsageError(f"ssh config: {message[-1] if message else 'ssh -G failed'}")
    values: dict[str, list[str]] = {}
    for line in proc.stdout.decode(errors="replace").splitlines():
        key, _, value = line.partition(" ")
        values.setdefault(key.lower(), []).append(value)
    return values


def _paramiko_lookup(host: str, config: str | None) -> dict[str, list[str]]:
    import paramiko  # only without an OpenSSH client; keeps local-only commands quick to start

    parsed = paramiko.SSHConfig.from_path(config) if config else paramiko.SSHConfig()
    found = parsed.lookup(host)
    values: dict[str, list[str]] = {}
    for key, value in found.items():
        values[key.lower()] = value if isinstance(value, list) else [str(value)]
    if "userknownhostsfile" in values:
        values["userknownhostsfile"] = " ".join(values["userknownhostsfile"]).split()
    if "setenv" in values:  # one line as written: its words as ssh splits them (quotes)
        values["setenv"] = [w for line in values["setenv"] for w in _config_words("x " + line)[1:]]
    return values


def command_line_user(options: ConnectOptions, spec: str) -> str | None:
    """The user the command line names: -l, else the `user@` of the host (the front has
    dropped a -l typed after `user@host`: ssh takes the first value it obtains)."""
    return options.user or parse_host_spec(spec)[0]


def command_line_port(options: ConnectOptions, spec: str) -> int | None:
    """The port the command line names: -p, else the host's `:port` (likewise)."""
    return options.port or parse_host_spec(spec)[2]


def resolve(options: ConnectOptions, spec: str | None = None) -> ResolvedTarget:
    spec = spec or options.host
    host = parse_host_spec(spec)[1]
    user, port = command_line_user(options, spec), command_line_port(options, spec)
    config, explicit = config_path(options.ssh_config)
    values = _ssh_dash_g(host, config, explicit, user, port) or _paramiko_lookup(host, config)

    def first(key: str, default: str | None = None) -> str | None:
        return values.get(key, [default])[0]

    hostname = first("hostname", host) or host
    resolved_port = port or int(first("port", "22") or 22)
    resolved_user = user or first("user") or _local_user()
    for path in options.identity:
        if not os.path.isfile(os.path.expanduser(path)):
            raise UsageError(f"identity file {path}: no such file")
    alias = first("hostkeyalias")
    alias = None if alias in (None, "none", "") else alias
    tokens = connection_tokens(hostname, resolved_port, resolved_user, host, alias,
                               first("proxyjump"))  # fmt: skip
    # IdentityFile and CertificateFile as ssh reads them: ~, ${VAR} and %-tokens expanded
    # (`ssh -G` prints them unexpanded); OpenSSH's unexpanded defaults stay as they are
    named = [(p, p if p in OPENSSH_DEFAULT_IDENTITIES else expand_path(p, tokens))
             for p in values.get("identityfile", [])]  # fmt: skip
    values["certificatefile"] = [expand_path(p, tokens) for p in values.get("certificatefile", [])]
    identities = [os.path.expanduser(path) for path in options.identity]
    identities += [os.path.expanduser(path) for _, path in named]
    missing = [
        path
        for typed, path in named
        if typed not in OPENSSH_DEFAULT_IDENTITIES and not os.path.isfile(os.path.expanduser(path))
    ]
    known_hosts: list[str] = []
    for entry in values.get("userknownhostsfile", ["~/.ssh/known_hosts"]):
        known_hosts.extend(os.path.expanduser(p) for p in entry.split())
    jump = first("proxyjump")
    proxy = first("proxycommand")
    if proxy in (None, "none", ""):
        proxy = None
    else:
        proxy = expand_tokens(proxy, hostname, resolved_port, resolved_user, host)
    return ResolvedTarget(
        spec=spec,
        hostname=hostname,
        port=resolved_port,
        user=resolved_user,
        identity_files=[p for p in dict.fromkeys(identities) if os.path.isfile(p)],
        proxy_jump=None if jump in (None, "none") else jump,
        known_hosts_files=known_hosts,
        ssh_config=config,
        proxy_command=proxy,
        host_key_alias=alias,
        missing_identity_files=missing,
        # paramiko's own search of ~/.ssh only where nothing (not even `ssh -G`) named keys
        look_for_keys=not values.get("identityfile") and not options.identity,
        allow_agent=(first("identitiesonly", "no") or "no").lower() != "yes"
        and (first("identityagent", "") or "").lower() != "none",
        hash_known_hosts=(first("hashknownhosts", "no") or "no").lower() == "yes",
        needs_system_ssh=beyond_paramiko(values),
        ssh_config_explicit=explicit,
        strict_host_key_checking=(first("stricthostkeychecking", "ask") or "ask").lower(),
        server_alive_interval=int(first("serveraliveinterval", "0") or 0),
        ssh_overrides=[
            setting
            for key, value, setting in (
                ("sessiontype", "default", "SessionType=default"),
                ("stdinnull", "no", "StdinNull=no"),
                ("forkafterauthentication", "no", "ForkAfterAuthentication=no"),
            )
            if (first(key, value) or value).lower() != value
        ],
        send_env=[p for entry in values.get("sendenv", []) for p in entry.split()],
        set_env=set_env_pairs(values.get("setenv", [])),
    )


def set_env_pairs(entries: list[str]) -> list[tuple[str, str]]:
    """SetEnv's NAME=VALUE entries (one a line from `ssh -G`, quotes removed), the first of
    each name: ssh's rule."""
    pairs: dict[str, str] = {}
    for entry in entries:
        name, sep, value = entry.partition("=")
        if sep and name and name not in pairs:
            pairs[name] = value
    return list(pairs.items())


#: ssh_config settings that change where or how ssh connects and that paramiko cannot do:
#: such a host goes through the system ssh client (or, with --transport paramiko, is refused
#: in one line rather than silently ignored). GSSAPIAuthentication is not here: Debian's
#: /etc/ssh/ssh_config turns it on for every host; Kerberos users pick --transport ssh.
BEYOND_PARAMIKO = {
    "proxyusefdpass": lambda v: v == "yes",
    "remotecommand": lambda v: v not in ("", "none"),
    "certificatefile": lambda v: bool(v),
    "pkcs11provider": lambda v: v not in ("", "none"),
    "hostbasedauthentication": lambda v: v == "yes",
    "knownhostscommand": lambda v: v not in ("", "none"),
}


def beyond_paramiko(values: dict[str, list[str]]) -> list[str]:
    """The settings of a resolved config that paramiko cannot implement, as `key value`."""
    found = [
        f"{key} {value.strip()}"
        for key, unsupported in BEYOND_PARAMIKO.items()
        for value in values.get(key, [])
        if unsupported(value.strip())
    ]
    for path in values.get("identityfile", []):
        if security_key(os.path.expanduser(path)):
            found.append(f"identityfile {path} (a FIDO security key)")
    # LocalCommand runs here after the login, with ssh's %-tokens, only where
    # PermitLocalCommand allows it (ssh_config(5)): ssh itself runs it, as for `ssh HOST`
    local = [v.strip() for v in values.get("localcommand", []) if v.strip() not in ("", "none")]
    permitted = [v.strip().lower() for v in values.get("permitlocalcommand", ["no"])]
    if local and permitted[0] == "yes":
        found.append(f"localcommand {local[0]}")
    return found


def security_key(path: str) -> bool:
    """Is this identity a FIDO key (sk-ssh-ed25519@openssh.com, sk-ecdsa-sha2-...)? Read from
    its .pub, or from the public part an OpenSSH private key file carries unencrypted."""
    try:
        with open(path + ".pub", "rb") as handle:
            return handle.read(3) == b"sk-"
    except OSError:
        pass
    try:
        with open(path, "rb") as handle:
            text = handle.read(1 << 16)
    except OSError:
        return False
    return openssh_key_type(text).startswith("sk-")


def openssh_key_type(text: bytes) -> str:
    """The key type named in an OpenSSH private key file ('' when it is not one)."""
    import base64
    import struct

    begin, end = b"-----BEGIN OPENSSH PRIVATE KEY-----", b"-----END OPENSSH PRIVATE KEY-----"
    if begin not in text or end not in text:
        return ""
    try:
        blob = base64.b64decode(b"".join(text.split(begin, 1)[1].split(end, 1)[0].split()))
    except ValueError:
        return ""
    magic = b"openssh-key-v1\0"
    if not blob.startswith(magic):
        return ""
    offset = len(magic)
    try:
        for _ in range(3):  # cipher, kdf name, kdf options
            (size,) = struct.unpack_from("!I", blob, offset)
            offset += 4 + size
        offset += 4  # number of keys
        offset += 4  # the public key blob's length; its first string is the type
        (size,) = struct.unpack_from("!I", blob, offset)
        return blob[offset + 4 : offset + 4 + size].decode("ascii", "replace")
    except struct.error:
        return ""


def refuse_beyond_paramiko(target: ResolvedTarget, why: str) -> None:
    """With paramiko as the transport, what it cannot do is a one-line error (exit 2)."""
    if target.needs_system_ssh:
        raise UsageError(
            f"--host {target.spec}: ssh_config sets {target.needs_system_ssh[0]}, which "
            f"paramiko cannot do ({why}); use --transport ssh (the system ssh client)"
        )


def expand_tokens(text: str, hostname: str, port: int, user: str, alias: str) -> str:
    """ProxyCommand's tokens, as ssh expands them: %h %p %r %n %%."""
    table = {"h": hostname, "p": str(port), "r": user, "n": alias, "%": "%"}
    return re.sub(r"%(.)", lambda m: table.get(m.group(1), m.group(0)), text)


def connection_tokens(
    hostname: str, port: int, user: str, alias: str, key_alias: str | None, jump: str | None
) -> dict[str, str]:
    """ssh_config(5)'s TOKENS for a connection, as ssh fills them: %C %d %h %i %j %k %L %l %n
    %p %r %u (and %%)."""
    import hashlib
    import pwd
    import socket

    local = socket.gethostname()
    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        home = os.path.expanduser("~")
    # %C as OpenSSH 9.2 computes it (ssh_connection_hash: %l%h%p%r)
    digest = hashlib.sha1(f"{local}{hostname}{port}{user}".encode()).hexdigest()
    return {
        "%": "%",
        "C": digest,
        "d": home,
        "h": hostname,
        "i": str(os.getuid()),
        "j": "" if jump in (None, "none") else jump,
        "k": key_alias or alias,
        "L": local.split(".")[0],
        "l": local,
        "n": alias,
        "p": str(port),
        "r": user,
        "u": _local_user(),
    }


def expand_path(text: str, tokens: dict[str, str]) -> str:
    """A path setting as ssh reads it (IdentityFile, CertificateFile): a leading ~, then
    ${VAR} from the environment, then %-tokens; an unknown token or variable stays as typed
    (ssh refuses the line; then the file is reported missing)."""
    text = os.path.expanduser(text)
    text = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}",
                  lambda m: os.environ.get(m.group(1), m.group(0)), text)  # fmt: skip
    return re.sub(r"%(.)", lambda m: tokens.get(m.group(1), m.group(0)), text)


def _local_user() -> str:
    import getpass

    return getpass.getuser()


def user_known_hosts(target: ResolvedTarget) -> Path:
    """Where an accepted new key is recorded: the first UserKnownHostsFile."""
    return Path(target.known_hosts_files[0] if target.known_hosts_files else "~/.ssh/known_hosts")
