"""Issue 27, class 3: `plan --diff` can only show a replacement the table knows. Every resource
type any plan creates is in components/engine/data/replacements.yaml, with its ForceNew fields
and their source (repository, commit, file), or listed under `unread` (its fields not read yet:
the diff cannot say whether a change replaces it). A type in neither fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from components.engine.diff import TABLE, replacement_table
from components.engine.plan import run_plan

ROOT = Path(__file__).resolve().parents[2]
STACKS = ["stacks/Pulumi.example.yaml", "tests/components/fixtures/Pulumi.gcpcapacity.yaml",
          "tests/components/fixtures/Pulumi.gcptaints.yaml",
          "tests/components/fixtures/Pulumi.gcptest.yaml"]


def _table() -> dict[str, object]:
    data = YAML(typ="safe").load(TABLE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("stack", STACKS)
def test_every_type_a_plan_creates_is_in_the_table(stack: str) -> None:
    data = _table()
    known = set(data["types"]) | set(data.get("unread") or ())  # type: ignore[call-overload]
    made = {r.type for r in run_plan(ROOT / stack).resources if r.custom}
    assert sorted(made - known) == []


def test_each_type_is_read_or_unread_not_both_and_each_read_one_cites_a_commit() -> None:
    data = _table()
    types, unread = data["types"], data.get("unread") or []
    assert isinstance(types, dict) and isinstance(unread, list)
    assert not set(types) & set(unread)
    assert len(unread) == len(set(unread))
    for type_, entry in types.items():
        src = entry["source"]
        assert src["repo"].startswith("hashicorp/terraform-provider-"), type_
        assert re.fullmatch(r"[0-9a-f]{40}", src["commit"]), type_
        assert src["files"], type_
    rules = replacement_table()
    assert any(r.path == "cidrBlock" for r in rules["aws:ec2/subnet:Subnet"])
