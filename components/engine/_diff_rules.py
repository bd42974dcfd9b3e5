"""The rules `plan --diff` reads from components/engine/data/replacements.yaml: which changed
input replaces a resource (provider ForceNew fields, each with its source), which rolls every
node of its pool (replacements.yaml `rolls`), and which the components leave as deployed
(`ignore_changes`). Pure: no Pulumi. `components.engine.diff` re-exports every name here."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleet.errors import CatalogError

TABLE = Path(__file__).resolve().parent / "data" / "replacements.yaml"
_INDEX = re.compile(r"\[\d+\]")


@dataclass(frozen=True)
class Rule:
    """Why a change to `path` replaces a resource of `type`: the provider field and source."""

    type: str
    path: str
    terraform: str
    # force_new | block | remove | no_update_path | replace_on_changes | provider_replaced
    kind: str
    source: str
    why: str = ""
    # a setting of the resource's provider that, when true, makes the change an update
    # (pulumi-kubernetes: enableConfigMapMutable for a ConfigMap's data)
    unless_provider: str = ""


@dataclass(frozen=True)
class Ignored:
    """Why `pulumi up` leaves a changed input as deployed: the component's `ignore_changes`
    names it (Pulumi diffs the new program's inputs with that path set to the old value)."""

    path: str  # the ignore_changes path as the component gives it
    source: str  # where it comes from: the plan's record, or the table row and the code


@dataclass(frozen=True)
class Roll:
    """Why an in-place change to `path` of a `type` rolls every node of its pool (each node
    replaced by a new one, drained first): not a replacement of the resource itself."""

    type: str
    path: str
    why: str
    source: str


@functools.cache
def _table_data() -> dict[str, Any]:
    from ruamel.yaml import YAML

    try:
        data = YAML(typ="safe").load(TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CatalogError(f"cannot read the replacement table {TABLE}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("types"), dict):
        raise CatalogError(f"the replacement table {TABLE} has no `types` mapping")
    return data


@functools.cache
def ignored_by_components() -> dict[str, list[Ignored]]:
    """Resource type -> the `ignore_changes` paths accelfleet's components set on it, from the
    table (each cited to the component code): what `plan --diff` assumes for a plan saved
    before plans recorded resource options."""
    try:
        return {type_: [Ignored(p, f"{where} (replacements.yaml)")
                        for p, where in (entry.get("ignore_changes") or {}).items()]
                for type_, entry in _table_data()["types"].items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise CatalogError(f"cannot read the replacement table {TABLE}: {exc}") from None


@functools.cache
def replacement_table() -> dict[str, list[Rule]]:
    """Resource type -> the rules that make a change replace it (from the YAML data)."""
    try:
        data = _table_data()
        out: dict[str, list[Rule]] = {}
        for type_, entry in data["types"].items():
            src = entry["source"]
            source = f"{src['repo']}@{src['commit'][:12]} ({', '.join(src['files'])})"
            unless = entry.get("unless_provider_sets") or {}
            rules = [Rule(type_, p, tf, "force_new", source, unless_provider=unless.get(p, ""))
                     for p, tf in (entry.get("replace_on_change") or {}).items()]
            rules += [Rule(type_, p, tf, "block", source)
                      for p, tf in (entry.get("replace_on_block") or {}).items()]
            rules += [Rule(type_, p, tf, "remove", source)
                      for p, tf in (entry.get("replace_on_remove") or {}).items()]
            rules += [Rule(type_, p, v["terraform"], "no_update_path", source, v["why"])
                      for p, v in (entry.get("no_update_path") or {}).items()]
            out[type_] = rules
        return out
    except (OSError, KeyError, TypeError, AttributeError) as exc:
        raise CatalogError(f"cannot read the replacement table {TABLE}: {exc}") from None


@functools.cache
def roll_table() -> dict[str, tuple[dict[str, str], tuple[str, ...] | None, str, str]]:
    """Resource type -> (paths whose change rolls the pool's nodes, with why; the paths whose
    change does not when every other does, or None; why for those; the source)."""
    try:
        out = {}
        for type_, entry in _table_data()["types"].items():
            rolls = entry.get("rolls")
            if not rolls:
                continue
            but = rolls.get("on_any_change_but")
            out[type_] = (dict(rolls.get("on_change") or {}),
                          tuple(but) if but is not None else None,
                          str(rolls.get("why") or ""), str(rolls["source"]).strip())
        return out
    except (KeyError, TypeError, AttributeError) as exc:
        raise CatalogError(f"cannot read the replacement table {TABLE}: {exc}") from None


def roll_for(type_: str, path: str) -> Roll | None:
    """Why an in-place change at `path` of `type_` replaces every node of its pool, or None."""
    entry = roll_table().get(type_)
    if entry is None:
        return None
    on_change, but, why, source = entry
    plain = _INDEX.sub("", path)
    for p, reason in on_change.items():
        if plain == p or plain.startswith(p + "."):
            return Roll(type_, p, reason, source)
    if but is not None and not path.startswith("(") \
            and not any(plain == b or plain.startswith(b + ".") for b in but):
        return Roll(type_, plain, why, source)
    return None


def rule_for(type_: str, path: str, old: Any, new: Any) -> Rule | None:
    """The rule that makes this change replace a resource of `type_`, or None."""
    plain = _INDEX.sub("", path)
    for rule in replacement_table().get(type_, ()):
        if rule.kind == "block":
            if plain == rule.path and (old is None or new is None or _lengths_differ(old, new)):
                return rule
        elif rule.kind == "remove":
            if plain == rule.path and old is not None and new is None:
                return rule
        elif plain == rule.path or plain.startswith(rule.path + ".") \
                or rule.path.startswith(plain + "."):
            return rule
    return None


_ANY_INDEX = re.compile(r"\[(?:\d+|\*)\]")


def _plain(path: str) -> str:
    """A property path with its list indexes dropped (`a[0].b`, `a[*].b` -> `a.b`)."""
    return _ANY_INDEX.sub("", path)


def _under(path: str, option: str) -> bool:
    """Whether a changed input at `path` is at or under a resource option's property path."""
    p, o = _plain(path), _plain(option)
    return p == o or p.startswith(o + ".")


def _lengths_differ(old: Any, new: Any) -> bool:
    return isinstance(old, list) and isinstance(new, list) and len(old) != len(new)
