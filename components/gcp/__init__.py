"""Google Cloud components: network fabric, GKE cluster, GPU node pools, TPU slices and VMs.

    >>> from components.gcp import build_gcp_cluster, build_tpu_vms
"""

from components.gcp._build import (
    GcpCluster,
    TpuVms,
    TpuVmsArgs,
    build_gcp_cluster,
    build_tpu_vms,
)
from components.gcp._cluster import GkeCluster, GkeClusterArgs, NodeIdentity, NodeIdentityArgs
from components.gcp._gpu_pool import GpuNodePool, GpuNodePoolArgs
from components.gcp._k8s import GpuDirectAddons, GpuDirectAddonsArgs, GpuDirectKind
from components.gcp._network import (
    GpuDirectNetworks,
    GpuDirectNetworksArgs,
    NetworkFabric,
    NetworkFabricArgs,
)
from components.gcp._tpu import TpuSlice, TpuSliceArgs, TpuVm, TpuVmArgs

__all__ = [
    "GcpCluster",
    "GkeCluster",
    "GkeClusterArgs",
    "GpuDirectAddons",
    "GpuDirectAddonsArgs",
    "GpuDirectKind",
    "GpuDirectNetworks",
    "GpuDirectNetworksArgs",
    "GpuNodePool",
    "GpuNodePoolArgs",
    "NetworkFabric",
    "NetworkFabricArgs",
    "NodeIdentity",
    "NodeIdentityArgs",
    "TpuSlice",
    "TpuSliceArgs",
    "TpuVm",
    "TpuVmArgs",
    "TpuVms",
    "TpuVmsArgs",
    "build_gcp_cluster",
    "build_tpu_vms",
]
