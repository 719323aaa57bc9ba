"""`--host` as typed is read by one parser (remotedbg/host_spec.py), for the connection and for
the persistent session that serves it: both sides see the same user, host and port."""

from __future__ import annotations

import pytest

from remotedbg.errors import UsageError
from remotedbg.host_spec import split_host_spec
from remotedbg.persist import protocol
from remotedbg.session.target import parse_host_spec


@pytest.mark.parametrize(
    ("typed", "parts"),
    [
        ("gpu-box", (None, "gpu-box", None)),
        ("alice@gpu-box", ("alice", "gpu-box", None)),
        ("alice@gpu-box:2222", ("alice", "gpu-box", 2222)),
        ("ssh://alice@gpu-box:2222/", ("alice", "gpu-box", 2222)),
        ("ssh://gpu-box", (None, "gpu-box", None)),
        ("[::1]:2200", (None, "::1", 2200)),
        ("bob@[fe80::1]", ("bob", "fe80::1", None)),
        ("  gpu-box ", (None, "gpu-box", None)),
    ],
)
def test_every_form_of_host_is_read_alike(typed, parts):
    assert split_host_spec(typed) == parts
    assert parse_host_spec(typed) == parts


@pytest.mark.parametrize("typed", ["", "-oProxyCommand=x", "a@b@c", "::1", "box:port", "a b"])
def test_what_is_no_host_is_refused_by_the_command_and_keyed_as_typed(typed):
    assert split_host_spec(typed) is None
    with pytest.raises(UsageError, match="expected an ssh_config alias"):
        parse_host_spec(typed)
    # the persistent-session client never refuses: the command it hands over does
    assert protocol.socket_key(["run", "-H", typed], typed, None, "0") != protocol.socket_key(
        ["run", "-H", typed + "x"], typed + "x", None, "0"
    )


def test_a_port_out_of_range_is_refused_by_the_command():
    assert split_host_spec("box:70000") == (None, "box", 70000)
    with pytest.raises(UsageError, match="port 70000 is out of range"):
        parse_host_spec("box:70000")


def test_the_user_and_port_typed_in_the_host_key_the_same_daemon_as_the_options():
    typed = protocol.socket_key(
        ["run", "-H", "alice@gpu-box:2222"], "alice@gpu-box:2222", None, "0"
    )
    options = protocol.socket_key(
        ["run", "-H", "gpu-box", "-l", "alice", "-p", "2222"], "gpu-box", None, "0"
    )
    assert typed == options
