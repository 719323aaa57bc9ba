"""What works for `ssh` works for remotedbg: a host whose ssh_config needs what paramiko cannot
do (a user certificate, RemoteCommand) is reached through the system ssh client, with the same
commands, checks, transfers, error lines and exit codes; each outcome beside ssh's own."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from tests.checkpoints import write_eagle3_checkpoint
from tests.procs import pids_with_argv, wait_for
from tests.sshd import Sshd, free_port, keygen, make_sshd


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    if int(handle.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return found


def processes_naming(text: str) -> dict[int, str]:
    """pid -> command line (words NUL-separated) of this machine's processes that contain
    `text`."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    line = handle.read().decode(errors="replace")
            except OSError:
                continue
            if text in line:
                found[int(entry)] = line
    return found


class CertWorld:
    """An sshd trusting a user CA, and a user whose plain key it does not authorize."""

    def __init__(self, root: Path, jump: Sshd, jump_key: Path) -> None:
        ca = keygen(root / "user_ca")
        decoy = keygen(root / "decoy")  # the only key in authorized_keys
        self.server = make_sshd(
            root / "sshd", decoy, extra_config=(f"TrustedUserCAKeys {ca}.pub",)
        )
        self.key = keygen(root / "user")
        subprocess.run(
            ["ssh-keygen", "-q", "-s", str(ca), "-I", "remotedbg-test", "-n",
             self.server.user, "-V", "-5m:+1h", str(self.key) + ".pub"],
            check=True,
        )  # fmt: skip
        # away from the key, so that only CertificateFile finds it (ssh and paramiko both load
        # KEY-cert.pub beside an IdentityFile by themselves)
        self.cert = root / "certs" / "user.cert"
        self.cert.parent.mkdir()
        Path(str(self.key) + "-cert.pub").rename(self.cert)
        self.known = root / "known_hosts"
        self.known.write_text(self.server.host_key_line + jump.host_key_line)
        self.root = root
        self.jump = jump
        self.jump_key = jump_key

    def config(self, name: str, *lines: str, cert: bool = True) -> Path:
        """An ssh_config with `certbox` (plus `lines`) and `jumpbox`, a plain paramiko host."""
        block = [
            "Host certbox",
            "  HostName 127.0.0.1",
            f"  Port {self.server.port}",
            f"  User {self.server.user}",
            f"  IdentityFile {self.key}",
            "  IdentitiesOnly yes",
            f"  UserKnownHostsFile {self.known}",
            "  StrictHostKeyChecking yes",
            *([f"  CertificateFile {self.cert}"] if cert else []),
            *[f"  {line}" for line in lines],
            "",
            "Host jumpbox",
            "  HostName 127.0.0.1",
            f"  Port {self.jump.port}",
            f"  User {self.jump.user}",
            f"  IdentityFile {self.jump_key}",
            f"  UserKnownHostsFile {self.known}",
            "  StrictHostKeyChecking yes",
        ]
        path = self.root / name
        path.write_text("\n".join(block) + "\n")
        return path

    def nothing_left(self, config: Path) -> bool:
        """No session open on the box (every remote process ended with its connection) and no
        ssh client of ours still running here."""
        return not children_of(self.server.process.pid) and not processes_naming(str(config))


@pytest.fixture(scope="module")
def certs(ssh_world, tmp_path_factory):
    world = CertWorld(tmp_path_factory.mktemp("certs"), ssh_world.box.server, ssh_world.user_key)
    yield world
    world.server.stop()


ENV = {"SSH_AUTH_SOCK": ""}  # no agent key may let anyone in


def ssh(config: Path, *words: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["ssh", "-F", str(config), "-o", "BatchMode=yes", *words],
        capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
        env=dict(os.environ, **ENV),
    )  # fmt: skip


def test_a_certificate_login_works_as_with_ssh(cli, certs, tmp_path):
    with_cert, without = certs.config("cert.conf"), certs.config("plain.conf", cert=False)
    # OpenSSH's outcome: the plain key is refused, the certificate lets it in
    refused = ssh(without, "certbox", "true")
    assert refused.returncode == 255 and b"Permission denied" in refused.stderr
    theirs = ssh(with_cert, "certbox", "echo", "in", "$SSH_CONNECTION")
    assert theirs.returncode == 0, theirs.stderr

    def ours(*words: str, config: Path = with_cert) -> subprocess.CompletedProcess:
        command = words[0].split()  # "tensors pull"
        return cli(*command, "-H", "certbox", "--ssh-config", str(config), *words[1:], env=ENV)

    ran = ours("run", "--shell", "--", "echo in $SSH_CONNECTION")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split()[:1] == theirs.stdout.split()[:1] == [b"in"]
    assert ran.stdout.split()[4] == theirs.stdout.split()[4] == str(certs.server.port).encode()
    assert ran.stderr == b""  # the switch of transport is said under -v only
    assert certs.nothing_left(with_cert)

    status = ours("run", "--shell", "--", "echo out; echo err >&2; exit 7")
    assert (status.returncode, status.stdout, status.stderr) == (7, b"out\n", b"err\n")

    note = tmp_path / "note.txt"
    note.write_text("hello over a certificate\n")
    shown = ours("cat", str(note))
    assert shown.returncode == 0 and shown.stdout == b"hello over a certificate\n", shown.stderr
    found = ours("glob", str(tmp_path / "no*.txt"))  # an agent check, in the remote executor
    assert found.returncode == 0 and found.stdout.decode().split() == [str(note)], found.stderr

    draft = write_eagle3_checkpoint(tmp_path / "draft", draft_vocab=320, target_vocab=1024)
    out = tmp_path / "pulled.safetensors"
    pulled = ours("tensors pull", "--json", str(draft), "d2t", "t2d", "-o", str(out))
    assert pulled.returncode == 0, pulled.stderr
    original = load_file(str(next(draft.glob("*.safetensors"))))
    got = load_file(str(out))
    np.testing.assert_array_equal(got["d2t"], original["d2t"])
    np.testing.assert_array_equal(got["t2d"], original["t2d"])
    assert json.loads(pulled.stdout)["tensor_bytes"] == 320 * 8 + 1024

    verbose = cli("-v", "run", "-H", "certbox", "--ssh-config", str(with_cert), "--", "true",
                  env=ENV)  # fmt: skip
    assert verbose.returncode == 0
    assert b"through the system ssh client (ssh_config sets certificatefile" in verbose.stderr

    # paramiko cannot present a certificate from CertificateFile: asked for, it says so in one
    # line (exit 2) instead of failing to authenticate
    forced = ours("run", "--transport", "paramiko", "--", "true")
    assert forced.returncode == 2 and len(forced.stderr.splitlines()) == 1
    assert b"certificatefile" in forced.stderr and b"--transport ssh" in forced.stderr
    assert wait_for(lambda: certs.nothing_left(with_cert), timeout=10)


def test_remote_command_in_the_alias_is_replaced_by_ours(cli, certs):
    config = certs.config("remotecommand.conf", "RemoteCommand echo hijacked")
    plain = ssh(config, "certbox", "echo", "ours")
    # ssh.c refuses both; `-o RemoteCommand=none` is how ssh itself runs a command line then
    assert plain.returncode == 255 and b"Cannot execute command-line and remote command" in (
        plain.stderr
    )
    theirs = ssh(config, "-o", "RemoteCommand=none", "certbox", "echo", "ours")
    assert theirs.returncode == 0 and theirs.stdout == b"ours\n"
    for words in (["run", "--", "echo", "ours"], ["run", "--shell", "--", "echo ours"]):
        result = cli(words[0], "-H", "certbox", "--ssh-config", str(config), *words[1:], env=ENV)
        assert result.returncode == 0 and result.stdout == theirs.stdout, result.stderr
    listed = cli("glob", "-H", "certbox", "--ssh-config", str(config), "/etc/host*", env=ENV)
    assert listed.returncode == 0 and "/etc/hostname" in listed.stdout.decode().split()
    assert wait_for(lambda: certs.nothing_left(config), timeout=10)

    # settings under which ssh would run no command, or not on our stdin, or in the background
    # (ssh -N, -n, -f): passed as their defaults, so the executor still gets its stream
    odd = ["SessionType none", "StdinNull yes", "ForkAfterAuthentication yes"]
    config = certs.config("nocommand.conf", "RemoteCommand echo hijacked", *odd)
    effective = ssh(config, "-G", "certbox").stdout.decode().splitlines()
    assert {"sessiontype none", "stdinnull yes", "forkafterauthentication yes"} <= set(effective)
    for words in (["run", "--", "echo", "ours"], ["cat", str(config)]):
        result = cli(words[0], "-H", "certbox", "--ssh-config", str(config), *words[1:], env=ENV)
        assert result.returncode == 0, result.stderr
        assert result.stdout == (b"ours\n" if words[0] == "run" else config.read_bytes())
    assert wait_for(lambda: certs.nothing_left(config), timeout=10)


def test_proxy_command_and_proxy_jump_over_the_system_client(cli, certs, tmp_path):
    record = tmp_path / "proxy-calls"
    proxy = tmp_path / "proxy.sh"
    jump_config = certs.config("for-proxy.conf")
    proxy.write_text(
        f'#!/bin/sh\necho "$@" >> {record}\n'
        f'exec ssh -F {jump_config} -o BatchMode=yes -W "$1:$2" jumpbox\n'
    )
    proxy.chmod(0o755)
    by_command = certs.config("proxycommand.conf", f"ProxyCommand {proxy} %h %p")
    by_jump = certs.config("proxyjump.conf", "ProxyJump jumpbox")
    for config in (by_command, by_jump):
        theirs = ssh(config, "certbox", "echo", "$SSH_CONNECTION")
        assert theirs.returncode == 0, theirs.stderr
        ran = cli("run", "-H", "certbox", "--ssh-config", str(config), "--shell", "--",
                  "echo $SSH_CONNECTION", env=ENV)  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.split()[2:] == theirs.stdout.split()[2:]
        checked = cli("glob", "-H", "certbox", "--ssh-config", str(config), str(proxy), env=ENV)
        assert checked.returncode == 0 and checked.stdout.decode().split() == [str(proxy)]
        assert wait_for(lambda config=config: certs.nothing_left(config), timeout=10)
    # ssh's run, our run and our glob each went through the ProxyCommand, %h %p expanded
    assert record.read_text().splitlines() == [f"127.0.0.1 {certs.server.port}"] * 3


def test_a_refused_key_reads_the_same_on_both_transports(cli, certs, tmp_path):
    stranger = keygen(tmp_path / "stranger")
    config = certs.config("refused.conf", cert=False)
    config.write_text(config.read_text().replace(f"IdentityFile {certs.key}\n",
                                                 f"IdentityFile {stranger}\n", 1))  # fmt: skip
    theirs = ssh(config, "certbox", "true")
    assert theirs.returncode == 255 and b"Permission denied (publickey)" in theirs.stderr
    lines = {}
    for transport in ("ssh", "paramiko"):
        for words, code in ((["run", "--", "true"], 255), (["glob", "/etc/hostname"], 3)):
            result = cli(words[0], "-H", "certbox", "--ssh-config", str(config),
                         "--transport", transport, *words[1:], env=ENV)  # fmt: skip
            assert result.returncode == code, (transport, result.stderr)
            message = result.stderr.decode().strip()
            assert len(message.splitlines()) == 1, message
            lines[transport, words[0]] = message
    for command in ("run", "glob"):
        ours = lines["ssh", command]
        assert "Permission denied (publickey)" in ours  # in ssh's own words
        head = f"remotedbg: certbox ({certs.server.user}@127.0.0.1:{certs.server.port}): "
        assert ours.startswith(head + "authentication failed: ")
        assert lines["paramiko", command].startswith(head + "authentication failed: ")
    assert wait_for(lambda: certs.nothing_left(config), timeout=10)


def test_a_timeout_stops_the_command_and_a_session_leaves_nothing(certs, tmp_path):
    """The executor's watchdog: the command's group is stopped at the deadline, and closing the
    session (its ssh's stdin) ends the executor on the box."""
    from remotedbg.errors import RemoteTimeout
    from remotedbg.session import ConnectOptions, open_session

    config = certs.config("timeout.conf")
    options = ConnectOptions(host="certbox", ssh_config=str(config), timeout=30)
    session = open_session(options)
    assert type(session).__name__ == "SystemSSHSession"
    assert session.run(["echo", "one"]).stdout == "one\n"
    executor = session.executor()
    assert executor is not None and os.path.exists(f"/proc/{executor.pid}")
    with pytest.raises(RemoteTimeout):
        session.run(["sleep", "36.25"], timeout=1)
    assert wait_for(lambda: not pids_with_argv("sleep", "36.25"))
    assert session.run(["echo", "two"]).stdout == "two\n"
    session.close()
    assert wait_for(lambda: not os.path.exists(f"/proc/{executor.pid}"))
    assert wait_for(lambda: certs.nothing_left(config), timeout=10)


def test_transport_choice_is_pure(certs):
    from remotedbg.errors import UsageError
    from remotedbg.session.ssh_command import choose_transport, ssh_argv
    from remotedbg.session.target import ConnectOptions, openssh_key_type, resolve

    config = certs.config("pure.conf", "RemoteCommand echo x")
    options = ConnectOptions(host="certbox", ssh_config=str(config), connect_timeout=2.5,
                             accept_new_host_key=True)  # fmt: skip
    target = resolve(options)
    assert target.needs_system_ssh == ["remotecommand echo x", f"certificatefile {certs.cert}"]
    plain = resolve(ConnectOptions(host="jumpbox", ssh_config=str(config)))
    assert not plain.needs_system_ssh
    assert choose_transport("auto", [target], "/usr/bin/ssh") == "ssh"
    assert choose_transport("auto", [plain], "/usr/bin/ssh") == "paramiko"
    assert choose_transport("auto", [plain, target], "/usr/bin/ssh") == "ssh"  # a jump host
    assert choose_transport("ssh", [plain], "/usr/bin/ssh") == "ssh"
    assert choose_transport("paramiko", [target], "/usr/bin/ssh") == "paramiko"
    for bad in (("ssh", None), ("scp", "/usr/bin/ssh")):
        with pytest.raises(UsageError):
            choose_transport(bad[0], [plain], bad[1])
    argv = ssh_argv("ssh", target, options, "echo hi")
    assert argv[:4] == ["ssh", "-T", "-F", str(config)]
    assert argv[-3:] == ["--", "certbox", "echo hi"]
    for setting in ("BatchMode=yes", "RemoteCommand=none", "ConnectTimeout=3",
                    "StrictHostKeyChecking=accept-new"):  # fmt: skip
        assert setting in argv
    # the key type an OpenSSH private key file names (what tells a FIDO key from others)
    assert openssh_key_type(certs.key.read_bytes()) == "ssh-ed25519"


def test_a_fido_identity_goes_through_the_system_client(certs, tmp_path):
    """An `sk-ssh-ed25519@openssh.com` key (PROTOCOL.u2f: type, 32-byte key, application),
    which ssh-keygen reads as one; paramiko has no FIDO support, so auto picks ssh."""
    import base64
    import struct

    from remotedbg.session.ssh_command import choose_transport
    from remotedbg.session.target import ConnectOptions, resolve

    def string(data: bytes) -> bytes:
        return struct.pack("!I", len(data)) + data

    kind = b"sk-ssh-ed25519@openssh.com"
    blob = string(kind) + string(os.urandom(32)) + string(b"ssh:")
    key = tmp_path / "id_ed25519_sk"
    key.write_text("not read: the .pub says what it is\n")
    key.with_suffix(".pub").write_text(f"{kind.decode()} {base64.b64encode(blob).decode()} t\n")
    listed = subprocess.run(["ssh-keygen", "-l", "-f", str(key.with_suffix(".pub"))],
                            capture_output=True, text=True)  # fmt: skip
    assert listed.returncode == 0 and "ED25519-SK" in listed.stdout, listed.stderr
    config = certs.config("fido.conf", f"IdentityFile {key}", cert=False)
    target = resolve(ConnectOptions(host="certbox", ssh_config=str(config)))
    assert target.needs_system_ssh == [f"identityfile {key} (a FIDO security key)"]
    assert choose_transport("auto", [target], "/usr/bin/ssh") == "ssh"


def test_transport_from_the_config_file_and_a_flag_that_beats_it(cli, tmp_path):
    """`transport = "ssh"` sends even a host paramiko can reach through the system client (said
    under -v); the flag beats the file, the variable too."""
    settings = tmp_path / "config.toml"
    settings.write_text('transport = "ssh"\n')
    env = {"REMOTEDBG_CONFIG": str(settings)}
    chosen = cli("-v", "run", "-H", "testbox", "--", "echo", "ok", env=env)
    assert chosen.returncode == 0 and chosen.stdout == b"ok\n", chosen.stderr
    assert b"through the system ssh client (--transport ssh)" in chosen.stderr
    for extra, flags in (({}, ["--transport", "paramiko"]),
                         ({"REMOTEDBG_TRANSPORT": "paramiko"}, [])):  # fmt: skip
        other = cli("-v", "run", "-H", "testbox", *flags, "--", "echo", "ok", env={**env, **extra})
        assert other.returncode == 0 and b"system ssh client" not in other.stderr
    settings.write_text("transport = 3\n")
    bad = cli("run", "-H", "testbox", "--", "true", env=env)
    assert bad.returncode == 2 and b"transport must be a str" in bad.stderr


def test_a_persistent_session_holds_the_ssh_process(cli, certs, tmp_path):
    """The daemon keeps the executor's ssh: the second command is served by the same remote
    executor (the parent of its shell); `sessions --stop` ends it, and nothing is left."""
    import signal

    config = certs.config("persist.conf")
    runtime = tmp_path / "run"
    env = {**ENV, "REMOTEDBG_PERSIST": "600", "REMOTEDBG_RUNTIME_DIR": str(runtime)}
    words = ["run", "-H", "certbox", "--ssh-config", str(config), "--shell", "--", "echo $PPID"]
    try:
        first, second = cli(*words, env=env), cli(*words, env=env)
        assert first.returncode == second.returncode == 0, first.stderr + second.stderr
        assert first.stdout == second.stdout and first.stdout.strip().isdigit()
        executor = int(first.stdout)
        assert os.path.exists(f"/proc/{executor}")
        stopped = cli("sessions", "--stop", env=env)
        assert stopped.returncode == 0, stopped.stderr
        assert wait_for(lambda: not os.path.exists(f"/proc/{executor}"), timeout=10)
        assert wait_for(lambda: certs.nothing_left(config), timeout=10)
    finally:
        for pid, line in processes_naming(str(runtime)).items():
            if "remotedbg.persist.daemon" in line:
                os.kill(pid, signal.SIGKILL)


def test_run_t_is_ssh_tt_sized_keys_resizes_and_exit(certs, isolated_state):
    """`run -t` over the system client: `ssh -tt` sizes the remote terminal like ours, follows a
    resize, passes keys, and returns the program's status (tests/test_tty.py's program)."""
    import time

    from tests.test_tty import PROGRAM, Terminal, _set_size

    config = certs.config("tty.conf")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "REMOTEDBG_SSH_CONFIG": str(config),
        "XDG_STATE_HOME": str(isolated_state),
        "TERM": "xterm",
        "REMOTEDBG_CONFIG": str(isolated_state / "no-config.toml"),
        "REMOTEDBG_PERSIST": "0",
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    }
    term = Terminal(["run", "-t", "-H", "certbox", "--", "python3", "-c", PROGRAM], env,
                    columns=103, lines=29)  # fmt: skip
    term.wait_for(b"resize? ")
    assert b"size (103, 29) tty True" in term.seen
    _set_size(term.fd, 71, 17)
    time.sleep(0.3)
    term.type(b"\r")
    term.wait_for(b"name? ")
    assert b"size (71, 17)" in term.seen
    term.type(b"hello\r")
    term.wait_for(b"got hello")
    assert term.exit_status() == 7
    assert wait_for(lambda: certs.nothing_left(config), timeout=10)


def test_ctrl_c_stops_the_remote_command(certs, isolated_state):
    """Ctrl-C reaches remotedbg, not its ssh (a session of its own): the remote command's group
    is stopped, as over paramiko, and remotedbg exits 130."""
    import signal
    import sys

    config = certs.config("interrupt.conf")
    env = dict(os.environ, **ENV, REMOTEDBG_PERSIST="0", XDG_STATE_HOME=str(isolated_state))
    for words in (["run", "--", "sleep", "37.25"], ["run", "--shell", "--", "sleep 37.5; true"]):
        process = subprocess.Popen(
            [sys.executable, "-m", "remotedbg", words[0], "-H", "certbox", "--ssh-config",
             str(config), *words[1:]],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        sleeping = ("sleep", words[-1].split(";")[0].split()[-1])
        try:
            # a loaded runner can take long to start Python and ssh; remotedbg ending first is
            # the failure to report, with its stderr
            started = wait_for(lambda s=sleeping, p=process: pids_with_argv(*s) or p.poll() is not
                               None, timeout=90)  # fmt: skip
            assert started and process.poll() is None, process.communicate(timeout=30)
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == 130, err
        assert wait_for(lambda s=sleeping: not pids_with_argv(*s))
    assert wait_for(lambda: certs.nothing_left(config), timeout=10)


def test_host_keys_and_connect_failures_read_as_over_paramiko(cli, certs, tmp_path):
    """ssh's own host-key checking, its failures in the one-line errors paramiko's give: an
    unknown host refused (then recorded with --accept-new-host-key), a changed key refused
    naming the file:line, a closed port and a typo of an alias; ssh's outcome beside each."""
    known = tmp_path / "known_hosts"
    config = certs.config("hostkeys.conf")
    config.write_text(config.read_text().replace(str(certs.known), str(known)))

    def ours(*extra: str, host: str = "certbox") -> subprocess.CompletedProcess:
        return cli("glob", "-H", host, "--ssh-config", str(config), *extra, "/etc/hostname",
                   env=ENV)  # fmt: skip

    theirs = ssh(config, "certbox", "true")
    assert theirs.returncode == 255 and b"Host key verification failed" in theirs.stderr
    unknown = ours()
    assert unknown.returncode == 3 and len(unknown.stderr.splitlines()) == 1
    assert b"unknown host key ED25519" in unknown.stderr
    assert b"--accept-new-host-key" in unknown.stderr and not known.exists()
    recorded = ours("--accept-new-host-key")
    assert recorded.returncode == 0 and recorded.stdout == b"/etc/hostname\n", recorded.stderr
    assert known.read_text().split()[1:] == certs.server.host_key_line.split()[1:]
    assert ssh(config, "certbox", "true").returncode == 0  # what we recorded, ssh accepts

    other = keygen(tmp_path / "other_host_key").with_suffix(".pub").read_text().split()
    known.write_text(f"# a comment\n[127.0.0.1]:{certs.server.port} {other[0]} {other[1]}\n")
    theirs = ssh(config, "certbox", "true")
    assert b"REMOTE HOST IDENTIFICATION HAS CHANGED" in theirs.stderr
    for extra in ((), ("--accept-new-host-key",)):
        changed = ours(*extra)
        assert changed.returncode == 3 and len(changed.stderr.splitlines()) == 1
        assert b"HOST KEY CHANGED" in changed.stderr and f"{known}:2".encode() in changed.stderr

    port = free_port()  # nothing listens there
    closed = ours("--port", str(port))
    assert closed.returncode == 3 and closed.stderr == (
        f"remotedbg: certbox ({certs.server.user}@127.0.0.1:{port}): cannot connect: "
        "Connection refused\n"
    ).encode()
    typo = ours("--transport", "ssh", host="certbxo")
    assert typo.returncode == 3 and typo.stderr.endswith(b"; did you mean certbox?\n")
    assert b"cannot resolve host name 'certbxo'" in typo.stderr


def test_get_of_a_large_file_needs_no_second_ssh(cli, certs, tmp_path):
    """A large file's bytes come through the executor's ssh process, sent raw by its reading
    child: no second ssh process and login for them (there was one per file, running `dd`);
    the copy is byte-exact, as `scp` would make it."""
    source = tmp_path / "box" / "big.bin"
    source.parent.mkdir()
    source.write_bytes(os.urandom(17 << 20) + b"end")
    config = certs.config("get.conf")
    here = tmp_path / "here"
    here.mkdir()
    # an `ssh` first on PATH that notes each command line it runs, then is the real one
    wrapper, calls = tmp_path / "bin" / "ssh", tmp_path / "ssh-calls"
    wrapper.parent.mkdir()
    real = subprocess.run(["sh", "-c", "command -v ssh"], capture_output=True, text=True)
    note = f'printf "%s\\n" "$*" >> {calls}'
    wrapper.write_text(f'#!/bin/sh\n{note}\nexec {real.stdout.strip()} "$@"\n')
    wrapper.chmod(0o755)
    path = f"{wrapper.parent}:{os.environ['PATH']}"
    got = cli("get", "-H", "certbox", "--ssh-config", str(config), str(source), str(here) + "/",
              env={**ENV, "PATH": path})  # fmt: skip
    assert got.returncode == 0, got.stderr
    ran = [line for line in calls.read_text().splitlines() if line.startswith("-T ")]
    assert len(ran) == 1 and "RDBG-AGENT" in ran[0]  # the executor's, and no other
    assert (here / "big.bin").read_bytes() == source.read_bytes()
    assert wait_for(lambda: certs.nothing_left(config), timeout=10)


def test_local_command_runs_here_as_ssh_runs_it(cli, certs, tmp_path):
    """`PermitLocalCommand yes` with `LocalCommand`: ssh runs it on this machine after the login,
    its %-tokens expanded (issue 46, item 8); remotedbg reaches such a host through the system
    ssh client, so it runs as ssh runs it, once a connection; without PermitLocalCommand it does
    not run. A plain host with it is taken from paramiko (the pure choice below)."""
    from remotedbg.session.target import ConnectOptions, resolve

    marks = tmp_path / "marks"
    marks.mkdir()
    line = f"LocalCommand touch {marks}/ssh-%h-%p-%r-%n"
    config = certs.config("local.conf", "PermitLocalCommand yes", line)
    assert ssh(config, "certbox", "true").returncode == 0
    expected = f"ssh-127.0.0.1-{certs.server.port}-{certs.server.user}-certbox"
    assert [p.name for p in marks.iterdir()] == [expected]  # what ssh itself does
    (marks / expected).unlink()
    result = cli("run", "-H", "certbox", "--ssh-config", str(config), "--", "echo", "ours", env=ENV)
    assert (result.returncode, result.stdout) == (0, b"ours\n"), result.stderr
    assert [p.name for p in marks.iterdir()] == [expected]
    (marks / expected).unlink()
    off = certs.config("local-off.conf", line)  # PermitLocalCommand no: ssh's default
    assert cli("run", "-H", "certbox", "--ssh-config", str(off), "--", "true",
               env=ENV).returncode == 0  # fmt: skip
    assert list(marks.iterdir()) == []
    plain = certs.config("local-plain.conf", cert=False)
    plain.write_text(plain.read_text().replace(
        "Host jumpbox", f"  PermitLocalCommand yes\n  {line}\n\nHost jumpbox", 1))  # fmt: skip
    target = resolve(ConnectOptions(host="certbox", ssh_config=str(plain)))
    assert target.needs_system_ssh == [f"localcommand touch {marks}/ssh-%h-%p-%r-%n"]
    assert wait_for(lambda: certs.nothing_left(config), timeout=10)
