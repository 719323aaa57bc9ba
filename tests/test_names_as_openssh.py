"""Names as OpenSSH's clients read them: `get`, `glob` and `cat` beside `sftp -b` and `scp`,
typed the same against the suite's sshd, on the files of openssh-portable's regress/scp.sh
("unmatched glob file remote->local": `copy.glob[123]`) and regress/sftp-glob.sh (`g-wild*`
beside other `g-wild` names, `g-q space`, `g-quote"`, `g-sl\\ash`, `g-slash\\`).

What the clients take is written from their code (openssh-portable, scp.c and sftp.c at
0ef0f5a8): scp globs a remote source with GLOB_NOCHECK (scp.c sink_sftp, `sftp_glob(...,
GLOB_NOCHECK|GLOB_MARK`), so a pattern that matches nothing is taken as the name it spells;
sftp's `get` globs without it (sftp.c process_get, `sftp_glob(..., GLOB_MARK`), so the same
word is "not found"; both read a backslash as glob(3) does (the next character plain), and
sftp's own line parser (sftp.c makeargv) keeps `\\*`, `\\?`, `\\[`, `\\\\` for the glob and
undoes the other escapes (`\\ `, `\\"`), so each word below means the same to all three."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

SFTP, SCP = shutil.which("sftp"), shutil.which("scp")
pytestmark = pytest.mark.skipif(not (SFTP and SCP), reason="OpenSSH's sftp and scp are needed")

NAMES = ["copy.glob[123]", "g-wild*", "g-wild1", "g-wild2", "g-q space", 'g-quote"',
         "g-sl\\ash", "g-slash\\", "run[1]/x.log", "run1/y.log"]  # fmt: skip
WILD = {"g-wild*", "g-wild1", "g-wild2"}

# word typed -> (what sftp's get takes, what scp takes), as base names
CASES = {
    "copy.glob[123]": (set(), {"copy.glob[123]"}),  # regress/scp.sh: scp's GLOB_NOCHECK
    "copy.glob\\[123]": ({"copy.glob[123]"}, {"copy.glob[123]"}),
    "g-wild\\*": ({"g-wild*"}, {"g-wild*"}),  # regress/sftp-glob.sh "escaped glob"
    "g-wild?": (WILD, WILD),
    "g-wild[12]": ({"g-wild1", "g-wild2"}, {"g-wild1", "g-wild2"}),
    "g-q\\ space": ({"g-q space"}, {"g-q space"}),  # "escaped space"
    'g-quote\\"': ({'g-quote"'}, {'g-quote"'}),  # "escaped quote"
    "g-sl\\\\ash": ({"g-sl\\ash"}, {"g-sl\\ash"}),  # "escaped slash"
    "g-slash\\\\": ({"g-slash\\"}, {"g-slash\\"}),  # "escaped slash at EOL"
    "run\\[1]/*.log": ({"x.log"}, {"x.log"}),
    # both clients glob a name that exists as typed; remotedbg takes that name (DIFFERENT)
    "g-wild*": (WILD, WILD),
    "run[1]/*.log": ({"y.log"}, {"y.log"}),
}
# deliberate (README, "Globs"): a path part that exists as typed is that name
DIFFERENT = {"g-wild*": {"g-wild*"}, "run[1]/*.log": {"x.log"}}


@pytest.fixture
def named(tmp_path: Path) -> Path:
    top = tmp_path / "names"
    for name in NAMES:
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text(f"{name}\n")
    return top


def _taken(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def sftp_gets(box, top: Path, into: Path) -> dict[str, set[str]]:
    """Each word as `get` in one `sftp -b` batch (`-get`: a word that matches nothing does not
    end the batch), each into a folder of its own."""
    lines = []
    for index, word in enumerate(CASES):
        (into / str(index)).mkdir(parents=True)
        lines.append(f"-get {top}/{word} {into / str(index)}/")
    batch = into / "batch"
    batch.write_text("\n".join(lines) + "\n")
    subprocess.run([SFTP, "-q", "-F", str(box.ssh_config), "-b", str(batch), box.alias],
                   capture_output=True, timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    return {word: _taken(into / str(index)) for index, word in enumerate(CASES)}


def scp_gets(box, top: Path, into: Path) -> dict[str, set[str]]:
    """Each word as one scp's source, through one shared connection (a second each else)."""
    shared = ["-o", "ControlMaster=auto", "-o", f"ControlPath={into}/mux", "-o",
              "ControlPersist=30"]  # fmt: skip
    taken = {}
    for index, word in enumerate(CASES):
        folder = into / str(index)
        folder.mkdir(parents=True)
        subprocess.run([SCP, "-q", "-F", str(box.ssh_config), *shared, f"{box.alias}:{top}/{word}",
                        f"{folder}/"], capture_output=True, timeout=60,
                       stdin=subprocess.DEVNULL)  # fmt: skip
        taken[word] = _taken(folder)
    subprocess.run(["ssh", "-F", str(box.ssh_config), *shared, "-O", "exit", box.alias],
                   capture_output=True, timeout=10, stdin=subprocess.DEVNULL)  # fmt: skip
    return taken


def test_get_glob_and_cat_take_the_files_scp_and_sftp_take(persistent, box, named, tmp_path):
    cli = persistent  # one session for the dozen commands
    sftp = sftp_gets(box, named, tmp_path / "sftp")
    scp = scp_gets(box, named, tmp_path / "scp")
    assert sftp == {word: ours for word, (ours, _) in CASES.items()}
    assert scp == {word: theirs for word, (_, theirs) in CASES.items()}
    words = [f"{named}/{word}" for word in CASES]
    globbed = json.loads(cli("glob", "-H", "testbox", "--json", *words).stdout)["results"]
    read = json.loads(cli("cat", "-H", "testbox", "--json", *words).stdout)["files"]
    seen, wanted = {}, {}
    for index, (word, (_, by_scp)) in enumerate(CASES.items()):
        wanted[word] = (DIFFERENT.get(word, by_scp),) * 3 + (0,)
        folder = tmp_path / "ours" / str(index)
        result = cli("get", "-H", "testbox", f"{named}/{word}", f"{folder}/")
        matches = next(e["matches"] for e in globbed if e["pattern"] == f"{named}/{word}")
        printed = [e for e in read if e["pattern"] == f"{named}/{word}" and "path" in e]
        seen[word] = ({Path(m).name for m in matches}, _taken(folder),
                      {Path(e["path"]).name for e in printed}, result.returncode)  # fmt: skip
        assert all((folder / Path(m).name).read_text() == Path(m).read_text() for m in matches)
        assert all(e["text"] == Path(e["path"]).read_text() for e in printed), word
    assert seen == wanted  # per word: what glob, get and cat take, get's exit status
    grepped = json.loads(cli("grep", "-H", "testbox", "--json", "-F", "g", f"{named}/g-wild\\*",
                             f"{named}/g-q\\ space").stdout)["records"]  # fmt: skip
    assert sorted(Path(r["path"]).name for r in grepped) == ["g-q space", "g-wild*"]


def test_brackets_escapes_and_hidden_names_read_as_glob3(tmp_path):
    """The rest of glob(3)'s reading (OpenBSD glob.c, as sftp-server's client uses it): inside
    `[...]` an escaped `]` or `-` is a member, a reversed range matches nothing, a first `]` is
    a member, `[` without its `]` is plain; a name with a leading dot only for a written dot;
    `**` then an escaped name below it."""
    from remotedbg.agent.fsops import expand

    for name in ["a]", "a-", "ab", "a[", ".hidden", "deep/x/k*", "deep/x/k1"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")

    def names(pattern: str) -> list[str]:
        return [Path(p).relative_to(tmp_path).as_posix() for p in expand(f"{tmp_path}/{pattern}")]

    assert names("a[\\]]") == ["a]"] and names("a[]]") == ["a]"]
    assert names("a[\\-c]") == ["a-"] and names("a[a-c]") == ["ab"]
    assert names("a[c-a]") == [] and names("a[!]b-]") == ["a["]
    assert names("a[") == ["a["] and names("a\\[") == ["a["]
    assert names("*hidden") == [] and names("\\.h*") == [".hidden"]
    assert names("**/k\\*") == ["deep/x/k*"] and names("**/k?") == ["deep/x/k*", "deep/x/k1"]
    assert expand(f"{tmp_path}/d*/x/") == [f"{tmp_path}/deep/x/"]  # a trailing slash kept


def test_get_r_of_a_directory_named_like_a_glob_copies_what_scp_r_copies(persistent, box, tmp_path):
    """regress/scp.sh "unmatched glob dir recursive remote->local": `copy.dd.glob[456]` with
    `copy` and `copy.glob[1234]` in it, copied down whole by `scp -r` and by `get -r`."""
    tree = tmp_path / "copy.dd.glob[456]"
    tree.mkdir()
    for name in ("copy", "copy.glob[1234]"):
        (tree / name).write_text(f"{name}\n")
    theirs, ours = tmp_path / "scp", tmp_path / "ours"
    subprocess.run([SCP, "-q", "-r", "-F", str(box.ssh_config), f"{box.alias}:{tree}",
                    str(theirs)], check=True, capture_output=True, timeout=60,
                   stdin=subprocess.DEVNULL)  # fmt: skip
    result = persistent("get", "-H", "testbox", "-r", str(tree), str(ours))
    assert result.returncode == 0, result.stderr

    def files(top: Path) -> dict[str, str]:
        return {p.relative_to(top).as_posix(): p.read_text() for p in top.rglob("*")}

    wanted = {"copy": "copy\n", "copy.glob[1234]": "copy.glob[1234]\n"}
    assert files(ours) == files(theirs) == wanted
