"""The loader model's full answers on every release of the sweep, recorded so that a refactor of
remotedbg.analysis.loader_model can be checked for identity (tests/test_loader_golden.py).

For each release of tests/releases.py's SWEEP, each draft-model file of its models directory (a
name with eagle, mtp, nextn, medusa, speculator or dflash in it) and each class there with a
`load_weights`: the index holds the file and the engine modules its classes come from, read as
remotedbg.actions.engine_code.add_modules reads them (the same rounds and file cap), plus the
files the engine's profile adds to the serving code; `simulate_load` then runs over the
checkpoints of tests/realshape.py (the shapes the conformance table plants). The answers are
deterministic in their inputs, so a run with the same index texts, class and checkpoint is run
once and shared by every release that has them.

`python -m tests.loader_golden` (re)writes tests/golden/loader_model.json.gz from the code as it is
(gzip: 10 MB of JSON; paths in the answers are relative to the release's package).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import sys
from dataclasses import asdict
from pathlib import Path

from remotedbg.analysis import engine_facts
from remotedbg.analysis.loader_model import simulate_load
from remotedbg.analysis.pysource import SourceIndex, module_name
from remotedbg.engines import code_markers
from remotedbg.engines.knowledge import ENGINES
from remotedbg.engines.loader_rules import vllm_engine_params
from remotedbg.engines.profiles import engine_profile
from tests import realshape as rs
from tests.releases import SWEEP, Release, sweep_release

GOLDEN = Path(__file__).parent / "golden" / "loader_model.json.gz"
DRAFT_WORDS = ("eagle", "mtp", "nextn", "medusa", "speculator", "dflash")
FP8 = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
       "weight_block_size": [128, 128]}  # fmt: skip


def _eagle3(**changes: object) -> tuple[dict, dict, rs.TargetShape]:
    config = rs.eagle3_config(rs.LLAMA31_8B)
    config["architectures"] = ["LlamaForCausalLMEagle3"]
    config.update(changes)
    return config, rs.eagle3_tensors(rs.LLAMA31_8B), rs.LLAMA31_8B


def _checkpoints() -> dict[str, tuple[dict, list[str], rs.TargetShape]]:
    """Checkpoint name -> (draft config, tensor names, target shape)."""
    out: dict[str, tuple[dict, dict, rs.TargetShape]] = {"eagle3": _eagle3()}
    config, tensors, shape = _eagle3()
    out["eagle3-prefix-model"] = (config, rs.rename(tensors, "model."), shape)
    config, tensors, shape = _eagle3(norm_before_fc=True)
    tensors["input_norm.weight"] = ("BF16", [3 * shape.hidden], None)
    out["eagle3-norm-before-fc"] = (config, tensors, shape)
    config, tensors, shape = _eagle3(fc_norm=True)
    for i in range(3):
        tensors[f"fc_norm.{i}.weight"] = ("BF16", [shape.hidden], None)
    out["eagle3-fc-norm"] = (config, tensors, shape)
    config, tensors, shape = _eagle3()
    tensors["midlayer.mlp.gate_proj.weight_scale_inv"] = ("F32", [1, 1], None)
    out["eagle3-scales"] = (config, tensors, shape)
    out["eagle3-fp8"] = _eagle3(quantization_config=FP8)
    out["eagle3-tied"] = _eagle3(tie_word_embeddings=True)
    config, tensors, shape = _eagle3()
    del tensors["d2t"], tensors["t2d"]
    out["eagle3-no-vocab-map"] = (config, tensors, shape)
    # as the EAGLE authors' Llama-3.1 head holds it: no fc.bias (tests/test_oracle.py
    # EAGLE1_WITHOUT_FC_BIAS; a bias is test_an_eagle1_head_with_fc_bias_is_judged_as_v1_builds_it)
    out["eagle1"] = (rs.eagle1_config(rs.LLAMA31_8B),
                     rs.eagle1_tensors(rs.LLAMA31_8B, fc_bias=False), rs.LLAMA31_8B)  # fmt: skip
    out["nextn"] = (rs.nextn_config(), rs.nextn_tensors(experts=8), rs.DEEPSEEK_V3)
    out["mla-eagle3"] = (rs.eagle3_mla_config(), rs.eagle3_mla_tensors(), rs.DEEPSEEK_V3)
    out["speculators"] = (
        rs.speculators_eagle3_config(rs.LLAMA31_8B, "meta-llama/Llama-3.1-8B-Instruct"),
        rs.speculators_eagle3_tensors(rs.LLAMA31_8B),
        rs.LLAMA31_8B,
    )
    config = rs.eagle3_config(rs.KIMI_K2)
    config["architectures"] = ["LlamaForCausalLMEagle3"]
    config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [1, 29, 57],
                              "use_aux_hidden_state": True}  # fmt: skip
    out["kimi"] = (config, rs.eagle3_tensors(rs.KIMI_K2), rs.KIMI_K2)
    return {k: (c, list(t), s) for k, (c, t, s) in out.items()}


def _params(engine: str, config: dict, shape: rs.TargetShape) -> dict:
    params: dict = {"__env__": {}}
    if engine_profile(engine).loader_reads_launch:
        spec = {"method": "eagle3", "num_speculative_tokens": 3}
        found = vllm_engine_params(config, shape.config(), spec)
        found[engine_profile(engine).loader_config_argument] = found.pop("vllm_config")
        params.update(found)
    return params


def _index(rel: Release, draft: Path) -> tuple[SourceIndex, list[tuple[str, str]]]:
    """The draft file, the modules its classes come from (add_modules' rounds and cap) and the
    profile's extra serving files, read from the unpacked release; and (path, text) of each."""
    package = ENGINES.get(rel.name, {}).get("package", rel.name)
    root = str(rel.package)
    index = SourceIndex(package, root)
    texts: list[tuple[str, str]] = []

    def read(paths: list[str]) -> None:
        room = max(0, code_markers.MAX_FILES - len(index.modules))
        for path in [p for p in dict.fromkeys(paths) if index.text_at(p) is None][:room]:
            if Path(path).is_file():
                text = Path(path).read_text(errors="replace")
                index.add(path, text, lazy=True)
                texts.append((path[len(root) :], text))

    read([f"{root}/{p}" for p in engine_profile(rel.name).extra_serving_files])
    frontier = [str(draft)]
    read(frontier)
    for _ in range(code_markers.MAX_IMPORT_ROUNDS):
        wanted: list[str] = []
        for path in frontier:
            name = module_name(path, root, package)
            text = index.text_at(path)
            if name is None or text is None:
                continue
            for module in engine_facts.import_candidates(name, text, path):
                file = root + "/" + "/".join(module.split(".")[1:]) + ".py"
                if module.startswith(package + ".") and module not in index.modules:
                    wanted.append(file)
        if not wanted:
            break
        read(wanted)
        frontier = list(dict.fromkeys(wanted))
    return index, texts


def _draft_files(rel: Release) -> list[Path]:
    knowledge = ENGINES.get(rel.name, {})
    dirs = [knowledge.get("models_dir") or "", *knowledge.get("extra_models_dirs", [])]
    return sorted(
        path
        for d in dirs
        if d and (rel.package / d).is_dir()
        for path in (rel.package / d).glob("*.py")
        if any(word in path.name for word in DRAFT_WORDS)
    )


def _answer(model, root: str) -> dict:
    text = json.dumps(asdict(model), sort_keys=True, default=repr)
    # a reason may quote a value's repr: its address differs from run to run
    text = re.sub(r" at 0x[0-9a-f]+>", " at 0x>", text)
    return json.loads(text.replace(json.dumps(root)[1:-1] + "/", ""))


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def record(releases: list[tuple[str, str]] = SWEEP, progress: bool = False) -> dict:
    """{"answers": {digest: answer},
    "releases": {label: {"<file>:<class> <checkpoint>": digest}}}"""
    checkpoints = _checkpoints()
    answers: dict[str, dict] = {}
    seen: dict[str, str] = {}  # inputs' digest -> answer's digest
    by_release: dict[str, dict[str, str]] = {}
    for engine, version in releases:
        rel = sweep_release(engine, version)
        rows: dict[str, str] = {}
        for draft in _draft_files(rel):
            index, read = _index(rel, draft)
            mod = index.module_at(str(draft))
            texts = _digest(read)
            rel_path = str(draft.relative_to(rel.package))
            for name in sorted(mod.classes if mod is not None else ()):
                ref = index.resolve(mod, name)
                if ref is None or index.find_method(ref, "load_weights") is None:
                    continue
                for checkpoint, (config, tensors, shape) in checkpoints.items():
                    key = f"{rel_path}:{name} {checkpoint}"
                    inputs = f"{texts} {rel_path}:{name} {checkpoint} {engine}"
                    if inputs not in seen:
                        params = _params(engine, config, shape)
                        model = simulate_load(index, str(draft), name, tensors, config, params)
                        answer = _answer(model, str(rel.package))
                        seen[inputs] = _digest(answer)
                        answers[seen[inputs]] = answer
                    rows[key] = seen[inputs]
        by_release[rel.label] = rows
        if progress:
            print(f"{rel.label}: {len(rows)} answers, {len(answers)} distinct so far", flush=True)
    return {"answers": answers, "releases": by_release}


def recorded() -> dict:
    return json.loads(gzip.decompress(GOLDEN.read_bytes()))


if __name__ == "__main__":
    found = record(progress=True)
    text = json.dumps(found, sort_keys=True, separators=(",", ":")).encode()
    with gzip.GzipFile(GOLDEN, "wb", mtime=0) as out:  # mtime 0: the same answers, the same bytes
        out.write(text)
    print(f"{GOLDEN}: {len(found['releases'])} releases, "
          f"{sum(map(len, found['releases'].values()))} answers, "
          f"{len(found['answers'])} distinct", file=sys.stderr)  # fmt: skip
