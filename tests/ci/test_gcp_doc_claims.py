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
