from __future__ import annotations

import copy
from typing import Any

import pytest

BASE: dict[str, Any] = {
    "clouds": {
        "gcp": {"project": "acme-ml-prod", "region": "us-central1"},
        "aws": {"account": "123456789012", "region": "us-east-1"},
    },
    "clusters": [{"name": "gke", "cloud": "gcp"}, {"name": "eks", "cloud": "aws"}],
    "teams": [{"name": "research", "monthly_budget_usd": 10_000_000}],
    "pools": [
        {"name": "h100", "cluster": "gke", "team": "research", "accelerator": "a3-highgpu-8g",
         "nodes": 2, "zone": "us-central1-a"},
    ],
}


@pytest.fixture
def spec() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def pool(**fields: Any) -> dict[str, Any]:
    base = {"name": "p", "cluster": "gke", "team": "research", "accelerator": "a3-highgpu-8g",
            "nodes": 1, "zone": "us-central1-a"}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}
