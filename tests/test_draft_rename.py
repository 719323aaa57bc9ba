"""The draft architecture an engine gives a config, run from the release's own code
(remotedbg.analysis.draft_rename): real releases, each expectation read from the cited lines;
a patched copy is followed; code that cannot be decided or raises says so, never guesses."""

from __future__ import annotations

from pathlib import Path

import pytest

from remotedbg.analysis.draft_rename import method_by_model_type, rename
from remotedbg.analysis.pysource import SourceIndex
from remotedbg.engines.profiles import engine_profile
from tests.releases import release

pytestmark = pytest.mark.network

MIMO = {"architectures": ["MiMoForCausalLM"], "model_type": "mimo", "num_nextn_predict_layers": 1}
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3"}
QWEN3_NEXT = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next"}
GLM4_MOE = {"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe"}
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}
EAGLE3_HEAD = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama"}

# (engine, version, config, the architecture its code gives a draft (None: unchanged), where)
CASES = [
    ("vllm", "0.33.0", MIMO, "MiMoMTPModel", "config/speculative.py:795-804"),
    ("vllm", "0.33.0", DEEPSEEK_V3, "DeepSeekMTPModel", "config/speculative.py:749-763"),
    ("vllm", "0.33.0", QWEN3_NEXT, "Qwen3NextMTP", "config/speculative.py:908-913"),
    ("vllm", "0.33.0", GLM4_MOE, "Glm4MoeMTPModel", "config/speculative.py:848-855"),
    ("vllm", "0.33.0", LLAMA, None, "config/speculative.py:711-1000: no branch for llama"),
    ("vllm", "0.10.1.1", MIMO, "MiMoMTPModel", "config/__init__.py:2019-2026"),
    ("vllm", "0.10.1.1", DEEPSEEK_V3, "DeepSeekMTPModel", "config/__init__.py:2010-2018"),
    ("vllm", "0.10.1.1", GLM4_MOE, "Glm4MoeMTPModel", "config/__init__.py:2028-2035"),
    # 0.10.1.1 has no qwen3_next branch (it arrives in 0.10.2): the config stays as it is
    ("vllm", "0.10.1.1", QWEN3_NEXT, None, "config/__init__.py:2009-2040"),
    ("sglang", "0.5.6", MIMO, "MiMoMTP", "srt/configs/model_config.py:269-270"),
    ("sglang", "0.5.6", DEEPSEEK_V3, "DeepseekV3ForCausalLMNextN", "model_config.py:253-257"),
    ("sglang", "0.5.6", QWEN3_NEXT, "Qwen3NextForCausalLMMTP", "model_config.py:282-284"),
    ("sglang", "0.5.6", GLM4_MOE, "Glm4MoeForCausalLMNextN", "model_config.py:259-260"),
    ("sglang", "0.5.6", EAGLE3_HEAD, None, "model_config.py:250-284: no branch for it"),
    ("sglang", "0.5.23", MIMO, "MiMoMTP", "srt/configs/model_config.py:1092-1093"),
    ("sglang", "0.5.23", DEEPSEEK_V3, "DeepseekV3ForCausalLMNextN", "model_config.py:1032-1036"),
    ("sglang", "0.5.23", QWEN3_NEXT, "Qwen3NextForCausalLMMTP", "model_config.py:1134-1135"),
    ("sglang", "0.5.23", LLAMA, None, "model_config.py:1010-1211: no branch for llama"),
]


def _index(engine: str, version: str) -> tuple[SourceIndex, str, str]:
    package = release(engine, version).package
    rule = engine_profile(engine).draft_rename
    rel = next(r for r in rule.files if (package / r).is_file())
    index = SourceIndex(engine, str(package))
    index.add(str(package / rel), (package / rel).read_text())
    return index, str(package / rel), rel


IDS = [f"{c[0]}-{c[1]}-{c[2]['architectures'][0]}" for c in CASES]


@pytest.mark.parametrize("engine,version,config,expected,where", CASES, ids=IDS)
def test_the_release_s_own_code_names_the_draft_class(engine, version, config, expected, where):
    index, path, rel = _index(engine, version)
    rule = engine_profile(engine).draft_rename
    found = rename(index, path, rule, config, {"speculative_algorithm": "EAGLE"}, rel)
    assert (found.architecture, found.unknown) == (expected, ""), (where, found)
    assert config["architectures"] == config["architectures"][:1]  # the caller's is not changed


def _patched(tmp_path: Path, old: str, new: str) -> tuple[SourceIndex, str]:
    """vLLM 0.33.0's speculative config with one edit, as a hot-fixed box holds it."""
    source = (release("vllm", "0.33.0").package / "config/speculative.py").read_text()
    assert old in source
    package = tmp_path / "vllm"
    (package / "config").mkdir(parents=True)
    path = package / "config/speculative.py"
    path.write_text(source.replace(old, new, 1))
    index = SourceIndex("vllm", str(package))
    index.add(str(path), path.read_text())
    return index, str(path)


def test_a_patched_rename_is_followed(tmp_path):
    index, path = _patched(tmp_path, '"architectures": ["MiMoMTPModel"]',
                           '"architectures": ["MyMiMoDraft"]')  # fmt: skip
    found = rename(index, path, engine_profile("vllm").draft_rename, MIMO)
    assert found.architecture == "MyMiMoDraft", found


def test_a_rename_on_a_setting_not_known_here_is_undecided(tmp_path):
    index, path = _patched(tmp_path, 'if hf_config.architectures[0] == "MiMoForCausalLM":',
                           'if os.environ.get("MY_MTP") and '
                           'hf_config.architectures[0] == "MiMoForCausalLM":')  # fmt: skip
    found = rename(index, path, engine_profile("vllm").draft_rename, MIMO)
    assert found.architecture is None and "MY_MTP" in found.unknown, found
    assert "depends on settings not known here" in found.unknown, found


def test_a_rename_that_raises_for_the_config_says_so(tmp_path):
    index, path = _patched(tmp_path, 'if hf_config.architectures[0] == "MiMoForCausalLM":',
                           'if hf_config.architectures[0] == "MiMoForCausalLM":\n'
                           '            raise ValueError("MiMo MTP is disabled on this box")')
    found = rename(index, path, engine_profile("vllm").draft_rename, MIMO)
    assert found.architecture is None, found
    assert "raises" in found.unknown and "MiMo MTP is disabled" in found.unknown, found


def test_code_that_is_not_there_or_does_not_parse_is_unknown(tmp_path):
    index, path = _patched(tmp_path, "def hf_config_override(", "def hf_config_override(((")
    found = rename(index, path, engine_profile("vllm").draft_rename, MIMO)
    assert found.architecture is None and "was not read or does not parse" in found.unknown


# (version, the method a draft of this renamed model_type gets when the launch names none, where)
BY_TYPE = [
    ("0.33.0", "glm4_moe_mtp", "mtp", "config/speculative.py:1466-1470 (MTPModelTypes :38)"),
    ("0.33.0", "qwen3_next_mtp", "mtp", "config/speculative.py:1466-1470"),
    ("0.33.0", "llama", None, "config/speculative.py:1466-1470: not an MTP type"),
    ("0.10.1.1", "glm4_moe_mtp", "deepseek_mtp", "config/__init__.py:2145-2147"),
    ("0.10.1.1", "mimo_mtp", "deepseek_mtp", "config/__init__.py:2145-2147"),
    # 0.10.1.1's tuple has three types: Qwen3-Next's arrives with 0.10.2
    ("0.10.1.1", "qwen3_next_mtp", None, "config/__init__.py:2145-2147"),
]


@pytest.mark.parametrize("version,model_type,method,where", BY_TYPE)
def test_the_method_a_draft_s_model_type_gives(version, model_type, method, where):
    index, path, rel = _index("vllm", version)
    rules = [r for r in method_by_model_type(index, path, rel) if model_type in r.model_types]
    assert [r.method for r in rules] == ([method] if method else []), (where, rules)


def test_the_rename_reports_the_model_type_it_leaves():
    index, path, rel = _index("vllm", "0.33.0")
    found = rename(index, path, engine_profile("vllm").draft_rename, GLM4_MOE, rel=rel)
    assert (found.architecture, found.model_type) == ("Glm4MoeMTPModel", "glm4_moe_mtp"), found
