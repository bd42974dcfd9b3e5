"""Issue 36, class 1: capability x capacity x version per machine family, from the providers'
rules. A queued pool is the flex-start node pool GKE builds it as (fleet.rules.support
BUILT_AS); G4 takes no Flex-start VMs; v4 lives in the restricted region us-central2;
tpu7x has a one-chip machine type; Kueue refuses to manage kube-system and its own namespace.

The issue's instances are named as such; the others are this file's own (issue 36 asks for
three per class that nobody named)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleet.catalog import load_catalog
from fleet.errors import SpecError
from fleet.names import KUEUE_REFUSED_NAMESPACES
from fleet.rules.validate import validate_fleet
from tests.fleet.conftest import BASE, pool, problems


def _at(spec: dict[str, Any], where: str) -> list[str]:
    return [p.message for p in problems(spec) if p.where.startswith(where)]


def _version(spec: dict[str, Any], name: str) -> list[str]:
    return [m for m in _at(spec, "clusters 'gke'.kubernetes_version") if f"pool {name!r}" in m]


# -- queued is flex-start --------------------------------------------------------------------

def test_issue_queued_tpu_on_gke_1_32_is_refused(spec: dict[str, Any]) -> None:
    """The issue's instance: a queued TPU pool on 1.32 is a flex-start node pool, and
    flex-start TPUs need 1.33.0-gke.1712000."""
    spec["clusters"][0]["kubernetes_version"] = "1.32"
    spec["pools"].append(pool(name="q", accelerator="v6e 2x2", nodes=None,
                              zone="us-central1-b", capacity="queued"))
    (found,) = _version(spec, "q")
    assert "queued (GKE builds a queued pool as a flex-start node pool) TPU capacity" in found
    assert "1.33.0-gke.1712000" in found and "concepts/dws" in found


def test_own_queued_tpu_one_build_below_the_floor_is_refused(spec: dict[str, Any]) -> None:
    """Own instance: the right minor, an earlier GKE build (1.33.0-gke.1000000)."""
    spec["clusters"][0]["kubernetes_version"] = "1.33.0-gke.1000000"
    spec["pools"].append(pool(name="q", accelerator="v5e 2x4", nodes=None,
                              zone="us-central1-a", capacity="queued"))
    assert _version(spec, "q")
    spec["clusters"][0]["kubernetes_version"] = "1.33.0-gke.1712000"
    validate_fleet(spec)


def test_own_queued_v4_is_refused_as_flex_start_is(spec: dict[str, Any]) -> None:
    """Own instance: GKE's flex-start page says TPU v4 is not supported; a queued v4 pool is
    a flex-start node pool, so it is refused too (the data names flex-start only)."""
    spec["clouds"]["gcp"]["region"] = "us-central2"
    spec["pools"] = [pool(name="v4q", accelerator="v4", topology="2x2x1", nodes=None,
                          zone="us-central2-b", capacity="queued")]
    (found,) = _at(spec, "pools 'v4q'.capacity")
    assert "v4 cannot be obtained as queued (GKE builds a queued pool as a flex-start" in found


@pytest.mark.parametrize("capacity", ["flex-start", "queued"])
def test_issue_g4_takes_no_flex_start_or_queued(spec: dict[str, Any], capacity: str) -> None:
    """The issue's held-back instance: Compute Engine's Flex-start VMs page excepts G4."""
    spec["pools"].append(pool(name="g4", accelerator="g4-standard-48", nodes=None,
                              autoscaling={"min_nodes": 0, "max_nodes": 2}, capacity=capacity,
                              placement="none"))
    (found,) = _at(spec, "pools 'g4'.capacity")
    assert "g4-standard cannot be obtained as" in found and "except A4X and G4" in found


def test_own_g4_on_spot_or_on_demand_passes(spec: dict[str, Any]) -> None:
    """Own instance, the other side: the refusal is of flex-start, not of G4."""
    for capacity in ("spot", "on-demand"):
        s = copy.deepcopy(spec)
        s["pools"].append(pool(name="g4", accelerator="g4-standard-48", nodes=1,
                               capacity=capacity, placement="none"))
        validate_fleet(s)


_GCP_ACCELERATORS = ("a3-highgpu-8g", "a3-megagpu-8g", "g2-standard-24", "g4-standard-48",
                     "a2-highgpu-1g", "v5e 2x4", "v6e 2x2", "v5p 2x2x1", "tpu7x 2x2x1")
_VERSIONS = ("1.31", "1.32", "1.32.2-gke.1652000", "1.33", "1.33.0-gke.1712000", "1.34",
             "1.35")


def _refused(accelerator: str, capacity: str, version: str) -> bool:
    spec = copy.deepcopy(BASE)
    spec["clusters"][0]["kubernetes_version"] = version
    spec["pools"] = [pool(name="x", accelerator=accelerator, nodes=None, capacity=capacity,
                          zone="us-central1-a",
                          autoscaling=None if " " in accelerator
                          else {"min_nodes": 0, "max_nodes": 2},
                          placement=None if " " in accelerator else "none")]
    try:
        validate_fleet(spec)
    except SpecError as err:
        return any(p.where.startswith(("pools 'x'.capacity", "clusters 'gke'.kubernetes"))
                   for p in err.problems)
    return False


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(accelerator=st.sampled_from(_GCP_ACCELERATORS), version=st.sampled_from(_VERSIONS))
def test_property_queued_is_refused_wherever_flex_start_is(accelerator: str,
                                                           version: str) -> None:
    """Generated over families and versions: what refuses a flex-start pool's capacity or
    version refuses the queued pool GKE builds as one."""
    if _refused(accelerator, "flex-start", version):
        assert _refused(accelerator, "queued", version)


# -- regions: v4 in us-central2 --------------------------------------------------------------

def _v4(spec: dict[str, Any], zone: str = "us-central2-b", **extra: Any) -> dict[str, Any]:
    spec["clouds"]["gcp"]["region"] = "us-central2"
    spec["pools"] = [pool(name="v4", accelerator="v4", topology="2x2x1", nodes=None,
                          zone=zone, **extra)]
    return spec


def test_issue_v4_in_us_central2_is_accepted(spec: dict[str, Any]) -> None:
    fleet = validate_fleet(_v4(spec))
    assert fleet.pools[0].region == "us-central2"


def test_own_v6e_in_us_central2_is_accepted(spec: dict[str, Any]) -> None:
    """Own instance: the restricted region also offers v6e (zones.yaml)."""
    spec["clouds"]["gcp"]["region"] = "us-central2"
    spec["pools"] = [pool(name="t", accelerator="v6e 2x2", nodes=None, zone="us-central2-b")]
    validate_fleet(spec)


def test_own_a_zone_us_central2_lacks_is_still_refused(spec: dict[str, Any]) -> None:
    """Own instance: accepting the region accepts only its listed zone."""
    assert _at(_v4(spec, zone="us-central2-a"), "pools 'v4'.zone")


def test_own_a_region_nobody_lists_is_still_refused(spec: dict[str, Any]) -> None:
    spec["clouds"]["gcp"]["region"] = "us-central3"
    assert any("not a Google Cloud region" in m for m in _at(spec, "clouds"))


# -- tpu7x-standard-1t -------------------------------------------------------------------------

def test_issue_tpu7x_one_chip_machine(spec: dict[str, Any]) -> None:
    spec["clusters"][0]["kubernetes_version"] = "1.34"
    spec["pools"].append(pool(name="w1", accelerator="tpu7x", topology="1x1x1", nodes=None,
                              zone="us-central1-c"))
    (p,) = [p for p in validate_fleet(spec).pools if p.name == "w1"]
    assert p.shape.machine_type == "tpu7x-standard-1t"
    assert (p.shape.hosts, p.shape.chips, p.shape.multi_host) == (1, 1, False)


def test_own_tpu7x_one_chip_takes_no_multislice(spec: dict[str, Any]) -> None:
    """Own instance: a 1x1x1 slice is single-host, and GKE runs Multislice on multi-host
    slices only."""
    spec["clusters"][0]["kubernetes_version"] = "1.34"
    spec["pools"].append(pool(name="w1", accelerator="tpu7x", topology="1x1x1", nodes=None,
                              zone="us-central1-c", multislice=2))
    assert _at(spec, "pools 'w1'.multislice")


def test_own_one_chip_shapes_only_where_a_one_chip_machine_exists() -> None:
    """Own instance, generated over every generation: 1x1x1 / 1x1 is a topology exactly
    where the catalog has a one-chip machine type (v4 and v5p have none)."""
    from fleet.catalog._tpu import topologies

    for gen in load_catalog().tpus.values():
        one = (1,) * gen.dims
        assert (one in topologies(gen)) == (gen.machine_for(1) is not None), gen.key


# -- Kueue's refused namespaces --------------------------------------------------------------

@pytest.mark.parametrize("namespace", KUEUE_REFUSED_NAMESPACES)
def test_issue_and_own_kueue_refused_smoke_namespaces(spec: dict[str, Any],
                                                      namespace: str) -> None:
    """kube-system is the issue's held-back instance; kueue-system (Kueue's own namespace,
    the same line of Kueue's config validation) is this file's."""
    spec["smoke"] = {"namespace": namespace}
    (found,) = _at(spec, "smoke.namespace")
    assert "Kueue refuses" in found and "validation.go" in found


def _kueue_accepts(selector: dict[str, Any]) -> bool:
    """Kueue's validateManagedJobsNamespaceSelector, for the selector forms accelfleet makes
    (components/k8s/_kueue.py managed_namespaces_selector): it must not match kube-system or
    kueue-system, whose namespaces carry only kubernetes.io/metadata.name."""
    for expr in selector["matchExpressions"]:
        if expr["operator"] == "In" and expr["key"] == "kubernetes.io/metadata.name" \
                and set(expr["values"]) & set(KUEUE_REFUSED_NAMESPACES):
            return False
    return True


@settings(max_examples=30, deadline=None)
@given(namespace=st.sampled_from(["accelfleet-smoke", "smoke", "default", "kube-public",
                                  *KUEUE_REFUSED_NAMESPACES, "team-a", "kueue"]))
def test_property_a_valid_smoke_namespace_is_one_kueue_accepts(namespace: str) -> None:
    """Generated: whatever smoke namespace validate accepts, the Kueue configuration the
    component renders with it passes Kueue's own namespace rule."""
    from components.k8s._kueue import managed_namespaces_selector

    spec = copy.deepcopy(BASE)
    spec["smoke"] = {"namespace": namespace}
    try:
        validate_fleet(spec)
    except SpecError:
        return
    assert _kueue_accepts(managed_namespaces_selector([namespace, "team-a"]))
