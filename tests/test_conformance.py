"""Conformance: `playbook spec-audit` against unmodified SGLang and vLLM releases.

For every release in tests/releases.py, unpacked both as a venv (with its dist-info) and as a
bare checkout tree, and every scenario in tests/conformance_table.py: build the box (real-shape
sparse checkpoints, target configs, a log when the scenario needs one), audit it with the launch
arguments a user would pass (`--var args`), and compare the verdict and finding ids with the
table, whose rows cite the release's code. The audits run in-process through the same playbook
runner the CLI uses, on the `local` target; tests/test_conformance_cli.py runs a few of them
through the installed CLI over the real sshd fixture.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from remotedbg.agent.findings import ERROR, WARNING
from remotedbg.playbook import bind_variables, find_playbook, load_playbook, run_playbook
from remotedbg.remote.primitives import Remote
from remotedbg.session import ConnectOptions, open_session
from tests import realshape as rs
from tests.conformance_table import TABLE
from tests.releases import RELEASES, Release, release
from tests.sweep_table import VLLM_PLAIN_LLAMA_ARCH

pytestmark = pytest.mark.network

LAYOUTS = ("venv", "tree")


def _draft_arch(engine: str, version: str) -> str:
    # vLLM 0.9.0-0.10.1.1 cannot serve SpecForge's LlamaForCausalLMEagle3 (tests/sweep_table.py
    # VLLM_PLAIN_LLAMA_ARCH; 0.10.1.1: its registry entry is commented out, model_executor/
    # models/registry.py:264-265): a working deployment there names the plain Llama
    # architecture, which EAGLEConfig turns into Eagle3LlamaForCausalLM
    # (transformers_utils/configs/eagle.py:56-62).
    if engine == "vllm" and version in VLLM_PLAIN_LLAMA_ARCH:
        return "LlamaForCausalLM"
    # LMDeploy 0.18.0 maps only the plain Llama architecture, renamed Eagle3LlamaForCausalLM
    # (lmdeploy/pytorch/configurations/llama.py:11, :20; module_map.py:327-336)
    if engine == "lmdeploy":
        return "LlamaForCausalLM"
    return "LlamaForCausalLMEagle3"


#: each engine's EAGLE-3 and EAGLE algorithm names, as its launch spells them
ALGORITHMS = {"sglang": ("EAGLE3", "EAGLE"), "vllm": ("eagle3", "eagle"),
              "lmdeploy": ("eagle3", "eagle"), "aphrodite": ("eagle3", "eagle"),
              "tokenspeed": ("EAGLE3", None)}  # fmt: skip


def launch_args(engine: str, target: Path, draft: Path, algorithm: str, extra: str = "") -> str:
    if engine in ("sglang", "tokenspeed"):
        program = {"sglang": f"python -m sglang.launch_server --model-path {target}",
                   "tokenspeed": f"tokenspeed serve {target}"}[engine]  # fmt: skip
        return (
            f"{program} --speculative-algorithm {algorithm} --speculative-draft-model-path "
            f"{draft} --speculative-num-steps 3 --speculative-eagle-topk 1 "
            f"--speculative-num-draft-tokens 4 {extra}"
        ).strip()
    if engine == "lmdeploy":
        return (f"lmdeploy serve api_server {target} --speculative-algorithm {algorithm} "
                f"--speculative-draft-model {draft} --speculative-num-draft-tokens 3 "
                f"{extra}").strip()  # fmt: skip
    config = {"method": algorithm, "model": str(draft), "num_speculative_tokens": 3}
    program = {"vllm": "vllm serve", "aphrodite": "aphrodite run"}[engine]
    # as typed in a shell, single-quoted, and as it reaches --var after the shell removed them
    return f"{program} {target} --speculative-config {json.dumps(config)} {extra}".strip()


# Target config changes as the models' own config.json files declare them: FP8 as
# DeepSeek-V3's and Qwen3-8B-FP8's quantization_config; YaRN as Qwen3's model card recommends for
# long context (rope_scaling with original_max_position_embeddings).
TARGET_CHANGES = {
    "fp8-target": {"quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
                                           "activation_scheme": "dynamic",
                                           "weight_block_size": [128, 128]}},
    "yarn-target": {"rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                     "original_max_position_embeddings": 32768}},
}  # fmt: skip

# Kimi-K2.5 with a SpecForge EAGLE-3 head (32000 draft ids, hidden 7168), trained on the outputs
# of layers 1, 29, 57 of the 61 (SpecForge's default for 61 layers: 1, n//2 - 1, n - 4), which
# its config records in eagle_config. Scenario -> (config ids, fc.weight in-features).
KIMI_TRAINED = [1, 29, 57]
KIMI_SCENARIOS = {
    "kimi-k25-correct": (KIMI_TRAINED, 3 * 7168),
    "kimi-k2-correct": (KIMI_TRAINED, 3 * 7168),  # the same head on the text-only Kimi-K2
    "kimi-k25-fc-narrow": (KIMI_TRAINED, 2 * 7168),  # an fc for two aux layers
    "kimi-k25-aux-off-by-one": ([0, 28, 56], 3 * 7168),  # ids written one too low
    "kimi-k25-aux-input-ids": ([2, 30, 58], 3 * 7168),  # layer-input ids (+1), as in aux-off-by-one
}


# SpecForge EAGLE-3 heads for the targets of the models users serve (their own shapes:
# tests/realshape.py), trained on the target's default layers.
FAMILY_TARGETS = {"correct-qwen3-moe": rs.QWEN3_30B_A3B, "correct-llama33-70b": rs.LLAMA33_70B}


MLA_PREFIX = "mla-eagle3-"  # mla-eagle3-correct, mla-eagle3-<plant>
SPECULATORS_PREFIX = "speculators-"  # speculators-correct, speculators-<plant>


def kimi_draft(ids: list[int], fc_in: int) -> tuple[dict, dict]:
    shape = rs.KIMI_K2
    config = rs.eagle3_config(shape)
    config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": ids, "use_aux_hidden_state": True}
    # trained with the target's RoPE and context, as SpecForge copies them from the target
    config["rope_scaling"] = dict(shape.extra["rope_scaling"])
    config["max_position_embeddings"] = shape.extra["max_position_embeddings"]
    tensors = rs.eagle3_tensors(shape)
    tensors["fc.weight"] = ("BF16", [shape.hidden, fc_in], None)
    return config, tensors


def build_box(root: Path, engine: str, version: str, scenario: str) -> dict:
    """The box for one scenario: returns the playbook variables a user would pass."""
    algorithm = ALGORITHMS[engine][0]
    target_shape = rs.LLAMA31_8B
    config = tensors = None
    extra_args = ""
    variables: dict[str, str] = {}
    if scenario == "correct-qwen3":
        target_shape = rs.QWEN3_8B
    if scenario in FAMILY_TARGETS:
        target_shape = FAMILY_TARGETS[scenario]
    if scenario in ("correct-nextn", "nextn-as-eagle3"):
        target_shape = rs.DEEPSEEK_V3
        config, tensors = rs.nextn_config(), rs.nextn_tensors(experts=8)
        if scenario == "correct-nextn":
            algorithm = {"sglang": "NEXTN", "vllm": "deepseek_mtp"}[engine]
    target_config = None
    if scenario in KIMI_SCENARIOS:
        target_shape = rs.KIMI_K2
        config, tensors = kimi_draft(*KIMI_SCENARIOS[scenario])
        config["architectures"] = [_draft_arch(engine, version)]
        if scenario != "kimi-k2-correct":
            target_config = rs.kimi_k25_config()
        variables["train_layers"] = ",".join(map(str, KIMI_TRAINED))
    if scenario == "eagle1-correct":
        # EAGLE-1 as SGLang's own CI serves it (--speculative-algorithm EAGLE with an
        # lmsys/sglang-EAGLE-* head): no lm_head in the checkpoint, and for Llama-3.1 no fc.bias
        # (tests/test_oracle.py EAGLE1_WITHOUT_FC_BIAS)
        config = rs.eagle1_config(target_shape)
        tensors = rs.eagle1_tensors(target_shape, fc_bias=False)
        algorithm = {"sglang": "EAGLE", "vllm": "eagle"}[engine]
        if engine == "vllm":
            # vLLM's docs and tests serve the EAGLE authors' own heads (yuhuili/EAGLE-LLaMA3.1-
            # Instruct-8B), whose config names the plain Llama architecture
            config["architectures"] = ["LlamaForCausalLM"]
    if scenario.startswith(SPECULATORS_PREFIX):
        # vLLM's own format (vllm-project/speculators): the config names Eagle3Speculator and
        # keeps the layer's config nested; vLLM's docs serve it with --speculative-config
        # {"model": DIR, ...} (or `vllm serve DIR`, the verifier taken from it)
        config = rs.speculators_eagle3_config(target_shape, "meta-llama/Llama-3.1-8B-Instruct")
        tensors = rs.speculators_eagle3_tensors(target_shape)
        scenario = scenario[len(SPECULATORS_PREFIX) :]
    if scenario.startswith(MLA_PREFIX):
        # the MLA head's correct deployment, or one of the plants below on that head
        target_shape = rs.DEEPSEEK_V3
        config, tensors = rs.eagle3_mla_config(), rs.eagle3_mla_tensors()
        scenario = scenario[len(MLA_PREFIX) :]
    if config is None:
        config = rs.eagle3_config(target_shape)
        config["architectures"] = [_draft_arch(engine, version)]
        tensors = rs.eagle3_tensors(target_shape)
        # trained with the target's RoPE and context, as SpecForge copies them from the target
        for key in ("rope_scaling", "max_position_embeddings"):
            if key in target_shape.extra:
                config[key] = target_shape.extra[key]
    if scenario == "arch-specforge":
        config["architectures"] = ["LlamaForCausalLMEagle3"]
    if scenario == "arch-eagle-authors":
        config["architectures"] = ["LlamaForCausalLM"]  # yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's
    if scenario == "algorithm-lower-case":
        algorithm = algorithm.lower()
    if scenario == "eagle3-as-eagle":
        algorithm = ALGORITHMS[engine][1]
    elif scenario == "d2t-absolute":
        d2t = tensors["d2t"]
        offsets = rs.np.frombuffer(d2t[2], dtype="<i8")
        absolute = offsets + rs.np.arange(len(offsets), dtype="<i8")
        tensors["d2t"] = (d2t[0], d2t[1], absolute.astype("<i8").tobytes())
    elif scenario == "fc-other-target":
        tensors["fc.weight"] = ("BF16", [target_shape.hidden, 3 * 5120], None)
    elif scenario == "prefix-model":
        tensors = rs.rename(tensors, "model.")
    elif scenario == "prefix-draft_model":
        tensors = rs.rename(tensors, "draft_model.")
    elif scenario == "lm-head-missing":
        del tensors["lm_head.weight"]
    elif scenario == "norm-before-fc":
        config["norm_before_fc"] = True
        tensors["input_norm.weight"] = ("BF16", [3 * target_shape.hidden], None)
    elif scenario == "fc-norm":
        config["fc_norm"] = True
        for i in range(3):
            tensors[f"fc_norm.{i}.weight"] = ("BF16", [target_shape.hidden], None)
    elif scenario == "token-map":
        (root / "hot_map.pt").write_bytes(b"\0" * 16)
        extra_args = f"--speculative-token-map {root / 'hot_map.pt'}"
    elif scenario == "aux-off-by-one":
        # trained on the outputs of layers 1, 15, 28 (SpecForge's default for 32 layers), but
        # the converter wrote layer-input ids into the config
        config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [2, 16, 29]}
        variables["train_layers"] = "1,15,28"
    elif scenario == "draft-context-2048":
        config["max_position_embeddings"] = 2048  # SpecForge's config default, served at 131072
    elif scenario == "low-accept":
        variables["log"] = str(write_log(root / "server.log", engine, version))
    elif scenario == "backend-unsupported":
        extra_args = "--attention-backend torch_native"  # an SGLang backend with no EAGLE draft
    elif scenario == "scales-unquantized":
        # an FP8 export's scale beside a bf16 weight, the config declaring no quantization
        tensors["midlayer.mlp.gate_proj.weight_scale_inv"] = ("F32", [1, 1], None)
    elif scenario == "tied-head":
        config["tie_word_embeddings"] = True
    target = rs.write_target(root / "target", target_config or target_shape)
    if scenario in ("fp8-target", "yarn-target"):
        target_config = json.loads((target / "config.json").read_text())
        target_config.update(TARGET_CHANGES[scenario])
        (target / "config.json").write_text(json.dumps(target_config, indent=2))
    draft = rs.write_checkpoint(root / "draft", config, tensors)
    if scenario == "tokenizer-one-off":
        vocab = {f"t{i}": i for i in range(256)}
        rs.write_tokenizer(target, vocab)
        vocab["t255x"] = vocab.pop("t255")  # one token differs
        rs.write_tokenizer(draft, vocab)
    variables["args"] = launch_args(engine, target, draft, algorithm, extra_args)
    variables["draft"] = str(draft)
    return variables


def write_log(path: Path, engine: str, version: str) -> Path:
    """Decode lines in the release's own format (see conformance_table 'low-accept' rows)."""
    lines = []
    for i in range(12):
        if engine == "sglang":
            lines.append(
                f"[2026-11-29 10:00:{i:02d}] Decode batch. #running-req: 8, #token: 9000, "
                "token usage: 0.05, accept len: 1.05, accept rate: 0.01, cuda graph: True, "
                "gen throughput (token/s): 410.22, #queue-req: 0, "
            )
        elif version == "0.8.5":
            lines.append(
                f"INFO 11-29 10:00:{i:02d} [metrics.py:82] SpecDecoding metrics: Draft acceptance "
                "rate: 1.7%, Mean acceptance length: 0.05, Accepted: 60 tokens, Drafted: 3600 "
                "tokens, Per-position acceptance rate: 0.040, 0.010, 0.000"
            )
        elif version == "0.10.1.1":
            lines.append(
                f"INFO 11-29 10:00:{i:02d} [metrics.py:96] SpecDecoding metrics: Draft acceptance "
                "rate: 1.7%, Mean acceptance length: 1.05, Accepted: 60 tokens, Drafted: 3600 "
                "tokens, Per-position acceptance rate: 0.040, 0.010, 0.000"
            )
        else:
            lines.append(
                f"INFO 11-29 10:00:{i:02d} [metrics.py:136] SpecDecoding metrics: Mean acceptance "
                "length: 1.05, Accepted throughput: 6.00 tokens/s, Drafted throughput: 360.00 "
                "tokens/s, Accepted: 60 tokens, Drafted: 3600 tokens, Per-position acceptance "
                "rate: 0.040, 0.010, 0.000, Avg Draft acceptance rate: 1.7%"
            )
    path.write_text("\n".join(lines) + "\n")
    return path


def engine_root(rel: Release, layout: str) -> str:
    return str(rel.venv if layout == "venv" else rel.tree)


def audit(variables: dict, roots: str) -> dict:
    playbook = load_playbook(find_playbook("spec-audit"))
    given = dict(variables, roots=roots, search_home="false")
    bound = bind_variables(playbook, given)
    session = open_session(ConnectOptions(host="local", timeout=120))
    try:
        outcome = run_playbook(playbook, Remote(session), bound)
    finally:
        session.close()
    return {
        "verdict": outcome.verdict,
        "headline": outcome.headline,
        "errors": sorted({f["id"] for f in outcome.findings if f["severity"] == ERROR}),
        "warnings": sorted({f["id"] for f in outcome.findings if f["severity"] == WARNING}),
        "inconclusive": outcome.inconclusive,
    }


CASES = [
    pytest.param(scenario, engine, version, layout, id=f"{scenario}-{engine}-{version}-{layout}")
    for scenario, rows in TABLE.items()
    for (engine, version) in rows
    for layout in LAYOUTS
]


def check(got: dict, expected: dict) -> list[str]:
    problems = []
    if got["verdict"] != expected["verdict"]:
        problems.append(f"verdict {got['verdict']} != {expected['verdict']}")
    if got["errors"] != expected["errors"]:
        problems.append(f"errors {got['errors']} != {expected['errors']}")
    missing = set(expected["warnings"]) - set(got["warnings"])
    extra = set(got["warnings"]) - set(expected["warnings"]) - set(expected["allow"])
    if missing:
        problems.append(f"warnings missing {sorted(missing)}")
    if extra:
        problems.append(f"unexpected warnings {sorted(extra)}")
    if got["inconclusive"]:  # a defect named is not enough: what the code decides is said
        problems.append(f"inconclusive where the release's code decides: {got['inconclusive']}")
    return problems


@pytest.mark.parametrize("scenario,engine,version,layout", CASES)
def test_release_scenario(tmp_path, scenario, engine, version, layout):
    rel = release(engine, version)
    expected = TABLE[scenario][(engine, version)]
    variables = build_box(tmp_path, engine, version, scenario)
    got = audit(variables, engine_root(rel, layout))
    problems = check(got, expected)
    assert not problems, (
        f"{scenario} on {engine} {version} ({layout}): {'; '.join(problems)}\n"
        f"expected because: {expected['cite']}\n"
        f"headline: {got['headline']}\ninconclusive: {got['inconclusive']}"
    )


def test_every_release_is_in_the_table():
    covered = {key for rows in TABLE.values() for key in rows}
    assert set(RELEASES) <= covered
    for scenario in ("correct", "eagle3-as-eagle", "prefix-model", "lm-head-missing",
                     "kimi-k25-correct"):  # fmt: skip
        assert set(RELEASES) <= set(TABLE[scenario]), scenario


def vocab_audit(variables: dict, roots: str) -> dict:
    playbook = load_playbook(find_playbook("vocab-audit"))
    given = {"draft": variables["draft"], "target": variables.get("target_path", ""),
             "roots": roots, "search_home": "false", "servers": "false"}  # fmt: skip
    session = open_session(ConnectOptions(host="local", timeout=120))
    try:
        outcome = run_playbook(playbook, Remote(session), bind_variables(playbook, given))
    finally:
        session.close()
    return {"verdict": outcome.verdict, "inconclusive": outcome.inconclusive,
            "errors": sorted({f["id"] for f in outcome.findings if f["severity"] == ERROR})}


@pytest.mark.parametrize("engine,version", RELEASES, ids=[f"{e}-{v}" for e, v in RELEASES])
def test_vocab_audit_of_an_mtp_head_is_clean(tmp_path, engine, version):
    """A DeepSeek-V3 MTP (NextN) head has no vocab map: it proposes target ids as they are, so
    no engine's d2t handling concerns it. Every release that serves NEXTN / deepseek_mtp runs
    such heads in its CI (SGLang test/srt/test_mla_deepseek_v3.py, vLLM's MTP docs); vocab-audit
    must not be inconclusive on a loader it does not need (issue 42)."""
    variables = build_box(tmp_path, engine, version, "correct-nextn")
    variables["target_path"] = str(tmp_path / "target")
    got = vocab_audit(variables, engine_root(release(engine, version), "venv"))
    assert (got["verdict"], got["errors"], got["inconclusive"]) == ("ok", [], []), got


SPECULATORS_VLLM = ["0.10.1.1", "0.11.2", "0.20.0", "0.33.0"]


@pytest.mark.parametrize("version", SPECULATORS_VLLM)
@pytest.mark.parametrize("scenario,verdict,errors", [
    ("speculators-correct", "ok", []),
    ("speculators-d2t-absolute", "defect", ["d2t-absolute-ids"]),
])  # fmt: skip
def test_vocab_audit_reads_the_speculators_format_as_vllm_does(
    tmp_path, version, scenario, verdict, errors
):
    """The vocab map of a speculators checkpoint judged with the loader its config becomes in
    the release (transformers_utils/configs/speculators/algos.py update_eagle3 -> Eagle3Llama
    ForCausalLM, whose d2t handling is offsets): clean when correct, the plant caught."""
    variables = build_box(tmp_path, "vllm", version, scenario)
    variables["target_path"] = str(tmp_path / "target")
    got = vocab_audit(variables, engine_root(release("vllm", version), "venv"))
    assert (got["verdict"], got["errors"], got["inconclusive"]) == (verdict, errors, []), got


def hub_cache(home: Path, repo_id: str, model: Path) -> Path:
    """`model` as the Hugging Face hub's cache keeps `repo_id` under $HF_HOME/hub."""
    folder = home / "hub" / f"models--{repo_id.replace('/', '--')}"
    snapshot = folder / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    snapshot.parent.mkdir(parents=True)
    shutil.copytree(model, snapshot)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(snapshot.name)
    return folder


@pytest.mark.parametrize("version", ["0.11.2", "0.33.0"])
def test_vllm_serve_a_speculator_dir_is_a_speculative_launch(tmp_path, monkeypatch, version):
    """`vllm serve SPECULATOR_DIR` (vLLM's docs for speculators heads): the checkpoint is the
    draft, its verifier (a hub repo id, in the box's hub cache) the target, its method and
    token count the settings (0.33.0 transformers_utils/config.py:800-874; 0.11.2 the same
    maybe_override_with_speculators). Audited as that deployment: clean, the plant caught."""
    cases = (("speculators-correct", "ok", []),
             ("speculators-d2t-absolute", "defect", ["d2t-absolute-ids"]))  # fmt: skip
    for scenario, verdict, errors in cases:
        root = tmp_path / scenario
        variables = build_box(root, "vllm", version, scenario)
        hub_cache(root / "hf", "meta-llama/Llama-3.1-8B-Instruct", root / "target")
        monkeypatch.setenv("HF_HOME", str(root / "hf"))
        shutil.rmtree(root / "target")  # only the hub cache has the verifier
        given = {"args": f"vllm serve {variables['draft']}", "draft": variables["draft"]}
        got = audit(given, engine_root(release("vllm", version), "venv"))
        assert (got["verdict"], got["errors"], got["inconclusive"]) == (verdict, errors, []), got


# SGLang 0.5.14 refuses a served context past the draft's limit at start unless
# SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN (or SGLANG_IS_IN_CI) is set, then raises the draft's
# limit (srt/configs/model_config.py _derive_context_length; the draft-context-2048 rows' cite).
# The launch line typed with the variable before the program, as SGLang's specbundle cookbook
# writes it (docs_new/cookbook/specbundle/specbundle_usage.mdx@v0.5.11:44-51), says which.
@pytest.mark.parametrize("prefix,verdict,errors,said", [
    ("", "ok", [], "unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 is set (the launch "
     "environment was not read)"),
    ("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 ", "ok", [], "the engine raises the draft's "
     "limit to cover them"),
    ("env SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=0 ", "defect", ["context-exceeds-draft"],
     "the server refuses to start (ValueError)"),
], ids=["no-variable-typed", "variable-set", "variable-off-after-env"])  # fmt: skip
def test_a_typed_launch_s_own_environment_decides_the_context_outcome(
    tmp_path, prefix, verdict, errors, said
):
    variables = build_box(tmp_path, "sglang", "0.5.14", "draft-context-2048")
    variables["args"] = prefix + variables["args"]
    playbook = load_playbook(find_playbook("spec-audit"))
    bound = bind_variables(playbook, dict(variables, roots=engine_root(
        release("sglang", "0.5.14"), "venv"), search_home="false"))  # fmt: skip
    with open_session(ConnectOptions(host="local", timeout=120)) as session:
        outcome = run_playbook(playbook, Remote(session), bound)
    found = [f for f in outcome.findings if f["id"] == "context-exceeds-draft"]
    assert (outcome.verdict, sorted({f["id"] for f in outcome.findings
                                      if f["severity"] == ERROR})) == (verdict, errors)
    assert found and said in found[0]["detail"], found
