"""Issue 27 item 10: docs/gcp.md says what the code does, held here where a claim is checkable:
the primary VPC's MTU and which pools autoscale by total or per-zone counts."""

from __future__ import annotations

from pathlib import Path

from components.gcp._build import cluster_mtu
from fleet.catalog import load_catalog
from fleet.rules.validate import validate_fleet

DOC = " ".join((Path(__file__).resolve().parents[2] / "docs" / "gcp.md").read_text(
    encoding="utf-8").split())
BASE = {"clouds": {"gcp": {"project": "acme-ml-test", "region": "us-central1"}},
        "clusters": [{"name": "c1", "cloud": "gcp"}], "teams": [{"name": "t"}]}


def _pools(*pools: dict[str, object]) -> list[object]:
    return list(validate_fleet({**BASE, "pools": list(pools)}).pools)


def test_the_primary_vpc_mtu() -> None:
    catalog = load_catalog()
    assert "at the catalog's TPU network MTU, 8896" in DOC
    tpu = _pools({"name": "v", "cluster": "c1", "team": "t", "accelerator": "v6e 2x2",
                  "zone": "us-central1-b"})
    assert cluster_mtu(tpu, catalog) == catalog.tpu_network_mtu == 8896  # type: ignore[arg-type]
    l4 = _pools({"name": "l", "cluster": "c1", "team": "t", "accelerator": "g2-standard-24",
                 "nodes": 1, "zone": "us-central1-a"})
    assert "else Compute Engine's default" in DOC
    assert cluster_mtu(l4, catalog) is None  # type: ignore[arg-type]


def test_autoscaling_counts() -> None:
    from components.gcp._nodes import per_zone_limits

    assert "Autoscaled pools use total min/max counts, but for a flex-start or queued " \
           "multi-host TPU slice, which takes per-zone min/max" in DOC
    (l4,) = _pools({"name": "l", "cluster": "c1", "team": "t", "accelerator": "g2-standard-24",
                    "nodes": 1, "autoscaling": {"min_nodes": 0, "max_nodes": 4},
                    "zones": ["us-central1-a", "us-central1-b"]})
    (v5p,) = _pools({"name": "v", "cluster": "c1", "team": "t", "accelerator": "v5p",
                     "topology": "2x2x2", "zone": "us-central1-a", "capacity": "flex-start"})
    assert not per_zone_limits(l4) and per_zone_limits(v5p)  # type: ignore[arg-type]


def test_the_tpu_second_network() -> None:
    from components.gcp._tpu_network import TPU_SECOND_CIDR
    from fleet.catalog.support import load_support

    assert f"`<cluster>-tpu-sub-1` ({TPU_SECOND_CIDR}" in DOC
    support = load_support()
    assert "TPU v6e or tpu7x slices" in DOC
    assert {k for k, _ in support.second_network} == {"v6e", "tpu7x"}


def test_the_system_pool_pads_with_b_and_c() -> None:
    from fleet.system_pools import PAD_ZONE_LETTERS, default_zones

    assert "(padded with the region's `b`, `c` zones)" in DOC
    assert PAD_ZONE_LETTERS["gcp"] == "bc"
    assert default_zones("gcp", "us-central1", []) == ["us-central1-b", "us-central1-c"]


def test_the_public_endpoint_stays_unless_private_endpoint() -> None:
    """The doc: public endpoint kept unless `private_endpoint: true`, which warns; the
    component passes the field to GKE's private cluster config as it is."""
    from fleet.rules.endpoints import endpoint_checks
    from fleet.spec.fields import FleetSpec

    assert "keeps its public endpoint (limited to `authorized_cidrs`) unless " \
           "`private_endpoint: true`, which turns it off and warns" in DOC
    source = " ".join((Path(__file__).resolve().parents[2] / "components" / "gcp"
                       / "_cluster.py").read_text(encoding="utf-8").split())
    assert "enable_private_endpoint=args.private_endpoint" in source
    spec = FleetSpec.model_validate({**BASE, "clusters": [
        {"name": "c1", "cloud": "gcp", "private_endpoint": True}], "pools": []})
    problems, warnings = endpoint_checks(spec)
    assert not problems and [w.where for w in warnings] == \
        ["clusters 'c1'.private_endpoint"]


def test_tpu_vms_of_the_second_network_generations_have_two_nics() -> None:
    from components.gcp._build import TPU_VM_CIDR
    from components.gcp._tpu_network import TPU_VM_SECOND_CIDR, wants_second_network

    assert "A v6e VM has two NICs: `networkConfigs`" in DOC
    assert f"(`tpu-vms-tpu-net-1`, subnet {TPU_VM_SECOND_CIDR})" in DOC
    assert f"the TPU VMs' own {TPU_VM_CIDR}" in DOC
    (vm,) = _pools({"name": "v", "runtime": "tpu-vm", "team": "t", "accelerator": "v6e 2x4",
                    "zone": "us-central1-b"})
    (v5e,) = _pools({"name": "w", "runtime": "tpu-vm", "team": "t", "accelerator": "v5e",
                     "topology": "2x4", "zone": "us-central1-a"})
    assert wants_second_network(vm) and not wants_second_network(v5e)  # type: ignore[arg-type]


def test_the_version_floors_the_doc_names_are_the_catalogs() -> None:
    from fleet.catalog.support import load_support

    support = load_support()
    for option, kind, words in (("flex-start", "gpu", "flex-start GPUs"),
                                ("flex-start", "tpu", "flex-start TPUs"),
                                ("queued", "gpu", "queued GPUs")):
        floor = support.option_min_version("gcp", option, kind)
        assert floor is not None and f"{words} {floor.min}" in DOC
    for family, words in (("a3-ultragpu", "A3 Ultra"), ("a4-highgpu", "A4")):
        entry = support.min_version("gcp", (family,))
        assert entry is not None and f"{words} {entry.min}" in DOC
    assert support.option_refusal("gcp", "flex-start", ("v4",)) is not None
    assert "flex-start on TPU v4" in DOC
