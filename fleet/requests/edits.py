"""Edits of a fleet mapping that both a request (`request`) and its alternatives (`options`)
make: one more pool, one pool's keys changed, one pool removed. Pure: each returns a copy."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

REMOVE = None  # an update that deletes the key


def pools_of(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pool entries of a fleet mapping (entries that are not mappings left out)."""
    pools = raw.get("pools") or []
    return [p for p in pools if isinstance(p, dict)]


def with_pool(raw: Mapping[str, Any], entry: Mapping[str, Any]) -> dict[str, Any]:
    """The fleet mapping with one more pool at the end."""
    spec = copy.deepcopy(dict(raw))
    spec["pools"] = [*pools_of(spec), dict(entry)]
    return spec


def with_updates(raw: Mapping[str, Any], name: str, updates: Mapping[str, Any]
                 ) -> dict[str, Any]:
    """The fleet mapping with pool `name`'s keys set (None deletes a key)."""
    spec = copy.deepcopy(dict(raw))
    for pool in pools_of(spec):
        if pool.get("name") == name:
            for key, value in updates.items():
                if value is REMOVE:
                    pool.pop(key, None)
                else:
                    pool[key] = value
    return spec


def without_pool(raw: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The fleet mapping without pool `name`."""
    spec = copy.deepcopy(dict(raw))
    spec["pools"] = [p for p in pools_of(spec) if p.get("name") != name]
    return spec
