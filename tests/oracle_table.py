"""The engines as the oracle: the speculative configurations SGLang's and vLLM's own tests, docs and
examples run, per release of the sweep (tests/releases.py SWEEP), written down as facts with their
cites; tests/test_oracle.py builds each as real-shape checkpoints and runs `diagnose --no-probe`
(spec-audit inside it) and `vocab-audit` on every release where the configuration runs.

Where a row's facts come from:
- SGLang: the release's own `sglang/test/test_utils.py` (shipped in every wheel of the sweep) names
  the CI's target and draft repos; `release_cites` gives the line in each release and
  tests/test_oracle.py checks the names against the downloaded release. The launch flags come from
  the CI test files on GitHub (`sgl-project/sglang`, path@commit:line). A row without `constant`
  (the FR-Spec token map) is named literally by that test file, its cite.
- vLLM: each release's source archive holds its tests, examples and docs; `VLLM_SOURCES` gives the
  file:line where the draft repo is named in each release (the e2e test while it exists, else the
  next test or example), checked against the archives by tests/test_oracle.py (sweep). vLLM
  0.15.0 and 0.15.1 have no source archive on the registry: they are between releases that both
  run the configuration and are counted with them (their wheels carry no tests).

The published configs (hidden size, layers, vocabulary, draft vocabulary, RoPE, eos) are written in
tests/test_oracle.py's shapes from the models' config.json facts as the engines' repositories and
the existing shapes (tests/realshape.py) state them; where a value cannot be known offline the row's
`published` says which documented config stands in. Nothing here was derived from remotedbg's
output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.releases import SGLANG_SWEEP, VLLM_SWEEP

SWEEP_VERSIONS = {"sglang": SGLANG_SWEEP, "vllm": VLLM_SWEEP}


def between(engine: str, first: str, last: str | None = None) -> tuple[str, ...]:
    versions = SWEEP_VERSIONS[engine]
    end = versions.index(last) + 1 if last else len(versions)
    return tuple(versions[versions.index(first) : end])


@dataclass(frozen=True)
class Config:
    id: str
    engine: str
    fmt: str  # EAGLE-1, EAGLE-3, MTP, speculators
    target: str  # the target's repo id
    draft: str  # the draft's repo id; "" when the engine takes the target's own MTP layer
    algorithm: str
    flags: str  # SGLang: the speculative launch flags; vLLM: other CLI flags
    cite: str  # where the flags are (repo/path@commit:line)
    versions: tuple[str, ...]  # the sweep's releases whose own tests/docs run it
    build: str  # tests/test_oracle.py BUILDS key
    published: str  # what the built config.json files are written from
    # "args" (draft given as a flag), "serve-speculator" (vllm serve DIR), "spec-flags" (vLLM
    # 0.22.0 on: --spec-method, --spec-model and --spec-tokens, the rest in --speculative-config)
    launch: str = "args"
    constant: str = ""  # SGLang: test_utils.py's name of the draft repo
    spec: dict = field(default_factory=dict)  # vLLM: --speculative-config keys beside "model"
    notes: dict = field(default_factory=dict)
    # rows added after the sweep's budget was set (issue 42's second round): the sweep runs them
    # on their last release only, every content group's under REMOTEDBG_ORACLE_FULL=1
    once: bool = False
    # what the cited files name the row by, where its draft (or target) repo is another row's
    cites_as: str = ""
    # distributions ("name==version") the engine needs beside it for the row, as its docs say
    # to install them (tests/test_oracle.py judges the row in a venv that has them)
    beside: tuple[str, ...] = ()
    # flags as the cited launch spells them, where it gives argparse's prefix of the full name
    # (SGLang's docs: --model, --mem-fraction, --speculative-algo)
    spelled: dict = field(default_factory=dict)


_SGL_EAGLE_A = "sgl-project/sglang/test/srt/test_eagle_infer_a.py@104ef15a6939"
_SGL_MLA = "sgl-project/sglang/test/srt/test_mla_deepseek_v3.py@d245e9b8e5d2"

SGLANG_CONFIGS = [
    Config(
        "sglang-eagle1-llama2-7b", "sglang", "EAGLE-1", "meta-llama/Llama-2-7b-chat-hf",
        "lmsys/sglang-EAGLE-llama2-chat-7B", "EAGLE",
        "--speculative-num-steps 5 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8",
        f"{_SGL_EAGLE_A}:28-34 (TestEAGLEEngine.BASE_CONFIG)", SGLANG_SWEEP, "eagle1-llama2-7b",
        "Llama-2-7b-chat-hf config.json (hidden 4096, 32 layers, 32 heads and kv heads, vocab "
        "32000, rope_theta 10000, 4096 positions, eos 2); the head: one layer of the target's "
        "shape, LlamaForCausalLMEagle (SGLang's EAGLE-1 EntryClass, srt/models/llama_eagle.py)",
        constant="DEFAULT_EAGLE_DRAFT_MODEL_FOR_TEST|DEFAULT_DRAFT_MODEL_EAGLE",
    ),
    Config(
        "sglang-eagle3-llama31-8b-jamesliu1", "sglang", "EAGLE-3",
        "meta-llama/Llama-3.1-8B-Instruct",
        "jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B", "EAGLE3",
        "--speculative-num-steps 5 --speculative-eagle-topk 16 --speculative-num-draft-tokens 64 "
        "--dtype float16", f"{_SGL_EAGLE_A}:168-177 (TestEAGLE3Engine.BASE_CONFIG)",
        between("sglang", "0.4.6.post5", "0.5.2"), "eagle3-llama31-8b-sglang",
        "Llama-3.1-8B-Instruct config.json (llama3 rope_scaling factor 8 from 8192, 131072 "
        "positions, eos 128001/128008/128009); the head: LlamaForCausalLMEagle3, draft_vocab_size "
        "32000, trained at 2048 positions (the EAGLE-3 authors' config)",
        constant="DEFAULT_MODEL_NAME_FOR_TEST_EAGLE3",
    ),
    Config(
        "sglang-eagle3-llama31-8b-lmsys", "sglang", "EAGLE-3", "meta-llama/Llama-3.1-8B-Instruct",
        "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B", "EAGLE3",
        "--speculative-num-steps 5 --speculative-eagle-topk 16 --speculative-num-draft-tokens 64 "
        "--dtype float16", f"{_SGL_EAGLE_A}:168-177 (TestEAGLE3Engine.BASE_CONFIG)",
        between("sglang", "0.5.3"), "eagle3-llama31-8b-sglang",
        "as sglang-eagle3-llama31-8b-jamesliu1 (the same head republished under lmsys/)",
        constant="DEFAULT_MODEL_NAME_FOR_TEST_EAGLE3|DEFAULT_DRAFT_MODEL_EAGLE3",
    ),
    Config(
        "sglang-eagle3-qwen3-30b-a3b", "sglang", "EAGLE-3", "Qwen/Qwen3-30B-A3B",
        "Tengyunw/qwen3_30b_moe_eagle3", "EAGLE3",
        "--speculative-num-steps 5 --speculative-eagle-topk 8 --speculative-num-draft-tokens 32 "
        "--trust-remote-code --tp-size 8 --dp-size 2 --enable-dp-attention",
        "sgl-project/sglang/test/srt/test_eagle_infer_a.py (TestEAGLE3EngineDPAttention, from "
        "0.5.4.post2; the stored copy read has no commit: flags as its other_args list them)",
        between("sglang", "0.5.4.post2"), "eagle3-qwen3-30b-a3b",
        "Qwen3-30B-A3B config.json (tests/realshape.py QWEN3_30B_A3B); the head's config is not "
        "known offline: SpecForge's qwen3-30B-A3B EAGLE-3 template stands in (hidden 2048, 32 "
        "heads, 4 kv heads, head_dim 128, draft_vocab_size 32000)",
        constant="DEFAULT_EAGLE_DP_ATTENTION_DRAFT_MODEL_FOR_TEST|DEFAULT_DRAFT_MODEL_EAGLE_DP_ATTN",
    ),
    Config(
        "sglang-mtp-dsv3-nextn", "sglang", "MTP", "lmsys/sglang-ci-dsv3-test",
        "lmsys/sglang-ci-dsv3-test-NextN", "EAGLE",
        "--speculative-num-steps 2 --speculative-eagle-topk 4 --speculative-num-draft-tokens 4 "
        "--trust-remote-code", f"{_SGL_MLA}:153-175 (TestDeepseekV3MTPWithDraft, the draft given "
        "as `--speculative-draft`, argparse's prefix of --speculative-draft-model-path)",
        SGLANG_SWEEP, "mtp-dsv3-nextn",
        "the CI's sglang-ci-dsv3-test is a reduced DeepSeek-V3 whose config is not known offline: "
        "DeepSeek-V3's config.json stands in (tests/realshape.py DEEPSEEK_V3); the NextN head as "
        "SGLang's export keeps layer 61 (realshape.nextn_tensors, 8 experts written)",
        constant="DEFAULT_MODEL_NAME_FOR_TEST_MLA_NEXTN",
    ),
    Config(
        "sglang-mtp-dsv3-in-target", "sglang", "MTP", "lmsys/sglang-ci-dsv3-test", "",
        "EAGLE", "--speculative-num-steps 2 --speculative-eagle-topk 4 "
        "--speculative-num-draft-tokens 4 --trust-remote-code",
        f"{_SGL_MLA}:94-114 (TestDeepseekV3MTP: EAGLE with no draft path, the target's own MTP "
        "layer)", SGLANG_SWEEP, "mtp-dsv3-in-target",
        "DeepSeek-V3's config.json stands in for the CI's reduced model (as sglang-mtp-dsv3-"
        "nextn); its checkpoint is written with what the draft loads from it (layer 61, the "
        "embedding, the head), not the 61 target layers",
        constant="DEFAULT_MODEL_NAME_FOR_TEST_MLA",
    ),
]

SGLANG_CONFIGS += [
    Config(
        "sglang-eagle1-llama3-8b-token-map", "sglang", "EAGLE-1",
        "meta-llama/Meta-Llama-3-8B-Instruct", "lmsys/sglang-EAGLE-LLaMA3-Instruct-8B", "EAGLE",
        "--speculative-num-steps 5 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8 "
        "--speculative-token-map thunlp/LLaMA3-Instruct-8B-FR-Spec/freq_32768.pt --dtype float16",
        f"{_SGL_EAGLE_A}:148-160 (TestEAGLEEngineTokenMap: FR-Spec's 32768 frequent ids as the "
        "draft's vocab, the map a hub file path)", SGLANG_SWEEP, "eagle1-llama3-8b-sglang",
        "Meta-Llama-3-8B-Instruct config.json (8192 positions, eos 128009); the EAGLE authors' "
        "head of its shape as SGLang serves it (LlamaForCausalLMEagle, no lm_head: the worker "
        "gives it the target's, then cuts it to the map's rows)", once=True,
    ),
]

# vLLM: release -> where the draft repo is named (the archive's tests, examples, docs), in ranges
# that keep one path; a line moves within a range (the archive is checked, the first line kept).
def _registry_lines(lines: tuple[tuple[str, int], ...]) -> list[tuple[str, str]]:
    """A tests/models/registry.py example's line in each release's archive, from that release."""
    return [(version, f"tests/models/registry.py:{line}") for version, line in lines]


VLLM_SOURCES = {
    "yuhuili/EAGLE-LLaMA3.1-Instruct-8B": [
        ("0.8.5", "tests/v1/e2e/test_spec_decode.py:56"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:640"),
        ("0.27.0", "tests/entrypoints/llm/test_struct_output_generate.py:138"),
    ],
    "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B": [
        ("0.8.5", "tests/v1/e2e/test_spec_decode.py:60"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:587"),
        ("0.27.0", "tests/v1/e2e/spec_decode/eagle/test_eagle_correctness.py:130"),
    ],
    "AngelSlim/Qwen3-8B_eagle3": [
        ("0.10.1", "tests/v1/e2e/test_spec_decode.py:132"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:540"),
        ("0.27.0", "tests/v1/e2e/spec_decode/eagle/test_eagle_correctness.py:79"),
    ],
    "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3": [
        ("0.11.1", "tests/v1/e2e/test_spec_decode.py:205"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:278"),
        ("0.27.0", "tests/v1/e2e/spec_decode/speculators/test_speculators.py:16"),
    ],
    "RedHatAI/Qwen3-8B-speculator.eagle3": [
        ("0.11.1", "tests/v1/e2e/test_spec_decode.py:206"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:279"),
        ("0.27.0", "tests/v1/e2e/spec_decode/speculators/test_speculators.py:17"),
    ],
    "RedHatAI/gpt-oss-20b-speculator.eagle3": [
        ("0.16.0", "tests/entrypoints/openai/test_serving_chat.py:44"),
        ("0.18.0", "tests/entrypoints/openai/chat_completion/test_serving_chat.py:49"),
    ],
    "morgendave/EAGLE-Llama-4-Scout-17B-16E-Instruct": [
        ("0.10.0", "tests/v1/e2e/test_spec_decode.py:113"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:654"),
        ("0.27.0", "tests/distributed/test_eplb_spec_decode.py:65"),
    ],
    "ZixiQi/DeepSeek-V3-4layers-MTP-FP8": [
        ("0.11.0", "tests/v1/e2e/test_spec_decode.py:231"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:707"),
        ("0.27.0", "tests/v1/e2e/spec_decode/mtp/test_mtp.py:27"),
        ("0.31.0", "tests/v1/e2e/spec_decode/mtp/deepseek/test_mtp.py:17"),
    ],
    "taobao-mnn/Qwen3-VL-8B-Instruct-Eagle3": [
        ("0.28.0", "tests/v1/e2e/spec_decode/eagle/test_eagle_correctness.py:103"),
    ],
    "Rayzl/qwen2.5-vl-7b-eagle3-sgl": [
        ("0.11.1", "tests/v1/e2e/test_spec_decode.py:290"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:572"),
        ("0.27.0", "tests/v1/e2e/spec_decode/eagle/test_eagle_correctness.py:115"),
    ],
    "nm-testing/Speculator-Qwen3-30B-MOE-VL-Eagle3": [
        ("0.16.0", "tests/v1/spec_decode/test_acceptance_length.py:74"),
    ],
    "eagle618/eagle-deepseek-v3-random": [
        ("0.10.2", "tests/v1/e2e/test_spec_decode.py:145"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:494"),
        ("0.27.0", "tests/v1/e2e/spec_decode/eagle/test_eagle_correctness.py:34"),
    ],
    **{draft: [("0.8.5", f"docs/source/features/spec_decode.md:{old}"),
               ("0.9.0", f"docs/features/spec_decode.md:{new}"),
               ("0.16.0", f"docs/features/spec_decode/README.md:{last}")]
       for draft, old, new, last in (("yuhuili/EAGLE-Vicuna-7B-v1.3", 223, 226, 284),
                                     ("yuhuili/EAGLE-llama2-chat-7B", 226, 229, 287),
                                     ("yuhuili/EAGLE-Vicuna-13B-v1.3", 224, 227, 285),
                                     ("yuhuili/EAGLE-Vicuna-33B-v1.3", 225, 228, 286),
                                     ("yuhuili/EAGLE-llama2-chat-13B", 227, 230, 288),
                                     ("yuhuili/EAGLE-llama2-chat-70B", 228, 231, 289),
                                     ("yuhuili/EAGLE-LLaMA3-Instruct-70B", 231, 234, 292))},
    "XiaomiMiMo/MiMo-7B-Base": [
        ("0.11.0", "tests/v1/e2e/test_spec_decode.py:230"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:706"),
        ("0.27.0", "tests/v1/e2e/spec_decode/mtp/test_mtp.py:25"),
        ("0.31.0", "tests/v1/e2e/spec_decode/mtp/mimo/test_mtp.py:16"),
    ],
    "zai-org/GLM-4.5": [("0.10.1", "tests/models/registry.py:555")],
    # tests/models/registry.py's MiMoMTPModel example, its line in each release's archive
    "XiaomiMiMo/MiMo-7B-RL": _registry_lines((
        ("0.9.0", 437), ("0.9.1", 430), ("0.9.2", 454), ("0.10.0", 499), ("0.10.1", 559),
        ("0.10.2", 643), ("0.11.0", 652), ("0.11.1", 893),
        ("0.12.0", 921), ("0.13.0", 934), ("0.14.0", 1029), ("0.16.0", 1122), ("0.17.0", 1189),
        ("0.18.0", 1249), ("0.18.1", 1250), ("0.19.0", 1282), ("0.19.1", 1409), ("0.20.1", 1538),
        ("0.21.0", 1554), ("0.22.0", 1591), ("0.22.1", 1592), ("0.23.0", 1624), ("0.24.0", 1625),
        ("0.25.0", 1631), ("0.26.0", 1677), ("0.27.0", 1690), ("0.28.0", 1764), ("0.29.0", 1762),
        ("0.30.0", 1806), ("0.31.0", 1813), ("0.32.0", 1763)
    )),
    # tests/models/registry.py's ErnieMTPModel example, its line in each release's archive
    "baidu/ERNIE-4.5-21B-A3B-PT": _registry_lines((
        ("0.10.2", 636), ("0.11.0", 641), ("0.11.1", 879), ("0.12.0", 907), ("0.13.0", 920),
        ("0.14.0", 1010), ("0.16.0", 1092), ("0.17.0", 1155), ("0.18.0", 1214), ("0.18.1", 1215),
        ("0.19.0", 1247), ("0.19.1", 1374), ("0.20.1", 1494), ("0.21.0", 1510), ("0.22.0", 1547),
        ("0.22.1", 1548), ("0.23.0", 1580), ("0.24.0", 1581), ("0.25.0", 1587), ("0.26.0", 1626),
        ("0.27.0", 1633), ("0.28.0", 1701), ("0.29.0", 1694), ("0.30.0", 1735), ("0.31.0", 1742),
        ("0.32.0", 1697)
    )),
    "Qwen/Qwen3-Next-80B-A3B-Instruct": [
        ("0.11.1", "tests/distributed/test_eplb_spec_decode.py:47"),
        ("0.12.0", "tests/distributed/test_eplb_spec_decode.py:52"),
        ("0.13.0", "tests/distributed/test_eplb_spec_decode.py:59"),
        ("0.23.0", "tests/distributed/test_eplb_spec_decode.py:58"),
        ("0.32.0", "tests/distributed/test_eplb_spec_decode.py:253"),
    ],
    "yuhuili/EAGLE-LLaMA3-Instruct-8B": [
        ("0.8.5", "docs/source/features/spec_decode.md:189"),
        ("0.9.0", "docs/features/spec_decode.md:192"),
        ("0.16.0", "docs/features/spec_decode/README.md:245"),
        ("0.17.0", "docs/features/speculative_decoding/eagle.md:17"),
    ],
}

_VLLM_E2E = ("vllm-project/vllm tests/v1/e2e/test_spec_decode.py@v0.8.5:128-136 "
             "(test_eagle_correctness: speculative_config method, model, num_speculative_tokens 3, "
             "max_model_len 2048; LLM(max_model_len=2048))")
_E2E_SPEC = {"num_speculative_tokens": 3, "max_model_len": 2048}

VLLM_CONFIGS = [
    Config(
        "vllm-eagle1-llama31-8b", "vllm", "EAGLE-1", "meta-llama/Llama-3.1-8B-Instruct",
        "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "eagle", "--max-model-len 2048", _VLLM_E2E,
        VLLM_SWEEP, "eagle1-llama31-8b-vllm",
        "Llama-3.1-8B-Instruct config.json; the EAGLE authors' head: LlamaForCausalLM, one layer, "
        "embed_tokens, fc [4096, 8192] with bias, no lm_head (vLLM's docs: EAGLE-1 heads from "
        "SafeAILab/EAGLE)",
        spec=_E2E_SPEC,
    ),
    Config(
        "vllm-eagle3-llama31-8b", "vllm", "EAGLE-3", "meta-llama/Llama-3.1-8B-Instruct",
        "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "eagle3", "--max-model-len 2048", _VLLM_E2E,
        VLLM_SWEEP, "eagle3-llama31-8b-vllm",
        "Llama-3.1-8B-Instruct config.json; the EAGLE-3 authors' head names the plain "
        "LlamaForCausalLM (vLLM 0.9.0-0.10.1.1 serve it in CI, where only that name becomes "
        "Eagle3LlamaForCausalLM: tests/sweep_table.py VLLM_PLAIN_LLAMA_ARCH), draft_vocab_size "
        "32000, 2048 positions",
        spec=_E2E_SPEC,
    ),
    Config(
        "vllm-eagle3-qwen3-8b", "vllm", "EAGLE-3", "Qwen/Qwen3-8B", "AngelSlim/Qwen3-8B_eagle3",
        "eagle3", "--max-model-len 2048", _VLLM_E2E,
        between("vllm", "0.10.1"), "eagle3-qwen3-8b-vllm",
        "Qwen3-8B config.json (tests/realshape.py QWEN3_8B with its 40960 positions); the head's "
        "config is not known offline: a SpecForge-style head of the target's shape naming "
        "LlamaForCausalLM stands in (vLLM 0.10.1-0.10.1.1 serve it in CI, where the SpecForge "
        "name is unregistered)",
        spec=_E2E_SPEC,
    ),
    Config(
        "vllm-speculators-llama31-8b", "vllm", "speculators",
        "meta-llama/Llama-3.1-8B-Instruct (the speculator's verifier)",
        "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3", "eagle3 (from speculators_config)",
        "--max-model-len 1024",
        "vllm-project/vllm tests/v1/e2e/test_spec_decode.py (v0.11.1:200-215 "
        "test_speculators_model_integration: LLM(model=model_path, max_model_len=1024))",
        between("vllm", "0.11.1"), "speculators-llama31-8b", launch="serve-speculator",
        published="vllm-project/speculators' Eagle3SpeculatorConfig (tests/realshape.py "
        "speculators_eagle3_config) for Llama-3.1-8B-Instruct, 3 speculative tokens",
    ),
    Config(
        "vllm-speculators-qwen3-8b", "vllm", "speculators", "Qwen/Qwen3-8B (the verifier)",
        "RedHatAI/Qwen3-8B-speculator.eagle3", "eagle3 (from speculators_config)",
        "--max-model-len 1024", "as vllm-speculators-llama31-8b (v0.11.1:206)",
        between("vllm", "0.11.1"), "speculators-qwen3-8b", launch="serve-speculator",
        published="Eagle3SpeculatorConfig for Qwen3-8B (the layer config of the target's shape, "
        "verifier Qwen3ForCausalLM)",
    ),
    Config(
        "vllm-eagle1-llama3-8b", "vllm", "EAGLE-1", "meta-llama/Meta-Llama-3-8B-Instruct",
        "yuhuili/EAGLE-LLaMA3-Instruct-8B", "(none: the method from the draft's name)",
        "--tensor-parallel-size 4",
        "vllm-project/vllm docs/features/spec_decode.md@v0.9.2:198-205 (LLM(model=Meta-Llama-3-"
        "8B-Instruct, tensor_parallel_size=4, speculative_config={model, "
        "draft_tensor_parallel_size 1, num_speculative_tokens 2}): no method, derived from the "
        "draft's name; later docs add method eagle)", between("vllm", "0.9.2"),
        "eagle1-llama3-8b-vllm",
        "Meta-Llama-3-8B-Instruct config.json (8192 positions, no rope_scaling, eos 128009); the "
        "EAGLE authors' head of its shape, LlamaForCausalLM",
        spec={"draft_tensor_parallel_size": 1, "num_speculative_tokens": 2},
    ),
]

VLLM_CONFIGS += [
    Config(
        "vllm-speculators-gpt-oss-20b", "vllm", "speculators", "openai/gpt-oss-20b",
        "RedHatAI/gpt-oss-20b-speculator.eagle3", "eagle3",
        "--enforce-eager --max-model-len 4096 --reasoning-parser openai_gptoss "
        "--gpu-memory-utilization 0.85 --attention-backend=TRITON_ATTN",
        "vllm-project/vllm tests/entrypoints/openai/test_serving_chat.py@v0.16.0:44, 75-88, "
        "110-124 (gptoss_speculative_server: `vllm serve openai/gpt-oss-20b` with the default "
        "server args and --speculative-config {model, method eagle3, num_speculative_tokens "
        "3}); tests/v1/spec_decode/test_acceptance_length.py@v0.16.0:62-68 runs the same pair "
        "(max_model_len 16384, tp 1/2/4)", between("vllm", "0.16.0"), "speculators-gpt-oss-20b",
        "openai/gpt-oss-20b config.json (hidden 2880, 24 layers, 64 heads, 8 kv heads, head_dim "
        "64, vocab 201088, YaRN x32 from 4096, sliding window 128, 32 MXFP4 experts, eos "
        "200002); the speculator's config is not known offline: an Eagle3SpeculatorConfig of the "
        "target's shape (tests/realshape.py speculators_eagle3_config: the layer config with the "
        "target's RoPE and positions, draft_vocab_size 32000, verifier GptOssForCausalLM) "
        "stands in",
        spec={"num_speculative_tokens": 3}, once=True,
    ),
    Config(
        "vllm-eagle1-llama4-scout", "vllm", "EAGLE-1", "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        "morgendave/EAGLE-Llama-4-Scout-17B-16E-Instruct", "eagle",
        "--max-model-len 2048 --tensor-parallel-size 4 --trust-remote-code",
        "vllm-project/vllm tests/v1/e2e/test_spec_decode.py@v0.10.0:113 (test_eagle_correctness "
        "llama4_eagle: method eagle, tp 4, num_speculative_tokens 3, max_model_len 2048; marked "
        "skip for CI OOM from 0.11.0) and tests/distributed/test_eplb_spec_decode.py (eagle, tp "
        "4, from 0.11.1); tests/models/registry.py names it EagleLlama4ForCausalLM's example",
        between("vllm", "0.10.0"), "eagle1-llama4-scout-vllm",
        "Llama-4-Scout-17B-16E-Instruct config.json (Llama4ForConditionalGeneration, text_config "
        "hidden 5120, 48 layers, 40 heads, 8 kv heads, vocab 202048, llama3 x16 RoPE to 10485760 "
        "positions, eos 200001/200007/200008); the head's config is not known offline: what "
        "EagleLlama4ForCausalLM builds stands in (a one-layer dense Llama4ForCausalLM of the "
        "text model's shape, fc [5120, 10240], norm; no embedding or head, the target's shared)",
        spec=_E2E_SPEC, once=True,
    ),
    Config(
        "vllm-mtp-dsv3-4layers-fp8", "vllm", "MTP", "ZixiQi/DeepSeek-V3-4layers-MTP-FP8", "",
        "mtp", "--max-model-len 2048 --trust-remote-code",
        "vllm-project/vllm tests/v1/e2e/test_spec_decode.py@v0.11.0:226-260 "
        "(test_mtp_correctness deepseek: LLM(model, trust_remote_code, tp 1, speculative_config "
        "{method mtp, num_speculative_tokens 1, max_model_len 2048}, max_model_len 2048): no "
        "draft model, the target's own MTP layer (deepseek_mtp: config/speculative.py)",
        between("vllm", "0.11.0"), "mtp-dsv3-4l-fp8-vllm",
        "the repo's config is not known offline: DeepSeek-V3's config.json (tests/realshape.py "
        "DEEPSEEK_V3) with 4 layers and its FP8 quantization_config (e4m3, 128x128 blocks) "
        "stands in; the checkpoint as the draft reads it: the MTP layer (model.layers.4, 8 "
        "experts written, projections F8_E4M3 with weight_scale_inv), the embedding, the head",
        spec={"num_speculative_tokens": 1, "max_model_len": 2048}, once=True,
    ),
    Config(
        "vllm-eagle3-qwen3-vl-8b", "vllm", "EAGLE-3", "Qwen/Qwen3-VL-8B-Instruct",
        "taobao-mnn/Qwen3-VL-8B-Instruct-Eagle3", "eagle3", "--max-model-len 2048",
        "vllm-project/vllm tests/v1/e2e/spec_decode/eagle/test_eagle_correctness.py@v0.28.0:"
        "100-110 (test_eagle_correctness_medium qwen3_vl_eagle3: method eagle3, tp 1; listed "
        "from 0.12.0 but skipped to 0.27.1: 'architecture of its eagle3 is "
        "LlamaForCausalLMEagle3')", between("vllm", "0.28.0"), "eagle3-qwen3-vl-8b-vllm",
        "Qwen3-VL-8B-Instruct config.json (Qwen3VLForConditionalGeneration, text_config hidden "
        "4096, 36 layers, 32 heads, 8 kv heads, vocab 151936, interleaved M-RoPE, 262144 "
        "positions); the head's config is not known offline: a SpecForge head of the text "
        "model's shape naming LlamaForCausalLMEagle3 (the name vLLM's skip gives) stands in",
        spec=_E2E_SPEC, once=True,
    ),
    Config(
        "vllm-eagle3-qwen25-vl-7b", "vllm", "EAGLE-3", "Qwen/Qwen2.5-VL-7B-Instruct",
        "Rayzl/qwen2.5-vl-7b-eagle3-sgl", "eagle3", "--max-model-len 2048",
        "vllm-project/vllm tests/v1/e2e/test_spec_decode.py@v0.11.1:282-300 "
        "(test_eagle_correctness, method eagle3, tp 1; listed in every release since and "
        "skipped in each: 'head_dim not being a multiple of 32', from 0.28.0 'not yet "
        "reliable'): the configuration vLLM names, judged as a checkpoint",
        between("vllm", "0.11.1"), "eagle3-qwen25-vl-7b-vllm",
        "Qwen2.5-VL-7B-Instruct config.json (hidden 3584, 28 layers, 28 heads, 4 kv heads, vocab "
        "152064, M-RoPE, 128000 positions); the head's config is not known offline: a SpecForge "
        "head of the target's shape naming LlamaForCausalLMEagle3 stands in",
        spec=_E2E_SPEC, once=True,
    ),
    Config(
        "vllm-speculators-qwen3-vl-30b-a3b", "vllm", "speculators",
        "Qwen/Qwen3-VL-30B-A3B-Instruct-FP8", "nm-testing/Speculator-Qwen3-30B-MOE-VL-Eagle3",
        "eagle3", "--max-model-len 16384",
        "vllm-project/vllm tests/v1/spec_decode/test_acceptance_length.py@v0.16.0:72-82, "
        "241-252 (qwen3-30b-moe-vl-eagle3, slow_test: VllmRunner(verifier, speculative_config "
        "{method eagle3, model, num_speculative_tokens 3}, tp 1/2/4, max_model_len 16384))",
        between("vllm", "0.16.0"), "speculators-qwen3-vl-30b-a3b",
        "Qwen3-VL-30B-A3B-Instruct-FP8 config.json (Qwen3VLMoeForConditionalGeneration, "
        "text_config of Qwen3-30B-A3B's shape with M-RoPE to 262144 positions, block FP8); the "
        "speculator's config is not known offline: an Eagle3SpeculatorConfig of the text "
        "model's shape (verifier Qwen3VLMoeForConditionalGeneration) stands in",
        spec={"num_speculative_tokens": 3}, once=True,
    ),
    Config(
        "vllm-eagle1-deepseek-v3-random", "vllm", "EAGLE-1", "eagle618/deepseek-v3-random",
        "eagle618/eagle-deepseek-v3-random", "eagle", "--max-model-len 2048 --trust-remote-code",
        "vllm-project/vllm tests/v1/e2e/test_spec_decode.py@v0.10.2:140-145 "
        "(test_eagle_correctness deepseek_eagle: method eagle, tp 1, num_speculative_tokens 3, "
        "max_model_len 2048, trust_remote_code)", between("vllm", "0.10.2"),
        "eagle1-deepseek-v3-random-vllm",
        "random-weight test models whose configs are not known offline: DeepSeek-V3's "
        "config.json with the draft ground truth's values (vLLM tests/config/"
        "draft_model_arch_groundtruth.json@v0.14.0: hidden 2560, 32 heads, 72 experts, vocab "
        "129280) and 5 target layers stands in; the head as EagleDeepseekV3ForCausalLM builds "
        "it (one MLA MoE layer, enorm/hnorm, fc, norm, lm_head, the embedding)",
        spec=_E2E_SPEC, once=True,
    ),
]

# the docs' table of EAGLE heads "loaded and used directly" (0.8.5-0.16.0), served with the docs'
# example beside it: the Llama-family rows (the LLaMA3-Instruct 8B one is vllm-eagle1-llama3-8b)
_DOCS_TABLE = ("vllm-project/vllm docs/features/spec_decode.md@v0.9.2:216-245 (the table of EAGLE "
               "heads, served with the example above it: no method, draft_tensor_parallel_size "
               "1, num_speculative_tokens 2, tensor_parallel_size 4)")
# The Vicuna and LLaMA2-chat heads carry fc.bias (tests/test_oracle.py EAGLE1_WITHOUT_FC_BIAS),
# which vLLM V1 builds without: it stops at start on every release the table is in
# (ENGINE_REFUSES), so those rows have no release to be clean on
_FC_BIAS_HEADS = ("vicuna-7b", "llama2-7b", "vicuna-13b", "vicuna-33b", "llama2-13b",
                  "llama2-70b")
VLLM_CONFIGS += [
    Config(
        f"vllm-eagle1-docs-{key}", "vllm", "EAGLE-1", target, draft,
        "(none: the method from the draft's name)", "--tensor-parallel-size 4", _DOCS_TABLE,
        () if key in _FC_BIAS_HEADS else between("vllm", "0.9.2", "0.16.0"), build,
        f"{target} config.json ({shape}); the EAGLE authors' head of its shape naming "
        "LlamaForCausalLM (their heads are Llama decoder layers)",
        spec={"draft_tensor_parallel_size": 1, "num_speculative_tokens": 2}, once=True,
    )
    for key, target, draft, build, shape in (
        ("vicuna-7b", "lmsys/vicuna-7b-v1.3", "yuhuili/EAGLE-Vicuna-7B-v1.3",
         "eagle1-vicuna-7b-vllm", "Llama 7B: hidden 4096, 32 layers, vocab 32000, 2048 "
         "positions"),
        ("llama2-7b", "meta-llama/Llama-2-7b-chat-hf", "yuhuili/EAGLE-llama2-chat-7B",
         "eagle1-llama2-7b-vllm", "hidden 4096, 32 layers, vocab 32000, 4096 positions"),
        ("vicuna-13b", "lmsys/vicuna-13b-v1.3", "yuhuili/EAGLE-Vicuna-13B-v1.3",
         "eagle1-vicuna-13b-vllm", "Llama 13B: hidden 5120, 40 layers, 40 heads, vocab 32000, "
         "2048 positions"),
        ("vicuna-33b", "lmsys/vicuna-33b-v1.3", "yuhuili/EAGLE-Vicuna-33B-v1.3",
         "eagle1-vicuna-33b-vllm", "Llama 33B: hidden 6656, 60 layers, 52 heads, vocab 32000, "
         "2048 positions"),
        ("llama2-13b", "meta-llama/Llama-2-13b-chat-hf", "yuhuili/EAGLE-llama2-chat-13B",
         "eagle1-llama2-13b-vllm", "hidden 5120, 40 layers, 40 heads, vocab 32000, 4096 "
         "positions"),
        ("llama2-70b", "meta-llama/Llama-2-70b-chat-hf", "yuhuili/EAGLE-llama2-chat-70B",
         "eagle1-llama2-70b-vllm", "hidden 8192, 80 layers, 64 heads, 8 kv heads, vocab 32000, "
         "4096 positions"),
        ("llama3-70b", "meta-llama/Meta-Llama-3-70B-Instruct", "yuhuili/EAGLE-LLaMA3-Instruct-70B",
         "eagle1-llama3-70b-vllm", "hidden 8192, 80 layers, 64 heads, 8 kv heads, vocab 128256, "
         "8192 positions, eos 128009"),
    )
]

# MTP on targets other than DeepSeek-V3: the draft is the target's own MTP layer, the class it is
# loaded as the engine's rename of the target's config (remotedbg.analysis.draft_rename)
SGLANG_CONFIGS.append(Config(
    "sglang-mtp-mimo-7b-rl", "sglang", "MTP", "XiaomiMiMo/MiMo-7B-RL", "", "EAGLE",
    "--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2 "
    "--trust-remote-code --mem-fraction-static 0.5",
    "sgl-project/sglang/test/srt/models/test_mtp_models.py@1b8da533:13, 25-37 (TestMiMoMTP: no "
    "draft path; from pull request 6059, which added the docs' Multi Token Prediction section, "
    "docs/advanced_features/speculative_decoding: the same flags)",
    SGLANG_SWEEP, "mtp-mimo-7b-in-target",
    "MiMo-7B's config.json as a third-party conversion test states it (tests/test_oracle.py "
    "MIMO_7B); the MTP layer's tensor names as SGLang's and vLLM's MiMo loaders read them "
    "(model.mtp_layers.0.*); every release of the sweep renames MiMoForCausalLM to MiMoMTP "
    "for a draft (0.4.6.post5 srt/configs/model_config.py:101-102; 0.5.23 :1092-1093) and takes "
    "the target's path as the draft's (0.4.6.post5 :232-234 `model_path or`)",
    once=True,
))
VLLM_CONFIGS.append(Config(
    "vllm-mtp-mimo-7b-base", "vllm", "MTP", "XiaomiMiMo/MiMo-7B-Base", "", "mtp",
    "--max-model-len 2048",
    "vllm-project/vllm tests/v1/e2e/test_spec_decode.py@v0.11.0:230-260 (test_mtp_correctness: "
    "method mtp, num_speculative_tokens 1, max_model_len 2048, no draft model); docs/features/"
    "speculative_decoding/mtp.md@v0.18.0:21-41 (the same, served)",
    between("vllm", "0.11.0"), "mtp-mimo-7b-in-target",
    "as sglang-mtp-mimo-7b-rl (MiMo-7B-Base: the same model before RL); vLLM renames it "
    "MiMoMTPModel (0.10.1.1 config/__init__.py:2009 hf_config_override; 0.33.0 config/"
    "speculative.py:795-804)", spec={"num_speculative_tokens": 1}, once=True,
))
VLLM_CONFIGS.append(Config(
    "vllm-mtp-glm45-as-its-own-draft", "vllm", "MTP", "zai-org/GLM-4.5", "zai-org/GLM-4.5",
    "(none: mtp from the draft config's model_type)", "",
    "vllm-project/vllm tests/models/registry.py@v0.10.1:555-557 (Glm4MoeMTPModel: the target "
    "named as its own speculative_model) with tests/models/test_initialization.py@v0.10.0:"
    "115-129 (speculative_config {model, num_speculative_tokens 1}, no method); 0.10.0 names "
    "THUDM/GLM-4.5, not built",
    between("vllm", "0.10.1"), "mtp-glm45-in-target",
    "GLM-4.5's config.json as its model card publishes it (tests/test_oracle.py GLM45, not "
    "re-read offline); vLLM renames it Glm4MoeMTPModel (0.10.1.1 config/__init__.py:2028-2035; "
    "0.33.0 config/speculative.py:848-855) and, no method given, takes mtp from the renamed "
    "model_type (0.10.1.1 :2145-2147; 0.33.0 :1466-1470)",
    spec={"num_speculative_tokens": 1}, once=True,
))

SGLANG_CONFIGS.append(Config(
    "sglang-mtp-qwen3-next-80b", "sglang", "MTP", "Qwen/Qwen3-Next-80B-A3B-Instruct", "", "NEXTN",
    "--trust-remote-code --speculative-num-steps 3 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 4 --mem-fraction-static 0.8 --tp 4 --chunked-prefill-size 2048",
    "sgl-project/sglang test/srt/models/test_qwen3_next_models_mtp.py@22e20514:29-56 "
    "(TestQwen3NextMTP: NEXTN, no draft path; its --mamba-scheduler-strategy is left out, the "
    "early releases have no such flag)",
    between("sglang", "0.5.2"), "mtp-qwen3-next-in-target",
    "Qwen3-Next-80B-A3B's config.json (tests/test_oracle.py QWEN3_NEXT_80B: vLLM's own record of "
    "its widths, the rest as published copies state it); every release from 0.5.2 has "
    "srt/models/qwen3_next_mtp.py and renames Qwen3NextForCausalLM to Qwen3NextForCausalLMMTP "
    "for a draft (0.5.6 srt/configs/model_config.py:282-284; 0.5.23 :1134-1135)",
    once=True,
))
VLLM_CONFIGS.append(Config(
    "vllm-mtp-qwen3-next-80b", "vllm", "MTP", "Qwen/Qwen3-Next-80B-A3B-Instruct", "", "mtp",
    "--max-model-len 4096 --tensor-parallel-size 4 --enable-expert-parallel --enable-eplb",
    "vllm-project/vllm tests/distributed/test_eplb_spec_decode.py@v0.11.1:18-39, 47 "
    "(method mtp, no speculative model, num_speculative_tokens 1, max_model_len 4096, tensor "
    "parallel 4 with expert parallelism and EPLB); @v0.32.0:253 the same row",
    between("vllm", "0.11.1"), "mtp-qwen3-next-in-target",
    "as sglang-mtp-qwen3-next-80b; vLLM renames Qwen3NextForCausalLM to Qwen3NextMTP (0.33.0 "
    "config/speculative.py:908-913) and loads the `mtp.*` tensors as `model.*` (0.11.1 "
    "model_executor/models/qwen3_next_mtp.py:284-296)",
    spec={"num_speculative_tokens": 1, "max_model_len": 4096}, once=True,
))

# Qwen3.5 is multimodal: vLLM's tests start it with no image or video per prompt
_NO_MEDIA = "--limit-mm-per-prompt '{\"image\": 0, \"video\": 0}'"
VLLM_CONFIGS.append(Config(
    "vllm-mtp-qwen35-0.8b-base", "vllm", "MTP", "Qwen/Qwen3.5-0.8B-Base", "", "mtp",
    "--max-model-len 2048 " + _NO_MEDIA,
    "vllm-project/vllm tests/v1/e2e/spec_decode/test_spec_decode.py@v0.21.0:723-727 "
    "(test_mtp_correctness, id "
    "qwen3_5-hybrid: LLM(Qwen/Qwen3.5-0.8B-Base, max_model_len 2048, limit_mm_per_prompt image 0 "
    "and video 0), {method mtp, num_speculative_tokens 1, max_model_len 2048}; later "
    "spec_decode/mtp/test_mtp.py, spec_decode/mtp/qwen3_5/test_mtp.py)",
    between("vllm", "0.21.0"), "mtp-qwen35-0.8b-in-target",
    "Qwen3.5-0.8B's config.json as tests/test_oracle.py QWEN35_08B_TEXT records where each value "
    "comes from (a pinned copy of its widths, the family's settings from Qwen3.6-27B's "
    "published config); vLLM renames Qwen3_5ForConditionalGeneration to Qwen3_5MTP and loads "
    "the `mtp.*` tensors as `model.*`",
    spec={"num_speculative_tokens": 1, "max_model_len": 2048}, once=True,
))
VLLM_CONFIGS.append(Config(
    "vllm-mtp-qwen35-0.8b-base-async", "vllm", "MTP", "Qwen/Qwen3.5-0.8B-Base",
    "Qwen/Qwen3.5-0.8B-Base", "mtp", "--max-model-len 256 --enforce-eager --async-scheduling "
    + _NO_MEDIA,
    "vllm-project/vllm tests/v1/e2e/spec_decode/test_async_spec_decode.py@v0.21.0:85-91, "
    "119-131 (test_no_sync_with_spec_decode, id mtp-qwen3_5-hybrid: LLM(Qwen/Qwen3.5-0.8B-Base, "
    "max_model_len 256, enforce_eager, async_scheduling, limit_mm_per_prompt image 0 and video "
    "0), {method mtp, num_speculative_tokens 1, model Qwen/Qwen3.5-0.8B-Base}; later "
    "spec_decode/draft_model/test_async.py)",
    between("vllm", "0.21.0"), "mtp-qwen35-0.8b-in-target",
    "as vllm-mtp-qwen35-0.8b-base: the target's repo named as the draft too",
    spec={"num_speculative_tokens": 1}, once=True, cites_as="mtp-qwen3_5-hybrid",
))
VLLM_CONFIGS.append(Config(
    "vllm-mtp-qwen35-0.8b-as-its-own-draft", "vllm", "MTP", "Qwen/Qwen3.5-0.8B",
    "Qwen/Qwen3.5-0.8B", "(none: mtp from the draft config's model_type)", "",
    "vllm-project/vllm tests/models/registry.py@v0.17.0:1021-1024 (Qwen3_5MTP: the target named "
    "as its own speculative_model) with tests/models/test_initialization.py@v0.17.0:137-143 "
    "(speculative_config {model, method None, num_speculative_tokens 1})",
    between("vllm", "0.17.0"), "mtp-qwen35-0.8b-in-target",
    "as vllm-mtp-qwen35-0.8b-base (the pinned copy of the widths is Qwen/Qwen3.5-0.8B's own); "
    "no method given, vLLM takes mtp from the renamed model_type qwen3_5_mtp (0.32.0 "
    "config/speculative.py:52, 917-937)",
    spec={"num_speculative_tokens": 1}, once=True,
))
VLLM_CONFIGS += [
    Config(
        "vllm-cpu-mtp-qwen35-0.8b", "vllm", "MTP", "Qwen/Qwen3.5-0.8B", "", "mtp",
        "--dtype bfloat16 --max-model-len 1024",
        "vllm-project/vllm tests/v1/e2e/test_cpu_spec_decode.py@v0.31.0:38-46, 133-140 "
        "(test_v2_speculator_smoke on CPU, id mtp: LLM(Qwen/Qwen3.5-0.8B, dtype bfloat16, "
        "max_model_len 1024), {method mtp, num_speculative_tokens 3}; 0.30.0 ran it on "
        "Qwen3.5-0.8B-Base, the same shape)",
        between("vllm", "0.30.0"), "mtp-qwen35-0.8b-in-target",
        "as vllm-mtp-qwen35-0.8b-base", spec={"num_speculative_tokens": 3}, once=True,
        cites_as="test_v2_speculator_smoke",
    ),
    Config(
        "vllm-mtp-qwen35-0.8b-base-sharded-sampling", "vllm", "MTP", "Qwen/Qwen3.5-0.8B-Base", "",
        "mtp", "--tensor-parallel-size 2 --max-model-len 2048 --enable-batch-sharded-sampling "
        + _NO_MEDIA,
        "vllm-project/vllm tests/v1/e2e/spec_decode/test_sharded_sampling.py@v0.29.0:26-54 "
        "(test_mtp_sharded_sampling_equivalence, under VLLM_USE_V2_MODEL_RUNNER=1: LLM(Qwen/"
        "Qwen3.5-0.8B-Base, tensor_parallel_size 2, enable_batch_sharded_sampling, max_model_len "
        "2048, limit_mm_per_prompt image 0 and video 0), {method mtp, num_speculative_tokens 1, "
        "max_model_len 2048})",
        between("vllm", "0.29.0"), "mtp-qwen35-0.8b-in-target",
        "as vllm-mtp-qwen35-0.8b-base",
        spec={"num_speculative_tokens": 1, "max_model_len": 2048}, once=True,
        cites_as="test_mtp_sharded_sampling_equivalence",
    ),
]
VLLM_CONFIGS += [
    Config(
        f"vllm-mtp-qwen35-0.8b-base-draft-head-{quant}", "vllm", "MTP", "Qwen/Qwen3.5-0.8B-Base",
        "", "mtp", "--max-model-len 2048 " + _NO_MEDIA + sleep,
        "vllm-project/vllm tests/v1/e2e/spec_decode/mtp/qwen3_5/test_mtp.py@v0.33.0:"
        f"{lines} ({test}, under VLLM_USE_V2_MODEL_RUNNER=1: Qwen/Qwen3.5-0.8B-Base, "
        "max_model_len 2048, limit_mm_per_prompt image 0 and video 0"
        f"{', enable_sleep_mode' if sleep else ''}), {{method mtp, num_speculative_tokens 3, "
        f"draft_lm_head_quantization {quant}}}; a SpeculativeConfig field from 0.33.0, "
        "config/speculative.py:484)",
        ("0.33.0",), "mtp-qwen35-0.8b-in-target", "as vllm-mtp-qwen35-0.8b-base",
        spec={"num_speculative_tokens": 3, "draft_lm_head_quantization": quant}, once=True,
        cites_as=named_as,
    )
    for quant, sleep, lines, test, named_as in (
        ("fp8", "", "49-72", "test_mtp_draft_lm_head_quantization", 'quants = (None, "fp8"'),
        ("nvfp4", " --enable-sleep-mode", "97-117",
         "test_mtp_draft_lm_head_quantization_survives_sleep_and_reload",
         '"draft_lm_head_quantization": "nvfp4"'),
    )
]
VLLM_SOURCES |= {
    '"draft_lm_head_quantization": "nvfp4"': [
        ("0.33.0", "tests/v1/e2e/spec_decode/mtp/qwen3_5/test_mtp.py:116")],
    'quants = (None, "fp8"': [("0.33.0", "tests/v1/e2e/spec_decode/mtp/qwen3_5/test_mtp.py:60")],
    "test_v2_speculator_smoke": [("0.30.0", "tests/v1/e2e/test_cpu_spec_decode.py:152")],
    "test_mtp_sharded_sampling_equivalence": [
        ("0.29.0", "tests/v1/e2e/spec_decode/test_sharded_sampling.py:26"),
        ("0.33.0", "tests/v1/e2e/spec_decode/test_sharded_sampling.py:30"),
    ],
    # tests/models/registry.py's Qwen3_5MTP example, its line in each release's archive
    "Qwen/Qwen3.5-0.8B": _registry_lines((
        ("0.17.0", 1022), ("0.18.0", 1268), ("0.18.1", 1269), ("0.19.0", 1301), ("0.19.1", 1428),
        ("0.20.1", 1557), ("0.21.0", 1585), ("0.22.0", 1622), ("0.22.1", 1623), ("0.23.0", 1655),
        ("0.24.0", 1661), ("0.25.0", 1667), ("0.26.0", 1713), ("0.27.0", 1726), ("0.28.0", 1800),
        ("0.29.0", 1798), ("0.30.0", 1842), ("0.31.0", 1849), ("0.32.0", 1797), ("0.33.0", 1878)
    )),
    "mtp-qwen3_5-hybrid": [
        ("0.21.0", "tests/v1/e2e/spec_decode/test_async_spec_decode.py:90"),
        ("0.27.0", "tests/v1/e2e/spec_decode/draft_model/test_async.py:90"),
        ("0.30.0", "tests/v1/e2e/spec_decode/draft_model/test_async.py:28"),
    ],
    "Qwen/Qwen3.5-0.8B-Base": [
        ("0.21.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:723"),
        ("0.22.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:735"),
        ("0.25.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:776"),
        ("0.26.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:850"),
        ("0.27.0", "tests/v1/e2e/spec_decode/mtp/test_mtp.py:36"),
        ("0.30.0", "tests/v1/e2e/spec_decode/mtp/test_mtp.py:139"),
        ("0.31.0", "tests/v1/e2e/spec_decode/mtp/qwen3_5/test_mtp.py:16"),
        ("0.33.0", "tests/v1/e2e/spec_decode/mtp/qwen3_5/test_mtp.py:22"),
    ],
}

VLLM_CONFIGS.append(Config(
    "vllm-mtp-mimo-7b-rl-as-its-own-draft", "vllm", "MTP", "XiaomiMiMo/MiMo-7B-RL",
    "XiaomiMiMo/MiMo-7B-RL", "(none: mtp from the draft config's model_type)",
    "--trust-remote-code",
    "vllm-project/vllm tests/models/registry.py@v0.10.0:499 (MiMoMTPModel: the target named as "
    "its own speculative_model, trust_remote_code) with tests/models/test_initialization.py@"
    "v0.10.1:81-84 and @v0.11.1:129-135 (speculative_config {model, num_speculative_tokens 1}, "
    "no method); from 0.10.0 the release takes mtp from mimo_mtp; 0.9.0 to 0.9.2 take "
    "deepseek_mtp only and fall back to draft_model for anything else (0.9.0 config.py:2520-"
    "2538), which V0 serves (spec_decode/spec_decode_worker.py:201 MultiStepWorker)",
    between("vllm", "0.9.0"), "mtp-mimo-7b-in-target",
    "as sglang-mtp-mimo-7b-rl; vLLM renames it MiMoMTPModel (0.10.1.1 config/__init__.py:2009-"
    "2020; 0.33.0 config/speculative.py:795-804) and, no method given, takes mtp from the "
    "renamed model_type (0.10.1.1 :2145-2147)",
    spec={"num_speculative_tokens": 1}, once=True,
))

VLLM_CONFIGS.append(Config(
    "vllm-mtp-ernie45-as-its-own-draft", "vllm", "MTP", "baidu/ERNIE-4.5-21B-A3B-PT",
    "baidu/ERNIE-4.5-21B-A3B-PT", "(none: mtp from the draft config's model_type)",
    "--trust-remote-code",
    "vllm-project/vllm tests/models/registry.py@v0.10.2:636-638 (ErnieMTPModel: the target "
    "named as its own speculative_model, trust_remote_code) with tests/models/"
    "test_initialization.py (speculative_config {model, num_speculative_tokens 1}, no method)",
    between("vllm", "0.10.2"), "mtp-ernie45-in-target",
    "ERNIE-4.5-21B-A3B's config.json (tests/test_oracle.py ERNIE45_21B_A3B: vLLM's own record "
    "of its widths, transformers' defaults for that model for the rest); vLLM renames "
    "ernie4_5_moe to ernie_mtp, ErnieMTPModel (0.11.1 config/speculative.py:208-214)",
    spec={"num_speculative_tokens": 1}, once=True,
))

# Methods beyond EAGLE and MTP (issue 42's fifth round): n-gram lookup, which drafts without a
# model, and a separate draft model (vLLM's draft_model, SGLang's STANDALONE). No checkpoint
# is searched for an n-gram launch; a draft model is judged as the language model it is.
_NGRAM_DOCS = ("vllm-project/vllm docs/features/spec_decode.md@v0.9.2:117-120 ('Speculating by "
               "matching n-grams in the prompt': LLM(model=facebook/opt-6.7b, speculative_config "
               "{method ngram, num_speculative_tokens 5, prompt_lookup_max 4}); prompt_lookup_min "
               "then mirrors the max (0.9.2 config.py:2625-2635)")
_DRAFT_DOCS = ("vllm-project/vllm docs/features/spec_decode.md@v0.9.2:17-36 ('Speculating with a "
               "draft model': LLM(model=facebook/opt-6.7b, speculative_config {model "
               "facebook/opt-125m, num_speculative_tokens 5}), no method")
_OPT = ("facebook/opt-6.7b's and facebook/opt-125m's config.json (OPTForCausalLM, vocab 50272, "
        "2048 positions, tied head; 4096/32 layers and 768/12 layers), weights as transformers "
        "saves OPTForCausalLM")
VLLM_CONFIGS += [
    Config(
        "vllm-ngram-opt-6.7b", "vllm", "n-gram", "facebook/opt-6.7b", "", "ngram", "",
        _NGRAM_DOCS, between("vllm", "0.8.5", "0.16.0"), "target-only-opt-6.7b",
        _OPT + " (the target's only)", spec={"num_speculative_tokens": 5, "prompt_lookup_max": 4},
    ),
    Config(
        "vllm-ngram-qwen3-8b", "vllm", "n-gram", "Qwen/Qwen3-8B", "", "ngram", "",
        "vllm-project/vllm docs/features/speculative_decoding/n_gram.md@v0.17.0:13-18 (LLM(model="
        "Qwen/Qwen3-8B), {method ngram, num_speculative_tokens 5, prompt_lookup_max 4})",
        between("vllm", "0.17.0"), "target-only-qwen3-8b",
        "Qwen3-8B's config.json (the target's only)",
        spec={"num_speculative_tokens": 5, "prompt_lookup_max": 4}, once=True,
    ),
    Config(
        "vllm-draft-model-opt-125m", "vllm", "draft model", "facebook/opt-6.7b",
        "facebook/opt-125m", "(none: draft_model by default)", "", _DRAFT_DOCS,
        between("vllm", "0.8.5", "0.9.2"), "draft-opt-125m",
        _OPT + "; V0 serves it (0.9.2 spec_decode/spec_decode_worker.py:202 MultiStepWorker)",
        spec={"num_speculative_tokens": 5},
    ),
    Config(
        "vllm-draft-model-qwen3-0.6b", "vllm", "draft model", "Qwen/Qwen3-8B", "Qwen/Qwen3-0.6B",
        "draft_model", "",
        "vllm-project/vllm docs/features/speculative_decoding/draft_model.md@v0.17.0:12-18 (LLM("
        "model=Qwen/Qwen3-8B), {model Qwen/Qwen3-0.6B, num_speculative_tokens 5, method "
        "draft_model}); the V1 proposer v1/spec_decode/draft_model.py, from 0.15.0",
        between("vllm", "0.17.0"), "draft-qwen3-0.6b",
        "Qwen3-8B's and Qwen3-0.6B's config.json (the draft: hidden 1024, 28 layers, 16 heads over "
        "8 kv heads of 128, vocab 151936 as the target's, tied head, 40960 positions)",
        spec={"num_speculative_tokens": 5}, once=True,
    ),
]
_E2E = "vllm-project/vllm tests/v1/e2e"
VLLM_CONFIGS += [
    Config(
        "vllm-ngram-llama31-8b", "vllm", "n-gram", "meta-llama/Llama-3.1-8B-Instruct", "", "ngram",
        "", f"{_E2E}/test_spec_decode.py@v0.9.2:64, 84-87 (test_ngram_correctness: {{method ngram, "
        "prompt_lookup_max 5, prompt_lookup_min 3, num_speculative_tokens 3}; later "
        "spec_decode/test_spec_decode.py, spec_decode/ngram_suffix/test_ngram_suffix.py)",
        between("vllm", "0.8.5"), "target-only-llama31-8b",
        "Llama-3.1-8B-Instruct's config.json (the target's only)",
        spec={"prompt_lookup_max": 5, "prompt_lookup_min": 3, "num_speculative_tokens": 3},
        once=True,
    ),
    Config(
        "vllm-ngram-gpu-qwen3-8b", "vllm", "n-gram", "Qwen/Qwen3-8B", "", "ngram_gpu",
        "--max-model-len 4096", f"{_E2E}/spec_decode/test_spec_decode.py@v0.18.0:189-204 "
        "(test_ngram_gpu_default_with_async_scheduling: {method ngram_gpu, prompt_lookup_max 3, "
        "prompt_lookup_min 2, num_speculative_tokens 2}; later ngram_suffix/test_ngram_suffix.py)",
        between("vllm", "0.18.0"), "target-only-qwen3-8b",
        "Qwen3-8B's config.json (the target's only)",
        spec={"prompt_lookup_max": 3, "prompt_lookup_min": 2, "num_speculative_tokens": 2},
        once=True, cites_as="ngram_gpu",
    ),
    Config(
        "vllm-draft-model-qwen3-1.7b", "vllm", "draft model", "Qwen/Qwen3-1.7B", "Qwen/Qwen3-0.6B",
        "draft_model", "", f"{_E2E}/test_spec_decode.py@v0.16.0:646-653, 659, 772-790 "
        "(test_draft_model_correctness: {model Qwen/Qwen3-0.6B, method draft_model, "
        "num_speculative_tokens 3}; later spec_decode/draft_model/test_draft_model.py)",
        between("vllm", "0.16.0"), "draft-qwen3-0.6b-for-1.7b",
        "Qwen3-1.7B's and Qwen3-0.6B's config.json (the target: hidden 2048, 28 layers, 16 heads "
        "over 8 kv heads of 128, vocab 151936, tied head)",
        spec={"num_speculative_tokens": 3}, once=True, cites_as="Qwen/Qwen3-1.7B",
    ),
]
# test_draft_model_quantization: the same launch with one side FP8 (0.16.0 on)
_QUANTIZATION_TEST = (
    f"{_E2E}/test_spec_decode.py@v0.16.0:696-713, 772-796 (test_draft_model_quantization: "
    "ArgsTest(target_model, draft_model, num_speculative_tokens 3), {model DRAFT, method "
    "draft_model, num_speculative_tokens 3, max_model_len 1024}; later spec_decode/"
    "test_spec_decode.py, spec_decode/draft_model/test_draft_model.py)")
_QWEN3_FP8_PUBLISHED = (
    "Qwen's FP8 releases are the bf16 model's config.json with quantization_config {{quant_method "
    "fp8, fmt e4m3, activation_scheme dynamic, weight_block_size [128, 128]}}, every q/k/v/o and "
    "MLP projection F8_E4M3 with a bf16 weight_scale_inv per 128x128 block, embedding, norms "
    "and head bf16 (a user's dump of Qwen3-8B-FP8's config and tensors; the Qwen3-0.6B-FP8 "
    "model card: fine-grained FP8, block size 128); {}")
VLLM_CONFIGS += [
    Config(
        "vllm-draft-model-qwen3-1.7b-fp8-target", "vllm", "draft model", "Qwen/Qwen3-1.7B-FP8",
        "Qwen/Qwen3-0.6B", "draft_model", "--max-model-len 1024",
        _QUANTIZATION_TEST.replace("DRAFT", "Qwen/Qwen3-0.6B") + " (ids target_quantized)",
        between("vllm", "0.16.0"), "draft-qwen3-0.6b-for-1.7b-fp8",
        _QWEN3_FP8_PUBLISHED.format("the target Qwen3-1.7B-FP8, the draft Qwen3-0.6B in bf16"),
        spec={"num_speculative_tokens": 3, "max_model_len": 1024}, once=True,
        cites_as="Qwen/Qwen3-1.7B-FP8",
    ),
    Config(
        "vllm-draft-model-qwen3-0.6b-fp8-draft", "vllm", "draft model", "Qwen/Qwen3-1.7B",
        "Qwen/Qwen3-0.6B-FP8", "draft_model", "--max-model-len 1024",
        _QUANTIZATION_TEST.replace("DRAFT", "Qwen/Qwen3-0.6B-FP8") + " (ids draft_quantized)",
        between("vllm", "0.16.0"), "draft-qwen3-0.6b-fp8-for-1.7b",
        _QWEN3_FP8_PUBLISHED.format("the draft Qwen3-0.6B-FP8, the target Qwen3-1.7B in bf16"),
        spec={"num_speculative_tokens": 3, "max_model_len": 1024}, once=True,
    ),
]
VLLM_SOURCES |= {
    "Qwen/Qwen3-1.7B-FP8": [
        ("0.16.0", "tests/v1/e2e/test_spec_decode.py:699"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:872"),
        ("0.27.0", "tests/v1/e2e/spec_decode/draft_model/test_draft_model.py:151"),
    ],
    "Qwen/Qwen3-0.6B-FP8": [
        ("0.16.0", "tests/v1/e2e/test_spec_decode.py:700"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:873"),
        ("0.27.0", "tests/v1/e2e/spec_decode/draft_model/test_draft_model.py:152"),
    ],
}

VLLM_CONFIGS.append(Config(
    "vllm-draft-model-qwen3-4b-thinking-serve", "vllm", "draft model",
    "Qwen/Qwen3-4B-Thinking-2507", "Qwen/Qwen3-0.6B", "draft_model", "--max-model-len 2048",
    "vllm-project/vllm docs/features/speculative_decoding/draft_model.md@v0.17.0:31-38 (the "
    "online form: vllm serve Qwen/Qwen3-4B-Thinking-2507 ... --speculative-config {model "
    "Qwen/Qwen3-0.6B, num_speculative_tokens 5, method draft_model})",
    between("vllm", "0.17.0"), "draft-qwen3-0.6b-for-4b-thinking",
    "Qwen3-4B-Thinking-2507's and Qwen3-0.6B's config.json (the target: hidden 2560, 36 layers, "
    "32 heads over 8 kv heads of 128, vocab 151936, 262144 positions, rope_theta 5000000)",
    spec={"num_speculative_tokens": 5}, once=True, cites_as="Qwen/Qwen3-4B-Thinking-2507",
))
VLLM_SOURCES |= {
    "Qwen/Qwen3-4B-Thinking-2507": [
        ("0.17.0", "docs/features/speculative_decoding/draft_model.md:31")],
    "meta-llama/Llama-3.1-8B-Instruct": [
        ("0.8.5", "tests/v1/e2e/test_spec_decode.py:52"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:124"),
        ("0.27.0", "tests/v1/e2e/spec_decode/conftest.py:19"),
    ],
    "ngram_gpu": [
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:201"),
        ("0.27.0", "tests/v1/e2e/spec_decode/ngram_suffix/test_ngram_suffix.py:72"),
    ],
    "Qwen/Qwen3-1.7B": [
        ("0.16.0", "tests/v1/e2e/test_spec_decode.py:647"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:818"),
        ("0.27.0", "tests/v1/e2e/spec_decode/draft_model/test_draft_model.py:82"),
    ],
}

VLLM_CONFIGS.append(Config(
    "vllm-draft-model-smollm2-heterogeneous-vocab", "vllm", "draft model", "Qwen/Qwen3-8B",
    "HuggingFaceTB/SmolLM2-135M-Instruct", "draft_model", "",
    "vllm-project/vllm docs/features/speculative_decoding/draft_model.md@v0.25.0:79-99 ('Draft "
    "Model Method with heterogeneous vocabs': LLM(model=Qwen/Qwen3-8B), {method draft_model, "
    "model HuggingFaceTB/SmolLM2-135M-Instruct, num_speculative_tokens 3, "
    "use_heterogeneous_vocab True}); read from 0.25.0 (config/speculative.py:145, 1185-1186)",
    between("vllm", "0.25.0"), "draft-smollm2-135m",
    "Qwen3-8B's and SmolLM2-135M-Instruct's config.json (the draft: a Llama of hidden 576, 30 "
    "layers, 9 heads over 3 kv heads of 64, vocab 49152, tied head, 8192 positions)",
    spec={"num_speculative_tokens": 3, "use_heterogeneous_vocab": True}, once=True,
))
VLLM_SOURCES |= {
    "HuggingFaceTB/SmolLM2-135M-Instruct": [
        ("0.25.0", "docs/features/speculative_decoding/draft_model.md:93")],
    "facebook/opt-6.7b": [
        ("0.8.5", "docs/source/features/spec_decode.md:108"),
        ("0.9.0", "docs/features/spec_decode.md:111"),
        ("0.16.0", "docs/features/spec_decode/README.md:120"),
    ],
    "Qwen/Qwen3-8B": [("0.17.0", "docs/features/speculative_decoding/n_gram.md:13")],
    "facebook/opt-125m": [
        ("0.8.5", "docs/source/features/spec_decode.md:34"),
        ("0.9.0", "docs/features/spec_decode.md:33"),
    ],
    "Qwen/Qwen3-0.6B": [("0.17.0", "docs/features/speculative_decoding/draft_model.md:14")],
}

# Suffix decoding (vLLM 0.11.1 on: config/speculative.py:48) drafts without a model too, from
# Snowflake's arctic-inference, which the docs say to install beside vLLM (`pip install
# arctic-inference`, unpinned) and vLLM's CI pins at 0.1.1 (requirements/test.in up to 0.19.1,
# requirements/test/*.in after); without it the release stops at start (0.11.1
# config/speculative.py:465-468). The rows are judged in a venv that has it.
_ARCTIC = ("arctic-inference==0.1.1",)
_SUFFIX_DOCS = ("vllm-project/vllm docs/features/spec_decode.md@v0.11.1:149-171 ('Speculating "
                "using Suffix Decoding': LLM(model=facebook/opt-6.7b), {method suffix, "
                "num_speculative_tokens 32}; the tip at :141-142 installs arctic-inference); "
                "docs/features/spec_decode/README.md@v0.16.0:161-166")
VLLM_CONFIGS += [
    Config(
        "vllm-suffix-opt-6.7b", "vllm", "suffix", "facebook/opt-6.7b", "", "suffix", "",
        _SUFFIX_DOCS, between("vllm", "0.11.1", "0.16.0"), "target-only-opt-6.7b",
        _OPT + " (the target's only)", spec={"num_speculative_tokens": 32}, once=True,
        cites_as='"suffix"', beside=_ARCTIC,
    ),
    Config(
        "vllm-suffix-qwen3-8b", "vllm", "suffix", "Qwen/Qwen3-8B", "", "suffix", "",
        "vllm-project/vllm docs/features/speculative_decoding/suffix.md@v0.17.0:15-35 (LLM(model="
        "Qwen/Qwen3-8B), {method suffix, num_speculative_tokens 32}; the tip at :9-10 installs "
        "arctic-inference)", between("vllm", "0.17.0"), "target-only-qwen3-8b",
        "Qwen3-8B's config.json (the target's only)", spec={"num_speculative_tokens": 32},
        once=True, cites_as='"suffix"', beside=_ARCTIC,
    ),
    Config(
        "vllm-suffix-llama31-8b", "vllm", "suffix", "meta-llama/Llama-3.1-8B-Instruct", "",
        "suffix", "--max-model-len 1024",
        "vllm-project/vllm tests/v1/e2e/test_spec_decode.py@v0.11.1:143-160 "
        "(test_suffix_decoding_acceptance: {method suffix, suffix_decoding_max_spec_factor 2.0, "
        "suffix_decoding_max_cached_requests 1000}, no num_speculative_tokens: the release "
        "takes the tree depth, 24, config/speculative.py:470-477); later spec_decode/"
        "test_spec_decode.py (0.18.0), spec_decode/ngram_suffix/test_ngram_suffix.py (0.27.0)",
        between("vllm", "0.11.1"), "target-only-llama31-8b",
        "Llama-3.1-8B-Instruct's config.json (the target's only)",
        spec={"suffix_decoding_max_spec_factor": 2.0, "suffix_decoding_max_cached_requests": 1000},
        once=True, cites_as="suffix_decoding_max_cached_requests", beside=_ARCTIC,
    ),
    Config(
        "vllm-suffix-serve-settings", "vllm", "suffix", "Qwen/Qwen3-8B (for <target-model>)", "",
        "suffix", "",
        "vllm-project/vllm docs/features/speculative_decoding/README.md@v0.20.0:96-111 ('Suffix "
        "decoding': vllm serve <target-model> --speculative-config {method suffix, "
        "num_speculative_tokens 8, and the four suffix_decoding_* settings at their defaults "
        "24, 10000, 1.0, 0.1})", between("vllm", "0.20.0"), "target-only-qwen3-8b",
        "Qwen3-8B's config.json stands in for the docs' <target-model> (the target's only)",
        spec={"num_speculative_tokens": 8, "suffix_decoding_max_tree_depth": 24,
              "suffix_decoding_max_cached_requests": 10000, "suffix_decoding_max_spec_factor": 1.0,
              "suffix_decoding_min_token_prob": 0.1},
        once=True, cites_as="suffix_decoding_min_token_prob", beside=_ARCTIC,
    ),
]
VLLM_SOURCES |= {
    '"suffix"': [
        ("0.11.1", "docs/features/spec_decode.md:160"),
        ("0.16.0", "docs/features/spec_decode/README.md:163"),
        ("0.17.0", "docs/features/speculative_decoding/suffix.md:24"),
    ],
    "suffix_decoding_max_cached_requests": [
        ("0.11.1", "tests/v1/e2e/test_spec_decode.py:157"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_spec_decode.py:230"),
        ("0.27.0", "tests/v1/e2e/spec_decode/ngram_suffix/test_ngram_suffix.py:105"),
    ],
    "suffix_decoding_min_token_prob": [
        ("0.20.0", "docs/features/speculative_decoding/README.md:110")],
}

# What vLLM's docs show beyond the speculative-decoding pages (a helper read docs/ and examples/
# of every release with an archive): the benchmark docs' n-gram server, and eagle.md's
# Llama-3.1 speculator served on Llama-3-8B-Instruct.
VLLM_CONFIGS += [
    Config(
        "vllm-ngram-bench-llama3-8b", "vllm", "n-gram", "meta-llama/Meta-Llama-3-8B-Instruct", "",
        "ngram", "", "vllm-project/vllm docs/contributing/benchmarks.md@v0.11.0:171-188 (vllm "
        "serve with {method ngram, num_speculative_tokens 5, prompt_lookup_max 5, "
        "prompt_lookup_min 2}, and vllm bench throughput at :378); docs/benchmarking/cli.md"
        "@v0.12.0:158-175, 431", between("vllm", "0.11.0"), "target-only-llama3-8b",
        "Meta-Llama-3-8B-Instruct's config.json (the target's only)",
        spec={"num_speculative_tokens": 5, "prompt_lookup_max": 5, "prompt_lookup_min": 2},
        once=True, cites_as="prompt_lookup_min",
    ),
    Config(
        "vllm-speculators-llama31-8b-on-llama3-8b", "vllm", "speculators",
        "meta-llama/Meta-Llama-3-8B-Instruct", "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
        "eagle3", "--tensor-parallel-size 2",
        "vllm-project/vllm docs/features/speculative_decoding/eagle.md@v0.17.0:43-55 (LLM(model="
        "meta-llama/Meta-Llama-3-8B-Instruct, tensor_parallel_size 2), {method eagle3, model "
        "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3, draft_tensor_parallel_size 2, "
        "num_speculative_tokens 2})", between("vllm", "0.17.0"),
        "speculators-llama31-8b-on-llama3-8b",
        "Meta-Llama-3-8B-Instruct's config.json (8192 positions, eos 128009, no rope_scaling); "
        "the speculator as vllm-speculators-llama31-8b builds it (verifier Llama-3.1-8B-Instruct)",
        spec={"draft_tensor_parallel_size": 2, "num_speculative_tokens": 2}, once=True,
        cites_as="Llama-3.1-8B-Instruct-speculator.eagle3",
    ),
]
VLLM_SOURCES |= {
    "prompt_lookup_min": [("0.11.0", "docs/contributing/benchmarks.md:171"),
                          ("0.12.0", "docs/benchmarking/cli.md:158")],
    "Llama-3.1-8B-Instruct-speculator.eagle3": [
        ("0.17.0", "docs/features/speculative_decoding/eagle.md:43")],
}

# vLLM's GSM8K accuracy tests (tests/evals/gsm8k/test_gsm8k_correctness.py, from 0.14.0): each
# config's server_args are `vllm serve` flags, and the CI's lists name the configs it runs
# (tests/evals/gsm8k/configs/models-h200.txt@v0.14.0; models-h200-deepseek-r1-tp.txt and
# models-h200-deepseek-v32-tp.txt@v0.32.0; the _MI325 and _MI355 copies give the same flags on
# AMD's lists). The _DP copies give --data-parallel-size 8 for --tensor-parallel-size 8 and are
# otherwise the same: the rows below are the TP ones (the DP copies: tests/test_oracle.py
# test_the_gsm8k_configs_data_parallel_copies_are_clean).
_GSM8K = "vllm-project/vllm tests/evals/gsm8k/configs"
_GSM8K_FLAGS = ("--enforce-eager --max-model-len 4096 --tensor-parallel-size 8 "
                "--enable-expert-parallel")
_DSV3_PUBLISHED = ("DeepSeek-V3's config.json (tests/realshape.py DEEPSEEK_V3) with its published "
                   "FP8 quantization_config (e4m3, dynamic activations, 128x128 blocks) and YaRN "
                   "x40 from 4096 to 163840 positions: DeepSeek-R1 is DeepSeek-V3's architecture "
                   "with the same config values")
VLLM_CONFIGS += [
    *(Config(
        f"vllm-gsm8k-{key}-mtp{'-k1' if k == 1 else ''}", "vllm", "MTP", target, "", "mtp",
        _GSM8K_FLAGS, f"{_GSM8K}/{name}-TP.yaml@v{first}:1-11 (server_args: {_GSM8K_FLAGS} "
        f"--speculative-config '{{\"method\":\"mtp\",\"num_speculative_tokens\":{k}}}'; "
        f"{name}-DP.yaml the same with --data-parallel-size 8)", between("vllm", first, last),
        build, published, spec={"num_speculative_tokens": k}, once=True,
    ) for key, name, target, k, first, last, build, published in (
        ("deepseek-r1", "DeepSeek-R1", "deepseek-ai/DeepSeek-R1", 1, "0.14.0", "0.16.0",
         "mtp-dsv3-fp8-in-target", _DSV3_PUBLISHED),
        ("deepseek-r1", "DeepSeek-R1", "deepseek-ai/DeepSeek-R1", 3, "0.17.0", None,
         "mtp-dsv3-fp8-in-target", _DSV3_PUBLISHED),
        ("deepseek-v32", "DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2", 1, "0.16.0", "0.16.0",
         "mtp-dsv32-fp8-in-target", "DeepSeek-V3.2-Exp's config.json as the SGLang rows build it "
         "(DeepseekV32ForCausalLM: DeepSeek-V3's with the indexer's 128-wide 64 heads and top "
         "2048) with DeepSeek-V3's FP8 and YaRN settings: DeepSeek-V3.2 keeps V3.2-Exp's "
         "architecture"),
        ("deepseek-v32", "DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2", 3, "0.17.0", None,
         "mtp-dsv32-fp8-in-target", "as vllm-gsm8k-deepseek-v32-mtp-k1"),
    )),
]
VLLM_SOURCES |= {
    "deepseek-ai/DeepSeek-R1": [("0.14.0", "tests/evals/gsm8k/configs/DeepSeek-R1-TP.yaml:1")],
    "deepseek-ai/DeepSeek-V3.2": [("0.16.0", "tests/evals/gsm8k/configs/DeepSeek-V3.2-TP.yaml:1")],
}

# vLLM's V0 end-to-end tests (tests/spec_decode/e2e/, run by the CI's "Speculative decoding
# tests" step, .buildkite/test-pipeline.yaml@v0.8.5:277-285; tests/spec_decode/conftest.py sets
# VLLM_USE_V1=0): n-gram and separate draft models on JackFram's small Llamas, 0.8.5-0.9.2 (V0
# is gone in 0.10.0). The tests pass speculative_config to LLM(); the rows give the same keys
# to `vllm serve`. What these tests run that no row builds is in NOT_BUILT.
_V0 = "vllm-project/vllm tests/spec_decode/e2e"
_V0_RELEASES = between("vllm", "0.8.5", "0.9.2")
_JACKFRAM = ("JackFram/llama-68m's and llama-160m's config.json (LlamaForCausalLM, hidden 768, "
             "12 heads, intermediate 3072, vocab 32000, 2048 positions, float32; 2 and 12 layers; "
             "no head_dim, num_key_value_heads or rope_theta written)")
VLLM_CONFIGS += [
    Config(
        "vllm-v0-ngram-llama-68m", "vllm", "n-gram", "JackFram/llama-68m", "", "ngram", "",
        f"{_V0}/test_ngram_correctness.py@v0.8.5:40-73 (test_ngram_e2e_greedy_correctness: "
        "{method ngram, num_speculative_tokens 5, prompt_lookup_max 3}; test_ngram_different_k "
        "at :257 runs k 1, 3, 5)", _V0_RELEASES, "target-only-llama-68m",
        _JACKFRAM + " (the target's only)",
        spec={"num_speculative_tokens": 5, "prompt_lookup_max": 3}, once=True,
        cites_as="prompt_lookup_max",
    ),
    Config(
        "vllm-v0-ngram-llama-160m", "vllm", "n-gram", "JackFram/llama-160m", "", "ngram", "",
        f"{_V0}/test_ngram_correctness.py@v0.8.5:160-198 (test_ngram_e2e_greedy_correctness_with_"
        "preemption: {method ngram, num_speculative_tokens 5, prompt_lookup_max 3})",
        _V0_RELEASES, "target-only-llama-160m", _JACKFRAM + " (the target's only)",
        spec={"num_speculative_tokens": 5, "prompt_lookup_max": 3}, once=True,
        cites_as="prompt_lookup_max",
    ),
    Config(
        "vllm-v0-draft-llama-68m-self", "vllm", "draft model", "JackFram/llama-68m",
        "JackFram/llama-68m", "(none: draft_model by default)", "",
        f"{_V0}/test_multistep_correctness.py@v0.8.5:55-181 (test_spec_decode_e2e_greedy_"
        "correctness_tiny_model_bs1 and the large-batch tests: {model JackFram/llama-68m, "
        "num_speculative_tokens 5} for the target JackFram/llama-68m; test_many_k at :744 runs "
        "k 1-9 and 63)", _V0_RELEASES, "draft-llama-68m-self", _JACKFRAM, once=True,
        spec={"num_speculative_tokens": 5},
    ),
    Config(
        "vllm-v0-draft-llama-68m-for-160m", "vllm", "draft model", "JackFram/llama-160m",
        "JackFram/llama-68m", "(none: draft_model by default)", "",
        f"{_V0}/test_multistep_correctness.py@v0.8.5:148-181 (the same tests' second target, "
        "JackFram/llama-160m: {model JackFram/llama-68m, num_speculative_tokens 5}; the "
        "preemption, block-size and disable tests at :500-687)", _V0_RELEASES,
        "draft-llama-68m-for-160m", _JACKFRAM, spec={"num_speculative_tokens": 5}, once=True,
    ),
    Config(
        "vllm-v0-draft-llama-160m-for-68m", "vllm", "draft model", "JackFram/llama-68m",
        "JackFram/llama-160m", "(none: draft_model by default)", "",
        f"{_V0}/test_logprobs.py@v0.8.5:73-102 (test_logprobs_different_k: the larger model as "
        "the draft, {model JackFram/llama-160m, num_speculative_tokens 3}; also test_seed.py:39)",
        _V0_RELEASES, "draft-llama-160m-for-68m", _JACKFRAM,
        spec={"num_speculative_tokens": 3}, once=True,
    ),
    Config(
        "vllm-v0-draft-llama-68m-for-llama2-7b", "vllm", "draft model",
        "meta-llama/Llama-2-7b-chat-hf", "JackFram/llama-68m", "(none: draft_model by default)",
        "", f"{_V0}/test_multistep_correctness.py@v0.8.5:342-379 (test_spec_decode_e2e_greedy_"
        "correctness_real_model_bs1: {model JackFram/llama-68m, num_speculative_tokens 5})",
        _V0_RELEASES, "draft-llama-68m-for-llama2-7b",
        "Llama-2-7b-chat-hf's config.json (4096 positions) and " + _JACKFRAM,
        spec={"num_speculative_tokens": 5}, once=True,
    ),
    Config(
        "vllm-v0-draft-llama-68m-tp4", "vllm", "draft model", "JackFram/llama-68m",
        "JackFram/llama-68m", "(none: draft_model by default)", "--tensor-parallel-size 4",
        f"{_V0}/test_integration_dist_tp4.py@v0.8.5:14-47 (test_draft_model_tp_lt_target_model_"
        "tp4, the CI's 4-GPU step: --tensor-parallel-size 4, {model JackFram/llama-68m, "
        "num_speculative_tokens 5, draft_tensor_parallel_size 1})", _V0_RELEASES,
        "draft-llama-68m-self", _JACKFRAM,
        spec={"num_speculative_tokens": 5, "draft_tensor_parallel_size": 1}, once=True,
        cites_as="draft_tensor_parallel_size",
    ),
    Config(
        "vllm-v0-metrics-distilgpt2-self", "vllm", "draft model", "distilbert/distilgpt2",
        "distilbert/distilgpt2", "(none: draft_model by default)", "--dtype half",
        "vllm-project/vllm tests/metrics/test_metrics.py@v0.8.5:20-28, 234-253 "
        "(test_metric_spec_decode, V0 only: {model distilbert/distilgpt2, num_speculative_tokens "
        "5}, dtype half; test_metric_spec_decode_interval :286-309 the same with enforce_eager)",
        _V0_RELEASES, "draft-distilgpt2-self",
        "distilgpt2's config.json (GPT2LMHeadModel, 6 layers of 768, vocab 50257, n_positions "
        "1024, tied head)", spec={"num_speculative_tokens": 5}, once=True,
    ),
    *(Config(
        f"vllm-v0-eagle1-{key}", "vllm", "EAGLE-1", target, draft,
        "(none: the method from the draft's name)", "--dtype float16",
        f"{_V0}/test_eagle_correctness.py@v0.8.5:{line} ({test}: {{model {draft}, "
        "num_speculative_tokens 4}, float16)", _V0_RELEASES, build,
        f"{target} config.json ({shape}); the EAGLE authors' head of its shape naming "
        "LlamaForCausalLM", spec={"num_speculative_tokens": 4}, once=True, cites_as=test,
    ) for key, target, draft, build, shape, test, line in (
        ("llama3-8b", "meta-llama/Meta-Llama-3-8B-Instruct", "yuhuili/EAGLE-LLaMA3-Instruct-8B",
         "eagle1-llama3-8b-vllm", "hidden 4096, 32 layers, 8 kv heads, vocab 128256",
         "test_llama3_eagle_e2e_greedy_correctness", 402),
    )),
]
VLLM_SOURCES |= {
    "test_llama3_eagle_e2e_greedy_correctness": [
        ("0.8.5", "tests/spec_decode/e2e/test_eagle_correctness.py:402")],
    "distilbert/distilgpt2": [("0.8.5", "tests/metrics/test_metrics.py:28"),
                              ("0.9.1", "tests/metrics/test_metrics.py:29")],
    "prompt_lookup_max": [("0.8.5", "tests/spec_decode/e2e/test_ngram_correctness.py:54")],
    "JackFram/llama-68m": [("0.8.5", "tests/spec_decode/e2e/test_multistep_correctness.py:55")],
    "JackFram/llama-160m": [("0.8.5", "tests/spec_decode/e2e/test_logprobs.py:82")],
    "draft_tensor_parallel_size": [
        ("0.8.5", "tests/spec_decode/e2e/test_integration_dist_tp4.py:41")],
}

# Medusa (vLLM 0.8.5-0.32.0): the V0 test's random head on JackFram/llama-68m, and the same head
# as tests/models/registry.py's MedusaModel example, which test_initialization.py starts with
# {model, num_speculative_tokens 1} and no method (0.32.0 tests/models/test_initialization.py:
# 219-223): the release takes method medusa from the draft's model_type
_MEDUSA_PUBLISHED = (
    "JackFram/llama-68m's config.json; the head as vLLM's own ground truth for it gives it "
    "(tests/config/draft_model_arch_groundtruth.json@v0.32.0: MedusaModel, model_type medusa, "
    "hidden 768, one layer, vocab 32000, float32) with the 5 heads the V0 test names "
    "(test_medusa_correctness.py@v0.8.5:36-38): blocks.{i}.layers.0.weight and "
    "lm_heads.{i}.weight, no bias (medusa_fc_bias defaults to False)")
VLLM_CONFIGS += [
    Config(
        "vllm-v0-medusa-llama-68m", "vllm", "Medusa", "JackFram/llama-68m",
        "abhigoyal/vllm-medusa-llama-68m-random", "(none: medusa from the draft config's "
        "model_type)", "--dtype float32", f"{_V0}/test_medusa_correctness.py@v0.8.5:31-75 "
        "(test_medusa_e2e_greedy_correctness: {model abhigoyal/vllm-medusa-llama-68m-random, "
        "num_speculative_tokens 5}, float32, enforce_eager; test_medusa_different_k at :295 runs "
        "k 1-5)", _V0_RELEASES, "medusa-llama-68m", _MEDUSA_PUBLISHED,
        spec={"num_speculative_tokens": 5}, once=True,
    ),
    Config(
        "vllm-registry-medusa-llama-68m", "vllm", "Medusa", "JackFram/llama-68m",
        "abhigoyal/vllm-medusa-llama-68m-random", "(none: medusa from the draft config's "
        "model_type)", "", "vllm-project/vllm tests/models/registry.py@v0.10.0:469 (MedusaModel: "
        "JackFram/llama-68m, speculative_model abhigoyal/vllm-medusa-llama-68m-random), started "
        "by tests/models/test_initialization.py with {model, num_speculative_tokens 1}; the V0 "
        "test runs k 1 too (0.8.5-0.9.2)", between("vllm", "0.8.5", "0.32.0"), "medusa-llama-68m",
        _MEDUSA_PUBLISHED, spec={"num_speculative_tokens": 1}, once=True,
    ),
]
VLLM_SOURCES |= {
    "abhigoyal/vllm-medusa-llama-68m-random": [
        ("0.8.5", "tests/spec_decode/e2e/test_medusa_correctness.py:34"),
        ("0.9.1", "tests/spec_decode/e2e/test_medusa_correctness.py:35"),
        *_registry_lines((
            ("0.10.0", 469), ("0.10.1", 524), ("0.10.2", 600), ("0.11.0", 605), ("0.11.1", 827),
            ("0.12.0", 850), ("0.13.0", 862), ("0.14.0", 952), ("0.16.0", 1034),
            ("0.17.0", 1097), ("0.18.0", 1134), ("0.18.1", 1135), ("0.19.0", 1167),
            ("0.19.1", 1294), ("0.20.1", 1394), ("0.21.0", 1392), ("0.22.0", 1414),
            ("0.22.1", 1415), ("0.23.0", 1447), ("0.24.0", 1421), ("0.25.0", 1403),
            ("0.26.0", 1436), ("0.27.0", 1435), ("0.28.0", 1473), ("0.29.0", 1454),
            ("0.30.0", 1489), ("0.32.0", 1447),
        )),
    ],
}

# vLLM's structured-output tests give n-gram the legacy way, {"model": "[ngram]"} and no method,
# which every release reads as method ngram (0.8.5 config.py:2307-2314; 0.32.0 config/
# speculative.py:1136-1137): tests/v1/entrypoints/llm/test_struct_output_generate.py@v0.9.0:25-30,
# 47 (tests/entrypoints/llm/ from 0.19.0), LLM(enforce_eager, max_model_len 1024)
VLLM_CONFIGS.append(Config(
    "vllm-struct-output-ngram-qwen25-1.5b", "vllm", "n-gram", "Qwen/Qwen2.5-1.5B-Instruct", "",
    "(none: ngram from the model '[ngram]')", "--enforce-eager --max-model-len 1024",
    "vllm-project/vllm tests/v1/entrypoints/llm/test_struct_output_generate.py@v0.9.0:25-30, 47 "
    "(NGRAM_SPEC_CONFIG {model [ngram], num_speculative_tokens 5, prompt_lookup_max 5, "
    "prompt_lookup_min 1} with xgrammar; @v0.19.0 tests/entrypoints/llm/... :129-134, 183)",
    between("vllm", "0.9.0"), "target-only-qwen25-1.5b",
    "Qwen2.5-1.5B-Instruct's config.json (the target's only; as the SGLang docs row builds it)",
    spec={"model": "[ngram]", "num_speculative_tokens": 5, "prompt_lookup_max": 5,
          "prompt_lookup_min": 1}, once=True,
))
VLLM_SOURCES |= {
    "Qwen/Qwen2.5-1.5B-Instruct": [
        *((version, f"tests/v1/entrypoints/llm/test_struct_output_generate.py:{line}")
          for version, line in (("0.9.0", 47), ("0.9.1", 48), ("0.10.0", 52), ("0.10.2", 57),
                                ("0.11.0", 60), ("0.12.0", 81))),
        ("0.19.0", "tests/entrypoints/llm/test_struct_output_generate.py:183"),
        ("0.28.0", "tests/entrypoints/llm/test_struct_output_generate.py:181"),
    ],
}

# The same tests' other n-gram targets: Ministral-8B-Instruct-2410 (test_structured_output, with
# outlines and guidance; load_format and config_format "hf" for mistralai/ repos from 0.12.0) and
# DeepSeek-R1-Distill-Qwen-1.5B (test_structured_output_with_reasoning_matrices, reasoning parser
# deepseek_r1, max_num_seqs 16), both with NGRAM_SPEC_CONFIG
_STRUCT_OUTPUT = "test_struct_output_generate.py"
_NGRAM_SPEC_CONFIG = {"model": "[ngram]", "num_speculative_tokens": 5, "prompt_lookup_max": 5,
                      "prompt_lookup_min": 1}
VLLM_CONFIGS += [
    Config(
        "vllm-struct-output-ngram-ministral-8b", "vllm", "n-gram",
        "mistralai/Ministral-8B-Instruct-2410", "", "(none: ngram from the model '[ngram]')",
        "--enforce-eager --max-model-len 1024 --load-format hf --config-format hf",
        f"vllm-project/vllm tests/v1/entrypoints/llm/{_STRUCT_OUTPUT}@v0.9.0:25-30, 45-46, "
        f"109-115 (LLM(model, enforce_eager, max_model_len 1024, speculative_config)); @v0.19.0 "
        f"tests/entrypoints/llm/{_STRUCT_OUTPUT}:129-134, 181-182, 229-243",
        between("vllm", "0.9.0"), "target-only-ministral-8b",
        "Ministral-8B-Instruct-2410's config.json (MistralForCausalLM: hidden 4096, 36 layers, "
        "32 heads over 8 kv heads of 128, intermediate 12288, vocab 131072, 32768 positions, "
        "sliding window 32768, rope_theta 1e8, untied head)",
        spec=_NGRAM_SPEC_CONFIG, once=True,
    ),
    Config(
        "vllm-struct-output-ngram-r1-distill-qwen-1.5b", "vllm", "n-gram",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "", "(none: ngram from the model '[ngram]')",
        "--enforce-eager --max-model-len 1024 --max-num-seqs 16 --reasoning-parser deepseek_r1",
        f"vllm-project/vllm tests/v1/entrypoints/llm/{_STRUCT_OUTPUT}@v0.9.0:25-30, 522-557; "
        f"@v0.19.0 tests/entrypoints/llm/{_STRUCT_OUTPUT}:129-134, 717-760",
        between("vllm", "0.9.0"), "target-only-r1-distill-qwen-1.5b",
        "DeepSeek-R1-Distill-Qwen-1.5B's config.json (Qwen2ForCausalLM: hidden 1536, 28 layers, "
        "12 heads over 2 kv heads, intermediate 8960, vocab 151936, 131072 positions, "
        "rope_theta 10000, bos and eos 151643, untied head)",
        spec=_NGRAM_SPEC_CONFIG, once=True,
    ),
]
VLLM_SOURCES |= {
    "mistralai/Ministral-8B-Instruct-2410": [
        *((version, f"tests/v1/entrypoints/llm/{_STRUCT_OUTPUT}:{line}")
          for version, line in (("0.9.0", 45), ("0.9.1", 46), ("0.10.2", 53), ("0.11.0", 56),
                                ("0.11.1", 58), ("0.12.0", 79))),
        ("0.19.0", f"tests/entrypoints/llm/{_STRUCT_OUTPUT}:181"),
        ("0.28.0", f"tests/entrypoints/llm/{_STRUCT_OUTPUT}:179"),
    ],
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": [
        *((version, f"tests/v1/entrypoints/llm/{_STRUCT_OUTPUT}:{line}")
          for version, line in (("0.9.0", 527), ("0.9.1", 528), ("0.10.0", 537), ("0.10.2", 552),
                                ("0.11.0", 584), ("0.11.1", 610), ("0.12.0", 614),
                                ("0.16.0", 619))),
        *((version, f"tests/entrypoints/llm/{_STRUCT_OUTPUT}:{line}")
          for version, line in (("0.19.0", 721), ("0.27.0", 723), ("0.28.0", 727))),
    ],
}

# vLLM V1's end-to-end tests that name their models in the test body: Qwen3-0.6B as its own
# draft model (test_draft_model_correctness's first case), prompt lookup on the GPU for
# Qwen3-0.6B (the async-scheduling test) and prompt lookup within a 100-token context on
# facebook/opt-125m (test_ngram_max_len, k 1, 3 and 10)
_QWEN3_06B_PUBLISHED = ("Qwen3-0.6B's config.json (hidden 1024, 28 layers, 16 heads over 8 kv "
                        "heads of 128, vocab 151936, tied head, 40960 positions)")
VLLM_CONFIGS += [
    Config(
        "vllm-e2e-draft-model-qwen3-0.6b-self", "vllm", "draft model", "Qwen/Qwen3-0.6B",
        "Qwen/Qwen3-0.6B", "draft_model", "--max-model-len 2048",
        "vllm-project/vllm tests/v1/e2e/spec_decode/draft_model/test_draft_model.py@v0.32.0:"
        "66-76, 362-386 (ArgsTest(target_model Qwen/Qwen3-0.6B, draft_model Qwen/Qwen3-0.6B, "
        "num_speculative_tokens 3), {model, method draft_model, num_speculative_tokens 3, "
        "max_model_len 2048}, max_num_seqs 100; tests/v1/e2e/test_spec_decode.py@v0.16.0:638)",
        between("vllm", "0.16.0"), "draft-qwen3-0.6b-self", _QWEN3_06B_PUBLISHED + " for both",
        spec={"num_speculative_tokens": 3, "max_model_len": 2048}, once=True,
        cites_as='target_model="Qwen/Qwen3-0.6B"',
    ),
    # the same test's Transformers-backend case: vLLM 0.32.0 registers Olmo2ForCausalLM as
    # ("transformers", "TransformersForCausalLM") (model_executor/models/registry.py:723)
    Config(
        "vllm-e2e-draft-model-olmo2-1b-self", "vllm", "draft model",
        "allenai/OLMo-2-0425-1B-Instruct", "allenai/OLMo-2-0425-1B-Instruct", "draft_model",
        "--max-model-len 2048", "vllm-project/vllm tests/v1/e2e/spec_decode/draft_model/"
        "test_draft_model.py@v0.32.0:153-165, 365-386 (test_draft_model_transformers_backend: "
        "ArgsTest(target and draft OLMo-2-0425-1B-Instruct, num_speculative_tokens 3), {model, "
        "method draft_model, num_speculative_tokens 3, max_model_len 2048})",
        between("vllm", "0.32.0"), "draft-olmo2-1b-self",
        "OLMo-2-0425-1B's config values (Olmo2ForCausalLM: hidden 2048, 16 layers, 16 heads and "
        "kv heads, intermediate 8192, vocab 100352, 4096 positions, rope_theta 500000, untied "
        "head, eos 100257, pad 100277), as fairseq2's OLMo-2 config records them for that repo "
        "and a checkpoint check agrees; the Instruct model has the base model's architecture",
        spec={"num_speculative_tokens": 3, "max_model_len": 2048}, once=True,
        cites_as='target_model="allenai/OLMo-2-0425-1B-Instruct"',
    ),
    Config(
        "vllm-e2e-ngram-gpu-qwen3-0.6b", "vllm", "n-gram", "Qwen/Qwen3-0.6B", "", "ngram_gpu",
        "--dtype float32", "vllm-project/vllm tests/v1/e2e/general/test_async_scheduling.py"
        "@v0.32.0:23, 174-194 (MODEL Qwen/Qwen3-0.6B, {method ngram_gpu, num_speculative_tokens 3, "
        "prompt_lookup_max 3, prompt_lookup_min 2}, float32, async scheduling on and off)",
        between("vllm", "0.18.0"), "target-only-qwen3-0.6b",
        _QWEN3_06B_PUBLISHED + " (the target's only)",
        spec={"num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 2},
        once=True, cites_as="ngram_gpu_config",
    ),
    Config(
        "vllm-e2e-ngram-opt-125m-max-len", "vllm", "n-gram", "facebook/opt-125m", "", "ngram",
        "--max-model-len 100 --enforce-eager", "vllm-project/vllm tests/v1/spec_decode/"
        "test_max_len.py@v0.8.5:16-36 (test_ngram_max_len: LLM(facebook/opt-125m, max_model_len "
        "100, enforce_eager), {method ngram, prompt_lookup_max 5, prompt_lookup_min 3, "
        "num_speculative_tokens 1, 3, 10}; @v0.32.0:20-36)", between("vllm", "0.8.5"),
        "target-only-opt-125m", "facebook/opt-125m's config.json (the target's only)",
        spec={"num_speculative_tokens": 10, "prompt_lookup_max": 5, "prompt_lookup_min": 3},
        once=True, cites_as="test_ngram_max_len",
    ),
]
VLLM_CONFIGS.append(Config(
    "vllm-e2e-speculators-llama32-1b", "vllm", "speculators", "meta-llama/Llama-3.2-1B-Instruct",
    "nm-testing/Llama3_2_1B_speculator.eagle3", "eagle3", "",
    "vllm-project/vllm tests/v1/e2e/test_async_scheduling.py@v0.11.1:18, 82-86 "
    "(test_with_spec_decoding: MTP_MODEL meta-llama/Llama-3.2-1B-Instruct, {method eagle3, "
    "num_speculative_tokens 2, model nm-testing/Llama3_2_1B_speculator.eagle3}; "
    "tests/v1/e2e/general/ from 0.18.0); the same pair in the synthetic-rejection, pipeline-"
    "parallel, async-spec and CPU tests (k 2 or 3)", between("vllm", "0.11.1"),
    "speculators-llama32-1b",
    "Llama-3.2-1B-Instruct's config.json; the speculator's is not known offline: vllm-project/"
    "speculators' Eagle3SpeculatorConfig (tests/realshape.py speculators_eagle3_config) for "
    "Llama-3.2-1B-Instruct stands in, as for the RedHatAI rows",
    spec={"num_speculative_tokens": 2}, once=True,
))
VLLM_CONFIGS.append(Config(
    "vllm-e2e-eagle3-qwen3-1.7b-lora", "vllm", "EAGLE-3", "Qwen/Qwen3-1.7B",
    "AngelSlim/Qwen3-1.7B_eagle3", "eagle3",
    "--max-model-len 2048 --enable-lora --max-loras 1 --max-cpu-loras 1 --max-lora-rank 16",
    "vllm-project/vllm tests/v1/e2e/test_lora_with_spec_decode.py@v0.11.1:41-50, 103-121 "
    "(test_batch_inference_correctness: LLM(Qwen/Qwen3-1.7B, max_model_len 2048, enable_lora, "
    "max_loras 1, max_lora_rank 16), {method eagle3, model AngelSlim/Qwen3-1.7B_eagle3, "
    "num_speculative_tokens 3, max_model_len 2048}, the LoRA premjatin/qwen-linear-algebra-"
    "coder; spec_decode/ from 0.18.0, draft_model/test_lora.py from 0.27.0; the same pair in "
    "`vllm bench forward`, docs/cli/README.md@v0.33.0:185)", between("vllm", "0.11.1"),
    "eagle3-qwen3-1.7b-vllm",
    "Qwen3-1.7B's config.json (Qwen3-0.6B's with hidden 2048, intermediate 6144); the head's "
    "config is not known offline: a SpecForge-style head of the target's shape naming "
    "LlamaForCausalLM stands in, as for AngelSlim/Qwen3-8B_eagle3 (vllm-eagle3-qwen3-8b)",
    spec={"num_speculative_tokens": 3, "max_model_len": 2048}, once=True,
))
VLLM_SOURCES |= {
    "AngelSlim/Qwen3-1.7B_eagle3": [
        ("0.11.1", "tests/v1/e2e/test_lora_with_spec_decode.py:48"),
        ("0.18.0", "tests/v1/e2e/spec_decode/test_lora_with_spec_decode.py:48"),
        ("0.20.1", "tests/v1/e2e/spec_decode/test_lora_with_spec_decode.py:46"),
        *((version, f"tests/v1/e2e/spec_decode/draft_model/test_lora.py:{line}")
          for version, line in (("0.27.0", 46), ("0.28.0", 47), ("0.29.0", 48), ("0.31.0", 47))),
    ],
    "nm-testing/Llama3_2_1B_speculator.eagle3": [
        ("0.11.1", "tests/v1/e2e/test_async_scheduling.py:85"),
        ("0.13.0", "tests/v1/e2e/test_async_scheduling.py:98"),
        ("0.14.0", "tests/v1/e2e/test_async_scheduling.py:107"),
        ("0.17.0", "tests/v1/e2e/test_async_scheduling.py:110"),
        ("0.18.0", "tests/v1/e2e/general/test_async_scheduling.py:116"),
        ("0.21.0", "tests/v1/e2e/general/test_async_scheduling.py:118"),
        ("0.31.0", "tests/v1/e2e/general/test_async_scheduling.py:117"),
    ],
}
VLLM_SOURCES |= {
    'target_model="Qwen/Qwen3-0.6B"': [
        ("0.16.0", "tests/v1/e2e/test_spec_decode.py:638"),
        ("0.17.0", "tests/v1/e2e/test_spec_decode.py:777"),
        *((version, f"tests/v1/e2e/spec_decode/test_spec_decode.py:{line}")
          for version, line in (("0.18.0", 808), ("0.19.0", 807), ("0.19.1", 811),
                                ("0.20.1", 828), ("0.21.0", 869), ("0.22.0", 881),
                                ("0.25.0", 922), ("0.26.0", 996))),
        *((version, f"tests/v1/e2e/spec_decode/draft_model/test_draft_model.py:{line}")
          for version, line in (("0.27.0", 72), ("0.28.0", 68), ("0.31.0", 69), ("0.33.0", 76))),
    ],
    'target_model="allenai/OLMo-2-0425-1B-Instruct"': [
        ("0.32.0", "tests/v1/e2e/spec_decode/draft_model/test_draft_model.py:158"),
        ("0.33.0", "tests/v1/e2e/spec_decode/draft_model/test_draft_model.py:165"),
    ],
    "ngram_gpu_config": [
        *((version, f"tests/v1/e2e/general/test_async_scheduling.py:{line}")
          for version, line in (("0.18.0", 168), ("0.21.0", 172), ("0.24.0", 176),
                                ("0.31.0", 174))),
    ],
    "test_ngram_max_len": [
        (version, f"tests/v1/spec_decode/test_max_len.py:{line}")
        for version, line in (("0.8.5", 16), ("0.9.1", 17), ("0.10.1", 19), ("0.11.1", 20),
                              ("0.21.0", 21))
    ],
}

_SGL_NGRAM = ("sgl-project/sglang/test/srt/test_ngram_speculative_decoding.py (--speculative-"
              "algorithm NGRAM --speculative-num-draft-tokens 16 --cuda-graph-max-bs 8 "
              "--mem-fraction-static 0.8 --trust-remote-code; the stored copy read has no commit)")
SGLANG_CONFIGS += [
    Config(
        "sglang-ngram-qwen25-coder-7b", "sglang", "n-gram", "Qwen/Qwen2.5-Coder-7B-Instruct", "",
        "NGRAM", "--speculative-num-draft-tokens 16 --cuda-graph-max-bs 8 "
        "--mem-fraction-static 0.8 --trust-remote-code", _SGL_NGRAM, between("sglang", "0.5.3"),
        "target-only-qwen25-coder-7b",
        "Qwen2.5-Coder-7B-Instruct's config.json (the target's only)",
        constant="DEFAULT_NGRAM_SPECULATIVE_TARGET_MODEL_FOR_TEST|DEFAULT_TARGET_MODEL_NGRAM",
        once=True,
    ),
    Config(
        "sglang-standalone-llama32-1b", "sglang", "draft model", "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.2-1B-Instruct", "STANDALONE",
        "--speculative-num-steps 4 --speculative-eagle-topk 2 --speculative-num-draft-tokens 7",
        "sgl-project/sglang/test/srt/test_standalone_speculative_decoding.py (the stored copy "
        "read has no commit: flags as its launch lists them)", between("sglang", "0.5.2"),
        "draft-llama32-1b",
        "Llama-3.1-8B-Instruct's and Llama-3.2-1B-Instruct's config.json (the draft: hidden 2048, "
        "16 layers, 32 heads over 8 kv heads of 64, vocab 128256, tied head, llama3 scaling x32)",
        constant="DEFAULT_STANDALONE_SPECULATIVE_DRAFT_MODEL_FOR_TEST|"
        "DEFAULT_DRAFT_MODEL_STANDALONE", once=True,
    ),
]

# SGLang's docs (the speculative-decoding page, read at each release's git tag from a fork
# mirror that carries upstream's tags, v0.4.6.post5-v0.5.18; v0.5.19-v0.5.23's tags could not be
# read offline, so their releases are not listed). The pages moved: docs/backend/
# speculative_decoding.ipynb (to 0.4.10.post2), docs/advanced_features/speculative_decoding.ipynb
# (0.5.1-0.5.8.post1), .md (0.5.9-0.5.15.post1), docs_new/... .ipynb with the old values and .mdx
# with the new (0.5.11-0.5.16), docs/docs/advanced_features/speculative_decoding.mdx (0.5.17 on).
_SGL_DOCS = "sgl-project/sglang docs/backend/speculative_decoding.ipynb@v0.4.6.post5"
_SGL_DOCS_MD = "sgl-project/sglang docs/advanced_features/speculative_decoding.md@v0.5.9"
_OLD_VALUES = between("sglang", "0.4.6.post5", "0.5.8.post1") + between(
    "sglang", "0.5.11", "0.5.15.post1")  # the .ipynb recipes, in docs_new/ from 0.5.11
_NEW_VALUES = between("sglang", "0.5.9", "0.5.18")
SGLANG_CONFIGS += [
    Config(
        "sglang-docs-eagle2-llama2-7b", "sglang", "EAGLE-1", "meta-llama/Llama-2-7b-chat-hf",
        "lmsys/sglang-EAGLE-llama2-chat-7B", "EAGLE",
        "--speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16 "
        "--cuda-graph-max-bs 8", f"{_SGL_DOCS}:76-78 ('EAGLE-2 decoding'); .md@v0.5.9:89-98 "
        "adds --mem-fraction-static 0.7", between("sglang", "0.4.6.post5", "0.5.18"),
        "eagle1-llama2-7b", "as sglang-eagle1-llama2-7b", once=True,
        spelled={"--model-path": "--model"},
    ),
    Config(
        "sglang-docs-eagle2-llama2-7b-compile", "sglang", "EAGLE-1",
        "meta-llama/Llama-2-7b-chat-hf", "lmsys/sglang-EAGLE-llama2-chat-7B", "EAGLE",
        "--speculative-num-steps 5 --speculative-eagle-topk 8 --speculative-num-draft-tokens 64 "
        "--mem-fraction-static 0.6 --enable-torch-compile --torch-compile-max-bs 2",
        f"{_SGL_DOCS}:131-134 ('EAGLE-2 decoding with torch.compile': --mem-fraction 0.6, an "
        "argparse prefix of --mem-fraction-static)", _OLD_VALUES, "eagle1-llama2-7b",
        "as sglang-eagle1-llama2-7b", once=True,
        spelled={"--model-path": "--model", "--mem-fraction-static": "--mem-fraction"},
    ),
    Config(
        "sglang-docs-frspec-llama3-8b", "sglang", "EAGLE-1", "meta-llama/Meta-Llama-3-8B-Instruct",
        "lmsys/sglang-EAGLE-LLaMA3-Instruct-8B", "EAGLE",
        "--speculative-num-steps 5 --speculative-eagle-topk 8 --speculative-num-draft-tokens 64 "
        "--speculative-token-map thunlp/LLaMA3-Instruct-8B-FR-Spec/freq_32768.pt "
        "--mem-fraction-static 0.7 --cuda-graph-max-bs 2 --dtype float16",
        f"{_SGL_DOCS}:191-194 ('EAGLE-2 decoding via frequency-ranked speculative sampling')",
        _OLD_VALUES, "eagle1-llama3-8b-sglang", "as sglang-eagle1-llama3-8b-token-map", once=True,
        spelled={"--model-path": "--model", "--mem-fraction-static": "--mem-fraction"},
    ),
    Config(
        "sglang-docs-frspec-llama3-8b-new", "sglang", "EAGLE-1",
        "meta-llama/Meta-Llama-3-8B-Instruct", "lmsys/sglang-EAGLE-LLaMA3-Instruct-8B", "EAGLE",
        "--speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16 "
        "--speculative-token-map thunlp/LLaMA3-Instruct-8B-FR-Spec/freq_32768.pt "
        "--mem-fraction-static 0.7 --cuda-graph-max-bs 8 --dtype float16",
        f"{_SGL_DOCS_MD}:170-181", _NEW_VALUES, "eagle1-llama3-8b-sglang",
        "as sglang-eagle1-llama3-8b-token-map", once=True,
        spelled={"--model-path": "--model"},
    ),
    Config(
        "sglang-docs-eagle3-llama31-8b", "sglang", "EAGLE-3", "meta-llama/Llama-3.1-8B-Instruct",
        "jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B", "EAGLE3",
        "--speculative-num-steps 5 --speculative-eagle-topk 8 --speculative-num-draft-tokens 32 "
        "--mem-fraction-static 0.6 --cuda-graph-max-bs 2 --dtype float16",
        f"{_SGL_DOCS}:247-250 ('EAGLE-3 decoding')", _OLD_VALUES, "eagle3-llama31-8b-sglang",
        "as sglang-eagle3-llama31-8b-jamesliu1", once=True,
        spelled={"--model-path": "--model", "--mem-fraction-static": "--mem-fraction"},
    ),
    Config(
        "sglang-docs-eagle3-llama31-8b-new", "sglang", "EAGLE-3",
        "meta-llama/Meta-Llama-3.1-8B-Instruct", "jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B",
        "EAGLE3", "--speculative-num-steps 3 --speculative-eagle-topk 4 "
        "--speculative-num-draft-tokens 16 --mem-fraction-static 0.7 --cuda-graph-max-bs 8 "
        "--dtype float16", f"{_SGL_DOCS_MD}:210-220", _NEW_VALUES, "eagle3-llama31-8b-sglang",
        "as sglang-eagle3-llama31-8b-jamesliu1", once=True,
        spelled={"--model-path": "--model"},
    ),
    Config(
        "sglang-docs-standalone-qwen25-7b", "sglang", "draft model", "Qwen/Qwen2.5-7B-Instruct",
        "Qwen/Qwen2.5-1.5B-Instruct", "STANDALONE",
        "--speculative-num-steps 4 --speculative-eagle-topk 2 --speculative-num-draft-tokens 7 "
        "--mem-fraction-static 0.7 --cuda-graph-max-bs 8", f"{_SGL_DOCS_MD}:297-306 ('Standalone "
        "speculative decoding (small draft model)'); the Spec V2 example at :344-353 gives topk 1 "
        "and 5 draft tokens", between("sglang", "0.5.9", "0.5.14"), "draft-qwen25-1.5b-for-7b",
        "Qwen2.5-7B-Instruct's config.json (Qwen2.5-Coder-7B-Instruct's widths, vocab 152064) and "
        "Qwen2.5-1.5B-Instruct's (hidden 1536, 28 layers, 12 heads over 2 kv heads, vocab 151936, "
        "tied head), one tokenizer of 151643 base tokens for both (a stand-in vocab)", once=True,
        spelled={"--model-path": "--model"},
    ),
    Config(
        "sglang-docs-qwen3-next-nextn", "sglang", "MTP", "Qwen/Qwen3-Next-80B-A3B-Instruct", "",
        "NEXTN", "--speculative-num-steps 3 --speculative-eagle-topk 1 "
        "--speculative-num-draft-tokens 4 --tp 4",
        "sgl-project/sglang docs/basic_usage/qwen3.md@v0.5.2:24 (python3 -m sglang.launch_server "
        "--model Qwen/Qwen3-Next-80B-A3B-Instruct --tp 4 --speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --speculative-algo NEXTN: "
        "argparse's prefixes of --model-path and --speculative-algorithm)",
        between("sglang", "0.5.2", "0.5.15.post1"), "mtp-qwen3-next-in-target",
        "as sglang-mtp-qwen3-next-80b", once=True,
        spelled={"--model-path": "--model", "--speculative-algorithm": "--speculative-algo"},
    ),
    Config(
        "sglang-docs-adaptive-llama2-7b", "sglang", "EAGLE-1", "meta-llama/Llama-2-7b-chat-hf",
        "lmsys/sglang-EAGLE-llama2-chat-7B", "EAGLE",
        "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 "
        "--speculative-adaptive", "sgl-project/sglang docs/advanced_features/adaptive_"
        "speculative_decoding.md@v0.5.11:101-108", between("sglang", "0.5.11", "0.5.15.post1"),
        "eagle1-llama2-7b", "as sglang-eagle1-llama2-7b", once=True,
        spelled={"--model-path": "--model"},
    ),
    Config(
        "sglang-docs-dsv3-mtp", "sglang", "MTP", "deepseek-ai/DeepSeek-V3-0324", "", "EAGLE",
        "--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2 "
        "--trust-remote-code --tp 8", "sgl-project/sglang docs/references/deepseek.md"
        "@v0.4.6.post5:158 ('Multi-token Prediction'; docs/basic_usage/deepseek.md@v0.5.1:161, "
        "deepseek_v3.md@v0.5.6:161-168)", between("sglang", "0.4.6.post5", "0.5.6"),
        "mtp-dsv3-in-target", "as sglang-mtp-dsv3-in-target (DeepSeek-V3-0324 is DeepSeek-V3's "
        "architecture and widths)", once=True,
    ),
    Config(
        "sglang-docs-dsv3-mtp-auto", "sglang", "MTP", "deepseek-ai/DeepSeek-V3-0324", "", "EAGLE",
        "--trust-remote-code --tp 8", "sgl-project/sglang docs/basic_usage/deepseek_v3.md"
        "@v0.5.6.post1:181-185 (no steps, topk or draft tokens: the release picks them)",
        between("sglang", "0.5.6.post1", "0.5.15.post1"), "mtp-dsv3-in-target",
        "as sglang-mtp-dsv3-in-target", once=True,
    ),
    Config(
        "sglang-docs-dsv32-mtp", "sglang", "MTP", "deepseek-ai/DeepSeek-V3.2-Exp", "", "EAGLE",
        "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 "
        "--tp 8 --dp 8 --enable-dp-attention", "sgl-project/sglang docs/basic_usage/"
        "deepseek_v32.md@v0.5.4.post1:68 ('Multi-token Prediction'; from v0.5.7 :74 also shows "
        "it with --tp 8 alone)", between("sglang", "0.5.4.post1", "0.5.15.post1"),
        "mtp-dsv32-in-target", "transformers' DeepseekV32Config defaults, documented as "
        "DeepSeek-V3.2-Exp's (DeepSeek-V3's widths and MTP layer, the indexer's 64 heads of 128)",
        once=True, spelled={"--model-path": "--model"}, beside=("transformers",),
    ),
    Config(
        "sglang-cookbook-dsv32-mtp-pp-cp", "sglang", "MTP", "deepseek-ai/DeepSeek-V3.2-Exp", "",
        "EAGLE", "--speculative-num-steps 2 --speculative-eagle-topk 1 "
        "--speculative-num-draft-tokens 3 --nnodes 2 --node-rank 0 --tp 16 --dp 2 "
        "--enable-dp-attention --page-size 64 --trust-remote-code --context-length 65536 "
        "--max-running-requests 128 --allow-auto-truncate", "sgl-project/sglang docs_new/"
        "cookbook/autoregressive/DeepSeek/DeepSeek-V3_2.mdx@v0.5.11:321-332 ('Enabling PP, CP "
        "and TP with FP8 KV cache'; docs/cookbook/.../DeepSeek-V3_2.mdx@v0.5.17:891-902)",
        between("sglang", "0.5.11", "0.5.18"), "mtp-dsv32-in-target", "as sglang-docs-dsv32-mtp",
        once=True, beside=("transformers",),
    ),
    Config(
        "sglang-cookbook-kimi-k25-eagle3", "sglang", "EAGLE-3", "moonshotai/Kimi-K2.5",
        "lightseekorg/kimi-k2.5-eagle3", "EAGLE3", "--speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --tp 8 "
        "--reasoning-parser kimi_k2 --tool-call-parser kimi_k2 --trust-remote-code",
        "sgl-project/sglang docs_new/cookbook/autoregressive/Moonshotai/Kimi-K2.5.mdx@v0.5.11:"
        "446-458 ('4.2.5 Speculative Decoding': `sglang serve`, SGLANG_ENABLE_SPEC_V2=1 in the "
        "environment; the benchmark section's :1032-1044 is the same launch)",
        between("sglang", "0.5.11", "0.5.13.post1"), "eagle3-kimi-k25",
        "Kimi-K2.5's config.json as tests/realshape.py kimi_k25_config (the multimodal wrapper, "
        "Kimi-K2's language model in text_config); the head's config is not known offline: "
        "SpecForge's Kimi-K2.5 template stands in (tests/test_oracle.py _eagle3_kimi_k25)",
        once=True,
    ),
    Config(
        "sglang-docs-ngram-qwen25-7b", "sglang", "n-gram", "Qwen/Qwen2.5-7B-Instruct", "",
        "NGRAM", "--speculative-num-draft-tokens 16 --speculative-ngram-max-bfs-breadth 10 "
        "--mem-fraction-static 0.7 --cuda-graph-max-bs 8",
        "sgl-project/sglang docs/advanced_features/speculative_decoding.md@v0.5.10:405-412 "
        "('NGRAM-specific parameters'; 0.5.9's :405-413 adds "
        "--speculative-ngram-max-match-window-size 12, a flag 0.5.10 drops with the example's)",
        between("sglang", "0.5.9", "0.5.18"), "target-only-qwen25-7b",
        "Qwen2.5-7B-Instruct's config.json (the target's only)", once=True,
        spelled={"--model-path": "--model"},
    ),
]

CONFIGS = SGLANG_CONFIGS + VLLM_CONFIGS

# Configurations the engines run that the oracle does not build yet, each with why.
NOT_BUILT = [
    ("vllm", "(the docs' EAGLE-1 table: Mixtral-8x7B-Instruct, Qwen2-7B/72B-Instruct)",
     "yuhuili/EAGLE-mixtral-instruct-8x7B, yuhuili/EAGLE-Qwen2-7B-Instruct, "
     "yuhuili/EAGLE-Qwen2-72B-Instruct", "EAGLE-1",
     "docs/features/spec_decode.md@v0.9.2:243, 246-247 (0.8.5-0.16.0)",
     "the heads' config.json files are not known offline (SafeAILab/EAGLE ships configs for "
     "its LLaMA and Vicuna heads only, eagle/train/*.json): the architecture they name decides "
     "which class vLLM looks up, and a third-party write-up says the Mixtral head declares 32 "
     "kv heads against the target's 8, which would be a refusal to verify, not a row to "
     "call clean; built once their configs can be read"),
    ("sglang", "(MTP on GLM-4.6-FP8: SGLang's docs/basic_usage/glm45.md)",
     "(the target's own MTP layer)", "MTP", "sgl-project/sglang docs/basic_usage/glm45.md",
     "the class each release loads is read from its own code and tested (tests/"
     "test_draft_rename.py: GLM-4.5 on four releases); the checkpoint is not built: "
     "GLM-4.6-FP8's quantization layout (block FP8 or compressed-tensors) is not known offline, "
     "and the layout decides the quantization checks"),
    ("vllm", "(Medusa: FasterDecoding/medusa-vicuna-7b-v1.3 on lmsys/vicuna-7b-v1.3, k 3, the "
     "acceptance test, 0.25.0-0.32.0)", "FasterDecoding/medusa-vicuna-7b-v1.3", "Medusa",
     "tests/v1/e2e/spec_decode/acceptance_rates/mtp_other/test_medusa.py@v0.32.0:21-38 "
     "(spec_decode/test_spec_decode.py from 0.25.0)",
     "the checkpoint's files are not known offline (FasterDecoding's own layout and config "
     "keys, which vLLM reads from 0.25.0); that layout is judged with a stand-in (tests/"
     "test_oracle.py test_fasterdecoding_s_medusa_layout_is_read_where_vllm_remaps_it)"),
    ("vllm", "(V0 e2e: the MLP speculator on JackFram/llama-160m, k from n_predict and 1-3; "
     "the registry's MLPSpeculatorPreTrainedModel)", "ibm-ai-platform/llama-160m-accelerator",
     "MLP speculator", "tests/spec_decode/e2e/test_mlp_correctness.py@v0.8.5:40-76",
     "its config.json is not known offline (only n_predict 3, from the test's comment) and "
     "remotedbg has no rules for the kind (method mlp_speculator from the model_type: said "
     "unknown)"),
    ("vllm", "(V0 e2e: the random EAGLE head on JackFram/llama-68m, k 1-4; the registry's "
     "EAGLEModel)", "abhigoyal/vllm-eagle-llama-68m-random", "EAGLE-1 (V0 EAGLEModel)",
     "tests/spec_decode/e2e/test_eagle_correctness.py@v0.8.5:28-71",
     "the repo's current config.json is not known offline: its first commit wraps the Llama "
     "config under \"config\", a later one (a118958, 721 bytes) rewrote it, and which key "
     "vLLM's EAGLEConfig reads it from decides the head's shape"),
    ("vllm", "(V0 e2e: yuhuili/EAGLE-llama2-chat-7B on Llama-2-7b-chat-hf, k 4, float16, under "
     "VLLM_USE_V1=0)", "yuhuili/EAGLE-llama2-chat-7B", "EAGLE-1",
     "tests/spec_decode/e2e/test_eagle_correctness.py@v0.8.5:352 (tests/spec_decode/conftest.py:"
     "8-11 sets VLLM_USE_V1=0)", "V0's EAGLE worker is not modelled: its head class builds the "
     "Llama layers through ModelRegistry.resolve_model_cls at run time (0.8.5 model_executor/"
     "models/eagle.py:72-83), and warns and drops this head's fc.bias (:203-210). remotedbg "
     "judges the launch as V1 serves it, which stops at start on that fc.bias (KeyError, "
     "0.8.5 llama_eagle.py:88-110): tests/test_oracle.py "
     "test_an_eagle1_head_with_fc_bias_is_judged_as_v1_builds_it"),
    ("vllm", "(V0 e2e: DeepSeek MTP on luccafong/deepseek_mtp_main_random)",
     "(the target's own MTP layer)", "MTP",
     "tests/spec_decode/e2e/test_mtp_correctness.py@v0.8.5:32-70",
     "vLLM's CI never runs it: every release's pipeline passes --ignore=spec_decode/e2e/"
     "test_mtp_correctness.py (.buildkite/test-pipeline.yaml@v0.8.5:277-285)"),
    ("vllm", "(V0 e2e: tensor parallel 2 with JackFram/llama-68m drafts, n-gram, and "
     "ibm-granite/granite-3b-code-instruct as its own draft)", "JackFram/llama-68m",
     "draft model, n-gram", "tests/spec_decode/e2e/test_integration_dist_tp2.py@v0.8.5:54-230",
     "disabled in vLLM's CI ('# this test fails consistently. TODO: investigate and fix', "
     ".buildkite/test-pipeline.yaml@v0.8.5:591): no CI run says it is correct"),
    ("vllm", "(V0 e2e: a GPTQ draft, LnL-AI/TinyLlama-1.1B-Chat-v1.0-GPTQ-4bit, for "
     "JackFram/llama-160m)", "LnL-AI/TinyLlama-1.1B-Chat-v1.0-GPTQ-4bit", "draft model",
     "tests/spec_decode/e2e/test_integration.py@v0.8.5:62-94",
     "never runs: its per_test_common_llm_kwargs parameter list is empty, which pytest skips"),
    ("vllm", "(V0 registry: the EAGLE and EAGLE-3 repos as their own targets, and MiniCPM's "
     "EAGLE head)", "yuhuili/EAGLE-LLaMA3-Instruct-8B, yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
     "EAGLE-1, EAGLE-3", "tests/models/registry.py@v0.8.5:383 (0.8.5-0.9.2)",
     "test_initialization starts the head checkpoint as the target with dummy weights, which no "
     "user serves; the heads themselves are rows with their real targets; EagleMiniCPM is "
     "is_available_online=False"),
    ("vllm", "(the docs' and examples' MLP speculators: Llama-3.1-70B-Instruct with "
     "llama3-70b-accelerator, 0.8.5-0.17.1; Llama-3.1-8B-Instruct with llama3-8b-accelerator, "
     "0.18.0-0.32.0; Llama-2-13b-chat with llama-13b-accelerator, examples/offline_inference/"
     "mlpspeculator.py, 0.8.5-0.33.0)", "ibm-ai-platform/llama3-70b-accelerator, "
     "ibm-ai-platform/llama3-8b-accelerator, ibm-ai-platform/llama-13b-accelerator",
     "MLP speculator", "docs/source/features/spec_decode.md@v0.8.5:142; docs/features/"
     "speculative_decoding/mlp.md@v0.18.0:16; examples/offline_inference/mlpspeculator.py"
     "@v0.8.5:62", "the accelerators' config.json files are not known offline; from 0.10.0 "
     "every release the docs show them on refuses the method at start (V1 has no MLP "
     "speculator: 'Unknown speculative decoding method'), which remotedbg says (tests/"
     "test_oracle.py test_the_mlp_speculator_where_vllm_no_longer_serves_it_is_said); on "
     "0.8.5-0.9.2 (V0) the kind has no rules: said unknown"),
    ("vllm", "(the benchmark docs' EAGLE-3 server: Llama-3.3-70B-Instruct with "
     "nvidia/Llama-3.3-70B-Instruct-Eagle3, 0.20.0 on; `vllm bench forward`'s Qwen3-1.7B with "
     "AngelSlim/Qwen3-1.7B_eagle3 is the row vllm-e2e-eagle3-qwen3-1.7b-lora)",
     "nvidia/Llama-3.3-70B-Instruct-Eagle3", "EAGLE-3", "docs/benchmarking/cli.md@v0.20.0:297",
     "the head's config.json is not known offline (which architecture it names decides the "
     "class vLLM loads)"),
    ("vllm", "(MTP pages: Gemma-4-E2B-it with its assistant checkpoint, 0.21.0 on; Qwen3.8-27B in "
     "the sleep-mode page, 0.32.0 on; a Dots3 note with no repo, 0.28.0 on)",
     "gg-hf-am/gemma-4-E2B-it-assistant", "MTP", "docs/features/speculative_decoding/mtp.md"
     "@v0.21.0:24; docs/features/sleep_mode.md@v0.32.0:115; docs/models/supported_models.md"
     "@v0.28.0:643", "Gemma-4's MTP assistant is a draft kind remotedbg has no rules for "
     "(REGISTRY_NOT_BUILT Gemma4MTPModel); Qwen3.8-27B's config is not known offline; the Dots3 "
     "note names no checkpoint"),
    ("vllm", "(new speculative kinds in the docs: DSpark adaptive verification, 0.28.0 on; "
     "DFlash on MiMo-V2.5, 0.32.0 on; extract_hidden_states on Qwen3-8B, the example from "
     "0.17.0, the page from 0.22.0)", "(their own draft kinds)", "DSpark, DFlash, "
     "extract_hidden_states", "docs/features/speculative_decoding/adaptive_verification.md"
     "@v0.28.0; docs/features/speculative_decoding/extract_hidden_states.md@v0.22.0",
     "draft kinds remotedbg has no rules for (REGISTRY_NOT_BUILT): reported unknown, never "
     "judged by EAGLE's rules"),
    ("vllm", "(AWS Neuron examples: neuron_eagle.py, neuron_speculation.py)",
     "(local paths)", "EAGLE-1, draft model", "examples/offline_inference/neuron_eagle.py"
     "@v0.9.0:26 (0.9.0-0.10.1.1)", "Neuron-only launches with local checkpoint paths, not in "
     "vLLM's CI pipeline; remotedbg reads GPU servers"),
    ("vllm", "(PARD: parallel drafting with amd/PARD-Qwen3-0.6B for Qwen/Qwen3-8B, and online "
     "for Qwen/Qwen3-4B)",
     "amd/PARD-Qwen3-0.6B", "draft model", "docs/features/speculative_decoding/"
     "parallel_draft_model.md@v0.18.0:14-20, 41 (0.18.0 on)", "the PARD draft's config.json (its "
     "mask tokens and vocabulary) is not known offline, and parallel_drafting's own rules are "
     "not modelled: built once both are read"),
    ("sglang", "(the speculative-decoding page on 0.5.19-0.5.23; its DFLASH example, 0.5.11 "
     "on; the Spec V2 STANDALONE variant; the OOM recipe's placeholders)",
     "(the page's drafts)", "EAGLE, STANDALONE, DFLASH",
     "sgl-project/sglang docs/docs/advanced_features/speculative_decoding.mdx",
     "0.5.19-0.5.23's tags are in no mirror that could be read offline (the stored copy of the "
     "page at an unknown later commit has 0.5.18's commands); DFLASH is a draft kind remotedbg "
     "has no rules for; the Spec V2 example (SGLANG_ENABLE_SPEC_V2=True, topk 1, 5 draft "
     "tokens) is the STANDALONE row's pair with other settings; the OOM recipe names "
     "<your-model>"),
    ("sglang", "(the other docs pages that launch speculation, beyond the Qwen3, DeepSeek-V3, "
     "DeepSeek-V3.2 and adaptive-speculation pages and the DeepSeek-V3.2 cookbook's PP/CP "
     "launch, which are rows: the Llama-4 Maverick, GLM-4.6-FP8, gpt-oss-120b and Hy3 pages, "
     "the TPU page (sgl_jax, another program), the rest of the cookbook, PD disaggregation, "
     "and the Ascend NPU pages: 382 example slots over 0.4.6.post5-0.5.18 in all)", "(their "
     "MTP layers and EAGLE heads)", "MTP, EAGLE, EAGLE-3", "sgl-project/sglang "
     "docs/basic_usage/*.md, docs/cookbook/**, docs/platforms/ascend*",
     "read and listed by a helper (318 of the slots are the Ascend NPU pages) but not yet "
     "built into rows: most name checkpoints whose configs are not known offline "
     "(GLM-4.6-FP8 below, Hy3, the Llama-4 Maverick and gpt-oss-120b EAGLE-3 heads)"),
    ("sglang", "(the Kimi-K2.5 cookbook from 0.5.14: the MLA head lightseekorg/kimi-k2.5-"
     "eagle3-mla; and the NVFP4 target nvidia/Kimi-K2.5-NVFP4 on 0.5.11-0.5.18)",
     "lightseekorg/kimi-k2.5-eagle3-mla, lightseekorg/kimi-k2.5-eagle3", "EAGLE-3",
     "sgl-project/sglang docs_new/cookbook/autoregressive/Moonshotai/Kimi-K2.5.mdx@v0.5.14:"
     "446-477 (docs/cookbook/... from 0.5.17)",
     "the MLA head's config.json (an Eagle3DeepseekV2ForCausalLM, SGLang's models/"
     "kimi_k25_eagle3.py) and the NVFP4 checkpoint's quantization config are not known "
     "offline; the Llama-style head on Kimi-K2.5 itself is a row (0.5.11-0.5.13.post1)"),
    ("vllm", "(the GSM8K accuracy configs beyond DeepSeek-R1's and DeepSeek-V3.2's, which are "
     "rows: Qwen3-Next-80B-A3B NVFP4 with qwen3_next_mtp, 0.14.0 on; Nemotron-3-Super-120B-A12B "
     "BF16/FP8/NVFP4 with mtp k 5, 0.19.0 on; nvidia/Qwen3.5-397B-A17B-NVFP4 with --spec-method "
     "mtp --spec-tokens 3, 0.23.0 on; gemma-4-E4B-it-qat-mobile-ct with its assistant, 0.27.0 "
     "on; the DSpark configs, 0.28.0 on)", "(the targets' MTP layers; google/gemma-4-E4B-it-"
     "assistant; the DSpark drafts)", "MTP, DSpark", "tests/evals/gsm8k/configs/"
     "Qwen3-Next-80B-A3B-NVFP4-EP2.yaml@v0.14.0:10; Nemotron-3-Super-120B-A12B-BF16.yaml@v0.19.0; "
     "Qwen3.5-397B-A17B-NVFP4-DEP2-MTP.yaml@v0.23.0:12-13; gemma-4-E4B-it-qat-mobile-ct.yaml"
     "@v0.27.0:8", "the NVFP4 checkpoints' quantization configs and Nemotron-3-Super's and "
     "Qwen3.5-397B's config.json are not known offline (the BF16 Qwen3-Next-80B is a row, and "
     "the --spec-method/--spec-tokens form Qwen3.5's config launches with is read: tests/"
     "test_oracle.py test_vllm_s_settings_flags_are_read_as_the_engine_writes_them); Gemma-4's "
     "assistant and DSpark are draft kinds remotedbg has no rules for (REGISTRY_NOT_BUILT)"),
    ("vllm", "(vLLM V1's end-to-end tests read in 0.32.0 and 0.33.0, beyond the rows: Qwen3.5 "
     "4B with its MTP layer (the hybrid chunked-prefill test, 0.19.0 on; its widths are not "
     "known offline) and 35B-A3B-FP8's; the Qwen3.5-0.8B(-Base) launches are rows; "
     "Nemotron-3.5-Lightning "
     "NVFP4 with MTP and n-gram, 0.32.0 on; DeepSeek-V4-Flash MTP, 0.22.0 on; luccafong's "
     "DeepSeek MTP draft repo, 0.27.0 on; the quantized and "
     "qwen3arch speculators; DFlash, DSpark, P-EAGLE, Medusa's FasterDecoding head (above) and "
     "Gemma-4-E4B-it's assistant)", "(each test's)", "MTP, n-gram, draft model, speculators, "
     "DFlash, DSpark, P-EAGLE", "tests/v1/e2e/** and tests/v1/spec_decode/test_speculators_*.py"
     "@v0.32.0 (file:line for each in the issue's closing note and docs/releases.md)",
     "the checkpoints' config.json files are not known offline, or the draft kind has no "
     "rules yet (REGISTRY_NOT_BUILT): reported unknown, never judged by another kind's rules"),
    ("sglang", "(a vllm-project/speculators checkpoint: Eagle3Speculator config)",
     "RedHatAI/*-speculator.eagle3", "speculators", "sglang==0.5.23 (the wheel: no "
     "`speculators_model_type` anywhere in the package)", "no SGLang release of the sweep "
     "reads the format and no SGLang test or doc serves such a checkpoint (the speculators "
     "support proposed for SGLang covers DSpark drafts only: sgl-project/sglang pull requests "
     "30982 and 34734, open); remotedbg keeps SGLang's profile without it "
     "(engines/profile.py reads_speculators_format)"),
]


# vLLM's tests/models/registry.py gives every speculative architecture an example (target and
# speculative_model or speculative_method) that tests/models/test_initialization.py starts. The
# examples of the newest release with an archive that no row builds, each with why; a row covers
# an example by its draft repo (tests/test_oracle.py checks both ways against the archive).
REGISTRY_VERSION = "0.32.0"
_OFFLINE = ("is_available_online=False: vLLM's CI skips it (test_initialization.py "
            "check_available_online), so no CI run says it is correct")
_NEW_KIND = ("a draft kind remotedbg has no rules for yet (its own architecture, loader and "
             "hidden-state contract): it is reported unknown, never judged by EAGLE's rules")
_CONFIG = ("the target's or draft's config.json is not known offline in full (vLLM's "
           "groundtruth files record at most its widths, not the MoE, attention and RoPE "
           "settings the checks read): built once it can be read")
REGISTRY_NOT_BUILT = {
    **dict.fromkeys(("LiLiCorrDraftModel", "DFlash2DraftModel", "DSparkDraftModel",
                     "DSparkV41DraftModel", "K3DSparkModel", "Qwen3DSparkModel",
                     "Qwen3OmniDSparkModel", "Gemma4DSparkModel", "EagleCohereForCausalLM",
                     "EagleMistralForCausalLM", "BailingMoeV25MTPModel", "DeepseekV32MTPModel",
                     "DeepSeekV4MTPModel", "Dots3NoteMTPModel", "InternS2MobiusMTP",
                     "KimiK3MTPModel", "MiMoV2MTPModel", "MiMoV2OmniMTPModel", "NemotronHMTPModel",
                     "Step3p5MTP"),
                    _OFFLINE),
    **dict.fromkeys(("DFlashDraftModel", "DFlashLagunaForCausalLM",
                     "DFlashQwen3NextDraftModel", "MuseGlimmerAssistantModel",
                     "DFlashMuseGlimmerAssistantModel", "PEagleDraftModel",
                     "PeagleLlamaForCausalLM", "PeagleQwen3ForCausalLM",
                     "ExtractHiddenStatesModel", "Gemma4MTPModel"), _NEW_KIND),
    **dict.fromkeys(("Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM",
                     "Eagle3MiniMaxM2ForCausalLM", "EagleMistralLarge3ForCausalLM",
                     "EagleMiniCPMForCausalLM", "Eagle3Qwen3ForCausalLM",
                     "BailingMoeV3MTPModel", "DeepSeekMTPModel",
                     "ExaoneMoeMTP", "Exaone4_5_MTP", "Glm4MoeLiteMTPModel", "GlmOcrMTPModel",
                     "Glm5NextMTPModel", "HYV3MTPModel", "HYV4MTPModel", "InklingMTPModel",
                     "LongCatFlashMTPModel", "Qwen3_5MoeMTP"), _CONFIG),
}

# What an engine's own docs show and the same release refuses: remotedbg must say so (the row's
# configuration, the releases, the error-level finding, the engine's code that refuses it, and
# the --speculative-config keys those docs give where they differ from the row's).
ENGINE_REFUSES = [
    ("vllm-draft-model-opt-125m", between("vllm", "0.10.0", "0.14.1"), "algorithm-mismatch",
     "docs/features/spec_decode.md@v0.11.0:14-37 still shows the draft-model example (with a "
     "warning that it raises NotImplementedError): no method, so SpeculativeConfig takes "
     "draft_model and raises 'Speculative decoding with draft model is not supported yet' "
     "(0.11.0 config/speculative.py:348-353)", None),
    ("vllm-draft-model-opt-125m", between("vllm", "0.15.0", "0.16.0"), "algorithm-mismatch",
     "docs/features/spec_decode/README.md@v0.16.0:36-40 gives no method, which 0.15.0 to 0.16.0 "
     "do not default: NotImplementedError(\"Unsupported speculative method: 'None'\") (0.16.0 "
     "config/speculative.py:426-431); the docs add method draft_model in 0.17.0", None),
    ("vllm-eagle1-llama3-8b", between("vllm", "0.8.5", "0.9.1"), "draft-settings",
     "docs/source/features/spec_decode.md@v0.8.5:185-191 gives no num_speculative_tokens, and the "
     "EAGLE config has no n_predict: SpeculativeConfig._verify_args raises 'num_speculative_tokens "
     "must be provided' (0.8.5 config.py:2413-2418, 2544-2548); the docs add it in 0.9.2",
     {"draft_tensor_parallel_size": 1}),
    ("sglang-docs-standalone-qwen25-7b", between("sglang", "0.5.15", "0.5.18"),
     "draft-model-vocab", "docs/advanced_features/speculative_decoding.md@v0.5.15:301-310 and "
     "the .mdx to 0.5.18 keep Qwen2.5-1.5B-Instruct (vocab_size 151936) as Qwen2.5-7B-"
     "Instruct's (152064) STANDALONE draft, which 0.5.15 refuses at start whatever the "
     "tokenizer: ValueError when the model configs' vocab_size differ (0.5.15 srt/speculative/"
     "standalone_worker_v2.py:215-229); 0.5.9-0.5.14 check nothing and serve it", None),
    # the docs' table of EAGLE heads (vllm-eagle1-docs-*, rows from 0.9.2) is there from 0.8.5,
    # beside the same example without num_speculative_tokens
    *((f"vllm-eagle1-docs-{key}", between("vllm", "0.8.5", "0.9.1"),
       "draft-settings" if key not in _FC_BIAS_HEADS else ("draft-load-fails", "draft-settings"),
       "docs/source/features/spec_decode.md@v0.8.5:223-233 (docs/features/spec_decode.md@v0.9.1:"
       "226-236) lists the head beside the example above it, which gives no "
       "num_speculative_tokens; the EAGLE config has no n_predict: 'num_speculative_tokens must "
       "be provided' (0.8.5 config.py:2413-2418); a head with fc.bias would then stop at the "
       "load (below)", {"draft_tensor_parallel_size": 1})
      for key in ("vicuna-7b", "llama2-7b", "vicuna-13b", "vicuna-33b", "llama2-13b",
                  "llama2-70b", "llama3-70b")),
    # the same table's Vicuna and LLaMA2-chat heads, with the example's settings
    *((f"vllm-eagle1-docs-{key}", between("vllm", "0.9.2", "0.16.0"), "draft-load-fails",
       "the head's fc.bias has no parameter: V1's EAGLE head builds fc without a bias "
       "(0.9.2 model_executor/models/llama_eagle.py:71-73 nn.Linear(..., bias=False); 0.16.0 "
       ":87-90 ReplicatedLinear(bias=False)) and its loader indexes the parameters by name, "
       "KeyError 'fc.bias' (0.9.2 llama_eagle.py:94-122, 0.16.0 :118-157); vLLM "
       "0.25.0 on would drop it with a debug line, but the table is gone by then", None)
      for key in _FC_BIAS_HEADS),
]


def named(config: Config) -> str:
    """The repo the release names for the row: the draft's, else the target's (its own MTP, or
    a method without a draft model); `cites_as` where another row is named so."""
    return config.cites_as or config.draft or config.target.split(" ")[0]


def release_cite(config: Config, version: str) -> str:
    """Where the release names the configuration's draft (vLLM: its archive's file:line)."""
    if config.engine == "vllm":
        ranges = VLLM_SOURCES[named(config)]
        versions = SWEEP_VERSIONS["vllm"]
        at = versions.index(version)
        chosen = [where for first, where in ranges if versions.index(first) <= at]
        return f"vllm-project/vllm@v{version} {chosen[-1]}"
    if not config.constant:  # the test names the draft itself: its GitHub file
        return f"sglang=={version}; {config.cite}"
    return f"sglang=={version} sglang/test/test_utils.py ({config.constant})"


def runs() -> list[tuple[Config, str]]:
    return [(c, v) for c in CONFIGS for v in c.versions]
