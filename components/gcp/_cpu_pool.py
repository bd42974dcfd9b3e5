"""`CpuNodePool`: a GKE node pool of CPU machines, untainted: a cluster's system pool, or a
plain CPU pool of the spec.

The system pool hosts what tolerates no accelerator taint (kube-dns, the device plugin chart's
node-feature-discovery master and gc, the JobSet controller); GKE's default pool is removed.
Cluster Toolkit builds the same pool (modules/scheduler/gke-cluster/main.tf,
`system_node_pools`) with the same node identity and secure defaults as its accelerator pools.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.gcp._nodes import (
    autoscaling,
    management,
    node_config,
    node_counts,
    upgrade_settings,
)
from components.outputs import node_pool_outputs
from fleet.catalog import Catalog
from fleet.errors import CatalogError
from fleet.model import ResolvedPool

TYPE = "accelfleet:gcp:CpuNodePool"
C = gcp.container


@dataclass(frozen=True)
class CpuNodePoolArgs:
    pool: ResolvedPool
    catalog: Catalog
    cluster: pulumi.Input[str]
    project: str
    service_account: pulumi.Input[str]


class CpuNodePool(pulumi.ComponentResource):
    """CPU machines with no accelerator and no accelerator taint (only the pool's own), on the
    same secure nodes as every accelfleet pool: the dedicated node service account, shielded
    VM with secure boot, the GKE metadata server, private nodes, auto repair and upgrade."""

    node_pool: gcp.container.NodePool

    def __init__(self, name: str, args: CpuNodePoolArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        pool = args.pool
        if pool.shape.kind != "cpu":
            raise CatalogError(f"{pool.shape.machine_type} is not a CPU machine type")
        auto = pool.scaling is not None
        self.node_pool = C.NodePool(
            f"{name}-pool", name=pool.name, project=args.project, cluster=args.cluster,
            location=pool.region, node_locations=list(pool.spec.zones),
            **node_counts(pool, pool.node_count),  # per zone, as GKE counts them
            autoscaling=autoscaling(pool),
            management=management(pool),
            upgrade_settings=upgrade_settings(pool),
            network_config=C.NodePoolNetworkConfigArgs(enable_private_nodes=True),
            node_config=node_config(pool, args.catalog, args.service_account),
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["initialNodeCount"]
                                        if auto else None))
        self.register_outputs(node_pool_outputs(self.node_pool.name, pool))
