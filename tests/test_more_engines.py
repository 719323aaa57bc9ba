"""Engines beyond SGLang and vLLM (issue 44): a launch of an engine no profile knows is read by
no engine's rules; forks are named as forks; LMDeploy has a profile of its own."""

from __future__ import annotations

import json

import pytest

from remotedbg.agent.server_scan import scan_servers
from tests.test_spec_checks import spec_world  # noqa: F401  (fixture)

# TokenSpeed's launch form as issue 44 quotes it: an engine remotedbg has no profile for
UNKNOWN_LAUNCH = ("tokenspeed serve {target} --speculative-algorithm EAGLE3 "
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
    assert "tokenspeed serve /m/t" in note and "--speculative-num-draft-tokens" in note


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
    assert "engine unknown" in json.dumps(doc["inconclusive"]) and "tokenspeed serve" in json.dumps(
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
