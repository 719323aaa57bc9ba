"""The sweep: correct deployments of every model family on every SGLang and vLLM release of
tests/releases.py's SWEEP, and the planted checkpoint mistakes on one release per content group
of the draft loader files (tests/sweep_table.py). Releases of the sweep other than the table's
are unpacked in the venv layout only; cells the table (tests/test_conformance.py) already runs
are not run again.
"""

from __future__ import annotations

import pytest

from remotedbg.actions.engine_code import EngineCode, gather_serving
from remotedbg.analysis.engine_facts import (
    eagle3_target_types,
    vllm_target,
    vllm_v2_by_default,
    vllm_v2_for_target,
    vllm_v2_serves,
)
from remotedbg.engines import code_markers
from remotedbg.remote.primitives import Remote
from remotedbg.session import ConnectOptions, open_session
from remotedbg.session.target import LOCAL
from tests.conformance_table import TABLE
from tests.releases import SWEEP, content_group, release, sweep_release
from tests.sweep_table import (
    GROUPS,
    MLA_PLANTS,
    MORE,
    MORE_ENGINES,
    PLANTS,
    SGLANG_MLA,
    SGLANG_MLA_FIRSTS,
    SWEEP_VERSIONS,
    VLLM_MLA_FIRSTS,
    since,
)
from tests.sweep_table import SWEEP as EXPECTED
from tests.test_conformance import audit, build_box, check

# The audits (1,106, about 22 minutes here: README "Every release") are marked `sweep`:
# tests/run.sh runs them after the rest of the suite. The checks of the sweep's own data
# (content groups against the downloads, coverage, the runner rule) run with the rest.
pytestmark = [pytest.mark.network]

ALL_PLANTS = list(PLANTS) + list(MLA_PLANTS)
CORRECT = [s for s in EXPECTED if s not in ALL_PLANTS]


def _scenarios(engine: str, version: str, names: list[str]) -> list[str]:
    return [
        s for s in names
        if (engine, version) in EXPECTED.get(s, {}) and (engine, version) not in TABLE.get(s, {})
    ]  # fmt: skip


def _run(tmp_path, engine: str, version: str, scenarios: list[str]) -> list[str]:
    rel = sweep_release(engine, version)
    failures = []
    for scenario in scenarios:
        expected = EXPECTED[scenario][(engine, version)]
        got = audit(build_box(tmp_path / scenario, engine, version, scenario), str(rel.venv))
        problems = check(got, expected)
        if problems:
            failures.append(
                f"{scenario} on {engine} {version}: {'; '.join(problems)}\n"
                f"  expected because: {expected['cite']}\n  headline: {got['headline']}\n"
                f"  inconclusive: {got['inconclusive']}"
            )
    return failures


@pytest.mark.sweep
@pytest.mark.parametrize(
    "engine,version",
    [pytest.param(e, v, id=f"{e}-{v}") for e, v in SWEEP if _scenarios(e, v, CORRECT)],
)
def test_sweep_correct_deployments(tmp_path, engine, version):
    failures = _run(tmp_path, engine, version, _scenarios(engine, version, CORRECT))
    assert not failures, "\n".join(failures)


@pytest.mark.sweep
def test_every_release_s_serving_code_is_read_whole(tmp_path, monkeypatch):
    """Which serving files decide a verdict never depends on the order a box's filesystem lists
    a directory in: on every release of the sweep, every file the serving grep finds is read
    (before 2026-12-02, vLLM 0.27.0-0.33.0 had 39-65 hits of which the first 32 were read)."""
    monkeypatch.setenv("REMOTEDBG_CACHE_DIR", str(tmp_path / "cache"))
    unread = {}
    with open_session(ConnectOptions(host=LOCAL)) as session:
        remote = Remote(session)
        for engine, version in SWEEP:
            venv = sweep_release(engine, version).venv
            (install,) = venv.glob(f"lib/python3*/site-packages/{engine}")
            code = gather_serving(remote, engine, str(install))
            found = list(dict.fromkeys(hit["path"] for hit in code.serving_hits))
            assert found, f"{engine} {version}: the grep found no serving code"
            missed = [path for path in found if code.index.text_at(path) is None]
            if missed:
                unread[f"{engine} {version}"] = f"{len(missed)} of {len(found)}"
    assert not unread, unread


GROUP_FIRSTS = [(e, group[0]) for e, groups in GROUPS.items() for group in groups]


@pytest.mark.sweep
@pytest.mark.parametrize(
    "engine,version",
    [pytest.param(e, v, id=f"{e}-{v}") for e, v in GROUP_FIRSTS if _scenarios(e, v, ALL_PLANTS)],
)
def test_sweep_plants_per_group(tmp_path, engine, version):
    failures = _run(tmp_path, engine, version, _scenarios(engine, version, ALL_PLANTS))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_content_groups(engine):
    """GROUPS is the partition of the sweep's releases by the bytes of their loader files."""
    groups: list[list[str]] = []
    last = None
    for version in SWEEP_VERSIONS[engine]:
        digest = content_group(sweep_release(engine, version))
        if digest != last:
            groups.append([])
            last = digest
        groups[-1].append(version)
    assert groups == GROUPS[engine]


def test_sweep_covers_every_release():
    for engine, versions in SWEEP_VERSIONS.items():
        for scenario in CORRECT:
            if scenario == "correct-nextn" and engine == "vllm":
                continue  # MTP heads are not modelled for vLLM
            if scenario == "mla-eagle3-correct" and engine == "sglang":
                # the releases that ship kimi_k25_eagle3.py; before 0.5.12 SGLang's registry
                # miss is not modelled (tests/sweep_table.py)
                assert {v for e, v in EXPECTED[scenario] if e == engine} == set(SGLANG_MLA)
                continue
            assert set(versions) <= {v for e, v in EXPECTED[scenario] if e == engine}, scenario
        firsts = {group[0] for group in GROUPS[engine]}
        assert [v for group in GROUPS[engine] for v in group] == versions
        for plant in PLANTS:
            assert firsts <= {v for e, v in EXPECTED[plant] if e == engine}, plant
    for plant in MLA_PLANTS:  # the groups whose release ships the MLA head
        assert {v for e, v in EXPECTED[plant] if e == "vllm"} == set(VLLM_MLA_FIRSTS), plant
        assert {v for e, v in EXPECTED[plant] if e == "sglang"} == set(SGLANG_MLA_FIRSTS), plant


# Which runner serves when the launch environment does not set VLLM_USE_V2_MODEL_RUNNER, read
# from each release: no v1/worker/gpu/model_runner.py before 0.12.0 (V1 only); 0.12.0-0.21.0
# envs.py `bool(int(os.getenv("VLLM_USE_V2_MODEL_RUNNER", "0")))` (0.12.0 envs.py:1550-1552;
# 0.21.0 :1711-1713): V1; from 0.22.0 `maybe_convert_bool(os.getenv(..., None))` (0.22.0
# envs.py:1897-1899), None leaving it to VllmConfig.use_v2_model_runner, which returns True
# unless a feature V2 lacks is in use (0.33.0 config/vllm.py:731-767): V2.
V2_BY_DEFAULT_FROM = "0.22.0"


@pytest.mark.parametrize("version", SWEEP_VERSIONS["vllm"])
def test_vllm_default_runner_is_read_from_envs(version):
    rel = sweep_release("vllm", version)
    code = EngineCode("vllm", str(rel.package))
    for name in (code_markers.VLLM_V2_MARKER, code_markers.VLLM_ENVS):
        path = rel.package / name
        if path.is_file():
            code.index.add(str(path), path.read_text())
    versions = SWEEP_VERSIONS["vllm"]
    expected = versions.index(version) >= versions.index(V2_BY_DEFAULT_FROM)
    assert vllm_v2_by_default(code) is expected


# The model types SpeculativeConfig accepts as EAGLE-3 targets (a substring of the target's
# hf_text_config.model_type, else ValueError), in the three forms the releases write it:
# 0.8.5 config.py:2588-2592 `"llama" not in ...model_type` (to 0.10.0 :3027); 0.10.1
# config/__init__.py:2347-2354 `eagle3_target_supported = ["llama", "qwen"]`, 0.11.0
# config/speculative.py:540 adds minicpm and gpt_oss (0.13.0 :621-632), 0.16.0 :689 hunyuan_vl,
# hunyuan_v1_dense, afmoe; 0.17.0 :768-789 `aux_hidden_states_supported` (+nemotron_h), tested
# for eagle3 and extract_hidden_states; 0.21.0 :974 its last (+laguna); 0.22.0 has no such check.
EAGLE3_TARGETS = {
    "0.8.5": (["llama"], "config.py:2588"),
    "0.10.1": (["llama", "qwen"], "config/__init__.py:2347"),
    "0.13.0": (["llama", "qwen", "minicpm", "gpt_oss"], "config/speculative.py:621"),
    "0.16.0": (["llama", "qwen", "minicpm", "gpt_oss", "hunyuan_vl", "hunyuan_v1_dense",
                "afmoe"], "config/speculative.py:689"),  # fmt: skip
    "0.17.1": (["llama", "qwen", "minicpm", "gpt_oss", "hunyuan_vl", "hunyuan_v1_dense",
                "afmoe", "nemotron_h"], "config/speculative.py:768"),  # fmt: skip
}
EAGLE3_TARGET_CHECK_UNTIL = "0.21.0"


@pytest.mark.parametrize("version", SWEEP_VERSIONS["vllm"])
def test_vllm_eagle3_target_types_are_read_in_each_form(version):
    rel = sweep_release("vllm", version)
    code = EngineCode("vllm", str(rel.package))
    for name in code_markers.VLLM_SPEC_CONFIGS:
        path = rel.package / name
        if path.is_file():
            code.index.add(str(path), path.read_text())
    got = eagle3_target_types(code)
    versions = SWEEP_VERSIONS["vllm"]
    if versions.index(version) > versions.index(EAGLE3_TARGET_CHECK_UNTIL):
        assert got is None
        return
    assert got is not None and "llama" in got["types"]
    if version in EAGLE3_TARGETS:
        types, where = EAGLE3_TARGETS[version]
        assert got == {"types": types, "where": where}
    if versions.index(version) >= versions.index("0.18.0"):
        assert "kimi_k2" in got["types"]  # 0.18.0 config/speculative.py:780-792


# VllmConfig.use_v2_model_runner with VLLM_USE_V2_MODEL_RUNNER unset, per target: 0.22.0-0.28.0
# return False when `not self._is_default_v2_model_runner_model()` (0.22.0 config/vllm.py:498-499;
# 0.25.0 :537-538). 0.22.0 :518-532: the architecture in DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
# (:69, {"Qwen3ForCausalLM"}) and `not model_config.is_moe and not model_config.is_quantized`;
# 0.23.0 :69-75 adds Llama and Mistral (:544-558 the same test); 0.24.0 :550-561 the list
# alone (DeepseekV2ForCausalLM and Qwen2Moe listed); 0.25.0 :557-574 `listed or not
# model_config.is_moe` (Llama no longer listed, :68-74); 0.27.0 :637-658 the same through
# default_v2_model_runner_architectures() (:92-101, CUDA: the list). is_moe: get_num_experts()
# > 0 (0.22.0 config/model.py:1879-1880), the first of num_experts / moe_num_experts /
# n_routed_experts / num_local_experts (0.25.0 transformers_utils/model_arch_config_convertor.py
# :148-165). 0.29.0 on has no per-target rule (0.29.0 config/vllm.py:645-670: env, ROCm,
# Triton, features): V2 for all.
TARGETS = {  # config.json, the file of its class in the release
    "dense-llama": ({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, "llama"),
    "moe-qwen3": ({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
                   "num_experts": 128}, "qwen3_moe"),
    "moe-deepseek-v2": ({"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
                         "n_routed_experts": 160}, "deepseek_v2"),
    "fp8-qwen3": ({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
                   "quantization_config": {"quant_method": "fp8"}}, "qwen3"),
}  # fmt: skip
# the first release from which each target gets V2 when unset, and the last with a rule
V2_FOR_TARGET_FROM = {"dense-llama": "0.23.0", "moe-qwen3": "0.29.0",
                      "moe-deepseek-v2": "0.24.0", "fp8-qwen3": "0.24.0"}  # fmt: skip
PER_TARGET_RULE = ("0.22.0", "0.28.0")


@pytest.mark.parametrize("version", since("vllm", V2_BY_DEFAULT_FROM))
def test_vllm_runner_is_chosen_per_target_as_the_release_does(version):
    rel = sweep_release("vllm", version)
    code = EngineCode("vllm", str(rel.package))
    for name in (code_markers.VLLM_V2_MARKER, *code_markers.VLLM_RUNNER_FILES):
        path = rel.package / name
        if path.is_file():
            code.index.add(str(path), path.read_text())
    versions = SWEEP_VERSIONS["vllm"]
    at = versions.index(version)
    ruled = versions.index(PER_TARGET_RULE[0]) <= at <= versions.index(PER_TARGET_RULE[1])
    for name, (config, module) in TARGETS.items():
        model = rel.package / f"model_executor/models/{module}.py"
        code.index.add(str(model), model.read_text())
        target = vllm_target(code, config, str(model), config["architectures"][0])
        assert target["bases"] and "IsHybrid" not in target["bases"], name
        expected = at >= versions.index(V2_FOR_TARGET_FROM[name])
        assert vllm_v2_serves(code, None, target) is expected, name
        choice = vllm_v2_for_target(code, target)
        assert (choice is not None) is ruled, name
        if choice:
            assert choice["where"].startswith("config/vllm.py:") and choice["v2"] is expected
        # the server's own setting still decides over the target (0.22.0 config/vllm.py:493-496)
        assert vllm_v2_serves(code, {"VLLM_USE_V2_MODEL_RUNNER": "1"}, target) is True


def test_vllm_hybrid_target_runs_v1_by_its_class_interfaces():
    # 0.25.0 config/vllm.py:565-566 `if getattr(model_config, "is_hybrid", False): return False`
    # before the not-MoE test; is_hybrid comes from the class's IsHybrid interface
    # (model_executor/models/interfaces.py:790-795), which FalconH1ForCausalLM, a dense hybrid,
    # has (model_executor/models/falcon_h1.py:496-503)
    rel = sweep_release("vllm", "0.25.0")
    code = EngineCode("vllm", str(rel.package))
    model = "model_executor/models/falcon_h1.py"
    for name in (code_markers.VLLM_V2_MARKER, *code_markers.VLLM_RUNNER_FILES, model):
        code.index.add(str(rel.package / name), (rel.package / name).read_text())
    config = {"architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1"}
    path = str(rel.package / model)
    hybrid = vllm_target(code, config, path, "FalconH1ForCausalLM")
    assert "IsHybrid" in hybrid["bases"]
    assert vllm_v2_for_target(code, hybrid) == {"v2": False, "where": "config/vllm.py:557"}
    unread = vllm_target(code, config, None, None)  # the class not read: undecided, V2 as before
    assert vllm_v2_for_target(code, unread) is None


@pytest.mark.sweep
@pytest.mark.parametrize(
    "scenario,engine",
    [pytest.param(s, e, id=f"{s}-{e}") for s, rows in MORE.items() for e in rows],
)
def test_more_engines(tmp_path, scenario, engine):
    """LMDeploy, Aphrodite and TokenSpeed on the release each profile was read from."""
    distribution, version = MORE_ENGINES[engine]
    rel = release(distribution, version)
    expected = MORE[scenario][engine]
    got = audit(build_box(tmp_path, engine, version, scenario), str(rel.venv))
    problems = check(got, expected)
    assert not problems, (f"{scenario} on {engine} {version}: {'; '.join(problems)}\n"
                          f"  expected because: {expected['cite']}\n"
                          f"  headline: {got['headline']}")  # fmt: skip
