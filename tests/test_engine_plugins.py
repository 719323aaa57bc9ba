"""Plugins that add draft architectures or algorithms to a stock engine (issue 44, item 3),
found through the engine's own plugin mechanism in the site-packages the server imports, on
the real releases: SGLang 0.5.23 with eagle-harness 0.1.3, vLLM 0.23.0 with vllm-ascend 0.23.0.
Each plugin's files are installed beside the engine as pip lays them out (its dist-info with
entry_points.txt and its package), never imported.

What the expectations are read from:
- SGLang 0.5.23 loads every entry point of the group `sglang.srt.plugins`
  (srt/plugins/__init__.py:29, load_plugins :103-130); ModelRegistry.register(package) adds
  each EntryClass of the package's modules (srt/models/registry.py:32-46);
  SpeculativeAlgorithm.register(name, spec_class=...) adds a CustomSpecAlgo that from_string
  returns (srt/speculative/spec_info.py:49-91), whose is_eagle3 is False unless the plugin's
  class overrides it (srt/speculative/spec_registry.py:75-76).
- eagle-harness 0.1.3: entry point `sglang.srt.plugins: eagle_harness =
  eagle_harness.sglang.plugin:register` (its entry_points.txt); plugin.py:22-23, :48
  `ModelRegistry.register("eagle_harness.sglang.models", strict=True)`, :50
  `SpeculativeAlgorithm.register(ALGORITHM_NAME, ..., spec_class=EagleHarnessSpecAlgo)`;
  algorithm.py:58 `ALGORITHM_NAME = "EAGLE_HARNESS"`, :126-128 `is_eagle3` returns True;
  models/llama_eagle3.py:12-16 `class Eagle3LlamaForCausalLM(LlamaForCausalLMEagle3)` (SGLang's
  own EAGLE-3 class, which adds arange to d2t: 0.5.23 srt/models/llama_eagle3.py, as the
  engine's own file is classified), models/llama_eagle4.py:327, :595 LlamaForCausalLMEagle4
  (a full-vocabulary head: `get_hot_token_id` returns None, :488-490).
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.releases import SITE, ReleaseUnavailable, engine_venv_with, release, release_wheel

pytestmark = pytest.mark.network

HARNESS = ("eagle-harness", "0.1.3")


def _arch(draft, architecture: str) -> None:
    config = json.loads((draft / "config.json").read_text())
    config["architectures"] = [architecture]
    (draft / "config.json").write_text(json.dumps(config))


def _load_hook_table(site):
    """eagle-harness's own hook table (sglang/hooks.py HOOKS), run from its file: it imports
    only importlib, inspect and typing (hooks.py:20-24)."""
    import importlib.util

    path = site / "eagle_harness" / "sglang" / "hooks.py"
    spec = importlib.util.spec_from_file_location("eagle_harness_hooks_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.HOOKS


def _add_hooks(site) -> int:
    """SGLang 0.5.23 made to carry every hook eagle-harness's table names (as its eagle-hooks
    branch does, compat.py:46-47): a missing module, class, method or field added with the
    parameters the table gives, a function given the parameters it lacks. Returns how many
    were added."""
    import ast

    added = 0
    for hook in _load_hook_table(site):
        if hook.optional:
            continue
        module, _, attr = hook.path.partition(":")
        path = site.joinpath(*module.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = path.read_text().splitlines() if path.is_file() else []
        tree = ast.parse("\n".join(lines))
        owner, _, member = attr.partition(".")
        args = "".join(f", {p}=None" for p in hook.params)
        found = next((n for n in tree.body if getattr(n, "name", None) == owner), None)
        if not member and isinstance(found, ast.FunctionDef):
            have = {a.arg for a in [*found.args.args, *found.args.kwonlyargs]}
            lacking = [p for p in hook.params if p not in have]
            last = (found.args.kwonlyargs or found.args.args)[-1]
            lines[last.end_lineno - 1] += "".join(f" {p}=None," for p in lacking)
        elif not member and found is None:
            lines += [f"class {owner}:", f"    def __init__(self{args}):", "        pass"]
        elif found is None:
            lines += [f"class {owner}:", _member(hook, member, args)]
        elif not any(getattr(n, "name", None) == member for n in found.body) and not any(
                isinstance(n, ast.AnnAssign) and n.target.id == member for n in found.body):
            lines.insert(found.end_lineno, _member(hook, member, args))
        else:
            continue
        path.write_text("\n".join(lines) + "\n")
        added += 1
    return added


def _member(hook, name: str, args: str) -> str:
    if hook.kind == "field":
        return f"    {name}: object = None"
    return f"    def {name}(self{args}):\n        pass"


def _harness_drafts(root, world: dict) -> None:
    """A Llama-3.1-8B target and EAGLE-3 drafts naming the plugin's architecture (correct,
    and with absolute d2t), launched with EAGLE_HARNESS and explicit draft settings."""
    from tests.test_conformance import build_box

    for name, scenario in (("good", "correct"), ("absolute", "d2t-absolute")):
        variables = build_box(root / name, "sglang", "0.5.23", scenario)
        _arch(root / name / "draft", "Eagle3LlamaForCausalLM")
        world[name] = variables["draft"]
        world[f"{name}_args"] = variables["args"].replace(
            "--speculative-algorithm EAGLE3", "--speculative-algorithm EAGLE_HARNESS")


@pytest.fixture(scope="module")
def harness_world(tmp_path_factory):
    """SGLang 0.5.23 in a venv with eagle-harness 0.1.3 installed beside it; the same with the
    plugin's hooks added to SGLang; the same SGLang without the plugin."""
    try:
        sglang = release("sglang", "0.5.23")
        wheel = release_wheel(*HARNESS)
    except ReleaseUnavailable as exc:
        pytest.skip(str(exc))
    root = tmp_path_factory.mktemp("harness")
    world = {"venv": root / "venv", "hooked": root / "hooked", "plain": root / "plain",
             "old": root / "old"}
    engine_venv_with(sglang, [wheel], world["venv"])
    engine_venv_with(release("sglang", "0.5.6"), [wheel], world["old"])
    world["hooks_added"] = _add_hooks(engine_venv_with(sglang, [wheel], world["hooked"]))
    engine_venv_with(sglang, [], world["plain"])
    _harness_drafts(root, world)
    yield world
    shutil.rmtree(root, ignore_errors=True)


def _audit(cli, args: str, draft: str, roots) -> tuple[int, dict]:
    result = cli("playbook", "spec-audit", "-H", "testbox", "--json", "--var", f"args={args}",
                 "--var", f"draft={draft}", "--var", f"roots={roots}", "--var",
                 "search_home=false", timeout=240)  # fmt: skip
    assert result.stdout, result.stderr.decode()[-2000:]
    return result.returncode, json.loads(result.stdout)


def _locate(cli, root) -> dict:
    result = cli("locate-eagle", "-H", "testbox", "--root", str(root), "--json", timeout=180)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    return json.loads(result.stdout)


def test_locate_eagle_finds_eagle_harness_and_how_its_draft_classes_use_d2t(cli, harness_world):
    doc = _locate(cli, harness_world["venv"])
    (engine,) = doc["engines"]
    assert engine["label"] == "SGLang 0.5.23"
    (plugin,) = engine["plugins"]
    assert plugin["label"] == "eagle-harness 0.1.3"
    assert plugin["entry_points"] == [{"group": "sglang.srt.plugins", "name": "eagle_harness",
                                       "value": "eagle_harness.sglang.plugin:register"}]
    # plugin.py:50 registers EAGLE_HARNESS (algorithm.py:58) with EagleHarnessSpecAlgo, whose
    # is_eagle3 returns True (algorithm.py:126-128), after the early return of :33-34
    algo = plugin["algorithms"]["EAGLE_HARNESS"]
    assert (algo["family"], algo["class"]) == ("eagle3", "EagleHarnessSpecAlgo")
    assert (algo["path"], algo["line"]) == ("eagle_harness/sglang/plugin.py", 50)
    assert (algo["class_path"], algo["family_line"]) == ("eagle_harness/sglang/algorithm.py", 126)
    assert algo["guard"] == ('eagle_harness/sglang/plugin.py:33 '
                             '`not check_for_registration(\'sglang\')`')
    # plugin.py:48 registers the package models/: its EntryClass lists
    archs = plugin["architectures"]
    assert set(archs) == {"Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle4"}
    assert archs["Eagle3LlamaForCausalLM"]["module"] == "eagle_harness.sglang.models.llama_eagle3"
    handling = {m["relative_path"]: (m["d2t_handling"], m["plugin"]) for m in doc["draft_models"]
                if m.get("plugin")}  # fmt: skip
    assert handling == {
        # a subclass of SGLang's LlamaForCausalLMEagle3, which treats d2t as offsets
        "eagle_harness/sglang/models/llama_eagle3.py": ("offsets", "eagle-harness 0.1.3"),
        # a full-vocabulary head that reads no d2t
        "eagle_harness/sglang/models/llama_eagle4.py": ("none", "eagle-harness 0.1.3"),
    }
    # SGLang 0.5.23 lacks hooks of the plugin's table, e.g. the module
    # srt/layers/attention/linear/verify_extension.py (hooks.py:36, :120) is not in the release
    # and CustomSpecAlgo has no uses_aux_hidden_states (spec_registry.py:26-180; hooks.py:107):
    # check_for_registration refuses (compat.py:136-141) and register() returns (plugin.py:33-34)
    gate = plugin["gate"]
    assert gate["status"] == "disabled" and gate["hooks"] == 39
    assert "sglang.srt.layers.attention.linear.verify_extension is missing" in gate["missing"]
    assert ("sglang.srt.speculative.spec_registry:CustomSpecAlgo.uses_aux_hidden_states is "
            "missing") in gate["missing"]
    text = cli("locate-eagle", "-H", "testbox", "--root", str(harness_world["venv"]),
               timeout=180).stdout.decode()  # fmt: skip
    assert "algorithm EAGLE_HARNESS (EAGLE-3), from plugin eagle-harness 0.1.3" in text
    assert "eagle-harness 0.1.3 registers nothing on SGLang 0.5.23" in text


def test_eagle_harness_on_a_stock_sglang_release_is_its_commonest_failure(cli, harness_world):
    """On SGLang 0.5.23 as released the plugin registers nothing, so EAGLE_HARNESS is an
    unknown algorithm: SpeculativeAlgorithm.from_string raises (spec_info.py:65)."""
    code, doc = _audit(cli, harness_world["good_args"], harness_world["good"],
                       harness_world["venv"])  # fmt: skip
    errors = {f["id"]: f for f in doc["findings"] if f["severity"] == "error"}
    assert set(errors) == {"plugin-disabled"} and code == 1, doc["findings"]
    said = errors["plugin-disabled"]
    assert said["title"] == ("EAGLE_HARNESS is not registered: eagle-harness 0.1.3 registers "
                             "nothing on SGLang 0.5.23")
    assert "srt/speculative/spec_info.py:49-65" in said["detail"]


def test_an_sglang_without_the_plugin_framework_loads_no_plugin(cli, harness_world):
    """SGLang 0.5.6 has no srt/plugins/ (its wheel's files; no entry_points call in the
    package): eagle-harness beside it is never loaded."""
    (engine,) = _locate(cli, harness_world["old"])["engines"]
    (plugin,) = engine["plugins"]
    assert plugin["gate"]["status"] == "not-loaded"
    assert plugin["gate_line"] == ("SGLang 0.5.6 does not load eagle-harness 0.1.3: it loads no "
                                   "sglang.srt.plugins plugin (srt/plugins/__init__.py is not in "
                                   "this release)")
    code, doc = _audit(cli, harness_world["good_args"], harness_world["good"],
                       harness_world["old"])  # fmt: skip
    errors = {f["id"]: f for f in doc["findings"] if f["severity"] == "error"}
    assert set(errors) == {"plugin-disabled"} and code == 1, doc["findings"]
    assert errors["plugin-disabled"]["title"] == ("EAGLE_HARNESS is not registered: "
                                                  "eagle-harness 0.1.3 registers nothing on "
                                                  "SGLang 0.5.6")


def test_with_the_hooks_the_plugin_registers_and_is_judged_like_sglang_s_own(cli, harness_world):
    assert harness_world["hooks_added"] > 0
    (engine,) = _locate(cli, harness_world["hooked"])["engines"]
    (plugin,) = engine["plugins"]
    assert plugin["gate"]["status"] == "enabled", plugin["gate"]


def test_a_correct_setup_through_the_plugin_is_clean(cli, harness_world):
    code, doc = _audit(cli, harness_world["good_args"], harness_world["good"],
                       harness_world["hooked"])  # fmt: skip
    assert doc["verdict"] == "ok" and code == 0, (doc["findings"], doc.get("inconclusive"))
    (row,) = [r for r in doc["results"]["spec"]["spec"] if r["draft"]]
    assert row["engine"] == "sglang"
    assert row["draft_class"] == ("eagle_harness/sglang/models/llama_eagle3.py:"
                                  "Eagle3LlamaForCausalLM, from plugin eagle-harness 0.1.3")
    checks = row["checks"]
    # the plugin's algorithm is served as the EAGLE-3 family its class declares
    facts = checks["algorithm-mismatch"]["facts"]
    assert facts["served_as"] == "eagle3" and facts["draft_family"] == "eagle3"
    assert facts["algorithm_from"].startswith("EAGLE_HARNESS (EAGLE-3), from plugin "
                                              "eagle-harness 0.1.3: eagle_harness/sglang/"
                                              "plugin.py:50")  # fmt: skip
    assert checks["algorithm-mismatch"]["status"] == "ok"
    # its weights are loaded through SGLang's own class, which the plugin's subclasses
    # (the draft's tensors all have a parameter there)
    assert checks["draft-weights"]["status"] == "ok"
    assert "eagle_harness/sglang/models/llama_eagle3.py" in checks["draft-weights"]["facts"][
        "draft_class"]
    # the EAGLE-3 capture SGLang sets for a Llama target (srt/models/llama.py): the layers the
    # draft was trained on
    assert checks["aux-layers-mismatch"]["status"] == "ok"


def test_an_absolute_d2t_draft_through_the_plugin_is_caught(cli, harness_world):
    code, doc = _audit(cli, harness_world["absolute_args"], harness_world["absolute"],
                       harness_world["hooked"])  # fmt: skip
    errors = {f["id"] for f in doc["findings"] if f["severity"] == "error"}
    assert errors == {"d2t-absolute-ids"} and code == 1, doc["findings"]


def test_without_the_plugin_its_algorithm_stays_unknown(cli, harness_world):
    """The same launch on the same SGLang without eagle-harness: SpeculativeAlgorithm
    .from_string raises for EAGLE_HARNESS (spec_info.py:65), which no plugin declares here."""
    code, doc = _audit(cli, harness_world["good_args"], harness_world["good"],
                       harness_world["plain"])  # fmt: skip
    assert doc["verdict"] == "inconclusive" and code == 4, doc["findings"]
    assert [f for f in doc["findings"] if f["severity"] == "error"] == []
    said = json.dumps(doc["inconclusive"])
    assert ("no algorithm 'EAGLE_HARNESS' we know, and no plugin of the install registers it "
            "(plugins seen: none)") in said, said


# --------------------------------------------------------------------- vLLM + vllm-ascend
ASCEND = ("vllm-ascend", "0.23.0")
VWN_LAUNCH = "vllm serve {target} --speculative-config {config}"


def _vwn_draft(directory, absolute: bool = False, vwn: bool = True):
    """An EAGLE-3 head for Eagle3VwnLlamaForCausalLM (vllm-ascend 0.23.0
    models/llama_eagle3_vwn.py:173-211): SpecForge's tensors for a Llama-3.1-8B target, plus
    the layers VwnLlamaDecoderLayer builds with vwn_m = vwn_r = 1 (:53-84, PreVwnLayerV1
    :36-46), which its load_weights takes under midlayer. as vLLM's Eagle3LlamaForCausalLM
    does."""
    from tests import realshape as rs

    shape = rs.LLAMA31_8B
    h = shape.hidden
    config = rs.eagle3_config(shape)
    config.update(architectures=["LlamaForCausalLMVwnEagle3"], vwn_m=1, vwn_r=1)
    for key in ("rope_scaling", "max_position_embeddings"):
        if key in shape.extra:
            config[key] = shape.extra[key]
    tensors = rs.eagle3_tensors(shape)
    layers = {"pre_vwn_layer.input_layernorm": [h], "pre_vwn_layer.hidden_norm": [h],
              "pre_vwn_layer.fc": [h, 2 * h], "pre_vwn_layer.upward": [h, h],
              "downward_and_forgot": [2 * h, h], "pre_attention_layernorm": [h],
              "upward_after_attn": [h, h], "downward_and_forgot_after_attn": [2 * h, h],
              "upward_after_mlp": [h, h], "downward": [h, h]}  # fmt: skip
    for name, dims in layers.items() if vwn else ():
        tensors[f"midlayer.{name}.weight"] = ("BF16", dims, None)
    if absolute:
        d2t = tensors["d2t"]
        offsets = rs.np.frombuffer(d2t[2], dtype="<i8")
        ids = offsets + rs.np.arange(len(offsets), dtype="<i8")
        tensors["d2t"] = (d2t[0], d2t[1], ids.astype("<i8").tobytes())
    return rs.write_checkpoint(directory, config, tensors), rs.write_target(
        directory.parent / "target", shape)


@pytest.fixture(scope="module")
def ascend_world(tmp_path_factory):
    """vLLM 0.23.0, the release vllm-ascend 0.23.0 is made for (its METADATA:161 "releases/
    v0.23.0 | CI commitment for vLLM 0.23.0"; utils.py:610-618 vllm_version_is("0.23.0") at
    each version branch), with vllm-ascend 0.23.0 installed beside it."""
    from tests.releases import sweep_release

    try:
        vllm = sweep_release("vllm", "0.23.0")
        wheel = release_wheel(*ASCEND)
    except ReleaseUnavailable as exc:
        pytest.skip(str(exc))
    root = tmp_path_factory.mktemp("ascend")
    engine_venv_with(vllm, [wheel], root / "venv")
    engine_venv_with(vllm, [release_wheel(*HARNESS)], root / "harness")
    world = {"venv": root / "venv", "harness": root / "harness"}
    for name, absolute, vwn in (("good", False, True), ("absolute", True, True),
                                ("plain", False, False)):  # fmt: skip
        draft, target = _vwn_draft(root / name / "draft", absolute, vwn)
        config = json.dumps({"method": "eagle3", "model": str(draft),
                             "num_speculative_tokens": 3})  # fmt: skip
        world[name] = str(draft)
        world[f"{name}_args"] = VWN_LAUNCH.format(target=target, config=config)
    yield world
    shutil.rmtree(root, ignore_errors=True)


def test_locate_eagle_finds_vllm_ascend_and_its_eagle3_class(cli, ascend_world):
    """vllm-ascend's entry points (entry_points.txt: vllm.general_plugins ascend_model =
    vllm_ascend:register_model, and the platform plugin) lead to models/__init__.py:8-10
    register_model("LlamaForCausalLMVwnEagle3", "vllm_ascend.models.llama_eagle3_vwn:
    Eagle3VwnLlamaForCausalLM"), whose compute_logits adds arange to d2t
    (llama_eagle3_vwn.py:225-226): offsets."""
    result = cli("locate-eagle", "-H", "testbox", "--root", str(ascend_world["venv"]), "--json",
                 timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    doc = json.loads(result.stdout)
    (engine,) = doc["engines"]
    assert engine["label"] == "vLLM 0.23.0"
    (plugin,) = engine["plugins"]
    assert plugin["label"] == "vllm-ascend 0.23.0"
    groups = {(e["group"], e["name"]) for e in plugin["entry_points"]}
    assert ("vllm.general_plugins", "ascend_model") in groups
    assert ("vllm.platform_plugins", "ascend") in groups
    vwn = plugin["architectures"]["LlamaForCausalLMVwnEagle3"]
    assert (vwn["module"], vwn["class"]) == ("vllm_ascend.models.llama_eagle3_vwn",
                                             "Eagle3VwnLlamaForCausalLM")
    assert (vwn["path"], vwn["line"]) == ("vllm_ascend/models/__init__.py", 8)
    # the architecture is in the registry the checks read, pointing at the plugin's class
    assert engine["registry"]["LlamaForCausalLMVwnEagle3"] == [
        "vllm_ascend.models.llama_eagle3_vwn", "Eagle3VwnLlamaForCausalLM"]
    handling = {m["relative_path"]: (m["d2t_handling"], m["plugin"]) for m in doc["draft_models"]
                if m.get("plugin")}  # fmt: skip
    assert handling["vllm_ascend/models/llama_eagle3_vwn.py"] == ("offsets", "vllm-ascend 0.23.0")


def test_the_engine_s_own_entry_points_are_not_a_plugin(cli):
    """vLLM's own dist-info names vllm.general_plugins (0.10.1.1 entry_points.txt:
    lora_filesystem_resolver = vllm.plugins.lora_resolvers...): the engine's code, not a plugin
    beside it (it was listed as one: "plugins seen: vllm 0.10.1.1")."""
    venv = release("vllm", "0.10.1.1").venv
    own = (venv / SITE / "vllm-0.10.1.1.dist-info" / "entry_points.txt").read_text()
    assert "[vllm.general_plugins]" in own and "= vllm.plugins." in own, own
    result = cli("locate-eagle", "-H", "testbox", "--root", str(venv), "--json", timeout=180)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    (engine,) = json.loads(result.stdout)["engines"]
    assert engine["label"] == "vLLM 0.10.1.1" and engine["plugins"] == [], engine["plugins"]


def test_a_correct_vllm_ascend_eagle3_setup_is_clean(cli, ascend_world):
    code, doc = _audit(cli, ascend_world["good_args"], ascend_world["good"], ascend_world["venv"])
    assert doc["verdict"] == "ok" and code == 0, (doc["findings"], doc.get("inconclusive"))
    (row,) = [r for r in doc["results"]["spec"]["spec"] if r["draft"]]
    assert row["engine"] == "vllm"
    assert row["draft_class"] == ("vllm_ascend/models/llama_eagle3_vwn.py:"
                                  "Eagle3VwnLlamaForCausalLM, from plugin vllm-ascend 0.23.0")
    # vLLM 0.23.0's EAGLEConfig keeps an architecture ending in Eagle3
    # (transformers_utils/configs/eagle.py:55-63), which the plugin registers
    assert row["checks"]["draft-arch-unsupported"]["facts"]["registered"] == [
        "LlamaForCausalLMVwnEagle3"]
    assert row["checks"]["draft-weights"]["status"] == "ok"


def test_vllm_ascend_drafts_that_do_not_fit_are_caught(cli, ascend_world):
    code, doc = _audit(cli, ascend_world["absolute_args"], ascend_world["absolute"],
                       ascend_world["venv"])  # fmt: skip
    errors = {f["id"] for f in doc["findings"] if f["severity"] == "error"}
    assert errors == {"d2t-absolute-ids"} and code == 1, doc["findings"]
    # a plain EAGLE-3 head under the VWN architecture lacks the layers the VWN class builds
    code, doc = _audit(cli, ascend_world["plain_args"], ascend_world["plain"],
                       ascend_world["venv"])  # fmt: skip
    errors = {f["id"]: f for f in doc["findings"] if f["severity"] == "error"}
    assert code == 1 and set(errors) <= {"required-weights-missing", "draft-load-fails"}, errors
    assert "pre_vwn_layer" in json.dumps(list(errors.values()))


def test_vocab_audit_judges_the_draft_with_the_plugin_s_loader(cli, ascend_world):
    """vllm-ascend's class adds arange to d2t (llama_eagle3_vwn.py:225-226): a SpecForge
    d2t (offsets) is right for it, an absolute one is caught."""
    result = cli("playbook", "vocab-audit", "-H", "testbox", "--json", "--var",
                 f"draft={ascend_world['good']}", "--var", f"roots={ascend_world['venv']}",
                 "--var", "search_home=false", timeout=240)  # fmt: skip
    doc = json.loads(result.stdout)
    assert doc["verdict"] == "ok" and result.returncode == 0, doc["findings"]
    (audited,) = doc["results"]["audit"]["drafts"]
    loader = audited["loader"]
    assert (loader["plugin"], loader["relative_path"], loader["class"], loader["d2t_handling"]) == (
        "vllm-ascend 0.23.0", "vllm_ascend/models/llama_eagle3_vwn.py",
        "Eagle3VwnLlamaForCausalLM", "offsets")


def test_a_plugin_for_several_engines_is_read_with_each_engine_s_own_calls(cli, ascend_world,
                                                                       tmp_path):
    """eagle-harness beside vLLM 0.23.0: its vllm.general_plugins entry point (entry_points.txt)
    leads to vllm/plugin.py, whose register_model calls (:62-65) are vLLM's; its SGLang
    algorithm and classes are not vLLM's. Those calls follow `if not
    check_for_registration("vllm"): return False` (:36-37), whose table is no Hook table: the
    plugin's registrations are said undecided, not taken."""
    (engine,) = _locate(cli, ascend_world["harness"])["engines"]
    (plugin,) = engine["plugins"]
    assert plugin["entry_points"] == [{"group": "vllm.general_plugins", "name": "eagle_harness",
                                       "value": "eagle_harness.vllm.plugin:register"}]
    assert plugin["algorithms"] == {}
    archs = plugin["architectures"]
    assert {a: (e["module"], e["line"]) for a, e in archs.items()} == {
        "LlamaForCausalLMEagle4": ("eagle_harness.vllm.models", 63),
        "Eagle3ForHarness": ("eagle_harness.vllm.eagle3", 65)}
    assert plugin["gate"]["status"] == "undecided"
    assert plugin["gate"]["guard"] == ('eagle_harness/vllm/plugin.py:36 '
                                       '`not check_for_registration(\'vllm\')`')
    # a draft naming the plugin's class is not taken as loadable: whether it is registered is
    # what the guard decides at start
    draft, target = _vwn_draft(tmp_path / "draft", vwn=False)
    _arch(draft, "Eagle3ForHarness")
    config = json.dumps({"method": "eagle3", "model": str(draft), "num_speculative_tokens": 3})
    code, doc = _audit(cli, VWN_LAUNCH.format(target=target, config=config), str(draft),
                       ascend_world["harness"])  # fmt: skip
    assert doc["verdict"] == "inconclusive" and code == 4, doc["findings"]
    assert ("eagle-harness 0.1.3 registers on vLLM 0.23.0 only if eagle_harness/vllm/plugin.py:36 "
            "`not check_for_registration('vllm')` passes") in json.dumps(doc["inconclusive"])


def test_diagnose_names_the_plugin_that_registers_nothing_first(cli, harness_world):
    """diagnose without a server takes the launch line and draft as spec-audit does (docs/
    diagnose.md): on SGLang 0.5.23 as released the first cause is the plugin's refusal."""
    result = cli("diagnose", "-H", "testbox", "--json", "--no-probe", "--var",
                 f"args={harness_world['good_args']}", "--var", f"draft={harness_world['good']}",
                 "--var", f"roots={harness_world['venv']}", "--var", "search_home=false",
                 timeout=240)  # fmt: skip
    doc = json.loads(result.stdout)
    assert result.returncode == 1, doc
    assert doc["causes"][0]["id"] == "plugin-disabled", [c["id"] for c in doc["causes"]]
    assert doc["headline"].startswith("plugin-disabled")
