"""Defaults a user sets once: `~/.config/remotedbg/config.toml` (XDG; `REMOTEDBG_CONFIG` names
another file) and `REMOTEDBG_*` variables. A flag beats a variable, which beats the file, which
beats the built-in default (click's own order for envvar and default_map)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platformdirs import user_config_path

from remotedbg.connection_options import OPTIONS
from remotedbg.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@dataclass(frozen=True)
class Setting:
    key: str  # the option's parameter name, and the key in config.toml
    envvar: str
    default: Any
    kind: type


#: The connection options a variable or the config file may set (remotedbg.connection_options)
SETTINGS = [
    Setting(o.name, o.envvar, o.built_in, o.setting_kind) for o in OPTIONS if o.envvar
]
ENVVARS = {s.key: s.envvar for s in SETTINGS}
_SETTING = {s.key: s for s in SETTINGS}
_BUILT_IN = object()


def chosen(key: str, flag: Any, config: dict[str, Any], default: Any = _BUILT_IN) -> Any:
    """A setting's value in the order a command's options get it from click (the flag, its
    variable, the config file, the default), for what reads a command line before click does
    (the persistent-session client). `default` replaces the built-in one (None: nothing set).
    An empty flag or variable counts as not given."""
    setting = _SETTING[key]
    found = flag or os.environ.get(setting.envvar) or config.get(key)
    if found is not None:
        return found
    return setting.default if default is _BUILT_IN else default


def config_file() -> Path:
    named = os.environ.get("REMOTEDBG_CONFIG")
    return Path(named).expanduser() if named else user_config_path("remotedbg") / "config.toml"


def load_config(path: Path | None = None) -> dict[str, Any]:
    """The config file's settings, checked: an unknown key or a wrong type is a one-line error
    naming the file, not a silent default."""
    path = path or config_file()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(f"config {path}: {exc.strerror or exc}") from None
    try:
        values = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"config {path}: not valid TOML: {exc}") from None
    known = {s.key: s for s in SETTINGS}
    checked: dict[str, Any] = {}
    for key, value in values.items():
        setting = known.get(key.replace("-", "_"))
        if setting is None:
            raise UsageError(f"config {path}: unknown setting {key!r} (known: {', '.join(known)})")
        if setting.kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, setting.kind) or isinstance(value, bool):
            raise UsageError(f"config {path}: {key} must be a {setting.kind.__name__}")
        checked[setting.key] = value
    return checked


def default_map(command: Any, config: dict[str, Any]) -> dict[str, Any]:
    """click's default_map for the command tree: each command's parameters named in the file."""
    mapping: dict[str, Any] = {p.name: config[p.name] for p in command.params if p.name in config}
    for name, sub in getattr(command, "commands", {}).items():
        # only when it sets something: click reads a parameter's default from the same dict,
        # and the `help` command's name is the --help option's
        if found := default_map(sub, config):
            mapping[name] = found
    return mapping


def effective(config: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """(setting, value, where it came from) as a command without flags would see them."""
    rows = []
    for setting in SETTINGS:
        if setting.envvar in os.environ:
            rows.append((setting.key, os.environ[setting.envvar], f"env {setting.envvar}"))
        elif setting.key in config:
            rows.append((setting.key, config[setting.key], f"file {config_file()}"))
        else:
            rows.append((setting.key, setting.default, "default"))
    return rows
