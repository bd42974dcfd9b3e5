"""`CpuNodeGroup`: an EKS managed node group of one CPU instance type, untainted: a cluster's
system node group, or a plain CPU pool of the spec.

The system node group hosts CoreDNS and the device plugin chart's node-feature-discovery master
and gc, which tolerate no GPU taint. terraform-aws-eks examples/eks-managed-node-group
(eks-al2023.tf: m6i.large, AL2023_x86_64_STANDARD, 2 nodes) and EKS Blueprints
patterns/nvidia-gpu-efa/eks.tf (a `default` group "for core addons such as CoreDNS") keep the
same group beside the GPU ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws._nodegroup import (
    DATA_VOLUME_DEVICE,
    DEFAULT_AMI,
    NodeGroupArgs,
    NodeGroupParts,
    managed_node_group,
)
from components.outputs import node_pool_outputs
from fleet.catalog import Catalog
from fleet.errors import CatalogError
from fleet.model import ResolvedPool
from fleet.taints import api_effect

TYPE = "accelfleet:aws:CpuNodeGroup"


def cpu_ami_for(pool: ResolvedPool, catalog: Catalog) -> tuple[str, str]:
    """(the spec's AMI family, the EKS standard (non-GPU) AMI type the catalog names for it)."""
    family = pool.spec.ami or DEFAULT_AMI
    if family not in catalog.cpu_ami_types or family not in DATA_VOLUME_DEVICE:
        raise CatalogError(f"no EKS CPU AMI type for {family!r} in the aws catalog")
    return family, catalog.cpu_ami_types[family]


@dataclass(frozen=True, kw_only=True)
class CpuNodeGroupArgs(NodeGroupArgs):
    """The common node-group arguments: a CPU group takes nothing more."""


class CpuNodeGroup(pulumi.ComponentResource):
    """A managed node group on the standard AMI (AL2023_x86_64_STANDARD by default), IMDSv2
    with hop limit 1, an encrypted gp3 volume, and no taint but the pool's own."""

    node_group: aws.eks.NodeGroup

    def __init__(self, name: str, args: CpuNodeGroupArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        pool, catalog = args.pool, args.catalog
        if pool.shape.kind != "cpu":
            raise CatalogError(f"{pool.shape.machine_type} is not a CPU instance type")
        family, ami_type = cpu_ami_for(pool, catalog)
        template, self.node_group = managed_node_group(self, name, args, NodeGroupParts(
            ami_type=ami_type, data_volume=DATA_VOLUME_DEVICE[family], labels=pool.labels,
            taints=[{"key": t.key, "value": t.value, "effect": api_effect(t.effect, "eks")}
                    for t in pool.spec.taints]))
        self.register_outputs(node_pool_outputs(self.node_group.node_group_name, pool,
                                                launch_template_id=template.id))
