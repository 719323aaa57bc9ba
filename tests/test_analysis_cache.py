"""Engine files are classified once per content: across installs, hosts and runs."""

from __future__ import annotations

import pytest

from remotedbg.actions import analysis_cache
from remotedbg.analysis.d2t_handling import classify_source
from tests.engine_trees import write_sglang_checkout


def _counting():
    calls = []

    def compute(text: str, path: str) -> dict:
        calls.append(path)
        return classify_source(text, path)

    return calls, compute


def test_same_text_is_classified_once_and_named_by_its_own_path(tmp_path, monkeypatch):
    monkeypatch.setattr(analysis_cache, "_memory", {})
    engine = write_sglang_checkout(tmp_path / "engine")
    source = (engine / "srt" / "models" / "llama_eagle3.py").read_text()
    calls, compute = _counting()
    classify = analysis_cache.cached_by_content("test", compute)
    first = classify(source, "/a/llama_eagle3.py")
    second = classify(source, '/b "quoted"\\llama_eagle3.py')
    assert len(calls) == 1
    assert first == classify_source(source, "/a/llama_eagle3.py")
    assert second == classify_source(source, '/b "quoted"\\llama_eagle3.py')
    # a new process (empty memory) reads the disk; a new analyser does not
    monkeypatch.setattr(analysis_cache, "_memory", {})
    assert classify(source, "/c.py")["path"] == "/c.py" and len(calls) == 1
    monkeypatch.setattr(analysis_cache, "_memory", {})
    monkeypatch.setattr(analysis_cache, "_analyser", "another version")
    classify(source, "/c.py")
    assert len(calls) == 2


def test_an_unwritable_cache_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(analysis_cache, "_memory", {})
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # the cache dir would be inside a regular file: mkdir fails
    monkeypatch.setenv("REMOTEDBG_CACHE_DIR", str(blocker / "cache"))
    calls, compute = _counting()
    classify = analysis_cache.cached_by_content("test", compute)
    assert classify("x = 1\n", "/x.py")["path"] == "/x.py"
    assert classify("x = 1\n", "/y.py")["path"] == "/y.py"  # from memory
    assert len(calls) == 1


@pytest.mark.network  # the SGLang release is downloaded once (tests/releases.py)
def test_engine_sources_cross_the_wire_once(box, tmp_path, monkeypatch):
    """SGLang 0.5.23 as released, twice on the box: the scan answers sha256s; the files not
    kept here are read in one more round trip, once per content; a second run (a new process:
    memory emptied, the disk cache kept) reads none, and finds what the first found."""
    import json
    import shutil

    from remotedbg.actions.locate import locate_engines
    from remotedbg.remote.primitives import Remote
    from tests.releases import release

    package = release("sglang", "0.5.23").package
    roots = []
    for name in ("a", "b"):
        roots.append(str(tmp_path / name / "python" / "sglang"))
        shutil.copytree(package, roots[-1], ignore=shutil.ignore_patterns("__pycache__"))

    class Counting(Remote):
        def call(self, entry, args, timeout=None):
            answer = super().call(entry, args, timeout)
            calls.append((entry.rpartition(":")[2], len(json.dumps(answer)), args))
            return answer

    runs = []
    with box.session() as session:
        for _ in range(2):
            monkeypatch.setattr(analysis_cache, "_memory", {})
            calls: list = []
            found = locate_engines(Counting(session), roots, search_home=False)
            runs.append((calls, found))
    (first_calls, first), (second_calls, second) = runs
    reads = [args["paths"] for name, _, args in first_calls if name == "read_text"]
    assert len(reads) == 1  # the distinct contents of both trees, in one round trip
    sizes = {len(paths) for paths in reads}
    drafts = [m for m in first["draft_models"] if m["install"] == roots[0]]
    assert sizes == {len(drafts)}  # the second tree's identical files were not read again
    assert not [c for c in second_calls if c[0] == "read_text"]
    assert [m["d2t_handling"] for m in second["draft_models"]] == [
        m["d2t_handling"] for m in first["draft_models"]
    ]
    eagle3 = [
        m for m in second["draft_models"] if m["relative_path"] == "srt/models/llama_eagle3.py"
    ]
    assert [m["d2t_handling"] for m in eagle3] == ["offsets", "offsets"]  # 0.5.23's own reading
    scan_bytes = [size for name, size, _ in second_calls if name == "scan"]
    assert scan_bytes and scan_bytes[0] < 200_000  # hashes, not the sources (~1.5 MB)
