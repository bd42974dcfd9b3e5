"""Kubernetes add-ons as pinned Helm releases: device plugins and metrics for GPU clusters,
the JobSet and Kueue controllers on every cluster, and the fleet's Kueue routing (flavors,
team queues, a cohort per cluster); the gate controller where a pool is gated."""

from components.k8s._addons import GpuAddons, GpuAddonsArgs
from components.k8s._charts import (
    DCGM_EXPORTER,
    EFA_DEVICE_PLUGIN,
    JOBSET,
    JOBSET_IMAGE_REPOSITORY,
    JOBSET_IMAGE_TAG,
    KUEUE,
    KUEUE_IMAGE_REPOSITORY,
    KUEUE_IMAGE_TAG,
    NVIDIA_DEVICE_PLUGIN,
    Chart,
)
from components.k8s._gate import (
    GateController,
    GateControllerArgs,
    controller_args,
    gate_objects,
    install_gate,
)
from components.k8s._jobset import JobSetController, JobSetControllerArgs
from components.k8s._kueue import (
    KueueController,
    KueueControllerArgs,
    KueueQueues,
    KueueQueuesArgs,
    cluster_routing,
    install_queueing,
    kueue_controller_values,
    kueue_objects,
)
from components.k8s._provider import cluster_provider
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
    "KUEUE",
    "KUEUE_IMAGE_REPOSITORY",
    "KUEUE_IMAGE_TAG",
    "NVIDIA_DEVICE_PLUGIN",
    "Chart",
    "GateController",
    "GateControllerArgs",
    "GpuAddons",
    "GpuAddonsArgs",
    "GpuScheduling",
    "JobSetController",
    "JobSetControllerArgs",
    "KueueController",
    "KueueControllerArgs",
    "KueueQueues",
    "KueueQueuesArgs",
    "PoolNodes",
    "cluster_provider",
    "cluster_routing",
    "controller_args",
    "dcgm_exporter_values",
    "efa_device_plugin_values",
    "gate_objects",
    "install_gate",
    "install_queueing",
    "jobset_controller_values",
    "kueue_controller_values",
    "kueue_objects",
    "nvidia_device_plugin_values",
    "scheduling_pod",
]
