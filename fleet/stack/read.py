"""Reading stack files (`stacks/Pulumi.<stack>.yaml`): the fleet sits under `accelfleet:fleet`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fleet.errors import InputError, StackFileError

CONFIG_KEY = "accelfleet:fleet"
EXAMPLE_STACK = Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.example.yaml"

# What a stack file may hold: far beyond any real fleet (a 1,000-pool stack is about 150 KB,
# 15,000 values and 6 levels deep), close enough that a hostile file is refused in well under
# a second instead of exhausting memory or the stack (alias bombs, deep nesting, huge files).
MAX_STACK_BYTES = 2 * 2**20
MAX_DEPTH = 32  # nested mappings and lists
MAX_VALUES = 200_000  # every mapping, list and scalar, each alias counted as what it repeats
MAX_POOLS = 2_000
MAX_CLUSTERS = 1_000  # GKE allows 100 regional clusters per region, EKS 100 per Region by default


def read_stack_file(path: str | Path) -> dict[str, Any]:
    """The raw fleet mapping of a stack file; raises StackFileError saying what to fix."""
    return fleet_config(read_stack_document(path), str(path))


def read_stack_document(path: str | Path) -> dict[str, Any]:
    """The whole parsed stack file (every `config:` key), within the bounds above."""
    from fleet.input_files import read_text

    p = Path(path)
    try:
        if not p.exists():
            from fleet.stack.choice import stacks_there_are

            raise StackFileError(f"stack file {p} does not exist", hint=stacks_there_are(p))
    except OSError:  # a name the file system refuses: read_text says so
        pass
    try:
        text = read_text(p, what="stack file", max_bytes=MAX_STACK_BYTES,
                         hint="pass the path of a stacks/Pulumi.<stack>.yaml file (a real "
                         "fleet's stack is a few hundred KB: split the fleet into "
                         "several stacks)")
    except StackFileError:
        raise
    except InputError as exc:
        raise StackFileError(exc.message, hint=exc.hint) from None
    return parse_stack_text(text, str(p))


def parse_stack_text(text: str, source: str) -> dict[str, Any]:
    """A stack file's text parsed, within the bounds above (`read_stack_document` without the
    reading: `fleet.stack.edit` parses the very text it edits)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        data = _as_json(text)
        if data is None:
            count_values(text, source)
            data = YAML(typ="safe", pure=False).load(text)
    except RecursionError:
        raise _too_deep(source) from None
    except (ValueError, TypeError, ArithmeticError) as exc:  # a tagged value that does not
        raise _unconvertible(source, exc) from None  # convert: `!!int "x"`, 4,301 digits
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise StackFileError(
            f"{source} is not valid YAML{where}: {problem}",
            hint="fix the YAML syntax (indentation, a missing ':' or an unclosed quote)",
        ) from None
    check_bounds(data, source)
    if not isinstance(data, dict):
        raise StackFileError(f"{source} is not a Pulumi stack file: its top level is not a "
                             "mapping", hint="a stack file starts with `config:`; see "
                             "stacks/Pulumi.example.yaml")
    return data


def _as_json(text: str) -> Any:
    """A stack written as JSON (JSON is YAML 1.2: generated stacks often are), parsed by the
    JSON parser, which is about 40 times faster than the pure-Python YAML one; None when the text
    is not plain JSON (YAML then parses it, and reports a duplicate key its own way)."""
    import json

    if not text.lstrip().startswith("{"):
        return None

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            raise ValueError("duplicate key")
        return out

    try:
        return json.loads(text, object_pairs_hook=unique)
    except ValueError:  # JSONDecodeError is one
        return None


def count_values(text: str, source: str) -> None:
    """Refuse, before building anything, a text of more than MAX_VALUES values (mappings,
    lists, scalars and aliases, each alias counted once: `check_bounds` counts what they
    repeat). libyaml's event parser reads 200,000 values in about 0.2 s where building them
    with the pure-Python parser takes 10 s; what libyaml cannot parse is left to ruamel.yaml,
    which reports it in its own words."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None:
        return
    seen = 0
    values = (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent,
              yaml.AliasEvent)
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, values):
                seen += 1
                if seen > MAX_VALUES:
                    raise StackFileError(
                        f"{source} holds more than {MAX_VALUES:,} values (mappings, lists "
                        "and scalars)", hint="a 1,000-pool fleet is about 15,000 values: "
                        "split the fleet into several stacks, or check that this is the "
                        "stack file you meant")
    except yaml.YAMLError:
        return


def _unconvertible(source: str, exc: Exception) -> StackFileError:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "4300" in text or "integer string conversion" in text:
        return StackFileError(f"{source} holds an integer of more than 4,300 digits",
                              hint="no field of a stack takes such a number: look for a "
                              "runaway value")
    return StackFileError(f"{source} holds a value that does not convert to its YAML tag "
                          f"({text[:120]})", hint="remove the tag (e.g. `!!int`) or give a "
                          "value of that type: `!!int \"x\"` is not a number")


def _too_deep(source: str) -> StackFileError:
    return StackFileError(f"{source} nests mappings and lists more than {MAX_DEPTH} levels deep",
                          hint="a stack file's fleet is a few levels deep; look for runaway "
                          "brackets or indentation")


def check_bounds(data: object, source: str) -> None:
    """Refuse a parsed stack that nests deeper than MAX_DEPTH, holds more than MAX_VALUES
    values once its aliases are expanded (a "billion laughs" file is a few lines whose aliases
    repeat each other), or declares more than MAX_POOLS pools. Iterative, and stops at the
    first limit crossed, so a hostile file costs milliseconds."""
    seen = 0
    todo: list[tuple[object, int]] = [(data, 0)]
    while todo:
        node, depth = todo.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise StackFileError(
                f"{source} holds more than {MAX_VALUES:,} values (mappings, lists and "
                "scalars) once its YAML aliases (*name), if any, are expanded",
                hint="an alias repeats everything its anchor holds; use aliases for small "
                "shared settings only, or split the fleet into several stacks")
        if depth > MAX_DEPTH:
            raise _too_deep(source)
        if isinstance(node, dict):
            odd = next((k for k in node if isinstance(k, tuple | frozenset)), None)
            if odd is not None:
                from fleet.input_files import shown

                raise StackFileError(f"{source} uses a list or mapping as a key "
                                     f"({shown(odd)}); every key in a stack file is a name",
                                     hint="write `name: value` (a `? [a, b]` or `[a, b]: ...` "
                                     "key is YAML's complex key, which no field takes)")
            todo += [(k, depth + 1) for k in node]
            todo += [(v, depth + 1) for v in node.values()]
        elif isinstance(node, list):
            todo += [(v, depth + 1) for v in node]
    config = data.get("config") if isinstance(data, dict) else None
    fleet = config.get(CONFIG_KEY) if isinstance(config, dict) else None
    clusters = fleet.get("clusters") if isinstance(fleet, dict) else None
    if isinstance(clusters, list) and len(clusters) > MAX_CLUSTERS:
        raise StackFileError(f"{source} declares {len(clusters):,} clusters; a stack may "
                             f"declare at most {MAX_CLUSTERS:,}",
                             hint="a region holds at most 100 GKE clusters per project (and 100 "
                             "EKS clusters per account by default): split the fleet into "
                             "several stacks")
    pools = fleet.get("pools") if isinstance(fleet, dict) else None
    if isinstance(pools, list) and len(pools) > MAX_POOLS:
        raise StackFileError(f"{source} declares {len(pools):,} pools; a stack may declare at "
                             f"most {MAX_POOLS:,}",
                             hint="split the fleet into several stacks (one per region or "
                             "cluster is usual)")


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
