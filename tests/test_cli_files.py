"""The primitives as a user runs them: the CLI in a subprocess against the real sshd."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.procs import pids_with_argv, wait_for


@pytest.fixture
def models_dir(tmp_path):
    models = tmp_path / "sglang" / "python" / "sglang" / "srt" / "models"
    models.mkdir(parents=True)
    for name in [
        "llama_eagle3.py",
        "kimi_k25_eagle3.py",
        "qwen2_eagle.py",
        "llama.py",
        "qwen3_next_mtp.py",
    ]:
        (models / name).write_text("import torch\n\nhot_token_id = d2t + torch.arange(n)\n")
    (models / "__pycache__").mkdir()
    (models / "__pycache__" / "llama_eagle3.cpython-311.pyc").write_bytes(b"\0hot_token_id")
    return models


def test_glob_without_match_suggests_the_real_names(cli, models_dir):
    result = cli("glob", "-H", "testbox", str(models_dir / "eagle*.py"))
    assert result.returncode == 1
    err = result.stderr.decode()
    assert "no match" in err
    for name in ["llama_eagle3.py", "kimi_k25_eagle3.py", "qwen2_eagle.py"]:
        assert name in err
    assert "llama.py" not in err.split("similar names")[0]


def test_glob_matches_are_expanded_remotely(cli, models_dir):
    result = cli("glob", "-H", "testbox", "--json", str(models_dir / "*eagle3.py"))
    assert result.returncode == 0
    doc = json.loads(result.stdout)
    assert [os.path.basename(p) for p in doc["results"][0]["matches"]] == [
        "kimi_k25_eagle3.py",
        "llama_eagle3.py",
    ]


def test_glob_many_matches_and_awkward_names(cli, tmp_path):
    many = tmp_path / "many"
    many.mkdir()
    for i in range(600):
        (many / f"shard-{i:05d}.safetensors").write_bytes(b"")
    awkward = [
        "with space.py",
        "quote'in.py",
        'dq"x.py',
        "new\nline.py",
        "$(touch pwned).py",
        "semi;colon.py",
        "star*.py",
    ]
    for name in awkward:
        (many / name).write_bytes(b"")
    result = cli("glob", "-H", "testbox", "--json", str(many / "*.safetensors"), str(many / "*.py"))
    assert result.returncode == 0
    first, second = json.loads(result.stdout)["results"]
    assert first["count"] == 600
    assert sorted(os.path.basename(p) for p in second["matches"]) == sorted(awkward)
    assert not (tmp_path / "pwned").exists() and not os.path.exists("pwned")


def test_tilde_expands_to_the_remote_home(cli):
    result = cli("glob", "-H", "testbox", "--json", "~")
    assert json.loads(result.stdout)["results"][0]["matches"] == [os.path.expanduser("~")]


def test_double_star_recurses(cli, models_dir, tmp_path):
    result = cli("glob", "-H", "testbox", "--json", str(tmp_path / "**" / "*_eagle3.py"))
    names = [os.path.basename(p) for p in json.loads(result.stdout)["results"][0]["matches"]]
    assert names == ["kimi_k25_eagle3.py", "llama_eagle3.py"]


def test_find_prunes_pycache_and_filters(cli, models_dir, tmp_path):
    result = cli("find", "-H", "testbox", "--json", str(tmp_path), "--name", "*eagle*", "-t", "f")
    paths = [r["path"] for r in json.loads(result.stdout)["results"]]
    assert sorted(os.path.basename(p) for p in paths) == [
        "kimi_k25_eagle3.py",
        "llama_eagle3.py",
        "qwen2_eagle.py",
    ]
    checkout = tmp_path / "sglang"
    shallow = cli("find", "-H", "testbox", "--json", str(checkout), "--max-depth", "1")
    assert [r["path"] for r in json.loads(shallow.stdout)["results"]] == [str(checkout / "python")]


def test_grep_records_and_context(cli, models_dir):
    (models_dir / "binary.bin").write_bytes(b"\0\1hot_token_id\0")
    result = cli(
        "grep",
        "-H",
        "testbox",
        "--json",
        "-C",
        "1",
        r"hot_token_id\s*=",
        str(models_dir / "*eagle*.py"),
        str(models_dir / "binary.bin"),
    )
    assert result.returncode == 0
    records = json.loads(result.stdout)["records"]
    assert sorted(os.path.basename(r["path"]) for r in records) == [
        "kimi_k25_eagle3.py",
        "llama_eagle3.py",
        "qwen2_eagle.py",
    ]
    assert all(r["line"] == 3 and r["before"] == [{"line": 2, "text": ""}] for r in records)
    plain = cli("grep", "-H", "testbox", "hot_token_id", str(models_dir / "llama_eagle3.py"))
    assert (
        plain.stdout.decode()
        == f"{models_dir / 'llama_eagle3.py'}:3:hot_token_id = d2t + torch.arange(n)\n"
    )
    nothing = cli("grep", "-H", "testbox", "no_such_symbol", str(models_dir))
    assert nothing.returncode == 1


def test_grep_pattern_is_data_not_shell(cli, models_dir, tmp_path):
    canary = tmp_path / "canary"
    result = cli("grep", "-H", "testbox", f"$(touch {canary})'\"; touch {canary}", str(models_dir))
    assert result.returncode == 1 and not canary.exists()


def test_cat_tail_binary_guard_and_fifo(cli, tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(b"decode batch %d accept len 1.9\n" % i for i in range(200_000)))
    result = cli("cat", "-H", "testbox", "--tail", "2", str(log))
    assert result.returncode == 0
    assert (
        result.stdout == b"decode batch 199998 accept len 1.9\ndecode batch 199999 accept len 1.9\n"
    )
    capped = cli("cat", "-H", "testbox", "--tail", "100000", "--max-bytes", "64", str(log))
    assert capped.stdout == b"decode batch 199999 accept len 1.9\n"  # no partial first line
    blob = tmp_path / "model.safetensors"
    blob.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}\x00\x1b[2J")
    guarded = cli("cat", "-H", "testbox", str(blob))
    assert guarded.returncode == 0 and guarded.stdout == b""
    assert (
        guarded.stderr.decode()
        == f"{blob}: binary file ({blob.stat().st_size} bytes), not printed; --binary prints it\n"
    )
    assert cli("cat", "-H", "testbox", "--binary", str(blob)).stdout == blob.read_bytes()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    blocked = cli("cat", "-H", "testbox", "--timeout", "20", str(fifo))
    assert time.monotonic() - started < 10  # never opened, so nothing waits for a writer
    assert blocked.returncode == 1 and blocked.stderr.decode() == f"{fifo}: not a regular file\n"


def test_cat_prints_bytes_and_reports_missing(cli, models_dir):
    result = cli("cat", "-H", "testbox", str(models_dir / "llama_eagle3.py"))
    assert result.stdout == (models_dir / "llama_eagle3.py").read_bytes()
    missing = cli("cat", "-H", "testbox", str(models_dir / "eagle3.py"))
    assert missing.returncode == 1 and b"llama_eagle3.py" in missing.stderr


def test_run_passes_the_exit_status_and_quotes_arguments(cli, tmp_path):
    result = cli("run", "-H", "testbox", "--", "printf", "%s|", "a b", "$HOME", "x;y")
    assert result.stdout == b"a b|$HOME|x;y|"
    failed = cli("run", "-H", "testbox", "--", "sh", "-c", "exit 42")
    assert failed.returncode == 42
    shell = cli("run", "-H", "testbox", "--shell", "--", "echo $((2+3)) | tr 5 f")
    assert shell.stdout == b"f\n"


def test_run_json_is_one_document(cli):
    result = cli("run", "-H", "testbox", "--json", "--", "echo", "hi")
    doc = json.loads(result.stdout)
    assert doc["stdout"] == "hi\n" and doc["exit_status"] == 0


def test_run_timeout_exits_255_and_leaves_nothing(cli):
    start = time.monotonic()
    result = cli("run", "-H", "testbox", "--timeout", "1", "--", "sleep", "36.5")
    assert result.returncode == 255  # as ssh: the remote status is passed through, ours is 255
    assert time.monotonic() - start < 6
    assert b"timed out" in result.stderr and len(result.stderr.decode().strip().splitlines()) == 1
    assert wait_for(lambda: not pids_with_argv("sleep", "36.5"))


def test_ctrl_c_stops_the_remote_command_within_a_second(box, isolated_state):
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(box.ssh_config))
    process = subprocess.Popen(
        [sys.executable, "-m", "remotedbg", "run", "-H", "testbox", "--", "sleep", "37.5"],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert wait_for(lambda: bool(pids_with_argv("sleep", "37.5")), timeout=10)
    start = time.monotonic()
    process.send_signal(signal.SIGINT)
    process.wait(5)
    assert time.monotonic() - start < 1.5
    assert process.returncode == 130
    assert wait_for(lambda: not pids_with_argv("sleep", "37.5"), timeout=2)


def test_host_local_runs_the_same_commands(cli, models_dir):
    result = cli("glob", "-H", "local", "--json", str(models_dir / "*eagle3.py"))
    assert json.loads(result.stdout)["results"][0]["count"] == 2
    assert cli("run", "-H", "local", "--", "sh", "-c", "exit 5").returncode == 5


def test_history_shows_redacted_entries(cli):
    cli("run", "-H", "testbox", "--shell", "--", "HF_TOKEN=hf_secretsecret123 true")
    result = cli("history", "--json", "-v")
    entries = json.loads(result.stdout)["entries"]
    assert entries and entries[-1]["target"] == "testbox"
    assert "hf_secretsecret123" not in result.stdout.decode()
    assert "HF_TOKEN=***" in entries[-1]["command"]


def test_history_shows_what_was_typed_by_host_and_time(cli, tmp_path):
    cli("glob", "-H", "testbox", str(tmp_path / "*"))
    cli("run", "-H", "local", "--", "sh", "-c", "exit 3")
    cli("grep", "--help")  # help and history itself are not history
    typed = json.loads(cli("history", "--json").stdout)["entries"]
    assert [e["command"] for e in typed] == [
        shlex.join(["remotedbg", "glob", "-H", "testbox", str(tmp_path / "*")]),
        "remotedbg run -H local -- sh -c 'exit 3'",
    ]
    assert [e["exit_status"] for e in typed] == [1, 3]  # the glob matched nothing
    only = json.loads(cli("history", "--json", "-H", "testbox").stdout)["entries"]
    assert [e["command"].split()[1] for e in only] == ["glob"]
    everything = json.loads(cli("history", "--json", "-v").stdout)["entries"]
    glob_calls = [e for e in everything if e["kind"] == "call" and e["pid"] == typed[0]["pid"]]
    assert glob_calls and all("fsops:glob_paths" in e["command"] for e in glob_calls)
    assert everything.index(typed[0]) < everything.index(glob_calls[0])  # a line, then its calls
    assert json.loads(cli("history", "--json", "--since", "2000-01-01").stdout)["entries"] == typed
    assert json.loads(cli("history", "--json", "--since", "0s").stdout)["entries"] == []
    bad = cli("history", "--since", "yesterday")
    assert bad.returncode == 2 and b"--since 'yesterday'" in bad.stderr


def test_bad_host_spec_is_a_usage_error(cli):
    result = cli("glob", "-H", "-oProxyCommand=touch /tmp/x", "x")
    assert result.returncode == 2


def test_unreachable_host_exit_255_one_line(cli):
    result = cli("run", "-H", "127.0.0.1:1", "--connect-timeout", "3", "--", "true")
    assert result.returncode == 255
    assert cli("glob", "-H", "127.0.0.1:1", "--connect-timeout", "3", "/x").returncode == 3
    assert len(result.stderr.decode().strip().splitlines()) == 1
    assert b"Traceback" not in result.stderr


def test_grep_w_and_l_as_grep_has_them(cli, tmp_path):
    (tmp_path / "a.py").write_text("d2t = 1\nself.d2t_map = 2\n")
    (tmp_path / "b.py").write_text("x = d2t\n")
    (tmp_path / "c.py").write_text("nothing here\n")
    words = cli("grep", "-H", "testbox", "-w", "d2t", str(tmp_path / "*.py"))
    assert words.stdout.decode().splitlines() == [
        f"{tmp_path / 'a.py'}:1:d2t = 1",
        f"{tmp_path / 'b.py'}:1:x = d2t",
    ]
    names = cli("grep", "-H", "testbox", "-l", "d2t", str(tmp_path / "*.py"))
    assert names.stdout.decode().splitlines() == [str(tmp_path / "a.py"), str(tmp_path / "b.py")]


def test_grep_minus_i_ignores_case_as_grep_does(cli, tmp_path):
    (tmp_path / "m.py").write_text("self.hot_token_id = D2T + arange\n")
    found = cli("grep", "-H", "testbox", "-i", "d2t", str(tmp_path / "*.py"))
    assert found.returncode == 0, found.stderr
    assert b"D2T + arange" in found.stdout
    exact = cli("grep", "-H", "testbox", "d2t", str(tmp_path / "*.py"))
    assert exact.returncode == 1  # no match without -i
    # elsewhere -i is still the identity file, as in ssh
    # (a command's help names its connection options in one line; all: help connection)
    assert b"Connection: -H HOST -i KEY " in cli("glob", "--help").stdout
    assert b"Connection: -H HOST --identity KEY " in cli("grep", "--help").stdout


def test_run_expands_a_quoted_leading_tilde_on_the_remote(cli):
    home = cli("run", "-H", "testbox", "--", "sh", "-c", 'echo "$HOME"').stdout.strip()
    result = cli("run", "-H", "testbox", "--", "echo", "~/x y", "~", "a~b", "$HOME")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == home + b"/x y " + home + b" a~b $HOME"


def test_a_mistyped_alias_names_the_config_and_the_near_aliases(cli, box):
    # In a network namespace of its own the lookup fails at once, without asking any resolver.
    result = cli("run", "-H", "tesbox", "--", "true", prefix=["unshare", "-rn"])
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 255 and len(lines) == 1, lines
    assert "cannot resolve host name 'tesbox'" in lines[0]
    assert f"no alias 'tesbox' in {box.ssh_config}; did you mean testbox?" in lines[0]


def test_a_missing_identity_file_is_named(cli, box, tmp_path):
    result = cli("run", "-H", "testbox", "-i", str(tmp_path / "no-key"), "--", "true")
    assert result.returncode == 2
    assert (
        result.stderr.decode() == f"remotedbg: identity file {tmp_path / 'no-key'}: no such file\n"
    )
    config = tmp_path / "ssh_config"
    text = box.ssh_config.read_text()
    config.write_text(re.sub(r"IdentityFile \S+", f"IdentityFile {tmp_path / 'gone'}", text))
    home = tmp_path / "home"  # no ~/.ssh keys and no agent to fall back on
    home.mkdir()
    env = {"REMOTEDBG_SSH_CONFIG": str(config), "HOME": str(home), "SSH_AUTH_SOCK": ""}
    result = cli("run", "-H", "testbox", "--", "true", env=env)
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 255 and len(lines) == 1, lines
    assert "authentication failed" in lines[0], lines
    assert f"ssh_config names {tmp_path / 'gone'}, which does not exist" in lines[0]


def test_run_on_several_hosts_groups_output_and_exits_with_the_worst(cli):
    result = cli(
        "run",
        "-H",
        "testbox,nosftp",
        "--",
        "sh",
        "-c",
        'echo "on $0"; [ -n "$SSH_CONNECTION" ]',
        "x",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().splitlines() == [
        "── testbox: exit 0",
        "on x",
        "── nosftp: exit 0",
        "on x",
    ]
    mixed = cli(
        "run",
        "-H",
        "testbox,127.0.0.1:1",
        "--connect-timeout",
        "3",
        "--json",
        "--",
        "sh",
        "-c",
        "exit 5",
    )
    doc = json.loads(mixed.stdout)
    assert [(h["host"], h["exit_status"]) for h in doc["hosts"]] == [
        ("testbox", 5),
        ("127.0.0.1:1", 3),
    ]
    assert "cannot connect" in doc["hosts"][1]["error"] and mixed.returncode == 5


def test_config_file_and_variables_set_defaults_that_flags_beat(cli, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('host = "testbox"\ntimeout = 30\n')
    env = {"REMOTEDBG_CONFIG": str(config)}
    assert cli("run", "--", "echo", "from-config", env=env).stdout == b"from-config\n"
    shown = json.loads(cli("config", "--json", env=env).stdout)["settings"]
    sources = {s["key"]: (s["value"], s["source"]) for s in shown}
    assert sources["host"] == ("testbox", f"file {config}") and sources["timeout"][0] == 30.0
    assert sources["python"] == ("python3", "default")
    quick = cli("run", "--", "sleep", "3", env={**env, "REMOTEDBG_TIMEOUT": "0.5"})
    assert quick.returncode == 255 and b"timed out after 0.5s" in quick.stderr  # env beats file
    flagged = cli(
        "run", "--timeout", "20", "--", "sleep", "0.1", env={**env, "REMOTEDBG_TIMEOUT": "0.5"}
    )
    assert flagged.returncode == 0  # the flag beats both
    config.write_text("timeout = 'soon'\n")
    bad = cli("run", "--", "true", env=env)
    assert (
        bad.returncode == 2
        and bad.stderr.decode() == f"remotedbg: config {config}: timeout must be a float\n"
    )


def test_get_copies_resumes_and_never_overwrites_unasked(cli, tmp_path):
    box = tmp_path / "box"
    box.mkdir()
    (box / "server.log").write_bytes(os.urandom(3 << 20))
    (box / "worker.log").write_text("accept len 1.9\n")
    os.symlink(box / "worker.log", box / "latest.log")
    os.mkfifo(box / "pipe.log")
    here = tmp_path / "here"
    result = cli("get", "-H", "testbox", "--json", str(box / "*.log"), str(here) + "/")
    files = {Path(f["remote"]).name: f for f in json.loads(result.stdout)["files"]}
    assert files["pipe.log"]["status"] == "skipped" and result.returncode == 1
    for name in ("server.log", "worker.log", "latest.log"):
        assert (here / name).read_bytes() == (box / name).read_bytes(), name
    again = cli("get", "-H", "testbox", "--json", str(box / "server.log"), str(here))
    assert json.loads(again.stdout)["files"][0]["status"] == "exists" and again.returncode == 1
    (here / "server.log").unlink()
    (here / "server.log.part").write_bytes((box / "server.log").read_bytes()[: 1 << 20])
    resumed = json.loads(
        cli("get", "-H", "testbox", "--json", str(box / "server.log"), str(here)).stdout
    )
    assert resumed["files"][0]["status"] == "resumed"
    assert resumed["files"][0]["bytes_moved"] == (3 << 20) - (1 << 20)  # only the rest travelled
    assert (here / "server.log").read_bytes() == (box / "server.log").read_bytes()
    assert not (here / "server.log.part").exists()
    (box / "worker.log").write_text("accept len 3.2\n")
    forced = cli(
        "get", "-H", "testbox", "--force", str(box / "worker.log"), str(here / "worker.log")
    )
    assert forced.returncode == 0 and (here / "worker.log").read_text() == "accept len 3.2\n"
    none = cli("get", "-H", "testbox", str(box / "nothing*"), str(here))
    assert none.returncode == 1 and b"no match for" in none.stderr


def test_verbose_prints_each_round_trip_with_its_time(cli, tmp_path):
    (tmp_path / "a.log").write_text("x")
    quiet = cli("glob", "-H", "testbox", str(tmp_path / "*.log"))
    loud = cli("-v", "glob", "-H", "testbox", str(tmp_path / "*.log"))
    assert quiet.stderr == b"" and loud.stdout == quiet.stdout
    lines = loud.stderr.decode().splitlines()
    assert lines and all(
        re.match(r"\[ *\d+\.\d ms\] testbox: .+ \(exit 0\)$", line) for line in lines
    )
    assert any("glob_paths" in line for line in lines)


def test_quiet_leaves_out_notes_but_not_the_reasons_for_failure(cli, tmp_path):
    (tmp_path / "big.log").write_text("x" * 100)
    (tmp_path / "a.log").write_text("x")
    noted = cli("get", "-H", "testbox", str(tmp_path / "a.log"), str(tmp_path / "b.log"))
    hushed = cli("-q", "get", "-H", "testbox", str(tmp_path / "a.log"), str(tmp_path / "c.log"))
    assert noted.stderr.startswith(b"done") and hushed.stderr == b"" and hushed.returncode == 0
    capped = cli("-q", "cat", "-H", "testbox", "--max-bytes", "10", str(tmp_path / "big.log"))
    assert capped.stdout == b"x" * 10 and capped.returncode == 1  # a bound reached is a reason
    assert capped.stderr.decode() == (
        f"remotedbg: {tmp_path / 'big.log'}: first 10 of 100 bytes; --max-bytes N reads more\n"
    )
    missing = cli("-q", "cat", "-H", "testbox", str(tmp_path / "gone.log"))
    assert missing.returncode == 1 and b"no match for" in missing.stderr


def test_run_forwards_stdin_as_ssh_does(cli):
    """Piped input reaches the remote command, a script given to `bash -s` runs with its exit
    status passed through, `-n` gives it none (as ssh -n), and /dev/null stays unread."""
    assert cli("run", "-H", "testbox", "--", "cat", input=b"hello\n").stdout == b"hello\n"
    ran = cli("run", "-H", "testbox", "--", "bash", "-s", input=b"echo from-script; exit 7\n")
    assert (ran.returncode, ran.stdout) == (7, b"from-script\n")
    nothing = cli("run", "-H", "testbox", "-n", "--", "cat", input=b"not sent\n")
    assert (nothing.returncode, nothing.stdout) == (0, b"")
    assert cli("run", "-H", "testbox", "--", "cat").stdout == b""  # stdin is /dev/null here


def test_a_command_that_leaves_its_input_unread_is_no_harm(box):
    """A command that exits without reading its stdin: the executor's write into the closed
    pipe once killed the executor (SIGPIPE), failing the command at random."""
    with box.session() as session:
        for size in (10, 70_000, 300_000) * 3:
            assert session.run("sh -c 'exit 86'", stdin=b"x" * size).exit_status == 86


def test_a_default_host_never_joins_a_fleet_nor_filters_history(cli, tmp_path):
    """host = "testbox" in the config file: used when no host is given at all; a --hosts-file
    fleet runs just its hosts, and history shows every host, each line whole."""
    config = tmp_path / "config.toml"
    config.write_text('host = "testbox"\n')
    hosts = tmp_path / "hosts"
    hosts.write_text("nosftp\n")
    env = {"REMOTEDBG_CONFIG": str(config)}
    long_word = "x" * 300
    cli("run", "-H", "local", "--", "echo", long_word, env=env)
    fleet = cli("playbook", "locate-eagle", "--hosts-file", str(hosts), "--json",
                "--var", "search_home=false", env=env)  # fmt: skip
    assert [h["host"] for h in json.loads(fleet.stdout)["hosts"]] == ["nosftp"]
    shown = cli("history", env=dict(env, COLUMNS="80")).stdout.decode()
    assert f"remotedbg run -H local -- echo {long_word}" in shown  # whole, not cut


@pytest.fixture
def gnu_tree(tmp_path):
    """A tree without the pruned directories, so GNU find and grep see what ours sees."""
    root = tmp_path / "tree"
    for rel, text in {
        "models/llama_eagle3.py": "hot_token_id = d2t + arange\nx = 1\n",
        "models/qwen2_eagle.py": "self.d2t = d2t\n",
        "models/deep/er/kimi_eagle3.py": "d2t\n",
        "models/eagle_notes.txt": "d2t in a text file\n",
        "models/long.py": "d2t\n" + "pad\n" * 5 + "d2t again\nd2t\n",
        "README": "no match here\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _gnu(*argv: str) -> list[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.splitlines()


def test_find_takes_gnu_find_spellings(cli, gnu_tree):
    """`-name`, `-type`, `-maxdepth` as GNU find spells them give GNU find's answer on the same
    tree (ours leaves ROOT itself out, as -mindepth 1; its order is sorted)."""
    for gnu_words in (
        ["-name", "*eagle*"],
        ["-name", "*eagle*", "-type", "f"],
        ["-maxdepth", "2", "-type", "f"],
        ["-maxdepth", "3", "-name", "*eagle*", "-print"],
    ):
        ours = cli("find", "-H", "testbox", str(gnu_tree), *gnu_words)
        assert ours.returncode == 0, (gnu_words, ours.stderr)
        expected = _gnu("find", str(gnu_tree), "-mindepth", "1", *gnu_words)
        assert sorted(ours.stdout.decode().splitlines()) == sorted(expected), gnu_words
    in_repl = cli("repl", "-H", "testbox",
                  input=f":find {gnu_tree} -name '*eagle*' -type f\n".encode())  # fmt: skip
    expected = _gnu("find", str(gnu_tree), "-mindepth", "1", "-name", "*eagle*", "-type", "f")
    assert sorted(in_repl.stdout.decode().splitlines()) == sorted(expected), in_repl.stderr
    # `-name` was once read as `-n ame`: a pattern 'ame' and an extra argument
    assert cli("find", "-H", "testbox", str(gnu_tree), "-name", "README").stdout.decode() == (
        f"{gnu_tree / 'README'}\n"
    )


def test_gnu_spellings_that_mean_something_else_are_refused_in_one_line(cli, gnu_tree):
    for words, says in (
        (["find", "-H", "testbox", str(gnu_tree), "-newer", "x"], "find -newer: GNU find's"),
        (["find", "-H", "testbox", str(gnu_tree), "-name", "a", "-o", "-name", "b"],
         "find -o: names are ORed already: repeat --name"),
        (["grep", "-H", "testbox", "-rnv", "d2t", str(gnu_tree)], "grep -v (in -rnv): inverted"),
        (["grep", "-H", "testbox", "-A", "2", "d2t", str(gnu_tree)], "grep -A: use -C N"),
        (["grep", "-H", "testbox", "-rnq", "d2t", str(gnu_tree)], "grep -q (in -rnq): not an"),
    ):  # fmt: skip
        result = cli(*words)
        lines = result.stderr.decode().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and says in lines[0], (words, lines)
        assert result.stdout == b""
    # after --, words are the pattern's and the paths', never rewritten
    dashed = cli("grep", "-H", "testbox", "--", "-name", str(gnu_tree))
    assert dashed.returncode == 1 and dashed.stderr == b""


def test_grep_takes_gnu_grep_spellings(cli, gnu_tree):
    """`grep -rn`, bundles (`-rni`, `-rnw`, `-rnC1`), --include/--exclude, compared with the
    real GNU grep -rn over the same tree."""
    for gnu_words in (
        ["-rn", "d2t"],
        ["-rni", "D2T"],
        ["-rnw", "d2t"],
        ["-r", "-n", "--include=*.py", "d2t"],
        ["-rn", "--include", "*eagle3.py", "d2t"],
        ["-rn", "--exclude=*.txt", "d2t"],
        ["-rnC1", "hot_token_id"],
        ["-rnC1", "d2t"],  # groups of context apart: a `--` line between them
        ["-rl", "d2t"],
    ):
        ours = cli("grep", "-H", "testbox", *gnu_words, str(gnu_tree))
        assert ours.returncode == 0, (gnu_words, ours.stderr)
        flags = [w for w in gnu_words if w.startswith("-")]
        pattern = [w for w in gnu_words if not w.startswith("-")]
        if "--include" in flags:  # its value is a word of its own
            pattern = pattern[1:]
            flags.append(gnu_words[gnu_words.index("--include") + 1])
        expected = _gnu("grep", *flags, "-E", "--", *pattern, str(gnu_tree))
        assert sorted(ours.stdout.decode().splitlines()) == sorted(expected), gnu_words


def test_cat_of_several_files_prints_heads_headers_and_n_numbers_as_cat(cli, gnu_tree):
    files = [str(gnu_tree / "models" / "llama_eagle3.py"), str(gnu_tree / "README")]
    several = cli("cat", "-H", "testbox", *files)
    assert several.returncode == 0
    gnu_head = subprocess.run(["head", "-c", str(1 << 20), *files], capture_output=True)
    assert several.stdout == gnu_head.stdout  # ==> PATH <== and a blank line between
    one = cli("cat", "-H", "testbox", files[0])
    assert b"==>" not in one.stdout
    numbered = cli("cat", "-H", "testbox", "-n", files[0])
    assert numbered.stdout == subprocess.run(["cat", "-n", files[0]], capture_output=True).stdout
    unended = gnu_tree / "unended"
    unended.write_bytes(b"a\nb")
    assert (
        cli("cat", "-H", "testbox", "-n", str(unended)).stdout
        == subprocess.run(["cat", "-n", str(unended)], capture_output=True).stdout
    )


def test_every_bound_reached_is_said_flagged_and_exits_1(cli, tmp_path):
    """A cap that cut the results: one stderr line naming the flag that lifts it, "truncated":
    true in --json, exit 1; the flag lifts it (exit 0, nothing said)."""
    many = tmp_path / "many"
    many.mkdir()
    for i in range(30):
        (many / f"f{i:02d}.log").write_text("".join(f"match {j}\n" for j in range(10)))
    pattern = str(many / "*.log")
    cases = [
        (["glob", "--limit", "20", pattern], ["glob", "--limit", "30", pattern],
         f"remotedbg: {pattern}: 20 of 30 matches printed; --limit N prints more"),
        (["find", str(many), "--limit", "29"], ["find", str(many), "--limit", "30"],
         "remotedbg: find stopped at 29 matches; --limit N lifts it"),
        (["grep", "--limit", "299", "match", str(many)], ["grep", "--limit", "300", "match",
         str(many)], "remotedbg: grep stopped at 299 matches; --limit N lifts it"),
        (["cat", "--max-bytes", "79", str(many / "f00.log")],
         ["cat", "--max-bytes", "80", str(many / "f00.log")],
         f"remotedbg: {many / 'f00.log'}: first 79 of 80 bytes; --max-bytes N reads more"),
        (["cat", "--tail", "5", "--max-bytes", "20", str(many / "f00.log")],
         ["cat", "--tail", "5", "--max-bytes", "40", str(many / "f00.log")],
         f"remotedbg: {many / 'f00.log'}: 2 of the last 5 lines fit in --max-bytes 20;"
         " --max-bytes N reads further back"),
    ]  # fmt: skip
    for capped, lifted, line in cases:
        cut = cli(capped[0], "-H", "testbox", *capped[1:])
        assert cut.returncode == 1 and cut.stderr.decode() == line + "\n", (capped, cut.stderr)
        flagged = cli(capped[0], "-H", "testbox", "--json", *capped[1:])
        assert json.loads(flagged.stdout)["truncated"] is True and flagged.returncode == 1
        whole = cli(lifted[0], "-H", "testbox", "--json", *lifted[1:])
        assert json.loads(whole.stdout)["truncated"] is False, lifted
        assert whole.returncode == 0 and whole.stderr == b"", (lifted, whole.stderr)
    assert len(cli("grep", "-H", "testbox", "--limit", "299", "match", str(many)).stdout
               .splitlines()) == 299  # fmt: skip


def test_get_r_copies_a_tree_with_gets_safety_rules(cli, tmp_path):
    """-r copies a directory as scp -r does (into DEST when it is a directory, else as DEST);
    links to files followed, links to directories and FIFOs named and skipped, nothing pruned;
    files already there kept, a .part resumed, a link planted below DEST never followed."""
    ckpt = tmp_path / "box" / "ckpt"
    (ckpt / "sub").mkdir(parents=True)
    (ckpt / "empty").mkdir()
    (ckpt / "__pycache__").mkdir()
    (ckpt / "config.json").write_text('{"architectures": ["LlamaForCausalLMEagle3"]}\n')
    (ckpt / "sub" / "model.safetensors").write_bytes(os.urandom(3 << 20))
    (ckpt / "__pycache__" / "x.pyc").write_bytes(b"\0pyc")
    (ckpt / ".hidden").write_text("h\n")
    os.symlink(ckpt / "config.json", ckpt / "link-to-file")
    os.symlink(ckpt / "sub", ckpt / "link-to-dir")
    os.mkfifo(ckpt / "pipe")
    fresh = tmp_path / "fresh"
    first = cli("get", "-H", "testbox", "-r", "--json", str(ckpt), str(fresh))
    assert first.returncode == 1, first.stderr  # the FIFO and the link to a directory
    statuses = {Path(f["remote"]).name: f["status"] for f in json.loads(first.stdout)["files"]}
    assert statuses["pipe"] == statuses["link-to-dir"] == "skipped"
    # every regular file and directory GNU find sees, and the link to a file as a file
    gnu_files = _gnu("find", str(ckpt), "-mindepth", "1", "-type", "f", "-printf", "%P\n")
    gnu_dirs = _gnu("find", str(ckpt), "-mindepth", "1", "-type", "d", "-printf", "%P\n")
    copied_files = _gnu("find", str(fresh), "-mindepth", "1", "-type", "f", "-printf", "%P\n")
    copied_dirs = _gnu("find", str(fresh), "-mindepth", "1", "-type", "d", "-printf", "%P\n")
    assert sorted(copied_files) == sorted([*gnu_files, "link-to-file"])
    assert sorted(copied_dirs) == sorted(gnu_dirs) and not any(fresh.rglob("*.part"))
    for rel in gnu_files:
        assert (fresh / rel).read_bytes() == (ckpt / rel).read_bytes(), rel
    assert not (fresh / "link-to-dir").exists() and not (fresh / "pipe").exists()
    # into an existing directory the tree keeps its name; a second run keeps what is there
    into = tmp_path / "into"
    into.mkdir()
    assert cli("get", "-H", "testbox", "-r", str(ckpt), str(into)).returncode == 1
    assert (into / "ckpt" / "sub" / "model.safetensors").read_bytes() == (
        ckpt / "sub" / "model.safetensors"
    ).read_bytes()
    again = json.loads(cli("get", "-H", "testbox", "-r", "--json", str(ckpt), str(into)).stdout)
    assert {f["status"] for f in again["files"] if f["status"] != "skipped"} == {"exists"}
    model = into / "ckpt" / "sub" / "model.safetensors"
    whole = model.read_bytes()
    model.unlink()
    model.with_name(model.name + ".part").write_bytes(whole[: 1 << 20])
    resumed = json.loads(cli("get", "-H", "testbox", "-r", "--json", str(ckpt), str(into)).stdout)
    moved = {Path(f["remote"]).name: f for f in resumed["files"]}["model.safetensors"]
    assert moved["status"] == "resumed" and moved["bytes_moved"] == (3 << 20) - (1 << 20)
    assert model.read_bytes() == whole
    # a link planted below the destination is not a way out
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = tmp_path / "planted"
    (planted / "ckpt").mkdir(parents=True)
    os.symlink(elsewhere, planted / "ckpt" / "sub")
    refused = cli("get", "-H", "testbox", "-r", "--json", str(ckpt), str(planted))
    assert refused.returncode == 4 and list(elsewhere.iterdir()) == []
    failed = [f for f in json.loads(refused.stdout)["files"] if f["status"] == "failed"]
    assert sorted(Path(f["remote"]).name for f in failed) == ["model.safetensors", "sub"]
    assert "not followed" in failed[0]["detail"]
    # without -r a directory is named; past --limit the walk says so
    plain = cli("get", "-H", "testbox", str(ckpt), str(tmp_path / "plain"))
    assert plain.returncode == 1
    assert b"a directory (not copied; -r copies it)" in plain.stderr
    cut = cli("get", "-H", "testbox", "-r", "--limit", "3", "--json", str(ckpt),
              str(tmp_path / "cut"))  # fmt: skip
    assert cut.returncode == 1 and json.loads(cut.stdout)["truncated"] is True
    assert f"get -r stopped at 3 entries below {ckpt}; --limit N lifts it" in cut.stderr.decode()
    few = cli("get", "-H", "testbox", "--limit", "1", str(ckpt / "*"), str(tmp_path / "few"))
    assert few.returncode == 1  # the 7 names glob sees (.hidden is not one), 1 taken
    assert f"{ckpt / '*'}: the first 1 of 7 matches copied; --limit N lifts it" in (
        few.stderr.decode()
    )


def test_a_local_file_that_cannot_grow_is_said_as_the_local_files_fault(cli, tmp_path):
    """A write that fails here (a file-size limit, as a full disk) names the local file and
    why; it was `connection lost`, as if the box had gone."""
    remote = tmp_path / "big.bin"
    remote.write_bytes(os.urandom(20 << 20))  # above the bulk threshold: a channel of its own
    into = tmp_path / "into"
    into.mkdir()
    result = cli("get", "-H", "testbox", "--json", str(remote), str(into),
                 prefix=["prlimit", f"--fsize={4 << 20}"])  # fmt: skip
    [entry] = json.loads(result.stdout)["files"]
    assert result.returncode == 4 and entry["status"] == "failed"
    assert entry["detail"] == f"{into / 'big.bin'}: File too large"
    assert not (into / "big.bin").exists()


def test_a_source_ending_in_dotdot_is_copied_below_dest_under_its_own_name(cli, tmp_path):
    """`get -r '~/tree/sub/..' dest/` names the directory `tree` (issue 46: it wrote
    dest/../a.txt): nothing is written outside DEST, whatever the source spells."""
    tree = tmp_path / "box" / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.txt").write_text("a\n")
    dest = tmp_path / "out" / "dest"
    dest.mkdir(parents=True)
    result = cli("get", "-H", "testbox", "-r", str(tree / "sub" / ".."), f"{dest}/")
    assert result.returncode == 0, result.stderr
    assert (dest / "tree" / "a.txt").read_text() == "a\n"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["dest"]


def test_names_the_box_answers_cannot_leave_dest(tmp_path):
    """What a lying box may answer for a stat or a walk (`..` as a name, a relative place
    that climbs, an absolute one, a negative size) is skipped with the reason; every place
    planned is below DEST."""
    from remotedbg.actions.download import below, plan, tree_place

    dest = tmp_path / "dest"
    dest.mkdir()
    answered = [
        {"path": "/home/u/tree/..", "size": 3},
        {"path": "/home/u/x", "size": 3, "rel": "../x.txt"},
        {"path": "/home/u/y", "size": 3, "rel": "/etc/y"},
        {"path": "/home/u/z", "size": 3, "rel": "ok/../../z"},
        {"path": "/home/u/neg.bin", "size": -5},
        {"path": "/home/u/fine.bin", "size": 7},
    ]
    planned = plan(answered, dest, force=False, into_dir=True)
    by_name = {Path(d.remote).name: d for d in planned}
    assert {n for n, d in by_name.items() if d.status == "skipped"} == {"..", "x", "y", "z",
                                                                          "neg.bin"}  # fmt: skip
    fine = by_name["fine.bin"]
    assert fine.status == "pending" and fine.local == dest / "fine.bin"
    assert all(str(d.local).startswith(str(dest)) for d in planned)
    assert below(dest, "a/b") == dest / "a" / "b" and below(dest, "a/../b") is None
    assert tree_place("/home/u/tree", "/home/u/tree/../etc/passwd", True) is None
    assert tree_place("/home/u/tree/sub/..", "/home/u/tree/a.txt", True) == "tree/a.txt"


def test_a_name_with_a_newline_is_one_entry_and_limit_holds(cli, tmp_path):
    """glob and find print one name a line (issue 46): a newline in a name is shown `\\n`,
    not a second entry; --json keeps it exact."""
    box = tmp_path / "box"
    box.mkdir()
    (box / "a\nb.txt").write_text("x")
    (box / "c.txt").write_text("x")
    listed = cli("glob", "-H", "testbox", str(box / "*.txt"))
    assert listed.stdout.decode().splitlines() == [f"{box}/a\\nb.txt", f"{box}/c.txt"]
    found = cli("find", "-H", "testbox", str(box), "--name", "*.txt")
    assert sorted(found.stdout.decode().splitlines()) == [f"{box}/a\\nb.txt", f"{box}/c.txt"]
    exact = json.loads(cli("glob", "-H", "testbox", "--json", str(box / "*.txt")).stdout)
    assert exact["results"][0]["matches"][0] == f"{box}/a\nb.txt"
