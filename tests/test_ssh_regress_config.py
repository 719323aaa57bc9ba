"""OpenSSH's own regress cases for the config (openssh-portable regress/envpass.sh, percent.sh,
and ssh's first-obtained-value rule for -l), typed as `ssh` and as `remotedbg run` against the
same sshd: the same outcome on both transports and through a persistent session."""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess

import pytest

from tests.sshd import make_sshd, write_client_config

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")

# envpass.sh's server side: sshd accepts _XXX_TEST and _XXX_TEST_* only
ACCEPT_ENV = "AcceptEnv _XXX_TEST _XXX_TEST_*"
SHOW = 'echo "${_TEST_ENV-unset}:${_XXX_TEST-unset}:${_XXX_TEST_A-unset}:${_XXX_TEST_B-unset}"'

# (alias, its ssh_config lines, the local environment, what the remote command sees), as
# envpass.sh has them (its -o options written in the config: remotedbg takes no -o)
ENVPASS = [
    ("pass-noaccept", ["SendEnv *"], {"_TEST_ENV": "blah"}, "unset:unset:unset:unset"),
    ("pass-multiple", ["SendEnv _XXX_TEST_*"], {"_XXX_TEST_A": "1", "_XXX_TEST_B": "2"},
     "unset:unset:1:2"),
    ("pass-unset", ["SendEnv _XXX_TEST"], {}, "unset:unset:unset:unset"),
    ("setenv-accept", ["SetEnv _XXX_TEST=blah"], {}, "unset:blah:unset:unset"),
    ("setenv-first", ["SetEnv _XXX_TEST=blah _XXX_TEST=boo", "SetEnv _XXX_TEST=foo"], {},
     "unset:blah:unset:unset"),
    ("setenv-over-sendenv", ["SendEnv *", "SetEnv _XXX_TEST=blah"], {"_XXX_TEST": "boo"},
     "unset:blah:unset:unset"),
]  # fmt: skip


@pytest.fixture(scope="module")
def regress(ssh_world, tmp_path_factory):
    """An sshd configured as envpass.sh's, an ssh_config with an alias per case."""
    root = tmp_path_factory.mktemp("regress")
    server = make_sshd(root / "sshd", ssh_world.user_key, extra_config=(ACCEPT_ENV,))
    aliases = {alias: server for alias, *_ in ENVPASS}
    extra = {alias: lines for alias, lines, *_ in ENVPASS}
    config = write_client_config(root / "ssh_config", aliases, root / "known_hosts", extra)
    try:
        yield server, config
    finally:
        server.stop()


def _clean_env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("_XXX_TEST", "_TEST_ENV"))}
    return {**env, **values}


def _ssh(config, *words: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["ssh", "-F", str(config), *words], capture_output=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=30)  # fmt: skip


def test_envpass_as_ssh(cli, regress):
    """envpass.sh's cases, each through `ssh` and `remotedbg run` (paramiko; the system client
    passed them already): what reaches the remote command is what envpass.sh expects."""
    _, config = regress
    for alias, _, local, expected in ENVPASS:
        env = _clean_env(**local)
        ssh = _ssh(config, alias, SHOW, env=env)
        assert ssh.stdout.decode().strip() == expected, (alias, ssh.stderr)
        ours = cli("run", "-H", alias, "--ssh-config", str(config), "--transport", "paramiko",
                   "--shell", "--", SHOW, env=env)  # fmt: skip
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout.decode().strip() == expected, alias


@pytest.mark.parametrize("transport", ["paramiko", "ssh"])
def test_a_persistent_session_sends_each_commands_own_environment(
    persistent, regress, transport
):
    """The daemon keeps the connection, not the first command's environment: each command
    sees the values it was typed with, an unset one is unset, a name new to the session
    passes too (envpass.sh's cases, one after another through one session)."""
    _, config = regress
    run_words = ("run", "-H", "pass-multiple", "--ssh-config", str(config),
                 "--transport", transport, "--shell", "--", SHOW)  # fmt: skip
    seen = []
    for local in ({"_XXX_TEST_A": "one"}, {"_XXX_TEST_A": "two"}, {},
                  {"_XXX_TEST_A": "3", "_XXX_TEST_B": "new"}):  # fmt: skip
        env = _clean_env(**dict(persistent.env, **local))
        result = subprocess.run([*_cli_argv(), *run_words], capture_output=True, env=env,
                                stdin=subprocess.DEVNULL, timeout=60)  # fmt: skip
        assert result.returncode == 0, result.stderr
        seen.append(result.stdout.decode().strip())
    assert seen == ["unset:unset:one:unset", "unset:unset:two:unset",
                    "unset:unset:unset:unset", "unset:unset:3:new"]  # fmt: skip
    from tests.procs import persist_daemons

    assert persist_daemons(persistent.runtime)  # all four went through one daemon


def _cli_argv() -> list[str]:
    import sys

    return [sys.executable, "-m", "remotedbg"]


def test_percent_tokens_in_identity_file(cli, regress, ssh_world, tmp_path):
    """percent.sh: IdentityFile with %r/%n (and %h, %p, %u, %d, %%, ${VAR}) names the key
    ssh uses; remotedbg finds the same file on both transports."""
    server, _ = regress
    user = server.user
    keys = tmp_path / "keys"
    (keys / user).mkdir(parents=True)
    shutil.copy(ssh_world.user_key, keys / user / "pct.key")
    by_host = keys / "127.0.0.1" / str(server.port)
    by_host.mkdir(parents=True)
    shutil.copy(ssh_world.user_key, by_host / f"{getpass.getuser()}%.key")
    from_home = os.path.relpath(keys, os.path.expanduser("~"))
    known = tmp_path / "known_hosts"
    config = write_client_config(tmp_path / "config", {"pct": server, "pct2": server}, known)
    text = config.read_text().replace(f"  IdentityFile {ssh_world.user_key}\n", "")
    text = text.replace("Host pct\n", "Host pct\n  IdentityFile ${RDBG_KEYS}/%r/%n.key\n")
    text = text.replace("Host pct2\n", f"Host pct2\n  IdentityFile %d/{from_home}/%h/%p/%u%%.key\n")
    config.write_text(text + "IdentitiesOnly yes\n")
    env = _clean_env(RDBG_KEYS=str(keys))
    for alias in ("pct", "pct2"):
        ssh = _ssh(config, alias, "echo", "in", env=env)
        assert ssh.returncode == 0 and ssh.stdout == b"in\n", ssh.stderr
        for transport in ("paramiko", "ssh"):
            ours = cli("run", "-H", alias, "--ssh-config", str(config), "--transport",
                       transport, "--", "echo", "in", env=env)  # fmt: skip
            assert ours.returncode == 0 and ours.stdout == b"in\n", (alias, transport, ours)


def test_user_at_host_before_l_wins_as_in_ssh(cli, regress):
    """`ssh user@host -l other` logs in as `user` (the first value obtained); `ssh -l other
    user@host` as `other`."""
    server, config = regress
    spec = f"{server.user}@pass-unset"
    ssh = _ssh(config, spec, "-l", "nosuchuser-rdbg", "id", "-un", env=_clean_env())
    assert ssh.returncode == 0 and ssh.stdout.decode().strip() == server.user
    for transport in ("paramiko", "ssh"):
        ours = cli("run", "-H", spec, "-l", "nosuchuser-rdbg", "--ssh-config", str(config),
                   "--transport", transport, "--", "id", "-un")  # fmt: skip
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout.decode().strip() == server.user
    ssh = _ssh(config, "-l", "nosuchuser-rdbg", spec, "true", env=_clean_env())
    assert ssh.returncode == 255
    ours = cli("run", "-l", "nosuchuser-rdbg", "-H", spec, "--ssh-config", str(config),
               "--", "true")  # fmt: skip
    assert ours.returncode == 255 and b"nosuchuser-rdbg" in ours.stderr


def test_tokens_expand_as_ssh_expands_them(tmp_path):
    """Our %-tokens against ssh's own: `ssh -G` expands ControlPath (not IdentityFile), so the
    same token string through both must read the same, for an alias with HostKeyAlias and
    for -l/-p given on the command line."""
    from remotedbg.session.target import ConnectOptions, connection_tokens, expand_path, resolve

    tokens = "%C,%d,%h,%i,%k,%L,%l,%n,%p,%r,%u,%%"
    config = tmp_path / "config"
    config.write_text(
        f"Host tokbox\n  HostName 127.0.0.2\n  User alice\n  Port 2222\n  HostKeyAlias keyname\n"
        f"  ControlPath /tmp/{tokens}\n  IdentityFile /tmp/{tokens}\n"
    )
    for user, port in ((None, None), ("bob", 2200)):
        argv = ["ssh", "-G", "-F", str(config)] + (["-l", user, "-p", str(port)] if user else [])
        shown = subprocess.run([*argv, "tokbox"], capture_output=True, text=True, check=True)
        controlpath = next(line.split(" ", 1)[1] for line in shown.stdout.splitlines()
                           if line.startswith("controlpath "))  # fmt: skip
        target = resolve(ConnectOptions(host="tokbox", ssh_config=str(config), user=user,
                                         port=port))  # fmt: skip
        ours = connection_tokens(target.hostname, target.port, target.user, "tokbox",
                                 target.host_key_alias, None)  # fmt: skip
        assert expand_path(f"/tmp/{tokens}", ours) == controlpath
        assert target.missing_identity_files == [controlpath]  # IdentityFile read the same way
