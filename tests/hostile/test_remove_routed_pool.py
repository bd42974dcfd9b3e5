"""Item 3: removing a pool that a team's routing names says which `routing` entry names it and
that it goes first, instead of "did you mean 'l40s'?" (another GPU, maybe on another cloud)."""

from __future__ import annotations

import shutil
from pathlib import Path

from fleet.stack.read import EXAMPLE_STACK
from tests.hostile.conftest import invoke


def test_removing_a_routed_pool_names_the_routing_entry(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(EXAMPLE_STACK, stack)
    before = stack.read_bytes()
    code, out = invoke("pool", "remove", "v6e-serve", "--stack", str(stack))
    assert code == 2, out
    assert "team vision's routing `prefer` list names pool v6e-serve" in out
    assert "remove 'v6e-serve' from routing.teams[0].prefer first" in out
    assert "did you mean" not in out
    assert stack.read_bytes() == before
