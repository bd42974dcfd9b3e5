"""Reading stack files (`stacks/Pulumi.<stack>.yaml`): the fleet sits under `accelfleet:fleet`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fleet.errors import StackFileError

CONFIG_KEY = "accelfleet:fleet"
EXAMPLE_STACK = Path(__file__).resolve().parent.parent / "stacks" / "Pulumi.example.yaml"


def read_stack_file(path: str | Path) -> dict[str, Any]:
    """The raw fleet mapping of a stack file; raises StackFileError saying what to fix."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StackFileError(
            f"stack file {p} does not exist",
            hint="pass the path of a stacks/Pulumi.<stack>.yaml file",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StackFileError(f"cannot read stack file {p}: {exc}",
                             hint="check the path and its permissions") from None
    try:
        data = YAML(typ="safe", pure=False).load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise StackFileError(
            f"{p} is not valid YAML{where}: {problem}",
            hint="fix the YAML syntax (indentation, a missing ':' or an unclosed quote)",
        ) from None
    return fleet_config(data, str(p))


def fleet_config(data: object, source: str) -> dict[str, Any]:
    """The `accelfleet:fleet` mapping of a stack's parsed config."""
    config = data.get("config") if isinstance(data, dict) else None
    if not isinstance(config, dict) or CONFIG_KEY not in config:
        raise StackFileError(
            f"{source} has no `config: {CONFIG_KEY}:` section",
            hint="a stack file declares its fleet under config -> accelfleet:fleet; see "
            "stacks/Pulumi.example.yaml",
        )
    fleet = config[CONFIG_KEY]
    if not isinstance(fleet, dict):
        raise StackFileError(f"{source}: `{CONFIG_KEY}` must be a mapping",
                             hint="see stacks/Pulumi.example.yaml for the layout")
    return fleet


def stack_name(path: str | Path) -> str:
    """`stacks/Pulumi.prod.yaml` -> `prod`."""
    name = Path(path).name
    if name.startswith("Pulumi.") and name.endswith((".yaml", ".yml")):
        return name.split(".", 1)[1].rsplit(".", 1)[0]
    return Path(path).stem
