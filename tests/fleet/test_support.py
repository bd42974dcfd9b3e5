"""Issue 27, class 4: what a machine family supports is catalog data with sources
(fleet/catalog/data/support.yaml), and `fleet validate` refuses what the cloud refuses."""

from __future__ import annotations

from typing import Any

import pytest

from fleet.catalog import load_catalog
from fleet.catalog.support import OPTIONS, load_support, version_key
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


def test_a_gpu_pool_has_no_minimum_of_its_own(spec: dict[str, Any]) -> None:
    spec["clusters"][0]["kubernetes_version"] = "1.30"
    validate_fleet(spec)


def test_every_entry_has_a_source_and_names_a_catalog_family() -> None:
    support, catalog = load_support(), load_catalog()
    families = {g.key for g in catalog.tpus.values()} | set(catalog.machines)
    for c in support.consumption:
        assert c.source and set(c.options) <= set(OPTIONS)
    for m in support.min_versions:
        assert m.source and version_key(m.min) is not None
        assert m.accelerator in families, m.accelerator


def test_every_capacity_form_is_an_option_the_data_knows() -> None:
    forms = [Capacity(), Capacity(spot=True), Capacity(flex_start=True), Capacity(queued=True),
             Capacity(reservation="r"), Capacity(reservation="cr-0123456789abcdef0", block=True)]
    assert sorted(consumption_option(c) for c in forms) == sorted(OPTIONS)


def test_eks_refuses_what_it_does_not_offer(spec: dict[str, Any]) -> None:
    spec["pools"].append(pool(name="g6", cluster="eks", accelerator="g6.xlarge",
                              zone="us-east-1a", capacity="flex-start"))
    found = [p for p in problems(spec) if p.where.startswith("pools 'g6'.capacity")]
    assert len(found) == 1  # told once (the cloud's rule and support.yaml agree)
