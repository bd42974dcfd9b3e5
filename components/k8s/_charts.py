"""The Helm charts accelfleet installs into clusters, each pinned to one chart version."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chart:
    repo: str
    chart: str
    version: str
    namespace: str


NVIDIA_DEVICE_PLUGIN = Chart(
    repo="https://nvidia.github.io/k8s-device-plugin",
    chart="nvidia-device-plugin",
    version="0.18.2",
    namespace="nvidia-device-plugin",
)
EFA_DEVICE_PLUGIN = Chart(
    repo="https://aws.github.io/eks-charts",
    chart="aws-efa-k8s-device-plugin",
    version="v0.5.7",
    namespace="kube-system",
)
DCGM_EXPORTER = Chart(
    repo="https://nvidia.github.io/dcgm-exporter/helm-charts",
    chart="dcgm-exporter",
    version="3.5.0",
    namespace="nvidia-device-plugin",
)
