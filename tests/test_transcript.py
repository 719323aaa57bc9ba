import os
import stat

from remotedbg.agent.redact import redact_text
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
