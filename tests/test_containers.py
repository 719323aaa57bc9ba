"""Servers inside real podman containers (tests/podman.py), audited over the real sshd with no
flags beyond -H: the engine code exists only inside the containers (SGLang 0.5.23 as released,
at /sgl-workspace/sglang/python as SGLang's image keeps it), the checkpoints are bind-mounted
from the host at /models. Two containers: one serves a correct draft, one a draft whose d2t
holds absolute ids."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import pytest

from remotedbg.agent import containers, engine_scan, server_scan
from remotedbg.engines.knowledge import knowledge, server_scan_knowledge
from remotedbg.session import container as container_session
from tests.checkpoints import write_eagle3_checkpoint, write_target_config
from tests.podman import Podman
from tests.releases import release
from tests.sshd import make_sshd, write_client_config
from tests.unprivileged import call_unprivileged, processes_of, throwaway_user

pytestmark = pytest.mark.network  # the SGLang release is downloaded once (tests/releases.py)

IMAGE = "docker.io/lmsysorg/sglang:v0.5.23-remotedbg-test"
REPO = Path(__file__).resolve().parent.parent


def _launch(port: int) -> list[str]:
    return ["-m", "sglang.launch_server", "--model-path", "/models/target",
            "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
            "/models/draft", "--speculative-num-steps", "3", "--port", str(port)]  # fmt: skip


@pytest.fixture(scope="module")
def boxed():
    podman = Podman()
    try:
        podman.build_image(IMAGE, release("sglang", "0.5.23").package)
        world = {"podman": podman}
        for name, defect, port in (("sgl-a", None, 30000), ("sgl-b", "absolute", 30001)):
            models = podman.dir / f"models-{name}"
            write_target_config(models / "target")
            write_eagle3_checkpoint(models / "draft", defect=defect)
            models.chmod(0o755)  # as a hub download is: readable by the exec route's user
            for file in (models / "draft").iterdir():
                file.chmod(0o644)
            pid = podman.run(name, IMAGE, {str(models): "/models"}, _launch(port))
            world[name] = {"pid": pid, "models": models}
        # a server answering SGLang's HTTP API on 127.0.0.1 of its own network namespace
        pid = podman.run("sgl-net", IMAGE, {str(REPO): "/opt/repo"}, _launch(30002),
                         program="http_standin.py", ready="serving on")  # fmt: skip
        world["sgl-net"] = {"pid": pid}
        yield world
    finally:
        podman.close()


def test_the_container_and_its_paths_are_recognised(boxed):
    pid, models = boxed["sgl-a"]["pid"], boxed["sgl-a"]["models"]
    info = containers.container_info(pid)
    assert info["runtime"] == "podman" and info["name"] == "sgl-a" and info["image"] == IMAGE
    assert info["id"] == boxed["podman"].inspect("sgl-a")["Id"]
    assert info["root_readable"] is True
    # the bind mount resolves to the host's checkpoint; image files through /proc/PID/root
    assert containers.host_path(info, "/models/draft") == str(models / "draft")
    engine = containers.host_path(info, "/sgl-workspace/sglang/python/sglang")
    assert engine == f"/proc/{pid}/root/sgl-workspace/sglang/python/sglang"
    assert not Path("/sgl-workspace").exists()  # the engine tree is only inside the container


def _engines_in_both_containers(doc: dict, boxed: dict, route: str) -> None:
    """Each container's SGLang 0.5.23, named under its /proc/PID/root whichever route read it,
    marked as its server's, with its draft loader classified from its code."""
    for name in ("sgl-a", "sgl-b"):
        pid = boxed[name]["pid"]
        [engine] = [e for e in doc["engines"] if pid in e["running"]]
        assert engine["path"] == f"/proc/{pid}/root/sgl-workspace/sglang/python/sglang"
        assert engine["version"] == "0.5.23"
        assert engine["container"]["name"] == name
        assert engine["container"]["route"] == route  # how its files were read
        assert engine["container"]["path_in_container"] == "/sgl-workspace/sglang/python/sglang"
        # sglang/srt/models/llama_eagle3.py of 0.5.23 reads d2t as offsets
        eagle3 = [m for m in doc["draft_models"] if m["install"] == engine["path"]
                  and m["relative_path"] == "srt/models/llama_eagle3.py"]  # fmt: skip
        assert eagle3 and eagle3[0]["d2t_handling"] == "offsets"


def test_locate_eagle_finds_the_engine_inside_and_marks_it_running(cli, boxed):
    result = cli("locate-eagle", "-H", "testbox", "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    _engines_in_both_containers(json.loads(result.stdout), boxed, "proc")
    text = cli("locate-eagle", "-H", "testbox", timeout=120).stdout.decode()
    assert "inside podman container sgl-a, image " + IMAGE in text


def test_vocab_audit_audits_what_each_container_serves(cli, boxed):
    result = cli("playbook", "vocab-audit", "-H", "testbox", "--json", timeout=180)
    doc = json.loads(result.stdout)
    drafts = {d["draft"]: d for d in doc["drafts"]}
    good = str(boxed["sgl-a"]["models"] / "draft")
    bad = str(boxed["sgl-b"]["models"] / "draft")
    assert good in drafts and bad in drafts, list(drafts)
    for path, name in ((good, "sgl-a"), (bad, "sgl-b")):
        loader = drafts[path]["loader"]["path"]
        assert loader.startswith(f"/proc/{boxed[name]['pid']}/root/sgl-workspace/"), loader
    # another container on the box (a stranger's, another run's) may serve a bad draft of its
    # own: what is said of the two drafts made here is judged
    ours = [f for f in doc["findings"] if f["evidence"].get("draft") in (good, bad)]
    absolute = [f for f in ours if f["id"] == "d2t-absolute-ids"]
    assert absolute and all(f["evidence"]["draft"] == bad for f in absolute)
    # a finding names the draft where the host sees it and where its server does
    assert all(f["evidence"]["draft_in_container"] == "/models/draft" for f in absolute)
    assert not any(good in json.dumps(f) for f in doc["findings"] if f["severity"] == "error")
    assert result.returncode == 1


def test_server_scan_translates_launch_paths_and_reads_the_runtime_log(boxed):
    pid, models = boxed["sgl-b"]["pid"], boxed["sgl-b"]["models"]
    scan = server_scan.scan_servers({"metrics": False, "knowledge": server_scan_knowledge()})
    [server] = [s for s in scan["servers"] if s["pid"] == pid]
    assert server["container"]["name"] == "sgl-b"
    assert server["spec"]["draft_model"] == str(models / "draft")
    assert server["paths_in_container"]["draft_model"] == "/models/draft"
    assert server["log"]["how_found"] == "podman log (conmon -l)"
    # three decode lines printed by the stand-in, read through podman's k8s-file log
    assert server["log"]["figures"]["accept_length"]["values"] == [1.02, 1.02, 1.02]


def test_logs_come_from_the_runtime(cli, boxed):
    pid = boxed["sgl-a"]["pid"]
    result = cli("logs", "-H", "testbox", "--server", str(pid), "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["server"]["how_found"] == "podman log (conmon -l)"
    assert doc["lines"][0].startswith("[") and "server_args=ServerArgs(" in doc["lines"][0]
    assert doc["accept_length"] == [1.02, 1.02, 1.02]


def test_a_user_allowed_neither_route_is_told_what_is_missing(boxed):
    """nobody may not read a root container's /proc/PID/root (ptrace-read check): the
    container is still named (cmdline, cgroup and mountinfo stay readable), the checkpoint on
    a bind mount still resolves, and what cannot be read says why."""
    pid, models = boxed["sgl-a"]["pid"], boxed["sgl-a"]["models"]
    info = call_unprivileged(containers.container_info, pid)
    assert info["runtime"] == "podman" and info["root_readable"] is False
    assert "uid 0" in info["why_unreadable"] and "root" in info["why_unreadable"]
    assert containers.host_path(info, "/models/draft") == str(models / "draft")
    assert containers.host_path(info, "/sgl-workspace/sglang/python") is None
    scan = call_unprivileged(
        engine_scan.scan, {"knowledge": knowledge(), "search_home": False, "search_system": False}
    )
    [process] = [p for p in scan["processes"] if p["pid"] == pid]
    assert process["container"]["why_unreadable"] and process["installs"] == []


def test_spec_audit_reads_each_container(cli, boxed):
    result = cli("playbook", "spec-audit", "-H", "testbox", "--json", timeout=240)
    doc = json.loads(result.stdout)
    servers = {s.get("pid"): s for s in doc["results"]["servers"]["servers"]}
    for name in ("sgl-a", "sgl-b"):
        server = servers[boxed[name]["pid"]]
        assert server["container"]["name"] == name
        assert server["spec"]["draft_model"] == str(boxed[name]["models"] / "draft")
    # the container's log says accept len 1.02 of a possible 4: read from podman's log
    # (the session's foreign server, not in a container, has its own 1.00)
    # only the two servers made here: another run's container may log the same figure
    ours = {str(boxed[name]["pid"]) for name in ("sgl-a", "sgl-b")}
    low = [f for f in doc["findings"]
           if f["id"] == "accept-length-low" and f["evidence"].get("server") in ours]  # fmt: skip
    assert [f["evidence"]["observed"] for f in low] == [1.02, 1.02]


# -- the exec route -------------------------------------------------------------------------
# A user the kernel will not let read a root container's /proc/PID/root, but whom the runtime
# lets in: podman's API socket (`podman system service`) given to the user's group, as docker's
# socket is given to the docker group; CONTAINER_HOST (set by sshd) points podman at it.


@pytest.fixture(scope="module")
def exec_world(boxed, ssh_world):
    podman = boxed["podman"]
    shared = podman.dir / "exec-route"
    shared.mkdir(mode=0o755)
    with (
        throwaway_user("rdbgexec", shared) as allowed,
        throwaway_user("rdbgnone", shared) as not_allowed,
    ):
        api = podman.serve_api(allowed.pw_gid)
        sshd = make_sshd(shared / "sshd", ssh_world.user_key,
                         extra_config=(f"SetEnv CONTAINER_HOST={api}",))  # fmt: skip
        (shared / "sshd").chmod(0o755)  # sshd reads authorized_keys as the user logging in
        try:
            config = write_client_config(
                shared / "ssh_config",
                {"execbox": dataclasses.replace(sshd, user=allowed.pw_name),
                 "nonebox": dataclasses.replace(sshd, user=not_allowed.pw_name)},
                shared / "known_hosts",
            )  # fmt: skip
            yield {"env": {"REMOTEDBG_SSH_CONFIG": str(config)}, "users": (allowed, not_allowed)}
        finally:
            sshd.stop()


def _left_in(container_pid: int) -> list[str]:
    """Processes in the container besides its server (the exec route's must all be gone)."""
    cgroup = Path(f"/proc/{container_pid}/cgroup").read_text()
    left = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == container_pid:
            continue
        try:
            if Path(f"/proc/{entry}/cgroup").read_text() == cgroup:
                left.append(
                    Path(f"/proc/{entry}/cmdline").read_bytes()[:80].decode(errors="replace")
                )
        except OSError:
            continue
    return left


def _nothing_left(world: dict, boxed: dict) -> list[str]:
    deadline = time.monotonic() + 5
    while True:
        left = [c for u in world["users"] for c in processes_of(u.pw_uid)]
        left += [c for name in ("sgl-a", "sgl-b") for c in _left_in(boxed[name]["pid"])]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def test_locate_eagle_takes_the_exec_route_when_proc_is_closed(cli, boxed, exec_world):
    result = cli("locate-eagle", "-H", "execbox", "--json", env=exec_world["env"], timeout=120)
    assert result.returncode == 0, result.stderr
    _engines_in_both_containers(json.loads(result.stdout), boxed, "exec")
    text = cli("locate-eagle", "-H", "execbox", env=exec_world["env"], timeout=120).stdout.decode()
    assert "through podman exec" in text
    assert _nothing_left(exec_world, boxed) == []


def test_vocab_audit_takes_the_exec_route(cli, boxed, exec_world):
    result = cli("playbook", "vocab-audit", "-H", "execbox", "--json", env=exec_world["env"],
                 timeout=180)  # fmt: skip
    doc = json.loads(result.stdout)
    drafts = {d["draft"]: d for d in doc["drafts"]}
    bad = str(boxed["sgl-b"]["models"] / "draft")
    good = str(boxed["sgl-a"]["models"] / "draft")
    for path, name in ((good, "sgl-a"), (bad, "sgl-b")):
        loader = drafts[path]["loader"]["path"]
        assert loader.startswith(f"/proc/{boxed[name]['pid']}/root/sgl-workspace/"), loader
        assert drafts[path]["loader"]["d2t_handling"] == "offsets"
    absolute = [f for f in doc["findings"] if f["id"] == "d2t-absolute-ids"]
    assert absolute and all(bad in json.dumps(f) for f in absolute)
    assert result.returncode == 1
    assert _nothing_left(exec_world, boxed) == []


def test_a_user_allowed_neither_route_gets_exit_4_and_the_runtimes_answer(cli, boxed, exec_world):
    result = cli("locate-eagle", "-H", "nonebox", env=exec_world["env"], timeout=120)
    assert result.returncode == 4, (result.stdout, result.stderr)
    err = result.stderr.decode()
    for name in ("sgl-a", "sgl-b"):
        pid = boxed[name]["pid"]  # another run's container may have the same name
        [line] = [x for x in err.splitlines() if f"container {name}" in x and f"pid {pid}" in x]
        assert "uid 0" in line
        assert "`podman exec` into " + name + " failed" in line and "permission denied" in line
    # the audit still proves sgl-b's absolute d2t from the checkpoint alone (exit 1: a proven
    # defect outranks what could not be checked), and says which loader went unread and why
    audit = cli("playbook", "vocab-audit", "-H", "nonebox", "--json", env=exec_world["env"],
                timeout=180)  # fmt: skip
    doc = json.loads(audit.stdout)
    assert audit.returncode == 1 and doc["verdict"] == "defect"
    assert "`podman exec` into sgl-a failed" in json.dumps(doc["inconclusive"])
    assert _nothing_left(exec_world, boxed) == []


def test_the_exec_route_leaves_nothing_behind_when_the_connection_drops(boxed, exec_world):
    """The executor inside the container is visible while the session lives, and gone once
    the connection drops without a goodbye (the runtime closes the exec's stdin)."""
    from remotedbg.session import ConnectOptions, open_session

    pid = boxed["sgl-a"]["pid"]
    info = containers.container_info(pid)
    options = ConnectOptions(host="execbox", ssh_config=exec_world["env"]["REMOTEDBG_SSH_CONFIG"],
                             timeout=30.0)  # fmt: skip
    session = open_session(options)
    try:
        inside = container_session.inside(session, "podman", info["id"], "sgl-a")
        uid = inside.run("python3 -c 'import os; print(os.getuid())'")
        assert uid.stdout.strip() == "0", uid.stderr  # root in the container
        assert len(_left_in(pid)) == 1  # the executor, running while the session does
    finally:
        session._connection.client.get_transport().sock.close()  # a dropped connection
    assert _nothing_left(exec_world, boxed) == []
    session.close()


def test_logs_ask_the_runtime_when_its_log_file_is_closed(cli, boxed, exec_world):
    """podman keeps the log under its storage, root's; the exec route's user asks the
    runtime (`podman logs`), and gets the same lines."""
    pid = boxed["sgl-b"]["pid"]
    result = cli("logs", "-H", "execbox", "--server", str(pid), "--json", env=exec_world["env"])
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["server"]["how_found"] == "the container runtime"
    assert doc["path"] == "podman logs sgl-b"
    assert doc["lines"][0].startswith("[") and "server_args=ServerArgs(" in doc["lines"][0]
    assert doc["accept_length"] == [1.02, 1.02, 1.02]
    refused = cli("logs", "-H", "nonebox", "--server", str(pid), env=exec_world["env"])
    assert refused.returncode == 4
    [line] = refused.stderr.decode().strip().splitlines()
    assert "`podman logs` of sgl-b failed" in line and "permission denied" in line
    assert _nothing_left(exec_world, boxed) == []


def test_runtime_log_lines_lose_their_stamps_and_a_polls_overlap():
    from remotedbg.actions import runtime_logs

    # docker logs -t prints UTC with Z, podman logs -t the zone's offset; nanoseconds trimmed
    out = (
        "2026-11-29T20:45:01.5Z [2026-11-29 20:45:01] first\n"
        "2026-11-29T20:45:01.123456789+00:00 second\n"
        "  a traceback's continuation\n"
        "2026-11-29T21:45:02+01:00 third\n"
    )
    lines, last, text = runtime_logs.process(out)
    assert lines == ["[2026-11-29 20:45:01] first", "second", "  a traceback's continuation",
                     "third"]  # fmt: skip
    assert text == "2026-11-29T21:45:02+01:00"
    # "third" is 20:45:02 UTC: a poll from 20:45:01.5 on gets it alone
    again, _, _ = runtime_logs.process(out, after=last - 0.5)
    assert again == ["third"]
    assert runtime_logs.command("docker", "abc; rm -rf /", 40, "10m") == (
        "docker logs --timestamps --tail 40 --since 10m 'abc; rm -rf /' 2>&1"
    )


def test_probe_reaches_a_port_only_the_containers_network_has(cli, boxed, exec_world):
    """sgl-net listens on 127.0.0.1:30002 of its own network namespace: nothing on the host
    answers there, so the probe's requests go in through the runtime's exec (no flag)."""
    import socket

    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", 30002), timeout=1).close()
    pid = boxed["sgl-net"]["pid"]
    result = cli("probe", "-H", "execbox", "--server", str(pid), "--json", "--compare", "none",
                 env=exec_world["env"], timeout=120)  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    assert doc["server"]["port"] == 30002 and doc["server"]["engine"] == "sglang"
    assert doc["measurements"] and all(m["ok"] for m in doc["measurements"])
    # the stand-in's default script accepts 3, 2, 3, 1 drafts per verify step: the measured
    # accept length is (tokens) / (verify steps), between 2 and 4 (tests/engine_standins.py)
    assert 2.0 <= doc["summary"]["overall"]["accept_length"] <= 4.0
    assert _nothing_left(exec_world, boxed) == []


def test_container_option_works_inside_one(cli, boxed, exec_world):
    """--container NAME: the command runs inside that container, paths and processes as it
    sees them: its own engine, the draft at the path its server was given."""
    env = exec_world["env"]
    located = cli("locate-eagle", "-H", "execbox", "--container", "sgl-b", "--json", env=env,
                  timeout=120)  # fmt: skip
    assert located.returncode == 0, located.stderr
    [engine] = json.loads(located.stdout)["engines"]
    assert engine["path"] == "/sgl-workspace/sglang/python/sglang" and engine["running"]
    audit = cli("playbook", "vocab-audit", "-H", "execbox", "--container", "sgl-b", "--json",
                env=env, timeout=180)  # fmt: skip
    doc = json.loads(audit.stdout)
    assert [d["draft"] for d in doc["drafts"]] == ["/models/draft"]
    assert [f["id"] for f in doc["findings"] if f["severity"] == "error"] == ["d2t-absolute-ids"]
    probe = cli("probe", "-H", "execbox", "--container", "sgl-net", "--json", "--compare", "none",
                env=env, timeout=120)  # fmt: skip
    assert json.loads(probe.stdout)["server"]["port"] == 30002, probe.stderr
    missing = cli("run", "-H", "execbox", "--container", "nosuch", "--", "true", env=env)
    assert missing.returncode == 255  # run is ssh: its own failures (no such container) are 255
    [line] = missing.stderr.decode().strip().splitlines()
    assert (
        "no container nosuch to enter" in line and 'no container with name or ID "nosuch"' in line
    )
    assert _nothing_left(exec_world, boxed) == []


def test_the_repl_works_inside_a_container(boxed, exec_world, isolated_state):
    import subprocess
    import sys

    lines = ["cd /sgl-workspace/sglang/python/sglang/srt/models", ":glob '*eagle3*.py'",
             "python3 -c 'import os; print(os.getcwd())'"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "remotedbg", "repl", "-H", "execbox", "--container", "sgl-a"],
        input="".join(line + "\n" for line in lines).encode(), capture_output=True, timeout=120,
        env=dict(os.environ, **exec_world["env"], XDG_STATE_HOME=str(isolated_state)),
    )  # fmt: skip
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr
    assert "llama_eagle3.py" in out  # SGLang 0.5.23's file, only inside the container
    assert "/sgl-workspace/sglang/python/sglang/srt/models\n" in out
    assert _nothing_left(exec_world, boxed) == []


def test_a_vllm_speculative_config_path_is_translated_too(boxed):
    """vLLM names its draft inside the JSON of --speculative-config (parsed with json.loads:
    vllm/engine/arg_utils.py:843-845 of 0.10.1.1, :1864-1866 of 0.33.0; its "model" is the
    draft, 0.33.0 vllm/config/speculative.py:416): read where the host sees the bind mount,
    the container's own path kept."""
    pid, models = boxed["sgl-a"]["pid"], boxed["sgl-a"]["models"]
    config = '{"method": "eagle3", "model": "/models/draft", "num_speculative_tokens": 3}'
    argv = ["vllm", "serve", "/models/target", "--speculative-config", config]
    parsed = server_scan.parse_args(argv)
    server = server_scan._server("process", "vllm", argv, parsed)
    server_scan._place_in_container(server, containers.container_info(pid))
    assert server["spec"]["draft_model"] == str(models / "draft")
    assert server["paths_in_container"]["draft_model"] == "/models/draft"
    assert server["spec"]["target_model"] == str(models / "target")


def test_spec_audit_takes_the_exec_route_and_the_runtimes_log(cli, boxed, exec_world):
    """As the exec route's user: the launch paths still translate (mountinfo is readable), the
    engine code comes through podman exec, and the accept length from `podman logs`."""
    result = cli("playbook", "spec-audit", "-H", "execbox", "--json", env=exec_world["env"],
                 timeout=240)  # fmt: skip
    doc = json.loads(result.stdout)
    servers = {s.get("pid"): s for s in doc["results"]["servers"]["servers"]}
    for name in ("sgl-a", "sgl-b"):
        server = servers[boxed[name]["pid"]]
        assert server["spec"]["draft_model"] == str(boxed[name]["models"] / "draft")
        assert server["log"]["how_found"] == f"podman logs {name}"
        assert server["log"]["figures"]["accept_length"]["values"] == [1.02, 1.02, 1.02]
    # only the two servers made here: another run's container may log the same figure
    ours = {str(boxed[name]["pid"]) for name in ("sgl-a", "sgl-b")}
    low = [f for f in doc["findings"]
           if f["id"] == "accept-length-low" and f["evidence"].get("server") in ours]  # fmt: skip
    assert [f["evidence"]["observed"] for f in low] == [1.02, 1.02]
    assert _nothing_left(exec_world, boxed) == []


# -- diagnose inside containers --------------------------------------------------------------


def test_diagnose_finds_the_cause_of_a_server_in_a_container(cli, boxed):
    """sgl-b's draft holds absolute ids in d2t: SGLang 0.5.23's llama_eagle3.py loader adds
    arange to d2t (`hot_token_id = d2t + arange`), so every target id is off; it is the first
    cause, found with the install inside the container and the draft where the host sees it."""
    pid = boxed["sgl-b"]["pid"]
    result = cli("diagnose", "-H", "testbox", "--server", str(pid), "--no-probe", "--json",
                 timeout=240)  # fmt: skip
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)
    assert doc["server"]["pid"] == pid
    assert doc["server"]["draft"] == str(boxed["sgl-b"]["models"] / "draft")
    assert doc["causes"][0]["id"] == "d2t-absolute-ids"
    # sgl-a (another container, its accept length 1.02 in its log) decides nothing here
    assert str(boxed["sgl-a"]["models"]) not in json.dumps(doc["causes"] + doc["unknown"])
    running = [e for e in doc["engines"] if e.get("running")]
    assert running and all(e["path"].startswith(f"/proc/{pid}/root/sgl-workspace/")
                           for e in running)  # fmt: skip


def test_diagnose_probes_through_the_exec_route(cli, boxed, exec_world):
    """sgl-net answers only inside its own network namespace, and the exec route's user may not
    read the container's /proc/PID/root: the engine code and the probe both go through podman
    exec. The stand-in accepts 3, 2, 3, 1 drafts per verify step (tests/engine_standins.py)."""
    pid = boxed["sgl-net"]["pid"]
    result = cli("diagnose", "-H", "execbox", "--server", str(pid), "--json", "--budget", "60",
                 env=exec_world["env"], timeout=240)  # fmt: skip
    doc = json.loads(result.stdout)
    assert doc["server"]["pid"] == pid and doc["server"]["port"] == 30002
    measured = doc["measured"]
    assert measured["from"].startswith("probe") and 2.0 <= measured["accept_length"] <= 4.0
    assert _nothing_left(exec_world, boxed) == []


def test_container_option_works_over_the_system_ssh_client(cli, boxed, exec_world):
    """--container through `--transport ssh`: the runtime's exec runs on an `ssh -T` of its own,
    with the same executor inside; a missing container reads as over paramiko."""
    env = {**exec_world["env"], "REMOTEDBG_TRANSPORT": "ssh"}
    located = cli("-v", "locate-eagle", "-H", "execbox", "--container", "sgl-b", "--json",
                  env=env, timeout=120)  # fmt: skip
    assert located.returncode == 0, located.stderr
    assert b"through the system ssh client (--transport ssh)" in located.stderr
    [engine] = json.loads(located.stdout)["engines"]
    assert engine["path"] == "/sgl-workspace/sglang/python/sglang" and engine["running"]
    missing = cli("run", "-H", "execbox", "--container", "nosuch", "--", "true", env=env)
    assert missing.returncode == 255
    [line] = missing.stderr.decode().strip().splitlines()
    assert "no container nosuch to enter" in line
    assert _nothing_left(exec_world, boxed) == []
