"""OpenSSH's own regress cases (openssh-portable regress/: exit-status.sh, stderr-data.sh,
stderr-after-eof.sh, transfer.sh, yes-head.sh, portnum.sh, connect-uri.sh, host-expand.sh,
multiplex.sh), each typed as `ssh` and as `remotedbg` against the same sshd: the same outcome,
or remotedbg's documented behaviour where it differs on purpose (docs/exit-codes.md, "As ssh does
it: OpenSSH's regress cases"). The scripts' sleeps are shortened; their checks are kept."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.procs import persist_daemons, wait_for

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")

# stdout closed, then stderr written: the remote command of stderr-data.sh and stderr-after-eof.sh
AFTER_EOF = "exec > /dev/null; sleep 0.3; cat {} 1>&2"


class Regress:
    """The suite's sshd under regress's host names, with the data files the scripts use."""

    def __init__(self, root: Path, server, key: Path, known_hosts: Path) -> None:
        self.root, self.port, self.user = root, server.port, server.user
        common = [f"  IdentityFile {key}", f"  UserKnownHostsFile {known_hosts}",
                  "  StrictHostKeyChecking yes", "  BatchMode yes"]  # fmt: skip
        full = [f"  Port {server.port}", f"  User {server.user}", *common]
        self.control = root / "ctl"  # multiplex.sh's $CTL
        hosts = {
            "somehost": ["  HostName 127.0.0.1", *full],
            # connect-uri.sh: neither Port nor User in the config, the URI names them
            "noport": ["  HostName 127.0.0.1", *common],
            # host-expand.sh: what was typed, through %h
            "1": ["  HostName 127.0.0.%h", *full],
            "expand": ["  HostName 127.0.0.1", "  PermitLocalCommand yes",
                       '  LocalCommand printf "%%s\\n" "%n" "%h"', *full],
            "muxbox": ["  HostName 127.0.0.1", f"  ControlPath {self.control}",
                       "  ControlMaster auto", *full],
            # only the master reaches it: nothing listens on port 1
            "muxonly": ["  HostName 127.0.0.1", "  Port 1", f"  ControlPath {self.control}",
                        "  ControlMaster no", f"  User {server.user}", *common],
        }  # fmt: skip
        self.config = root / "ssh_config"
        blocks = [f"Host {host}\n" + "\n".join(lines) for host, lines in hosts.items()]
        self.config.write_text("\n\n".join(blocks) + "\n")
        self.data = root / "data"  # past the window and past the 8 MiB run capped before
        self.data.write_bytes(os.urandom(12 << 20))
        self.stderr_data = root / "stderr-data"  # stderr-data.sh's, /bin/ls, is ~150 KiB
        self.stderr_data.write_bytes(os.urandom(2 << 20))
        self.text = root / "text"
        self.text.write_bytes(self.data.read_bytes()[: 3 << 20].hex().encode()[: 3 << 20])
        # stderr-after-eof.sh: six md5 lines
        self.lines = root / "lines"
        self.lines.write_text("".join(f"{os.urandom(16).hex()}  -\n" for _ in range(6)))

    def ssh(self, *words: str, input: bytes | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(["ssh", "-F", str(self.config), *words], capture_output=True,
                              input=input, timeout=60,
                              stdin=None if input is not None else subprocess.DEVNULL)  # fmt: skip


@pytest.fixture(scope="module")
def regress(ssh_world, tmp_path_factory) -> Regress:
    return Regress(tmp_path_factory.mktemp("regress-cases"), ssh_world.box.server,
                   ssh_world.user_key, ssh_world.box.known_hosts)  # fmt: skip


@pytest.fixture
def rd(cli, regress):
    """`remotedbg WORDS` with the regress ssh_config (paramiko unless --transport says)."""

    def run(*words: str, input: bytes | None = None) -> subprocess.CompletedProcess:
        return cli(*words, input=input, env={"REMOTEDBG_SSH_CONFIG": str(regress.config)})

    return run


def _all(calls):
    """Each (function, *args) run at once, their results in order: the cases wait on sleeps."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda call: call[0](*call[1:]), calls))


def test_exit_status(regress, rd):
    """exit-status.sh: `ssh host exit N` exits N (0 1 4 5 44), also when the command closes its
    stdout and stderr before it exits; remotedbg passes the status through on both transports."""
    calls = []
    for status in (0, 1, 4, 5, 44):
        calls += [(regress.ssh, "somehost", "exit", str(status)),
                  (rd, "run", "-H", "somehost", "--", "exit", str(status))]  # fmt: skip
    line = "sleep 0.3; exec > /dev/null 2>&1; sleep 0.5; exit 44"
    calls += [(rd, "run", "-H", "somehost", "--transport", "ssh", "--", "exit", "44"),
              (regress.ssh, "-n", "somehost", "exec", "sh", "-c", shlex.quote(line)),
              (rd, "run", "-n", "-H", "somehost", "--", "sh", "-c", line),
              (rd, "run", "-n", "-H", "somehost", "--transport", "ssh", "--", "sh", "-c",
               line)]  # fmt: skip
    results = _all(calls)
    expected = [s for s in (0, 1, 4, 5, 44) for _ in range(2)] + [44] * 4
    assert [r.returncode for r in results] == expected, [r.stderr for r in results]
    assert all(r.stdout == b"" and r.stderr == b"" for r in results)


def test_stderr_data(regress, rd):
    """stderr-data.sh: stderr written after stdout is closed arrives whole and in order (2 MiB
    here), with and without -n, and with an earlier line on stdout."""
    quiet = AFTER_EOF.format(regress.stderr_data)
    echoed = "echo a; " + quiet
    cases = [([], quiet), (["-n"], echoed)]
    calls = [(regress.ssh, *n, "somehost", "exec", "sh", "-c", shlex.quote(line))
             for n, line in cases + [(["-n"], quiet), ([], echoed)]]  # fmt: skip
    calls += [(rd, "run", *n, "-H", "somehost", "--", "sh", "-c", line) for n, line in cases]
    calls.append((rd, "run", "-H", "somehost", "--transport", "ssh", "--", "sh", "-c", echoed))
    lines = [quiet, echoed, quiet, echoed, quiet, echoed, echoed]
    data = regress.stderr_data.read_bytes()
    for result, line in zip(_all(calls), lines, strict=True):
        assert result.returncode == 0, result.stderr[-300:]
        assert result.stderr == data, "stderr corrupt"
        assert result.stdout == (b"a\n" if line == echoed else b"")


def test_stderr_after_eof(regress, rd, persistent):
    """stderr-after-eof.sh: stderr sent after the channel's EOF on stdout is delivered, never
    "Received extended_data after EOF"; through a persistent session as well."""
    line = AFTER_EOF.format(regress.lines)
    ssh, ours, daemon = _all([
        (regress.ssh, "somehost", "exec", "sh", "-c", shlex.quote(line)),
        (rd, "run", "-H", "somehost", "--", "sh", "-c", line),
        (persistent, "run", "-H", "somehost", "--ssh-config", str(regress.config), "--", "sh",
         "-c", line),
    ])  # fmt: skip
    for result in (ssh, ours, daemon):
        assert result.returncode == 0 and result.stdout == b"", result.stderr
        assert result.stderr == regress.lines.read_bytes()
    assert persist_daemons(persistent.runtime)


def test_transfer(regress, rd, tmp_path):
    """transfer.sh: `ssh -n -q host cat DATA > COPY` copies DATA exactly (12 MiB: remotedbg's
    `run` capped its output at 8 MiB before, exit 4), and DATA piped through `cat > COPY` with
    dd's write sizes arrives whole; `get` and `cat` copy it too."""
    copies = {size: tmp_path / f"copy-{size}" for size in ("10", "1k", "64k", "256k")}
    upload = regress.data.read_bytes()[: 256 << 10]

    def piped(size: str, via) -> subprocess.CompletedProcess:
        chunks = subprocess.run(["dd", f"obs={size}"], input=upload, capture_output=True).stdout
        return via(chunks, f"cat > {shlex.quote(str(copies[size]))}")

    def by_ssh(chunks: bytes, line: str) -> subprocess.CompletedProcess:
        return regress.ssh("-q", "somehost", line, input=chunks)

    def by_rd(chunks: bytes, line: str) -> subprocess.CompletedProcess:
        return rd("run", "-H", "somehost", "--shell", "--", line, input=chunks)

    data = regress.data.read_bytes()
    calls = [(regress.ssh, "-n", "-q", "somehost", "cat", str(regress.data)),
             (rd, "run", "-n", "-H", "somehost", "--", "cat", str(regress.data)),
             (rd, "run", "-n", "-H", "somehost", "--transport", "ssh", "--", "cat",
              str(regress.data)),
             (rd, "get", "-H", "somehost", str(regress.data), str(tmp_path / "got")),
             (rd, "cat", "-H", "somehost", "--max-bytes", str(8 << 20),
              str(regress.text))]  # fmt: skip
    *copied, got, cat = _all(calls)
    for result in copied:
        assert (result.returncode, result.stderr) == (0, b"")
        assert result.stdout == data, "corrupted copy"
    assert got.returncode == 0 and (tmp_path / "got").read_bytes() == data, got.stderr
    assert (cat.returncode, cat.stdout) == (0, regress.text.read_bytes()), cat.stderr
    for via, sizes in ((by_ssh, list(copies)), (by_rd, ["10", "64k"])):
        for size, result in zip(sizes, _all([(piped, size, via) for size in sizes]), strict=True):
            assert result.returncode == 0, (size, result.stderr)
            assert copies[size].read_bytes() == upload, f"corrupted copy, dd obs={size}"
            copies[size].unlink()
    # deliberate: `get` keeps an existing file (scp replaces it), exit 1, --force replaces
    kept = rd("get", "-H", "somehost", str(regress.lines), str(tmp_path / "got"))
    assert kept.returncode == 1 and b"kept (--force replaces it)" in kept.stderr
    assert (tmp_path / "got").read_bytes() == data


def _piped(line: str, env: dict) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", line + '; echo "status=${PIPESTATUS[0]}" >&2'],
                          capture_output=True, timeout=60, env=env,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    return done, time.monotonic() - started


def test_yes_head(regress, rd, isolated_state):
    """yes-head.sh: `while true; do echo yes; done | head -2000` on the remote ends with 2000
    lines (the endless writer stopped by head's exit); and `yes` on the remote piped into a
    local `head` ends at once. ssh exits 255 there; remotedbg 141, silently (deliberate)."""
    loop = "while true; do echo yes; done | head -2000"
    ssh, ours = _all([(regress.ssh, "somehost", f"sh -c {shlex.quote(loop)}"),
                      (rd, "run", "-H", "somehost", "--", "sh", "-c", loop)])  # fmt: skip
    for result in (ssh, ours):
        assert (result.returncode, result.stdout) == (0, b"yes\n" * 2000), result.stderr
    env = dict(os.environ, REMOTEDBG_SSH_CONFIG=str(regress.config),
               XDG_STATE_HOME=str(isolated_state))  # fmt: skip
    rdbg = f"{shlex.quote(sys.executable)} -m remotedbg"
    (ssh, ssh_s), (ours, ours_s) = _all([
        (_piped, f"ssh -F {regress.config} somehost yes | head -2000", env),
        (_piped, f"{rdbg} run -H somehost -- yes | head -2000", env),
    ])  # fmt: skip
    assert ssh.stdout == ours.stdout == b"y\n" * 2000
    assert ssh.stderr == b"status=255\n", ssh.stderr
    assert ours.stderr == b"status=141\n", ours.stderr
    assert max(ssh_s, ours_s) < 20


def test_portnum(regress, rd):
    """portnum.sh: -p 0, 65536, 2**64, x and '' are refused before connecting (ssh: "Bad port",
    255; remotedbg: a usage error, 2, deliberate); 1..65535 are taken, and -p beats the config's
    Port. remotedbg takes host:port too (ssh takes only ssh://host:port)."""
    bad = ["0", "65536", "18446744073709551616", "x", ""]
    calls = [(regress.ssh, "-p", port, "somehost", "true") for port in bad]
    ours_bad = ["0", "65536", "x"]
    calls += [(rd, "run", "-p", port, "-H", "somehost", "--", "true") for port in ours_bad]
    port = str(regress.port)
    calls += [(regress.ssh, "-p", port, "noport", "-l", regress.user, "true"),
              (rd, "run", "-p", port, "-l", regress.user, "-H", "noport", "--", "true"),
              (regress.ssh, "-p", "1", "somehost", "true"),
              (rd, "run", "-p", "1", "-H", "somehost", "--", "true"),
              (regress.ssh, f"noport:{port}", "true"),
              (rd, "run", "-l", regress.user, "-H", f"noport:{port}", "--", "true")]  # fmt: skip
    results = _all(calls)
    for value, result in zip(bad, results[:5], strict=True):
        assert result.returncode == 255 and f"Bad port '{value}'" in result.stderr.decode()
    for value, result in zip(ours_bad, results[5:8], strict=True):
        assert result.returncode == 2 and b"--port" in result.stderr, (value, result.stderr)
    assert [r.returncode for r in results[8:]] == [0, 0, 255, 255, 255, 0]
    assert b"Connection refused" in results[10].stderr
    assert b"refused" in results[11].stderr and len(results[11].stderr.splitlines()) == 1


def test_connect_uri(regress, rd):
    """connect-uri.sh: with neither Port nor User in the config, ssh://USER@HOST:PORT connects,
    with or without a trailing slash; with a path after it, it is refused (ssh: 255, remotedbg:
    a usage error, 2, in one line)."""
    uri = f"ssh://{regress.user}@noport:{regress.port}"
    calls = []
    for spec in (uri, uri + "/", uri + str(regress.data)):
        calls += [(regress.ssh, spec, "true"), (rd, "run", "-H", spec, "--", "true")]
    calls.append((rd, "run", "-H", uri, "--transport", "ssh", "--", "true"))
    results = _all(calls)
    assert [r.returncode for r in results] == [0, 0, 0, 0, 255, 2, 0]
    assert results[5].stderr.decode().startswith(f"remotedbg: --host '{uri}")
    assert len(results[5].stderr.splitlines()) == 1


def test_host_expand(regress, rd):
    """host-expand.sh: `LocalCommand printf "%%s\\n" "%n" "%h"` (PermitLocalCommand yes) prints
    the name typed and the HostName, on this machine, before the command's output (remotedbg
    printed its pid marker after them before); and `HostName 127.0.0.%h` expands what was typed."""
    ssh, ours, echoed, typed, ssh_typed = _all([
        (regress.ssh, "expand", "true"),
        (rd, "run", "-H", "expand", "--", "true"),
        (rd, "run", "-H", "expand", "--", "sh", "-c", "echo out; echo err >&2; exit 3"),
        (rd, "run", "-H", "1", "--", "echo", "typed"),
        (regress.ssh, "1", "echo", "typed"),
    ])  # fmt: skip
    assert (ssh.returncode, ssh.stdout) == (0, b"expand\n127.0.0.1\n"), ssh.stderr
    assert (ours.returncode, ours.stdout, ours.stderr) == (0, ssh.stdout, b"")
    assert (echoed.returncode, echoed.stdout, echoed.stderr) == (
        3, b"expand\n127.0.0.1\nout\n", b"err\n")  # fmt: skip
    for result in (typed, ssh_typed):
        assert (result.returncode, result.stdout) == (0, b"typed\n"), result.stderr


def test_multiplex(regress, rd, persistent):
    """multiplex.sh: with a master on the ControlPath, `ssh` (and remotedbg over the system ssh
    client) goes through it: exit statuses and data pass, to a host only the master reaches.
    paramiko, the default, makes its own connection (deliberate: remotedbg's persistent session
    is its multiplexing, below); once the master exits (`ssh -O exit`) neither reaches it."""
    master = subprocess.Popen(["ssh", "-F", str(regress.config), "-N", "-n", "-M", "muxbox"],
                              stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        assert wait_for(regress.control.exists, timeout=15), master.stderr
        assert regress.ssh("-O", "check", "muxbox").returncode == 0
        data = regress.lines.read_bytes()
        via_ssh = ("--transport", "ssh")
        results = _all([
            (regress.ssh, "muxonly", "exit", "44"),
            (rd, "run", "-H", "muxonly", *via_ssh, "--", "exit", "44"),
            (regress.ssh, "muxonly", "cat", str(regress.lines)),
            (rd, "run", "-H", "muxonly", *via_ssh, "--", "cat", str(regress.lines)),
            (rd, "run", "-H", "muxbox", "--", "exit", "5"),  # the config does not get in the way
            (rd, "run", "-H", "muxonly", "--", "true"),  # paramiko: port 1, refused
        ])  # fmt: skip
        assert [r.returncode for r in results] == [44, 44, 0, 0, 5, 255], results
        assert results[2].stdout == results[3].stdout == data
        assert regress.ssh("-O", "exit", "muxbox").returncode == 0
        master.wait(10)
        assert not regress.control.exists()
    finally:
        if master.poll() is None:
            master.kill()
            master.wait()
    after = _all([(regress.ssh, "muxonly", "true"),
                  (rd, "run", "-H", "muxonly", *via_ssh, "--", "true")])  # fmt: skip
    assert [r.returncode for r in after] == [255, 255]
    # remotedbg's own multiplexing: one daemon holds the connection, each command its status
    statuses = [persistent("run", "-H", "somehost", "--ssh-config", str(regress.config), "--",
                           "exit", str(s)).returncode for s in (0, 1, 44)]  # fmt: skip
    assert statuses == [0, 1, 44] and len(persist_daemons(persistent.runtime)) == 1
