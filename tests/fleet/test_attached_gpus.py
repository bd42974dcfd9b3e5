"""T4 GPUs attached to N1 machines on GKE (issue 20 item 15): the catalog keys each pairing of
an N1 machine and a T4 count (n1-standard-8-t4x1), GKE is given the N1 machine type and the
GPUs apart, and the nodes are selected by the labels GKE really puts on them: the N1 machine
type as node.kubernetes.io/instance-type and nvidia-tesla-t4 as cloud.google.com/gke-accelerator
(a real GKE node of an N1 machine with an attached GPU carries instance-type n1-standard-2 and
gke-accelerator nvidia-tesla-k80: kubernetes/kubernetes#55005, 2017-11-02)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fleet.catalog import _load, load_catalog
from fleet.errors import CatalogError

T4_ROWS = {"n1-standard-4-t4x1": ("n1-standard-4", 1), "n1-standard-8-t4x1": ("n1-standard-8", 1),
           "n1-standard-16-t4x2": ("n1-standard-16", 2),
           "n1-standard-32-t4x4": ("n1-standard-32", 4)}


@pytest.mark.parametrize("name", sorted(T4_ROWS))
def test_each_t4_row_is_an_n1_machine_with_its_gpu_count(name: str) -> None:
    cat = load_catalog()
    shape = cat.resolve(name)
    n1, gpus = T4_ROWS[name]
    assert (shape.machine_type, shape.cloud_machine_type, shape.devices_per_host) == (
        name, n1, gpus)
    assert shape.machine is not None and shape.machine.gke_accelerator == "nvidia-tesla-t4"
    assert shape.accelerator.key == "t4" and shape.cloud == "gcp"
    # the labels of the real node: the N1 machine type, never the catalog's key
    assert cat.node_selector(shape) == {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
                                        "node.kubernetes.io/instance-type": n1}
    assert cat.kube(shape).resource == "nvidia.com/gpu"
    assert shape.describe() == f"{n1} with {gpus} x NVIDIA T4 attached"


def test_the_gke_accelerator_name_and_t4_on_gcp_name_the_first_row() -> None:
    cat = load_catalog()
    assert cat.resolve("nvidia-tesla-t4").machine_type == "n1-standard-8-t4x1"
    assert cat.resolve("t4", cloud="gcp").machine_type == "n1-standard-8-t4x1"
    assert cat.resolve("t4", cloud="aws").machine_type.startswith("g4dn.")


def test_every_row_fits_what_gcp_allows_for_its_t4_count() -> None:
    """vCPUs and memory within the documented maximum for the count (1 or 2 T4: 48 vCPUs,
    312 GB; 4 T4: 96 vCPUs, 624 GB; gcp.yaml `attached_max` cites it), counts 1, 2, 4 only."""
    cat = load_catalog()
    [family] = [f for f in _load.read_yaml("gcp.yaml")["machine_families"]
                if f["family"] == "n1-t4"]
    limits = family["attached_max"]
    assert sorted(limits) == [1, 2, 4]
    rows = [m for m in cat.machines.values() if m.family == "n1-t4"]
    assert {m.name for m in rows} == set(T4_ROWS)
    for m in rows:
        host = cat.hosts[m.name]
        assert host.vcpus <= limits[m.gpus]["vcpus"], m.name
        assert host.memory_gib <= limits[m.gpus]["memory_gib"], m.name
        assert m.attached_to.startswith("n1-standard-")


def test_rows_without_a_figure_say_why() -> None:
    cat = load_catalog()
    for name in T4_ROWS:
        price = cat.prices[("gcp", name)]
        assert price.on_demand_usd is None and "T4 part was not read" in price.note
        assert not cat.zones_offering(cat.resolve(name), "us-central1").known


def _break(family: dict[str, Any]) -> None:
    family["attached_to"].pop("n1-standard-4-t4x1")


@pytest.mark.parametrize(("breakage", "message"), [
    (_break, "maps every machine"),
    (lambda f: f.pop("attached_source"), "attached_source"),
    (lambda f: f["attached_to"].update({"n1-standard-8-t4x1": "n1-standard-8-t4x1"}),
     "must name another machine type"),
])
def test_attached_rows_are_checked_on_load(monkeypatch: pytest.MonkeyPatch,
                                           breakage: Callable[[dict[str, Any]], None],
                                           message: str) -> None:
    real = _load.read_yaml
    data = real("gcp.yaml")
    [family] = [f for f in data["machine_families"] if f["family"] == "n1-t4"]
    breakage(family)
    monkeypatch.setattr(_load, "read_yaml", lambda name: data if name == "gcp.yaml"
                        else real(name))
    with pytest.raises(CatalogError, match=message):
        _load.load_machines("gcp", load_catalog().accelerators)
