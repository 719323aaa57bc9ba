"""The engine profiles, by the name a scan gives an install or a server."""

from __future__ import annotations

from remotedbg.engines.aphrodite import APHRODITE
from remotedbg.engines.lmdeploy import LMDEPLOY
from remotedbg.engines.profile import EngineProfile, UnknownEngine
from remotedbg.engines.sglang import SGLANG
from remotedbg.engines.tokenspeed import TOKENSPEED
from remotedbg.engines.vllm import VLLM

PROFILES: dict[str, EngineProfile] = {
    p.name: p for p in (SGLANG, VLLM, LMDEPLOY, APHRODITE, TOKENSPEED)
}
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


def install_fork(name: str | None, version: str | None, fork: dict | None = None) -> dict | None:
    """What the install is a fork of: the scan's finding (a distribution of another name, a dev
    build), else the profile's own (Aphrodite is a fork of vLLM); None for the engine itself."""
    profile = engine_profile(name)
    if fork:
        return {**fork, "of": fork.get("of") or name}
    if profile.fork_of:
        return {"distribution": profile.distribution or name, "version": version,
                "of": profile.fork_of}  # fmt: skip
    return None


def install_label(name: str | None, version: str | None, fork: dict | None = None) -> str:
    """How an install is named in every output: 'SGLang 0.5.23', or for a distribution of
    another name or a development build, 'sglang-kt 0.7.2, a fork of SGLang'."""
    fork = install_fork(name, version, fork)
    label = engine_profile((fork or {}).get("of") or name).label
    if fork:
        kind = "a development build" if fork.get("dev") else "a fork"
        return f"{fork.get('distribution')} {fork.get('version')}, {kind} of {label}"
    return f"{label} {version}" if version else f"{label} (version unknown)"


def release_version(name: str | None, version: str | None, fork: dict | None) -> str | None:
    """The version the profile's release rules are gated on: None for a fork or dev build of
    an engine, or an engine whose versions are its own (its rules say 'not applied')."""
    if fork or not engine_profile(name).versions_gate_rules:
        return None
    return version


def engines_named() -> str:
    """The engines a profile knows, as a message names them: 'SGLang, vLLM or LMDeploy'."""
    labels = [p.label for p in PROFILES.values()]
    return ", ".join(labels[:-1]) + " or " + labels[-1] if len(labels) > 1 else labels[0]


def known_engine(name: str | None) -> bool:
    """A profile was written for this engine."""
    return bool(name) and name in PROFILES
