"""The kinds of session, by name: what `--host` (with `--transport`, `--container`) opens.

A kind is a Session subclass with a `kind` name and an `open(options, max_output, via)`
classmethod, listed here as `module:Class` so that choosing one imports only it (paramiko is
never imported for a `local` or a system-ssh session). `via` is what the choice found on the
way: an ssh host's resolved target; for a kind `on_host` (a container, a Slurm job), the session
it is entered through, opened first with the options its `via_options` gives (the host without
the container; `local` or the login node of `slurm:JOB@LOGIN`). A new kind
(say `kubectl exec`) adds one line to KINDS and, for a host form of its own, one to
HOST_PREFIXES; what it declares is in Session (base.py): `on_host` and `via_options` (the
options of the session it is entered through), `open`, and the executor's boot in its module
(session/slurm.py, session/container.py)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from remotedbg.errors import UsageError
from remotedbg.session.target import LOCAL, ConnectOptions, ResolvedTarget

if TYPE_CHECKING:
    from remotedbg.session.base import Session

KINDS = {
    "local": "remotedbg.session.local:LocalSession",
    "ssh": "remotedbg.session.ssh:SSHSession",  # paramiko
    "ssh-binary": "remotedbg.session.ssh_process:SystemSSHSession",  # the system ssh client
    "container": "remotedbg.session.container:ContainerSession",  # a runtime's exec on a host
    "slurm": "remotedbg.session.slurm:SlurmSession",  # a step of a Slurm job, by srun on a host
}
# host forms a kind owns by their prefix (`-H slurm:JOB[/NODE][@LOGIN]`, session/slurm.py)
HOST_PREFIXES = {"slurm:": "slurm"}
# --transport's words for the two ssh kinds
_TRANSPORT_KINDS = {"paramiko": "ssh", "ssh": "ssh-binary"}


def kind_class(name: str) -> type[Session]:
    module, _, cls = KINDS[name].partition(":")
    return getattr(import_module(module), cls)  # type: ignore[no-any-return]


def import_ssh_kinds() -> None:
    """Import what opening an ssh session and starting its executor import, for a caller that
    opens one in a thread while its other thread imports code of its own: paramiko's modules
    import each other, and a package two threads import at once can be met half-initialised."""
    for name in ("ssh", "ssh-binary"):
        kind_class(name)
    for module in ("ssh_command", "target", "hostkeys", "agent_bundle", "executor_client"):
        import_module(f"remotedbg.session.{module}")


def kind_of(options: ConnectOptions) -> tuple[str, ResolvedTarget | None]:
    """The kind `options` name, and the target resolved on the way (None for local and for a
    container, whose host is chosen when it opens). Raises UsageError for what no kind opens."""
    if not options.host:
        raise UsageError("--host is required (an ssh_config alias, user@host[:port] or 'local')")
    if "," in options.host:
        raise UsageError(f"--host {options.host}: several hosts are for playbooks only")
    for prefix, name in HOST_PREFIXES.items():
        if options.host.startswith(prefix):
            return name, None
    if options.host == LOCAL:
        if options.container:
            raise UsageError("--container works through an ssh host; give --host")
        return "local", None
    if options.container:
        return "container", None
    return _ssh_kind(options)


def _ssh_kind(options: ConnectOptions) -> tuple[str, ResolvedTarget]:
    """paramiko's session, or the system ssh client's when the config needs what paramiko
    cannot do (certificates, PKCS#11, FIDO keys, RemoteCommand, ...) or --transport ssh."""
    import shutil

    from remotedbg.session.ssh_command import choose_transport
    from remotedbg.session.target import resolve

    target = resolve(options)
    hops = [
        resolve(ConnectOptions(host=hop, ssh_config=options.ssh_config), hop)
        for hop in (target.proxy_jump or "").split(",")
        if hop and options.transport == "auto"
    ]
    transport = choose_transport(options.transport, [target, *hops], shutil.which("ssh"))
    return _TRANSPORT_KINDS[transport], target


def open_kind(options: ConnectOptions, max_output: int) -> Session:
    name, target = kind_of(options)
    kind = kind_class(name)
    if not kind.on_host:
        return kind.open(options, max_output, target)
    host = open_kind(kind.via_options(options), max_output)
    return kind.open(options, max_output, host)
