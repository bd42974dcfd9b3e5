"""`GpuNodePool`: a GKE node pool of GPU machines, as the catalog describes them."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components.gcp._network import ExtraNetwork
from components.gcp._nodes import (
    DRIVER_VERSIONS,
    autoscaling,
    management,
    node_config,
    node_counts,
    node_network,
    upgrade_settings,
)
from components.outputs import node_pool_outputs
from fleet.catalog import Catalog
from fleet.errors import CatalogError
from fleet.model import ResolvedPool

TYPE = "accelfleet:gcp:GpuNodePool"
C = gcp.container


@dataclass(frozen=True)
class GpuNodePoolArgs:
    pool: ResolvedPool
    catalog: Catalog
    cluster: pulumi.Input[str]
    project: str
    service_account: pulumi.Input[str]
    extra_networks: list[ExtraNetwork] = field(default_factory=list)


class GpuNodePool(pulumi.ComponentResource):
    """Guest accelerators and driver, capacity, taint and labels, GPUDirect node networks,
    compact placement and autoscaling, on secure nodes."""

    node_pool: gcp.container.NodePool

    def __init__(self, name: str, args: GpuNodePoolArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        pool = args.pool
        machine = pool.shape.machine
        if machine is None or not machine.gke_accelerator:
            raise CatalogError(f"machine type {pool.shape.machine_type} has no GKE accelerator")
        spec = pool.spec
        accel = C.NodePoolNodeConfigGuestAcceleratorArgs(
            type=machine.gke_accelerator, count=machine.gpus,
            gpu_driver_installation_config=(
                C.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                    gpu_driver_version=DRIVER_VERSIONS[spec.driver])))
        auto = pool.scaling is not None
        self.node_pool = C.NodePool(
            f"{name}-pool", name=pool.name, project=args.project, cluster=args.cluster,
            location=pool.region, node_locations=list(spec.zones),
            **node_counts(pool, pool.node_count),
            autoscaling=autoscaling(pool),
            management=management(pool),
            upgrade_settings=upgrade_settings(pool),
            placement_policy=C.NodePoolPlacementPolicyArgs(type="COMPACT")
            if pool.placement == "compact" else None,
            queued_provisioning=C.NodePoolQueuedProvisioningArgs(enabled=True)
            if spec.capacity.queued else None,
            network_config=node_network(args.extra_networks),
            node_config=node_config(pool, args.catalog, args.service_account,
                                    guest_accelerators=[accel]),
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["initialNodeCount"]
                                        if auto else None))
        self.register_outputs(node_pool_outputs(self.node_pool.name, pool,
                                                extra_networks=len(args.extra_networks)))

