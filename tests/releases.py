"""Real SGLang and vLLM releases from the package registry, unpacked as a user's box has them.

Each release is downloaded once with `pip download --no-deps` (cached in
`$REMOTEDBG_TEST_CACHE`, default `~/.cache/remotedbg-tests`) and unpacked twice, Python sources
and dist-info only (compiled extensions are not needed to read the code):

- as a venv:      <cache>/unpacked/<name>-<version>/venv/lib/python3.11/site-packages/<name>/...
                  with <name>-<version>.dist-info/METADATA beside it, as pip installs it;
- as a bare tree: <cache>/unpacked/<name>-<version>/tree/python/<name>/... (a checkout's layout,
                  no dist-info: the version must come from the package's own files).

Nothing of the engines is committed to this repository; the tests read these downloads.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

SGLANG_RELEASES = ["0.4.6.post5", "0.4.10.post2", "0.5.1", "0.5.6", "0.5.14", "0.5.23"]
VLLM_RELEASES = ["0.8.5", "0.10.1.1", "0.11.2", "0.20.0", "0.33.0"]
RELEASES = [("sglang", v) for v in SGLANG_RELEASES] + [("vllm", v) for v in VLLM_RELEASES]

# The sweep: every SGLang release from 0.4.6.post5 and every vLLM release from 0.8.5 to the
# newest, as `pip index versions sglang` / `vllm` listed them on 2026-12-01 (oldest first).
SGLANG_SWEEP = (
    "0.4.6.post5 0.4.7 0.4.7.post1 0.4.8 0.4.8.post1 0.4.9 0.4.9.post1 0.4.9.post2 0.4.9.post3 "
    "0.4.9.post4 0.4.9.post5 0.4.9.post6 0.4.10 0.4.10.post1 0.4.10.post2 0.5.1 0.5.1.post1 "
    "0.5.1.post2 0.5.1.post3 0.5.2 0.5.3 0.5.3.post1 0.5.3.post2 0.5.3.post3 0.5.4 0.5.4.post1 "
    "0.5.4.post2 0.5.4.post3 0.5.5 0.5.5.post1 0.5.5.post2 0.5.5.post3 0.5.6 0.5.6.post1 "
    "0.5.6.post2 0.5.7 0.5.8 0.5.8.post1 0.5.9 0.5.10 0.5.10.post1 0.5.11 0.5.12 0.5.12.post1 "
    "0.5.13 0.5.13.post1 0.5.14 0.5.15 0.5.15.post1 0.5.16 0.5.17 0.5.18 0.5.19 0.5.20 0.5.21 "
    "0.5.22 0.5.23"
).split()
VLLM_SWEEP = (
    "0.8.5 0.8.5.post1 0.9.0 0.9.0.1 0.9.1 0.9.2 0.10.0 0.10.1 0.10.1.1 0.10.2 0.11.0 0.11.1 "
    "0.11.2 0.12.0 0.13.0 0.14.0 0.14.1 0.15.0 0.15.1 0.16.0 0.17.0 0.17.1 0.18.0 0.18.1 "
    "0.19.0 0.19.1 0.20.0 0.20.1 0.20.2 0.21.0 0.22.0 0.22.1 0.23.0 0.24.0 0.25.0 0.25.1 "
    "0.26.0 0.27.0 0.27.1 0.28.0 0.29.0 0.30.0 0.31.0 0.32.0 0.33.0"
).split()
SWEEP = [("sglang", v) for v in SGLANG_SWEEP] + [("vllm", v) for v in VLLM_SWEEP]

SITE = "lib/python3.11/site-packages"
#: Distributions that install an engine's package under their own name (forks): dist -> package
FORK_PACKAGES = {"sglang-kt": "sglang", "aphrodite-engine": "aphrodite"}


class ReleaseUnavailable(RuntimeError):
    """The registry did not deliver the release (the message says why)."""


class NoSdist(ReleaseUnavailable):
    """The release has no source archive on the registry (vLLM 0.15.0, 0.15.1: wheels only)."""


@dataclass(frozen=True)
class Release:
    name: str
    version: str
    root: Path  # <cache>/unpacked/<name>-<version>

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def site_packages(self) -> Path:
        return self.venv / SITE

    @property
    def package_name(self) -> str:
        """The package it installs: its own name, or the engine's for a fork (sglang-kt)."""
        return FORK_PACKAGES.get(self.name, self.name)

    @property
    def package(self) -> Path:
        """The installed package directory (site-packages/<package>)."""
        return self.site_packages / self.package_name

    @property
    def tree(self) -> Path:
        """A checkout-like tree: tree/python/<name>."""
        return self.root / "tree"

    @property
    def tree_package(self) -> Path:
        return self.tree / "python" / self.package_name

    @property
    def label(self) -> str:
        return f"{self.name}-{self.version}"


def cache_dir() -> Path:
    path = Path(os.environ.get("REMOTEDBG_TEST_CACHE", Path.home() / ".cache" / "remotedbg-tests"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def _wheels(dest: Path, name: str, version: str) -> list[Path]:
    # a wheel's file name spells the distribution with '_' for '-' (sglang_kt-0.7.2-...)
    return sorted({*dest.glob(f"{name}-{version}-*.whl"),
                   *dest.glob(f"{name.replace('-', '_')}-{version}-*.whl")})  # fmt: skip


def _download(name: str, version: str, dest: Path) -> Path:
    found = _wheels(dest, name, version)
    if found:
        return found[0]
    cmd = [
        sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
        "--python-version", "3.11", "--implementation", "cp",
        "--platform", "manylinux_2_35_x86_64", "--platform", "manylinux_2_34_x86_64",
        "--platform", "manylinux_2_31_x86_64", "--platform", "manylinux_2_28_x86_64",
        "--platform", "manylinux1_x86_64", "--platform", "any",
        f"{name}=={version}", "-d", str(dest),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    found = _wheels(dest, name, version)
    if proc.returncode != 0 or not found:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        raise ReleaseUnavailable(f"pip download {name}=={version}: {' '.join(tail)}")
    return found[0]


SIMPLE_INDEX = "https://pypi.org/simple"


def _download_sdist(name: str, version: str, dest: Path) -> Path:
    """The release's source archive, from the registry's simple index (PEP 691 JSON, the page pip
    reads). `pip download` cannot fetch vLLM's sdist without building its metadata, which
    installs its build requirements (torch, cmake); its wheel is 20-40 times larger."""
    target = dest / f"{name}-{version}.tar.gz"
    if target.is_file():
        return target
    partial: Path | None = None
    project = re.sub(r"[-_.]+", "-", name).lower()  # the index's name (PEP 503)
    request = urllib.request.Request(
        f"{SIMPLE_INDEX}/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            files = json.load(answer)["files"]
        entry = next((f for f in files if f["filename"] == target.name), None)
        if entry is None:
            raise NoSdist(f"{target.name} is not on {SIMPLE_INDEX}")
        digest = hashlib.sha256()
        dest.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        with (
            urllib.request.urlopen(entry["url"], timeout=600) as answer,
            open(partial, "wb") as out,
        ):
            while chunk := answer.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except (OSError, ValueError, KeyError) as exc:
        if partial is not None:
            partial.unlink(missing_ok=True)
        raise ReleaseUnavailable(f"{target.name} from {SIMPLE_INDEX}: {exc}") from exc
    if digest.hexdigest() != entry["hashes"].get("sha256"):
        partial.unlink()
        raise ReleaseUnavailable(f"{target.name}: sha256 differs from the index's")
    partial.rename(target)
    return target


def _unpack_sdist(archive_path: Path, release: Release) -> None:
    """Python sources and PKG-INFO (as the dist-info's METADATA), venv layout only."""
    work = release.root.with_name(release.root.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    site = work / "venv" / SITE
    top = f"{release.name}-{release.version}/"
    with tarfile.open(archive_path) as archive:
        for member in archive:
            inner = member.name[len(top) :] if member.name.startswith(top) else ""
            if member.isfile() and inner.startswith(release.name + "/") and inner.endswith(".py"):
                out = site / inner
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(archive.extractfile(member).read())
            elif member.isfile() and inner == "PKG-INFO":
                info = site / f"{release.name}-{release.version}.dist-info"
                info.mkdir(parents=True, exist_ok=True)
                (info / "METADATA").write_bytes(archive.extractfile(member).read())
                (info / "top_level.txt").write_text(release.name + "\n")
    (work / "venv" / "bin").mkdir(parents=True)
    (work / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    work.rename(release.root)


def _wanted(member: str, name: str) -> bool:
    top = member.split("/", 1)[0]
    if top.endswith(".dist-info"):
        return member.endswith(("/METADATA", "/top_level.txt", "/entry_points.txt"))
    return top == name and member.endswith(".py")


def _unpack(wheel: Path, release: Release, tree: bool = True) -> None:
    work = release.root.with_name(release.root.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    site = work / "venv" / SITE
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if _wanted(member, release.package_name):
                archive.extract(member, site)
    (work / "venv" / "bin").mkdir(parents=True)
    (work / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    if tree:
        (work / "tree" / "python").mkdir(parents=True)
        package = release.package_name
        shutil.copytree(site / package, work / "tree" / "python" / package)
    work.rename(release.root)


def _unpacked_once(rel: Release, unpack) -> Release:
    """`rel`, unpacked by `unpack(rel)` the first time (one process at a time: the cache is
    shared by concurrent test runs)."""
    if rel.root.is_dir():
        return rel
    rel.root.parent.mkdir(parents=True, exist_ok=True)
    with open(rel.root.parent.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not rel.root.is_dir():
            unpack(rel)
    return rel


def release(name: str, version: str) -> Release:
    """The unpacked release, downloading it on first use."""
    cache = cache_dir()
    return _unpacked_once(
        Release(name, version, cache / "unpacked" / f"{name}-{version}"),
        lambda rel: _unpack(_download(name, version, cache / "wheels"), rel),
    )


def release_wheel(name: str, version: str) -> Path:
    """The release's wheel as downloaded (cached), for tests that install it with pip."""
    return _download(name, version, cache_dir() / "wheels")


def sweep_release(name: str, version: str) -> Release:
    """A release of the sweep: a table release as `release` unpacks it, any other in the venv
    layout only (SGLang from its wheel, vLLM from its sdist), under <cache>/sweep/."""
    if (name, version) in RELEASES:
        return release(name, version)
    cache = cache_dir()

    def unpack(rel: Release) -> None:
        archive = None
        if name == "vllm":
            try:
                archive = _download_sdist(name, version, cache / "sdists")
            except NoSdist:
                pass  # its wheel, then
        if archive is not None:
            _unpack_sdist(archive, rel)
        else:
            _unpack(_download(name, version, cache / "wheels"), rel, tree=False)

    return _unpacked_once(Release(name, version, cache / "sweep" / f"{name}-{version}"), unpack)


# The files that decide how a draft checkpoint loads (the draft loader classes, the registry
# that maps an architecture to them, vLLM's EAGLE config that renames it): releases where these
# have the same bytes form one content group, and a planted checkpoint mistake, decided there,
# is audited on one release per group (tests/sweep_table.py).
LOADER_FILES = {
    "sglang": ("srt/models/llama_eagle3.py", "srt/models/registry.py",
               "srt/models/deepseek_nextn.py"),
    "vllm": ("model_executor/models/llama_eagle3.py", "model_executor/models/registry.py",
             "model_executor/models/deepseek_eagle3.py", "transformers_utils/configs/eagle.py"),
}  # fmt: skip


def content_group(rel: Release) -> str:
    """sha256 over the release's LOADER_FILES (an absent file counts as absent)."""
    digest = hashlib.sha256()
    for name in LOADER_FILES[rel.name]:
        path = rel.package / name
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"\0absent\0")
    return digest.hexdigest()


def all_releases() -> list[Release]:
    return [release(name, version) for name, version in RELEASES]


if __name__ == "__main__":
    for rel in all_releases() + [sweep_release(n, v) for n, v in SWEEP]:
        print(rel.label, rel.root, flush=True)


def install_wheel_files(wheel: Path, site: Path) -> list[str]:
    """A wheel's Python files and dist-info put into `site` as pip lays them out (its packages
    beside the engine's, its dist-info with METADATA and entry_points.txt), compiled
    extensions and data left out; returns the top-level names it installed."""
    tops: set[str] = set()
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            top = member.split("/", 1)[0]
            keep = (member.endswith(("/METADATA", "/top_level.txt", "/entry_points.txt"))
                    if top.endswith(".dist-info") else member.endswith(".py"))  # fmt: skip
            if keep and not top.endswith(".data"):
                archive.extract(member, site)
                tops.add(top)
    return sorted(tops)


def install_sdist_files(archive_path: Path, site: Path) -> None:
    """A source archive's Python package put into `site` as pip installs it (its egg-info as the
    dist-info: PKG-INFO as METADATA, entry_points.txt, top_level.txt); what a build would
    compile is left out."""
    with tarfile.open(archive_path) as archive:
        members = [m for m in archive if m.isfile()]
        top = members[0].name.split("/", 1)[0] + "/"
        info = site / (top[:-1] + ".dist-info")
        packages = {m.name[len(top):].split("/", 1)[0] for m in members
                    if m.name.endswith("/__init__.py")}  # fmt: skip
        for member in members:
            inner = member.name[len(top):]
            if inner.split("/", 1)[0] in packages and inner.endswith(".py"):
                out = site / inner
            elif inner == "PKG-INFO":
                out = info / "METADATA"
            elif inner.count("/") == 1 and inner.startswith(tuple(
                    p + ".egg-info/" for p in packages)) and inner.endswith(
                    ("/entry_points.txt", "/top_level.txt")):  # fmt: skip
                out = info / inner.rsplit("/", 1)[1]
            else:
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(archive.extractfile(member).read())


def pinned_requirement(rel: Release, dist: str) -> str:
    """The version of `dist` the release's METADATA pins with `==`."""
    for metadata in rel.site_packages.glob("*.dist-info/METADATA"):
        for line in metadata.read_text(errors="replace").splitlines():
            found = re.match(rf"Requires-Dist:\s*{re.escape(dist)}\s*==\s*([^\s;,]+)", line)
            if found:
                return found.group(1)
    raise ReleaseUnavailable(f"{rel.name} {rel.version} pins no {dist} version")


def sweep_release_with(name: str, version: str, beside: tuple[str, ...]) -> Release:
    """The sweep's release in a venv of its own with these distributions installed beside it,
    as `pip install` puts them, from their wheels (a source archive where there is none:
    arctic-inference); cached. "name==version", or "name": the version the release's own
    METADATA pins (`Requires-Dist: name==V`, what `pip install` of the release brings)."""
    base = sweep_release(name, version)
    cache = cache_dir()
    pinned = {dist: pinned_requirement(base, dist) for dist in beside if "==" not in dist}

    def unpack(rel: Release) -> None:
        work = rel.root.with_name(rel.root.name + ".partial")
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base.venv, work / "venv")
        for wanted in beside:
            dist, _, dist_version = wanted.partition("==")
            dist_version = dist_version or pinned[wanted]
            try:
                wheel = _download(dist, dist_version, cache / "wheels")
            except ReleaseUnavailable:
                archive = _download_sdist(dist.replace("-", "_"), dist_version, cache / "sdists")
                install_sdist_files(archive, work / "venv" / SITE)
            else:
                install_wheel_files(wheel, work / "venv" / SITE)
        work.rename(rel.root)

    tag = "+".join(b.replace("==", "-") if b not in pinned else f"{b}-{pinned[b]}"
                   for b in beside)  # fmt: skip
    return _unpacked_once(Release(name, version, cache / "sweep" / f"{name}-{version}+{tag}"),
                          unpack)  # fmt: skip


def engine_venv_with(engine: Release, wheels: list[Path], dest: Path) -> Path:
    """A venv at `dest` holding a copy of the engine release's site-packages and these
    wheels installed beside it (plugins found through its entry points); returns its
    site-packages."""
    site = dest / SITE
    shutil.copytree(engine.site_packages, site)
    (dest / "bin").mkdir(parents=True, exist_ok=True)
    (dest / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    for wheel in wheels:
        install_wheel_files(wheel, site)
    return site
