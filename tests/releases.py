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
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

SGLANG_RELEASES = ["0.4.6.post5", "0.4.10.post2", "0.5.1", "0.5.6", "0.5.14", "0.5.23"]
VLLM_RELEASES = ["0.8.5", "0.10.1.1", "0.11.2", "0.20.0", "0.33.0"]
RELEASES = [("sglang", v) for v in SGLANG_RELEASES] + [("vllm", v) for v in VLLM_RELEASES]

SITE = "lib/python3.11/site-packages"


class ReleaseUnavailable(RuntimeError):
    """The registry did not deliver the release (the message says why)."""


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
    def package(self) -> Path:
        """The installed package directory (site-packages/<name>)."""
        return self.site_packages / self.name

    @property
    def tree(self) -> Path:
        """A checkout-like tree: tree/python/<name>."""
        return self.root / "tree"

    @property
    def tree_package(self) -> Path:
        return self.tree / "python" / self.name

    @property
    def label(self) -> str:
        return f"{self.name}-{self.version}"


def cache_dir() -> Path:
    path = Path(os.environ.get("REMOTEDBG_TEST_CACHE", Path.home() / ".cache" / "remotedbg-tests"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def _download(name: str, version: str, dest: Path) -> Path:
    found = sorted(dest.glob(f"{name}-{version}-*.whl"))
    if found:
        return found[0]
    cmd = [
        sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
        "--python-version", "3.11", "--implementation", "cp",
        "--platform", "manylinux_2_35_x86_64", "--platform", "manylinux_2_34_x86_64",
        "--platform", "manylinux_2_28_x86_64",
        "--platform", "manylinux1_x86_64", "--platform", "any",
        f"{name}=={version}", "-d", str(dest),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    found = sorted(dest.glob(f"{name}-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        raise ReleaseUnavailable(f"pip download {name}=={version}: {' '.join(tail)}")
    return found[0]


def _wanted(member: str, name: str) -> bool:
    top = member.split("/", 1)[0]
    if top.endswith(".dist-info"):
        return member.endswith(("/METADATA", "/top_level.txt", "/entry_points.txt"))
    return top == name and member.endswith(".py")


def _unpack(wheel: Path, release: Release) -> None:
    work = release.root.with_name(release.root.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    site = work / "venv" / SITE
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if _wanted(member, release.name):
                archive.extract(member, site)
    (work / "venv" / "bin").mkdir(parents=True)
    (work / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    tree = work / "tree" / "python"
    tree.mkdir(parents=True)
    shutil.copytree(site / release.name, tree / release.name)
    work.rename(release.root)


def release(name: str, version: str) -> Release:
    """The unpacked release, downloading it on first use."""
    cache = cache_dir()
    rel = Release(name, version, cache / "unpacked" / f"{name}-{version}")
    if rel.root.is_dir():
        return rel
    (cache / "unpacked").mkdir(exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not rel.root.is_dir():
            wheel = _download(name, version, cache / "wheels")
            _unpack(wheel, rel)
    return rel


def all_releases() -> list[Release]:
    return [release(name, version) for name, version in RELEASES]


if __name__ == "__main__":
    for rel in all_releases():
        print(rel.label, rel.root)
