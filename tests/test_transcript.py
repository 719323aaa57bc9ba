from remotedbg.session.transcript import redact


def test_secrets_in_env_assignments_urls_and_flags_are_redacted():
    line = (
        "HF_TOKEN=hf_abcdefghijkl MY_PASSWORD='p w' curl https://bob:s3cret@x.example/ "
        "--api-key abc123 -H 'Authorization: Bearer eyJabc.def' OPENAI=sk-abcdefghijk"
    )
    out = redact(line)
    for secret in ["abcdefghijkl", "p w", "s3cret", "abc123", "eyJabc.def", "sk-abcdefghijk"]:
        assert secret not in out
    assert "curl" in out and "x.example" in out


def test_ordinary_commands_are_left_alone():
    line = "grep -rn hot_token_id ~/sglang/python/sglang/srt/models/llama_eagle3.py"
    assert redact(line) == line
