"""Engine files are classified once per content: across installs, hosts and runs."""

from __future__ import annotations

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
