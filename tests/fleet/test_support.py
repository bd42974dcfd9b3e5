"""Issue 27, class 4: what a machine family supports is catalog data with sources
(fleet/catalog/data/support.yaml), and `fleet validate` refuses what the cloud refuses."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import fleet.rules.support as support_rule
from fleet.catalog import load_catalog
from fleet.catalog.support import (
    KINDS,
    OPTIONS,
    Ami,
    MinVersion,
    load_support,
    version_key,
)
from fleet.rules.support import consumption_option
from fleet.rules.validate import validate_fleet
from fleet.spec.fields import Capacity
from tests.fleet.conftest import pool, problems

TPU7X = {"name": "w", "accelerator": "tpu7x", "topology": "2x2x1", "nodes": None,
         "zone": "us-central1-c"}


def _versions(spec: dict[str, Any]) -> list[str]:
    return [p.message for p in problems(spec)
            if p.where.startswith("clusters 'gke'.kubernetes_version")]


def test_tpu7x_on_gke_1_32_is_refused(spec: dict[str, Any]) -> None:
    """The issue's example: tpu7x needs GKE 1.34.0-gke.2201000 (GKE's Ironwood page)."""
    spec["clusters"][0]["kubernetes_version"] = "1.32"
    spec["pools"].append(pool(**TPU7X))
    found = _versions(spec)
    assert len(found) == 1
    assert "pool 'w' (tpu7x) needs GKE 1.34.0-gke.2201000" in found[0]
    assert "tpu-ironwood" in found[0]  # the source, named


@pytest.mark.parametrize("version", ["1.33.5", "1.34.0-gke.2100000"])
def test_tpu7x_below_the_build_is_refused(spec: dict[str, Any], version: str) -> None:
    spec["clusters"][0]["kubernetes_version"] = version
    spec["pools"].append(pool(**TPU7X))
    assert _versions(spec)


@pytest.mark.parametrize("version", ["1.34", "1.34.0", "1.34.0-gke.2201000", "1.35", "latest"])
def test_tpu7x_at_or_above_passes(spec: dict[str, Any], version: str) -> None:
    spec["clusters"][0]["kubernetes_version"] = version
    spec["pools"].append(pool(**TPU7X))
    validate_fleet(spec)


def test_v6e_on_gke_1_30_is_refused(spec: dict[str, Any]) -> None:
    spec["clusters"][0]["kubernetes_version"] = "1.30"
    spec["pools"].append(pool(name="t", accelerator="v6e 2x2", nodes=None,
                              zone="us-central1-b"))
    assert any("(v6e) needs GKE 1.31.2-gke.1115000" in m for m in _versions(spec))


def test_a3_high_has_no_minimum_read(spec: dict[str, Any]) -> None:
    """a3-highgpu's floor is NOT READ (support.yaml says why): nothing is refused for it."""
    spec["clusters"][0]["kubernetes_version"] = "1.30"
    validate_fleet(spec)


def _families() -> set[str]:
    catalog = load_catalog()
    return ({g.key for g in catalog.tpus.values()} | set(catalog.machines)
            | {m.family for m in catalog.machines.values()})


def test_every_entry_has_a_source_and_names_a_catalog_family() -> None:
    support, catalog = load_support(), load_catalog()
    families = _families()
    for c in support.consumption:
        assert c.source and set(c.options) <= set(OPTIONS)
    for m in support.min_versions:
        assert m.source and all(version_key(f) is not None for f in m.floors)
        assert m.accelerator in families, m.accelerator
    for om in support.option_min_versions:
        assert om.source and om.option in OPTIONS and om.kind in KINDS
    for refusal in support.option_refusals:
        assert refusal.source and refusal.accelerator in families, refusal.accelerator
    for no in support.runtime_refusals:
        assert no.source and no.accelerator in families, no.accelerator
    aws_families = {m.family for m in catalog.machines.values() if m.cloud == "aws"}
    for ami in support.amis:
        assert ami.source and set(ami.families) <= aws_families, ami.ami
        assert ami.ami in catalog.ami_types


def test_every_gpu_family_of_eks_has_an_ami_with_its_driver() -> None:
    """Each GPU family the catalog offers on EKS is one the accelerated AMIs list: a pool of
    any of them with the default AMI passes (AWS's table, support.yaml `amis`)."""
    support, catalog = load_support(), load_catalog()
    (al2023,) = [a for a in support.amis if a.ami == "al2023"]
    gpu = {m.family for m in catalog.machines.values() if m.cloud == "aws" and m.gpus}
    assert gpu <= set(al2023.families)


# -- GPU families: GPUDirect RDMA's floors (AI Hypercomputer's GKE requirements) ---------------

@pytest.mark.parametrize(("machine", "version", "floor"), [
    ("a3-ultragpu-8g", "1.31.3-gke.1000000", "1.31.4-gke.1183000"),
    ("a3-ultragpu-8g", "1.30", "1.31.4-gke.1183000"),
    ("a4-highgpu-8g", "1.32.1-gke.1729000", "1.32.2-gke.1475000"),
    ("a4-highgpu-8g", "1.31", "1.32.2-gke.1475000"),
])
def test_rdma_machines_below_their_floor_are_refused(spec: dict[str, Any], machine: str,
                                                     version: str, floor: str) -> None:
    spec["clusters"][0]["kubernetes_version"] = version
    spec["pools"].append(pool(name="r", accelerator=machine, zone="us-central1-b"))
    found = [m for m in _versions(spec) if "pool 'r'" in m]
    assert len(found) == 1 and f"needs GKE {floor} or later" in found[0]
    assert "gke-ai-hypercompute" in found[0]


@pytest.mark.parametrize(("machine", "version"), [
    ("a3-ultragpu-8g", "1.31.4-gke.1183000"), ("a3-ultragpu-8g", "1.31"),
    ("a4-highgpu-8g", "1.32.2-gke.1475000"), ("a4-highgpu-8g", "1.33"),
])
def test_rdma_machines_at_their_floor_pass(spec: dict[str, Any], machine: str,
                                           version: str) -> None:
    spec["clusters"][0]["kubernetes_version"] = version
    spec["pools"].append(pool(name="r", accelerator=machine, zone="us-central1-b"))
    validate_fleet(spec)


# -- consumption options: their own floors, and a family that cannot take one ----------------

def test_flex_start_gpus_need_gke_1_32_2(spec: dict[str, Any]) -> None:
    spec["clusters"][0]["kubernetes_version"] = "1.31"
    spec["pools"].append(pool(name="f", accelerator="a3-highgpu-8g", capacity="flex-start",
                              nodes=None, autoscaling={"min_nodes": 0, "max_nodes": 2}))
    found = [m for m in _versions(spec) if "pool 'f'" in m]
    assert len(found) == 1
    assert "flex-start GPU capacity, which needs GKE 1.32.2-gke.1652000" in found[0]
    assert "concepts/dws" in found[0]


def test_flex_start_tpus_need_gke_1_33(spec: dict[str, Any]) -> None:
    """v6e runs on 1.32 (its floor is 1.31.2), but flex-start TPUs need 1.33.0-gke.1712000."""
    spec["clusters"][0]["kubernetes_version"] = "1.32"
    spec["pools"].append(pool(name="t", accelerator="v6e 2x2", nodes=None,
                              zone="us-central1-b", capacity="flex-start"))
    found = [m for m in _versions(spec) if "pool 't'" in m]
    assert len(found) == 1 and "flex-start TPU capacity, which needs GKE 1.33.0-gke.1712000" \
        in found[0]


def test_queued_gpus_need_gke_1_32_2(spec: dict[str, Any]) -> None:
    spec["clusters"][0]["kubernetes_version"] = "1.32.1-gke.1000000"
    spec["pools"].append(pool(name="q", accelerator="a3-highgpu-8g", capacity="queued",
                              nodes=None, autoscaling={"min_nodes": 0, "max_nodes": 2},
                              placement="none"))
    found = [m for m in _versions(spec) if "pool 'q'" in m]
    assert len(found) == 1 and "queued GPU capacity, which needs GKE 1.32.2-gke.1652000" \
        in found[0]


def test_flex_start_at_its_floor_passes(spec: dict[str, Any]) -> None:
    spec["clusters"][0]["kubernetes_version"] = "1.32.2-gke.1652000"
    spec["pools"].append(pool(name="f", accelerator="a3-highgpu-8g", capacity="flex-start",
                              nodes=None, autoscaling={"min_nodes": 0, "max_nodes": 2}))
    validate_fleet(spec)


def test_tpu_v4_cannot_be_flex_start(spec: dict[str, Any]) -> None:
    """GKE's flex-start page: "TPU v3 and v4 are not supported"."""
    spec["pools"].append(pool(name="v4", accelerator="v4", topology="2x2x1", nodes=None,
                              zone="us-central2-b", capacity="flex-start"))
    found = [p for p in problems(spec) if p.where.startswith("pools 'v4'.capacity")]
    assert len(found) == 1
    assert "v4 cannot be obtained as flex-start" in found[0].message


# -- EKS: the accelerated AMI carries the family's driver ----------------------------------

def _with(monkeypatch: pytest.MonkeyPatch, **changes: Any) -> None:
    changed = dataclasses.replace(load_support(), **changes)
    monkeypatch.setattr(support_rule, "load_support", lambda: changed)


def test_an_ami_without_the_family_is_refused(spec: dict[str, Any],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule reads the AMI table: an AMI that did not list g6 refuses a g6 pool on it and
    names the AMI that does."""
    amis = tuple(Ami(a.cloud, a.ami, tuple(f for f in a.families if f != "g6")
                     if a.ami == "bottlerocket" else a.families, a.min_kubernetes, a.source)
                 for a in load_support().amis)
    _with(monkeypatch, amis=amis)
    spec["pools"].append(pool(name="g6", cluster="eks", accelerator="g6.xlarge",
                              zone="us-east-1a", ami="bottlerocket"))
    found = [p for p in problems(spec) if p.where.startswith("pools 'g6'.ami")]
    assert len(found) == 1 and "bottlerocket NVIDIA AMI does not support g6" in found[0].message
    assert found[0].accepted == ("al2023",)


def test_an_eks_version_older_than_the_ami_is_refused(spec: dict[str, Any],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    amis = tuple(dataclasses.replace(a, min_kubernetes="1.34") for a in load_support().amis)
    _with(monkeypatch, amis=amis)
    spec["clusters"][1]["kubernetes_version"] = "1.33"
    spec["pools"].append(pool(name="g6", cluster="eks", accelerator="g6.xlarge",
                              zone="us-east-1a"))
    found = [p.message for p in problems(spec)
             if p.where.startswith("clusters 'eks'.kubernetes_version")]
    assert len(found) == 1 and "published for Kubernetes 1.34 and later" in found[0]


# -- floors per minor ------------------------------------------------------------------------

@pytest.mark.parametrize(("version", "held"), [
    ("1.27.9", None), ("1.28.10-gke.1141000", "1.28.10-gke.1141000"),
    ("1.29.3", "1.29.5-gke.1121000"), ("1.31", "1.29.5-gke.1121000"),
])
def test_a_version_is_held_to_its_minor_floor(version: str, held: str | None) -> None:
    entry = MinVersion("gcp", "x", "1.28.10-gke.1141000, 1.29.5-gke.1121000", "s")
    key = version_key(version)
    assert key is not None and entry.floor_for(key) == held


def test_floors_per_minor_refuse_an_early_patch(spec: dict[str, Any],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    mins = (*load_support().min_versions,
            MinVersion("gcp", "a3-megagpu", "1.28.10-gke.1141000, 1.29.5-gke.1121000", "s"))
    _with(monkeypatch, min_versions=mins)
    spec["clusters"][0]["kubernetes_version"] = "1.29.3-gke.1000000"
    spec["pools"].append(pool(name="m", accelerator="a3-megagpu-8g"))
    found = [m for m in _versions(spec) if "pool 'm'" in m]
    assert len(found) == 1 and "needs GKE 1.29.5-gke.1121000 or later" in found[0]
    spec["clusters"][0]["kubernetes_version"] = "1.30"
    validate_fleet(spec)


def test_every_capacity_form_is_an_option_the_data_knows() -> None:
    forms = [Capacity(), Capacity(spot=True), Capacity(flex_start=True), Capacity(queued=True),
             Capacity(reservation="r"), Capacity(reservation="cr-0123456789abcdef0", block=True)]
    assert sorted(consumption_option(c) for c in forms) == sorted(OPTIONS)


def test_eks_refuses_what_it_does_not_offer(spec: dict[str, Any]) -> None:
    spec["pools"].append(pool(name="g6", cluster="eks", accelerator="g6.xlarge",
                              zone="us-east-1a", capacity="flex-start"))
    found = [p for p in problems(spec) if p.where.startswith("pools 'g6'.capacity")]
    assert len(found) == 1  # told once (the cloud's rule and support.yaml agree)
