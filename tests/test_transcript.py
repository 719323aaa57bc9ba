import json
import os
import stat

from remotedbg.agent.redact import SHAPES, redact_text
from remotedbg.session import transcript
from remotedbg.session.result import RunResult


def test_secrets_in_env_assignments_urls_and_flags_are_redacted():
    line = (
        "HF_TOKEN=hf_abcdefghijkl MY_PASSWORD='p w' curl https://bob:s3cret@x.example/ "
        "--api-key abc123 -H 'Authorization: Bearer eyJabc.def' OPENAI=sk-abcdefghijk"
    )
    out = redact_text(line)
    for secret in ["abcdefghijkl", "p w", "s3cret", "abc123", "eyJabc.def", "sk-abcdefghijk"]:
        assert secret not in out
    assert "curl" in out and "x.example" in out


def test_every_form_a_secret_comes_in():
    cases = {
        "vllm serve m --api-key=S1 --port 8000": "S1",
        "launch --admin-api-key S2": "S2",
        "tool --passwd S3": "S3",
        "curl -u alice:S4 http://h": "S4",
        "curl -H 'X-Api-Key: S5' h": "S5",
        "mysql -uroot -pS6 db": "S6",
        "MY_PW=S7 python x.py": "S7",
        "MYPASSWORD=S8 ./run": "S8",
        "export AWS_SECRET_ACCESS_KEY=S9": "S9",
    }
    for line, secret in cases.items():
        out = redact_text(line)
        assert secret not in out and "***" in out, (line, out)


def test_ordinary_commands_are_left_alone():
    for line in [
        "grep -rn hot_token_id ~/sglang/python/sglang/srt/models/llama_eagle3.py",
        "python -m sglang.launch_server --speculative-token-map /m/map.pt --max-total-tokens 9",
        "ssh -p 22 host; MONKEY=1 ./x --tokenizer-path /t --key-file-dir /k",
    ]:
        assert redact_text(line) == line


def test_transcript_is_private_and_rotated(tmp_path, monkeypatch):
    path = tmp_path / "state" / "remotedbg" / "transcript.jsonl"
    monkeypatch.setenv("REMOTEDBG_TRANSCRIPT", str(path))
    monkeypatch.setattr(transcript, "MAX_BYTES", 2000)
    for i in range(40):
        transcript.record("box", f"cmd {i} --token T{i}", RunResult("x", 0, b"", b"", 0.01))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert path.with_name("transcript.jsonl.1").exists() and path.stat().st_size <= 2200
    assert "T39" not in path.read_text() and "--token ***" in path.read_text()
    assert not os.path.islink(path)


# -- the table of secret shapes: one case per shape, found by that shape, its secret gone ----
SHAPE_CASES = {
    "secret-flag": [
        ("vllm serve m --api-key=S1 --port 8000", "S1"),
        ("launch --admin-api-key S2", "S2"),
        ("tool --passwd S3", "S3"),
        ("docker login --password=S4 reg.io", "S4"),
        ("curl --oauth2-bearer S5 h", "S5"),
    ],
    "secret-assignment": [
        ("MY_PW=S1 python x.py", "S1"),
        ("MYPASSWORD=S2 ./run", "S2"),
        ("export AWS_SECRET_ACCESS_KEY=S3", "S3"),
        ("GITHUB_TOKEN=S4 gh pr list", "S4"),
        ("CLIENT_SECRET_VALUE=S5 ./app", "S5"),
        ("PGPASSWORD='S 6' psql", "S 6"),
    ],
    "auth-header": [
        ("curl -H 'X-Api-Key: S1' h", "S1"),
        ("curl -H 'api-key: S2' https://x.openai.azure.com", "S2"),
        ("curl -H 'Private-Token: S3' h", "S3"),
        ("curl -H 'Cookie: session=S4' h", "S4"),
        ("curl -H 'Authorization: Basic S5' h", "S5"),
    ],
    "bearer": [("token is Bearer S1abc", "S1abc")],
    "url-password": [("git clone https://bob:S1@git.example/r", "S1")],
    "user-colon-password": [("curl -u alice:S1 http://h", "S1"), ("curl --user a:S2 h", "S2")],
    "mysql-p": [("mysql -uroot -pS1 db", "S1")],
    "registry-login-p": [
        ("docker login -u bob -p S1 reg.io", "S1"),
        ("podman login -pS2 quay.io", "S2"),
        ("helm registry login -u x -p S3 r", "S3"),
    ],
    "sshpass-p": [("sshpass -p S1 ssh h", "S1"), ("sshpass -pS2 scp a h:", "S2")],
    "redis-cli-a": [("redis-cli -h db -a S1 ping", "S1"), ("redis-cli -aS2 info", "S2")],
    "config-set": [
        ("aws configure set aws_secret_access_key S1", "S1"),
        ("aws configure set aws_session_token S2 --profile p", "S2"),
        ("npm config set _authToken S3", "S3"),
        ("git config --global user.password S4", "S4"),
    ],
    "openssl-pass": [("openssl enc -d -passin pass:S1 -in f", "S1")],
    "json-secret-key": [('{"api_key": "S1", "path": "/m"}', "S1")],
    # vLLM 0.33.0 logs `non-default args: {...}` (the dict's repr: entrypoints/utils.py
    # log_non_default_args) with single quotes
    "repr-secret-key": [("non-default args: {'model': '/m', 'api_key': 'S1'}", "S1")],
    "token-prefix": [
        ("echo hf_abcdefghijkl", "abcdefghijkl"),
        ("OPENAI=sk-abcdefghijk", "abcdefghijk"),
        ("glpat-abcdefghij1234", "abcdefghij1234"),
    ],
    "aws-access-key-id": [("id AKIAABCDEFGHIJKLMNOP here", "ABCDEFGHIJKLMNOP")],
}


def test_every_shape_has_a_case_and_each_case_is_redacted_by_its_shape():
    assert set(SHAPE_CASES) == {name for name, _, _ in SHAPES}
    for name, pattern, _ in SHAPES:
        for line, secret in SHAPE_CASES[name]:
            assert pattern.search(line), (name, line)
            out = redact_text(line)
            assert secret not in out and "***" in out, (name, line, out)


def test_redaction_keeps_what_is_not_a_secret():
    cases = {
        "docker login -u bob -p S1 reg.io": "docker login -u bob -p *** reg.io",
        "aws configure set aws_secret_access_key S1": "aws configure set aws_secret_access_key ***",
        "sshpass -pS2 ssh h": "sshpass -p*** ssh h",
        "curl -H 'api-key: S2' h": "curl -H 'api-key: ***' h",
        "docker login -u bob --password-stdin reg": "docker login -u bob --password-stdin reg",
        "aws configure set region us-east-1": "aws configure set region us-east-1",
        "TOKENIZERS_PARALLELISM=false MAX_TOKENS=4 python x": (
            "TOKENIZERS_PARALLELISM=false MAX_TOKENS=4 python x"
        ),
        "redis-cli -h db ping": "redis-cli -h db ping",
    }
    for line, expected in cases.items():
        assert redact_text(line) == expected


def test_a_shared_transcript_directory_keeps_its_mode(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    monkeypatch.setenv("REMOTEDBG_TRANSCRIPT", str(shared / "t.jsonl"))
    transcript.record("box", "true", RunResult("x", 0, b"", b"", 0.01))
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert stat.S_IMODE((shared / "t.jsonl").stat().st_mode) == 0o600
    # a directory remotedbg creates is private
    monkeypatch.setenv("REMOTEDBG_TRANSCRIPT", str(shared / "new" / "t.jsonl"))
    transcript.record("box", "true", RunResult("x", 0, b"", b"", 0.01))
    assert stat.S_IMODE((shared / "new").stat().st_mode) == 0o700


def test_a_symlink_planted_at_the_transcript_is_not_followed(tmp_path, monkeypatch):
    target = tmp_path / "victim"
    target.write_text("mine\n")
    (tmp_path / "t.jsonl").symlink_to(target)
    monkeypatch.setenv("REMOTEDBG_TRANSCRIPT", str(tmp_path / "t.jsonl"))
    transcript.record("box", "true", RunResult("x", 0, b"", b"", 0.01))
    assert target.read_text() == "mine\n"


SECRETS_TYPED = [
    ("docker login -u bob -p", "S3cretDock"),
    ("sshpass -p", "S3cretSshp"),
    ("redis-cli -h db -a", "S3cretRedis"),
    ("aws configure set aws_secret_access_key", "S3cretAws"),
]


def test_secrets_typed_in_a_remote_command_stay_out_of_the_transcript(cli, isolated_state):
    """Over the real sshd: the command line as typed and the remote call it made are both
    recorded (session/transcript.py), and neither keeps a secret."""
    for words, secret in SECRETS_TYPED:
        assert cli("run", "-H", "testbox", "--", "echo", *words.split(), secret).returncode == 0
    header = "curl -H 'api-key: S3cretHdr' -H 'x-api-key: S3cretX' http://127.0.0.1:9"
    cli("run", "-H", "testbox", "--shell", "--", f"echo {header}; GH_TOKEN=S3cretEnv true")
    text = (isolated_state / "remotedbg" / "transcript.jsonl").read_text()
    kinds = [json.loads(line)["kind"] for line in text.splitlines()]
    assert kinds.count("typed") == 5 and kinds.count("call") >= 5
    for secret in [s for _, s in SECRETS_TYPED] + ["S3cretHdr", "S3cretX", "S3cretEnv"]:
        assert secret not in text, secret
    assert "aws_secret_access_key ***" in text and "api-key: ***" in text


def test_argv_words_keep_no_secret():
    """A launch wrapper's environment assignments, secret keys inside a JSON argument and bare
    tokens, as `env`, `docker run -e` and `--speculative-config` carry them (issue 46)."""
    from remotedbg.agent.redact import redact_argv

    argv = ["env", "HF_TOKEN=hf_abcdefghijkl", "OPENAI_API_KEY=sk-abcdefghijk", "PGPASSWORD=p1",
            "MAX_TOKENS=4", "python", "-m", "vllm.entrypoints.openai.api_server",
            "--speculative-config", '{"model": "/d", "hf_token": "T1", "password": "P2"}',
            "--model", "/models/hf_cache_folder_x", "sk-livelivelive1"]  # fmt: skip
    out = redact_argv(argv)
    assert out[1:5] == ["HF_TOKEN=***", "OPENAI_API_KEY=***", "PGPASSWORD=***", "MAX_TOKENS=4"]
    assert json.loads(out[9]) == {"model": "/d", "hf_token": "***", "password": "***"}
    assert out[11] == "/models/hf_cache_folder_x" and out[12] == "sk-***"
    # a wrapper's command string (`bash -c "..."`) is a command line of its own
    shell = redact_argv(["bash", "-c", "python -m x --api-key K1 --hf-token=K2 >> log 2>&1"])
    assert shell == ["bash", "-c", "python -m x --api-key *** --hf-token=*** >> log 2>&1"]


def _record_into(path: str) -> None:
    os.environ["REMOTEDBG_TRANSCRIPT"] = path
    transcript.record("box", "true", RunResult("x", 0, b"", b"", 0.01))


def test_a_transcript_file_another_user_planted_is_not_appended_to():
    """A shared REMOTEDBG_TRANSCRIPT folder where another user put the file first, writable
    by all (issue 46): the user's commands are not written into it. Run as nobody against a
    file of root's when the suite runs as root (CI does); as the file's owner, appended."""
    from tests.unprivileged import call_unprivileged, shared_dir

    with shared_dir() as shared:
        planted = shared / "t.jsonl"
        planted.write_text("theirs\n")
        planted.chmod(0o666)
        call_unprivileged(_record_into, str(planted))
        lines = planted.read_text().splitlines()
        assert lines == ["theirs"] if os.geteuid() == 0 else len(lines) == 2
