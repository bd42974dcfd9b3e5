"""The catalog holds the GPU machine types people run today (issue 20, item 15): every GPU
machine type of a dated public list (SkyPilot's catalog, the snapshot zones.yaml reads; GCP and
AWS) is a catalog machine type or excluded with its reason (fleet/catalog/data/not_built.yaml),
and the catalog's vCPUs and memory agree with the snapshot's."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet.catalog import load_catalog

DATA = Path(__file__).parent / "data"
# the catalog's list of what it does not build, with reasons (fleet/catalog/data/not_built.yaml:
# `fleet validate` gives the reason to whoever names one, issue 36)
NOT_BUILT = Path(__file__).resolve().parents[2] / "fleet" / "catalog" / "data" / "not_built.yaml"
SNAPSHOT = DATA / "skypilot_gcp_gpu_vms.csv"
# A trimmed copy of SkyPilot's AWS catalog: its header says which parts of the file were read.
AWS_SNAPSHOT = DATA / "skypilot_aws_accelerator_vms.csv"
AWS_COMMIT = "00148f2af3672e2229b4f7bf8157d5a3f36e3c35"


def snapshot_rows(path: Path = SNAPSHOT) -> list[dict[str, str]]:
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines()
             if ln and not ln.startswith("#")]
    return list(csv.DictReader(lines))


def coverage() -> dict[str, Any]:
    data = yaml.safe_load(NOT_BUILT.read_text(encoding="utf-8"))
    assert data["schema_version"] == 1
    return dict(data)


def test_the_snapshot_names_its_source() -> None:
    head = SNAPSHOT.read_text(encoding="utf-8").splitlines()[0]
    assert "skypilot-catalog@006059e0f18acb1341e22a27751e9f80df6ba92f" in head
    # the same commit as the zones the catalog reads
    assert "006059e0f18acb1341e22a27751e9f80df6ba92f" in load_catalog().zone_offers.sources["gcp"]


def test_every_gpu_machine_type_of_the_snapshot_is_built_or_excluded_with_a_reason() -> None:
    cat = load_catalog()
    excluded = coverage()["gcp"]["machine_types"]
    machines = [r for r in snapshot_rows() if r["InstanceType"]]
    assert len(machines) > 20
    missing = []
    for row in machines:
        name = row["InstanceType"]
        built = name in cat.machines and cat.machines[name].cloud == "gcp"
        if built:
            assert name not in excluded, f"{name} is built now: drop it from not_built.yaml"
        elif not str(excluded.get(name, "")).strip():
            missing.append(name)
    assert not missing, f"GPU machine types neither in the catalog nor excluded: {missing}"


@pytest.mark.parametrize("name", ["g2-standard-4", "g2-standard-8", "g2-standard-16",
                                  "g2-standard-32", "a3-highgpu-1g", "a3-highgpu-2g",
                                  "a3-highgpu-4g", "a3-edgegpu-8g"])
def test_the_types_the_issue_names_are_built(name: str) -> None:
    machine = load_catalog().machines[name]
    assert machine.gpus >= 1 and machine.gke_accelerator


@pytest.mark.parametrize("path", [SNAPSHOT, AWS_SNAPSHOT], ids=["gcp", "aws"])
def test_figures_agree_with_the_snapshot(path: Path) -> None:
    cat = load_catalog()
    compared = 0
    for row in snapshot_rows(path):
        host = cat.hosts.get(row["InstanceType"])
        if host is None:
            continue
        compared += 1
        assert (host.vcpus, host.memory_gib) == (
            int(float(row["vCPUs"])), int(float(row["MemoryGiB"]))), row["InstanceType"]
    assert compared > 10


def test_attached_gpus_are_built_or_excluded_with_a_reason() -> None:
    # GPUs attached to N1 machines (accelerator type and count on an n1 machine): T4 is built
    # (gcp.yaml family n1-t4); each other one is excluded with its reason.
    cat = load_catalog()
    attached = coverage()["gcp"]["attached_gpus"]
    built = {m.accelerator for m in cat.machines.values() if m.cloud == "gcp" and m.attached_to}
    names = [r["AcceleratorName"] for r in snapshot_rows() if not r["InstanceType"]]
    assert "T4" in names and "t4" in built
    for name in names:
        if name.lower() in built:
            assert name not in attached, f"{name} is built now: drop it from not_built.yaml"
        else:
            assert str(attached.get(name, "")).strip(), f"{name}: attached GPU with no reason"


def test_named_types_outside_the_snapshot_are_built_or_excluded() -> None:
    cat = load_catalog()
    not_in = coverage()["not_in_snapshot"]
    for name in ["g4-standard-48", "g4-standard-384", "g4dn.xlarge", "g4dn.12xlarge",
                 "g4dn.metal", "p5.4xlarge"]:
        assert name in cat.machines, name
    for name, reason in not_in.items():
        assert name not in cat.machines and "Arm" in reason, name


def test_a3_high_partial_sizes_have_no_gpudirect() -> None:
    # only a3-highgpu-8g carries the four GPU NICs of GPUDirect-TCPX
    cat = load_catalog()
    assert cat.machines["a3-highgpu-8g"].networking is not None
    assert all(cat.machines[f"a3-highgpu-{n}g"].networking is None for n in (1, 2, 4))


def test_p5_4xlarge_gets_its_one_efa_not_the_48xlarges_32() -> None:
    """Issue 27 item 7: one EFA interface (the EFA device plugin chart lists it)."""
    cat = load_catalog()
    assert cat.machines["p5.48xlarge"].networking.efa_interfaces == 32  # type: ignore[union-attr]
    assert cat.machines["p5.4xlarge"].networking.efa_interfaces == 1  # type: ignore[union-attr]


def test_the_aws_snapshot_names_its_source_and_what_it_did_not_read() -> None:
    text = AWS_SNAPSHOT.read_text(encoding="utf-8")
    assert f"skypilot-catalog@{AWS_COMMIT}" in text.splitlines()[0]
    # the same commit as the zones the catalog reads for AWS
    assert AWS_COMMIT in load_catalog().zone_offers.sources["aws"]
    assert "TRIMMED" in text and "# Not read:" in text


def test_every_accelerator_type_of_the_aws_snapshot_is_built_or_excluded_with_a_reason() -> None:
    cat = load_catalog()
    excluded = coverage()["aws"]["machine_types"]
    rows = snapshot_rows(AWS_SNAPSHOT)
    names = [r["InstanceType"] for r in rows]
    assert len(names) > 60 and len(set(names)) == len(names)
    assert all(r["AcceleratorName"] for r in rows)
    missing = []
    for name in names:
        built = name in cat.machines and cat.machines[name].cloud == "aws"
        if built:
            assert name not in excluded, f"{name} is built now: drop it from not_built.yaml"
        elif not str(excluded.get(name, "")).strip():
            missing.append(name)
    assert not missing, f"accelerator types neither in the catalog nor excluded: {missing}"
    # an exclusion names a type the snapshot lists (no stale or misspelt entries)
    assert not set(excluded) - set(names)


def test_aws_gpu_counts_agree_with_the_snapshot() -> None:
    cat = load_catalog()
    built = [r for r in snapshot_rows(AWS_SNAPSHOT) if r["InstanceType"] in cat.machines]
    assert len(built) >= 38
    for row in built:
        assert cat.machines[row["InstanceType"]].gpus == int(float(row["AcceleratorCount"])), row
    # every AWS GPU machine the catalog builds is in the snapshot
    aws_gpu = {n for n, m in cat.machines.items() if m.cloud == "aws" and m.gpus}
    assert aws_gpu <= {r["InstanceType"] for r in built}


def test_arm_hosts_of_the_aws_snapshot_are_excluded_as_arm() -> None:
    excluded = coverage()["aws"]["machine_types"]
    arm = [r["InstanceType"] for r in snapshot_rows(AWS_SNAPSHOT) if r["Arch"] != "x86_64"]
    assert "g5g.xlarge" in arm
    for name in arm:
        assert "Arm" in excluded[name], name


def test_p6e_gb200_is_not_in_the_read_p_range_of_the_snapshot() -> None:
    # p6-b300.48xlarge is followed by r3.2xlarge in the part that was read: no p6e-gb200 row,
    # so the catalog's Arm exclusion of it sits under not_in_snapshot
    names = {r["InstanceType"] for r in snapshot_rows(AWS_SNAPSHOT)}
    assert "p6-b300.48xlarge" in names and "p6e-gb200.36xlarge" not in names
    assert "p6e-gb200.36xlarge" in coverage()["not_in_snapshot"]
