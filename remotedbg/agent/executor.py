"""A long-lived command executor on the remote, one per session, spoken to over one channel.

sshd runs every exec request through the user's login shell, and bash reads ~/.bashrc for SSH
commands: on boxes with `conda init` or `pyenv init` that alone costs 100-500 ms a command. The
executor starts once (paying that once), then runs each command as a child in its own process
group, streams its output back in frames, and stops the group on request. It exits, stopping any
running command, when its stdin closes: a dropped connection leaves nothing behind.

Agent calls (remotedbg's own checks) run the same way as commands: each in a forked child in
its own process group, under memory and CPU limits, so a check that blocks (a FIFO posing as a
shard) or grows (a huge declared tensor) is stopped with its group at the deadline, on a kill
frame, or when the channel closes; nothing of remotedbg outlives the client.

Before its first frame the executor writes the marker the client sent in its bundle: anything a
login prints on stdout (banners, MOTDs, `conda init` chatter) comes before it and is skipped.

Frames both ways: 1 byte kind, 4 bytes request id, 4 bytes length (big-endian), payload.
The client numbers each command and call; every frame names the request it belongs to, so
output of a command the client gave up on is never taken for the next one's, and a kill for
an ended request stops nothing.
  to executor:   X exec {"cmd", "stdin": bool, "env"?: {name: value}} (env: the values ssh's
                   SendEnv/SetEnv give this command, of the names sshd accepted)
                 I stdin bytes   J end of stdin   K kill
                 C call {"entry", "args", "cwd", "timeout", "memory"}
                 F read a file {"path", "offset", "length"}
                 H heartbeat (at least one frame a second while a request runs; after
                   CLIENT_SILENCE seconds of none the client is taken for gone)
  from executor: P {"pid"}   O stdout bytes   E stderr bytes   S {"exit"}
                 R {"ok", "value"|"error", "cpu_s": {"call", "executor"}} (CPU seconds of the
                   check's child, and of the executor itself so far: start-up, imports)
                 G {"length"} to F, then exactly that many raw bytes of the file (no frames),
                   then R {"ok", "value": {"short"}}: the bytes the file no longer had when
                   they were read (zeros stand in for them); R alone when it cannot be read

A file read (F) is what bulk pulls use: a child in its own process group sends the bytes with
sendfile straight into the channel's pipe, so no login shell starts for it and no byte is
copied by Python here (`dd` took 3x the CPU per byte). While the child writes, nothing else
is written to stdout; a client that stops reading mid-file closes the channel.
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import pwd
import resource
import selectors
import signal
import stat
import struct
import subprocess
import time
import traceback

HEADER = struct.Struct("!BII")
CHUNK = 65536
FILE_CHUNK = 1 << 20  # bytes a file read's child asks sendfile for at a time
FILE_READER = "remotedbg-read"  # a file read's child's process name (15 bytes at most)
MAX_FRAME = 64 << 20  # no frame is larger: a length past it is a corrupt stream, never allocated
# The client sends a frame (H when it has nothing else to say) at least every second while a
# command or check of it runs; silence this long means the connection is gone (a cut cable
# never closes our stdin: sshd only notices with ClientAliveInterval), and what runs is stopped.
CLIENT_SILENCE = 15.0
# A command's input is written as it can take it (never a blocking write: a command busy writing
# its output would never read, and the executor would stop relaying that output); past
# STDIN_HIGH bytes waiting, the channel is not read until STDIN_LOW remain, so the client's
# sends wait on the SSH window: back-pressure, not an unbounded buffer.
STDIN_HIGH = 4 << 20
STDIN_LOW = 1 << 20
# Shells that read a POSIX command line as sh does; commands of any other login shell (fish,
# tcsh, csh, a nologin wrapper) run in /bin/sh, since remotedbg writes them in sh syntax.
POSIX_SHELLS = {"sh", "dash", "bash", "rbash", "ash", "ksh", "mksh", "lksh", "pdksh", "ksh93",
                "zsh", "yash", "busybox"}  # fmt: skip
KILL_GRACE = 0.5
DEFAULT_CALL_MEMORY = 4 << 30  # bytes of address space a check may add to the executor's
DEFAULT_CALL_CPU = 600  # CPU seconds of a check without a timeout


# The login that started us read the start-up files already and its environment is ours; zsh
# would read ~/.zshenv again for every command (and print what it prints into its output).
_NO_RC = {"zsh": ("-f",)}


def _login_shell():
    """The shell that runs commands: the login shell when it speaks sh (rbash stays rbash, so
    its restrictions hold), else /bin/sh."""
    try:
        shell = pwd.getpwuid(os.getuid()).pw_shell
    except KeyError:
        shell = ""
    if not (shell and os.access(shell, os.X_OK)):
        return "/bin/sh"
    return shell if os.path.basename(shell) in POSIX_SHELLS else "/bin/sh"


def _home():
    """Commands start in the home directory, as an ssh command does; "/" when there is none
    (a container's root often has no home of its own)."""
    home = os.path.expanduser("~")
    return home if os.path.isdir(home) else "/"


class _CorruptStream(Exception):
    pass


class _Frames:
    """Incremental frame parser over fd 0."""

    def __init__(self):
        self.buffer = b""

    def feed(self, data):
        self.buffer += data
        frames = []
        while len(self.buffer) >= HEADER.size:
            kind, rid, length = HEADER.unpack_from(self.buffer)
            if length > MAX_FRAME:
                raise _CorruptStream("a frame announces %d bytes" % length)
            if len(self.buffer) < HEADER.size + length:
                break
            payload = self.buffer[HEADER.size : HEADER.size + length]
            self.buffer = self.buffer[HEADER.size + length :]
            frames.append((chr(kind), rid, payload))
        return frames


def _send(kind, payload=b"", rid=0):
    data = HEADER.pack(ord(kind), rid, len(payload)) + payload
    view = memoryview(data)
    while view:
        written = os.write(1, view)
        view = view[written:]


def _send_json(kind, value, rid=0):
    _send(kind, json.dumps(value).encode("utf-8"), rid)


def _stop_group(process):
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + KILL_GRACE
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        time.sleep(0.02)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass


def _vm_bytes():
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _limit_child(request):
    """In the forked child: bound its address space (what it has plus the budget) and CPU."""
    memory = int(request.get("memory") or DEFAULT_CALL_MEMORY)
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        want = _vm_bytes() + memory
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    except (ValueError, OSError):
        pass
    timeout = request.get("timeout")
    cpu = int(timeout) + 5 if timeout else DEFAULT_CALL_CPU
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard != resource.RLIM_INFINITY:
            cpu = min(cpu, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, hard))
    except (ValueError, OSError):
        pass


def _run_call(request, write_fd):
    """The child's whole life: run the entry, write its JSON answer, exit."""
    try:
        os.setpgid(0, 0)
        for number in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)  # the executor's handlers are not the check's
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)  # the protocol is the parent's: nothing of the check may print there
        _limit_child(request)
        if request.get("cwd"):
            os.chdir(os.path.expanduser(request["cwd"]))
        module_name, func_name = request["entry"].split(":")
        func = getattr(importlib.import_module(module_name), func_name)
        answer = {"ok": True, "value": func(request["args"])}
        data = json.dumps(answer).encode("utf-8")
    except BaseException as exc:  # noqa: B036 - the child reports everything, then exits
        if not isinstance(exc, (MemoryError, RecursionError)):
            traceback.print_exc()
        if isinstance(exc, MemoryError):
            error = "MemoryError: the check passed its memory limit"
        else:
            error = "%s: %s" % (type(exc).__name__, exc)
        data = json.dumps({"ok": False, "error": error}).encode("utf-8")
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view) :]
    finally:
        os._exit(0)


def _send_file(source, offset, length, status_fd):
    """In the forked child: `length` bytes of `source` from `offset` to stdout, and always that
    many (zeros for bytes the file lost meanwhile, or could not give), so the client's count of
    raw bytes holds; then {"short", "error"} on `status_fd`. A closed channel just ends it."""
    status = {"short": 0, "error": None}
    try:
        os.setpgid(0, 0)
        try:  # what `ps` and `top` on the box call it
            with open("/proc/self/comm", "w") as handle:
                handle.write(FILE_READER)
        except OSError:
            pass
        for number in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)
        sent, use_sendfile = 0, hasattr(os, "sendfile")
        while sent < length:
            want = min(length - sent, FILE_CHUNK)
            try:
                moved = None
                if use_sendfile:
                    try:
                        moved = os.sendfile(1, source, offset + sent, want)
                    except OSError as exc:
                        if exc.errno == errno.EPIPE:
                            raise
                        use_sendfile = False  # not for this file or system: plain reads
                if moved is None:
                    moved = _copy_once(source, offset + sent, want)
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    raise
                status["error"] = "reading at byte %d: %s" % (offset + sent, exc.strerror)
                break
            if moved == 0:
                break  # the file is shorter than it was
            sent += moved
        status["short"] = length - sent
        zeros = bytes(min(length - sent, FILE_CHUNK))
        while sent < length:
            sent += os.write(1, zeros[: length - sent])
        os.write(status_fd, json.dumps(status).encode("utf-8"))
    finally:
        os._exit(0)


def _copy_once(source, offset, want):
    """Where sendfile cannot (a filesystem without it, a system whose sendfile wants a socket):
    one pread, written out whole."""
    data = os.pread(source, want, offset)
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]
    return len(data)


class _Call:
    def __init__(self, rid, pid, fd, deadline):
        self.rid = rid
        self.pid = pid
        self.fd = fd
        self.deadline = deadline
        self.data = b""
        self.stopped = None  # why the parent stopped it
        self.sending_file = False  # an F request's child: raw bytes on stdout, no frames


def arrived_env(sent):
    """Of the env requests the client sent on our channel ({name: value}), the names that
    reached us with that value: those sshd's AcceptEnv took (and no start-up file changed)."""
    if not isinstance(sent, dict):
        return []
    return sorted(name for name, value in sent.items() if os.environ.get(name) == value)


def command_environ(request, from_channel):
    """A command's environment: ours, less what our start channel's env requests set, plus
    this command's own values of them (None: ours as is, for a client that sends none)."""
    wanted = request.get("env")
    if not isinstance(wanted, dict):
        return None
    environ = {k: v for k, v in os.environ.items() if k not in from_channel}
    environ.update((str(k), str(v)) for k, v in wanted.items())
    return environ


class Executor:
    def __init__(self, from_channel=()):
        self.from_channel = frozenset(from_channel)  # names our channel's env requests set
        self.shell = _login_shell()
        self.frames = _Frames()
        self.selector = selectors.DefaultSelector()
        self.selector.register(0, selectors.EVENT_READ, "control")
        self.process = None
        self.command_id = 0
        self.open_pipes = 0
        self.running = True
        self.current_call = None
        self.heard = time.monotonic()  # when the client last sent a frame
        self.stdin_buffer = bytearray()  # the command's input not yet taken by it
        self.stdin_eof = False  # the client's J: close its stdin once the buffer is written
        self.stdin_waiting = False  # its stdin is registered for writing
        self.control_paused = False  # fd 0 not read: the buffer is past STDIN_HIGH

    # -- control frames ------------------------------------------------------------------
    def on_frame(self, kind, rid, payload):
        ours = self.process is not None and rid == self.command_id
        call = self.current_call
        if kind == "X":
            if self.process is not None:  # the client gave up on it: it ends here
                _stop_group(self.process)
                self.end_command()
            self.start(rid, json.loads(payload.decode("utf-8")))
        elif kind == "I" and ours:
            self.write_stdin(payload)
        elif kind == "J" and ours:
            self.close_stdin()
        elif kind == "K" and ours:
            _stop_group(self.process)
        elif kind == "K" and call is not None and call.rid == rid:
            self.stop_call("stopped on request")
        elif kind == "C":
            self.call(rid, json.loads(payload.decode("utf-8")))
        elif kind == "F":
            self.read_file(rid, json.loads(payload.decode("utf-8")))

    def call(self, rid, request):
        if self.current_call is not None:
            _send_json("R", {"ok": False, "error": "busy: a check is already running"}, rid)
            return
        try:
            # our own modules, imported here once so that every forked call finds them warm
            importlib.import_module(request["entry"].split(":")[0])
        except Exception as exc:
            _send_json("R", {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}, rid)
            return
        read_fd, write_fd = os.pipe()
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(read_fd)
            os.close(write_fd)
            _send_json("R", {"ok": False, "error": "cannot start the check: %s" % exc}, rid)
            return
        if pid == 0:
            os.close(read_fd)
            _run_call(request, write_fd)
        os.close(write_fd)
        timeout = request.get("timeout")
        deadline = time.monotonic() + float(timeout) if timeout else None
        self.current_call = _Call(rid, pid, read_fd, deadline)
        self.selector.register(read_fd, selectors.EVENT_READ, "call")

    def read_file(self, rid, request):
        """F: the G header, then a child sends the bytes (see the module's doc)."""
        if self.current_call is not None:
            _send_json("R", {"ok": False, "error": "busy: a check is already running"}, rid)
            return
        path = os.path.expanduser(str(request["path"]))
        offset, length = max(0, int(request["offset"])), int(request["length"])
        try:
            # O_NONBLOCK: a FIFO posing as the file must not block the open
            source = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError as exc:
            _send_json("R", {"ok": False, "error": "%s: %s" % (path, exc.strerror)}, rid)
            return
        try:
            info = os.fstat(source)
            if not stat.S_ISREG(info.st_mode):
                # a FIFO, a device, /proc: the client's read command decides what it gives
                why = "%s: not a regular file" % path
                _send_json("R", {"ok": False, "error": why, "fallback": True}, rid)
                return
            length = max(0, min(length, info.st_size - offset))
            read_fd, write_fd = os.pipe()
            _send_json("G", {"length": length}, rid)
            try:
                pid = os.fork()
            except OSError:
                # the client now counts raw bytes that will not come: only ending the
                # channel tells it so (it reports the executor gone)
                os.close(read_fd)
                os.close(write_fd)
                self.running = False
                return
            if pid == 0:
                os.close(read_fd)
                _send_file(source, offset, length, write_fd)
            os.close(write_fd)
        finally:
            os.close(source)
        self.current_call = _Call(rid, pid, read_fd, None)
        self.current_call.sending_file = True
        self.selector.register(read_fd, selectors.EVENT_READ, "call")

    def stop_call(self, why):
        call = self.current_call
        if call is None or call.stopped:
            return
        call.stopped = why
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(call.pid, sig)
            except OSError:
                pass
            if sig == signal.SIGTERM:
                deadline = time.monotonic() + KILL_GRACE
                while time.monotonic() < deadline:
                    if os.waitpid(call.pid, os.WNOHANG)[0]:
                        try:
                            os.killpg(call.pid, signal.SIGKILL)  # the rest of its group
                        except OSError:
                            pass
                        call.pid = None
                        return
                    time.sleep(0.01)

    def on_call_output(self):
        call = self.current_call
        try:
            data = os.read(call.fd, CHUNK)
        except BlockingIOError:
            return
        if data:
            call.data += data
            if len(call.data) > MAX_FRAME - 4096 and not call.stopped:
                self.stop_call("stopped: its answer passed %d MiB" % (MAX_FRAME >> 20))
                call.data = b""
            return
        self.selector.unregister(call.fd)
        os.close(call.fd)
        status, cpu = 0, None
        if call.pid is not None:
            status, usage = os.wait4(call.pid, 0)[1:]
            cpu = usage.ru_utime + usage.ru_stime
            try:
                os.killpg(call.pid, signal.SIGKILL)  # whatever the check started
            except OSError:
                pass
        self.current_call = None
        if call.sending_file:
            self.end_file_read(call)
            return
        if call.stopped:
            _send_json("R", {"ok": False, "error": "the check was %s" % call.stopped}, call.rid)
            return
        try:
            answer = json.loads(call.data.decode("utf-8"))
        except ValueError:
            why = "killed by signal %d" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else ""
            if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
                why = "stopped at its CPU limit"
            answer = {"ok": False, "error": "the check ended without an answer (%s)" % why}
        if isinstance(answer, dict):  # where a host's CPU goes: the check's, the executor's
            own = os.times()
            answer["cpu_s"] = {"call": cpu, "executor": own.user + own.system}
        _send_json("R", answer, call.rid)

    def end_file_read(self, call):
        try:
            status = json.loads(call.data.decode("utf-8"))
        except ValueError:
            status = None
        if call.stopped or not isinstance(status, dict):
            # the child did not send every byte it announced (stopped, killed): a frame now
            # would be taken for file bytes, so the channel ends instead
            self.running = False
            return
        if status.get("error"):
            _send_json("R", {"ok": False, "error": status["error"]}, call.rid)
        else:
            _send_json("R", {"ok": True, "value": {"short": status.get("short", 0)}}, call.rid)

    def start(self, rid, request):
        command = request["cmd"].encode("utf-8", "surrogateescape")
        try:
            self.process = subprocess.Popen(
                [self.shell, *_NO_RC.get(os.path.basename(self.shell), ()), "-c", command],
                stdin=subprocess.PIPE if request.get("stdin") else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                cwd=_home(),
                env=command_environ(request, self.from_channel),
            )
        except (OSError, ValueError) as exc:  # the login shell vanished, no more processes,
            # a NUL or `=` in a name of the request's env
            why = "remotedbg executor: cannot start %s: %s\n" % (self.shell, exc)
            _send("E", why.encode(), rid)
            _send_json("S", {"exit": 127}, rid)
            return
        self.command_id = rid
        self.stdin_buffer, self.stdin_eof = bytearray(), False
        if self.process.stdin is not None:
            os.set_blocking(self.process.stdin.fileno(), False)
        _send_json("P", {"pid": self.process.pid}, rid)
        for stream, name in ((self.process.stdout, "O"), (self.process.stderr, "E")):
            os.set_blocking(stream.fileno(), False)
            self.selector.register(stream, selectors.EVENT_READ, name)
        self.open_pipes = 2

    def write_stdin(self, data):
        if self.process.stdin is None or self.process.stdin.closed:
            return  # the command closed its input (or has none): the rest is dropped
        self.stdin_buffer += data
        self.pump_stdin()

    def close_stdin(self):
        self.stdin_eof = True
        self.pump_stdin()

    def pump_stdin(self):
        """Write what the command's stdin takes now; close it after the client's end of input;
        register for writing while bytes wait; pause reading the channel past STDIN_HIGH."""
        stream = self.process.stdin if self.process is not None else None
        if stream is None or stream.closed:
            self.stdin_buffer = bytearray()
        else:
            while self.stdin_buffer:
                try:
                    written = os.write(stream.fileno(), self.stdin_buffer[: 4 * CHUNK])
                except BlockingIOError:
                    break
                except OSError:  # the command exited or closed its stdin: nobody reads it
                    self.stdin_buffer = bytearray()
                    break
                del self.stdin_buffer[:written]
            if not self.stdin_buffer and self.stdin_eof:
                self._set_stdin_waiting(False)
                try:
                    stream.close()
                except OSError:
                    pass
        self._set_stdin_waiting(bool(self.stdin_buffer))
        if len(self.stdin_buffer) > STDIN_HIGH and not self.control_paused:
            self.selector.unregister(0)
            self.control_paused = True
        elif len(self.stdin_buffer) <= STDIN_LOW and self.control_paused:
            self.selector.register(0, selectors.EVENT_READ, "control")
            self.control_paused = False
            self.heard = time.monotonic()  # the client's frames wait in the channel

    def _set_stdin_waiting(self, waiting):
        stream = self.process.stdin if self.process is not None else None
        if waiting and not self.stdin_waiting and stream is not None and not stream.closed:
            self.selector.register(stream, selectors.EVENT_WRITE, "stdin")
            self.stdin_waiting = True
        elif not waiting and self.stdin_waiting:
            self.stdin_waiting = False
            try:
                self.selector.unregister(stream)
            except (KeyError, ValueError):
                pass

    # -- the loop ------------------------------------------------------------------------
    def on_output(self, key):
        try:
            data = os.read(key.fileobj.fileno(), CHUNK)
        except BlockingIOError:
            return
        if data:
            _send(key.data, data, self.command_id)
            return
        self.selector.unregister(key.fileobj)
        key.fileobj.close()
        self.open_pipes -= 1
        if self.open_pipes == 0:
            self.end_command()

    def end_command(self):
        """Report the command's exit (its pipes closed, or abandoned by the client)."""
        for stream in (self.process.stdout, self.process.stderr):
            if not stream.closed:
                self.selector.unregister(stream)
                stream.close()
        self.open_pipes = 0
        self.stdin_buffer, self.stdin_eof = bytearray(), True
        self.pump_stdin()  # unregistered, closed, the channel read again
        status = self.process.wait()
        _send_json("S", {"exit": status if status >= 0 else 128 - status}, self.command_id)
        self.process = None

    def busy(self):
        return self.process is not None or self.current_call is not None

    def serve(self):
        while self.running:
            wait = None
            call = self.current_call
            if call is not None and call.deadline is not None and not call.stopped:
                wait = max(0.0, call.deadline - time.monotonic())
            if self.busy():
                silence = max(0.0, self.heard + CLIENT_SILENCE - time.monotonic())
                wait = silence if wait is None else min(wait, silence)
            if self.control_paused:
                wait = 1.0 if wait is None else min(wait, 1.0)
            events = self.selector.select(wait)
            now = time.monotonic()
            if call is not None and call.deadline is not None and now >= call.deadline:
                self.stop_call("stopped at its deadline")
            if self.control_paused:
                self.heard = now  # not read while paused: its silence says nothing
                if _peer_gone():
                    break  # the channel closed while its input waited: stop everything
            if self.busy() and now - self.heard >= CLIENT_SILENCE:
                break  # the connection is gone without a close: stop everything
            for key, _ in events:
                if key.data == "control":
                    data = os.read(0, CHUNK)
                    if not data:
                        self.running = False  # client gone: stop everything, leave nothing
                        break
                    self.heard = time.monotonic()
                    try:
                        frames = self.frames.feed(data)
                    except _CorruptStream:
                        self.running = False
                        break
                    for kind, rid, payload in frames:
                        self.on_frame(kind, rid, payload)
                        if not self.running:
                            break
                elif key.data == "call":
                    self.on_call_output()
                elif key.data == "stdin":
                    self.pump_stdin()
                else:
                    self.on_output(key)
                if not self.running:
                    break  # the stream can no longer be trusted: nothing more is written
        self.shutdown()

    def shutdown(self):
        """The client is gone: stop what runs, leave nothing."""
        if self.process is not None:
            _stop_group(self.process)
        if self.current_call is not None:
            try:
                self.stop_call("stopped: the client went away")
            except BrokenPipeError:
                pass  # nobody to tell


def _peer_gone():
    """The channel's reader went away (sshd closed our stdout): an error or hang-up on fd 1."""
    import select

    poller = select.poll()
    poller.register(1, 0)  # POLLERR and POLLHUP are always reported
    return bool(poller.poll(0))


class _Signalled(Exception):
    pass


def _on_signal(number, frame):
    raise _Signalled()


def serve(args):
    # SIGPIPE stays ignored here (Python's default; children get SIG_DFL back from subprocess's
    # restore_signals): a command that exits without reading its stdin must not take the
    # executor down with the write that follows; a closed channel is a BrokenPipeError below.
    # The login shell that started us already read its rc files, and its environment is ours.
    # bash exec'd us with SHLVL decremented to 0, so a child bash would read ~/.bashrc again
    # (it does so for SSH sessions at shell level 1); at level 2 it does not.
    if os.environ.get("SHLVL", "0") in ("", "0"):
        os.environ["SHLVL"] = "1"
    # SIGTERM/SIGHUP (sshd's "signal" request from a client that gave up on us, an admin's
    # kill): stop every command's group first, then exit, leaving no orphans.
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, _on_signal)
    marker = str(args.get("marker") or "")
    if marker:
        os.write(1, marker.encode("ascii"))
    try:
        login = pwd.getpwuid(os.getuid()).pw_shell
    except KeyError:
        login = ""
    arrived = arrived_env(args.get("sent_env"))
    _send_json("P", {"pid": os.getpid(), "ready": True, "shell": login, "env": arrived})
    executor = Executor(arrived)
    try:
        executor.serve()
    except (BrokenPipeError, _Signalled):  # the channel is gone, or we were told to go
        for number in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)
        try:
            executor.shutdown()
        except (BrokenPipeError, OSError):
            pass
    os._exit(0)
