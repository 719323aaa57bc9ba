"""Help pages that name values by what they are (HOST, PATH, SECONDS, N) instead of by their
Python type (<str>, <list[str]>, <bool>), which is what typer prints by default."""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperOption

#: Parameter names whose values are files or directories on one side of the wire or the other.
PATH_NAMES = {"ssh_config", "identity", "output", "python", "hosts_file", "prompts", "target"}


def value_name(name: str, annotation: Any, many: bool) -> str:
    """What a parameter's value is, in capitals, from its name and annotation."""
    name = name.lower()
    if "timeout" in name:
        return "SECONDS"
    if annotation in (int, float, int | None, float | None):
        return "N"
    if name in PATH_NAMES or "path" in name or "dir" in name:
        return "PATH"
    return name.upper()[:-1] if many and name.endswith("s") else name.upper()


def name_values(command: Any) -> None:
    """Give every parameter of the command tree a value name where it has none; flags get none
    at all. Arguments show their name only: typer's type column beside it says nothing new."""
    for param in command.params:
        if isinstance(param, TyperOption) and (param.is_flag or param.count):
            param.metavar = ""
        elif isinstance(param, (TyperOption, TyperArgument)) and param.metavar is None:
            many = param.nargs != 1 or bool(getattr(param, "multiple", False))
            param.metavar = value_name(
                param.name or "value", param.type_descriptor.annotation, many
            )
        if isinstance(param, TyperArgument):
            # an instance attribute: typer has no setting for the type column of argument rows
            param.display_type_rich = lambda ctx: None  # type: ignore[method-assign]
    help_option = command.get_help_option

    def flag_help_option(ctx: Any) -> Any:
        option = help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = flag_help_option
    for sub in getattr(command, "commands", {}).values():
        name_values(sub)
