"""Quantized draft weights without scales, and a draft tokenizer that is not the target's: read
in place by the agent (tokenizer files, safetensors headers), judged by remotedbg.analysis.
fit_checks, and raised by spec-audit over the real sshd.

Tokenizer files are written in the Hugging Face `tokenizers` serialization (tokenizer.json:
"model": {"type": "BPE", "vocab": {token: id}}, "added_tokens": [{"id", "content", ...}];
tokenizer_config.json: "eos_token" etc., as transformers' PreTrainedTokenizerFast saves them).
FP8 weights are stored as safetensors dtype F8_E4M3 with their `weight_scale_inv` companions as
DeepSeek-V3's and Qwen3-FP8's checkpoints ship them (block scales, float32)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from remotedbg.agent.tokenizer_files import fingerprint
from remotedbg.analysis.fit_checks import draft_scales_missing, tokenizer_mismatch
from tests.checkpoints import write_eagle3_checkpoint, write_target_config
from tests.test_spec_checks import _launch, _run, spec_world  # noqa: F401 - the fixture

BASE = {f"tok{i}": i for i in range(200)}


def write_tokenizer(folder: Path, vocab: dict[str, int], added: dict[str, int], eos: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = {
        "version": "1.0",
        "added_tokens": [{"id": i, "content": t, "special": True} for t, i in added.items()],
        "model": {"type": "BPE", "vocab": vocab, "merges": []},
    }
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": eos}))


def write_raw_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> None:
    """A safetensors file by its format (8-byte header length, JSON header, data): lets the
    test store dtypes numpy has no name for (F8_E4M3)."""
    header, offset = {}, 0
    for name, (dtype, shape, itemsize) in tensors.items():
        size = itemsize
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


def test_scales_rule():
    fp8 = {"name": "midlayer.mlp.up_proj.weight", "dtype": "F8_E4M3", "shape": [8, 4]}
    scale = {"name": "midlayer.mlp.up_proj.weight_scale_inv", "dtype": "F32", "shape": [1, 1]}
    bf16 = {"name": "fc.weight", "dtype": "BF16", "shape": [4, 12]}
    assert draft_scales_missing([bf16])["status"] == "not-applicable"
    assert draft_scales_missing([fp8, scale, bf16])["status"] == "ok"
    found = draft_scales_missing([fp8, bf16])
    assert found["status"] == "found"
    assert found["findings"][0]["evidence"]["weights"] == ["midlayer.mlp.up_proj.weight"]


def test_tokenizer_rule(tmp_path):
    write_tokenizer(tmp_path / "target", BASE, {"<|eot|>": 200}, "<|eot|>")
    same = tmp_path / "same"
    write_tokenizer(same, BASE, {"<|eot|>": 200}, "<|eot|>")
    one_off = dict(BASE)
    one_off["tok199"], one_off["tokX"] = 199, 198  # one token differs
    del one_off["tok198"]
    write_tokenizer(tmp_path / "other", one_off, {"<|eot|>": 200}, "<|eot|>")
    write_tokenizer(tmp_path / "moved", BASE, {"<|eot|>": 201}, "<|eot|>")
    target = fingerprint(str(tmp_path / "target"))

    def judge(folder: Path | None) -> dict:
        draft = fingerprint(str(folder)) if folder else {"present": False}
        return tokenizer_mismatch({"draft": draft, "target": target})

    assert judge(None)["status"] == "not-applicable"
    assert judge(same)["status"] == "ok"
    assert [f["severity"] for f in judge(tmp_path / "other")["findings"]] == ["error"]
    moved = judge(tmp_path / "moved")["findings"]
    assert moved[0]["evidence"]["tokens"] == {"<|eot|>": [201, 200]}


def test_spec_audit_raises_both(box, monkeypatch, spec_world, tmp_path):  # noqa: F811
    draft = write_eagle3_checkpoint(tmp_path / "fp8-draft")
    write_raw_safetensors(
        draft / "quant.safetensors",
        {"midlayer.self_attn.qkv_proj.weight": ("F8_E4M3", [64, 128], 1)},
    )
    write_tokenizer(draft, {**BASE, "extra": 200}, {}, "tok1")
    target = write_target_config(tmp_path / "target")
    write_tokenizer(target, BASE, {}, "tok1")
    outcome = _run(box, monkeypatch, args=_launch(target, draft, "EAGLE3"),
                   roots=str(spec_world["engine"]))  # fmt: skip
    found = {f["id"]: f for f in outcome.findings}
    assert found["draft-scales-missing"]["evidence"]["weights"] == [
        "midlayer.self_attn.qkv_proj.weight"
    ]
    assert found["tokenizer-mismatch"]["evidence"]["draft_vocab"] == 201
    assert outcome.verdict == "defect"


# -- context, RoPE, quantization, tied head (remotedbg.engines.draft_fit_rules) -----------
def _dep(engine="sglang", version="0.5.23", draft=None, target=None, args=None, tensors=None,
         env=None, running=False):  # fmt: skip
    from remotedbg.analysis.spec_checks import Deployment

    draft_config = {"architectures": ["LlamaForCausalLMEagle3"], "max_position_embeddings": 2048,
                    "rope_theta": 500000.0, "vocab_size": 128256, "draft_vocab_size": 32000,
                    **(draft or {})}  # fmt: skip
    target_config = {"max_position_embeddings": 131072, "rope_theta": 500000.0, **(target or {})}
    server = {"args": args or {}}
    return Deployment(draft_config=draft_config, target_config=target_config, engine=engine,
                      engine_version=version, server=server, tensors=tensors or [], env=env,
                      server_running=running)  # fmt: skip


def _ids(result: dict) -> list[tuple[str, str]]:
    return [(f["id"], f["severity"]) for f in result["findings"]]


def test_context_rule_per_release():
    from remotedbg.analysis.fit_checks import context_exceeds_draft

    error, warning = [("context-exceeds-draft", "error")], [("context-exceeds-draft", "warning")]
    # SGLang get_context_length: 2048 vs 131072 (0.5.23 utils/hf_transformers/common.py:668-694)
    # launch arguments only: it refuses to start unless the variable is set (model_config.py:
    # 1302-1316), and with it the draft runs untrained positions: both said, a warning
    unknown_env = context_exceeds_draft(_dep())
    assert _ids(unknown_env) == warning
    assert unknown_env["findings"][0]["evidence"]["outcome"] == "start-fails-unless-env"
    assert _ids(context_exceeds_draft(_dep(env={}))) == error  # read and not set: refuses
    # 0.5.1: it refuses to start unless the variable is set, and with it positions past the
    # draft's limit overrun its cache: it serves, short prompts alike (issue 42), a warning
    assert _ids(context_exceeds_draft(_dep(version="0.5.1"))) == warning
    env = {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
    assert _ids(context_exceeds_draft(_dep(env=env))) == warning  # raised, untrained positions
    assert _ids(context_exceeds_draft(_dep(running=True))) == warning  # it started: env was set
    assert _ids(context_exceeds_draft(_dep(version="0.5.1", running=True))) == warning  # overrun
    assert _ids(context_exceeds_draft(_dep(version="0.4.6.post5", running=True))) == warning
    # a served context within the draft's: --context-length 2048
    assert context_exceeds_draft(_dep(args={"context-length": "2048"}))["status"] == "ok"
    # SGLang multiplies by rope_scaling.factor (yarn, no original_max_position_embeddings)
    yarn = {"rope_scaling": {"rope_type": "yarn", "factor": 64.0}}
    assert context_exceeds_draft(_dep(draft=yarn))["status"] == "ok"
    # vLLM 0.33 raises a cache-only rope's limit; a yarn draft lowers the served context
    assert _ids(context_exceeds_draft(_dep("vllm", "0.33.0"))) == warning
    found = context_exceeds_draft(_dep("vllm", "0.33.0", draft=yarn))
    assert found["findings"][0]["evidence"]["outcome"] == "lowered"
    # only the V2 runner lowers it (config/vllm.py:3034); V1 drafts nothing past the limit
    v1 = context_exceeds_draft(_dep("vllm", "0.33.0", draft=yarn,
                                    env={"VLLM_USE_V2_MODEL_RUNNER": "0"}))  # fmt: skip
    assert v1["findings"][0]["evidence"]["outcome"] == "skipped"
    # 0.10.1.1 serves it: the draft's cache overruns past 2048 positions only, a warning
    assert _ids(context_exceeds_draft(_dep("vllm", "0.10.1.1"))) == warning
    assert context_exceeds_draft(_dep("vllm", "0.7.0"))["status"] == "unknown"
    # a Qwen3-style YaRN target: vLLM before 0.33 serves original x factor = 131072
    # (0.10.1.1 config/__init__.py:2910-2917), 0.33 keeps 40960 (config/model.py:2611-2622)
    qwen = {
        "max_position_embeddings": 40960,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 32768,
        },
    }
    fit = {"max_position_embeddings": 40960}
    old = context_exceeds_draft(_dep("vllm", "0.10.1.1", draft=fit, target=qwen))
    assert old["facts"]["served_context"] == 131072 and _ids(old) == warning
    assert context_exceeds_draft(_dep("vllm", "0.33.0", draft=fit, target=qwen))["status"] == "ok"
    # --max-model-len 32K is 32768, 32k is 32000 (vllm/utils/argparse_utils.py:30-60)
    big = context_exceeds_draft(_dep("vllm", "0.10.1.1", draft={"max_position_embeddings": 32000},
                                     args={"max-model-len": "32K"}))  # fmt: skip
    assert big["facts"]["served_context"] == 32768 and _ids(big) == warning
    assert context_exceeds_draft(_dep("vllm", "0.10.1.1", draft={"max_position_embeddings": 32000},
                                      args={"max-model-len": "32k"}))["status"] == "ok"  # fmt: skip


def test_rope_quantization_and_head_rules():
    from remotedbg.analysis.fit_checks import quantization_mismatch, rope_mismatch, tied_head

    assert rope_mismatch(_dep())["status"] == "ok"
    assert _ids(rope_mismatch(_dep(draft={"rope_theta": 10000.0}))) == [
        ("rope-mismatch", "warning")
    ]
    yarn = {"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
    # SGLang applies --json-model-override-args to the draft too (0.5.23 model_config.py:962)
    applied = rope_mismatch(_dep(args={"json-model-override-args": yarn}))
    assert "applied to the draft too" in applied["findings"][0]["detail"]
    kept = rope_mismatch(_dep("vllm", "0.33.0", args={"hf-overrides": yarn}))
    assert "reaches the target only" in kept["findings"][0]["detail"]

    assert quantization_mismatch(_dep())["status"] == "ok"
    inherited = quantization_mismatch(_dep(args={"quantization": "fp8"}))
    assert _ids(inherited) == [("quantization-mismatch", "warning")]
    # the log's ServerArgs: 0.5.14+ resolved unquant to None and left it out of the line
    from_log = _dep(args={"quantization": "fp8"})
    from_log.server["source"] = "--var log"
    assert quantization_mismatch(from_log)["status"] == "ok"
    # vLLM before 0.33 builds no quantized EAGLE-3 layers: declared or not, scales fail
    scale = [{"name": "fc.weight_scale", "dtype": "F32", "shape": [1]}]
    fp8 = {"quantization_config": {"quant_method": "fp8"}}
    declared = _dep("vllm", "0.10.1.1", draft=fp8, tensors=scale)
    assert quantization_mismatch(declared)["findings"][0]["evidence"]["outcome"] == "start-fails"
    opted_out = {"quantization": "fp8", "speculative-draft-model-quantization": "unquant"}
    assert quantization_mismatch(_dep(args=opted_out))["status"] == "ok"  # 0.5.14+
    assert _ids(quantization_mismatch(_dep(version="0.5.6", args=opted_out))) == [
        ("quantization-mismatch", "warning")
    ]
    scales = [{"name": "midlayer.mlp.up_proj.weight_scale_inv", "dtype": "F32", "shape": [1]}]
    dropped = quantization_mismatch(_dep(tensors=scales))
    assert dropped["findings"][0]["evidence"]["outcome"] == "dropped"
    assert quantization_mismatch(_dep("vllm", "0.33.0", tensors=scales))["findings"][0][
        "evidence"]["outcome"] == "start-fails"  # fmt: skip
    fp8_target = {"quantization_config": {"quant_method": "fp8"}}
    assert _ids(quantization_mismatch(_dep("vllm", "0.33.0", target=fp8_target))) == [
        ("quantization-mismatch", "warning")
    ]

    assert tied_head(_dep())["status"] == "ok"
    tied = tied_head(_dep(draft={"tie_word_embeddings": True}))
    assert _ids(tied) == [("draft-head-tied", "error")]
    # before 0.5.6 the full vocabulary indexes d2t (0.5.1 llama_eagle3.py:198): fails at runtime
    assert (
        "fails indexing d2t"
        in tied_head(_dep(version="0.5.1", draft={"tie_word_embeddings": True}))["findings"][0][
            "detail"
        ]
    )
    assert tied_head(_dep("vllm", "0.33.0", draft={"tie_word_embeddings": True}))["status"] == (
        "not-applicable"
    )


def test_draft_settings_rules():
    from remotedbg.analysis.fit_checks import draft_settings

    def judged(spec: dict, version: str = "0.5.23", arch: str = "Qwen3ForCausalLM", **kw):
        dep = _dep(version=version, target={"architectures": [arch]}, **kw)
        dep.spec = spec
        return draft_settings(dep)

    none = {"num_steps": None, "topk": None, "num_draft_tokens": None}
    assert _ids(judged({**none, "topk": 4})) == [("draft-settings", "error")]  # AssertionError
    auto = judged(none)["findings"][0]["evidence"]  # 0.5.23 speculative_hook.py:1430-1461
    assert (auto["steps"], auto["topk"], auto["draft_tokens"]) == (3, 1, 4)
    llama = judged(none, arch="LlamaForCausalLM")["findings"][0]["evidence"]
    assert (llama["steps"], llama["topk"], llama["draft_tokens"]) == (5, 4, 8)
    old = judged(none, version="0.5.6")["findings"][0]["evidence"]  # server_args.py:4525-4553
    assert (old["steps"], old["topk"]) == (5, 4)
    forced = judged({"num_steps": 3, "topk": 1, "num_draft_tokens": 8})
    assert _ids(forced) == [("draft-settings", "warning")]
    assert judged({"num_steps": 3, "topk": 1, "num_draft_tokens": 4})["status"] == "ok"
    vllm = _dep("vllm", "0.33.0", args={"speculative-config": {"method": "eagle3"}})
    assert _ids(draft_settings(vllm)) == [("draft-settings", "error")]


def test_suffix_decoding_as_each_vllm_release_takes_it():
    """vLLM 0.11.1 on builds method suffix on arctic-inference and stops at start without it
    (0.11.1 config/speculative.py:465-468; 0.33.0 :1727-1730); 0.11.0 has no such method
    (:32-35); a setting out of range is a ValueError (0.33.0 :1740-1760); no
    num_speculative_tokens is the tree depth (:1732-1739), not a refusal."""
    from remotedbg.analysis.fit_checks import draft_settings

    def judged(version="0.33.0", plugins=(), source="--var args", **settings):
        spec = {"method": "suffix", **settings}
        dep = _dep("vllm", version, args={"speculative-config": spec})
        dep.spec, dep.plugins, dep.engine_label = {"algorithm": "suffix"}, list(plugins), "vLLM"
        if source:
            dep.server["source"] = source
        return draft_settings(dep)

    arctic = {"distribution": "arctic_inference", "version": "0.1.1"}
    missing = judged()
    assert _ids(missing) == [("draft-settings", "error")]
    assert "arctic-inference is not installed" in missing["findings"][0]["title"]
    assert _ids(judged(plugins=[arctic])) == []  # beside it: no num_speculative_tokens is fine
    assert _ids(judged(source=None)) == []  # a server that runs has imported it
    assert _ids(judged(source="--var log")) == []  # and one whose log is read had started
    assert _ids(judged(version=None)) == []  # a fork's version: which rule it has is not known
    old = judged(version="0.11.0", plugins=[arctic])
    assert "has no suffix decoding" in old["findings"][0]["title"]
    for key, value in (("suffix_decoding_min_token_prob", 1.5),
                       ("suffix_decoding_max_tree_depth", 0),
                       ("suffix_decoding_max_spec_factor", -1.0)):  # fmt: skip
        out = judged(plugins=[arctic], **{key: value})
        assert _ids(out) == [("draft-settings", "error")], (key, out)
        assert f"{key}={value}" in out["findings"][0]["title"]
    assert _ids(judged(plugins=[arctic], suffix_decoding_min_token_prob=1)) == []


def test_launch_env_reads_only_the_named_variables(tmp_path):
    import os
    import subprocess
    import sys

    from remotedbg.agent.server_scan import launch_env
    from remotedbg.engines.draft_fit_rules import ENV_FACTS
    from tests.procs import wait_for
    from tests.unprivileged import call_unprivileged

    env = dict(os.environ, SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN="1", HF_TOKEN="hf_secret")
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        wanted = {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
        # until exec, /proc/PID/environ is the parent's
        assert wait_for(lambda: launch_env(process.pid, ENV_FACTS) == wanted)
        # another user's process (nobody against ours as root; else root's init): its
        # environment is not readable, and that is said as None
        other = process.pid if os.geteuid() == 0 else 1
        assert call_unprivileged(launch_env, other, ENV_FACTS) is None
    finally:
        process.kill()
        process.wait()


def test_scale_tensor_outcome_per_release():
    from remotedbg.engines.profiles import engine_profile

    def outcome(engine: str, version: str) -> str:
        return engine_profile(engine).unexpected_scales_outcome(version)

    # 0.4.6.post5 llama.py:578 KeyError, reached from 0.4.8.post1 llama_eagle3.py:189-193
    # (every name to LlamaForCausalLM.load_weights); 0.4.9 llama_eagle3.py:228, :238 guard both
    # branches with `if param_name in params_dict`, as 0.4.10.post2 :227-229 does
    assert outcome("sglang", "0.4.6.post5") == outcome("sglang", "0.4.8.post1") == "start-fails"
    assert outcome("sglang", "0.4.9") == outcome("sglang", "0.4.10.post2") == "dropped"
    assert outcome("sglang", "0.5.23") == "dropped"
    assert outcome("vllm", "0.8.5") == outcome("vllm", "0.33.0") == "start-fails"


def test_vllm_builds_a_quantized_draft_with_its_own_quantization_where_its_code_does():
    """vLLM's own CI serves an FP8 draft model and an FP8 target with a bf16 draft model (0.16.0
    tests/v1/e2e/test_spec_decode.py:696-713): the draft model is loaded with a vllm_config of
    its own model config (v1/spec_decode/draft_model.py:54-65, utils.py:152-173), so its scales
    load, and it reads tokens, not the FP8 target's hidden states. The EAGLE heads' layers take
    the draft's quant_config from 0.11.1 (get_draft_quant_config, model_executor/models/
    utils.py:721-742); through 0.11.0 they are built without it (0.10.1.1 llama_eagle3.py:
    123-127; 0.11.0 :37 with the target's; llama_eagle.py with none), and the scales raise."""
    from remotedbg.analysis.fit_checks import quantization_mismatch

    fp8 = {"quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
                                   "weight_block_size": [128, 128]}}  # fmt: skip
    scales = [{"name": "model.layers.0.mlp.up_proj.weight_scale_inv", "dtype": "BF16",
               "shape": [24, 8]}]  # fmt: skip

    def judged(version, method, draft, target=None, tensors=scales):
        dep = _dep("vllm", version, draft=draft, target=target, tensors=tensors)
        dep.spec = {"algorithm": method}
        return quantization_mismatch(dep)

    qwen3 = {"architectures": ["Qwen3ForCausalLM"], "draft_vocab_size": None, **fp8}
    for version in ("0.16.0", "0.32.0", "0.33.0"):
        assert _ids(judged(version, "draft_model", qwen3)) == []
        bf16 = dict(qwen3, quantization_config=None)
        assert _ids(judged(version, "draft_model", bf16, target=fp8, tensors=[])) == []
    eagle3 = {"architectures": ["LlamaForCausalLMEagle3"], **fp8}
    eagle1 = {"architectures": ["EAGLEModel"], **fp8}
    for version, raises in (("0.10.1.1", True), ("0.11.0", True), ("0.11.1", False),
                            ("0.32.0", False), ("0.33.0", False)):  # fmt: skip
        for method, head in (("eagle3", eagle3), ("eagle", eagle1), (None, eagle3)):
            found = judged(version, method, head)
            assert _ids(found) == ([("quantization-mismatch", "error")] if raises else [])
            if raises:  # the draft declares it: the release builds the layers without it
                assert "builds without its quantization" in found["findings"][0]["title"]
    # an EAGLE-3 head without quantization still meets the FP8 target's hidden states
    plain = dict(eagle3, quantization_config=None)
    assert _ids(judged("0.32.0", "eagle3", plain, target=fp8, tensors=[])) == [
        ("quantization-mismatch", "warning")]


def test_an_mtp_layer_in_a_multimodal_target_has_its_language_model_s_limit():
    """vLLM's Qwen3.5 MTP test serves Qwen3.5-0.8B-Base's own MTP layer at max_model_len 2048
    (tests/v1/e2e/spec_decode/test_spec_decode.py@v0.21.0:723-727). The draft's config is the
    target's, a Qwen3_5ForConditionalGeneration whose positions are in text_config, where the
    draft's ModelConfig reads them (hf_text_config): the check was inconclusive, "the draft's
    limit is unknown"."""
    from remotedbg.analysis.fit_checks import context_exceeds_draft

    qwen35 = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
              "text_config": {"max_position_embeddings": 262144, "vocab_size": 248320}}
    for version in ("0.21.0", "0.33.0"):
        dep = _dep("vllm", version, draft=qwen35, target=qwen35,
                   args={"max-model-len": "2048"})  # fmt: skip
        dep.draft_config, dep.spec = qwen35, {"algorithm": "mtp"}
        checked = context_exceeds_draft(dep)
        assert checked["status"] == "ok", checked
        assert checked["facts"] == {"served_context": 2048, "draft_context": 262144}


def test_overrides_merge_as_each_release_does():
    from remotedbg.engines.sglang import SGLANG, context_length

    def apply_overrides(version: str, config: dict, overrides: dict) -> dict:
        return SGLANG.apply_overrides(version, config, overrides)

    config = {
        "max_position_embeddings": 32768,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 2.0,
            "original_max_position_embeddings": 32768,
        },
    }
    partial = {"rope_scaling": {"factor": 4.0}}
    # up to 0.5.14 config.update replaces the dict: original_max_position_embeddings is gone and
    # get_context_length applies the factor (0.5.14 utils/hf_transformers/config.py:253-254)
    replaced = apply_overrides("0.5.14", config, partial)
    assert replaced["rope_scaling"] == {"factor": 4.0}
    assert context_length(replaced) == 4 * 32768
    # 0.5.23 merges rope_scaling (config.py:405-423): the original length keeps the factor off
    merged = apply_overrides("0.5.23", config, partial)
    assert merged["rope_scaling"]["original_max_position_embeddings"] == 32768
    assert context_length(merged) == 32768


def test_chat_template_drift(tmp_path):
    from remotedbg.analysis.fit_checks import chat_template_drift

    def folder(name: str, template: str | None, as_file: bool = False) -> dict:
        path = tmp_path / name
        write_tokenizer(path, BASE, {}, "tok1")
        if template is not None and as_file:
            (path / "chat_template.jinja").write_text(template)
        elif template is not None:
            (path / "tokenizer_config.json").write_text(
                json.dumps({"eos_token": "tok1", "chat_template": template})
            )
        return fingerprint(str(path))

    served = folder("target", "{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}")
    same = folder("same", "{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}",
                  as_file=True)  # fmt: skip
    other = folder("other", "{% for m in messages %}[INST]{{ m.content }}{% endfor %}")
    none = folder("none", None)

    def judged(draft: dict, args: dict | None = None) -> dict:
        dep = _dep(args=args)
        dep.tokenizers = {"draft": draft, "target": served}
        return chat_template_drift(dep)

    assert judged(same)["status"] == "ok"  # chat_template.jinja and tokenizer_config agree
    assert _ids(judged(other)) == [("chat-template-drift", "warning")]
    bare = judged(none)
    assert bare["status"] == "not-applicable" and "probe --compare chat" in bare["reason"]
    assert judged(other, {"chat-template": "/x.jinja"})["status"] == "unknown"


def test_sglang_longer_context_and_draft_quantization_by_release():
    from remotedbg.engines.draft_fit_rules import OVERRUN, RAISED
    from remotedbg.engines.sglang import SGLANG

    def outcome(version: str) -> str | None:
        return SGLANG.longer_context_outcome(version, {}, None, running=True)

    # 0.5.2 model_config.py warns and keeps going (no override of the draft's limit); 0.5.3
    # model_config.py:270-273 sets the draft's max_position_embeddings to the served context
    # before the draft (and its rotary cache, llama.py:173) is built
    assert outcome("0.5.1") == outcome("0.5.2") == OVERRUN
    assert outcome("0.5.3") == outcome("0.5.6") == outcome("0.5.23") == RAISED
    # --speculative-draft-model-quantization from 0.5.7 (server_args.py:774-777: None -> the
    # target's --quantization, "unquant" -> None); before, the draft always takes --quantization
    own = {"quantization": "fp8", "speculative-draft-model-quantization": "unquant"}
    assert SGLANG.draft_inherits_quantization("0.5.6", own) == "fp8"
    assert SGLANG.draft_inherits_quantization("0.5.7", own) is None
    # the log's resolved ServerArgs leave a None draft quantization out of the line (0.5.7+)
    logged = {"quantization": "fp8"}
    assert SGLANG.draft_inherits_quantization("0.5.7", logged, resolved=True) is None
    # --quantization unquant is no quantization (0.5.11 server_args.py:814-815, before the
    # draft's default at :1088)
    assert SGLANG.draft_inherits_quantization("0.5.11", {"quantization": "unquant"}) is None


def test_sglang_draft_backend_flags_by_release():
    from remotedbg.engines.sglang import SGLANG

    args = {"attention-backend": "fa3", "decode-attention-backend": "triton",
            "speculative-draft-attention-backend": "flashinfer"}  # fmt: skip
    # 0.5.1.post3: the draft decodes with server_args.attention_backend
    assert SGLANG.draft_backend("0.5.1.post3", args) == "fa3"
    # 0.5.2 speculative/eagle_worker.py:199-209: decode_attention_backend, else attention_backend
    assert SGLANG.draft_backend("0.5.2", args) == SGLANG.draft_backend("0.5.6", args) == "triton"
    # 0.5.7 speculative/draft_utils.py:21, :26-30: its own flag first
    assert SGLANG.draft_backend("0.5.7", args) == "flashinfer"
    assert SGLANG.draft_backend("0.5.7", {"attention-backend": "fa3"}) == "fa3"


def test_vllm_raises_an_eagle_drafts_limit_from_0_27():
    from remotedbg.engines.draft_fit_rules import OVERRUN, RAISED
    from remotedbg.engines.vllm import VLLM

    def outcome(version: str, method: str | None) -> str | None:
        return VLLM.longer_context_outcome(version, {}, None, running=True, algorithm=method)

    # 0.26.0 config/speculative.py has no override; 0.27.0 :924-931 raises the draft's
    # max_position_embeddings to the target's max_model_len for eagle and eagle3 only
    # (_maybe_override_draft_max_position_embeddings, :1165-1196), as 0.32.0 does (:1397)
    assert outcome("0.26.0", "eagle3") == OVERRUN
    assert outcome("0.27.0", "eagle3") == outcome("0.32.0", "eagle") == RAISED
    assert outcome("0.27.0", "deepseek_mtp") == OVERRUN
    assert outcome("0.27.0", None) is None  # the method decides and is not known


def test_vllm_leaves_a_yarn_length_unscaled_from_0_30():
    from remotedbg.engines.vllm import context_length

    # Qwen3's model card: yarn factor 4 over 32768, max_position_embeddings 40960
    qwen3 = {"max_position_embeddings": 40960,
             "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                              "original_max_position_embeddings": 32768}}  # fmt: skip
    # 0.29.0 config/model.py:2452-2458: yarn is scaled, from original_max_position_embeddings;
    # 0.30.0 :2468-2478: the YaRN variants are exempt (max_position_embeddings already scaled)
    assert context_length(qwen3, "0.29.0") == 4 * 32768
    assert context_length(qwen3, "0.30.0") == context_length(qwen3, "0.33.0") == 40960


def test_one_tokenizer_padded_to_two_sizes_is_the_same_vocabulary():
    """SGLang's docs pair Qwen2.5-7B-Instruct (vocab_size 152064) with Qwen2.5-1.5B-Instruct
    (151936), one tokenizer of 151643 base tokens: every id means the same token in both, so a
    release that checks nothing (SGLang 0.5.9-0.5.14) serves it as its docs show; one that
    compares the configs' sizes (0.5.15 standalone_worker_v2.py:215-229) still refuses it."""
    from remotedbg.agent.tokenizer_files import shared_ids
    from remotedbg.agent.vocabmap import analyze_vocab_map
    from remotedbg.analysis.fit_checks import draft_model_vocab

    qwen = {"vocab_sha256": "ab" * 32, "vocab_size": 151643, "added": {"<|im_end|>": 151645}}
    other = dict(qwen, vocab_sha256="cd" * 32)
    assert shared_ids(qwen, dict(qwen)) == 151646 and shared_ids(qwen, other) is None
    assert shared_ids(qwen, dict(qwen, added={})) is None and shared_ids(qwen, None) is None

    def judged(version, tokenizers):
        dep = _dep(version=version, draft={"architectures": ["Qwen2ForCausalLM"],
                                           "vocab_size": 151936, "draft_vocab_size": None},
                   target={"vocab_size": 152064},
                   args={"speculative-algorithm": "STANDALONE"})  # fmt: skip
        dep.spec, dep.tokenizers = {"algorithm": "STANDALONE"}, tokenizers
        return draft_model_vocab(dep)

    same = {"draft": qwen, "target": dict(qwen)}
    assert _ids(judged("0.5.14", same)) == []
    assert _ids(judged("0.5.14", {"draft": qwen, "target": other})) == [
        ("draft-model-vocab", "error")]
    assert _ids(judged("0.5.15", same)) == [("draft-model-vocab", "error")]
    # vocab-audit's own size check: a model without a map, one tokenizer, is not a mismatch
    config, target = {"vocab_size": 151936}, {"vocab_size": 152064}
    padded = analyze_vocab_map(None, None, config, target, shared_ids=151646)
    assert [f["id"] for f in padded["findings"]] == []
    assert padded["summary"]["shared_tokenizer_ids"] == 151646
    unknown = analyze_vocab_map(None, None, config, target)
    assert [f["id"] for f in unknown["findings"]] == ["draft-vocab-size-mismatch"]
