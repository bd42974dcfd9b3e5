"""The offline plan of the example stack: snapshot, determinism, and errors.

Regenerate the snapshot after an intended change with:
    UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/components/test_plan.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from components.engine.plan import run_plan
from fleet.errors import SpecError, StackFileError
from fleet.stack.read import EXAMPLE_STACK

SNAPSHOT = Path(__file__).parent / "snapshots" / "example_plan.json"


@pytest.fixture(scope="module")
def first() -> str:
    return run_plan(EXAMPLE_STACK).to_json()


def test_two_runs_give_identical_bytes(first: str) -> None:
    assert run_plan(EXAMPLE_STACK).to_json().encode() == first.encode()


def test_example_plan_matches_snapshot(first: str) -> None:
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(first, encoding="utf-8")
    assert SNAPSHOT.exists(), "run with UPDATE_SNAPSHOTS=1 to create the snapshot"
    assert first == SNAPSHOT.read_text(encoding="utf-8")


def test_example_plan_shows_the_gcp_pools(first: str) -> None:
    data = json.loads(first)
    pools = {p["name"]: p for p in data["pools"]}
    assert pools["v5p-slice"]["machine_type"] == "ct5p-hightpu-4t"
    assert pools["v5p-slice"]["topology"] == "4x4x4"
    assert pools["v5p-slice"]["nodes"] == 16
    assert pools["h100-train"]["gpu_networking"] == "tcpx"
    assert all(p["resources"] >= 1 for p in pools.values())
    node_pools = [r for r in data["resources"] if r["type"] == "gcp:container/nodePool:NodePool"]
    assert sorted(r["inputs"]["name"] for r in node_pools) == [
        "h100-train", "l4-spot", "system", "v5p-slice", "v6e-serve"]  # system: ml-gke's own
    h100 = next(r for r in node_pools if r["inputs"]["name"] == "h100-train")
    assert h100["parent"] == "accelfleet:gcp:GpuNodePool::h100-train"
    assert h100["inputs"]["nodeConfig"]["guestAccelerators"][0][
        "gpuDriverInstallationConfig"] == {"gpuDriverVersion": "LATEST"}
    assert data["summary"]["resources"] == sum(data["summary"]["by_type"].values())
    teams = {t["name"]: t for t in data["teams"]}
    assert teams["research"]["monthly_usd"] == round(
        sum(p["monthly_usd"] or 0 for p in pools.values() if p["team"] == "research"), 2)


def test_invalid_stack_raises_the_spec_error(tmp_path: Path) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(EXAMPLE_STACK.read_text().replace("topology: 4x4x4", "topology: 4x4x3"))
    with pytest.raises(SpecError, match="topology"):
        run_plan(bad)


def test_missing_stack_file(tmp_path: Path) -> None:
    with pytest.raises(StackFileError):
        run_plan(tmp_path / "Pulumi.none.yaml")
