"""Kubernetes add-ons for GPU clusters: device plugins and metrics, as pinned Helm releases."""

from components.k8s._addons import GpuAddons, GpuAddonsArgs
from components.k8s._charts import DCGM_EXPORTER, EFA_DEVICE_PLUGIN, NVIDIA_DEVICE_PLUGIN, Chart
from components.k8s._values import (
    GpuScheduling,
    dcgm_exporter_values,
    efa_device_plugin_values,
    nvidia_device_plugin_values,
    scheduling_pod,
)

__all__ = [
    "DCGM_EXPORTER",
    "EFA_DEVICE_PLUGIN",
    "NVIDIA_DEVICE_PLUGIN",
    "Chart",
    "GpuAddons",
    "GpuAddonsArgs",
    "GpuScheduling",
    "dcgm_exporter_values",
    "efa_device_plugin_values",
    "nvidia_device_plugin_values",
    "scheduling_pod",
]
