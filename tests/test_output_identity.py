"""The safety net of the output refactor (issue 49 item 5): what `remotedbg demo`, the
conformance boxes' `playbook spec-audit` (one host and a fleet) and `probe` print as terminal
text, as `--json` and as a `--report` Markdown file, byte for byte as the code before the
refactor printed it (tests/golden/output/, written by that code).

Only what changes from run to run is masked: times (`12 ms`, `"duration_ms": 12.3`), the
report's date, pids and ports. Every path a test makes lives under one `mkdtemp` folder (the
same length on every run, so tables and wrapped lines fall the same) and is shown as `<ROOT>`.
`REMOTEDBG_GOLDEN=write` rewrites the files instead of comparing (only ever from the code the
goldens are meant to describe).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.releases import release
from tests.test_conformance import build_box, engine_root

pytestmark = pytest.mark.network

GOLDEN = Path(__file__).parent / "golden" / "output"
WRITE = os.environ.get("REMOTEDBG_GOLDEN") == "write"

#: (scenario, engine, version): the conformance rows the goldens cover (cached releases)
BOXES = [
    ("correct", "sglang", "0.5.23"),
    ("prefix-model", "sglang", "0.5.23"),
    ("correct", "vllm", "0.33.0"),
    ("lm-head-missing", "vllm", "0.33.0"),
]

_MASKS = [
    (re.compile(r"\d+(\.\d+)? ms\b"), "<T> ms"),
    (re.compile(r'"(duration_ms|elapsed_s|latency_s|tokens_per_s)": [0-9.e-]+'), r'"\1": 0'),
    (re.compile(r"^(\| \S+ \| \S+ \| \S+ \| )\d+ \|$", re.M), r"\1<T> |"),  # a step's ms
    # how many round trips depends on the other servers of this machine
    (re.compile(r"\d+ remote round trips"), "<N> remote round trips"),
    (re.compile(r'"round_trips": \d+'), '"round_trips": 0'),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"), "<DATE>"),
    # the servers of other processes of this machine, listed and not judged
    (
        re.compile(
            r"^also on this box, not judged \(\d+ server\(s\) outside what was named\):\n"
            r"(  .*\n)*",
            re.M,
        ),
        "also on this box, not judged: <OTHERS>\n",
    ),
    (re.compile(r"remotedbg-demo-[A-Za-z0-9_]{8}"), "remotedbg-demo-<X>"),
    (re.compile(r"remotedbg \d+\.\d+\.\d+\S*"), "remotedbg <VERSION>"),
    (re.compile(r'"remotedbg_version": "[^"]*"'), '"remotedbg_version": "<VERSION>"'),
]


def normalized(data: bytes, root: Path, extra: dict[str, str] | None = None) -> str:
    text = data.decode("utf-8", "surrogateescape")
    text = text.replace(str(root), "<ROOT>")
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    for word, mask in (extra or {}).items():
        text = re.sub(rf"\b{re.escape(word)}\b", mask, text)
    return text


def _without_others(value: object, root: str, ours: set[int]) -> object:
    """A JSON value without what other processes of this machine add (a server that is no
    part of the test, listed by pid; the site-packages its interpreter has)."""
    if isinstance(value, dict):
        return {
            k: [p for p in v if str(p).startswith(root)]
            if k == "searched" and isinstance(v, list)
            else _without_others(v, root, ours)
            for k, v in value.items()
        }
    if isinstance(value, list):
        kept = [
            v
            for v in value
            if not (isinstance(v, dict) and isinstance(v.get("pid"), int) and v["pid"] not in ours)
        ]
        return [_without_others(v, root, ours) for v in kept]
    return value


def document_text(
    data: bytes, root: Path, ours: set[int] = frozenset(), extra: dict[str, str] | None = None
) -> str:
    """A --json document as the command wrote it (json.dumps, indent 2), less other processes."""
    value = _without_others(json.loads(data), str(root), ours)
    return normalized((json.dumps(value, indent=2, default=str) + "\n").encode(), root, extra)


def same_as_before(name: str, text: str, code: int | None = None) -> None:
    """`text` (after the exit code, when given) equals the golden file `name`."""
    if code is not None:
        text = f"exit {code}\n{text}"
    path = GOLDEN / name
    if WRITE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        return
    before = path.read_text(encoding="utf-8", errors="surrogateescape")
    assert text == before, f"{name} differs from the output before the refactor"


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    """One folder of a fixed length for everything the goldens show (boxes, releases)."""
    made = Path(tempfile.mkdtemp(prefix="rdbg-golden-", dir="/tmp"))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def _linked_release(root: Path, engine: str, version: str) -> str:
    """The release's venv as hard links under `root` (its paths appear in the output)."""
    source = Path(engine_root(release(engine, version), "venv"))
    where = root / f"{engine}-{version}"
    if not where.exists():
        try:
            shutil.copytree(source, where, copy_function=os.link, symlinks=True)
        except OSError:  # another file system: a copy
            shutil.rmtree(where, ignore_errors=True)
            shutil.copytree(source, where, symlinks=True)
    return str(where)


def _audit_words(root: Path, scenario: str, engine: str, version: str) -> list[str]:
    box = root / f"box-{scenario}-{engine}"
    if not box.exists():
        box.mkdir()
        (box / "variables.json").write_text(json.dumps(build_box(box, engine, version, scenario)))
    variables = json.loads((box / "variables.json").read_text())
    words = []
    given = dict(variables, roots=_linked_release(root, engine, version), search_home="false")
    for key, value in given.items():
        words += ["--var", f"{key}={value}"]
    return words


def test_demo(cli, root):
    env = {"TMPDIR": "/tmp", "COLUMNS": "100"}
    plain = cli("demo", env=env, timeout=120)
    same_as_before("demo.txt", normalized(plain.stdout, root), plain.returncode)
    colour = cli("demo", env=dict(env, FORCE_COLOR="1"), timeout=120)
    same_as_before("demo.ansi", normalized(colour.stdout, root), colour.returncode)
    document = cli("demo", "--json", env=env, timeout=120)
    same_as_before("demo.json", document_text(document.stdout, root), document.returncode)


def test_demo_box_vocab_audit_report(cli, root):
    """The demo's box audited as a user does, with its Markdown report."""
    from remotedbg.front.demo import build_demo_box

    box = build_demo_box(root / "demo-box")
    report = root / "vocab-audit.md"
    result = cli("playbook", "vocab-audit", "-H", "testbox", "--report", str(report),
                 "--var", f"draft={box['bad']}", "--var", f"target={box['target']}",
                 "--var", f"roots={box['engine']}", "--var", "servers=false",
                 "--var", "search_home=false", timeout=120)  # fmt: skip
    same_as_before("demo-box.txt", normalized(result.stdout, root), result.returncode)
    same_as_before("demo-box.md", normalized(report.read_bytes(), root))


@pytest.mark.parametrize("scenario,engine,version", BOXES, ids=["-".join(b) for b in BOXES])
def test_spec_audit(cli, root, scenario, engine, version):
    words = _audit_words(root, scenario, engine, version)
    name = f"spec-audit-{scenario}-{engine}-{version}"
    report = root / f"{name}.md"
    shown = cli("playbook", "spec-audit", "-H", "testbox", "--report", str(report), *words,
                timeout=180)  # fmt: skip
    same_as_before(f"{name}.txt", normalized(shown.stdout, root), shown.returncode)
    same_as_before(f"{name}.md", normalized(report.read_bytes(), root))
    document = cli("playbook", "spec-audit", "-H", "testbox", "--json", *words, timeout=180)
    same_as_before(f"{name}.json", document_text(document.stdout, root), document.returncode)


def test_fleet(cli, root):
    """Two reachable hosts (two sshd's of this machine) and one that refuses, as a fleet."""
    words = _audit_words(root, "prefix-model", "sglang", "0.5.23")
    hosts = root / "hosts"
    hosts.write_text("testbox\nnosftp\n127.0.0.1:1\n")
    report = root / "fleet.md"
    fleet = ["playbook", "spec-audit", "--hosts-file", str(hosts), "--connect-timeout", "3"]
    shown = cli(*fleet, "--report", str(report), *words, timeout=240)
    same_as_before("fleet.txt", normalized(shown.stdout, root), shown.returncode)
    same_as_before("fleet.md", normalized(report.read_bytes(), root))
    document = cli(*fleet, "--json", *words, timeout=240)
    same_as_before("fleet.json", document_text(document.stdout, root), document.returncode)


def test_probe(cli, standin, root):
    from tests.test_probe import HEALTHY

    server = standin("sglang", {"pattern": {"default": HEALTHY}})
    masks = {str(server.pid): "<PID>", str(server.port): "<PORT>"}
    rate = [
        (re.compile(r"tok/s *$", re.M), "tok/s"),
        (re.compile(r"\d+\.\d *$", re.M), "<R>"),
        (re.compile(r"\| [0-9.]+ \|$", re.M), "| <R> |"),
    ]  # tokens per second: a time
    report = root / "probe.md"
    probe = ["probe", "-H", "testbox", "--server", str(server.pid), "-n", "1", "--max-tokens",
             "16", "--compare", "none"]  # fmt: skip
    shown = cli(*probe, "--report", str(report))

    def rated(text: str) -> str:
        for pattern, mask in rate:
            text = pattern.sub(mask, text)
        return text

    same_as_before("probe.txt", rated(normalized(shown.stdout, root, masks)), shown.returncode)
    same_as_before("probe.md", rated(normalized(report.read_bytes(), root, masks)))
    document = cli(*probe, "--json")
    ours = document_text(document.stdout, root, {server.pid}, masks)
    same_as_before("probe.json", ours, document.returncode)


def test_every_result_implements_the_one_protocol():
    """A run, a fleet, a probe (one host or several), the demo, locate-eagle and a plain
    document are all handed to the one writer as contract.Result."""
    from remotedbg.contract import Result
    from remotedbg.front.cli.demo import DemoReport
    from remotedbg.front.cli.locate import LocateReport
    from remotedbg.front.cli.playbook_report import FleetReport, RunReport
    from remotedbg.front.cli.probe_report import ProbeFleetReport, ProbeReport
    from remotedbg.front.writer import Document

    shown = [RunReport, FleetReport, ProbeReport, ProbeFleetReport, DemoReport, LocateReport]
    for kind in [*shown, Document]:
        assert issubclass(kind, Result), kind.__name__
