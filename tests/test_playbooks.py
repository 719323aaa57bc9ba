"""Playbooks end to end through the CLI against the real sshd: verdicts, findings, reports."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from tests.checkpoints import write_eagle3_checkpoint, write_target_config
from tests.engine_trees import write_sglang_checkout, write_vllm_venv
from tests.procs import wait_for


def _set_config(draft: Path, **changes) -> None:
    config = json.loads((draft / "config.json").read_text())
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    (draft / "config.json").write_text(json.dumps(config))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit")
    engine = write_sglang_checkout(root / "engine")
    target = write_target_config(root / "target")
    cfg = json.loads((Path(target) / "config.json").read_text())
    cfg["num_hidden_layers"] = 61
    (Path(target) / "config.json").write_text(json.dumps(cfg))
    drafts = root / "drafts"
    good = write_eagle3_checkpoint(drafts / "good")
    absolute = write_eagle3_checkpoint(drafts / "absolute", defect="absolute")
    direct = write_eagle3_checkpoint(drafts / "direct")
    _set_config(direct, architectures=["LlamaForCausalLMEagle3Direct"])
    extra = write_eagle3_checkpoint(drafts / "extra")
    save_file(
        {"eagle_wrapper.fc.weight": np.zeros((4, 4), dtype=np.float16)},
        str(Path(extra) / "extra.safetensors"),
    )
    llama_target = write_target_config(root / "llama_target")
    cfg = json.loads((Path(llama_target) / "config.json").read_text())
    cfg.update(architectures=["LlamaForCausalLM"], num_hidden_layers=61)
    (Path(llama_target) / "config.json").write_text(json.dumps(cfg))
    aux = write_eagle3_checkpoint(drafts / "aux")
    _set_config(aux, eagle_config=None, eagle_aux_hidden_state_layer_ids=[3, 20, 40])
    return {
        "root": root,
        "engine": engine,
        "target": target,
        "llama_target": llama_target,
        "good": good,
        "absolute": absolute,
        "direct": direct,
        "extra": extra,
        "aux": aux,
    }


def _audit(cli, world, draft_key, *extra, playbook="vocab-audit"):
    result = cli(
        "playbook",
        playbook,
        "-H",
        "testbox",
        "--json",
        "--var",
        f"draft={world[draft_key]}",
        "--var",
        f"target={world['target']}",
        "--var",
        f"roots={world['engine']}",
        *extra,
    )
    return result, json.loads(result.stdout)


def test_correct_box_is_ok_and_says_the_map_is_cleared(cli, world):
    result, doc = _audit(cli, world, "good")
    text = cli(
        "playbook", "vocab-audit", "-H", "testbox", "--var", f"draft={world['good']}",
        "--var", f"target={world['target']}", "--var", f"roots={world['engine']}",
    )  # fmt: skip
    assert text.returncode == 0 and b"OK" in text.stdout
    assert text.stderr == b""  # no progress redraws or blank lines when stderr is a pipe
    assert result.returncode == 0, doc["findings"]
    assert doc["verdict"] == "ok"
    assert "vocab-map-cleared" in {f["id"] for f in doc["findings"]}
    assert not [f for f in doc["findings"] if f["severity"] == "error"]
    assert [s["status"] for s in doc["steps"]] == ["ok"] * 4
    assert doc["drafts"][0]["loader"]["d2t_handling"] == "offsets"
    assert doc["round_trips"] <= 8


@pytest.mark.parametrize(
    "draft,finding_id,code,playbook",
    [
        ("absolute", "d2t-absolute-ids", 1, "vocab-audit"),
        ("direct", "loader-direct-map", 1, "vocab-audit"),
        # weight names and aux layers are spec-audit's, decided from the engine's code: the
        # fixture's loader skips names it has no parameter for; the fixture's target ignores
        # ids stored outside eagle_config. Both are warnings: the verdict stays ok.
        ("extra", "unexpected-weights", 0, "spec-audit"),
        ("aux", "aux-layers-ignored", 0, "spec-audit"),
    ],
)
def test_each_cross_check_raises_its_finding(cli, world, draft, finding_id, code, playbook):
    extra = []
    if playbook == "spec-audit":
        launch = (
            f"python -m sglang.launch_server --model-path {world['llama_target']} "
            f"--speculative-algorithm EAGLE3 --speculative-draft-model-path {world[draft]} "
            "--speculative-num-steps 3"
        )
        extra = ["--var", f"args={launch}", "--var", f"target={world['llama_target']}"]
    result, doc = _audit(cli, world, draft, *extra, playbook=playbook)
    assert finding_id in {f["id"] for f in doc["findings"]}, doc["findings"]
    assert result.returncode == code
    assert doc["verdict"] == ("defect" if code == 1 else "ok")


def test_spec_audit_gives_no_advice_it_has_already_followed(cli, world):
    """vocab-audit clears the map and says what to check next; spec-audit checks those itself,
    so beside its algorithm-mismatch error it must not advise checking the algorithm."""
    _, alone = _audit(cli, world, "good")
    cleared = next(f for f in alone["findings"] if f["id"] == "vocab-map-cleared")
    assert "Next: the server's --speculative-algorithm" in cleared["detail"]
    launch = (
        f"python -m sglang.launch_server --model-path {world['llama_target']} "
        f"--speculative-algorithm EAGLE --speculative-draft-model-path {world['good']}"
    )
    extra = ["--var", f"args={launch}", "--var", f"target={world['llama_target']}"]
    result, doc = _audit(cli, world, "good", *extra, playbook="spec-audit")
    ids = {f["id"] for f in doc["findings"]}
    assert "algorithm-mismatch" in ids and result.returncode == 1, doc["findings"]
    cleared = next(f for f in doc["findings"] if f["id"] == "vocab-map-cleared")
    assert "Next" not in cleared["detail"]


def test_loader_direct_map_names_file_and_collapse(cli, world):
    _, doc = _audit(cli, world, "direct")
    item = next(f for f in doc["findings"] if f["id"] == "loader-direct-map")
    assert "llama_eagle3_direct.py" in item["evidence"]["loader"]
    assert "distinct target ids" in item["detail"]


def test_auto_discovery_audits_every_draft_found(cli, world):
    result = cli(
        "playbook",
        "vocab-audit",
        "-H",
        "testbox",
        "--json",
        "--var",
        f"search={world['root'] / 'drafts'}",
        "--var",
        f"roots={world['engine']}",
    )
    doc = json.loads(result.stdout)
    audited = sorted(Path(d["draft"]).name for d in doc["drafts"])
    assert audited == ["absolute", "aux", "direct", "extra", "good"]
    assert doc["verdict"] == "defect"
    target_step = doc["results"]["target"]
    assert target_step["target"] is None and target_step["skipped"]


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_draft_from_a_running_server(cli, world, tmp_path, engine):
    """With no --var draft or search, what running servers serve is audited: here a server
    whose Python imports the engine named as `roots` (the SGLang checkout it was started in, the
    vLLM venv it runs from); the strangers' servers run other code and are only listed.
    vLLM names the draft in --speculative-config's JSON ("model"; parsed with json.loads,
    vllm/engine/arg_utils.py:843-845 of 0.10.1.1) and the target with --model."""
    target, draft = str(world["target"]), str(world["absolute"])
    python, cwd, root = sys.executable, Path(world["engine"]).parent, str(world["engine"])
    if engine == "sglang":
        launch = ["-m", "sglang.launch_server", "--model-path", target,
                  "--speculative-draft-model-path", draft]  # fmt: skip
        flag = "--speculative-draft-model-path"
    else:
        config = {"method": "eagle3", "model": draft, "num_speculative_tokens": 3}
        launch = ["-m", "vllm.entrypoints.openai.api_server", "--model", target,
                  "--speculative-config", json.dumps(config)]  # fmt: skip
        flag = "--speculative-config model"
        root = str(write_vllm_venv(tmp_path / "venv", python=sys.executable))
        python, cwd = str(tmp_path / "venv" / "bin" / "python3"), Path("/")
    fake = subprocess.Popen([python, "-c", "import time; time.sleep(60)", *launch], cwd=cwd)
    try:
        assert wait_for(lambda: os.path.exists(f"/proc/{fake.pid}"))
        result = cli("playbook", "vocab-audit", "-H", "testbox", "--json", "--var", f"roots={root}")
        doc = json.loads(result.stdout)
        found = {d["path"]: d["how_found"] for d in doc["results"]["drafts"]["drafts"]}
        assert found[draft] == f"running server {flag}"
        by_draft = doc["results"]["target"]["by_draft"]
        assert by_draft[draft] == target
        assert "d2t-absolute-ids" in {f["id"] for f in doc["findings"]}
    finally:
        fake.kill()
        fake.wait()


def test_report_markdown_and_remote_tree_unchanged(cli, world, tmp_path):
    def tree_hash() -> str:
        digest = hashlib.sha256()
        for path in sorted(world["root"].rglob("*")):
            digest.update(str(path).encode())
            if path.is_file():
                digest.update(path.read_bytes())
        return digest.hexdigest()

    before = tree_hash()
    report = tmp_path / "audit.md"
    result, doc = _audit(cli, world, "absolute", "--report", str(report))
    assert tree_hash() == before
    text = report.read_text()
    assert text.startswith("# remotedbg vocab-audit") and "DEFECT" in text
    assert "`d2t-absolute-ids`" in text
    # where it came from: the command, the version, the date, the engine and the loader's lines
    assert "- command: `remotedbg playbook vocab-audit -H testbox --json" in text
    assert re.search(r"- remotedbg \d+\.\d+\.\d+\S*, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", text)
    assert f"at `{world['engine']}`" in text
    loader = (world["engine"] / "srt" / "models" / "llama_eagle3.py").read_text().splitlines()
    line = next(i for i, t in enumerate(loader, 1) if "hot_token_id = loaded_weight" in t)
    assert f"llama_eagle3.py:{line}`: `{loader[line - 1].strip()}`" in text, text[:3000]


def test_nothing_found_is_inconclusive(cli, tmp_path):
    result = cli(
        "playbook",
        "vocab-audit",
        "-H",
        "testbox",
        "--json",
        "--var",
        f"search={tmp_path}",
        "--var",
        f"roots={tmp_path}",
    )
    doc = json.loads(result.stdout)
    assert doc["verdict"] == "inconclusive" and result.returncode == 4


def test_malformed_playbook_names_file_and_line(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: bad\nsteps:\n  - id: one\n    action: locate-engines\n"
        "  - id: two\n    action: rm-rf\n"
    )
    result = cli("playbook", "run", "-H", "testbox", str(bad))
    assert result.returncode == 2
    assert f"{bad}:6:" in result.stderr.decode() and "unknown action" in result.stderr.decode()
    ref = tmp_path / "ref.yaml"
    ref.write_text(
        "name: ref\nsteps:\n  - id: one\n    action: glob\n"
        "    with: {patterns: '${steps.later.x}'}\n"
    )
    result = cli("playbook", "run", "-H", "testbox", str(ref))
    assert result.returncode == 2 and f"{ref}:5:" in result.stderr.decode()
    empty = tmp_path / "empty.yaml"
    empty.write_text("name: empty\nsteps:\n  - id: one\n    action: glob\n    with:\n")
    result = cli("playbook", "run", "-H", "testbox", str(empty))
    assert result.returncode == 2 and b"Traceback" not in result.stderr
    assert f"{empty}:5: expected a mapping" in result.stderr.decode()


def test_writing_step_needs_allow_write(cli, tmp_path):
    user_dir = tmp_path / "mine"
    user_dir.mkdir()
    (user_dir / "poke.yaml").write_text(
        "name: poke\nsteps:\n  - id: echo\n    action: run\n    with: {command: 'echo hi'}\n"
    )
    refused = cli("playbook", "poke", "-H", "testbox", "--playbook-path", str(user_dir))
    assert refused.returncode == 2 and b"--allow-write" in refused.stderr
    allowed = cli(
        "playbook",
        "poke",
        "-H",
        "testbox",
        "--json",
        "--playbook-path",
        str(user_dir),
        "--allow-write",
    )
    assert json.loads(allowed.stdout)["results"]["echo"]["stdout"] == "hi\n"


def test_list_at_80_columns_keeps_each_question_whole(cli):
    listing = json.loads(cli("playbook", "list", "--json").stdout)["playbooks"]
    text = cli("playbook", "list", env={"COLUMNS": "80"}).stdout.decode()
    assert max(len(line) for line in text.splitlines()) <= 80
    tokens = text.split()
    for playbook in listing:
        question = (playbook["description"].split("?")[0] + "?").split()
        found = iter(tokens)
        assert all(word in found for word in question), question  # wrapped at words, never cut
    assert "…" not in text


def test_list_and_show(cli):
    listing = json.loads(cli("playbook", "list", "--json").stdout)
    assert {"vocab-audit", "locate-eagle"} <= {p["name"] for p in listing["playbooks"]}
    shown = json.loads(cli("playbook", "show", "vocab-audit", "--json").stdout)
    assert [s["action"] for s in shown["steps"]] == [
        "locate-engines",
        "find-drafts",
        "find-target",
        "audit-drafts",
    ]
    assert "draft" in shown["variables"]


def test_locate_eagle_playbook_matches_the_command(cli, world):
    via_playbook = json.loads(
        cli(
            "playbook",
            "locate-eagle",
            "-H",
            "testbox",
            "--json",
            "--var",
            f"roots={world['engine']}",
        ).stdout
    )
    via_command = json.loads(
        cli("locate-eagle", "-H", "testbox", "--json", "--root", str(world["engine"])).stdout
    )
    engines = via_playbook["results"]["engines"]
    assert engines["engines"] == via_command["engines"]
    assert [m["d2t_handling"] for m in engines["draft_models"]] == [
        m["d2t_handling"] for m in via_command["draft_models"]
    ]


def test_demo_runs_without_a_box(cli):
    result = cli("demo", "--json", timeout=120)
    doc = json.loads(result.stdout)
    assert result.returncode == 0 and doc["as_expected"]
    assert doc["audits"]["bad"]["verdict"] == "defect"
    assert not os.path.exists(doc["box"]["good"])  # cleaned up


def test_demo_text_teaches_and_its_commands_paste(cli):
    result = cli("demo", "--keep", timeout=120)
    text = result.stdout.decode()
    assert result.returncode == 0, result.stderr
    shown = [line[2:] for line in text.splitlines() if line.startswith("$ remotedbg ")]
    titles = [line for line in text.splitlines() if line.startswith(("1/2", "2/2"))]
    assert len(shown) == 2 and len(titles) == 2 and titles[0][:40] != titles[1][:40]
    assert "what you just saw" in text and "Now run it on your box" in text
    try:
        pasted = [cli(*shlex.split(command)[1:], timeout=120) for command in shown]
        assert [p.returncode for p in pasted] == [0, 1]  # ok, then the d2t defect
        assert b"d2t-absolute-ids" in pasted[1].stdout
    finally:
        draft = shlex.split(shown[0])[shlex.split(shown[0]).index("--var") + 1]
        shutil.rmtree(draft.split("=", 1)[1].rsplit("/models/", 1)[0], ignore_errors=True)


def test_loader_is_taken_from_the_install_pointed_at_then_the_running_one():
    """--var roots is what the user asked for: it wins over an install a server happens to run
    (a box can run another SGLang than the one under audit)."""
    from remotedbg.actions.audit import loader_for

    def install(path, how, running, handling):
        engine = {
            "name": "sglang",
            "version": "x",
            "path": path,
            "how_found": how,
            "running": running,
        }
        model = {
            "install": path,
            "relative_path": "srt/models/llama_eagle3.py",
            "path": f"{path}/srt/models/llama_eagle3.py",
            "evidence": [],
            "entry_classes": ["LlamaForCausalLMEagle3"],
            "classes": [{"name": "LlamaForCausalLMEagle3", "d2t_handling": handling}],
            "architectures": ["LlamaForCausalLMEagle3"],
            "d2t_handling": handling,
        }
        return engine, model

    system = install("/usr/lib/sglang", ["site-packages:/usr/bin/python3"], [], "direct")
    mine = install("/home/me/sglang", ["root-arg"], [], "offsets")
    served = install("/opt/venv/sglang", ["process:42"], [42], "unknown")
    arch = ["LlamaForCausalLMEagle3"]
    located = {"engines": [system[0], mine[0]], "draft_models": [system[1], mine[1]]}
    assert loader_for(arch, located)["path"].startswith("/home/me/sglang")
    located["engines"].append(served[0])
    located["draft_models"].append(served[1])
    assert loader_for(arch, located)["path"].startswith("/home/me/sglang")
    located["engines"].remove(mine[0])
    assert loader_for(arch, located)["path"].startswith("/opt/venv/sglang")
    assert loader_for(arch, located, "/usr/lib/sglang")["path"].startswith("/usr/lib/sglang")


def test_report_sections_follow_the_declaration_not_the_step_ids(cli, world, tmp_path):
    """A copy of vocab-audit with its steps renamed still reports the draft and the engine,
    because its `report:` says where they are; a section naming a missing step or a step of
    another action is refused before anything runs."""
    shipped = (Path(__file__).parent.parent / "playbooks" / "vocab-audit.yaml").read_text()
    renamed = (
        shipped.replace("name: vocab-audit", "name: renamed-audit")
        .replace("id: audit", "id: check_drafts")
        .replace("id: engines", "id: installs")
        .replace("steps.engines", "steps.installs")
        .replace("report: {engines: engines, drafts: audit}", "")
    )
    renamed += "report: {engines: installs, drafts: check_drafts}\n"
    user_dir = tmp_path / "mine"
    user_dir.mkdir()
    (user_dir / "renamed-audit.yaml").write_text(renamed)
    report = tmp_path / "r.md"
    args = [
        "--playbook-path",
        str(user_dir),
        "--var",
        f"draft={world['absolute']}",
        "--var",
        f"target={world['target']}",
        "--var",
        f"roots={world['engine']}",
    ]
    result = cli(
        "playbook", "renamed-audit", "-H", "testbox", "--json", *args, "--report", str(report)
    )
    doc = json.loads(result.stdout)
    assert result.returncode == 1
    assert [d["draft"] for d in doc["drafts"]] == [str(world["absolute"])]
    text = report.read_text()
    assert f"- draft `{world['absolute']}`" in text and f"at `{world['engine']}`" in text
    shown = cli("playbook", "show", "renamed-audit", "--playbook-path", str(user_dir), "--json")
    assert json.loads(shown.stdout)["report"] == {"engines": "installs", "drafts": "check_drafts"}

    for bad, message in (
        ("report: {drafts: audit_gone}\n", "names no step 'audit_gone'"),
        ("report: {drafts: installs}\n", "step 'installs' runs locate-engines"),
        ("report: {graphs: installs}\n", "unknown report section 'graphs'"),
    ):
        broken = renamed.replace("report: {engines: installs, drafts: check_drafts}\n", bad)
        (user_dir / "renamed-audit.yaml").write_text(broken)
        refused = cli("playbook", "renamed-audit", "-H", "testbox", *args)
        assert refused.returncode == 2, refused.stderr
        assert message in refused.stderr.decode()
        assert str(user_dir / "renamed-audit.yaml") + ":" in refused.stderr.decode()


@pytest.mark.parametrize("form", ["compact", "short-equals"])
def test_vocab_audit_of_a_vllm_server_launched_with_compact_json(
    cli, world, standin, form, tmp_path
):
    """`vllm serve` as scripts start it: --speculative-config's JSON without spaces (one argv
    element, its quotes its own), or `-sc={...}` (0.33.0 vllm/engine/arg_utils.py:1866). The
    served draft is found from the running process alone (no --var draft) and audited."""
    target, draft = str(world["target"]), str(world["absolute"])
    config = {"method": "eagle3", "model": draft, "num_speculative_tokens": 3}
    if form == "compact":
        spec = ["--speculative-config", json.dumps(config, separators=(",", ":"))]
    else:
        spec = ["-sc=" + json.dumps(config)]
    # the server's Python imports a vLLM tree (the shim is a copy of one): found through it
    vllm = write_vllm_venv(tmp_path / "venv")
    server = standin("vllm", args=["--model", target, *spec], engine_tree=vllm)
    result = cli("playbook", "vocab-audit", "-H", "testbox", "--json")
    doc = json.loads(result.stdout)
    drafts = {d["path"]: d for d in doc["results"]["drafts"]["drafts"]}
    assert drafts[draft]["how_found"] == "running server --speculative-config model"
    assert server.pid in drafts[draft]["pids"]
    assert doc["results"]["target"]["by_draft"][draft] == target
    assert "d2t-absolute-ids" in {f["id"] for f in doc["findings"]}


def test_spec_audit_reads_a_vllm_log_as_vllm(cli, world, tmp_path):
    """spec-audit --var log=PATH on a vLLM log (lines rendered from vLLM 0.33.0's own format
    strings): the server is vLLM's, its draft and steps come from the non-default args line."""
    from tests.releases import release
    from tests.test_server_scan import write_vllm_log

    log = tmp_path / "vllm.log"
    write_vllm_log(release("vllm", "0.33.0"), log)
    result = cli(
        "playbook", "spec-audit", "-H", "testbox", "--json", "--var", f"log={log}",
        "--var", f"roots={world['engine']}", "--var", "search_home=false",
    )  # fmt: skip
    doc = json.loads(result.stdout)
    [server] = [s for s in doc["results"]["servers"]["servers"] if s.get("source") == "--var log"]
    assert server["engine"] == "vllm"
    assert (server["spec"]["draft_model"], server["spec"]["num_steps"]) == ("/m/d", 3)
    assert server["log"]["figures"]["per_position_last"] == [0.1, 0.02, 0.0]


def test_a_report_replaces_a_planted_symlink_instead_of_writing_through_it(cli, world, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    report = tmp_path / "report.md"
    report.symlink_to(victim)
    result = cli("playbook", "locate-eagle", "-H", "testbox", "--var", f"roots={world['engine']}",
                 "--report", str(report))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "keep me\n"
    assert not report.is_symlink() and report.read_text().startswith("# remotedbg locate-eagle")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []


def test_ctrl_c_stops_the_playbook_not_just_its_step(box, isolated_state, tmp_path):
    """Ctrl-C during a step ends the whole playbook with 130: the later steps do not run (it was
    one step's 'failed: interrupted' and the playbook went on) and the remote command stops."""
    import signal
    import time

    token = f"pb-sleep-{os.getpid()}"
    marker = tmp_path / "second-step-ran"
    user_dir = tmp_path / "mine"
    user_dir.mkdir()
    (user_dir / "two.yaml").write_text(
        "name: two\nsteps:\n"
        f"  - id: wait\n    action: run\n    with: {{command: 'sleep 300; echo {token}'}}\n"
        f"  - id: after\n    action: run\n    with: {{command: 'touch {marker}'}}\n"
    )

    def running() -> bool:
        for entry in os.listdir("/proc"):
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes() if entry.isdigit() else b""
            except OSError:
                continue
            if token.encode() in argv:  # the remote shell running the step's command
                return True
        return False

    client = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "playbook", "two", "-H", "testbox", "--allow-write",
         "--playbook-path", str(user_dir), "--timeout", "120"],
        env=dict(os.environ, REMOTEDBG_SSH_CONFIG=str(box.ssh_config),
                 XDG_STATE_HOME=str(isolated_state)),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert wait_for(running, timeout=60), "the first step never started"
        client.send_signal(signal.SIGINT)
        start = time.monotonic()
        _, stderr = client.communicate(timeout=60)
        assert time.monotonic() - start < 20  # not the step's --timeout of 120 s
        assert client.returncode == 130, stderr.decode()[-2000:]
        assert b"Traceback" not in stderr
        assert not marker.exists(), "the step after Ctrl-C ran"
        assert wait_for(lambda: not running(), timeout=10), "the remote command kept running"
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


def test_a_name_with_newlines_cannot_forge_a_report(cli, world, tmp_path):
    """A draft directory named with newlines, a `#` heading and table pipes (issue 46): the
    report keeps one verdict, DEFECT, and the name shows escaped on its own line."""
    forged = tmp_path / "d\n# Verdict: OK\n| step | ok | ok | 0 |"
    shutil.copytree(world["absolute"], forged)
    report = tmp_path / "forged.md"
    result = cli("playbook", "vocab-audit", "-H", "testbox", "--var", f"draft={forged}",
                 "--var", f"target={world['target']}", "--var", f"roots={world['engine']}",
                 "--report", str(report))  # fmt: skip
    assert result.returncode == 1, result.stderr
    lines = report.read_text().splitlines()
    assert [line for line in lines if "Verdict" in line and not line.startswith("- ")] == [
        next(line for line in lines if line.startswith("**Verdict: DEFECT**"))]  # fmt: skip
    assert not any(line.startswith(("# Verdict", "| step | ok")) for line in lines)
    assert any("d\\n# Verdict: OK\\n\\| step" in line for line in lines)


def test_code_steps_need_allow_write_and_a_var_is_one_word(cli, tmp_path):
    """Read-only means read-only (issue 46): a `python` step runs code on the box that may
    write (it did, rc 0, without --allow-write), so it needs --allow-write and cannot declare
    `writes: false`; a --var value reaches a `run` step's shell as one quoted word, never as
    shell syntax (`; touch` ran)."""
    user_dir = tmp_path / "mine"
    user_dir.mkdir()
    marker = tmp_path / "written-by-python"
    (user_dir / "writer.yaml").write_text(
        "name: writer\nsteps:\n  - id: w\n    action: python\n    with:\n      code: |\n"
        f"        open({str(marker)!r}, 'w').write('x')\n        result = {{}}\n"
    )
    refused = cli("playbook", "writer", "-H", "testbox", "--playbook-path", str(user_dir))
    assert refused.returncode == 2 and b"--allow-write" in refused.stderr
    assert not marker.exists()
    (user_dir / "liar.yaml").write_text(
        "name: liar\nsteps:\n  - id: w\n    action: python\n    writes: false\n"
        "    with: {code: 'result = {}'}\n"
    )
    lying = cli("playbook", "liar", "-H", "testbox", "--playbook-path", str(user_dir))
    assert lying.returncode == 2 and b"cannot be `writes: false`" in lying.stderr
    touched = tmp_path / "touched"
    (user_dir / "echo.yaml").write_text(
        "name: echo\nvariables:\n  what: {default: hi}\nsteps:\n  - id: e\n    action: run\n"
        "    with: {command: 'echo ${what}'}\n"
    )
    hostile = f"x; touch {touched}"
    ran = cli("playbook", "echo", "-H", "testbox", "--json", "--playbook-path", str(user_dir),
              "--allow-write", "--var", f"what={hostile}")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["results"]["e"]["stdout"] == hostile + "\n"
    assert not touched.exists()


def test_a_playbook_others_may_write_or_a_shadow_of_a_shipped_one_is_not_run(cli, tmp_path):
    """Nothing another user controls decides (issue 46): a `vocab-audit.yaml` in a
    world-writable --playbook-path does not replace the shipped one; a playbook found only
    there is refused in one line; the user's own file of a shipped name runs only by its path."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    fake = "name: vocab-audit\nsteps:\n  - id: g\n    action: glob\n    with: {patterns: ['/']}\n"
    (shared / "vocab-audit.yaml").write_text(fake)
    (shared / "theirs.yaml").write_text(fake.replace("vocab-audit", "theirs"))
    shown = cli("playbook", "show", "vocab-audit", "--playbook-path", str(shared), "--json")
    assert shown.returncode == 0 and str(shared) not in shown.stdout.decode()
    theirs = cli("playbook", "show", "theirs", "--playbook-path", str(shared))
    assert theirs.returncode == 2 and b"is writable by other users" in theirs.stderr
    assert len(theirs.stderr.decode().strip().splitlines()) == 1
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "vocab-audit.yaml").write_text(fake)
    shadow = cli("playbook", "show", "vocab-audit", "--playbook-path", str(mine))
    assert shadow.returncode == 2 and b"run it by its path" in shadow.stderr
    by_path = cli("playbook", "show", str(mine / "vocab-audit.yaml"), "--json")
    assert by_path.returncode == 0, by_path.stderr


def test_a_python_tag_in_a_playbook_is_a_line_not_a_traceback(cli, tmp_path):
    playbook = tmp_path / "tagged.yaml"
    playbook.write_text("name: tagged\nsteps:\n  - id: g\n    action: glob\n"
                        "    with: {patterns: !!python/object:os.system [echo hi]}\n")  # fmt: skip
    result = cli("playbook", "show", str(playbook))
    assert result.returncode == 2
    assert result.stderr.decode().strip().splitlines() == [
        f"remotedbg: {playbook}:5: could not determine a constructor for the tag "
        "'tag:yaml.org,2002:python/object:os.system'"]  # fmt: skip


def test_a_report_onto_a_full_device_or_a_missing_folder_is_one_line(cli, world, tmp_path):
    """--report onto a full disk ended in a traceback (issue 46); onto a device it replaced
    the device node with a regular file. A device is written into, as `>` would; a failure is
    one line, exit 2. Root makes its own full device in tmp_path (CI runs as root): a
    regression then replaces that node, never /dev/full."""
    full = Path("/dev/full")
    if os.geteuid() == 0:
        full = tmp_path / "full"
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    missing = tmp_path / "no-such-folder" / "r.md"
    for target, why in ((full, "No space left on device"), (missing, "No such file or directory")):
        result = cli("playbook", "vocab-audit", "-H", "testbox", "--var", f"draft={world['good']}",
                     "--var", f"target={world['target']}", "--var", f"roots={world['engine']}",
                     "--report", str(target))  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert result.stderr.decode().strip().splitlines()[-1] == (
            f"remotedbg: cannot write {target}: {why}")
    assert stat.S_ISCHR(full.stat().st_mode)
