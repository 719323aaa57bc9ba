"""Drift: an engine whose served code was changed on the box, judged as served (issue 43).

Real releases, modified in the test the way users leave them: an SGLang 0.5.21 source checkout
(a real git repository made with `git`, the release as its tagged commit) with an uncommitted
change to srt/models/deepseek_v2.py, and a pip install (its dist-info RECORD as pip writes it) of
vLLM 0.27.1 whose deepseek_v2.py captures `hidden_states` instead of `hidden_states + residual`.
Each expectation is read from the release's code:
- SGLang 0.5.21 srt/models/deepseek_v2.py:3095 collects the captures in
  `AuxHiddenStatePacker(len(self.layers_to_capture))` and the layers capture into it
  (:3113-3115); the patch appends the embedding output before the layer loop (:3096 as served).
- vLLM 0.27.1 model_executor/models/deepseek_v2.py:1486-1493 captures
  `aux_hidden_state = hidden_states + residual` before layer idx; the patch drops the residual.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from remotedbg.agent.drift import install_drift
from remotedbg.analysis.served_code import capture_change, capture_sites, summarize
from tests.releases import release_wheel, sweep_release
from tests.test_conformance import audit, build_box

pytestmark = pytest.mark.network

SGLANG, VLLM = ("sglang", "0.5.21"), ("vllm", "0.27.1")
SG_MODEL = "srt/models/deepseek_v2.py"
VL_MODEL = "model_executor/models/deepseek_v2.py"
# the released lines the patches change (see the module docstring)
SG_PACKER = "        aux_hidden_states = AuxHiddenStatePacker(len(self.layers_to_capture))\n"
VL_CAPTURE = "aux_hidden_state = hidden_states + residual"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip


def sglang_checkout(root: Path, version: str = SGLANG[1]) -> Path:
    """The release as a source checkout: python/sglang committed and tagged v<version>."""
    repo = root / "sglang"
    (repo / "python").mkdir(parents=True)
    shutil.copytree(sweep_release("sglang", version).package, repo / "python" / "sglang")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"release {version}")
    git(repo, "tag", f"v{version}")
    return repo


def embed_capture_patch(path: Path) -> None:
    """SGLang: also append the embedding output to the aux hidden states."""
    text = path.read_text()
    assert SG_PACKER in text
    patched = SG_PACKER.replace("len(self.layers_to_capture)", "len(self.layers_to_capture) + 1")
    path.write_text(
        text.replace(SG_PACKER, patched + "        aux_hidden_states.append(hidden_states)\n", 1)
    )


def write_record(site: Path, package: str) -> None:
    """RECORD as pip's installer writes it: path, sha256=<urlsafe b64, no padding>, size."""
    dist = next(site.glob(f"{package}-*.dist-info"))
    rows = []
    for path in sorted((site / package).rglob("*")):
        if path.is_file():
            digest = hashlib.sha256(path.read_bytes()).digest()
            text = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            rows.append([str(path.relative_to(site)), f"sha256={text}", str(path.stat().st_size)])
    rows += [[str(p.relative_to(site)), "", ""] for p in sorted(dist.iterdir())]
    rows.append([str((dist / "RECORD").relative_to(site)), "", ""])
    with open(dist / "RECORD", "w", newline="") as handle:
        csv.writer(handle).writerows(rows)


def vllm_install(root: Path) -> Path:
    """vLLM 0.27.1 installed in a venv: its package and dist-info, with a RECORD."""
    venv = root / "venv"
    rel = sweep_release(*VLLM)
    shutil.copytree(rel.venv, venv)
    write_record(venv / "lib/python3.11/site-packages", "vllm")
    return venv


def drift_of(path: Path, **more) -> dict:
    asked = {"path": str(path), "dist_names": [path.name], **more}
    return install_drift({"installs": [asked]})["installs"][0]


# ----------------------------------------------------------------------------- git checkouts
def test_a_checkout_as_released_and_each_kind_of_change(tmp_path):
    repo = sglang_checkout(tmp_path)
    package = repo / "python" / "sglang"
    clean = drift_of(package, version=SGLANG[1])
    assert (clean["status"], clean["method"]) == ("as-released", "git")
    assert clean["checked"] > 1000 and clean["release"]["at_tag"] is True
    (package / "srt/models/llama.py").write_text("# local edit\n")  # unstaged
    (package / "version.py").unlink()  # deleted
    (package / "srt/hotfix.py").write_text("x = 1\n")  # untracked
    (package / "srt/models/qwen2.py").write_text("# staged\n")
    git(repo, "add", "python/sglang/srt/models/qwen2.py")
    changed = {(c["path"], c["change"]) for c in drift_of(package, version="0.5.21")["changed"]}
    assert changed == {("srt/models/llama.py", "modified"), ("version.py", "missing"),
                       ("srt/hotfix.py", "added"), ("srt/models/qwen2.py", "staged")}  # fmt: skip
    # nothing was written: git itself sees the same tree, and the index is untouched
    assert git(repo, "status", "--porcelain").count("\n") == 4


@pytest.mark.parametrize("layout", ["packed", "index-v4"])
def test_packed_objects_and_index_v4_read_alike(tmp_path, layout):
    repo = sglang_checkout(tmp_path)
    model = repo / "python/sglang" / SG_MODEL
    model.write_text(model.read_text() + "# second commit\n")
    git(repo, "commit", "-qam", "second")
    git(repo, "gc", "-q")  # every object packed, deltas among them (OFS_DELTA and base read)
    if layout == "index-v4":
        git(repo, "update-index", "--index-version", "4")
    released = model.read_text()
    embed_capture_patch(model)
    found = drift_of(repo / "python/sglang", version=SGLANG[1])
    assert [(c["path"], c["change"]) for c in found["changed"]] == [(SG_MODEL, "modified")]
    assert found["changed"][0]["released_text"] == released  # the HEAD blob, from the pack
    assert found["release"]["at_tag"] is False  # HEAD is one commit past v0.5.21


def test_a_repository_that_does_not_track_the_package_says_nothing(tmp_path):
    home = tmp_path / "home"
    (home / "sglang").mkdir(parents=True)
    git(home, "init", "-q")  # a home kept in git (dotfiles), the checkout under it untracked
    (home / ".bashrc").write_text("# rc\n")
    git(home, "add", ".bashrc")
    shutil.copytree(sweep_release(*SGLANG).package, home / "sglang" / "sglang")
    found = drift_of(home / "sglang" / "sglang", kind="checkout")
    assert found["status"] == "unknown" and not found["changed"]


# ----------------------------------------------------------------------------- pip installs
def test_a_pip_install_against_the_record_pip_wrote(tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        ["pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(target),
         str(release_wheel(*SGLANG))], check=True, capture_output=True,
    )  # fmt: skip
    clean = drift_of(target / "sglang", site_packages=str(target))
    assert (clean["status"], clean["method"]) == ("as-released", "record")
    with open(target / SG_MODEL.replace("srt", "sglang/srt", 1), "a") as handle:
        handle.write("# hot-fix\n")
    (target / "sglang/srt/extra.py").write_text("y = 2\n")
    changed = drift_of(target / "sglang", site_packages=str(target))["changed"]
    assert {(c["path"], c["change"]) for c in changed} == {(SG_MODEL, "modified"),
                                                          ("srt/extra.py", "added")}  # fmt: skip
    assert all("released_text" not in c for c in changed)  # RECORD holds hashes, not texts


# ----------------------------------------------------------------------------- capture analysis
def test_the_capture_changes_are_named_and_the_releases_are_not():
    sg = (sweep_release(*SGLANG).package / SG_MODEL).read_text()
    vl = (sweep_release(*VLLM).package / VL_MODEL).read_text()
    # as released: vLLM captures the residual stream in the loop and after it (:1493, :1512)
    assert capture_change(vl, None) is None and capture_change(sg, None) is None
    assert {(s["where"], s["residual"]) for s in capture_sites(vl)} == {
        ("in-loop", True), ("after-loop", True)}  # fmt: skip
    no_residual = vl.replace(VL_CAPTURE, "aux_hidden_state = hidden_states", 1)
    for released in (None, vl):  # judged against the convention, and against the release
        effect = capture_change(no_residual, released)
        assert "without the residual" in effect["what"]
        assert [s["line"] for s in effect["sites"]] == [1493]
    embedding = "        aux_hidden_states.append(hidden_states)\n"
    with_embedding = sg.replace(SG_PACKER, SG_PACKER + embedding)
    for released in (None, sg):
        effect = capture_change(with_embedding, released)
        assert "embedding output" in effect["what"]
        assert effect["sites"][0]["where"] == "before-loop"


def test_a_change_off_the_speculative_path_is_shown_and_never_a_cause():
    sg = (sweep_release(*SGLANG).package / SG_MODEL).read_text()
    # a comment in the MoE gate's code: the file holds the capture, the change does not
    anchor = "class MoEGate(nn.Module):\n"
    assert anchor in sg
    drift = {"path": "/x", "method": "git", "status": "modified", "changed": [
        {"path": SG_MODEL, "change": "modified", "released_text": sg,
         "served_text": sg.replace(anchor, anchor + "    # tuned\n", 1)}]}  # fmt: skip
    summary = summarize(drift)["files"][0]
    assert summary["speculative"] is False and summary["hunk_count"] == 1
    assert "capture_change" not in summary


# ----------------------------------------------------------------------------- end to end
def kimi_box(root: Path, engine: str, version: str) -> dict:
    return build_box(root / "box", engine, version, "kimi-k25-correct")


def test_sglang_checkout_with_a_patched_capture_path_is_a_defect_first(tmp_path, cli):
    repo = sglang_checkout(tmp_path)
    variables = kimi_box(tmp_path, *SGLANG)
    assert audit(variables, str(repo))["verdict"] == "ok"  # as released: judged right
    embed_capture_patch(repo / "python/sglang" / SG_MODEL)
    got = audit(variables, str(repo))
    assert got["verdict"] == "defect" and got["errors"] == ["capture-modified"]
    argv = ["--json"] + [a for k, v in dict(variables, roots=str(repo), search_home="false").items()
                         for a in ("--var", f"{k}={v}")]  # fmt: skip
    result = cli("diagnose", "-H", "testbox", "--no-probe", *argv, timeout=180)
    doc = json.loads(result.stdout)
    assert result.returncode == 1, (doc, result.stderr)
    first = doc["causes"][0]
    assert first["id"] == "capture-modified" and "deepseek_v2.py" in first["title"]
    assert "embedding output" in first["title"]
    assert first["evidence"]["file"].endswith(SG_MODEL)
    assert "aux_hidden_states.append(hidden_states)" in first["evidence"]["hunk 1"]
    spec = cli("playbook", "spec-audit", "-H", "testbox", *argv, timeout=180)
    assert spec.returncode == 1
    located = cli("locate-eagle", "-H", "testbox", "--root", str(repo), "--no-home",
                  "--no-evidence", timeout=120)  # fmt: skip
    text = located.stdout.decode()
    assert "modified: 1 files against git index and HEAD: srt/models/deepseek_v2.py" in text
    assert "+         aux_hidden_states.append(hidden_states)" in text


def test_vllm_pip_install_capturing_without_the_residual_is_a_defect_first(tmp_path, cli):
    venv = vllm_install(tmp_path)
    variables = kimi_box(tmp_path, *VLLM)
    clean = audit(variables, str(venv))
    # as released: the sweep's own verdict for this release (tests/sweep_table.py, kimi rows);
    # nothing about the served code
    assert "capture-modified" not in clean["errors"]
    assert "engine-code-modified" not in clean["warnings"]
    model = venv / "lib/python3.11/site-packages/vllm" / VL_MODEL
    model.write_text(model.read_text().replace(VL_CAPTURE, "aux_hidden_state = hidden_states", 1))
    got = audit(variables, str(venv))
    assert got["verdict"] == "defect" and "capture-modified" in got["errors"]
    argv = ["--json"] + [a for k, v in dict(variables, roots=str(venv), search_home="false").items()
                         for a in ("--var", f"{k}={v}")]  # fmt: skip
    result = cli("diagnose", "-H", "testbox", "--no-probe", *argv, timeout=180)
    doc = json.loads(result.stdout)
    assert result.returncode == 1
    first = doc["causes"][0]
    assert first["id"] == "capture-modified" and "without the residual" in first["title"]
    assert first["evidence"]["served"].startswith(f"{model}:1493 aux_hidden_state")


def test_an_unrelated_model_file_changed_is_no_cause(tmp_path):
    repo = sglang_checkout(tmp_path)
    qwen = repo / "python/sglang/srt/models/qwen2.py"
    qwen.write_text(qwen.read_text().replace("aux_hidden_states", "aux_hs"))  # another model
    got = audit(kimi_box(tmp_path, *SGLANG), str(repo))
    assert got["verdict"] == "ok" and not got["warnings"]


def test_an_editable_install_is_compared_through_its_checkout(tmp_path, cli):
    """`pip install -e` of a checkout (PEP 660: a finder and direct_url.json in the venv): the
    install is the checkout behind it, compared with git; its RECORD lists only the finder."""
    repo = sglang_checkout(tmp_path)
    (repo / "python" / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "sglang"\nversion = "0.5.21"\n'
        '[tool.setuptools.packages.find]\ninclude = ["sglang*"]\n'
    )
    git(repo, "add", "python/pyproject.toml")
    git(repo, "commit", "-qm", "build file")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    # setuptools 70.1+ builds the editable wheel itself (older ones need `wheel`)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                    "setuptools>=70.1"], check=True, capture_output=True)  # fmt: skip
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
         "--no-build-isolation", "--no-index", "-e", str(repo / "python")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-2000:]
    assert list(site.glob("__editable__*sglang*")), sorted(p.name for p in site.iterdir())
    embed_capture_patch(repo / "python/sglang" / SG_MODEL)
    located = cli("locate-eagle", "-H", "testbox", "--root", str(venv), "--no-home",
                  "--no-evidence", "--json", timeout=120)  # fmt: skip
    [engine] = json.loads(located.stdout)["engines"]
    assert engine["path"] == str(repo / "python" / "sglang")
    drift = engine["drift"]
    assert (drift["method"], drift["status"]) == ("git", "modified")
    assert [(f["path"], f["change"]) for f in drift["files"]] == [(SG_MODEL, "modified")]
