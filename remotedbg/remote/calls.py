"""The agent's entries, one class each: what runs on the box (`entry`), what is sent
(`args()`), the shape its answer must have (`shape`, checked by session/answers.py) and the
dataclass `process()` makes of a checked answer. The only place an agent entry is named.

A call's args are the agent function's keyword arguments, given as the caller has them (the
agent's defaults apply to what is left out); its answer is checked once, where it crosses
from the box (remote/pyagent.py). `Remote.call` hands back the checked plain value (most
consumers read it as data); `Remote.ask` the dataclass."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from remotedbg.session.answers import Nullable, Opt, checked

AGENT = "remotedbg.agent"
A = TypeVar("A")


@dataclass(frozen=True)
class Unknown:
    """Why a check could not decide: a reason code (contract.py) and the sentence for it."""

    code: str
    reason: str


@dataclass(frozen=True)
class Value:
    """The answer of an entry whose shape is any JSON."""

    value: Any


class AgentCall(Generic[A]):
    """One request of one agent entry."""

    entry: ClassVar[str]
    shape: ClassVar[Any] = object
    answer: ClassVar[type] = Value
    # its paths are file paths on the box: a container's /proc/PID/root route applies
    reads_paths: ClassVar[bool] = False

    def __init__(self, args: Mapping[str, Any] | None = None, /, **more: Any) -> None:
        self._args = {**(args or {}), **more}

    def args(self) -> dict[str, Any]:
        return dict(self._args)

    def with_args(self, args: Mapping[str, Any]) -> AgentCall[A]:
        """The same entry asked with other args (a container route's paths)."""
        return type(self)(args)

    @property
    def what(self) -> str:
        """What the user calls the entry: list_tensors -> "list tensors"."""
        return self.entry.rpartition(":")[2].replace("_", " ")

    def check(self, value: Any, what: str) -> Any:
        """`value` when it has the entry's shape, else AgentAnswerError (exit 4)."""
        return checked(value, self.shape, what)

    def process(self, value: Any, what: str = "the answer") -> A:
        """The dataclass of a raw answer, checked first."""
        return self.build(self.check(value, what))

    def build(self, value: Any) -> A:
        """The dataclass of a checked answer: an object's keys as its fields, else `value`."""
        if isinstance(self.shape, dict):
            names = {field.name for field in dataclasses.fields(self.answer)}
            return self.answer(**{k: v for k, v in value.items() if k in names})  # type: ignore[no-any-return]
        return self.answer(value)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._args!r})"


# -- file operations (agent/fsops.py) -------------------------------------------------------
FS = f"{AGENT}.fsops"
_STAT = {
    "path": str,
    "exists": bool,
    "type": Opt(str),
    "size": Opt(int),
    "mtime": Opt(float),
    "error": Opt(Nullable(str)),
}
_LINE = {"line": int, "text": str}


@dataclass(frozen=True)
class Items:
    """A list answer: one item per path or pattern asked."""

    items: list[dict[str, Any]]


class FsCall(AgentCall[A]):
    reads_paths = True


class GlobPaths(FsCall[Items]):
    entry = f"{FS}:glob_paths"
    shape = [{"pattern": str, "matches": [str], "count": int}]
    answer = Items


class StatPaths(FsCall[Items]):
    entry = f"{FS}:stat_paths"
    shape = [_STAT]
    answer = Items


@dataclass(frozen=True)
class Found:
    roots: list[Any]
    results: list[dict[str, Any]]
    truncated: bool


class Find(FsCall[Found]):
    entry = f"{FS}:find"
    shape = {"roots": [object], "results": [{"path": str, "type": str}], "truncated": bool}
    answer = Found


@dataclass(frozen=True)
class Grepped:
    records: list[dict[str, Any]]
    unmatched: list[dict[str, Any]]
    truncated: bool


class Grep(FsCall[Grepped]):
    entry = f"{FS}:grep"
    shape = {
        "records": [{"path": str, "line": int, "text": str, "before": [_LINE], "after": [_LINE]}],
        "unmatched": [{"pattern": str}],
        "truncated": bool,
        "stamp": Opt(Nullable(str)),  # asked with a stamp: the tree's (fsops._tree_stamp)
        "same": Opt(bool),  # the stamp given is the tree's: no records were searched for
    }
    answer = Grepped


class ReadText(FsCall[Items]):
    entry = f"{FS}:read_text"
    shape = [
        {
            "pattern": str,
            "path": Opt(str),
            "error": Opt(Nullable(str)),
            "size": Opt(int),
            "truncated": Opt(bool),
            "text": Opt(str),
            "sha256": Opt(str),
            "same": Opt(bool),
        }
    ]
    answer = Items


class Sha256(FsCall[Items]):
    entry = f"{FS}:sha256"
    shape = [{"path": str, "sha256": Opt(str), "error": Opt(str)}]
    answer = Items


@dataclass(frozen=True)
class RangeDigest:
    sha256: str
    size: int
    mtime: float
    short: bool


class Sha256Range(FsCall[RangeDigest]):
    entry = f"{FS}:sha256_range"
    shape = {"sha256": str, "size": int, "mtime": float, "short": bool}
    answer = RangeDigest


# -- checkpoints (agent/checkpoint.py, agent/vocabmap.py) -----------------------------------
CHECKPOINT = f"{AGENT}.checkpoint"
_TENSOR = {
    "name": str,
    "dtype": str,
    "shape": [int],
    "bytes": int,
    "file": str,
    "offset": Nullable(int),
}


@dataclass(frozen=True)
class Listing:
    """A checkpoint's tensors and what describes it (agent/checkpoint.py describe())."""

    path: str
    tensors: list[dict[str, Any]]
    real_path: str | None = None
    given: str | None = None
    files: list[str] = dataclasses.field(default_factory=list)
    config: dict[str, Any] | None = None
    index: str | None = None
    config_error: str | None = None
    problems: list[str] = dataclasses.field(default_factory=list)


class ListTensors(AgentCall[Listing]):
    entry = f"{CHECKPOINT}:list_tensors"
    shape = {"path": str, "tensors": [_TENSOR]}
    answer = Listing


@dataclass(frozen=True)
class Ranges:
    path: str
    tensors: list[dict[str, Any]]
    files: list[dict[str, Any]]


class TensorRanges(AgentCall[Ranges]):
    entry = f"{CHECKPOINT}:tensor_ranges"
    shape = {
        "path": str,
        "tensors": [
            {
                "name": str,
                "file": str,
                "offset": int,
                "length": int,
                "dtype": str,
                "shape": [int],
                "data_offsets": [int],
            }
        ],
        "files": [{"file": str, "file_size": int, "data_start": int, "metadata": object}],
    }
    answer = Ranges


@dataclass(frozen=True)
class Stats:
    name: str
    dtype: str
    shape: list[int]
    bytes: int


class TensorStats(AgentCall[Stats]):
    entry = f"{CHECKPOINT}:tensor_stats"
    shape = {"name": str, "dtype": str, "shape": [int], "bytes": int}
    answer = Stats


@dataclass(frozen=True)
class VocabReport:
    findings: list[dict[str, Any]]
    unknown: list[Unknown]
    summary: dict[str, Any]
    checkpoint: dict[str, Any]


class VocabCheck(AgentCall[VocabReport]):
    entry = f"{AGENT}.vocabmap:vocab_check"
    shape = {
        "findings": [{"id": str, "severity": str, "title": str, "evidence": dict}],
        "unknown": [{"code": str, "reason": str}],
        "summary": dict,
        "checkpoint": dict,
    }
    answer = VocabReport

    def build(self, value: Any) -> VocabReport:
        return VocabReport(
            value["findings"],
            [Unknown(u["code"], u["reason"]) for u in value["unknown"]],
            value["summary"],
            value["checkpoint"],
        )


# -- scans of the box (agent/engine_scan.py, server_scan.py, fingerprint.py, ...) ------------
@dataclass(frozen=True)
class EngineScan:
    installs: list[dict[str, Any]]
    processes: list[dict[str, Any]]
    interpreters: Any
    searched: Any
    elapsed_s: float
    limits: dict[str, Any] = dataclasses.field(default_factory=dict)


class ScanEngines(AgentCall[EngineScan]):
    entry = f"{AGENT}.engine_scan:scan"
    shape = {
        "installs": [dict],
        "processes": [dict],
        "interpreters": object,
        "searched": object,
        "elapsed_s": float,
    }
    answer = EngineScan


@dataclass(frozen=True)
class Drifts:
    installs: list[dict[str, Any]]


class InstallDrift(AgentCall[Drifts]):
    """Whether each install's files are the released ones (RECORD, or git's index and HEAD)."""

    entry = f"{AGENT}.drift:install_drift"
    shape = {"installs": [{"path": str, "status": str, "changed": [{"path": str,
                                                                   "change": str}]}]}  # fmt: skip
    answer = Drifts


@dataclass(frozen=True)
class ServerScan:
    servers: list[dict[str, Any]]
    notes: list[Any]
    elapsed_s: float


class ScanServers(AgentCall[ServerScan]):
    entry = f"{AGENT}.server_scan:scan_servers"
    shape = {"servers": [dict], "notes": list, "elapsed_s": float}
    answer = ServerScan


@dataclass(frozen=True)
class HttpAnswers:
    answers: list[dict[str, Any]]


class AskHttp(AgentCall[HttpAnswers]):
    """/metrics and /server_info of the servers asked (a scan's `http_asks`), all at once."""

    entry = f"{AGENT}.server_scan:ask_http"
    shape = {"answers": [dict]}
    answer = HttpAnswers


@dataclass(frozen=True)
class Fingerprints:
    files: dict[str, Any]
    tensors: dict[str, Any]


class FingerprintFiles(AgentCall[Fingerprints]):
    entry = f"{AGENT}.fingerprint:fingerprints"
    shape = {"files": dict, "tensors": dict}
    answer = Fingerprints


@dataclass(frozen=True)
class ByPath:
    """An object answer keyed by the paths asked."""

    by_path: dict[str, Any]


class TokenizerFingerprints(AgentCall[ByPath]):
    entry = f"{AGENT}.tokenizer_files:fingerprints"
    shape = dict
    answer = ByPath


class ReadConfigs(AgentCall[ByPath]):
    entry = f"{AGENT}.draft_search:read_configs"
    shape = dict
    answer = ByPath


@dataclass(frozen=True)
class Drafts:
    drafts: list[dict[str, Any]]
    searched: list[Any]


class FindDrafts(AgentCall[Drafts]):
    entry = f"{AGENT}.draft_search:find_drafts"
    shape = {"drafts": [{"path": str}], "searched": list}
    answer = Drafts


@dataclass(frozen=True)
class Interpreter:
    python: str
    modules: dict[str, bool]


@dataclass(frozen=True)
class Interpreters:
    found: list[Interpreter]


class FindInterpreters(AgentCall[Interpreters]):
    entry = f"{AGENT}.probe:interpreters"
    shape = [{"python": str, "modules": dict}]
    answer = Interpreters

    def build(self, value: Any) -> Interpreters:
        return Interpreters([Interpreter(c["python"], c["modules"]) for c in value])


class Describe(AgentCall[Value]):
    entry = f"{AGENT}.probe:describe"


class Snippet(AgentCall[Value]):
    entry = f"{AGENT}.snippet:run"


# -- the live commands (agent/log_follow.py, agent/http_probe.py) ----------------------------
LOGS = f"{AGENT}.log_follow"


class ServerLogs(AgentCall[Value]):
    entry = f"{LOGS}:server_logs"


class ReadLogTail(AgentCall[Value]):
    entry = f"{LOGS}:read_log_tail"


class ReadLogFrom(AgentCall[Value]):
    entry = f"{LOGS}:read_log_from"


class HttpProbe(AgentCall[Value]):
    entry = f"{AGENT}.http_probe:probe"


CALLS: tuple[type[AgentCall[Any]], ...] = tuple(
    cls for cls in list(globals().values())
    if isinstance(cls, type) and issubclass(cls, AgentCall) and "entry" in vars(cls)
)
BY_ENTRY = {cls.entry: cls for cls in CALLS}
