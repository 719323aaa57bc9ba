"""The docs site (docs/, mkdocs.yml) builds with --strict (a link to a page or anchor that is
not there fails it), and every relative link of the README's front page points at a file."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_docs_site_builds_strict(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(tmp_path / "site")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "findings" / "index.html").exists()


def test_every_page_is_in_the_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    listed = set(re.findall(r"([\w.-]+\.md)", config))
    assert pages == listed, pages ^ listed


def test_the_readme_is_a_front_page_whose_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", readme)
    assert links, "the front page links to the docs"
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, missing


def test_the_site_s_home_is_the_front_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert home == readme.replace("](docs/", "](")
