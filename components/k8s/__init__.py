"""Kubernetes add-ons as pinned Helm releases: device plugins and metrics for GPU clusters,
the JobSet controller for clusters with TPU slices."""

from components.k8s._addons import GpuAddons, GpuAddonsArgs
from components.k8s._charts import (
    DCGM_EXPORTER,
    EFA_DEVICE_PLUGIN,
    JOBSET,
    JOBSET_IMAGE_REPOSITORY,
    JOBSET_IMAGE_TAG,
    NVIDIA_DEVICE_PLUGIN,
    Chart,
)
from components.k8s._jobset import JobSetController, JobSetControllerArgs
from components.k8s._values import (
    GpuScheduling,
    PoolNodes,
    dcgm_exporter_values,
    efa_device_plugin_values,
    jobset_controller_values,
    nvidia_device_plugin_values,
    scheduling_pod,
)

__all__ = [
    "DCGM_EXPORTER",
    "EFA_DEVICE_PLUGIN",
    "JOBSET",
    "JOBSET_IMAGE_REPOSITORY",
    "JOBSET_IMAGE_TAG",
    "NVIDIA_DEVICE_PLUGIN",
    "Chart",
    "GpuAddons",
    "GpuAddonsArgs",
    "GpuScheduling",
    "JobSetController",
    "JobSetControllerArgs",
    "PoolNodes",
    "dcgm_exporter_values",
    "efa_device_plugin_values",
    "jobset_controller_values",
    "nvidia_device_plugin_values",
    "scheduling_pod",
]
