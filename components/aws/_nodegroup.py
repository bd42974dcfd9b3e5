"""`GpuNodeGroup`: an EKS managed node group of one GPU instance type, with its launch template."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from components.aws._efa import efa_network_interfaces
from components.outputs import node_pool_outputs
from fleet.catalog import Catalog, Taint
from fleet.catalog.support import DEFAULT_EKS_AMI
from fleet.errors import CatalogError
from fleet.gate import gate_taint
from fleet.labels import AMI_LABEL as AMI_LABEL
from fleet.labels import POOL_LABEL, TEAM_LABEL
from fleet.model import ResolvedPool
from fleet.taints import api_effect

TYPE = "accelfleet:aws:GpuNodeGroup"

DEFAULT_AMI = DEFAULT_EKS_AMI  # one home: fleet.catalog.support
# The volume that holds images and pods: AL2023 has one root volume; Bottlerocket boots from a
# small OS volume (/dev/xvda) and keeps containers on its data volume (/dev/xvdb).
DATA_VOLUME_DEVICE = {"al2023": "/dev/xvda", "bottlerocket": "/dev/xvdb"}
# IMDSv2 only, one network hop: processes on the node reach the metadata service, pods (one hop
# further, behind their own network namespace) do not, so they cannot borrow the node role and
# must use IRSA. Hop limit 2 would let every pod act as the node.
IMDS_HOP_LIMIT = 1
EFA_LABEL_VALUE = "true"


@dataclass(frozen=True)
class Capacity:
    """How a node group obtains instances: the EKS capacity type and launch-template parts.

    instance_type_in_template: the instance type goes in the launch template, not on the node
    group. EKS requires that for Capacity Blocks (EKS user guide, capacity-blocks-mng; the same
    in terraform-aws-eks modules/eks-managed-node-group) and rejects the node group otherwise.
    """

    capacity_type: str
    market_type: str | None = None
    reservation_id: str | None = None
    instance_type_in_template: bool = False


def capacity_for(pool: ResolvedPool) -> Capacity:
    cap = pool.spec.capacity
    if cap.reservation and cap.block:
        return Capacity("CAPACITY_BLOCK", market_type="capacity-block",
                        reservation_id=cap.reservation, instance_type_in_template=True)
    if cap.reservation:
        return Capacity("ON_DEMAND", reservation_id=cap.reservation)
    return Capacity("SPOT" if cap.spot else "ON_DEMAND")


def update_strategy(pool: ResolvedPool) -> str | None:
    """MINIMAL on a reservation (an ODCR or a Capacity Block) unless the stack says otherwise,
    or where the stack asks for it: DEFAULT launches the new instances before terminating the
    old ones, which a fully used reservation cannot hold; MINIMAL terminates first ("useful in
    scenarios where you are constrained to resources or costs (for example, with hardware
    accelerators such as GPUs)", EKS API reference NodegroupUpdateConfig.updateStrategy,
    https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupUpdateConfig.html, read
    2026-11-27). None elsewhere: EKS's DEFAULT, unchanged (fleet.upgrade decides)."""
    policy = pool.upgrade
    return "MINIMAL" if policy is not None and policy.strategy == "minimal" else None


def update_config(pool: ResolvedPool) -> aws.eks.NodeGroupUpdateConfigArgs:
    """The pool's upgrade policy (fleet.upgrade) as the node group's update_config: one of
    max_unavailable and max_unavailable_percentage, and the strategy."""
    policy = pool.upgrade
    if policy is None:  # never for an EKS pool; a node at a time, as EKS's own default
        return aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1)
    return aws.eks.NodeGroupUpdateConfigArgs(
        max_unavailable=policy.max_unavailable,
        max_unavailable_percentage=policy.max_unavailable_percent,
        update_strategy=update_strategy(pool))


def needs_placement_group(pool: ResolvedPool) -> bool:
    """A compact pool gets a `cluster` placement group, unless it consumes a reservation (a
    Capacity Block or an On-Demand Capacity Reservation): fleet.model
    ResolvedPool.placement_group has the rule and its sources."""
    return pool.placement_group


def scaling_for(pool: ResolvedPool) -> dict[str, int]:
    """min/desired/max nodes; EKS wants max >= 1 even for a pool declared with 0 nodes."""
    auto = pool.spec.autoscaling
    low = auto.min_nodes if auto else pool.node_count
    high = auto.max_nodes if auto else pool.node_count
    return {"min_size": low, "desired_size": pool.node_count, "max_size": max(high, 1)}


def ami_for(pool: ResolvedPool, catalog: Catalog) -> tuple[str, str]:
    """(the spec's AMI family, the EKS AMI type the catalog names for it)."""
    family = pool.spec.ami or DEFAULT_AMI
    if family not in catalog.ami_types or family not in DATA_VOLUME_DEVICE:
        raise CatalogError(f"no EKS AMI type for {family!r} in the aws catalog")
    return family, catalog.ami_types[family]


def is_efa(pool: ResolvedPool) -> bool:
    return pool.networking is not None and pool.networking.kind == "efa"


def node_labels(pool: ResolvedPool, catalog: Catalog) -> dict[str, str]:
    """The pool's labels, its AMI family, and the EFA label the EFA device plugin selects."""
    labels = {**pool.labels, AMI_LABEL: ami_for(pool, catalog)[0]}
    if is_efa(pool):
        labels[catalog.kube_section("aws", "efa")["label"]] = EFA_LABEL_VALUE
    return labels


def pool_taints(pool: ResolvedPool, catalog: Catalog) -> tuple[Taint, ...]:
    """The GPU taint from the catalog, the gate's startup taint on a gated pool, then the
    pool's own (Kubernetes spelling). The device plugins tolerate all of them (GpuScheduling).

    Scale-up from zero with the gate on: cluster-autoscaler reads a managed node group's
    taints from the EKS DescribeNodegroup API (cluster-autoscaler/cloudprovider/aws/README.md)
    and drops startup taints from every node group's template
    (simulator/node_info_utils.go SanitizedTemplateNodeInfoFromNodeGroup -> taints.go
    SanitizeTaints, kubernetes/autoscaler, read 2026-11-27); docs/gate.md has the rest."""
    gpu = catalog.kube(pool.shape).taint
    gate = (gate_taint(),) if pool.gate_enforced else ()  # shadow mode: no taint
    return (gpu, *gate,
            *(Taint(key=t.key, value=t.value, effect=t.effect) for t in pool.spec.taints))


def node_taints(pool: ResolvedPool, catalog: Catalog) -> list[dict[str, str]]:
    """`pool_taints` in EKS spelling."""
    return [{"key": t.key, "value": t.value, "effect": api_effect(t.effect, "eks")}
            for t in pool_taints(pool, catalog)]


@dataclass(frozen=True, kw_only=True)
class NodeGroupArgs:
    """What every accelfleet node group takes. subnet_ids: the private subnets of the pool's
    zones."""

    pool: ResolvedPool
    catalog: Catalog
    cluster_name: pulumi.Input[str]
    node_role_arn: pulumi.Input[str]
    subnet_ids: list[pulumi.Input[str]]
    kubernetes_version: str | None = None
    # What the node group waits for: the add-ons nodes need to become Ready (vpc-cni, ...).
    depends_on: Sequence[pulumi.Resource] = ()


@dataclass(frozen=True, kw_only=True)
class GpuNodeGroupArgs(NodeGroupArgs):
    """placement_group: for compact pools."""

    cluster_security_group_id: pulumi.Input[str | None]
    efa_security_group_id: pulumi.Input[str]
    placement_group: pulumi.Input[str] | None = None


@dataclass(frozen=True)
class NodeGroupParts:
    """What differs between node groups: the AMI, the labels and taints (EKS spelling) and
    extra launch-template arguments (EFA interfaces, a placement group)."""

    ami_type: str
    data_volume: str
    labels: dict[str, str]
    taints: list[dict[str, str]]
    launch_template: dict[str, Any] = field(default_factory=dict)


def managed_node_group(owner: pulumi.ComponentResource, name: str, args: NodeGroupArgs,
                       parts: NodeGroupParts) -> tuple[aws.ec2.LaunchTemplate,
                                                       aws.eks.NodeGroup]:
    """A launch template (IMDSv2 with one hop, an encrypted gp3 data volume, tagged instances
    and volumes, the capacity's reservation and market) and the managed node group on it, both
    children of `owner`."""
    pool = args.pool
    capacity = capacity_for(pool)
    tags = {POOL_LABEL: pool.name, TEAM_LABEL: pool.team}
    lt: dict[str, Any] = {
        "metadata_options": aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_endpoint="enabled", http_tokens="required",
            http_put_response_hop_limit=IMDS_HOP_LIMIT),
        "block_device_mappings": [aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
            device_name=parts.data_volume,
            ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                volume_size=pool.spec.disk_size_gb, volume_type="gp3", encrypted="true",
                delete_on_termination="true"))],
        "tag_specifications": [aws.ec2.LaunchTemplateTagSpecificationArgs(
            resource_type=kind, tags=tags) for kind in ("instance", "volume")],
        **parts.launch_template,
    }
    if capacity.reservation_id:
        lt["capacity_reservation_specification"] = (
            aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.
                LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    capacity_reservation_id=capacity.reservation_id)))
    if capacity.market_type:
        lt["instance_market_options"] = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
            market_type=capacity.market_type)
    if capacity.instance_type_in_template:
        lt["instance_type"] = pool.shape.machine_type
    template = aws.ec2.LaunchTemplate(
        f"{name}-lt", description=f"accelfleet pool {pool.name}",
        update_default_version=True, tags=tags, opts=pulumi.ResourceOptions(parent=owner),
        **lt)
    autoscaled = pool.spec.autoscaling is not None
    group = aws.eks.NodeGroup(
        f"{name}-ng",
        cluster_name=args.cluster_name,
        node_group_name=pool.name,
        node_role_arn=args.node_role_arn,
        subnet_ids=args.subnet_ids,
        version=args.kubernetes_version,
        ami_type=parts.ami_type,
        instance_types=None if capacity.instance_type_in_template
        else [pool.shape.machine_type],
        capacity_type=capacity.capacity_type,
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(**scaling_for(pool)),
        update_config=update_config(pool),
        labels=parts.labels,
        taints=[aws.eks.NodeGroupTaintArgs(**t) for t in parts.taints] or None,
        launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
            id=template.id, version=template.latest_version.apply(str)),
        tags=tags,
        opts=pulumi.ResourceOptions(
            parent=owner,
            depends_on=list(args.depends_on),
            # The cluster autoscaler owns the desired size of an autoscaled group; EKS owns a
            # Capacity Block group's (it scales it to zero around the block's end).
            ignore_changes=["scalingConfig.desiredSize"]
            if autoscaled or capacity.capacity_type == "CAPACITY_BLOCK" else None),
    )
    return template, group


class GpuNodeGroup(pulumi.ComponentResource):
    """A managed node group: NVIDIA AMI, IMDSv2, encrypted gp3 volume, GPU taint, and for EFA
    instance types one EFA interface per network card inside a cluster placement group."""

    node_group_name: pulumi.Output[str]

    def __init__(
        self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        pool, catalog = args.pool, args.catalog
        family, ami_type = ami_for(pool, catalog)
        lt: dict[str, Any] = {}
        if is_efa(pool):
            assert pool.networking is not None
            lt["network_interfaces"] = [
                aws.ec2.LaunchTemplateNetworkInterfaceArgs(**nic)
                for nic in efa_network_interfaces(
                    pool.networking.efa_interfaces,
                    [args.efa_security_group_id, args.cluster_security_group_id])
            ]
        if args.placement_group is not None:
            lt["placement"] = aws.ec2.LaunchTemplatePlacementArgs(group_name=args.placement_group)
        template, group = managed_node_group(self, name, args, NodeGroupParts(
            ami_type=ami_type, data_volume=DATA_VOLUME_DEVICE[family],
            labels=node_labels(pool, catalog), taints=node_taints(pool, catalog),
            launch_template=lt))
        self.node_group_name = group.node_group_name
        self.register_outputs(node_pool_outputs(group.node_group_name, pool,
                                                launch_template_id=template.id))
