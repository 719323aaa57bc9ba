"""On a busy box only what was asked decides: the strangers of tests/strangers.py (root's
SGLang server, another user's installs and server in their home, a root podman container) run
for the whole suite; here each command is checked not to judge them, while still listing them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from remotedbg.actions.locate import locate_engines
from remotedbg.demo import build_demo_box
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
