"""locate-eagle over SSH against engine trees the tests write in SGLang's and vLLM's layouts."""

from __future__ import annotations

import json

import pytest

from tests.engine_trees import write_sglang_checkout, write_vllm_venv


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    root = tmp_path_factory.mktemp("engines")
    sglang = write_sglang_checkout(root / "home")
    vllm = write_vllm_venv(root / "venv")
    return root, sglang, vllm


def _locate(cli, *args):
    result = cli("locate-eagle", "-H", "testbox", "--json", "--no-home", *args)
    return result, json.loads(result.stdout)


def test_finds_both_engines_with_versions_and_how(cli, engines):
    root, sglang, vllm = engines
    result, found = _locate(cli, "--root", str(root))
    assert result.returncode == 0
    by_name = {e["name"]: e for e in found["engines"]}
    assert by_name["sglang"]["path"] == str(sglang) and by_name["sglang"]["version"]
    assert by_name["vllm"]["path"] == str(vllm) and by_name["vllm"]["version"]
    assert "root-arg" in by_name["sglang"]["how_found"]
    assert found["workers"]


def test_classifies_each_draft_file(cli, engines):
    root, sglang, vllm = engines
    _, found = _locate(cli, "--root", str(root))
    handling = {
        m["relative_path"]: m["d2t_handling"]
        for m in found["draft_models"]
        if m["engine"] == "sglang"
    }
    assert handling["srt/models/llama_eagle3.py"] == "offsets"
    assert handling["srt/models/kimi_k25_eagle3.py"] == "offsets"
    assert handling["srt/models/llama_eagle3_direct.py"] == "direct"
    assert handling["srt/models/qwen2_eagle.py"] == "none"
    assert "srt/models/llama.py" not in handling
    vllm_models = {m["relative_path"]: m for m in found["draft_models"] if m["engine"] == "vllm"}
    assert vllm_models["model_executor/models/llama_eagle3.py"]["d2t_handling"] == "offsets"
    evidence = vllm_models["model_executor/models/llama_eagle3.py"]["evidence_lines"]
    assert any("draft_id_to_target_id" in line["text"] for line in evidence)


def test_resolves_a_draft_architecture_to_file_and_class(cli, engines):
    root, sglang, _ = engines
    _, found = _locate(cli, "--root", str(sglang), "--arch", "LlamaForCausalLMEagle3")
    hits = [h for h in found["resolved"] if h["engine"] == "sglang"]
    assert hits and hits[0]["resolved"]
    assert hits[0]["path"].endswith("srt/models/llama_eagle3.py")
    assert hits[0]["d2t_handling"] == "offsets"


def test_text_report_shows_verdicts_and_evidence(cli, engines):
    root, _, _ = engines
    result = cli("locate-eagle", "-H", "testbox", "--no-home", "--root", str(root))
    out = result.stdout.decode()
    assert "llama_eagle3_direct.py" in out and "direct" in out and "hot_token_id" in out


def test_no_engine_exits_1_and_says_where_it_looked(cli, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("locate-eagle", "-H", "testbox", "--no-home", "--root", str(empty))
    assert result.returncode == 1  # this test machine has no SGLang or vLLM installed
    assert str(empty) in result.stderr.decode() and "--root" in result.stderr.decode()


@pytest.mark.network
def test_a_head_that_leaves_d2t_to_its_base_is_classified_by_the_base(cli):
    """vLLM 0.33.0's MuseSpark DSpark head loads d2t (models/muse_spark/common/dspark.py:356)
    and its base Qwen3DSparkForCausalLM adds the draft ids to it (model_executor/models/
    qwen3_dspark.py:282): offsets, not unknown, over SSH as a user runs it."""
    from tests.releases import release

    rel = release("vllm", "0.33.0")
    result, found = _locate(cli, "--root", str(rel.venv), "--arch", "MuseSparkDSparkModel")
    assert result.returncode == 0
    models = {m["relative_path"]: m for m in found["draft_models"]}
    dspark = models["models/muse_spark/common/dspark.py"]
    assert dspark["d2t_handling"] == "offsets"
    assert "qwen3_dspark.py:282" in dspark["reason"]
    [hit] = found["resolved"]
    assert hit["d2t_handling"] == "offsets" and hit["class"] == "MuseSparkDSparkForCausalLM"


def test_the_bases_a_head_leaves_d2t_to_are_read_from_the_box(cli, tmp_path):
    """The head's base is not a draft file (nothing in it names d2t): locate-eagle reads it over
    the connection and follows it to the mixin that applies d2t (a draft file: it names
    draft_id_to_target_id)."""
    from tests import engine_trees as trees

    pkg = write_vllm_venv(tmp_path / "venv")
    (pkg / "models").mkdir()
    (pkg / "models" / "my_dspark.py").write_text(trees.VLLM_LOADS_ONLY_HEAD.format(override=""))
    base = pkg / "model_executor" / "models"
    (base / "base_head.py").write_text(trees.VLLM_BASE_HEAD)
    (base / "interfaces.py").write_text(trees.VLLM_ARGMAX_MIXIN.format(use="top + d2t[top]"))
    result, found = _locate(cli, "--root", str(tmp_path / "venv"))
    assert result.returncode == 0
    models = {m["relative_path"]: m for m in found["draft_models"]}
    assert models["models/my_dspark.py"]["d2t_handling"] == "offsets"
    assert "model_executor/models/interfaces.py" in models["models/my_dspark.py"]["reason"]
    [engine] = found["engines"]
    assert engine["followed"][0] == "model_executor/models/base_head.py"
