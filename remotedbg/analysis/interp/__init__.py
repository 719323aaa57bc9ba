"""One abstract-interpreter core for the analyses that run engine code over `ast`
(remotedbg.analysis.capture, d2t_handling, loader_model): visitor dispatch (`visitor`), the unknown
value that says why and where (`values`), forking on decisions the code leaves open (`fork`),
step and depth budgets (`visitor.Budget`), Python's operators (`ops`) and builtins (`builtins`).
Each analysis is a domain over it: its own values and what its hooks do with them."""

from remotedbg.analysis.interp.fork import Decisions, NeedsFork, TooManyPaths, explore
from remotedbg.analysis.interp.values import UNKNOWN, Config, Unknown, is_unknown, known
from remotedbg.analysis.interp.visitor import Budget, NotInterpreted, Visitor

__all__ = [
    "UNKNOWN",
    "Budget",
    "Config",
    "Decisions",
    "NeedsFork",
    "NotInterpreted",
    "TooManyPaths",
    "Unknown",
    "Visitor",
    "explore",
    "is_unknown",
    "known",
]
