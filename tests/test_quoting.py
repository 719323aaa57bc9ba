"""Whatever a user types reaches the remote as data, byte for byte, and never runs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

word = st.one_of(
    st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))),
    st.binary()
    .filter(lambda b: b"\x00" not in b)
    .map(lambda b: b.decode("utf-8", "surrogateescape")),
    st.sampled_from(
        [
            "$(touch CANARY)",
            "`touch CANARY`",
            "'; touch CANARY; '",
            '"$HOME"',
            "*",
            "~",
            "a\nb",
            "-n",
            "--",
            "\\",
            "!!",
            "$((1+1))",
            "&& touch CANARY",
        ]
    ),
)


@pytest.fixture(scope="module")
def session(ssh_world):
    with ssh_world.box.session() as live:
        yield live


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(words=st.lists(word, min_size=1, max_size=4))
def test_arguments_arrive_byte_for_byte(session, tmp_path_factory, words):
    canary_dir = tmp_path_factory.mktemp("canary")
    words = [w.replace("CANARY", str(canary_dir / "pwned")) for w in words]
    result = session.run(["printf", "%s\\0", *words], cwd=str(canary_dir))
    expected = b"".join(w.encode("utf-8", "surrogateescape") + b"\0" for w in words)
    assert result.stdout_bytes == expected
    assert not (canary_dir / "pwned").exists()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=word.filter(lambda w: w not in ("", ".", "..") and "/" not in w))
def test_glob_patterns_are_data(session, tmp_path_factory, name):
    from remotedbg.remote.primitives import Remote

    directory = tmp_path_factory.mktemp("globbed")
    path = directory / name.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    path.write_bytes(b"x")
    escaped = "".join(f"[{c}]" if c in "*?[" else c for c in name)
    result = Remote(session).glob([f"{directory}/{escaped}"])
    assert result[0]["matches"] == [str(path)]
