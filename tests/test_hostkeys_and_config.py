"""Host keys as OpenSSH checks them, ProxyJump and Include, through the CLI."""

from __future__ import annotations

import os

import pytest

from tests.sshd import write_client_config


@pytest.fixture
def fresh_config(ssh_world, tmp_path):
    """The test box under an alias whose known_hosts file does not know it yet."""
    known = tmp_path / "known_hosts"
    config = tmp_path / "config"
    config.write_text(
        f"Host fresh\n  HostName 127.0.0.1\n  Port {ssh_world.box.server.port}\n"
        f"  IdentityFile {ssh_world.user_key}\n  UserKnownHostsFile {known}\n"
    )
    return config, known


def test_unknown_host_is_refused_then_accepted_on_request(cli, fresh_config):
    config, known = fresh_config
    refused = cli("run", "-H", "fresh", "--ssh-config", str(config), "--", "true")
    assert refused.returncode == 255  # run is ssh: its own failures are 255
    message = refused.stderr.decode()
    assert "unknown host key" in message and "--accept-new-host-key" in message
    assert "SHA256:" in message and not known.exists()

    accepted = cli(
        "run",
        "-H",
        "fresh",
        "--ssh-config",
        str(config),
        "--accept-new-host-key",
        "--",
        "echo",
        "in",
    )
    assert accepted.returncode == 0 and accepted.stdout == b"in\n"
    assert known.read_text().count("\n") == 1

    again = cli("run", "-H", "fresh", "--ssh-config", str(config), "--", "echo", "again")
    assert again.returncode == 0


def test_changed_host_key_is_always_refused_naming_the_line(cli, fresh_config, ssh_world, tmp_path):
    config, known = fresh_config
    other = (ssh_world.root / "nosftp" / "host_key.pub").read_text().split()
    port = ssh_world.box.server.port
    known.write_text(f"# comment\n[127.0.0.1]:{port} {other[0]} {other[1]}\n")
    for extra in ([], ["--accept-new-host-key"]):
        result = cli("run", "-H", "fresh", "--ssh-config", str(config), *extra, "--", "true")
        assert result.returncode == 255
        message = result.stderr.decode()
        assert "HOST KEY CHANGED" in message and f"{known}:2" in message
        assert len(message.strip().splitlines()) == 1


def test_proxyjump_through_a_second_sshd(cli, ssh_world, tmp_path):
    known = tmp_path / "known_hosts"
    config = write_client_config(
        tmp_path / "config",
        {"jumphost": ssh_world.box.server, "inner": ssh_world.nosftp.server},
        known,
        extra={"inner": ["ProxyJump jumphost"]},
    )
    result = cli("run", "-H", "inner", "--ssh-config", str(config), "--", "echo", "$SSH_CONNECTION")
    assert result.returncode == 0, result.stderr
    jump = cli(
        "run", "-H", "inner", "--ssh-config", str(config), "--shell", "--", "echo $SSH_CONNECTION"
    )
    # the inner sshd sees a connection arriving from the jump host's forwarding, on its own port
    assert jump.stdout.decode().split()[3] == str(ssh_world.nosftp.server.port)


def test_include_in_ssh_config_is_honoured(cli, ssh_world, tmp_path):
    known = tmp_path / "known_hosts"
    included = write_client_config(
        tmp_path / "included.conf", {"viainclude": ssh_world.box.server}, known
    )
    main = tmp_path / "config"
    main.write_text(f"Include {included}\n")
    result = cli("run", "-H", "viainclude", "--ssh-config", str(main), "--", "echo", "ok")
    assert result.returncode == 0 and result.stdout == b"ok\n"


def test_user_host_port_form_with_identity(cli, ssh_world, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text(ssh_world.box.server.host_key_line)
    config = tmp_path / "config"
    config.write_text(f"Host *\n  UserKnownHostsFile {known}\n")
    spec = f"{ssh_world.box.server.user}@127.0.0.1:{ssh_world.box.server.port}"
    for form in (spec, f"ssh://{spec}"):  # ssh's URI form too
        result = cli("run", "-H", form, "--ssh-config", str(config),
                     "-i", str(ssh_world.user_key), "--", "echo", "direct")  # fmt: skip
        assert result.returncode == 0 and result.stdout == b"direct\n", result.stderr


def test_wrong_key_is_an_auth_failure(cli, ssh_world, tmp_path):
    from tests.sshd import keygen

    stranger = keygen(tmp_path / "stranger")
    known = tmp_path / "known_hosts"
    known.write_text(ssh_world.box.server.host_key_line)
    config = tmp_path / "config"
    config.write_text(
        f"Host *\n  UserKnownHostsFile {known}\n  IdentitiesOnly yes\n  IdentityFile {stranger}\n"
    )
    spec = f"127.0.0.1:{ssh_world.box.server.port}"
    result = cli(
        "run",
        "-H",
        spec,
        "--ssh-config",
        str(config),
        "--",
        "true",
        env={"SSH_AUTH_SOCK": "", "HOME": str(tmp_path)},
    )
    assert result.returncode == 255
    assert b"authentication failed" in result.stderr


@pytest.mark.parametrize("identities_only", ["yes", "no"])
def test_only_the_identities_the_config_names_are_offered(
    cli, ssh_world, tmp_path, identities_only
):
    """The key that would let us in sits in ~/.ssh/id_ed25519, the alias names another: ssh
    offers only what the config names (its defaults are used only when it names none), so it is
    refused, with IdentitiesOnly or without; remotedbg must be too."""
    import shutil
    import subprocess

    from tests.sshd import keygen

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(ssh_world.user_key, home / ".ssh" / "id_ed25519")
    (home / ".ssh" / "id_ed25519").chmod(0o600)
    wrong = keygen(tmp_path / "wrong_key")
    known = tmp_path / "known_hosts"
    known.write_text(ssh_world.box.server.host_key_line)
    config = tmp_path / "config"
    config.write_text(
        f"Host strict\n  HostName 127.0.0.1\n  Port {ssh_world.box.server.port}\n"
        f"  User {ssh_world.box.server.user}\n  UserKnownHostsFile {known}\n"
        f"  IdentityFile {wrong}\n  IdentitiesOnly {identities_only}\n  BatchMode yes\n"
    )
    env = {"SSH_AUTH_SOCK": "", "HOME": str(home)}
    ssh = subprocess.run(["ssh", "-F", str(config), "strict", "true"], capture_output=True,
                         env=dict(os.environ, **env), timeout=30)  # fmt: skip
    assert ssh.returncode == 255 and b"Permission denied" in ssh.stderr  # OpenSSH's outcome
    result = cli("run", "-H", "strict", "--ssh-config", str(config), "--", "true", env=env)
    assert result.returncode == ssh.returncode == 255, result.stderr
    assert b"authentication failed" in result.stderr


def test_hash_known_hosts_records_the_new_key_hashed(cli, fresh_config, ssh_world):
    """HashKnownHosts yes: the recorded name is hashed as OpenSSH hashes it; ssh-keygen -F (and
    so ssh) finds it under the host's name."""
    import subprocess

    config, known = fresh_config
    config.write_text(config.read_text() + "  HashKnownHosts yes\n")
    accepted = cli("run", "-H", "fresh", "--ssh-config", str(config), "--accept-new-host-key",
                   "--", "true")  # fmt: skip
    assert accepted.returncode == 0, accepted.stderr
    line = known.read_text()
    assert line.startswith("|1|") and "127.0.0.1" not in line
    name = f"[127.0.0.1]:{ssh_world.box.server.port}"
    found = subprocess.run(["ssh-keygen", "-F", name, "-f", str(known)], capture_output=True)
    assert found.returncode == 0 and b"found" in found.stdout
    again = cli("run", "-H", "fresh", "--ssh-config", str(config), "--", "true")
    assert again.returncode == 0, again.stderr


def test_connection_failures_are_said_in_ssh_words(cli, tmp_path):
    """A closed port and a listener that never speaks: the words ssh itself prints (checked in
    the same test), within --connect-timeout."""
    import socket
    import subprocess
    import time

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now: refused
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    quiet = silent.getsockname()[1]
    try:
        for target, words in ((port, "Connection refused"),
                              (quiet, "Connection timed out during banner exchange")):  # fmt: skip
            ssh = subprocess.run(
                ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "ConnectTimeout=2",
                 "-p", str(target), "127.0.0.1", "true"],
                capture_output=True, timeout=30,
            )  # fmt: skip
            assert words.encode() in ssh.stderr, ssh.stderr  # OpenSSH's own words
            started = time.monotonic()
            ours = cli("glob", "-H", f"u@127.0.0.1:{target}", "--connect-timeout", "2", "/x")
            assert ours.returncode == 3
            assert words in ours.stderr.decode(), ours.stderr
            assert time.monotonic() - started < 10
    finally:
        silent.close()
