"""Generated fleets for benchmarks: N pools spread over a GKE cluster and EKS clusters.

The fleets are valid under every rule, the address-range ones included: the GKE cluster's
ranges hold its nodes at their largest (a /16 node range, a /10 pod range: 16,384 nodes' /24s),
and the EKS pools go 50 to a cluster, each cluster its own /16 VPC over six zones (the VPC CNI
gives every pod a VPC address: a /16 cannot hold 500 GPU pools' pods). Each GKE pool is in a zone
of us-central1 that offers its accelerator (catalog zones.yaml)."""

from __future__ import annotations

from functools import cache
from typing import Any

from fleet.catalog import load_catalog

GCP_ACCELERATORS = ["a3-highgpu-8g", "g2-standard-24", "v5p-128", "v6e 2x2", "a3-megagpu-8g",
                    "v5e 4x4", "a2-ultragpu-8g", "tpu7x 2x2x1"]
AWS_ACCELERATORS = ["p5.48xlarge", "g6.12xlarge", "p4d.24xlarge", "g6e.xlarge"]
EKS_POOLS_PER_CLUSTER = 50


@cache
def _gcp_zones(accelerator: str) -> tuple[str, ...]:
    """The us-central1 zones that offer `accelerator` (all three where the catalog cannot tell)."""
    catalog = load_catalog()
    answer = catalog.zones_offering(catalog.resolve(accelerator), "us-central1")
    return answer.offered if answer.known else ("us-central1-a", "us-central1-b", "us-central1-c")


def generated_fleet(pools: int, *, clouds: tuple[str, ...] = ("gcp", "aws")) -> dict[str, Any]:
    """A valid fleet spec with `pools` pools, round-robin over the given clouds."""
    spec: dict[str, Any] = {
        "clouds": {
            "gcp": {"project": "acme-bench", "region": "us-central1"},
            "aws": {"account": "123456789012", "region": "us-east-1"},
        },
        "clusters": [{"name": "gke", "cloud": "gcp",
                      "network": {"cidr": "10.0.0.0/16", "pods_cidr": "10.128.0.0/10"}}],
        "teams": [{"name": f"team-{i}"} for i in range(10)],
        "pools": [],
    }
    eks: list[dict[str, Any]] = []
    aws_pools = 0
    for i in range(pools):
        cloud = clouds[i % len(clouds)]
        if cloud == "gcp":
            acc = GCP_ACCELERATORS[i % len(GCP_ACCELERATORS)]
            zones = _gcp_zones(acc)
            pool: dict[str, Any] = {"cluster": "gke", "zone": zones[i % len(zones)]}
        else:
            acc = AWS_ACCELERATORS[i % len(AWS_ACCELERATORS)]
            k = aws_pools // EKS_POOLS_PER_CLUSTER
            if k == len(eks):
                eks.append({"name": f"eks-{k}", "cloud": "aws",
                            "network": {"cidr": f"172.{16 + k % 16}.0.0/16" if k < 16
                                        else f"10.{1 + k}.0.0/16"}})
            aws_pools += 1
            pool = {"cluster": f"eks-{k}", "zone": "us-east-1" + "abcdef"[aws_pools % 6]}
        pool.update(name=f"pool-{i:03d}", team=f"team-{i % 10}", accelerator=acc)
        if not any(t in acc for t in ("v5p", "v6e", "v5e", "tpu7x")):
            pool["nodes"] = 1 + i % 3
        spec["pools"].append(pool)
    spec["clusters"] += eks
    return spec
