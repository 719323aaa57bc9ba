"""Where SGLang and vLLM keep their draft-model code, and how to recognise it.

Everything here is data (strings, lists, regex sources) so it can be sent as JSON to the remote
agent `remotedbg.agent.engine_scan`. Patterns are Python `re` sources matched against a file's
BASENAME (name patterns) or searched in its text (content markers).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from remotedbg.agent.findings import ERROR, WARNING
from remotedbg.engines.code_markers import VLLM_RUNNER_ENV
from remotedbg.engines.draft_fit_rules import ENV_FACTS
from remotedbg.engines.profile import EngineProfile, method_key
from remotedbg.engines.profiles import PROFILES, engine_profile, launch_profile
from remotedbg.engines.text_config import text_config

#: Symbols a person wants to see quoted from a draft model's source.
EVIDENCE_SYMBOLS = [
    "hot_token_id",
    "d2t",
    "t2d",
    "draft_id_to_target_id",
    "draft_vocab_size",
    "load_token_map",
]

#: Names whose value is the d2t tensor itself (checkpoint key and engine parameter names).
D2T_NAMES = ["d2t", "draft_id_to_target_id"]

#: Attributes whose value the engine uses as absolute TARGET token ids.
TARGET_ID_SINKS = ["hot_token_id", "hot_token_ids", "target_token_ids", "token_map"]

#: Draft families: what an architecture name says the head is (an engine profile says what an
#: algorithm serves, and whether it names the head class after the method).
FAMILY_WORDS = (("eagle3", ("eagle3", "eagle-3")), ("mtp", ("mtp", "nextn")), ("eagle", ("eagle",)),
                ("medusa", ("medusa",)))
#: Families whose draft loader remotedbg.analysis.loader_model follows.
LOADER_MODELLED_FAMILIES = ("eagle3", "eagle", "medusa")
#: Families whose draft has no attention and no positions: Medusa's heads are residual MLPs on
#: the target's last hidden state (vLLM 0.8.5-0.32.0 model_executor/models/medusa.py
#: ResidualBlock, Medusa.forward), so context and RoPE checks do not apply.
POSITIONLESS_FAMILIES = ("medusa",)


#: Where a target checkpoint keeps its own MTP layer, by the architecture its config names (the
#: target's, or the draft class vLLM renames it to): the names both engines' loaders take the
#: layer from. DeepSeek and GLM-4.5 number it after the model's layers (vLLM 0.33.0
#: model_executor/models/utils.py:575-600 get_spec_layer_idx_from_weight_name, used by
#: deepseek_mtp.py:344 and glm4_moe_mtp.py:280; SGLang 0.5.23 models/deepseek_common/
#: deepseek_weight_loader.py:570-577, layer 0 in a one-layer NextN checkpoint); Qwen3-Next and
#: Qwen3.5 keep it under `mtp.` (vLLM 0.33.0 qwen3_next_mtp.py:231-241, qwen3_5_mtp.py:303-313;
#: SGLang 0.5.23 qwen3_5_mtp.py:362-365, qwen3_next.py:1173-1184 for qwen3_next_mtp.py);
#: MiMo under `model.mtp_layers.` (vLLM 0.33.0 mimo_mtp.py:218; SGLang 0.5.23 mimo_mtp.py:185).
#: The names: the target's architecture, and the draft class each engine renames it to.
MTP_LAYER_AFTER_LAYERS = frozenset({
    "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepSeekMTPModel",
    "DeepseekV3ForCausalLMNextN", "Glm4MoeForCausalLM", "Glm4MoeMTPModel",
    "Glm4MoeForCausalLMNextN"})
MTP_LAYER_PREFIXES = {
    **dict.fromkeys(("Qwen3NextForCausalLM", "Qwen3NextMTP", "Qwen3NextForCausalLMMTP",
                     "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                     "Qwen3_5MTP", "Qwen3_5MoeMTP", "Qwen3_5ForCausalLMMTP"), ("mtp.",)),
    **dict.fromkeys(("MiMoForCausalLM", "MiMoMTPModel", "MiMoMTP"), ("model.mtp_layers.",)),
}


def mtp_layer_prefixes(config: dict | None) -> tuple[str, ...] | None:
    """The tensor-name prefixes a target checkpoint's own MTP layer is under (any one tensor
    under one of them is the layer), or None where no rule says for its architecture."""
    config = config if isinstance(config, dict) else {}
    architectures = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    for architecture in architectures:
        if architecture in MTP_LAYER_PREFIXES:
            return MTP_LAYER_PREFIXES[architecture]
        if architecture in MTP_LAYER_AFTER_LAYERS:
            layers = text_config(config).get("num_hidden_layers")
            if not isinstance(layers, int) or isinstance(layers, bool) or layers < 1:
                return None
            found = [layers] + ([0] if layers == 1 else [])
            return tuple(f"{stem}layers.{n}." for n in found
                         for stem in ("model.", "", "model.language_model."))
    return None


#: Methods that draft without a trained model, so there is no head to judge: vLLM's prompt
#: lookup and suffix decoding (0.32 config/speculative.py SpeculativeMethod: "ngram",
#: "ngram_gpu", "suffix"), SGLang's NGRAM (speculative/spec_info.py SpeculativeAlgorithm, 0.5.14
#: and 0.5.23).
MODEL_FREE_METHODS = ("ngram", "ngram_gpu", "suffix")


def not_speculating(engine: str | None, launch: dict) -> str:
    """What says a server does not speculate, from its parsed launch (crosscheck.launch_spec):
    '' when its launch names an algorithm."""
    if launch.get("algorithm"):
        return ""
    return f"started without {engine_profile(engine).speculation_flag}"


def drafts_without_a_model(algorithm: str | None) -> bool:
    """True when the method proposes tokens by lookup (n-grams, suffix trees), not with a head:
    what acceptance says about a head (position 0, training data, its context) does not apply."""
    return method_key(algorithm).strip("[]") in MODEL_FREE_METHODS


def low_acceptance(algorithm: str | None) -> tuple[str, str]:
    """(severity, why) of an accept length under its ceiling's threshold: with a head, a symptom
    of a defect (an error); with a lookup method, a measure of how often the text repeats itself
    (a warning: the engine runs as its docs show, and drafts pay off on other traffic)."""
    if drafts_without_a_model(algorithm):
        return WARNING, (f"{algorithm} drafts by looking tokens up in the text so far: it gains "
                         "on text that repeats its prompt (edits, retrieval, code) and little "
                         "elsewhere; nothing is broken.")  # fmt: skip
    return ERROR, ("Near the floor (1.00, or 0 where the figure leaves out the bonus token) no "
                   "draft token is accepted: an algorithm mismatch, a wrong vocab map, "
                   "uninitialised weights or a head fed other layers than in training.")


def served_family(engine: str | None, algorithm: str | None) -> str | None:
    """'eagle3' | 'eagle' | 'mtp' for a --speculative-algorithm / vLLM method, else None."""
    return launch_profile(engine).served_family(algorithm)


def medusa_head_index(name: str) -> int | None:
    """The head a Medusa tensor belongs to, in vLLM's names (`blocks.H.layers.L.weight`,
    `lm_heads.H.weight`, under an optional `medusa_heads.`) or FasterDecoding's
    (`H.L.linear.weight`, `H.N.weight`), else None."""
    parts = name.removeprefix("medusa_heads.").split(".")
    if len(parts) >= 3 and parts[0] in ("blocks", "lm_heads") and parts[1].isdigit():
        return int(parts[1])
    if len(parts) >= 3 and parts[0].isdigit() and parts[1].isdigit():
        return int(parts[0])
    return None


def draft_family(
    config: dict,
    engine: str | None = None,
    algorithm: str | None = None,
    tensors: list[dict] | None = None,
) -> str | None:
    """'eagle3' | 'eagle' | 'mtp' from a draft config's architectures (and model_type), else
    from its fc width (EAGLE-3 fuses three target layers, EAGLE-1/2 one plus the embedding);
    where the engine names the head after the method (vLLM), a plain architecture takes the
    family of the method serving it. None when nothing says."""
    names = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    names.append(str(config.get("model_type") or ""))
    low = [n.lower() for n in names]
    for family, words in FAMILY_WORDS:
        if any(w in n for n in low for w in words):
            return family
    if any(str(key).startswith("medusa_") for key in config):
        return "medusa"  # FasterDecoding's own config (medusa_num_heads, medusa_num_layers)
    by_shape = _family_from_fc(config, tensors or [])
    if by_shape:
        return by_shape
    if engine_profile(engine).names_head_after_method:
        served = served_family(engine, algorithm)
        return served if served in ("eagle3", "eagle") else None
    return None


def _family_from_fc(config: dict, tensors: list[dict]) -> str | None:
    hidden = config.get("target_hidden_size") or config.get("hidden_size")
    if not isinstance(hidden, int) or hidden <= 0:
        return None
    for t in tensors:
        parts = [p for p in str(t.get("name", "")).split(".") if p != "model"]
        shape = t.get("shape") or []
        if parts[-2:] == ["fc", "weight"] and len(shape) == 2:
            return {3 * hidden: "eagle3", 2 * hidden: "eagle"}.get(shape[1])
    return None


#: Names of draft-head class/architecture fragments (EntryClass, class names, architectures).
DRAFT_CLASS_WORDS = ["Eagle", "EAGLE", "MTP", "NextN", "Medusa", "Draft", "Speculator", "MLPSpec"]

_CLASS_WORDS_RE = "|".join(DRAFT_CLASS_WORDS)

#: Content markers: any match makes a models-dir file a draft-model candidate.
# (each starts with a literal where possible: `re` then searches with a fast literal scan)
COMMON_CONTENT_MARKERS = [
    r"d2t(?![A-Za-z0-9_])",
    r"hot_token_id(?![A-Za-z0-9_])",
    r"draft_id_to_target_id",
    r"\nclass\s+\w*(?:" + _CLASS_WORDS_RE + r")\w*\s*[(:]",
    r"\nEntryClass\s*=\s*[\[(]?[^=]{0,400}?(?:" + _CLASS_WORDS_RE + r")",
]

#: Basename patterns of draft-model files (matched with re.search on the file name).
COMMON_NAME_PATTERNS = [
    r"eagle\d*.*\.py$",
    r"_mtp\.py$",
    r"^mtp.*\.py$",
    r"nextn.*\.py$",
    r"medusa.*\.py$",
    r"mlp_speculator.*\.py$",
    r"draft.*\.py$",
    r"dspark.*\.py$",
    r"dflash.*\.py$",
]


def _engine_scan(scan: dict[str, Any]) -> dict[str, Any]:
    """A profile's scan with the draft-file rules every engine shares, after name_excludes."""
    out: dict[str, Any] = {}
    for key, value in copy.deepcopy(scan).items():
        out[key] = value
        if key == "name_excludes":
            out["name_patterns"] = COMMON_NAME_PATTERNS
            out["content_markers"] = COMMON_CONTENT_MARKERS
    return out


def plugin_markers(profile: EngineProfile) -> list[str]:
    """Regex sources that make a plugin's file one the client reads: a registration call the
    profile names, or a method that says a plugin algorithm's family."""
    # each starts with a literal, which `re` finds with a fast scan (a leading \b costs 10x)
    calls = [re.escape(call) + r"\s*\(" for call in profile.plugin_calls]
    methods = [r"def\s+" + m + r"\s*\(" for m, _ in profile.plugin_algorithm_families]
    return calls + methods


def _scan_with_plugins(profile: EngineProfile) -> dict[str, Any]:
    scan = _engine_scan(dict(profile.scan))
    if profile.plugin_groups:
        scan["plugin_groups"] = list(profile.plugin_groups)
        scan["plugin_markers"] = plugin_markers(profile)
    return scan


#: Where each engine's code lives (its profile's scan), and where its plugins are declared.
ENGINES: dict[str, dict[str, Any]] = {name: _scan_with_plugins(p) for name, p in PROFILES.items()}

#: Directories walked (bounded) for source checkouts. "~" is the (possibly overridden) home.
WALK_ROOTS_HOME = ["~"]
WALK_ROOTS_SYSTEM = ["/workspace", "/opt", "/srv"]
#: Other users' homes: walked only when asked (`--var search_home=all`): on a shared box their
#: installs are theirs, and a server of theirs is found through its process anyway.
WALK_ROOTS_OTHER_HOMES = ["/home"]

#: Interpreter prefixes (venvs, conda envs, system) whose site-packages are checked directly.
PREFIX_GLOBS_HOME = [
    "~/.venv",
    "~/.venv*",
    "~/venv*",
    "~/env",
    "~/*/.venv",
    "~/*/venv",
    "~/miniconda3",
    "~/miniconda3/envs/*",
    "~/anaconda3",
    "~/anaconda3/envs/*",
    "~/miniforge3",
    "~/miniforge3/envs/*",
    "~/mambaforge",
    "~/mambaforge/envs/*",
    "~/.conda/envs/*",
    "~/.pyenv/versions/*",
    "~/.local",
]
PREFIX_GLOBS_SYSTEM = [
    "/usr",
    "/usr/local",
    "/opt/conda",
    "/opt/conda/envs/*",
    "/opt/venv*",
    "/opt/*/venv",
    "/opt/*/.venv",
    "/workspace/.venv",
    "/workspace/*/.venv",
]

#: Below a prefix, where packages live.
SITE_PACKAGES_GLOBS = [
    "lib/python3*/site-packages",
    "lib/python3*/dist-packages",
    "lib/python3/dist-packages",
    "local/lib/python3*/dist-packages",
]

#: Directory names never descended into by the checkout walk.
SKIP_DIRS = [
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "__pycache__",
    ".cache",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
    "site-packages",  # handled by looking at its engine children only
    "dist-packages",
]
#: Absolute paths never walked (pseudo file systems).
SKIP_PATHS = ["/proc", "/sys", "/dev", "/run", "/snap", "/var/lib/docker", "/tmp/.X11-unix"]
#: Hidden directories the walk still enters (other dot-dirs are skipped).
HIDDEN_DIRS_ALLOWED = [".venv", ".local", ".conda", ".pyenv"]

DEFAULT_MAX_DEPTH = 4
DEFAULT_MAX_FILE_BYTES = 512 * 1024
DEFAULT_MAX_TOTAL_BYTES = 6 * 1024 * 1024  # stays under the session's 8 MiB output cap
DEFAULT_MAX_ENTRIES = 200_000
DEFAULT_TIME_LIMIT = 3.0

# launchers that stay as the server's parent with its words in theirs: followed to the engine
SERVER_WRAPPERS = [
    "runuser", "sudo", "su", "bash", "sh", "dash", "zsh", "nohup", "env", "setsid", "stdbuf",
    "timeout", "nice", "ionice", "taskset", "numactl", "chrt", "time", "tini", "dumb-init",
    # environment managers whose `run` stays as the parent of what it starts
    "uv", "conda", "mamba", "micromamba", "pixi", "poetry", "pipenv",
]  # fmt: skip

KNOWLEDGE: dict[str, Any] = {
    "server_wrappers": SERVER_WRAPPERS,
    "engines": ENGINES,
    "evidence_symbols": EVIDENCE_SYMBOLS,
    "walk_roots_home": WALK_ROOTS_HOME,
    "walk_roots_system": WALK_ROOTS_SYSTEM,
    "walk_roots_other_homes": WALK_ROOTS_OTHER_HOMES,
    "prefix_globs_home": PREFIX_GLOBS_HOME,
    "prefix_globs_system": PREFIX_GLOBS_SYSTEM,
    "site_packages_globs": SITE_PACKAGES_GLOBS,
    "skip_dirs": SKIP_DIRS,
    "skip_paths": SKIP_PATHS,
    "hidden_dirs_allowed": HIDDEN_DIRS_ALLOWED,
}


#: Programs that start a server and stay in /proc as its parent with its command line in their
#: own (runuser/sudo/su, shells with -c, nohup and the like).

def server_scan_knowledge() -> dict[str, Any]:
    """What remotedbg.agent.server_scan needs to recognise servers, from the same rules the
    engine scan uses."""
    return {
        "process_patterns": {name: list(e["process_patterns"]) for name, e in ENGINES.items()},
        "server_wrappers": list(SERVER_WRAPPERS),
        "env_facts": [*ENV_FACTS, VLLM_RUNNER_ENV],
        # how its messages name the engines (the agent cannot import the profiles)
        "engine_labels": list(engine_labels().values()),
    }


def engine_labels() -> dict[str, str]:
    """{engine name: its label}, every profile's, in the profiles' order."""
    return {name: p.label for name, p in PROFILES.items()}


def knowledge() -> dict[str, Any]:
    """A deep copy of KNOWLEDGE, safe to modify and to send as JSON."""
    return copy.deepcopy(KNOWLEDGE)


def scan_args(
    roots: list[str] | None = None,
    *,
    search_home: bool | str = True,
    search_system: bool = True,
    search_processes: bool = True,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    time_limit: float = DEFAULT_TIME_LIMIT,
    home: str | None = None,
) -> dict[str, Any]:
    """The `args` dict for `remotedbg.agent.engine_scan:scan`. Named `roots` limit the search:
    nothing else is searched for, and servers are linked only to installs under them."""
    if roots:
        search_home, search_system = False, False
    args: dict[str, Any] = {
        "roots": list(roots or []),
        "only_roots": bool(roots),
        "search_home": search_home,
        "search_system": search_system,
        "search_processes": search_processes,
        "max_depth": max_depth,
        "max_file_bytes": max_file_bytes,
        "max_total_bytes": max_total_bytes,
        "max_entries": max_entries,
        "time_limit": time_limit,
        "knowledge": knowledge(),
    }
    if home is not None:
        args["home"] = home
    return args
