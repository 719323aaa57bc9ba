"""Which hosts a fleet run covers, from where users already keep them: a `--host` list in the
Slurm/pdsh hostlist syntax (`gpu[01-16]`), or a hosts file that is a plain list, an Ansible INI
inventory or an Ansible YAML inventory (with `--group`). Pure: text in, host specs out."""

from __future__ import annotations

import re
from typing import Any

import hostlist

from remotedbg.errors import UsageError
from remotedbg.host_spec import is_slurm_selection

_INI_SECTION = re.compile(r"^\s*\[([^\]\s]+)\]\s*$")
_ANSIBLE_RANGE = re.compile(r"\[(\d+):(\d+)\]")
_HOSTLIST_RANGE = re.compile(r"\[[\d,\-]+\]")  # gpu[01-16]; an IPv6 [::1] has colons


def is_host_list(option: str) -> bool:
    """Whether a --host value names several hosts (a comma, a hostlist range, or a Slurm form
    that selects nodes: `slurm:JOB/*`, `slurm:name=serve`)."""
    return "," in option or bool(_HOSTLIST_RANGE.search(option)) or is_slurm_selection(option)


def expand(expression: str) -> list[str]:
    """`gpu[01-03],box` -> gpu01, gpu02, gpu03, box (the Slurm/pdsh hostlist syntax)."""
    try:
        return [h.strip() for h in hostlist.expand_hostlist(expression.strip()) if h.strip()]
    except hostlist.BadHostlist as exc:
        raise UsageError(f"host list {expression!r}: {exc}") from None


def _ansible_pattern(name: str) -> list[str]:
    """Ansible's `gpu[01:04]` (inclusive, leading zeros kept) as hosts."""
    if "[" not in name:
        return [name]
    converted = _ANSIBLE_RANGE.sub(lambda m: f"[{m.group(1)}-{m.group(2)}]", name)
    if "[" in converted and "-" not in converted[converted.index("[") :]:
        raise UsageError(f"inventory host pattern {name!r}: only numeric [a:b] ranges are read")
    return expand(converted)


def _spec(name: str, variables: dict[str, Any]) -> str:
    """user@host:port as `ansible_user`, `ansible_host` and `ansible_port` say (ssh_config
    still applies to the host, as it does for Ansible's ssh connection)."""
    host = str(variables.get("ansible_host") or name)
    user = variables.get("ansible_user")
    port = variables.get("ansible_port")
    spec = f"{user}@{host}" if user else host
    return spec + (f":{port}" if port else "")


class Inventory:
    """Groups of hosts with their variables; `hosts(group)` follows child groups."""

    def __init__(self) -> None:
        self.members: dict[str, list[str]] = {"all": []}
        self.children: dict[str, list[str]] = {}
        self.host_vars: dict[str, dict[str, Any]] = {}
        self.group_vars: dict[str, dict[str, Any]] = {}

    def add_host(self, group: str, name: str, variables: dict[str, Any]) -> None:
        for host in _ansible_pattern(name):
            self.members.setdefault(group, []).append(host)
            self.host_vars.setdefault(host, {}).update(variables)

    def groups_of(self, host: str) -> list[str]:
        direct = [g for g, hosts in self.members.items() if host in hosts]
        found: list[str] = []
        while direct:
            group = direct.pop()
            if group not in found:
                found.append(group)
                direct += [p for p, kids in self.children.items() if group in kids]
        return found

    def hosts(self, group: str | None) -> list[str]:
        wanted = group or "all"
        known = set(self.members) | set(self.children)
        if wanted not in known:
            raise UsageError(
                f"no group {wanted!r} in the inventory (groups: {', '.join(sorted(known))})"
            )
        names: list[str] = []
        pending, seen = [wanted], set()
        while pending:
            current = pending.pop(0)
            if current in seen:
                continue
            seen.add(current)
            names += self.members.get(current, [])
            pending += self.children.get(current, [])
            if current == "all":
                names += [h for hosts in self.members.values() for h in hosts]
        specs = []
        for host in dict.fromkeys(names):
            variables: dict[str, Any] = {}
            for g in reversed(["all", *self.groups_of(host)]):
                variables.update(self.group_vars.get(g, {}))
            variables.update(self.host_vars.get(host, {}))
            specs.append(_spec(host, variables))
        return list(dict.fromkeys(specs))


def _key_values(words: list[str]) -> dict[str, str]:
    return dict(w.split("=", 1) for w in words if "=" in w)


def parse_ini(text: str) -> Inventory:
    inventory = Inventory()
    section, kind = "ungrouped", "hosts"
    for raw in text.splitlines():
        line = re.split(r"\s[#;]", raw.strip(), maxsplit=1)[0]
        if not line or line.startswith(("#", ";")):
            continue
        header = _INI_SECTION.match(line)
        if header:
            section, _, kind = header.group(1).partition(":")
            kind = kind or "hosts"
            continue
        words = line.split()
        if kind == "children":
            inventory.children.setdefault(section, []).append(words[0])
        elif kind == "vars":
            inventory.group_vars.setdefault(section, {}).update(_key_values(words))
        else:
            inventory.add_host(section, words[0], _key_values(words[1:]))
    return inventory


def parse_yaml(document: dict[str, Any]) -> Inventory:
    inventory = Inventory()

    def group(name: str, body: Any) -> None:
        body = body or {}
        if not isinstance(body, dict):
            raise UsageError(f"inventory group {name!r} is not a mapping")
        for host, variables in (body.get("hosts") or {}).items():
            inventory.add_host(name, str(host), dict(variables or {}))
        inventory.group_vars.setdefault(name, {}).update(body.get("vars") or {})
        for child, child_body in (body.get("children") or {}).items():
            inventory.children.setdefault(name, []).append(str(child))
            group(str(child), child_body)

    for name, body in document.items():
        group(str(name), body)
    return inventory


def hosts_from_file(text: str, group: str | None = None) -> list[str]:
    """Host specs from a hosts file: an Ansible INI or YAML inventory, else one host (or
    hostlist expression) per line with `#` comments."""
    lines = text.splitlines()
    if any(_INI_SECTION.match(line) for line in lines):
        return parse_ini(text).hosts(group)
    import yaml  # only for an inventory file: a one-host command does not pay for it

    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        document = None
    if isinstance(document, dict) and all(
        isinstance(v, dict) and ({"hosts", "children", "vars"} & set(v)) for v in document.values()
    ):
        return parse_yaml(document).hosts(group)
    if group:
        raise UsageError(f"--group {group}: the hosts file is a plain list, without groups")
    hosts: list[str] = []
    for line in lines:
        entry = line.split("#", 1)[0].strip()
        if entry:
            hosts += expand(entry)
    return hosts
