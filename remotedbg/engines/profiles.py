"""The engine profiles, by the name a scan gives an install or a server."""

from __future__ import annotations

from remotedbg.engines.profile import EngineProfile, UnknownEngine
from remotedbg.engines.sglang import SGLANG
from remotedbg.engines.vllm import VLLM

PROFILES: dict[str, EngineProfile] = {p.name: p for p in (SGLANG, VLLM)}
#: the engines' package names: what an interpreter that serves a model imports
ENGINE_PACKAGES = tuple(p.scan["package"] for p in PROFILES.values())
UNKNOWN_ENGINE = UnknownEngine()
#: a launch line that names no engine (a playbook's --var args='...') is read with its flags
LAUNCH_DEFAULT = SGLANG


def engine_profile(name: str | None) -> EngineProfile:
    """The engine's profile; an engine no scan named gets one under which no release rule and
    no engine mechanism applies."""
    return PROFILES.get(name or "", UNKNOWN_ENGINE)


def launch_profile(name: str | None) -> EngineProfile:
    """The profile whose launch flags and algorithm names a launch of this engine is read with:
    the engine's, else LAUNCH_DEFAULT's."""
    return PROFILES.get(name or "", LAUNCH_DEFAULT)
