"""The probe's built-in prompts, by kind of traffic, and how a user's own prompt file is read.

A draft trained on English chat often accepts well there and poorly on code, math or Chinese;
the categories are chosen so that a gap between them names the cause (the draft's training data
or its draft vocabulary not covering the traffic).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from remotedbg.errors import UsageError

_LONG_CONTEXT = (
    "The following is a maintenance log of a regional water utility. Each entry records the "
    "station, the work done and the readings taken afterwards. "
) + " ".join(
    f"Entry {i}: station {chr(65 + i % 26)}-{i % 7}, pump {i % 3 + 1} inspected, seals replaced, "
    f"pressure {3 + (i * 7) % 5}.{i % 10} bar, flow {120 + (i * 13) % 40} litres per second."
    for i in range(60)
)

#: (category, prompt). Two per category; `-n` takes the first n of each.
BUILTIN: tuple[tuple[str, str], ...] = (
    ("chat", "What are three good ways to keep a small team motivated during a long project?"),
    ("chat", "Explain to a friend why the sky looks blue during the day and red at sunset."),
    ("code", "Write a Python function that merges two sorted lists into one sorted list."),
    ("code", "Write a C function that reverses a singly linked list in place, with comments."),
    ("math", "Solve step by step: a train travels 180 km in 2.5 hours. What is its speed?"),
    ("math", "Prove that the sum of the first n odd numbers equals n squared."),
    ("chinese", "请用三段话介绍一下长城的历史和它在中国文化中的意义。"),
    ("chinese", "写一个关于秋天的短故事，主人公是一只小狐狸。"),
    ("long", _LONG_CONTEXT + "\n\nSummarise which stations had pressure above 6 bar."),
    ("long", _LONG_CONTEXT + "\n\nList the pumps inspected at station C, in order."),
)
CATEGORIES = tuple(dict.fromkeys(category for category, _ in BUILTIN))


@dataclass(frozen=True)
class Prompt:
    category: str
    text: str


def builtin_prompts(per_category: int) -> list[Prompt]:
    taken: dict[str, int] = {}
    out = []
    for category, text in BUILTIN:
        if taken.get(category, 0) < per_category:
            taken[category] = taken.get(category, 0) + 1
            out.append(Prompt(category, text))
    return out


def read_prompt_file(path: Path, per_category: int) -> list[Prompt]:
    """JSONL, one prompt a line: {"prompt": "...", "category": "..."} (category optional,
    default "custom"), or a bare JSON string. Blank lines and lines starting with # are skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: cannot read the prompt file ({error})") from None
    taken: dict[str, int] = {}
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            item = json.loads(line)
        except ValueError:
            raise UsageError(f"{path}:{number}: not a JSON line") from None
        if isinstance(item, str):
            item = {"prompt": item}
        text = item.get("prompt") if isinstance(item, dict) else None
        if not isinstance(text, str) or not text:
            raise UsageError(f'{path}:{number}: expected {{"prompt": "...", "category": "..."}}')
        category = str(item.get("category") or "custom")
        if taken.get(category, 0) < per_category:
            taken[category] = taken.get(category, 0) + 1
            out.append(Prompt(category, text))
    if not out:
        raise UsageError(f"{path}: no prompts in the file")
    return out


def context_filler(tokens: int) -> str:
    """A long-context prompt of about `tokens` tokens (~4 characters a token in English), built
    from the maintenance log above; the engine's own prompt_tokens says what it really was."""
    question = "\n\nSummarise the entries for station A in one sentence."
    body, index = [], 0
    while sum(len(p) + 1 for p in body) < tokens * 4:
        body.append(
            f"Entry {index}: station {chr(65 + index % 26)}-{index % 7}, pump {index % 3 + 1} "
            f"inspected, pressure {3 + (index * 7) % 5}.{index % 10} bar."
        )
        index += 1
    return " ".join(body) + question
