"""Draft checkpoints read in place over SSH: tensors ls/show/pull and vocab-check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from safetensors.numpy import load_file

from tests.checkpoints import write_eagle3_checkpoint, write_malformed_corpus, write_target_config

DEFECTS = {
    "absolute": "d2t-absolute-ids",
    "no-d2t": "d2t-missing",
    "float-d2t": "d2t-wrong-dtype",
    "t2d-mismatch": "t2d-mismatch",
    "out-of-range": "d2t-out-of-range",
    "vocab-size": "draft-vocab-size-mismatch",
    "eos-missing": "eos-not-in-draft-vocab",
}


@pytest.fixture(scope="module")
def drafts(tmp_path_factory):
    root = tmp_path_factory.mktemp("drafts")
    write_eagle3_checkpoint(root / "good", sharded=True)
    for defect in DEFECTS:
        write_eagle3_checkpoint(root / defect, defect=defect)
    write_target_config(root / "target", tokenizer=True)
    return root


def test_correct_full_size_draft_passes(cli, drafts):
    result = cli(
        "vocab-check",
        "-H",
        "testbox",
        "--json",
        str(drafts / "good"),
        "--target",
        str(drafts / "target"),
    )
    report = json.loads(result.stdout)
    assert result.returncode == 0, report["findings"]
    assert not [f for f in report["findings"] if f["severity"] == "error"]
    assert report["summary"]["format"] == "offsets"
    assert report["summary"]["draft_vocab"] == 32000
    assert report["summary"]["target_vocab"] == 163840


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_each_defect_raises_its_finding(cli, drafts, defect):
    result = cli(
        "vocab-check",
        "-H",
        "testbox",
        "--json",
        str(drafts / defect),
        "--target",
        str(drafts / "target"),
    )
    ids = {f["id"] for f in json.loads(result.stdout)["findings"]}
    assert DEFECTS[defect] in ids
    expected = 0 if defect == "eos-missing" else 1  # eos is a warning
    assert result.returncode == expected


def test_vocab_check_text_report_names_the_defect(cli, drafts):
    result = cli("vocab-check", "-H", "testbox", str(drafts / "absolute"))
    assert result.returncode == 1
    assert b"d2t-absolute-ids" in result.stdout and b"Traceback" not in result.stderr


@pytest.fixture(scope="module")
def numpy_free_python(tmp_path_factory):
    venv = tmp_path_factory.mktemp("venv") / "plain"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    assert subprocess.run([python, "-c", "import numpy"], capture_output=True).returncode != 0
    return str(python)


def test_remote_python_without_numpy_gives_the_same_answer(
    cli, drafts, numpy_free_python, tmp_path
):
    # a map past STDLIB_MAP_LIMIT (2^19 entries): numpy reads it where numpy imports
    large = write_eagle3_checkpoint(tmp_path / "large", 32000, 600000, defect="absolute", hidden=4)
    for draft in (large, drafts / "absolute"):
        args = ["vocab-check", "-H", "testbox", "--json", str(draft)]
        plain = json.loads(cli(*args, "--python", numpy_free_python).stdout)
        fast = json.loads(cli(*args).stdout)
        assert plain["summary"]["backend"] == "stdlib"
        assert fast["summary"]["backend"] == ("numpy" if draft == large else "stdlib")
        assert plain["findings"] == fast["findings"]
        assert {f["id"] for f in fast["findings"]} >= {"d2t-absolute-ids"}


def test_tensors_ls_and_show(cli, drafts):
    listing = json.loads(
        cli("tensors", "ls", "-H", "testbox", "--json", str(drafts / "good")).stdout
    )
    names = {t["name"] for t in listing["tensors"]}
    assert {"d2t", "t2d", "lm_head.weight"} <= names
    narrow = cli("tensors", "ls", "-H", "testbox", str(drafts / "good"), env={"COLUMNS": "80"})
    shown = {line.split()[0] for line in narrow.stdout.decode().splitlines()[1:] if line.strip()}
    assert names <= shown  # at 80 columns the names stay whole; the file column is cut first
    assert len(listing["files"]) == 2
    stats = json.loads(
        cli("tensors", "show", "-H", "testbox", "--json", str(drafts / "good"), "d2t").stdout
    )
    d2t = load_file(str(next((drafts / "good").glob("*00001*.safetensors"))))["d2t"]
    assert stats["shape"] == [32000] and stats["min"] == int(d2t.min())
    assert stats["head"] == d2t[:10].tolist()


@pytest.mark.parametrize(
    "alias,method", [("testbox", "exec"), ("nosftp", "exec"), ("local", "exec")]
)
def test_pull_moves_only_the_named_tensors(cli, drafts, tmp_path, alias, method):
    out = tmp_path / "pulled.safetensors"
    result = cli(
        "tensors", "pull", "-H", alias, "--json", str(drafts / "good"), "d2t", "t2d", "-o", str(out)
    )
    summary = json.loads(result.stdout)
    assert result.returncode == 0 and summary["method"] == [method]
    pulled = load_file(str(out))
    original = {}
    for shard in (drafts / "good").glob("*.safetensors"):
        original.update(load_file(str(shard)))
    assert set(pulled) == {"d2t", "t2d"}
    np.testing.assert_array_equal(pulled["d2t"], original["d2t"])
    np.testing.assert_array_equal(pulled["t2d"], original["t2d"])
    assert summary["tensor_bytes"] == 32000 * 8 + 163840


def test_malformed_checkpoints_give_one_line_errors(cli, persistent, tmp_path):
    """As a user meets them: through the persistent session a user's second command has, and
    (the first case) as a process of its own."""
    corpus = write_malformed_corpus(tmp_path / "bad")
    for i, (name, path) in enumerate(corpus.items()):
        run = cli if i == 0 else persistent
        result = run("tensors", "ls", "-H", "testbox", str(path))
        assert result.returncode == 4, name
        lines = result.stderr.decode().strip().splitlines()
        assert len(lines) == 1 and b"Traceback" not in result.stderr, (name, lines)
        check = run("vocab-check", "-H", "testbox", "--json", str(path))
        report = json.loads(check.stdout)
        assert not report["findings"] and report["unknown"][0]["code"] == "unreadable", name
        assert check.returncode == 4, name


def test_missing_path_reads_like_a_glob_that_matched_nothing(cli, tmp_path):
    result = cli("tensors", "ls", "-H", "testbox", str(tmp_path / "nope"))
    assert result.returncode == 1
    assert (
        result.stderr.decode()
        == f"remotedbg: testbox: {tmp_path / 'nope'}: no such file or directory\n"
    )


def test_a_mistyped_tensor_name_suggests_the_near_ones(cli, drafts):
    for typo, meant in [
        ("d2tt", "d2t"),
        ("midlayer.self_attn.q_prj.weight", "midlayer.self_attn.q_proj.weight"),
    ]:
        result = cli("tensors", "show", "-H", "testbox", str(drafts / "good"), typo)
        lines = result.stderr.decode().splitlines()
        assert result.returncode == 1 and len(lines) == 1, lines
        assert f"no tensor named {typo!r}" in lines[0] and f"did you mean {meant}" in lines[0]
        assert "remotedbg.agent" not in lines[0] and "Error" not in lines[0]


def test_sftp_reads_when_the_box_cannot_stream(ssh_world, drafts, monkeypatch):
    from remotedbg.remote.fetch import fetch_range
    from remotedbg.session.result import RunResult

    shard = next((drafts / "good").glob("*00001*.safetensors"))
    with ssh_world.box.session() as session:
        # a box with no executor (no python3) and no dd or tail that can read
        monkeypatch.setattr(session, "read_file", lambda *args: None)
        monkeypatch.setattr(
            session,
            "read_stream",
            lambda command, sink, limit, label: RunResult(
                command, 127, b"", b"tail: not found", 0.0
            ),
        )
        chunks: list[bytes] = []
        method = fetch_range(session, str(shard), 100, 3 << 20, chunks.append)
    assert method == "sftp"
    with open(shard, "rb") as handle:
        handle.seek(100)
        assert b"".join(chunks) == handle.read(3 << 20)


def test_no_stream_and_no_sftp_is_a_clear_error(ssh_world, drafts, monkeypatch):
    from remotedbg.errors import RemoteCommandError
    from remotedbg.remote.fetch import fetch_range
    from remotedbg.session.result import RunResult

    with ssh_world.nosftp.session() as session:
        monkeypatch.setattr(session, "read_file", lambda *args: None)
        monkeypatch.setattr(
            session,
            "read_stream",
            lambda command, sink, limit, label: RunResult(
                command, 127, b"", b"tail: not found", 0.0
            ),
        )
        with pytest.raises(RemoteCommandError, match="tail: not found"):
            fetch_range(session, "/etc/hostname", 0, 4, lambda data: None)


def test_a_proven_defect_wins_over_an_unreadable_target(cli, drafts, tmp_path):
    result = cli(
        "vocab-check",
        "-H",
        "testbox",
        "--json",
        str(drafts / "absolute"),
        "--target",
        str(tmp_path / "no-such-target"),
    )
    report = json.loads(result.stdout)
    assert {f["id"] for f in report["findings"]} == {"d2t-absolute-ids"}
    assert report["unknown"][0]["subject"].endswith("no-such-target")
    assert result.returncode == 1  # a proven defect wins over what could not be read


def test_pull_keeps_an_existing_file_and_follows_no_planted_link(cli, drafts, tmp_path):
    out = tmp_path / "map.safetensors"
    out.write_bytes(b"precious")
    args = ["tensors", "pull", "-H", "testbox", str(drafts / "good"), "d2t", "-o", str(out)]
    refused = cli(*args)
    assert refused.returncode == 1 and b"kept (--force replaces it)" in refused.stderr
    assert out.read_bytes() == b"precious"
    # the same rule as get's: a local file that exists is kept, said, exit 1
    (tmp_path / "config.json").write_bytes(b"mine")
    kept = cli("get", "-H", "testbox", str(drafts / "good" / "config.json"), str(tmp_path))
    assert kept.returncode == refused.returncode and b"kept (--force replaces it)" in kept.stderr
    assert (tmp_path / "config.json").read_bytes() == b"mine"
    # the old predictable temporary name, planted as a link to a file it must not touch
    victim = tmp_path / "victim"
    victim.write_bytes(b"untouched")
    (tmp_path / "map.safetensors.partial").symlink_to(victim)
    forced = cli(*args, "--force")
    assert forced.returncode == 0, forced.stderr
    assert set(load_file(str(out))) == {"d2t"}
    assert victim.read_bytes() == b"untouched"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".map.safetensors.")]


def test_pull_failure_leaves_no_partial_file(cli, drafts, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "nothing.safetensors"
    result = cli(
        "tensors", "pull", "-H", "testbox", str(drafts / "good"), "no_such", "-o", str(out)
    )
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1
    assert list(out_dir.iterdir()) == []


def test_a_write_that_fails_midway_removes_its_temporary_file(tmp_path):
    from remotedbg.checkpoints.safetensors_writer import TensorSlot, write_safetensors

    def broken(slot, handle):
        handle.write(b"\0" * 3)
        raise ConnectionError("the shard shrank during the read")

    with pytest.raises(ConnectionError):
        write_safetensors(tmp_path / "x.safetensors", [TensorSlot("d2t", "I64", [4], 32)], broken)
    assert list(tmp_path.iterdir()) == []


def test_an_index_naming_files_outside_the_checkpoint_is_refused(cli, tmp_path):
    ckpt = tmp_path / "escape"
    ckpt.mkdir()
    (ckpt / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"d2t": "../../../../../../etc/passwd"}})
    )
    result = cli("tensors", "ls", "-H", "testbox", str(ckpt))
    assert result.returncode == 4
    assert b"outside the checkpoint" in result.stderr and b"root:" not in result.stderr


def test_piped_ls_never_cuts_a_column(cli, tmp_path):
    """Into a pipe the table is as wide as its widest row, whatever COLUMNS says: the shard's
    name stays whole (it was cut to `mo…` at 80 columns)."""
    draft = write_eagle3_checkpoint(tmp_path / "a-draft-with-a-long-name", sharded=True)
    listing = json.loads(cli("tensors", "ls", "-H", "testbox", "--json", str(draft)).stdout)
    piped = cli("tensors", "ls", "-H", "testbox", str(draft), env={"COLUMNS": "40"})
    assert piped.returncode == 0, piped.stderr
    rows = {line.split()[0]: line.split() for line in piped.stdout.decode().splitlines()[1:-1]}
    for tensor in listing["tensors"]:
        name, file = tensor["name"], tensor["file"].rsplit("/", 1)[-1]
        assert rows[name][-1] == file and "…" not in rows[name][-1], rows[name]
    assert all(len(line) > 40 for line in piped.stdout.decode().splitlines()[1:-1])


def test_a_config_nested_too_deep_is_unknown_not_ok(cli, tmp_path):
    """A config.json nested 100,000 levels cannot be parsed (json's RecursionError): the
    checks that need it cannot decide, so the verdict is inconclusive (exit 4), the reason
    listed under `unknown`, one line of it, no traceback."""
    draft = write_eagle3_checkpoint(tmp_path / "deep")
    (draft / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    result = cli("vocab-check", "-H", "testbox", "--json", str(draft))
    report = json.loads(result.stdout)
    assert result.returncode == 4, report
    assert [u["code"] for u in report["unknown"]] == ["unreadable"]
    assert "config.json" in report["unknown"][0]["reason"]
    assert "\n" not in report["unknown"][0]["reason"]
    text = cli("vocab-check", "-H", "testbox", str(draft))
    assert text.returncode == 4 and b"Traceback" not in text.stderr + text.stdout
    assert b"config.json" in text.stdout + text.stderr


def _bulk_checkpoint(tmp_path, mib: int = 40):
    """A tensor above the bulk threshold (session/ssh.py BULK_BYTES): its own channel."""
    from safetensors.numpy import save_file

    data = np.random.default_rng(7).integers(0, 255, mib << 20, dtype=np.uint8)
    ckpt = tmp_path / "bulk"
    ckpt.mkdir()
    save_file({"big": data}, str(ckpt / "model.safetensors"))
    return ckpt, data


def test_a_bulk_read_that_falls_behind_still_gets_every_byte_in_order(box, tmp_path):
    """A sink slower than the wire lets the channel's buffer fill towards its window:
    every byte still arrives once and in order, and the reads do not slow down as it fills
    (paramiko's own buffer moved the whole rest on each partial read)."""
    from remotedbg.remote import calls
    from remotedbg.remote.fetch import fetch_range
    from remotedbg.remote.primitives import Remote
    from remotedbg.session import ConnectOptions, open_session

    ckpt, data = _bulk_checkpoint(tmp_path)
    got = bytearray()

    def slow_sink(chunk: bytes) -> None:
        if len(got) < (8 << 20):
            time.sleep(0.02)  # the first reads lag, so the rest piles up behind them
        got.extend(chunk)

    with open_session(ConnectOptions(host="testbox", ssh_config=str(box.ssh_config))) as session:
        found = Remote(session).call(calls.TensorRanges(path=str(ckpt), names=["big"]))
        tensor = found["tensors"][0]
        method = fetch_range(
            session, tensor["file"], tensor["offset"], tensor["length"], slow_sink
        )
    assert method == "exec" and len(got) == data.size
    assert bytes(got) == data.tobytes()


def test_a_file_cut_while_it_is_read_is_an_error_not_a_short_copy(box, tmp_path):
    """The file shrinks while its bytes move (a checkpoint being rewritten in place): the read
    is one error saying so, never a zero-padded copy passed on as whole; and the session's
    executor, which sent the file, serves the next command."""
    from remotedbg.errors import RemoteCommandError
    from remotedbg.remote.fetch import fetch_range
    from remotedbg.session import ConnectOptions, open_session

    path = tmp_path / "shrinking.bin"
    path.write_bytes(os.urandom(64 << 20))  # far past what the channel's window lets fly ahead
    got = bytearray()

    def cut_at_first_chunk(chunk: bytes) -> None:
        if not got:
            os.truncate(path, 1 << 20)
        got.extend(chunk)

    with open_session(ConnectOptions(host="testbox", ssh_config=str(box.ssh_config))) as session:
        with pytest.raises(RemoteCommandError, match=r"lost \d+ of those bytes while it was read"):
            fetch_range(session, str(path), 0, 64 << 20, cut_at_first_chunk)
        assert session.run("echo still here").stdout == "still here\n"


def test_a_fifo_is_not_opened_by_the_executors_file_read(box, tmp_path):
    """A FIFO (or a device) is no regular file: the executor's read neither blocks on it nor
    reads it, and leaves it to the read command, whose stall limits hold."""
    from remotedbg.session import ConnectOptions, open_session

    fifo = tmp_path / "shard.safetensors"
    os.mkfifo(fifo)
    with open_session(ConnectOptions(host="testbox", ssh_config=str(box.ssh_config))) as session:
        start = time.monotonic()
        assert session.read_file(str(fifo), 0, 100, lambda data: None, "read") is None
        assert time.monotonic() - start < 10
        assert session.run("echo next").stdout == "next\n"


def test_the_boxs_reader_falls_back_to_plain_reads_where_sendfile_cannot(tmp_path, monkeypatch):
    """The executor's reading child (agent/executor.py) on a system whose sendfile refuses a
    pipe (macOS wants a socket) or a filesystem without it: the same bytes, by pread."""
    import errno

    from remotedbg.agent import executor

    data = os.urandom(3 << 20)
    source = tmp_path / "shard.bin"
    source.write_bytes(data)

    def refuse(*args):
        raise OSError(errno.ENOTSOCK, "Socket operation on non-socket")

    monkeypatch.setattr(executor.os, "sendfile", refuse)
    out_read, out_write = os.pipe()
    status_read, status_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child the executor forks; _send_file ends it
        os.dup2(out_write, 1)
        executor._send_file(os.open(source, os.O_RDONLY), 1000, len(data) - 1000, status_write)
    os.close(out_write)
    os.close(status_write)
    got = bytearray()
    while chunk := os.read(out_read, 1 << 20):
        got.extend(chunk)
    status = os.read(status_read, 4096)
    os.waitpid(pid, 0)
    os.close(out_read)
    os.close(status_read)
    assert bytes(got) == data[1000:]
    assert json.loads(status) == {"short": 0, "error": None}


def test_a_pull_the_local_disk_cannot_hold_is_one_line_before_any_byte(cli, tmp_path):
    """The output's blocks are taken before the transfer: a file-size limit (as a full disk)
    ends the pull at once, exit 2, one line naming the local file (it was `connection lost`,
    exit 3, after the bytes had moved), and nothing is left."""
    ckpt, _ = _bulk_checkpoint(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "big.safetensors"
    result = cli(
        "tensors", "pull", "-H", "testbox", str(ckpt), "big", "-o", str(out),
        prefix=["prlimit", f"--fsize={1 << 20}"],
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.decode() == (
        f"remotedbg: --output {out}: File too large (nothing written)\n"
    )
    assert list(out_dir.iterdir()) == []


def test_a_bulk_pull_replacing_a_file_is_whole(cli, tmp_path):
    ckpt, data = _bulk_checkpoint(tmp_path)
    out = tmp_path / "big.safetensors"
    for _ in range(2):  # the second replaces the first (--force), preallocated
        result = cli("tensors", "pull", "-H", "testbox", str(ckpt), "big", "-o", str(out),
                     "--force")  # fmt: skip
        assert result.returncode == 0, result.stderr
        np.testing.assert_array_equal(load_file(str(out))["big"], data)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
