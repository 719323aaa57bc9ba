"""Every --help page names values by what they are (HOST, PATH, SECONDS, N), never by a Python
type such as <str> or <list[str]>, and loses no text to markup."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys

import pytest
import typer

from remotedbg.front.cli import app


def _command_paths(command, prefix=()):
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from _command_paths(sub, (*prefix, name))


ROOT = typer.main.get_command(app)
COMMANDS = list(_command_paths(ROOT))


def _command(words):
    command = ROOT
    for word in words:
        command = command.commands[word]
    return command


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w) or "remotedbg")
def test_help_names_values_not_python_types(words) -> None:
    page = subprocess.run(
        [sys.executable, "-m", "remotedbg", *words, "--help"],
        capture_output=True,
        text=True,
        env={
            "COLUMNS": "120",
            "PATH": "/usr/bin:/bin",
            "REMOTEDBG_CONFIG": "/nonexistent/config.toml",
            "TERM": "dumb",
        },
        timeout=60,
    )
    assert page.returncode == 0, page.stderr
    assert not re.findall(r"<(?:bool|str|int|float|list\[[a-z]+\]|[a-z]+ range)>", page.stdout)
    assert "...}..." not in page.stdout
    leaf = not getattr(_command(words), "commands", None)
    assert not leaf or "Example: remotedbg" in page.stdout, "a leaf command's help shows an example"


def _page(*words: str, columns: int = 200) -> str:
    page = subprocess.run(
        [sys.executable, "-m", "remotedbg", *words],
        capture_output=True,
        text=True,
        env={
            "COLUMNS": str(columns),
            "PATH": "/usr/bin:/bin",
            "REMOTEDBG_CONFIG": "/nonexistent/config.toml",
            "TERM": "dumb",
        },
        timeout=60,
    )
    assert page.returncode == 0, page.stderr
    return page.stdout


def test_connection_help_keeps_its_defaults_and_variables() -> None:
    """Every connection option, its value name, default and variable, on one page of its own;
    a command's page names the common four in one line that points there."""
    from remotedbg.front.cli.context import CONNECTION_PARAMETERS

    page = _page("help", "connection")
    assert "(default python3)" in page and "(default ~/.ssh/config)" in page
    assert re.search(
        r"--timeout SECONDS\s+Seconds per remote command.\s+120\s+REMOTEDBG_TIMEOUT", page
    )
    assert re.search(r"-H, --host HOST\s+ssh_config alias", page)
    assert re.search(r"-l, --user USER .*\n.*-p, --port PORT", page)
    for parameter in CONNECTION_PARAMETERS:
        flag = "--" + parameter.name.replace("_", "-").replace("as-json", "json")
        assert flag in page, flag
    glob = _page("glob", "--help")
    assert "Connection: -H HOST -i KEY -l USER -p PORT ... (every option and variable: " \
        "remotedbg help connection)" in glob  # fmt: skip
    assert "--ssh-config" not in glob and "--json" in glob  # --json is the command's output
    grep = _page("grep", "--help")  # grep's -l is grep's
    assert "Connection: -H HOST --identity KEY --user USER -p PORT ..." in grep


def test_help_is_short_with_examples_first_and_sentences_whole() -> None:
    root = _page("--help", columns=120)
    assert len(root.splitlines()) <= 55
    assert (
        root.index("Examples:") < root.index("remotedbg help connection") < root.index("Commands")
    )
    commands = [line for line in root[root.index("Commands") :].splitlines() if line[:1] == "│"]
    names = list(ROOT.commands)
    # one line per command, its first sentence (or the head of a long one), never wrapped
    assert [line.split()[1] for line in commands] == names, commands
    for words in COMMANDS:
        command = _command(words)
        page = _page(*words, "--help", columns=200)
        assert len(page.splitlines()) <= (55 if not words else 40), words
        paragraphs = inspect.cleandoc(command.help or "").split("\n\n")
        prose = [" ".join(p.split()) for p in paragraphs if not p.startswith("Example")]
        for paragraph in prose:  # each paragraph on one line of a 200-column terminal
            if len(paragraph) < 190:
                assert paragraph in page, (words, paragraph)
        examples = page.find("Example")
        assert examples == -1 or examples < page.find(prose[0][:40]), words


def _complete(words: str, env: dict[str, str]) -> list[str]:
    """What bash completion offers for the last word of `words` (typer's protocol: the
    script from --show-completion calls the program with these variables)."""
    done = subprocess.run(
        [sys.executable, "-m", "remotedbg"],
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "REMOTEDBG_CONFIG": "/nonexistent/config.toml",
            "_REMOTEDBG_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
            **env,
        },
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_shell_completion_offers_hosts_commands_and_playbooks(tmp_path) -> None:
    from remotedbg.playbook import list_playbooks

    config = tmp_path / "ssh_config"
    config.write_text("Host gpu-box gpu-box-b\n  HostName 127.0.0.1\nHost *\n  User x\n")
    env = {"REMOTEDBG_SSH_CONFIG": str(config)}
    assert _complete("remotedbg gr", env) == ["grep"]
    assert _complete("remotedbg glob -H gpu", env) == ["gpu-box", "gpu-box-b"]
    assert _complete("remotedbg playbook run -H gpu-box,lo", env) == ["gpu-box,local"]
    assert _complete("remotedbg playbook run ", env) == sorted(list_playbooks())
    script = subprocess.run(
        [sys.executable, "-m", "remotedbg", "--show-completion", "bash"],
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "REMOTEDBG_CONFIG": "/nonexistent/config.toml",
            "SHELL": "/bin/bash",
        },
        timeout=60,
    )
    assert "complete -o default -F _remotedbg_completion remotedbg" in script.stdout


def test_playbook_help_names_the_shorthand() -> None:
    page = subprocess.run(
        [sys.executable, "-m", "remotedbg", "playbook", "--help"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "REMOTEDBG_CONFIG": "/nonexistent/c.toml"},
        timeout=60,
    )
    assert "`playbook NAME ...` is short for `playbook run NAME ...`" in page.stdout


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w) or "remotedbg")
def test_every_option_has_its_help(words) -> None:
    """An option declared with typer.Option(help=...) keeps its flags and text on every command
    (a command module with postponed annotations once lost both: `get --force` showed no help
    and `probe -n` did not exist)."""
    command = _command(words)
    for parameter in getattr(command, "params", []):
        # typer's own Option class: typer 0.29 vendors click, older ones import the package
        if isinstance(parameter, typer.core.TyperOption) and parameter.name not in ("help",):
            assert parameter.help, f"{' '.join(words)} {parameter.opts} has no help"


def test_included_aliases_are_completed_and_suggested_as_ssh_sees_them(tmp_path) -> None:
    """Aliases from files pulled in by `Include` (a glob, nested) are offered by completion
    and by "did you mean"; `ssh -G` resolves the same aliases from the same files."""
    conf_d = tmp_path / "conf.d"
    conf_d.mkdir()
    (conf_d / "10-gpu.conf").write_text(
        f"Include {tmp_path}/deeper/*\nHost gpu-inc-a\n  HostName 127.0.0.7\n"
    )
    (conf_d / "20-skip.txt").write_text("Host gpu-not-included\n")
    (tmp_path / "deeper").mkdir()
    (tmp_path / "deeper" / "x").write_text("Host=gpu-inc-b !gpu-inc-neg gpu-pat-*\n  Port 2299\n")
    # an Include inside a Host block is read only for the names that block matches
    (tmp_path / "hidden.conf").write_text("Host gpu-hidden gpu-top\n  HostName 127.0.0.9\n")
    config = tmp_path / "ssh_config"
    config.write_text(f"Include {conf_d}/*.conf\nHost gpu-top\n  Include {tmp_path}/hidden.conf\n"
                      "Host *\n  User someone\n")  # fmt: skip
    env = {"REMOTEDBG_SSH_CONFIG": str(config)}
    assert _complete("remotedbg glob -H gpu", env) == ["gpu-inc-b", "gpu-inc-a", "gpu-top"]
    for alias, key in (
        ("gpu-inc-a", "hostname 127.0.0.7"),
        ("gpu-inc-b", "port 2299"),
        ("gpu-top", "hostname 127.0.0.9"),
        ("gpu-hidden", "hostname gpu-hidden"),
    ):
        seen = subprocess.run(["ssh", "-G", "-F", str(config), alias], capture_output=True,
                              text=True, timeout=30, stdin=subprocess.DEVNULL)  # fmt: skip
        assert key in seen.stdout.splitlines(), alias
    # in a network namespace of its own the lookup fails at once, without asking a resolver
    typo = subprocess.run(
        ["unshare", "-rn", sys.executable, "-m", "remotedbg", "run", "-H", "gpu-inc-bb",
         "--no-persist", "--", "true"],
        capture_output=True, text=True, timeout=60,
        env=dict(os.environ, REMOTEDBG_CONFIG="/nonexistent/config.toml", **env),
    )  # fmt: skip
    assert typo.returncode == 255
    expected = f"no alias 'gpu-inc-bb' in {config}; did you mean gpu-inc-b or gpu-inc-a?"
    assert typo.stderr.strip().endswith(expected), typo.stderr


def test_relative_includes_are_under_the_users_ssh_dir(tmp_path) -> None:
    """ssh reads `Include name` of a user's config as ~/.ssh/name (ssh_config(5), Include);
    ~ is the passwd entry's home, which a test cannot point elsewhere, so it is given here."""
    from remotedbg.session.target import config_host_names

    (tmp_path / ".ssh" / "hosts").mkdir(parents=True)
    (tmp_path / ".ssh" / "hosts" / "a.conf").write_text("Host rel-a\n")
    (tmp_path / "b.conf").write_text("Host tilde-b\n")
    text = 'Include hosts/*.conf ~/b.conf\nInclude "missing/*"\nHost top\n'
    assert config_host_names(text, home=str(tmp_path)) == ["rel-a", "tilde-b", "top"]


def test_dash_l_and_dash_p_mean_what_they_mean_to_ssh(cli, box, tmp_path) -> None:
    """`-l USER -p PORT` on every command that takes -H, as `ssh -l/-p` (checked against ssh
    in the same test); grep keeps grep's -l (files with matches), and takes --user there."""
    from tests.sshd import free_port

    user, port = box.server.user, str(box.server.port)
    ssh = ["ssh", "-F", str(box.ssh_config)]
    theirs = subprocess.run([*ssh, "-l", user, "-p", port, "testbox", "whoami"],
                            capture_output=True, timeout=30, stdin=subprocess.DEVNULL)  # fmt: skip
    ours = cli("run", "-p", port, "-l", user, "-H", "testbox", "--", "whoami")
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout == f"{user}\n".encode()
    closed = str(free_port())
    refused = subprocess.run([*ssh, "-p", closed, "testbox", "true"], capture_output=True,
                             timeout=30, stdin=subprocess.DEVNULL)  # fmt: skip
    assert refused.returncode == 255 and b"Connection refused" in refused.stderr
    for words in (["run", "-H", "testbox", "-p", closed, "--", "true"],
                  ["cat", f"-p{closed}", "-H", "testbox", "/etc/hostname"],
                  ["glob", "-H", "testbox", "-l", user, "-p", closed, "/etc/host*"]):  # fmt: skip
        result = cli(*words)
        assert result.returncode == (255 if words[0] == "run" else 3), words
        assert "Connection refused" in result.stderr.decode(), words
    wrong_user = cli("cat", "-H", "testbox", "-l", "nobody", "/etc/hostname")
    assert wrong_user.returncode == 3 and b"nobody" in wrong_user.stderr, wrong_user.stderr
    (tmp_path / "a.txt").write_text("d2t here\n")
    listed = cli("grep", "-H", "testbox", "-l", "--user", user, "-p", port, "d2t", str(tmp_path))
    assert listed.returncode == 0 and listed.stdout.decode().split() == [str(tmp_path / "a.txt")]


def test_server_takes_a_pid_or_a_port_read_one_way_by_every_command(cli, standin) -> None:
    """probe, logs and diagnose read `--server` with one parser: a PID or a port number of
    the same server picks it on each; anything else is the same one-line usage error."""
    server = standin("sglang")
    for bad in ("x1", "+5", "0", "\u0663"):  # a sign, zero, and an Arabic-Indic digit 3
        lines = set()
        for command in ("probe", "logs", "diagnose"):
            result = cli(command, "-H", "testbox", "--server", bad)
            assert result.returncode == 2, (command, bad, result.stderr)
            lines.add(result.stderr.decode())
        assert lines == {f"remotedbg: --server {bad}: expected a PID or a port number\n"}, lines
    for chosen in (str(server.pid), str(server.port)):
        probed = cli("probe", "-H", "testbox", "--server", chosen, "--json", "--max-tokens", "8",
                     "-n", "1", "--compare", "none")  # fmt: skip
        assert json.loads(probed.stdout)["server"]["pid"] == server.pid, probed.stderr
        logs = json.loads(cli("logs", "-H", "testbox", "--server", chosen, "--json").stdout)
        assert logs["server"]["pid"] == server.pid, logs
        found = cli("diagnose", "-H", "testbox", "--server", chosen, "--no-probe", "--json",
                    timeout=180)  # fmt: skip
        assert json.loads(found.stdout)["server"]["pid"] == server.pid, found.stderr


def test_connection_options_are_declared_once():
    """remotedbg.connection_options declares each connection option once: the commands'
    options, the settings a variable or config.toml gives, and the options that key a
    persistent session are read from it, and every field of ConnectOptions a command line
    sets is one of them."""
    import dataclasses

    from remotedbg import settings
    from remotedbg.connection_options import OPTIONS
    from remotedbg.front.cli.context import CONNECTION_PARAMETERS
    from remotedbg.persist import protocol
    from remotedbg.session import ConnectOptions

    declared = [o.name for o in OPTIONS]
    assert [p.name for p in CONNECTION_PARAMETERS] == [*declared, "json"]
    assert {s.key: s.envvar for s in settings.SETTINGS} == {
        o.name: o.envvar for o in OPTIONS if o.envvar
    }
    keyed = {f for o in OPTIONS if o.keys_session for f in o.flags}
    assert set(protocol.KEY_OPTIONS) == keyed and {"--user", "-l", "--port", "-p"} <= keyed
    fields = {f.name for f in dataclasses.fields(ConnectOptions)} - {"max_output"}
    assert fields <= set(declared)
