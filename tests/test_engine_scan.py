"""engine_scan finds SGLang/vLLM installs and their draft-model files, read-only and bounded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remotedbg.agent import engine_scan
from remotedbg.analysis.d2t_handling import resolve_architectures
from remotedbg.analysis.d2t_install import classify_install
from remotedbg.engines.knowledge import scan_args
from remotedbg.remote import calls, pyagent
from remotedbg.session import ConnectOptions, open_session
from tests import engine_trees as trees
from tests.procs import wait_for
from tests.releases import RELEASES, release


@pytest.fixture()
def world(tmp_path: Path) -> dict:
    home = tmp_path / "home"
    sglang = trees.write_sglang_checkout(home)
    vllm = trees.write_vllm_venv(home / ".venv", python=sys.executable)
    return {"home": home, "sglang": sglang, "vllm": vllm, "tmp": tmp_path}


def run_scan(**kw) -> dict:
    kw.setdefault("search_system", False)
    kw.setdefault("search_processes", False)
    roots = kw.pop("roots", None)
    result = engine_scan.scan(scan_args(roots, **kw))
    json.dumps(result)  # must travel as JSON
    return result


def by_engine(result: dict, under: Path) -> dict:
    found = {}
    for inst in result["installs"]:
        if inst["path"].startswith(str(under.resolve())):
            assert inst["engine"] not in found, "installs must be deduplicated"
            found[inst["engine"]] = inst
    return found


def draft_paths(inst: dict) -> set[str]:
    return {f["path"] for f in inst["draft_files"]}


def test_finds_checkout_and_venv_with_versions(world: dict) -> None:
    result = run_scan(home=str(world["home"]))
    found = by_engine(result, world["home"])
    sg, vl = found["sglang"], found["vllm"]

    assert sg["path"] == str(world["sglang"].resolve())
    assert sg["version"] == trees.SGLANG_VERSION and sg["version_source"] == "version.py"
    assert sg["how_found"] == ["checkout-search"] and sg["kind"] == "checkout"
    assert sg["git"]["commit"].startswith("0123456789abcdef")
    assert sg["running"] == []

    assert vl["version"] == trees.VLLM_VERSION
    assert vl["version_source"].endswith(".dist-info/METADATA")
    python = str(world["home"] / ".venv" / "bin" / "python3")
    assert f"site-packages:{python}" in vl["how_found"]
    assert vl["kind"] == "site-packages"

    assert str(world["home"]) in result["searched"]
    assert not result["limits"]["walk_truncated"]


def test_lists_draft_files_by_name_and_content_only(world: dict) -> None:
    sg = by_engine(run_scan(home=str(world["home"])), world["home"])["sglang"]
    assert draft_paths(sg) == {
        "srt/models/llama_eagle3.py",
        "srt/models/kimi_k25_eagle3.py",
        "srt/models/llama_eagle3_direct.py",
        "srt/models/qwen2_eagle.py",
        "srt/models/qwen3_next_mtp.py",
        "srt/models/my_head.py",  # no name match: found by its EntryClass / d2t content
    }
    my_head = next(f for f in sg["draft_files"] if f["path"].endswith("my_head.py"))
    assert all(m.startswith("content:") for m in my_head["matched_by"])
    eagle3 = next(f for f in sg["draft_files"] if f["path"].endswith("/llama_eagle3.py"))
    assert any(m.startswith("name:") for m in eagle3["matched_by"])
    on_disk = (world["sglang"] / "srt/models/llama_eagle3.py").read_text()
    assert eagle3["source"] == on_disk and eagle3["size"] == len(on_disk.encode())
    assert eagle3["capped"] is False
    assert sorted(sg["worker_files"]) == [
        "srt/speculative/__init__.py",
        "srt/speculative/eagle_utils.py",
        "srt/speculative/eagle_worker.py",
        "srt/speculative/spec_info.py",
    ]
    assert sg["registry"] is None

    vl = by_engine(run_scan(home=str(world["home"])), world["home"])["vllm"]
    assert "model_executor/models/llama_eagle3.py" in draft_paths(vl)
    assert "model_executor/models/llama.py" not in draft_paths(vl)
    assert "model_executor/models/registry.py" not in draft_paths(vl)
    assert vl["registry"]["path"] == "model_executor/models/registry.py"
    assert "_SPECULATIVE_DECODING_MODELS" in vl["registry"]["source"]
    assert vl["worker_files"] == ["v1/spec_decode/__init__.py", "v1/spec_decode/eagle.py"]


def test_local_classification_of_scan(world: dict) -> None:
    found = by_engine(run_scan(home=str(world["home"])), world["home"])
    sg = classify_install(found["sglang"])
    handling = {m["path"]: m["d2t_handling"] for m in sg["draft_models"]}
    assert handling["srt/models/llama_eagle3.py"] == "offsets"
    assert handling["srt/models/kimi_k25_eagle3.py"] == "offsets"
    assert handling["srt/models/llama_eagle3_direct.py"] == "direct"
    assert handling["srt/models/qwen2_eagle.py"] == "none"
    vl = classify_install(found["vllm"])
    [hit] = resolve_architectures(["LlamaForCausalLMEagle3"], vl["draft_models"], vl["registry"])
    assert hit["path"] == "model_executor/models/llama_eagle3.py"
    assert hit["d2t_handling"] == "offsets"


def test_roots_only_when_home_search_is_off(world: dict, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    pkg = trees.write_sglang_checkout(other / "deep")
    result = run_scan(roots=[str(other)], search_home=False, home=str(world["home"]))
    found = by_engine(result, tmp_path)
    assert list(found) == ["sglang"]
    assert found["sglang"]["path"] == str(pkg.resolve())
    assert found["sglang"]["how_found"] == ["root-arg"]
    assert str(world["home"]) not in result["searched"]
    # a root may also be the package dir itself, or a venv prefix
    result = run_scan(roots=[str(pkg), str(world["home"] / ".venv")], search_home=False)
    found = by_engine(result, tmp_path)
    assert found["sglang"]["how_found"] == ["root-arg"]
    assert found["vllm"]["version"] == trees.VLLM_VERSION


def test_dedupes_by_realpath(world: dict, tmp_path: Path) -> None:
    for link in (tmp_path / "link-to-sglang", tmp_path / "links" / "sglang"):
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(world["sglang"])
        result = run_scan(roots=[str(link), str(world["sglang"])], home=str(world["home"]))
        found = by_engine(result, world["home"])
        assert [i["path"] for i in result["installs"]] == [str(world["sglang"].resolve())]
        assert found["sglang"]["how_found"] == ["root-arg"]  # named roots: nothing else searched


def test_editable_install_points_to_checkout(world: dict, tmp_path: Path) -> None:
    venv = tmp_path / "envs" / "dev"
    site = venv / "lib" / "python3.10" / "site-packages"
    dist = site / f"sglang-{trees.SGLANG_VERSION}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Name: sglang\nVersion: {trees.SGLANG_VERSION}\n")
    repo = world["home"] / "sglang"
    (dist / "direct_url.json").write_text(
        json.dumps({"url": f"file://{repo}/python", "dir_info": {"editable": True}})
    )
    result = run_scan(roots=[str(venv)], search_home=False)
    [inst] = by_engine(result, world["home"]).values()
    assert inst["path"] == str(world["sglang"].resolve())
    assert inst["editable_from"] == str(site)
    assert inst["version"] == trees.SGLANG_VERSION


def test_bounded_by_depth_entries_and_sizes(world: dict, tmp_path: Path) -> None:
    deep = tmp_path / "deep"
    trees.write_sglang_checkout(deep / "a" / "b" / "c" / "d" / "e" / "f")
    result = run_scan(roots=[str(deep)], search_home=False)  # roots walk to depth 6
    assert by_engine(result, deep) == {}

    result = run_scan(home=str(world["home"]), max_entries=5)
    assert result["limits"]["walk_truncated"] is True

    big = world["sglang"] / "srt" / "models" / "big_eagle3.py"
    big.write_text("d2t = 1\n" + "# padding\n" * 20000)
    sg = by_engine(run_scan(home=str(world["home"]), max_file_bytes=4096), world["home"])["sglang"]
    entry = next(f for f in sg["draft_files"] if f["path"].endswith("big_eagle3.py"))
    assert entry["capped"] is True and len(entry["source"]) == 4096
    assert entry["size"] > 4096

    result = run_scan(home=str(world["home"]), max_total_bytes=3000)
    assert result["limits"]["sources_omitted"] is True
    files = [f for i in result["installs"] for f in i["draft_files"]]
    assert any(f["omitted"] and f["source"] is None for f in files)
    assert sum(len(f["source"] or "") for f in files) <= 3000


def test_fast_on_a_full_size_tree(tmp_path: Path) -> None:
    pkg = trees.write_sglang_checkout(tmp_path)
    for i in range(1800):
        sub = pkg / "srt" / f"area_{i % 40}"
        sub.mkdir(exist_ok=True)
        (sub / f"mod_{i}.py").write_text("import torch\n" + "x = 1\n" * 400)
    models = pkg / "srt" / "models"
    for i in range(250):
        (models / f"target_{i}.py").write_text(f"class Target{i}ForCausalLM:\n    pass\n" * 200)
    started = time.perf_counter()
    result = run_scan(roots=[str(tmp_path)], search_home=False)
    elapsed = time.perf_counter() - started
    [inst] = by_engine(result, tmp_path).values()
    assert "srt/models/target_3.py" not in draft_paths(inst)
    assert elapsed < 1.0, elapsed


def test_running_server_processes(world: dict) -> None:
    repo = world["home"] / "sglang"
    venv_python = str(world["home"] / ".venv" / "bin" / "python3")
    sleeper = "import time; time.sleep(60)"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", sleeper, "-m", "sglang.launch_server", "--api-key", "s3cret"],
            cwd=repo / "python",  # `-m sglang...` imports ./sglang: the checkout's package
        ),
        subprocess.Popen([venv_python, "-c", sleeper, "vllm serve", "some/model"], cwd="/"),
    ]
    try:
        assert wait_for(lambda: all(_cmdline(p.pid).count("sleep") for p in procs))
        result = run_scan(home=str(world["home"]), search_processes=True)
        found = by_engine(result, world["home"])
        sg_pid, vl_pid = procs[0].pid, procs[1].pid
        assert sg_pid in found["sglang"]["running"]
        assert f"process:{sg_pid}" in found["sglang"]["how_found"]
        assert vl_pid in found["vllm"]["running"]
        assert sg_pid not in found["vllm"]["running"]
        assert vl_pid not in found["sglang"]["running"]
        proc = next(p for p in result["processes"] if p["pid"] == sg_pid)
        assert proc["engine"] == "sglang" and proc["cwd"] == str(repo / "python")
        assert "s3cret" not in proc["cmdline"]
        # the argv itself, element for element, for the launch to be parsed from
        assert proc["argv"][-3:] == ["sglang.launch_server", "--api-key", "***"]
        assert found["sglang"]["path"] in proc["installs"]
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().decode()
    except OSError:
        return ""


def test_needs_knowledge() -> None:
    with pytest.raises(ValueError, match="knowledge"):
        engine_scan.scan({"roots": []})


def test_through_pyagent_on_local_session(world: dict) -> None:
    session = open_session(ConnectOptions(host="local"))
    args = scan_args(
        [str(world["home"] / "sglang")],
        search_home=False,
        search_system=False,
        search_processes=False,
    )
    result = pyagent.call(session, calls.ScanEngines(args))
    [inst] = by_engine(result, world["home"]).values()
    assert inst["engine"] == "sglang" and inst["version"] == trees.SGLANG_VERSION
    assert "srt/models/my_head.py" in draft_paths(inst)
    assert result["searched"]


def test_agent_module_is_python38_syntax() -> None:
    source = Path(engine_scan.__file__).read_text()
    import ast

    ast.parse(source, feature_version=(3, 8))
    for line in source.splitlines():
        if line.startswith(("import ", "from ")):
            mod = line.split()[1]
            assert mod in {
                "__future__",
                "glob",
                "hashlib",
                "os",
                "re",
                "sys",
                "time",
            } or mod.startswith("remotedbg.agent"), line
    assert os.path.basename(engine_scan.__file__) == "engine_scan.py"


@pytest.mark.network
@pytest.mark.parametrize("name,version", RELEASES, ids=[f"{n}-{v}" for n, v in RELEASES])
@pytest.mark.parametrize("layout", ["venv", "tree"])
def test_real_releases_versions_and_eagle3_loaders(name: str, version: str, layout: str) -> None:
    """Each real release, as a venv install (dist-info beside it) and as a bare checkout: the
    version is the release's (SGLang 0.5.14+ keeps it in _version.py, version.py holding only a
    0.0.0.dev0 fallback), and its EAGLE-3 loader reads d2t as offsets: SGLang
    `hot_token_id = d2t + arange` (srt/models/llama_eagle3.py, e.g. 0.5.6:242-245), vLLM
    `arange + draft_id_to_target_id` in compute_logits (0.8.5 llama_eagle3.py:200-214)."""
    rel = release(name, version)
    root = rel.venv if layout == "venv" else rel.tree
    result = run_scan(roots=[str(root)], search_home=False)
    [inst] = by_engine(result, root).values()
    assert inst["engine"] == name and inst["version"] == version
    classified = {m["path"]: m for m in classify_install(inst)["draft_models"]}
    loader = (
        "srt/models/llama_eagle3.py"
        if name == "sglang"
        else ("model_executor/models/llama_eagle3.py")
    )
    assert classified[loader]["d2t_handling"] == "offsets"
    assert all(m["d2t_handling"] != "direct" for m in classified.values())


def test_non_python_processes_mentioning_an_engine_are_ignored(world: dict) -> None:
    sleeper = subprocess.Popen(
        ["/bin/sh", "-c", "sleep 60; echo sglang.launch_server"], cwd=world["home"] / "sglang"
    )
    try:
        assert wait_for(lambda: "sglang" in _cmdline(sleeper.pid))
        result = run_scan(home=str(world["home"]), search_processes=True)
        assert sleeper.pid not in [p["pid"] for p in result["processes"]]
        assert by_engine(result, world["home"])["sglang"]["running"] == []
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.network
def test_vllm_033_draft_heads_under_the_models_package_are_found() -> None:
    """vLLM 0.33.0 registers newer heads by full module path under vllm/models/
    (model_executor/models/registry.py:692-695: MuseSparkDSparkModel ->
    vllm.models.muse_spark.common.dspark.MuseSparkDSparkForCausalLM, defined at
    models/muse_spark/common/dspark.py:278); the flat layout's heads are still found too."""
    rel = release("vllm", "0.33.0")
    result = run_scan(roots=[str(rel.venv)], search_home=False)
    [inst] = by_engine(result, rel.venv).values()
    classified = classify_install(inst)
    paths = [m["path"] for m in classified["draft_models"]]
    assert "models/muse_spark/common/dspark.py" in paths
    assert "model_executor/models/llama_eagle3.py" in paths
    [hit] = resolve_architectures(
        ["MuseSparkDSparkModel"], classified["draft_models"], classified["registry"]
    )
    assert hit["resolved"] and hit["path"] == "models/muse_spark/common/dspark.py"
    assert hit["class"] == "MuseSparkDSparkForCausalLM"


@pytest.mark.network
def test_vllm_033_dspark_head_takes_the_d2t_handling_of_the_base_that_applies_it() -> None:
    """vLLM 0.33.0 models/muse_spark/common/dspark.py:356-358 renames the checkpoint's d2t to
    draft_id_to_target_id and never uses it; MuseSparkDSparkForCausalLM (dspark.py:278) derives
    from Qwen3DSparkForCausalLM, whose map_draft_to_target returns
    `draft_ids + self.draft_id_to_target_id[draft_ids]` (model_executor/models/
    qwen3_dspark.py:278-282), which dspark.py does not override; the DSpark worker calls it
    (v1/worker/gpu/spec_decode/dspark/speculator.py:126): offsets."""
    rel = release("vllm", "0.33.0")
    result = run_scan(roots=[str(rel.venv)], search_home=False)
    [inst] = by_engine(result, rel.venv).values()
    classified = classify_install(inst)
    by_path = {m["path"]: m for m in classified["draft_models"]}
    dspark = by_path["models/muse_spark/common/dspark.py"]
    assert dspark["d2t_handling"] == "offsets"
    [row] = [c for c in dspark["classes"] if c["name"] == "MuseSparkDSparkForCausalLM"]
    assert row["applied_in"]["path"] == "model_executor/models/qwen3_dspark.py"
    assert (row["applied_in"]["line"], row["applied_in"]["method"]) == (282, "map_draft_to_target")
    [hit] = resolve_architectures(
        ["MuseSparkDSparkModel"], classified["draft_models"], classified["registry"]
    )
    assert hit["d2t_handling"] == "offsets"
