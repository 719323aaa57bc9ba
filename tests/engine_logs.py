"""vLLM log lines rendered from a real release's own format strings (tests/releases.py downloads
the release; nothing of vLLM is copied here). A release that changes a format changes the line
the tests write, and a parse that only knew the old shape fails.

Read from each release's sources:
- the SpecDecoding line: the `log_fn("SpecDecoding metrics: ..." , name, ...)` call of
  vllm/v1/spec_decode/metrics.py (0.8.5 :82-94, 0.10.1.1 :87-99, 0.33.0 :120-137), its arguments
  by name, and its own `mean_acceptance_length = ...` expression (0.8.5 leaves the bonus token
  out, 0.10.1.1 on count it);
- the launch-arguments line: `logger.info("non-default args: %s", ...)` (0.10.1.1
  vllm/entrypoints/utils.py:326, 0.33.0 vllm/entrypoints/common/startup.py:96), before that
  `logger.info("args: %s", args)` with the argparse Namespace (0.8.5
  vllm/entrypoints/openai/api_server.py:1044);
- the line prefix: `_FORMAT` of vllm/logger.py (0.8.5 :22-23, 0.33.0 :28-32), with the default
  empty VLLM_LOGGING_PREFIX.
"""

from __future__ import annotations

import argparse
import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.releases import Release

METRICS = "v1/spec_decode/metrics.py"
ARGS_FILES = ("entrypoints/common/startup.py", "entrypoints/utils.py",
              "entrypoints/openai/api_server.py")  # fmt: skip


@dataclass(frozen=True)
class Rendered:
    line: str
    values: dict[str, Any]  # what the release's code computed, by its own variable names


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _prefix(rel: Release, filename: str, lineno: int) -> str:
    """The record's prefix as vllm/logger.py's _FORMAT writes it (an f-string whose only
    substitution is the prefix variable, empty by default)."""
    for node in ast.walk(_tree(rel.package / "logger.py")):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "_FORMAT" for t in node.targets
        ):
            assert isinstance(node.value, ast.JoinedStr), ast.dump(node.value)
            fmt = "".join(v.value for v in node.value.values if isinstance(v, ast.Constant))
            break
    else:
        raise AssertionError(f"{rel.label}: no _FORMAT in vllm/logger.py")
    fields = {"levelname": "INFO", "asctime": "11-02 10:00:00", "filename": filename,
              "fileinfo": filename, "lineno": lineno, "process": 4242,
              "vllm_process_name": "APIServer", "message": "%(message)s"}  # fmt: skip
    return fmt % fields


def _log_call(tree: ast.Module, starts: str) -> ast.Call:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and node.args[0].value.startswith(starts)
        ):
            return node
    raise LookupError(starts)


def spec_decoding_line(
    rel: Release, num_drafts: int, accepted_per_pos: list[int], elapsed_s: float = 10.0
) -> Rendered:
    """The SpecDecoding metrics line the release logs after `num_drafts` drafts of
    len(accepted_per_pos) tokens each, of which accepted_per_pos[k] were accepted at position k."""
    path = rel.package / METRICS
    tree = _tree(path)
    call = _log_call(tree, "SpecDecoding metrics: ")
    k = len(accepted_per_pos)
    names: dict[str, Any] = {
        "num_drafts": num_drafts,
        "num_draft_tokens": num_drafts * k,
        "num_accepted_tokens": sum(accepted_per_pos),
        "accepted_throughput": sum(accepted_per_pos) / elapsed_s,
        "draft_throughput": num_drafts * k / elapsed_s,
        "rates_str": ", ".join(f"{a / num_drafts:.3f}" for a in accepted_per_pos),
    }
    for node in ast.walk(tree):  # the release's own arithmetic for the derived figures
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in (
                "mean_acceptance_length", "draft_acceptance_rate"
            ):  # fmt: skip
                expr = compile(ast.Expression(node.value), str(path), "eval")
                names[target.id] = eval(expr, {"float": float}, dict(names))  # noqa: S307
    args = tuple(names[a.id] for a in call.args[1:] if isinstance(a, ast.Name))
    assert len(args) == len(call.args) - 1, f"{rel.label}: log_fn arguments not all names"
    message = call.args[0].value % args
    line = _prefix(rel, "metrics.py", call.lineno) % {"message": message}
    return Rendered(line, names)


def launch_args_line(rel: Release, args: dict[str, Any]) -> str:
    """The startup line with the launch arguments: `non-default args: {dict}` where the release
    has it, else `args: Namespace(...)` (the whole Namespace; `args` are its non-None fields)."""
    for name in ARGS_FILES:
        path = rel.package / name
        if not path.is_file():
            continue
        tree = _tree(path)
        try:
            call = _log_call(tree, "non-default args: ")
            value: Any = dict(args)
        except LookupError:
            try:
                call = _log_call(tree, "args: %s")
            except LookupError:
                continue
            value = argparse.Namespace(**args)
        message = call.args[0].value % (value,)
        return _prefix(rel, path.name, call.lineno) % {"message": message}
    raise AssertionError(f"{rel.label}: no launch-arguments log line in {ARGS_FILES}")
