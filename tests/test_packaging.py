"""What a user installs, as they get it: the wheel and the sdist built from this checkout, each
installed into a fresh venv that cannot see the checkout, run from a directory outside it, as
root and as an ordinary user. (The rest of the suite runs an editable install, which hides a
package missing from the wheel: that once broke every command of an installed remotedbg.)"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.version import Version

from remotedbg import __version__
from tests.procs import persist_daemons, wait_for
from tests.unprivileged import NOBODY, shared_dir

REPO = Path(__file__).resolve().parent.parent
SYSTEM_PYTHON = "/usr/bin/python3"  # tests/run.sh installs it, with its venv module
USER_PATH = "/usr/local/bin:/usr/bin:/bin"  # an ordinary user's (root's may hold a private pyenv)

pytestmark = pytest.mark.network  # the venvs take the dependencies from the package registry


def _tree_packages() -> set[str]:
    """Every package of the source tree, as the import system names it."""
    found = {"remotedbg.playbooks"}
    for directory, _, files in os.walk(REPO / "remotedbg"):
        if "__init__.py" in files and "__pycache__" not in directory:
            found.add(os.path.relpath(directory, REPO).replace(os.sep, "."))
    return found


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: nothing that points into the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "REMOTEDBG_"))}
    env.update(COLUMNS="200", **extra)
    return env


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`python -m build`: the sdist, then the wheel built from that sdist (as pip would)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = out.glob("remotedbg-*.whl")
    (sdist,) = out.glob("remotedbg-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


@pytest.fixture(scope="module")
def shared() -> Iterator[Path]:
    with shared_dir() as path:  # the venvs must be readable by the ordinary user too
        yield path


@pytest.fixture(scope="module", params=["wheel", "sdist"])
def installed(request, artifacts: dict[str, Path], shared: Path) -> Path:
    """A fresh venv with remotedbg installed from one artifact; returns its bin/ folder. Made
    with the distribution's python3, as a user makes one (and one every user may run)."""
    venv = shared / f"venv-{request.param}"
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
         str(artifacts[request.param])],
        check=True, capture_output=True, timeout=900, cwd=shared, env=_clean_env(),
    )  # fmt: skip
    return venv / "bin"


def test_the_wheel_holds_every_package_of_the_tree(artifacts: dict[str, Path]) -> None:
    names = zipfile.ZipFile(artifacts["wheel"]).namelist()
    packages = {os.path.dirname(n).replace("/", ".") for n in names if n.startswith("remotedbg/")}
    assert _tree_packages() - packages == set()
    playbooks = {n for n in names if n.startswith("remotedbg/playbooks/")}
    shipped = {f"remotedbg/playbooks/{p.name}" for p in (REPO / "playbooks").glob("*.yaml")}
    assert shipped and shipped <= playbooks


def test_installed_cli_runs_outside_the_checkout(installed: Path, tmp_path: Path, box) -> None:
    def run(*args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(installed / "remotedbg"), *args],
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
            env=_clean_env(HOME=str(tmp_path), **env), stdin=subprocess.DEVNULL,
        )  # fmt: skip

    where = subprocess.run(
        [str(installed / "python"), "-c", "import remotedbg; print(remotedbg.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, env=_clean_env(), check=True,
    )  # fmt: skip
    assert where.stdout.startswith(str(installed.parent)), "imported from the venv, not the tree"

    version = run("--version")
    assert (version.returncode, version.stdout) == (0, f"remotedbg {__version__}\n")
    helped = run("--help")
    assert helped.returncode == 0 and "demo" in helped.stdout, helped.stderr
    demo = run("demo")
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "DEFECT" in demo.stdout and "d2t-absolute-ids" in demo.stdout
    # persistence on, as a user has it: the second command is served by the daemon the first
    # left (started from the venv), and `sessions --stop` leaves nothing running
    runtime = tmp_path / "run"
    box_env = {"REMOTEDBG_SSH_CONFIG": str(box.ssh_config), "REMOTEDBG_RUNTIME_DIR": str(runtime)}
    for _ in range(2):
        remote = run("glob", "-H", box.alias, "/etc/host*", **box_env)
        assert remote.returncode == 0, remote.stderr
        assert "/etc/hostname" in remote.stdout or "/etc/hosts" in remote.stdout
    [daemon] = json.loads(run("sessions", "--json", **box_env).stdout)["sessions"]
    assert daemon["commands"] == 2 and daemon["opened_ahead"] == "used"
    assert run("sessions", "--stop", **box_env).returncode == 0
    assert wait_for(lambda: not persist_daemons(runtime), timeout=5)


def test_installed_demo_runs_as_an_ordinary_user(installed: Path, shared: Path) -> None:
    """The README's first command as a user who is not root (CI runs as root: the ordinary user
    is what most people are; run by one, the suite is that user already)."""
    home = shared / "home-user"
    home.mkdir(exist_ok=True)
    as_user: list[str] = []
    if os.geteuid() == 0:
        user = pwd.getpwnam(NOBODY)
        os.chown(home, user.pw_uid, user.pw_gid)
        as_user = [shutil.which("runuser") or "runuser", "-u", NOBODY, "--"]
    demo = subprocess.run(
        [*as_user, str(installed / "remotedbg"), "demo", "--json"],
        capture_output=True, text=True, timeout=300, cwd=home,
        env=_clean_env(HOME=str(home), PATH=USER_PATH), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert json.loads(demo.stdout)["as_expected"] is True


def _floor(requirement: str) -> str:
    """The lowest version pyproject.toml allows for a dependency (`name>=X` in its list)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: pyproject.toml's tomli
        import tomli as tomllib

    listed = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [d for d in listed if re.match(rf"{requirement}\b", d)]
    return re.search(r">=([0-9][0-9.]*)", spec).group(1)


def test_the_oldest_typer_allowed_runs_the_cli(
    artifacts: dict[str, Path], shared: Path, box
) -> None:
    """pip keeps a typer already installed that satisfies the range: the oldest one allowed
    must run every command's parsing and help (one before 0.29 has no `type_descriptor`, and
    help pages once crashed on it), the demo and a command on a box."""
    venv = shared / "venv-oldest-typer"
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", str(venv)], check=True, timeout=300)

    def run(*words: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            list(words), capture_output=True, text=True, timeout=timeout, cwd=shared,
            env=_clean_env(HOME=str(shared), **env), stdin=subprocess.DEVNULL,
        )  # fmt: skip

    python, cli = str(venv / "bin" / "python"), str(venv / "bin" / "remotedbg")
    for wanted in (f"typer=={_floor('typer')}", str(artifacts["wheel"])):
        done = run(python, "-m", "pip", "install", "-q", wanted, timeout=900)
        assert done.returncode == 0, done.stderr[-2000:]
    kept = run(python, "-c", "import typer; print(typer.__version__)")
    assert Version(kept.stdout.strip()) == Version(_floor("typer"))
    for words in (["--help"], ["playbook", "spec-audit", "--help"], ["get", "--help"]):
        done = run(cli, *words)
        assert done.returncode == 0 and "Usage" in done.stdout, done.stderr[-2000:]
    assert re.search(r"--limit +N ", done.stdout)  # value names still come from the types
    assert "<str>" not in done.stdout  # and arguments have no type column
    demo = run(cli, "demo", "--json")
    assert demo.returncode == 0 and json.loads(demo.stdout)["as_expected"] is True, demo.stderr
    runtime = shared / "run-oldest-typer"
    box_env = {"REMOTEDBG_SSH_CONFIG": str(box.ssh_config), "REMOTEDBG_RUNTIME_DIR": str(runtime)}
    remote = run(cli, "glob", "-H", box.alias, "--limit", "5", "/etc/host*", **box_env)
    assert remote.returncode == 0 and "/etc/host" in remote.stdout, remote.stderr[-2000:]
    assert run(cli, "sessions", "--stop", **box_env).returncode == 0  # nothing left running
    assert wait_for(lambda: not persist_daemons(runtime), timeout=5)


def test_the_cli_imports_without_click_installed() -> None:
    """typer ships its own click: the CLI must not need the click package."""
    code = (
        "import sys; sys.modules['click'] = None; "
        "import remotedbg.front.cli, remotedbg.front.repl; print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout == "ok\n", result.stderr
