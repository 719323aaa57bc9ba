"""Engines beyond SGLang and vLLM (issue 44): a launch of an engine no profile knows is read by
no engine's rules; forks are named as forks; LMDeploy has a profile of its own."""

from __future__ import annotations

import json

import pytest

from remotedbg.agent.server_scan import scan_servers
from tests.test_spec_checks import spec_world  # noqa: F401  (fixture)

# TensorRT-LLM's server program with another engine's flags: an engine remotedbg has no
# profile for (TokenSpeed, which issue 44 quoted here, has one now)
UNKNOWN_LAUNCH = ("trtllm-serve {target} --speculative-algorithm EAGLE3 "
                  "--speculative-draft-model {draft} --speculative-num-draft-tokens 3")  # fmt: skip


def _given(line: str) -> dict:
    (server,) = scan_servers({"args": line, "processes": False})["servers"]
    return server


def test_a_launch_no_profile_matches_is_read_by_no_engine():
    server = _given(UNKNOWN_LAUNCH.format(target="/m/t", draft="/m/d"))
    assert server["engine"] is None
    # SGLang's flag names are not read into settings: they are another engine's
    assert server["spec"]["algorithm"] is None and server["spec"]["num_draft_tokens"] is None
    (note,) = [n for n in server["notes"] if n.startswith("engine unknown")]
    assert "trtllm-serve /m/t" in note and "--speculative-num-draft-tokens" in note


def test_the_agent_s_messages_name_the_engines_the_profiles_know():
    """The agent cannot import the profiles: their labels travel with the scan's knowledge, so
    its messages name every engine a profile was written for, not two."""
    from remotedbg.engines.knowledge import server_scan_knowledge

    knowledge = server_scan_knowledge()
    assert knowledge["engine_labels"] == ["SGLang", "vLLM", "LMDeploy", "Aphrodite", "TokenSpeed"]
    scan = scan_servers({"processes": False, "knowledge": knowledge})
    assert scan["notes"] == ["no SGLang, vLLM, LMDeploy, Aphrodite or TokenSpeed server process "
                             "running, and no --var log/args given"]  # fmt: skip
    given = scan_servers({"args": UNKNOWN_LAUNCH.format(target="/m/t", draft="/m/d"),
                          "processes": False, "knowledge": knowledge})  # fmt: skip
    (note,) = [n for n in given["servers"][0]["notes"] if n.startswith("engine unknown")]
    assert note.endswith("(SGLang, vLLM, LMDeploy, Aphrodite or TokenSpeed): its flags were not "
                         "read")  # fmt: skip


def test_a_line_of_flags_alone_is_the_engine_whose_own_flags_it_uses():
    sglang = _given("--model-path /m/t --speculative-algorithm EAGLE3 "
                    "--speculative-draft-model-path /m/d --speculative-num-steps 3")  # fmt: skip
    assert sglang["engine"] == "sglang" and sglang["spec"]["draft_model"] == "/m/d"
    vllm = _given('--model /m/t --speculative-config {"method":"eagle3","model":"/m/d"}')
    assert vllm["engine"] == "vllm" and vllm["spec"]["algorithm"] == "eagle3"
    # flags SGLang and LMDeploy both take say neither
    shared = _given("--speculative-algorithm eagle3 --speculative-draft-model /m/d")
    assert shared["engine"] is None and shared["spec"]["draft_model"] is None


def test_spec_audit_of_an_unknown_engine_is_inconclusive_not_an_sglang_error(cli, spec_world):  # noqa: F811
    line = UNKNOWN_LAUNCH.format(target=spec_world["target"], draft=spec_world["good"])
    result = cli("playbook", "spec-audit", "-H", "testbox", "--json", "--var", f"args={line}",
                 "--var", f"draft={spec_world['good']}", "--var", f"roots={spec_world['engine']}",
                 timeout=180)  # fmt: skip
    doc = json.loads(result.stdout)
    errors = [f["id"] for f in doc["findings"] if f["severity"] == "error"]
    assert errors == [] and doc["verdict"] == "inconclusive", doc["findings"]
    assert result.returncode == 4
    assert "engine unknown" in json.dumps(doc["inconclusive"]) and "trtllm-serve" in json.dumps(
        doc["inconclusive"])


# ---------------------------------------------------------------------------------- forks
@pytest.fixture(scope="module")
def kt_world(tmp_path_factory):
    """KTransformers' SGLang fork as the registry ships it: package `sglang`, dist-info
    `sglang_kt-0.7.2.dist-info` (Name: sglang-kt), its sglang/version.py reading the version of
    a distribution named `sglang` (which is not installed)."""
    from tests.checkpoints import write_eagle3_checkpoint, write_target_config
    from tests.releases import ReleaseUnavailable, release

    try:
        kt = release("sglang-kt", "0.7.2")
    except ReleaseUnavailable as exc:
        pytest.skip(str(exc))
    root = tmp_path_factory.mktemp("kt")
    return {"release": kt, "target": write_target_config(root / "target"),
            "draft": write_eagle3_checkpoint(root / "draft")}  # fmt: skip


def test_locate_eagle_names_a_fork_by_its_distribution(cli, kt_world):
    rel = kt_world["release"]
    result = cli("locate-eagle", "-H", "testbox", "--root", str(rel.package), timeout=180)
    out = result.stdout.decode()
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "sglang-kt 0.7.2, a fork of SGLang" in out
    doc = json.loads(cli("locate-eagle", "-H", "testbox", "--root", str(rel.package), "--json",
                         timeout=180).stdout)  # fmt: skip
    (engine,) = doc["engines"]
    assert engine["fork"] == {"distribution": "sglang-kt", "version": "0.7.2", "of": "sglang"}


def test_a_fork_s_draft_settings_come_from_its_own_code(cli, kt_world):
    """No --speculative-num-steps, a DeepseekV3 target: sglang-kt 0.7.2 picks 3/1/4
    (sglang/srt/server_args.py:6965 auto_choose_speculative_params, the DeepseekV3 branch
    returning (3, 1, 4) at :6994), where the oldest SGLang rule (5/4/8) was taken before."""
    rel = kt_world["release"]
    line = (f"python -m sglang.launch_server --model-path {kt_world['target']} "
            f"--speculative-algorithm EAGLE3 --speculative-draft-model-path {kt_world['draft']}")
    result = cli("playbook", "spec-audit", "-H", "testbox", "--json", "--var", f"args={line}",
                 "--var", f"roots={rel.package}", timeout=240)  # fmt: skip
    doc = json.loads(result.stdout)
    (said,) = [f for f in doc["findings"] if f["id"] == "draft-settings"]
    assert said["title"] == ("sglang-kt 0.7.2, a fork of SGLang chooses steps 3, topk 1, "
                             "4 draft tokens"), said  # fmt: skip
    assert "srt/server_args.py:6994" in said["detail"] and "None" not in said["detail"]


# ------------------------------------------------------------------------------- LMDeploy
LMDEPLOY_LAUNCH = (
    "lmdeploy serve api_server {target} --speculative-algorithm eagle3 "
    "--speculative-draft-model {draft} --speculative-num-draft-tokens 3"
)


def _complete_eagle3(directory, architecture: str, defect: str | None = None):
    """An EAGLE-3 draft with every tensor of a SpecForge checkpoint: the compact test one plus
    the embedding and the midlayer's k/v/o, gate/up and post-attention norm, which LMDeploy's
    Eagle3LlamaDecoderLayer holds (0.18.0 lmdeploy/pytorch/models/llama_eagle3.py:19-80), and
    tie_word_embeddings false as SpecForge writes it."""
    import numpy as np
    from safetensors.numpy import save_file

    from tests.checkpoints import write_eagle3_checkpoint

    draft = write_eagle3_checkpoint(directory, defect=defect)
    config = json.loads((draft / "config.json").read_text())
    config.update(architectures=[architecture], tie_word_embeddings=False)
    (draft / "config.json").write_text(json.dumps(config))
    extra = {f"midlayer.{name}.weight": np.zeros((64, 64), dtype=np.float16) for name in (
        "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
        "mlp.up_proj", "post_attention_layernorm")}  # fmt: skip
    extra["embed_tokens.weight"] = np.zeros((16, 64), dtype=np.float16)
    save_file(extra, str(draft / "extra.safetensors"))
    return draft


@pytest.fixture(scope="module")
def lmdeploy_world(tmp_path_factory):
    """lmdeploy 0.18.0 from the registry (the newest release; EAGLE-3 in its PyTorch engine), a
    32-layer Llama target, and drafts: LlamaForCausalLM (renamed Eagle3LlamaForCausalLM under
    eagle3: configurations/llama.py:20), SpecForge's LlamaForCausalLMEagle3, and absolute d2t."""
    from tests.releases import ReleaseUnavailable, release

    try:
        rel = release("lmdeploy", "0.18.0")
    except ReleaseUnavailable as exc:
        pytest.skip(str(exc))
    root = tmp_path_factory.mktemp("lmdeploy")
    target = _llama_target(root / "target")
    return {"release": rel, "target": target,
            "good": _complete_eagle3(root / "good", "LlamaForCausalLM"),
            "specforge": _complete_eagle3(root / "specforge", "LlamaForCausalLMEagle3"),
            "absolute": _complete_eagle3(root / "absolute", "LlamaForCausalLM", "absolute")}


def _spec_audit(cli, world, line: str) -> tuple[int, dict]:
    """spec-audit of a launch line, searching only the world's release."""
    result = cli("playbook", "spec-audit", "-H", "testbox", "--json", "--var", f"args={line}",
                 "--var", f"roots={world['release'].package}", timeout=240)  # fmt: skip
    assert result.stdout, result.stderr.decode()[-2000:]
    return result.returncode, json.loads(result.stdout)


def _llama_target(directory, **extra):
    """A 32-layer LlamaForCausalLM target config."""
    from tests.checkpoints import write_target_config

    target = write_target_config(directory)
    config = json.loads((target / "config.json").read_text())
    config.update(architectures=["LlamaForCausalLM"], num_hidden_layers=32, **extra)
    (target / "config.json").write_text(json.dumps(config))
    return target


def _located(cli, world) -> tuple[dict, dict[str, str]]:
    """locate-eagle --json on the world's release: (its one engine, draft file -> d2t
    handling)."""
    result = cli("locate-eagle", "-H", "testbox", "--root", str(world["release"].package),
                 "--json", timeout=180)  # fmt: skip
    doc = json.loads(result.stdout)
    (engine,) = doc["engines"]
    return engine, {m["relative_path"]: m["d2t_handling"] for m in doc["draft_models"]}


def _clean_row(code: int, doc: dict) -> dict:
    """The audit of a correct setup: ok, exit 0; its draft's spec row."""
    assert doc["verdict"] == "ok" and code == 0, (doc["findings"], doc.get("inconclusive"))
    (row,) = [r for r in doc["results"]["spec"]["spec"] if r["draft"]]
    return row


def _lmdeploy_audit(cli, world, draft: str) -> tuple[int, dict]:
    return _spec_audit(cli, world, LMDEPLOY_LAUNCH.format(target=world["target"],
                                                          draft=world[draft]))


def test_locate_eagle_finds_lmdeploy_and_how_its_loader_uses_d2t(cli, lmdeploy_world):
    """Its EAGLE-3 Llama loader adds arange(draft_vocab_size) to d2t (0.18.0
    lmdeploy/pytorch/models/llama_eagle3.py:291-296): offsets."""
    engine, handling = _located(cli, lmdeploy_world)
    assert engine["name"] == "lmdeploy" and engine["version"] == "0.18.0"
    assert engine["label"] == "LMDeploy 0.18.0"
    assert handling["pytorch/models/llama_eagle3.py"] == "offsets"
    # the Kimi-K2.5 MLA head tests a name derived from the loop's key (`name =
    # checkpoint_name.removeprefix('model.')`, kimi_k25_eagle3.py:514-518) and adds
    # arange(draft_vocab_size) to d2t before loading it into draft_id_to_target_id (:523-528)
    assert handling["pytorch/models/kimi_k25_eagle3.py"] == "offsets"
    # module_map.py:327-336 maps the EAGLE-3 architectures to their classes
    assert engine["registry"]["Eagle3LlamaForCausalLM"] == ["llama_eagle3",
                                                            "Eagle3LlamaForCausalLM"]


def test_a_correct_lmdeploy_eagle3_setup_is_clean(cli, lmdeploy_world):
    row = _clean_row(*_lmdeploy_audit(cli, lmdeploy_world, "good"))
    assert row["engine"] == "lmdeploy"
    assert row["draft_class"] == "pytorch/models/llama_eagle3.py:Eagle3LlamaForCausalLM"
    # LMDeploy captures (2, L // 2, L - 3) of a Llama target (configurations/llama.py:25-28)
    facts = row["checks"]["aux-layers-mismatch"]["facts"]
    assert facts["layers_to_capture"] == [2, 16, 29]


def test_lmdeploy_names_specforge_s_architecture_spelling(cli, lmdeploy_world):
    """LlamaForCausalLMEagle3 is not renamed (configurations/llama.py:11 takes LlamaForCausalLM
    only) and MODULE_MAP has no entry for it: RuntimeError at start (models/patch.py:189-196)."""
    code, doc = _lmdeploy_audit(cli, lmdeploy_world, "specforge")
    errors = {f["id"]: f for f in doc["findings"] if f["severity"] == "error"}
    assert set(errors) == {"draft-arch-unsupported"} and code == 1, doc["findings"]
    said = errors["draft-arch-unsupported"]
    assert "LMDeploy cannot map" in said["title"] and "LlamaForCausalLMEagle3" in said["title"]
    assert "SGLang" not in json.dumps(doc["findings"])


def test_an_absolute_d2t_draft_for_lmdeploy_is_caught(cli, lmdeploy_world):
    """The checkpoint's own defect is the only error: LMDeploy adds arange to d2t
    (llama_eagle3.py:291-296), and no other engine's rule is applied to its launch."""
    code, doc = _lmdeploy_audit(cli, lmdeploy_world, "absolute")
    errors = {f["id"] for f in doc["findings"] if f["severity"] == "error"}
    assert errors == {"d2t-absolute-ids"} and code == 1, doc["findings"]
    assert {r["engine"] for r in doc["results"]["spec"]["spec"]} == {"lmdeploy"}


# What a speculating server prints and exports, as each release writes them; a stand-in started
# with the engine's real launch form writes its log line to stdout (a file) and answers /metrics.
STANDIN = '''\
"""`python -m PACKAGE ... PORT_FLAG N`: prints LOG_LINE, answers /metrics with METRICS, 404
else; serves no model."""
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

PORT_FLAG, LOG_LINE, METRICS = {port_flag!r}, {log_line!r}, {metrics!r}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/metrics":
            self.send_error(404)
            return
        body = METRICS.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


print(LOG_LINE, flush=True)
port = int(sys.argv[sys.argv.index(PORT_FLAG) + 1])
HTTPServer(("127.0.0.1", port), Handler).serve_forever()
'''
# LMDeploy 0.18.0's stat line: its SpecDecoding figures (lmdeploy/metrics/loggers.py:75-94, the
# mean acceptance length 1 + accepted / drafts, :84) after its throughput (:110-127); 53
# accepted of 90 drafted in 30 drafts of 3 tokens: 1 + 53 / 30 = 2.77
LMDEPLOY_LOG = (
    "[2026-12-06 09:00:00 DP0] Avg thr (in/out): 12.0 / 101.1 tokens/s, Server "
    "(succeeded/failed/routed/waiting): 4 / 0 / 4 / 0, Engine (running/waiting): 1 / 0, KV cache: "
    "3.0%, SpecDecoding metrics: Draft acceptance rate: 58.89%, Mean acceptance length: 2.77, "
    "Accepted: 53 tokens, Drafted: 90 tokens, Per-position acceptance rate: 0.800, 0.567, 0.400"
)
# its counters (loggers.py:215-228), served at /metrics by default (cli/utils.py:750-755)
LMDEPLOY_METRICS = (
    'lmdeploy:spec_decode_num_drafts_total{model_name="t"} 30.0\n'
    'lmdeploy:spec_decode_num_draft_tokens_total{model_name="t"} 90.0\n'
    'lmdeploy:spec_decode_num_accepted_tokens_total{model_name="t"} 53.0\n'
)


def _run_standin(tmp_path, release, line: str, port_flag: str, log_line: str, metrics: str):
    """The stand-in run as `python -m <line>` through a copy of the release (its __init__
    emptied: the stand-in imports no torch), its stdout a file; (process, port)."""
    import shutil
    import subprocess
    import sys

    from tests.conftest import free_port
    from tests.procs import wait_for

    shim = tmp_path / "shim"
    package = shim / release.package_name
    shutil.copytree(release.package, package)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(STANDIN.format(port_flag=port_flag, log_line=log_line,
                                                        metrics=metrics))  # fmt: skip
    port = free_port()
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 (the server's stdout)
    server = subprocess.Popen([sys.executable, "-m", *line.split(), port_flag, str(port)],
                              cwd=shim, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)  # fmt: skip
    log.close()
    assert wait_for(lambda: server.poll() is None and _listening(port), timeout=10)
    return server, port, package


def test_a_running_lmdeploy_server_is_found_and_judged_by_its_own_rules(
    cli, lmdeploy_world, tmp_path
):
    """Started with LMDeploy's real launch form; its acceptance is read from its stat line and
    its /metrics counters as SGLang's and vLLM's are."""
    line = LMDEPLOY_LAUNCH.format(target=lmdeploy_world["target"], draft=lmdeploy_world["good"])
    server, port, package = _run_standin(tmp_path, lmdeploy_world["release"], line,
                                         "--server-port", LMDEPLOY_LOG, LMDEPLOY_METRICS)
    try:
        result = cli("playbook", "spec-audit", "-H", "testbox", "--json", "--var",
                     f"roots={package}", "--var", f"server={server.pid}",
                     timeout=240)  # fmt: skip
        doc = json.loads(result.stdout)
        (found,) = [s for s in doc["results"]["servers"]["servers"] if s.get("pid") == server.pid]
        assert found["engine"] == "lmdeploy" and found["spec"]["port"] == port
        assert found["spec"]["draft_model"] == str(lmdeploy_world["good"])
        assert found["spec"]["num_steps"] == 3  # N draft tokens are N steps (cli/utils.py:100)
        figures = found["log"]["figures"]
        assert figures["accept_length"]["last"] == 2.77 and figures["throughput"]["last"] == 101.1
        assert found["log"]["engine"] == "lmdeploy"  # its line, though vLLM's figures are in it
        assert found["metrics"]["spec_accept_length"] == round(1 + 53 / 30, 4)
        assert found["metrics"]["spec_accept_rate"] == round(53 / 90, 4)
        # nothing wrong, and its acceptance read: 2.77 of a ceiling of 4
        assert [f for f in doc["findings"] if f["severity"] == "error"] == []
        assert doc["verdict"] == "ok" and result.returncode == 0, doc["inconclusive"]
    finally:
        server.kill()
        server.wait()


def _listening(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


# ------------------------------------------------------------------------------- Aphrodite
@pytest.fixture(scope="module")
def aphrodite_world(tmp_path_factory):
    """aphrodite-engine 0.22.0 from the registry (package `aphrodite`, a vLLM fork), a Llama
    target and SpecForge-spelled drafts, which its registry maps (0.22.0
    aphrodite/model_executor/models/registry.py:618 LlamaForCausalLMEagle3 -> llama_eagle3)."""
    from tests.releases import ReleaseUnavailable, release

    try:
        rel = release("aphrodite-engine", "0.22.0")
    except ReleaseUnavailable as exc:
        pytest.skip(str(exc))
    root = tmp_path_factory.mktemp("aphrodite")
    world = {"release": rel,
             "target": _llama_target(root / "target", max_position_embeddings=4096)}
    for name, defect in (("good", None), ("absolute", "absolute")):
        draft = _complete_eagle3(root / name, "LlamaForCausalLMEagle3", defect)
        config = json.loads((draft / "config.json").read_text())
        config["max_position_embeddings"] = 4096
        (draft / "config.json").write_text(json.dumps(config))
        world[name] = draft
    return world


def _aphrodite_audit(cli, world, draft: str) -> tuple[int, dict]:
    settings = json.dumps({"method": "eagle3", "model": str(world[draft]),
                           "num_speculative_tokens": 3})  # fmt: skip
    return _spec_audit(cli, world, f"aphrodite run {world['target']} --speculative-config "
                       f"{settings}")


def test_locate_eagle_names_aphrodite_a_fork_of_vllm(cli, aphrodite_world):
    """Its EAGLE-3 Llama loader keeps d2t as offsets, as vLLM's."""
    result = cli("locate-eagle", "-H", "testbox", "--root", str(aphrodite_world["release"].package),
                 timeout=180)  # fmt: skip
    assert "aphrodite-engine 0.22.0, a fork of vLLM" in result.stdout.decode()
    _, handling = _located(cli, aphrodite_world)
    assert handling["model_executor/models/llama_eagle3.py"] == "offsets"


def test_a_correct_aphrodite_eagle3_setup_is_clean_and_absolute_d2t_is_caught(
    cli, aphrodite_world
):
    row = _clean_row(*_aphrodite_audit(cli, aphrodite_world, "good"))
    assert row["engine"] == "aphrodite"
    assert row["draft_class"] == "model_executor/models/llama_eagle3.py:Eagle3LlamaForCausalLM"
    code, doc = _aphrodite_audit(cli, aphrodite_world, "absolute")
    errors = {f["id"] for f in doc["findings"] if f["severity"] == "error"}
    assert errors == {"d2t-absolute-ids"} and code == 1, doc["findings"]


def test_aphrodite_own_spec_flags_are_read_and_a_key_given_twice_is_refused(cli, aphrodite_world):
    """Aphrodite's own --spec-method/--spec-model/--spec-tokens (0.22.0 aphrodite/engine/
    arg_utils.py:1326-1328) are written into the speculative config (:1503-1514): alone they
    make a correct setup; beside a --speculative-config JSON with the same key they raise
    ValueError(f"{flag} and --speculative-config['{key}'] are mutually exclusive") at start
    (:1512-1513), a check stock vLLM does not have."""
    world = aphrodite_world
    _clean_row(*_spec_audit(cli, world, f"aphrodite run {world['target']} --spec-method eagle3 "
                            f"--spec-model {world['good']} --spec-tokens 3"))
    settings = json.dumps({"method": "eagle3", "model": str(world["good"]),
                           "num_speculative_tokens": 3})  # fmt: skip
    code, doc = _spec_audit(cli, world, f"aphrodite run {world['target']} --speculative-config "
                            f"{settings} --spec-tokens 5")
    errors = {f["id"]: f for f in doc["findings"] if f["severity"] == "error"}
    assert set(errors) == {"draft-settings"} and code == 1, doc["findings"]
    said = errors["draft-settings"]
    assert said["title"] == ("--spec-tokens and --speculative-config['num_speculative_tokens'] "
                             "both given: Aphrodite refuses to start")
    assert ("--spec-tokens and --speculative-config['num_speculative_tokens'] are mutually "
            "exclusive") in said["detail"]
    words = " ".join(f"{f['title']} {f['detail']}" for f in doc["findings"])
    assert not any(other in words for other in ("SGLang", "TokenSpeed", "LMDeploy")), words
    assert "vLLM" not in said["title"] + said["detail"]


def test_aphrodite_names_a_speculative_config_without_num_speculative_tokens(cli, aphrodite_world):
    """No num_speculative_tokens and a draft config without n_predict: ValueError('A speculative
    model was provided, but `num_speculative_tokens` was not provided') at start (0.22.0
    aphrodite/config/speculative.py:885-886), said under Aphrodite's name, not vLLM's."""
    world = aphrodite_world
    assert "n_predict" not in json.loads((world["good"] / "config.json").read_text())
    settings = json.dumps({"method": "eagle3", "model": str(world["good"])})
    code, doc = _spec_audit(cli, world, f"aphrodite run {world['target']} -sc {settings}")
    errors = {f["id"]: f for f in doc["findings"] if f["severity"] == "error"}
    assert set(errors) == {"draft-settings"} and code == 1, doc["findings"]
    said = errors["draft-settings"]
    assert said["title"] == "no num_speculative_tokens: Aphrodite refuses to start"
    assert "aphrodite/config/speculative.py:885-886" in said["detail"]
    assert "vllm/" not in said["detail"]


# ----------------------------------------------------------------------------- TokenSpeed
TOKENSPEED_LAUNCH = (
    "tokenspeed serve {target} --speculative-algorithm {algorithm} "
    "--speculative-draft-model-path {draft} --speculative-num-steps 3 "
    "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
)


@pytest.fixture(scope="module")
def tokenspeed_world(tmp_path_factory):
    """tokenspeed 0.1.1 from the registry (its only release), a 32-layer Llama target and
    drafts: SpecForge's LlamaForCausalLMEagle3 (its EAGLE-3 head's EntryClass, 0.1.1
    tokenspeed/runtime/models/llama_eagle3.py:716), the EAGLE authors' LlamaForCausalLM, and
    absolute d2t."""
    from tests.releases import ReleaseUnavailable, release

    try:
        rel = release("tokenspeed", "0.1.1")
    except ReleaseUnavailable as exc:
        pytest.skip(str(exc))
    root = tmp_path_factory.mktemp("tokenspeed")
    return {"release": rel, "target": _llama_target(root / "target"),
            "good": _complete_eagle3(root / "good", "LlamaForCausalLMEagle3"),
            "authors": _complete_eagle3(root / "authors", "LlamaForCausalLM"),
            "absolute": _complete_eagle3(root / "absolute", "LlamaForCausalLMEagle3", "absolute")}


def _tokenspeed_audit(cli, world, draft: str, algorithm: str = "EAGLE3") -> tuple[int, dict]:
    return _spec_audit(cli, world, TOKENSPEED_LAUNCH.format(
        target=world["target"], draft=world[draft], algorithm=algorithm))


def test_locate_eagle_finds_tokenspeed_and_how_its_loaders_use_d2t(cli, tokenspeed_world):
    """Both EAGLE-3 heads add arange to d2t: the Llama head (0.1.1 runtime/models/
    llama_eagle3.py:648-652) and the MLA head (runtime/models/deepseek_v3.py:2746-2750)."""
    package = str(tokenspeed_world["release"].package)
    out = cli("locate-eagle", "-H", "testbox", "--root", package, timeout=180).stdout.decode()
    assert f"tokenspeed 0.1.1 at {package}" in out and "fork" not in out
    engine, handling = _located(cli, tokenspeed_world)
    assert engine["name"] == "tokenspeed" and engine["version"] == "0.1.1"
    assert engine["label"] == "TokenSpeed 0.1.1" and engine["fork"] is None
    assert handling["runtime/models/llama_eagle3.py"] == "offsets"
    assert handling["runtime/models/deepseek_v3.py"] == "offsets"
    # its registry is every model file's EntryClass (runtime/models/registry.py:101-131)
    assert engine["registry"]["LlamaForCausalLMEagle3"] == ["llama_eagle3",
                                                            "LlamaForCausalLMEagle3"]


def test_a_correct_tokenspeed_eagle3_setup_is_clean(cli, tokenspeed_world):
    row = _clean_row(*_tokenspeed_audit(cli, tokenspeed_world, "good"))
    assert row["engine"] == "tokenspeed"
    assert row["draft_class"] == "runtime/models/llama_eagle3.py:LlamaForCausalLMEagle3"
    # a draft that records no aux ids: the target's set_eagle3_layers_to_capture(None) takes
    # (2, L // 2, L - 3) (0.1.1 runtime/models/base/causal_lm.py:271-278, called from
    # runtime/execution/factory.py:192-200)
    facts = row["checks"]["aux-layers-mismatch"]["facts"]
    assert facts["layers_to_capture"] == [2, 16, 29]


def test_diagnose_judges_tokenspeed_by_its_own_rules(cli, tokenspeed_world):
    """diagnose --no-probe: the correct setup has no cause (every weight its loader maps:
    llama_eagle3.py:632-676 through the model built by models/base/causal_lm.py:211-224), the
    EAGLE authors' spelling has its own as the first."""
    def diagnose(draft: str) -> tuple[int, dict]:
        line = TOKENSPEED_LAUNCH.format(target=tokenspeed_world["target"],
                                        draft=tokenspeed_world[draft], algorithm="EAGLE3")
        result = cli("diagnose", "-H", "testbox", "--no-probe", "--json", "--var", f"args={line}",
                     "--var", f"roots={tokenspeed_world['release'].package}",
                     timeout=240)  # fmt: skip
        return result.returncode, json.loads(result.stdout)

    code, doc = diagnose("good")
    assert code == 0 and doc["verdict"] == "ok" and doc["causes"] == [], doc["causes"]
    assert doc["unknown"] == []
    code, doc = diagnose("authors")
    assert code == 1 and doc["causes"][0]["id"] == "draft-arch-unsupported"
    assert doc["headline"] == ("draft-arch-unsupported: TokenSpeed has no draft class for "
                               "['LlamaForCausalLM']")  # fmt: skip


def test_tokenspeed_refuses_an_algorithm_spelled_in_lower_case(cli, tokenspeed_world):
    """`eagle3`, as vLLM and LMDeploy spell it: TokenSpeed compares the name as written with
    EAGLE3, MTP, DFLASH, DSPARK (runtime/execution/drafter/__init__.py:51, :149-163)."""
    code, doc = _tokenspeed_audit(cli, tokenspeed_world, "good", algorithm="eagle3")
    errors = {f["id"]: f for f in doc["findings"] if f["severity"] == "error"}
    assert set(errors) == {"algorithm-mismatch"} and code == 1, doc["findings"]
    assert errors["algorithm-mismatch"]["title"] == (
        "TokenSpeed has no algorithm 'eagle3': it is spelled EAGLE3")


def test_tokenspeed_refuses_a_chain_of_other_than_steps_plus_one_tokens(cli, tokenspeed_world):
    """Steps 3, topk 1 and 3 draft tokens, as an SGLang launch may give them (SGLang corrects
    them): TokenSpeed raises ValueError at start (runtime/utils/server_args.py:1165-1175)."""
    line = TOKENSPEED_LAUNCH.format(target=tokenspeed_world["target"],
                                    draft=tokenspeed_world["good"], algorithm="EAGLE3")
    code, doc = _spec_audit(cli, tokenspeed_world, line.replace(
        "--speculative-num-draft-tokens 4", "--speculative-num-draft-tokens 3"))
    errors = {f["id"]: f for f in doc["findings"] if f["severity"] == "error"}
    assert set(errors) == {"draft-settings"} and code == 1, doc["findings"]
    assert errors["draft-settings"]["title"] == (
        "3 draft tokens with topk 1: TokenSpeed refuses to start")
    assert "--speculative-num-draft-tokens 4" in errors["draft-settings"]["detail"]


def test_tokenspeed_names_the_eagle_authors_architecture_spelling(cli, tokenspeed_world):
    """LlamaForCausalLM names no draft kind, so TokenSpeed looks up LlamaForCausalLMNextN
    (runtime/utils/hf_transformers_utils.py:460-475), which no EntryClass registers: ValueError
    at start (runtime/models/registry.py:57-60)."""
    code, doc = _tokenspeed_audit(cli, tokenspeed_world, "authors")
    errors = {f["id"]: f for f in doc["findings"] if f["severity"] == "error"}
    assert set(errors) == {"draft-arch-unsupported"} and code == 1, doc["findings"]
    said = errors["draft-arch-unsupported"]
    assert said["title"] == "TokenSpeed has no draft class for ['LlamaForCausalLM']"
    assert "LlamaForCausalLMNextN" in said["detail"]
    assert "LlamaForCausalLMEagle3" in said["detail"]
    assert "SGLang" not in json.dumps(doc["findings"]) and "vLLM" not in json.dumps(
        doc["findings"])


def test_an_absolute_d2t_draft_for_tokenspeed_is_caught(cli, tokenspeed_world):
    code, doc = _tokenspeed_audit(cli, tokenspeed_world, "absolute")
    errors = {f["id"] for f in doc["findings"] if f["severity"] == "error"}
    assert errors == {"d2t-absolute-ids"} and code == 1, doc["findings"]
    assert {r["engine"] for r in doc["results"]["spec"]["spec"]} == {"tokenspeed"}


# TokenSpeed 0.1.1's decode line when it speculates (tokenspeed/runtime/engine/batch_log.py:
# 189-200, through its CustomFormatter, runtime/utils/common.py:1139-1151): avg_accept_len is
# generated tokens per verify step, accept_rate (avg_accept_len - 1) / steps
TOKENSPEED_LOG = (
    "\x1b[38;20m[2026-12-06 09:00:00 None] - INFO - Decode batch. #dp-rank: 0, #running-req: 1, "
    "avg_seq_len: 300.0, #pages(active/cached/total): 3/0/1000, page ratio: 0.00, gen throughput "
    "(token/s): 101.12, avg_accept_len: 2.50, accept_rate: 0.50 (batch_log.py:190)\x1b[0m"
)
# its counters (runtime/metrics/collector.py:227-246), prometheus_client's _total suffix
TOKENSPEED_METRICS = (
    "tokenspeed:spec_decode_num_drafts_total 40.0\n"
    "tokenspeed:spec_decode_num_draft_tokens_total 120.0\n"
    "tokenspeed:spec_decode_num_accepted_tokens_total 60.0\n"
)


def test_a_running_tokenspeed_server_is_found_and_its_acceptance_read(
    cli, tokenspeed_world, tmp_path
):
    line = TOKENSPEED_LAUNCH.format(target=tokenspeed_world["target"],
                                    draft=tokenspeed_world["good"], algorithm="EAGLE3")
    line += " --enable-metrics"  # /metrics only then (runtime/utils/server_args.py:2247)
    server, port, package = _run_standin(tmp_path, tokenspeed_world["release"], line, "--port",
                                         TOKENSPEED_LOG, TOKENSPEED_METRICS)  # fmt: skip
    try:
        result = cli("playbook", "spec-audit", "-H", "testbox", "--json", "--var",
                     f"roots={package}", "--var", f"server={server.pid}",
                     timeout=240)  # fmt: skip
        doc = json.loads(result.stdout)
        (found,) = [s for s in doc["results"]["servers"]["servers"] if s.get("pid") == server.pid]
        assert found["engine"] == "tokenspeed" and found["spec"]["port"] == port
        assert found["spec"]["target_model"] == str(tokenspeed_world["target"])
        assert found["spec"]["num_steps"] == 3 and found["spec"]["ceiling"] == 4
        assert found["log"]["engine"] == "tokenspeed"  # not SGLang's, whose line starts so too
        figures = found["log"]["figures"]
        assert figures["accept_length"]["last"] == 2.5 and figures["accept_rate"]["last"] == 0.5
        assert figures["throughput"]["last"] == 101.12
        assert found["metrics"]["spec_accept_length"] == 2.5  # 1 + 60 / 40
        assert [f for f in doc["findings"] if f["severity"] == "error"] == []
        assert doc["verdict"] == "ok" and result.returncode == 0, doc["inconclusive"]
    finally:
        server.kill()
        server.wait()
