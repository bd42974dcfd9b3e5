"""AWS components: the EKS network with EFA, the EKS cluster, and GPU node groups."""

from components.aws._build import build_aws_cluster
from components.aws._efa import efa_network_interfaces
from components.aws._eks import EksCluster, EksClusterArgs
from components.aws._network import EksNetwork, EksNetworkArgs
from components.aws._nodegroup import GpuNodeGroup, GpuNodeGroupArgs

__all__ = [
    "EksCluster",
    "EksClusterArgs",
    "EksNetwork",
    "EksNetworkArgs",
    "GpuNodeGroup",
    "GpuNodeGroupArgs",
    "build_aws_cluster",
    "efa_network_interfaces",
]
