"""Generated fleets for benchmarks: N pools spread over a GKE and an EKS cluster."""

from __future__ import annotations

from typing import Any

GCP_ACCELERATORS = ["a3-highgpu-8g", "g2-standard-24", "v5p-128", "v6e 2x2", "a3-megagpu-8g",
                    "v5e 4x4", "a2-ultragpu-8g", "tpu7x 2x2x1"]
AWS_ACCELERATORS = ["p5.48xlarge", "g6.12xlarge", "p4d.24xlarge", "g6e.xlarge"]


def generated_fleet(pools: int, *, clouds: tuple[str, ...] = ("gcp", "aws")) -> dict[str, Any]:
    """A valid fleet spec with `pools` pools, round-robin over the given clouds."""
    spec: dict[str, Any] = {
        "clouds": {
            "gcp": {"project": "acme-bench", "region": "us-central1"},
            "aws": {"account": "123456789012", "region": "us-east-1"},
        },
        "clusters": [{"name": "gke", "cloud": "gcp"}, {"name": "eks", "cloud": "aws"}],
        "teams": [{"name": f"team-{i}"} for i in range(10)],
        "pools": [],
    }
    for i in range(pools):
        cloud = clouds[i % len(clouds)]
        if cloud == "gcp":
            acc = GCP_ACCELERATORS[i % len(GCP_ACCELERATORS)]
            pool: dict[str, Any] = {"cluster": "gke", "zone": "us-central1-" + "abc"[i % 3]}
        else:
            acc = AWS_ACCELERATORS[i % len(AWS_ACCELERATORS)]
            pool = {"cluster": "eks", "zone": "us-east-1" + "ab"[i % 2]}
        pool.update(name=f"pool-{i:03d}", team=f"team-{i % 10}", accelerator=acc)
        if not any(t in acc for t in ("v5p", "v6e", "v5e", "tpu7x")):
            pool["nodes"] = 1 + i % 3
        spec["pools"].append(pool)
    return spec
