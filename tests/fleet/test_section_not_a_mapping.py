"""A section written as one value where it takes `key: value` lines (issue 38: `gate: true`
was refused as "must be a mapping", without saying the gate is on by default nor which keys
it takes). Each such section says its keys; one on by default (`enabled` defaults to true)
says so for `true`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fleet.conftest import only, pool


def test_gate_true_says_the_gate_is_on_by_default_and_its_keys(spec: dict[str, Any]) -> None:
    spec["pools"] = [pool(name="h100", gate=True)]
    p = only(spec, "pools[0] 'h100'.gate")
    assert "`gate: true` is not needed: gate is on by default" in p.message, p.message
    for key in ("enabled", "max_tier", "fabric", "reprove_interval", "max_quarantine"):
        assert key in p.message, p.message
    assert "remove `gate: true`" in p.hint, p.hint


@pytest.mark.parametrize(("field", "value", "keys"), [
    ("gate", 3, ("enabled", "max_tier")),
    ("gate", "yes", ("enabled", "max_tier")),
    ("gate", ["max_tier"], ("enabled", "max_tier")),
    ("capacity", True, ()),
])
def test_a_pool_section_written_as_one_value_names_its_keys(
        spec: dict[str, Any], field: str, value: object, keys: tuple[str, ...]) -> None:
    spec["pools"] = [pool(name="h100", **{field: value})]
    p = only(spec, f"pools[0] 'h100'.{field}")
    assert "mapping" in p.message or "is not" in p.message, p.message
    for key in keys:
        assert key in p.message, p.message


def test_a_cluster_system_pool_true_says_its_keys(spec: dict[str, Any]) -> None:
    spec["clusters"][0]["system_pool"] = True
    p = only(spec, "clusters[0] 'gke'.system_pool")
    assert "machine_type" in p.message and "nodes" in p.message, p.message
    assert "on by default" in p.message, p.message
