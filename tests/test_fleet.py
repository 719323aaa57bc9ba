"""Playbooks on several hosts at once: one unreachable host, worst exit, differences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remotedbg.errors import ExitCode, UsageError
from remotedbg.fleet import HostResult, differences, parse_hosts, worst_exit
from remotedbg.playbook import RunOutcome
from tests.checkpoints import write_eagle3_checkpoint
from tests.engine_trees import write_sglang_checkout


@pytest.fixture(scope="module")
def fleet_world(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    return {
        "engine": write_sglang_checkout(root / "engine"),
        "draft": write_eagle3_checkpoint(root / "draft"),
    }


def test_fleet_audits_every_host_and_reports_the_unreachable_one(cli, fleet_world, tmp_path):
    hosts_file = tmp_path / "hosts"
    hosts_file.write_text("# the deployment\ntestbox\nnosftp   # no sftp here\n\n127.0.0.1:1\n")
    result = cli(
        "playbook",
        "vocab-audit",
        "--hosts-file",
        str(hosts_file),
        "--json",
        "--connect-timeout",
        "3",
        "--var",
        f"draft={fleet_world['draft']}",
        "--var",
        f"roots={fleet_world['engine']}",
    )
    doc = json.loads(result.stdout)
    assert [h["host"] for h in doc["hosts"]] == ["testbox", "nosftp", "127.0.0.1:1"]
    verdicts = {h["host"]: h["verdict"] for h in doc["hosts"]}
    assert verdicts == {"testbox": "ok", "nosftp": "ok", "127.0.0.1:1": "unreachable"}
    assert doc["hosts"][2]["exit_code"] == 3 and "cannot connect" in doc["hosts"][2]["error"]
    assert result.returncode == doc["exit_code"] == 3  # the worst host's status
    assert doc["differences"] == {}  # both reachable hosts serve the same files
    text = cli(
        "playbook", "vocab-audit", "--hosts-file", str(hosts_file), "--connect-timeout", "3",
        "--var", f"draft={fleet_world['draft']}", "--var", f"roots={fleet_world['engine']}",
        env={"COLUMNS": "80"},
    ).stdout.decode()  # fmt: skip
    rows = [line.split() for line in text.splitlines()]
    assert ["127.0.0.1:1", "unreachable", "3"] == next(
        r[:3] for r in rows if r[:1] == ["127.0.0.1:1"]
    )
    assert ["testbox", "ok", "0"] == next(r[:3] for r in rows if r[:1] == ["testbox"])
    # the reason column: every word of the unreachable host's error, folded, never cut
    words = text.split()
    assert all(word in words for word in doc["hosts"][2]["error"].split())
    prints = doc["hosts"][0]["fingerprints"]["tensors"][str(fleet_world["draft"])]
    assert len(prints["d2t"]) == 64


def test_fleet_text_report_has_one_row_per_host(cli, fleet_world, tmp_path):
    report = tmp_path / "fleet.md"
    result = cli(
        "playbook",
        "vocab-audit",
        "-H",
        "testbox,nosftp",
        "--var",
        f"draft={fleet_world['draft']}",
        "--var",
        f"roots={fleet_world['engine']}",
        "--report",
        str(report),
    )
    assert result.returncode == 0
    out = result.stdout.decode()
    assert "vocab-audit on 2 hosts" in out and "testbox" in out and "nosftp" in out
    text = report.read_text()
    assert text.startswith("# remotedbg vocab-audit on 2 hosts")
    headings = [line.split(" ", 1)[0] for line in text.splitlines() if line.startswith("#")]
    assert headings.count("#") == 1  # one title; each host's report is a section under it
    assert "## remotedbg vocab-audit on `testbox`" in text
    assert "## remotedbg vocab-audit on `nosftp`" in text


def _outcome(host: str, version: str, digest: str) -> HostResult:
    outcome = RunOutcome(
        "vocab-audit",
        host,
        "ok",
        "",
        [],
        [],
        {"engines": {"engines": [{"name": "sglang", "version": version, "running": [1]}]}},
        report={"engines": "engines"},
    )
    return HostResult(
        host, 0, outcome, fingerprints={"files": {"/x/llama_eagle3.py": digest * 64}, "tensors": {}}
    )


def test_differences_name_only_what_disagrees():
    results = [
        _outcome("a", "0.5.6", "1"),
        _outcome("b", "0.5.6", "2"),
        _outcome("c", "0.5.5", "1"),
        HostResult("d", 3, error="down"),
    ]
    diff = differences(results)
    assert set(diff) == {"sglang version", "sha256 llama_eagle3.py"}
    assert diff["sglang version"] == {"a": "0.5.6", "b": "0.5.6", "c": "0.5.5"}


def test_worst_exit_and_host_parsing(tmp_path):
    assert worst_exit([0, 1, 0]) == ExitCode.FINDINGS
    assert worst_exit([1, 4]) == ExitCode.REMOTE
    assert worst_exit([4, 3, 0]) == ExitCode.CONNECTION
    assert parse_hosts("a, b,a", None) == ["a", "b"]
    with pytest.raises(UsageError):
        parse_hosts("", tmp_path / "missing")


def test_fleet_from_an_ansible_inventory_group(cli, fleet_world, tmp_path):
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(
        "[boxes]\ntestbox\nnosftp\n\n[broken]\nunreachable ansible_host=127.0.0.1 ansible_port=1\n"
    )
    argv = [
        "playbook",
        "vocab-audit",
        "--hosts-file",
        str(inventory),
        "--json",
        "--connect-timeout",
        "3",
    ]
    argv += ["--var", f"draft={fleet_world['draft']}", "--var", f"roots={fleet_world['engine']}"]
    chosen = cli(*argv, "--group", "boxes")
    doc = json.loads(chosen.stdout)
    assert [h["host"] for h in doc["hosts"]] == ["testbox", "nosftp"] and chosen.returncode == 0
    everyone = json.loads(cli(*argv).stdout)
    assert [h["host"] for h in everyone["hosts"]] == ["testbox", "nosftp", "127.0.0.1:1"]
    unknown = cli(*argv, "--group", "gpus")
    assert unknown.returncode == 2 and b"no group 'gpus'" in unknown.stderr


def test_a_fleet_through_one_jump_host_reaches_every_host(cli, ssh_world, tmp_path):
    """32 hosts behind one bastion with OpenSSH's default `MaxStartups 10:30:100`, which drops
    handshakes past 10 unauthenticated at a time (sshd.c, should_drop_connection) before its
    banner: every host answers, none 'Error reading SSH protocol banner'."""
    from tests.sshd import make_sshd, write_client_config

    bastion = make_sshd(
        tmp_path / "bastion", ssh_world.user_key, extra_config=("MaxStartups 10:30:100",)
    )
    try:
        hosts = [f"h{index:02d}" for index in range(32)]
        servers = {"bastion": bastion} | {host: ssh_world.box.server for host in hosts}
        config = write_client_config(
            tmp_path / "config",
            servers,
            tmp_path / "known_hosts",
            extra={host: ["ProxyJump bastion"] for host in hosts},
        )
        result = cli(
            "run", "-H", ",".join(hosts), "--ssh-config", str(config), "--", "echo", "up",
            timeout=180,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr.decode()[-2000:]
        assert result.stdout.decode().count("up\n") == 32
        assert b"banner" not in result.stderr
    finally:
        bastion.stop()


def test_ctrl_c_in_a_fleet_run_stops_every_host_at_once(ssh_world, isolated_state, tmp_path):
    """Ctrl-C in `run` on several hosts: the client returns at once (not after --timeout) and
    no host keeps the command running."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.procs import wait_for

    token = f"fleet-sleep-{os.getpid()}"

    def running() -> int:
        """The remote `sh -c` commands (the client's own argv names the token too)."""
        found = 0
        for entry in os.listdir("/proc"):
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes() if entry.isdigit() else b""
            except OSError:
                continue
            found += argv.startswith(b"sh\0-c\0") and token.encode() in argv
        return found

    client = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", "-H", "testbox,nosftp", "--timeout", "120",
         "--", "sh", "-c", f"sleep 300; echo {token}"],
        env=dict(os.environ, REMOTEDBG_SSH_CONFIG=str(ssh_world.box.ssh_config)),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert wait_for(lambda: running() >= 2, timeout=30), "the commands never started"
        client.send_signal(signal.SIGINT)
        start = time.monotonic()
        client.wait(timeout=30)
        print(f"fleet Ctrl-C: client out after {time.monotonic() - start:.2f} s")
        assert time.monotonic() - start < 10  # not the --timeout of 120 s
        assert client.returncode == 130
        assert wait_for(lambda: running() == 0, timeout=5), "a host kept the command running"
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


@pytest.mark.parametrize("name", ["vocab-audit", "spec-audit"])
def test_named_draft_and_engine_tree_bound_each_hosts_work(box, fleet_world, name, monkeypatch):
    """What a fleet host does for a playbook naming its draft and engine tree: no draft search
    under the home, no engine search beyond the named tree, one executor for every check."""
    from remotedbg.playbook import bind_variables, find_playbook, load_playbook, run_playbook
    from remotedbg.remote.primitives import Remote
    from remotedbg.session.executor_client import ExecutorChannel

    starts: list[str] = []
    start = ExecutorChannel.start.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(ExecutorChannel, "start", classmethod(
        lambda cls, link, boot, *more, **sizes: starts.append(boot)
        or start(cls, link, boot, *more, **sizes)
    ))  # fmt: skip
    playbook = load_playbook(find_playbook(name))
    given = {"draft": str(fleet_world["draft"]), "roots": str(fleet_world["engine"])}
    calls: list[tuple[str, dict]] = []
    with box.session() as session:
        remote = Remote(session)
        original = remote.call
        remote.call = lambda request, timeout=None: (  # type: ignore[method-assign]
            calls.append((request.entry, request.args())) or original(request, timeout)
        )
        run_playbook(playbook, remote, bind_variables(playbook, given), False)
    entries = [entry.rpartition(".")[2] for entry, _ in calls]
    assert "draft_search:find_drafts" not in entries
    (scan,) = [args for entry, args in calls if entry.endswith("engine_scan:scan")]
    assert scan["roots"] == [str(fleet_world["engine"])] and scan["only_roots"]
    assert not scan["search_home"] and not scan["search_system"]
    assert len(calls) >= 4 and len(starts) == 1  # every check ran in the one executor
