"""pydantic's complaints about a stack, turned into problems a person can act on: what the
field accepts in words (never a regex, never pydantic's "Value error," prefix), the value that
was given, and the fix. Also the record of a problem for `fleet validate --json`."""

from __future__ import annotations

import math
import re
import types
from collections.abc import Mapping, Sequence
from typing import Any, ForwardRef, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from fleet.errors import Problem, Where, suggest
from fleet.spec.fields import PATTERN_WORDS, FleetSpec, SpecValueError

_NUMBER = {"int_type": "a whole number", "int_parsing": "a whole number",
           "int_from_float": "a whole number", "float_type": "a number",
           "float_parsing": "a number", "bool_type": "true or false",
           "bool_parsing": "true or false", "string_type": "text",
           "list_type": "a list (`- item` lines, or [a, b])",
           "dict_type": "a mapping (`key: value` lines)",
           "model_type": "a mapping (`key: value` lines)",
           "model_attributes_type": "a mapping (`key: value` lines)"}


def from_pydantic(exc: ValidationError, raw: object) -> list[Problem]:
    """One problem per pydantic error, each naming the field, the value, what is accepted and
    the fix."""
    return [_problem(err, raw) for err in exc.errors(include_url=False)]


def _problem(err: Any, raw: object) -> Problem:
    loc: tuple[int | str, ...] = tuple(err["loc"])
    where = where_of(loc, raw)
    value = err.get("input")
    field = next((str(p) for p in reversed(loc) if isinstance(p, str)), "value")
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        known = _fields_at(loc[:-1])
        near = suggest(field, known) if known else []
        return Problem(where, "unknown field" + (f"; did you mean {', '.join(map(repr, near))}?"
                                                 if near else ""),
                       f"rename it to {near[0]!r}" if near else
                       "remove it, or check its spelling against the README's stack format",
                       tuple(sorted(known)))
    if kind == "missing":
        return Problem(where, "is required", f"add `{field}:` (see the README's stack format)")
    if kind == "value_error" and isinstance(ctx.get("error"), SpecValueError):
        error: SpecValueError = ctx["error"]
        return Problem(where, str(error), error.fix)
    if kind == "string_type" and field == "account" and isinstance(value, int):
        digits = str(value)
        lost = " and dropped its leading zeros" if len(digits) < 12 else ""
        return Problem(where, f"YAML read the unquoted account id as the number {digits}{lost}; "
                       "an AWS account id is 12 digits written as text",
                       f'quote it: account: "{digits.zfill(12)}"')
    if kind == "string_pattern_mismatch" and ctx.get("pattern") in PATTERN_WORDS:
        words, example = PATTERN_WORDS[ctx["pattern"]]
        near = _regions_near(ctx["pattern"], value)
        if near:
            return Problem(where, f"{_shown(value)} is not {words}; did you mean "
                           f"{', '.join(map(repr, near))}?",
                           f"use {near[0]!r}, e.g. {field}: {near[0]}", tuple(near))
        return Problem(where, f"{_shown(value)} is not {words}", f"write e.g. {field}: {example}")
    if kind == "literal_error":
        options = tuple(re.findall(r"'([^']*)'", str(ctx.get("expected", ""))))
        near = suggest(str(value), options) if isinstance(value, str) else []
        return Problem(where, f"{_shown(value)} is not one of {', '.join(options)}"
                       + (f"; did you mean {near[0]!r}?" if near else ""),
                       f"use {near[0]!r}" if near else f"use one of {', '.join(options)}", options)
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(ctx.values()), "?")
        side = "at least" if kind.startswith("greater") else "at most"
        strict = " (exclusive)" if kind in ("greater_than", "less_than") else ""
        return Problem(where, f"{_shown(value)} is out of range: {field} is {side} "
                       f"{bound}{strict}", f"use a value {side} {bound}")
    if kind in ("model_type", "model_attributes_type") and not isinstance(value, Mapping):
        return _not_a_mapping(loc, where, field, value)
    if kind in _NUMBER:
        want = _NUMBER[kind]
        fix = f"write {want} for `{field}`"
        if isinstance(value, str) and kind != "string_type" and _reads_as(kind, value):
            fix = f"write it without quotes, e.g. {field}: {value.strip()}"
        elif kind == "string_type" and isinstance(value, list | Mapping):
            fix = (f"write one line of text for `{field}`, not a "
                   f"{'list' if isinstance(value, list) else 'mapping'}")
        elif kind == "string_type":
            fix = f"write it in quotes, e.g. {field}: \"{_shown(value, quoted=False)}\""
        return Problem(where, f"must be {want}, not {_kind_of(value)} {_shown(value)}", fix)
    message = str(err["msg"]).removeprefix("Value error, ")
    return Problem(where, f"{message} (got {_shown(value)})",
                   f"see the README's stack format for `{field}`")


def _regions_near(pattern: str, value: object) -> list[str]:
    """The catalog's regions closest to a malformed region (`us-central` -> us-central1)."""
    from fleet.spec.fields import AWS_REGION, GCP_REGION

    cloud = {GCP_REGION: "gcp", AWS_REGION: "aws"}.get(pattern)
    if cloud is None or not isinstance(value, str) or len(value) > 60:
        return []
    from fleet.catalog import load_catalog

    known = sorted(load_catalog().regions[cloud].zones)  # type: ignore[index]
    starts = [r for r in known if value and r.startswith(value.strip().lower())]
    return (starts or suggest(value.strip().lower(), known))[:3]


def readme_words(problems: Sequence[Problem], raw: object) -> list[Problem]:
    """Problems in the stack's own words: a pool written with `zone: Z` is told about its
    `zone`, not about `zones[0]` (the form the spec turns it into)."""
    out = []
    for p in problems:
        at = p.where
        if isinstance(at, Where) and at.section == "pools" and at.field is not None \
                and (at.field == "zones[0]" or at.field.startswith(("zones[0].", "zones[0]["))):
            pool = _pool_of(raw, at.position, at.name)
            if isinstance(pool, Mapping) and "zone" in pool and "zones" not in pool:
                field = "zone" + at.field.removeprefix("zones[0]")
                p = Problem(Where("pools", position=at.position, name=at.name, field=field),
                            p.message, p.hint, p.accepted)
        out.append(p)
    return out


def _pool_of(raw: object, position: int | None, name: str | None) -> object:
    pools = raw.get("pools") if isinstance(raw, Mapping) else None
    if not isinstance(pools, list):
        return None
    if position is not None:
        return pools[position] if position < len(pools) else None
    return next((p for p in pools if isinstance(p, Mapping) and p.get("name") == name), None)


def _shown(value: object, *, quoted: bool = True) -> str:
    """A value as a message shows it, at most 60 characters (a 1 MB value is cut)."""
    from fleet.input_files import shown

    if not quoted and isinstance(value, int | float | str) and not isinstance(value, bool):
        text = str(value) if not isinstance(value, int) or abs(value) < 10**60 else "..."
        return text if len(text) <= 60 else text[:57] + "..."
    return shown(value)


def _reads_as(kind: str, text: str) -> bool:
    """Whether `text`, written without quotes, is what `kind` asks for (so that the fix
    "write it without quotes" never repeats a value that would be refused again)."""
    words = text.strip()
    if kind.startswith("int"):
        return re.fullmatch(r"[-+]?[0-9][0-9_]*", words) is not None
    if kind.startswith("float"):
        try:
            return math.isfinite(float(words))
        except ValueError:
            return False
    if kind.startswith("bool"):
        return words in ("true", "false")
    return False


def _kind_of(value: object) -> str:
    if isinstance(value, bool):
        return "the boolean"
    if isinstance(value, (int, float)):
        return "the number"
    if isinstance(value, str):
        return "the text"
    if isinstance(value, list):
        return "the list"
    if isinstance(value, Mapping):
        return "the mapping"
    return "the value"


def _models_in(annotation: Any, owner: type[BaseModel] | None = None
               ) -> list[type[BaseModel]]:
    """The models an annotation names; a forward reference (a model declared further down
    its module, as `Cluster.system_pool: SystemPool`) is looked up in `owner`'s module."""
    if isinstance(annotation, ForwardRef | str) and owner is not None:
        import sys

        name = annotation.__forward_arg__ if isinstance(annotation, ForwardRef) else annotation
        annotation = vars(sys.modules[owner.__module__]).get(name)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType, list, tuple, dict) or origin is not None:
        return [m for arg in get_args(annotation) for m in _models_in(arg, owner)]
    return []


def _models_at(loc: tuple[int | str, ...]) -> list[type[BaseModel]]:
    """The models a value at `loc` may be (FleetSpec at the top)."""
    models: list[type[BaseModel]] = [FleetSpec]
    for part in loc:
        if isinstance(part, int):
            continue
        nxt: list[type[BaseModel]] = []
        for m in models:
            info = m.model_fields.get(part)
            if info is not None:
                nxt += _models_in(info.annotation, m)
        models = nxt
    return models


def _fields_at(loc: tuple[int | str, ...]) -> list[str]:
    """The fields the model at `loc` declares (FleetSpec at the top), for did-you-mean."""
    return sorted({f for m in _models_at(loc) for f in m.model_fields})


def _not_a_mapping(loc: tuple[int | str, ...], where: Where, field: str, value: object
                   ) -> Problem:
    """A section written as one value (`gate: true`) where it takes `key: value` lines: what
    it is by default (a section with `enabled: true` by default is on already) and its keys
    (issue 38: `gate: true` was refused without saying either)."""
    models = _models_at(loc)
    keys = tuple(sorted({f for m in models for f in m.model_fields}))
    on = any((info := m.model_fields.get("enabled")) is not None and info.default is True
             for m in models)
    listed = f"; its keys: {', '.join(keys)}" if keys else ""
    example = next((k for k in keys if k not in ("enabled", "reason")), "key")
    if value is True and on:
        return Problem(where, f"`{field}: true` is not needed: {field} is on by default (a "
                       f"mapping of what to change, not true){listed}",
                       f"remove `{field}: true` for the defaults, or write only the keys to "
                       f"change, e.g. {field}: {{{example}: ...}}")
    return Problem(where, f"must be a mapping (`key: value` lines), not {_kind_of(value)} "
                   f"{_shown(value)}{listed}",
                   f"write `{field}:` with its keys below it, e.g. {field}: {{{example}: ...}}")


def where_of(loc: tuple[int | str, ...], raw: object) -> Where:
    """('pools', 2, 'nodes') -> "pools[2] 'h100-train'.nodes", naming the item where known."""
    if not loc:
        return Where("spec")
    if not isinstance(loc[0], str):
        return Where(_path(loc, raw))
    section, rest = loc[0], loc[1:]
    node: Any = raw.get(section) if isinstance(raw, Mapping) else None
    position, name = None, None
    if rest and isinstance(rest[0], int):
        position, rest = rest[0], rest[1:]
        node = node[position] if isinstance(node, list) and position < len(node) else None
        if isinstance(node, Mapping) and isinstance(node.get("name"), str):
            name = node["name"]
    return Where(section, position=position, name=name, field=_path(rest, node) or None)


def _path(loc: tuple[int | str, ...], node: Any) -> str:
    """The rest of a location as a field path, naming list items where known."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            if isinstance(node, Mapping) and isinstance(node.get("name"), str):
                out += f" {node['name']!r}"
        else:
            out += f".{part}" if out else str(part)
            node = node.get(part) if isinstance(node, Mapping) else None
    return out


def records(problems: Sequence[Problem], raw: object) -> tuple[dict[str, Any], ...]:
    """Every problem as `fleet validate --json` reports it (see `record`), looking items up
    by name through one index, however many problems."""
    index: dict[tuple[str, str], Any] = {}
    if isinstance(raw, Mapping):
        for section, items in raw.items():
            if isinstance(items, list):
                for item in items:
                    if isinstance(item, Mapping) and isinstance(item.get("name"), str):
                        index.setdefault((str(section), item["name"]), item)
    return tuple(record(p, raw, index) for p in problems)


def record(problem: Problem, raw: object,
           index: Mapping[tuple[str, str], Any] | None = None) -> dict[str, Any]:
    """A problem as `fleet validate --json` reports it: where, the pool (or cluster, team),
    the field, the value given, the message, what is accepted and the fix; read off the parts
    of its `Where` (a problem with a plain-text where names no section, item or field)."""
    at = problem.where if isinstance(problem.where, Where) else None
    section = at.section if at is not None else None
    name, field = (at.name, at.field) if at is not None else (None, None)
    if at is not None and section in ("clouds", "smoke", "gate"):
        field = f"{section}.{field}" if field else section
    value = _value_at(raw, at, index) if at is not None else None
    return {"where": str(problem.where), "section": section, "name": name,
            "pool": name if section == "pools" else None, "field": field,
            "value": value, "message": problem.message, "accepted": list(problem.accepted),
            "fix": problem.hint}


def _value_at(raw: object, at: Where, index: Mapping[tuple[str, str], Any] | None) -> Any:
    """The value the stack gave where a problem points, or None."""
    node: Any = raw.get(at.section) if isinstance(raw, Mapping) else None
    if at.position is not None or at.name is not None:
        if not isinstance(node, list):
            return None
        if at.position is not None:
            node = node[at.position] if at.position < len(node) else None
        elif index is not None and at.name is not None:
            node = index.get((at.section, at.name))
        else:
            node = next((i for i in node if isinstance(i, Mapping) and i.get("name") == at.name),
                        None)
    if at.field is None:
        return None if at.name is not None else _plain(node)
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", at.field):
        if part.startswith("["):
            i = int(part[1:-1])
            node = node[i] if isinstance(node, list) and i < len(node) else None
        else:
            if isinstance(node, Mapping) and part == "zones" and part not in node \
                    and "zone" in node:
                node = {"zones": [node["zone"]]}  # `zone: Z` is short for `zones: [Z]`
            node = node.get(part) if isinstance(node, Mapping) else None
    return _plain(node)


def _plain(value: Any, depth: int = 0) -> Any:
    """A JSON-ready copy, small: scalars as they are, anything else as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value if not isinstance(value, str) or len(value) <= 200 else value[:200] + "..."
    if depth < 2 and isinstance(value, list) and len(value) <= 20:
        return [_plain(v, depth + 1) for v in value]
    if depth < 2 and isinstance(value, Mapping) and len(value) <= 20:
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    return _shown(value)
