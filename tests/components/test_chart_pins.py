"""Pinned charts are the newest releases read, each with its tag, commit and date (issue 20,
item 14). Before: nvidia-device-plugin 0.18.2 (0.20.0 current) and dcgm-exporter 3.5.0
(4.8.x current); EKS CoreDNS v1.12.2-eksbuild.4 for 1.33 (the EKS table lists newer)."""

from __future__ import annotations

import pytest

from components.k8s import DCGM_EXPORTER, NVIDIA_DEVICE_PLUGIN, Chart
from fleet.catalog import load_catalog

# (chart, newest release read 2026-11-24, where)
NEWEST = [
    (NVIDIA_DEVICE_PLUGIN, "0.20.0", "NVIDIA/k8s-device-plugin tag v0.20.0 (1b826ac, 2026-08-19) "
     "deployments/helm/nvidia-device-plugin/Chart.yaml"),
    (DCGM_EXPORTER, "4.8.2", "NVIDIA/dcgm-exporter tag 4.5.3-4.8.2 (691c927, 2026-05-06) "
     "deployment/Chart.yaml"),
]


def _semver(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.lstrip("v").split("-")[0].split("."))


@pytest.mark.parametrize(("chart", "newest", "where"), NEWEST)
def test_gpu_charts_are_pinned_at_the_newest_release(chart: Chart, newest: str,
                                                     where: str) -> None:
    assert _semver(chart.version) >= _semver(newest), where


def test_eks_coredns_is_the_add_on_tables_latest() -> None:
    """EKS user guide, managing-coredns (docs.amazonaws.cn copies read 2026-11-24): 1.35
    v1.14.2-eksbuild.4, 1.34 v1.13.2-eksbuild.7, 1.33 v1.13.2-eksbuild.4."""
    pins = load_catalog().eks_addons.versions
    assert _semver(pins["1.35"]["coredns"]) >= (1, 14, 2)
    assert _semver(pins["1.34"]["coredns"]) >= (1, 13, 2)
    assert _semver(pins["1.33"]["coredns"]) >= (1, 13, 2)
