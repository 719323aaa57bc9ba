"""On a busy box only what was asked decides: the strangers of tests/strangers.py (root's
SGLang server, another user's installs and server in their home, a root podman container) run
for the whole suite; here each command is checked not to judge them, while still listing them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from remotedbg.actions.locate import locate_engines
from remotedbg.front.demo import build_demo_box
from remotedbg.remote.primitives import Remote
from remotedbg.session import ConnectOptions, open_session
from tests.strangers import Strangers

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="another user and a root container need root (CI runs as root)"
)


@pytest.fixture(scope="module")
def demo_box(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_demo_box(tmp_path_factory.mktemp("demo-box"))


def _json(result) -> dict:
    assert result.stdout, result.stderr.decode()[-2000:]
    return json.loads(result.stdout)


def test_demo_reads_nothing_of_the_machine(cli, strangers: Strangers) -> None:
    result = cli("demo", "--json", timeout=120)
    document = _json(result)
    assert result.returncode == 0 and document["as_expected"], result.stderr.decode()[-2000:]
    box_root = str(Path(document["box"]["engine"]).parents[3])
    for audit in document["audits"].values():
        engines = audit["results"]["engines"]
        assert engines["processes"] == [] and engines["also_on_box"] == []
        assert {e["path"] for e in engines["engines"]} == {document["box"]["engine"]}
        assert all(place.startswith(box_root) for place in engines["searched"])
    text = result.stdout.decode()
    assert not [pid for pid in strangers.pids if f'"pid": {pid}' in text]


def test_named_roots_limit_the_search_and_list_the_rest(cli, demo_box, strangers) -> None:
    result = cli("locate-eagle", "-H", "testbox", "--json", "--root", str(demo_box["engine"]))
    found = _json(result)
    assert result.returncode == 0, result.stderr.decode()
    assert [e["path"] for e in found["engines"]] == [str(demo_box["engine"])]
    assert found["unreadable"] == []  # the root container is listed, not a reason to give up
    listed = {s["pid"] for s in found["also_on_box"]}
    assert set(strangers.pids) <= listed


def test_named_spec_audit_is_decided_by_what_was_named(cli, demo_box, strangers) -> None:
    """draft, target and engine named: exit 0 for the correct draft, whoever else serves here."""
    result = cli(
        "playbook", "spec-audit", "-H", "testbox", "--json",
        "--var", f"draft={demo_box['good']}", "--var", f"target={demo_box['target']}",
        "--var", f"roots={demo_box['engine']}",
    )  # fmt: skip
    document = _json(result)
    assert (result.returncode, document["verdict"]) == (0, "ok"), document["inconclusive"]
    assert set(strangers.pids) <= {s["pid"] for s in document["also_on_box"]}
    bad = cli(
        "playbook", "vocab-audit", "-H", "testbox", "--json",
        "--var", f"draft={demo_box['bad']}", "--var", f"target={demo_box['target']}",
        "--var", f"roots={demo_box['engine']}",
    )  # fmt: skip
    assert bad.returncode == 1
    assert [f["id"] for f in _json(bad)["findings"] if f["severity"] == "error"] == [
        "d2t-absolute-ids"
    ]


@needs_root
def test_other_users_homes_are_walked_only_when_asked(cli, strangers: Strangers) -> None:
    assert strangers.home is not None
    checkout = str(strangers.home / "sglang" / "python" / "sglang")
    venv_vllm = strangers.home / "venv" / "lib" / "python3.11" / "site-packages" / "vllm"
    found = _json(cli("locate-eagle", "-H", "testbox", "--json"))
    paths = {e["path"]: e for e in found["engines"]}
    assert checkout not in paths  # their checkout is theirs
    # the installs their running server uses are on the box's record, marked as running
    assert paths[str(venv_vllm)]["running"]
    everyone = _json(cli("locate-eagle", "-H", "testbox", "--json", "--all-homes"))
    assert checkout in {e["path"] for e in everyone["engines"]}


def _unreadable_as_ordinary_user(home: str) -> list[dict]:
    """locate-engines run by an ordinary user on this machine (forked and switched to nobody by
    call_unprivileged); its list of servers it could not read."""
    os.environ["HOME"] = home
    with open_session(ConnectOptions(host="local", timeout=60)) as session:
        return locate_engines(Remote(session), [], search_home=False)["unreadable"]


@needs_root
def test_another_users_podman_is_never_run(strangers: Strangers) -> None:
    """An ordinary user's scan meets root's podman container: the scan says it cannot read it,
    and podman is not run as that user (it would create rootless storage and a pause process in
    their home)."""
    import pwd

    from tests.unprivileged import NOBODY, call_unprivileged, processes_of, shared_dir

    user = pwd.getpwnam(NOBODY)
    with shared_dir() as home:
        os.chown(home, user.pw_uid, user.pw_gid)
        unreadable = call_unprivileged(_unreadable_as_ordinary_user, str(home))
        why = {u["pid"]: u["why"] for u in unreadable}
        assert "podman of uid 0" in why[strangers.container_pid]
        assert sorted(os.listdir(home)) == []  # no ~/.local/share/containers, no ~/.config
        assert not [c for c in processes_of(user.pw_uid) if "catatonit" in c or "podman" in c]


def test_a_server_is_judged_with_the_install_its_python_imports(cli, tmp_path, demo_box) -> None:
    """The user's server runs SGLang from a checkout on PYTHONPATH (its loader reads d2t as
    direct ids), with a venv whose site-packages hold a correct SGLang and a vLLM: Python imports
    the checkout (PYTHONPATH comes before site-packages), so that loader is the one judged."""
    import subprocess
    import sys

    from tests.engine_trees import (
        SGLANG_LLAMA_EAGLE3_DIRECT,
        write_sglang_checkout,
        write_vllm_venv,
    )

    buggy = write_sglang_checkout(tmp_path / "sglang-bug", direct_variant=False)
    (buggy / "srt" / "models" / "llama_eagle3.py").write_text(
        SGLANG_LLAMA_EAGLE3_DIRECT.replace("LlamaForCausalLMEagle3Direct", "LlamaForCausalLMEagle3")
    )
    venv_vllm = write_vllm_venv(tmp_path / "venv", python=sys.executable)
    shutil.copytree(demo_box["engine"], venv_vllm.parent / "sglang")  # a correct one, not imported
    server = subprocess.Popen(
        [str(tmp_path / "venv" / "bin" / "python3"), "-c", "import time; time.sleep(60)",
         "-m", "sglang.launch_server", "--model-path", str(demo_box["target"]),
         "--speculative-algorithm", "EAGLE3",
         "--speculative-draft-model-path", str(demo_box["good"])],
        cwd="/", env=dict(os.environ, PYTHONPATH=str(buggy.parent)),
    )  # fmt: skip
    try:
        result = cli("playbook", "vocab-audit", "-H", "testbox", "--json",
                     "--var", f"draft={demo_box['good']}")  # fmt: skip
        document = _json(result)
        (draft,) = document["drafts"]
        assert draft["loader"]["path"] == str(buggy / "srt" / "models" / "llama_eagle3.py")
        assert "loader-direct-map" in {f["id"] for f in document["findings"]}
        assert result.returncode == 1
        engines = {e["path"]: e for e in document["results"]["engines"]["engines"]}
        assert server.pid in engines[str(buggy)]["running"]
        assert server.pid not in engines[str(venv_vllm)]["running"]  # in its venv, not imported
    finally:
        server.kill()
        server.wait()


def test_each_draft_gets_its_own_servers_target_and_install() -> None:
    """Two servers, two targets (a 256-wide model and a Kimi of 7168): each draft is checked
    against the model its own server serves, and a server whose install is unknown borrows none."""
    from remotedbg.actions.spec import _install_for, _pair_drafts

    servers = [
        {"pid": 11, "engine": "vllm", "spec": {"draft_model": "/m/small-draft",
                                               "target_model": "/m/small"}},
        {"pid": 12, "engine": "sglang", "spec": {"draft_model": "/m/kimi-draft",
                                                 "target_model": "/m/kimi"}},
    ]  # fmt: skip
    items = [{"path": "/m/small-draft"}, {"path": "/m/kimi-draft"}]
    _pair_drafts(items, servers, scoped=False, target=None)
    assert [(i["server"]["pid"], i["target"]) for i in items] == [
        (11, "/m/small"),
        (12, "/m/kimi"),
    ]
    located = {"engines": [{"name": "vllm", "path": "/v", "running": [11], "how_found": []}]}
    assert _install_for(servers[0], located)["path"] == "/v"
    assert _install_for(dict(servers[0], pid=13), located) is None  # not the other server's


@needs_root
def test_the_throwaway_users_of_a_killed_run_are_swept(tmp_path) -> None:
    """A run killed with SIGKILL leaves its strangers' users (no teardown runs); the next
    throwaway user sweeps them, with their processes and homes, and leaves a live run's alone."""
    import pwd
    import subprocess

    from tests.procs import start_time, wait_for
    from tests.unprivileged import MADE_BY, processes_of, sweep_stale_users

    made = {}
    for name, creator in (("rdbgdead", "999999999 1"),  # above any pid_max: long gone
                          ("rdbglive", f"{os.getpid()} {start_time(os.getpid())}")):  # fmt: skip
        home = tmp_path / name
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir",
                        str(home), "--comment", f"{MADE_BY} {creator}", name],
                       check=True, capture_output=True)  # fmt: skip
        made[name] = pwd.getpwnam(name)
        home.mkdir()
        os.chown(home, made[name].pw_uid, made[name].pw_gid)
    dead = made["rdbgdead"].pw_uid
    # what the killed run left running: an orphan, as its parent is gone
    subprocess.run(["setsid", "-f", "setpriv", "--reuid", str(dead), "--regid", str(dead),
                    "--clear-groups", "sleep", "300"], check=True)  # fmt: skip
    try:
        assert wait_for(lambda: processes_of(dead))
        swept = sweep_stale_users()
        assert "rdbgdead" in swept and "rdbglive" not in swept, swept
        assert wait_for(lambda: not processes_of(dead))
        assert not (tmp_path / "rdbgdead").exists() and (tmp_path / "rdbglive").is_dir()
        names = {entry.pw_name for entry in pwd.getpwall()}
        assert "rdbgdead" not in names and "rdbglive" in names
    finally:
        subprocess.run(["pkill", "-KILL", "-U", str(dead)], capture_output=True)
        for name in made:
            subprocess.run(["userdel", "--force", name], capture_output=True)
