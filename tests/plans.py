"""One offline plan per stack file's content for the whole test run (per xdist worker): many
test modules read the plan of the same stack (the example, the components' fixtures), and a
plan runs the whole Pulumi program under mocks (seconds each). Tests read a cached plan, never
change it; a test of the plan's own determinism runs `run_plan` itself."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from components.engine.plan import Plan


def planned(path: str | Path) -> Plan:
    """The plan of the stack file at `path` (read-only), planned once per content."""
    resolved = Path(path).resolve()
    return _planned(str(resolved), hashlib.sha256(resolved.read_bytes()).hexdigest())


@cache
def _planned(path: str, digest: str) -> Plan:
    from components.engine.plan import run_plan

    return run_plan(path)
