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


def test_a_cache_cleared_while_the_process_runs_is_written_again(tmp_path, monkeypatch):
    """A persistent-session daemon outlives `rm -rf ~/.cache/remotedbg`: the folders it made
    are gone, and its next results are still kept, whole, with no part file left."""
    import hashlib
    import shutil

    monkeypatch.setattr(analysis_cache, "_memory", {})
    monkeypatch.setattr(analysis_cache, "_made", set())
    monkeypatch.setenv("REMOTEDBG_CACHE_DIR", str(tmp_path / "cache"))
    calls, compute = _counting()
    classify = analysis_cache.cached_by_content("test", compute)
    classify("x = 1\n", "/x.py")
    shutil.rmtree(tmp_path / "cache")
    classify("y = 2\n", "/y.py")
    analysis_cache.keep_source(b"z = 3\n")
    kept = sorted(p.name for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert len(kept) == 2 and all(not name.endswith(".part") for name in kept)
    monkeypatch.setattr(analysis_cache, "_memory", {})  # a new process reads them
    assert classify("y = 2\n", "/y2.py")["path"] == "/y2.py" and len(calls) == 2
    assert analysis_cache.kept_source(hashlib.sha256(b"z = 3\n").hexdigest()) == "z = 3\n"


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
        def call(self, request, timeout=None):
            answer = super().call(request, timeout)
            name = request.entry.rpartition(":")[2]
            calls.append((name, len(json.dumps(answer)), request.args()))
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


def test_unchanged_model_directories_are_not_listed_again(box, tmp_path, monkeypatch):
    """SGLang 0.5.23 as released, located three times (a new process each: memory emptied, the
    disk cache kept): the second scan finds the model directories' stamp unchanged, reads none
    of their files and answers no draft-file entry, and the run finds the same draft models;
    after one draft file is edited in place, the third scan lists them again and only that
    file's text crosses the wire."""
    import json
    import shutil

    from remotedbg.actions.locate import locate_engines
    from remotedbg.remote.primitives import Remote
    from tests.releases import release

    root = tmp_path / "python" / "sglang"
    shutil.copytree(release("sglang", "0.5.23").package, root,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    edited = root / "srt" / "models" / "llama_eagle3.py"

    class Counting(Remote):
        def call(self, request, timeout=None):
            answer = super().call(request, timeout)
            calls.append((request.entry.rpartition(":")[2], json.loads(json.dumps(answer))))
            return answer  # a copy is kept: locate fills in the answer it was given

    runs = []
    with box.session() as session:
        for run in range(3):
            if run == 2:
                edited.write_text(edited.read_text() + "\n# edited\n")
            monkeypatch.setattr(analysis_cache, "_memory", {})
            calls: list = []
            found = locate_engines(Counting(session), [str(root)], search_home=False)
            (install,) = [a for n, a in calls if n == "scan"][0]["installs"]
            sent = [e["path"] for n, a in calls if n == "read_text" for e in a if "text" in e]
            runs.append((install, found["draft_models"], sent))
    (first, models, _), (second, again, sent_again), (third, last, sent_last) = runs
    assert first["draft_stamp"] and not first.get("draft_files_same") and first["draft_files"]
    assert second.get("draft_files_same") is True and second["draft_files"] == []
    assert second["draft_stamp"] == first["draft_stamp"] and sent_again == []
    assert [(m["path"], m["d2t_handling"]) for m in again] == [
        (m["path"], m["d2t_handling"]) for m in models
    ]
    assert len(models) > 10
    assert not third.get("draft_files_same") and third["draft_stamp"] != first["draft_stamp"]
    assert len(third["draft_files"]) == len(first["draft_files"]) and sent_last == [str(edited)]
    assert [m["path"] for m in last] == [m["path"] for m in models]


def test_threads_that_meet_one_content_classify_it_once(tmp_path, monkeypatch):
    """The hosts of a fleet are threads that start together: the first to meet a content
    classifies it, the others wait for its answer; one that fails leaves it to the next."""
    import threading
    import time

    monkeypatch.setattr(analysis_cache, "_memory", {})
    monkeypatch.setenv("REMOTEDBG_CACHE_DIR", str(tmp_path / "cache"))
    source = write_sglang_checkout(tmp_path / "engine") / "srt" / "models" / "llama_eagle3.py"
    text = source.read_text()
    calls: list[str] = []
    start = threading.Barrier(8)

    def compute(body: str, path: str) -> dict:
        calls.append(path)
        time.sleep(0.2)  # long enough for every other thread to arrive meanwhile
        if len(calls) == 1:
            raise RuntimeError("the first attempt fails")
        return classify_source(body, path)

    classify = analysis_cache.cached_by_content("test-threads", compute)
    results: dict[int, object] = {}

    def host(n: int) -> None:
        start.wait()
        try:
            results[n] = classify(text, f"/host{n}/llama_eagle3.py")
        except RuntimeError as exc:
            results[n] = exc

    threads = [threading.Thread(target=host, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    failed = [n for n, r in results.items() if isinstance(r, RuntimeError)]
    assert len(calls) == 2 and len(failed) == 1 and len(results) == 8
    for n, result in results.items():
        if n not in failed:
            assert result == classify_source(text, f"/host{n}/llama_eagle3.py")


def test_a_fleet_of_identical_hosts_reads_each_source_once(box, tmp_path, monkeypatch):
    """Four hosts (sessions to the test sshd, in threads, as `run_fleet` runs them) locate the
    same engine tree at once, with an empty cache: each source crosses the wire once in all
    (before, each host read them all: 4x), and every host gets the same classification."""
    import threading

    from remotedbg.actions.locate import locate_engines
    from remotedbg.remote.primitives import Remote

    monkeypatch.setattr(analysis_cache, "_memory", {})
    monkeypatch.setenv("REMOTEDBG_CACHE_DIR", str(tmp_path / "cache"))
    root = str(write_sglang_checkout(tmp_path / "engine"))
    reads: list[list[str]] = []
    scanned = threading.Barrier(4)  # every host has its scan's answer before any reads sources

    class Counting(Remote):
        def call(self, request, timeout=None):
            if request.entry.endswith(":read_text"):
                reads.append(list(request.args()["paths"]))
            answer = super().call(request, timeout)
            if request.entry.endswith(":scan"):
                scanned.wait(30)
            return answer

    sessions = [box.session() for _ in range(4)]
    found: dict[int, dict] = {}
    start = threading.Barrier(4)

    def host(n: int) -> None:
        start.wait()
        found[n] = locate_engines(Counting(sessions[n]), [root], search_home=False)

    try:
        threads = [threading.Thread(target=host, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for session in sessions:
            session.close()
    handling = [[m["d2t_handling"] for m in found[n]["draft_models"]] for n in range(4)]
    assert len(found) == 4 and handling[0] and handling == [handling[0]] * 4
    # each content read by one host (hosts may share the reading out), the others waited for it
    read = [path for paths in reads for path in paths]
    assert len(read) == len(set(read)) == len({m["path"] for m in found[0]["draft_models"]})


def _serving_code(package, rels):
    from remotedbg.actions.engine_code import EngineCode

    code = EngineCode("vllm", str(package))
    for rel in rels:
        path = f"{package}/{rel}"
        code.index.add(path, (package / rel).read_text(), lazy=True)
        code.serving_hits.append({"path": path, "line": 1, "text": ""})
    return code


@pytest.mark.network  # the vLLM release is downloaded once (tests/releases.py)
def test_spec_audit_code_facts_are_kept_by_each_files_content(tmp_path, monkeypatch):
    """spec-audit's facts about the serving code (embedding sharing, where the aux ids are read,
    the capture calls) are derived once per content of each file, kept on disk for the next
    run: a new process reads them back without parsing; a one-line change in any one file is a
    new key for that file alone; a new analyser recomputes all. Each file's facts depend on
    that file only; what the facts of several files add up to is recomputed every run."""
    from remotedbg.analysis import engine_facts
    from tests.releases import release

    package = release("vllm", "0.33.0").package
    rels = [
        "v1/spec_decode/llm_base_proposer.py",
        "v1/worker/gpu_model_runner.py",
        "v1/spec_decode/metrics.py",
    ]
    rels = [r for r in rels if (package / r).is_file()]
    assert len(rels) == 3
    computed: list[str] = []
    real = engine_facts.file_facts
    counted = lambda text: computed.append(text) or real(text)  # noqa: E731
    monkeypatch.setattr(engine_facts, "file_facts", counted)
    monkeypatch.setattr(analysis_cache, "_memory", {})

    def facts(code):
        serving = engine_facts.serving_facts(code)
        return serving, engine_facts.embedding_sharing(code, serving)

    first, shared = facts(_serving_code(package, rels))
    assert len(computed) == 3 and shared["shared"] is True
    assert [f for _, f in first] == [real((package / r).read_text()) for r in rels]
    monkeypatch.setattr(analysis_cache, "_memory", {})  # a new process: the disk cache answers
    code = _serving_code(package, rels)
    assert facts(code) == (first, shared) and len(computed) == 3
    assert not dict.items(code.index.modules)  # and nothing was parsed
    changed = tmp_path / "vllm"
    for rel in rels:
        (changed / rel).parent.mkdir(parents=True, exist_ok=True)
        (changed / rel).write_text((package / rel).read_text())
    text = (changed / rels[1]).read_text()
    (changed / rels[1]).write_text(text.replace("\n", "\nx = 1\n", 1))  # one line more
    monkeypatch.setattr(analysis_cache, "_memory", {})
    facts(_serving_code(changed, rels))
    assert len(computed) == 4 and computed[-1] == (changed / rels[1]).read_text()
    monkeypatch.setattr(analysis_cache, "_memory", {})
    monkeypatch.setattr(analysis_cache, "_analyser", "another version")
    facts(_serving_code(package, rels))
    assert len(computed) == 7


@pytest.mark.network  # the vLLM release is downloaded once (tests/releases.py)
def test_unchanged_serving_code_is_neither_grepped_nor_sent_again(box, tmp_path, monkeypatch):
    """vLLM 0.33.0 as released, on the box, read three times as spec-audit reads it (the
    serving-code grep, then the files it found): the second run (a new process: memory
    emptied, the disk cache kept) gets `same` for the grep and for every file, so no record
    and no source text crosses the wire, and its index holds the same texts; after one file
    is edited in place and one file is added, the third run greps again, finds the new file's
    hit, and is sent the edited file's text only."""
    import json
    import shutil

    from remotedbg.actions.engine_code import add_modules, gather_serving
    from remotedbg.remote.primitives import Remote
    from tests.releases import release

    root = tmp_path / "site-packages" / "vllm"
    shutil.copytree(release("vllm", "0.33.0").package, root,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    seeds = [str(root / "model_executor/models/llama_eagle3.py")]

    class Counting(Remote):
        def call(self, request, timeout=None):
            answer = super().call(request, timeout)
            calls.append((request.entry.rpartition(":")[2], answer))
            return answer

    def read() -> tuple[list, dict[str, str], list]:
        monkeypatch.setattr(analysis_cache, "_memory", {})
        code = gather_serving(remote, "vllm", str(root))
        add_modules(remote, code, seeds)
        return code.serving_hits, dict(code.index.texts_mentioning("")), list(calls)

    with box.session() as session:
        remote = Counting(session)
        calls: list = []
        hits, texts, first = read()
        calls = []
        again_hits, again_texts, second = read()
        runner = root / "v1/worker/gpu_model_runner.py"
        runner.write_text(runner.read_text() + "\n# edited\n")
        (root / "v1/extra_serving.py").write_text("class EAGLEConfig:\n    pass\n")
        calls = []
        third_hits, third_texts, third = read()

    greps = [a for n, a in first if n == "grep"]
    assert greps[0]["records"] and greps[0]["stamp"] and not greps[0].get("same")
    assert again_hits == hits and again_texts == texts and len(texts) > 10
    assert [a.get("same") for n, a in second if n == "grep"][0] is True
    assert [a["records"] for n, a in second if n == "grep"][0] == []
    sent = [e for n, a in second if n == "read_text" for e in a if "text" in e]
    sizes = [sum(len(json.dumps(a)) for n, a in run if n == "read_text") for run in (first, second)]
    assert sent == [] and sizes[1] < sizes[0] / 50  # paths and sha256s, not 1.5 MB of sources
    assert any(h["path"].endswith("v1/extra_serving.py") for h in third_hits)
    assert third_texts[str(runner)].endswith("# edited\n")
    sent = sorted(e["path"] for n, a in third if n == "read_text" for e in a if "text" in e)
    assert sent == sorted([str(runner), str(root / "v1/extra_serving.py")])


def test_the_analyser_version_covers_subpackages(tmp_path):
    """A rule moved into a subpackage of analysis/ (or engines/) still makes a new analyser:
    results kept by the old code are never read as the new code's."""
    package = tmp_path / "remotedbg"
    (package / "analysis" / "interp").mkdir(parents=True)
    (package / "engines").mkdir()
    (package / "analysis" / "d2t.py").write_text("RULE = 1\n")
    core = package / "analysis" / "interp" / "core.py"
    core.write_text("STEP_LIMIT = 10\n")
    folders = ("analysis", "engines")
    before = analysis_cache.code_digest(package, folders)
    core.write_text("STEP_LIMIT = 20\n")
    assert analysis_cache.code_digest(package, folders) != before
    # the same bytes in another module are another analyser too
    changed = analysis_cache.code_digest(package, folders)
    core.rename(package / "analysis" / "interp" / "values.py")
    assert analysis_cache.code_digest(package, folders) != changed


def test_an_entry_someone_else_could_have_written_decides_nothing(tmp_path, monkeypatch):
    """A classification kept in the cache says what a loader does with d2t: an entry planted
    by another user would turn loader-direct-map into offsets (issue 46). Entries are read only
    from a folder and a file that are this user's and writable by no one else."""
    import os

    engine = write_sglang_checkout(tmp_path / "engine")
    source = (engine / "srt" / "models" / "llama_eagle3_direct.py").read_text()
    cache = tmp_path / "cache"
    monkeypatch.setenv("REMOTEDBG_CACHE_DIR", str(cache))
    monkeypatch.setattr(analysis_cache, "_memory", {})
    monkeypatch.setattr(analysis_cache, "_private", {})
    calls, compute = _counting()
    classify = analysis_cache.cached_by_content("test", compute)
    assert classify(source, "/e.py")["d2t_handling"] == "direct"
    [entry] = [p for p in cache.rglob("*.json")]
    planted = entry.read_text().replace('"direct"', '"offsets"')

    def fresh_process():
        monkeypatch.setattr(analysis_cache, "_memory", {})
        monkeypatch.setattr(analysis_cache, "_private", {})

    # a folder others may write to: nothing in it is taken
    entry.write_text(planted)
    cache.chmod(0o777)
    fresh_process()
    assert classify(source, "/e.py")["d2t_handling"] == "direct" and len(calls) == 2
    cache.chmod(0o700)
    # a file another user owns, in a private folder (root can make one: CI runs as root)
    if os.geteuid() == 0:
        entry.write_text(planted)
        os.chown(entry, 65534, 65534)
        fresh_process()
        assert classify(source, "/e.py")["d2t_handling"] == "direct" and len(calls) == 3
