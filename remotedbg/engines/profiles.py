"""The engine profiles, by the name a scan gives an install or a server."""

from __future__ import annotations

from remotedbg.engines.lmdeploy import LMDEPLOY
from remotedbg.engines.profile import EngineProfile, UnknownEngine
from remotedbg.engines.sglang import SGLANG
from remotedbg.engines.vllm import VLLM

PROFILES: dict[str, EngineProfile] = {p.name: p for p in (SGLANG, VLLM, LMDEPLOY)}
#: the engines' package names: what an interpreter that serves a model imports
ENGINE_PACKAGES = tuple(p.scan["package"] for p in PROFILES.values())
UNKNOWN_ENGINE = UnknownEngine()


def engine_profile(name: str | None) -> EngineProfile:
    """The engine's profile; an engine no scan named gets one under which no release rule and
    no engine mechanism applies."""
    return PROFILES.get(name or "", UNKNOWN_ENGINE)


def launch_profile(name: str | None) -> EngineProfile:
    """The profile whose launch flags and algorithm names a launch of this engine is read with:
    the engine's own; a launch of no known engine (the scan matched no profile: its program,
    its log and its flags named none) gets none, never another engine's."""
    return engine_profile(name)


def install_label(name: str | None, version: str | None, fork: dict | None = None) -> str:
    """How an install is named in every output: 'SGLang 0.5.23', or for a distribution of
    another name or a development build, 'sglang-kt 0.7.2, a fork of SGLang'."""
    label = engine_profile(name).label
    if fork:
        kind = "a development build" if fork.get("dev") else "a fork"
        return f"{fork.get('distribution')} {fork.get('version')}, {kind} of {label}"
    return f"{label} {version}" if version else f"{label} (version unknown)"


def engines_named() -> str:
    """The engines a profile knows, as a message names them: 'SGLang, vLLM or LMDeploy'."""
    labels = [p.label for p in PROFILES.values()]
    return ", ".join(labels[:-1]) + " or " + labels[-1] if len(labels) > 1 else labels[0]


def known_engine(name: str | None) -> bool:
    """A profile was written for this engine."""
    return bool(name) and name in PROFILES
