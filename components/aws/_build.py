"""`build_aws_cluster`: one EKS cluster of the fleet, its network, node groups and add-ons."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from components.aws._addons import managed_addons
from components.aws._cpu_nodegroup import CpuNodeGroup, CpuNodeGroupArgs
from components.aws._eks import EksCluster, EksClusterArgs
from components.aws._network import EksNetwork, EksNetworkArgs
from components.aws._nodegroup import (
    AMI_LABEL,
    GpuNodeGroup,
    GpuNodeGroupArgs,
    is_efa,
    needs_placement_group,
    node_labels,
    pool_taints,
)
from components.k8s import (
    DCGM_EXPORTER,
    GpuAddons,
    GpuAddonsArgs,
    GpuScheduling,
    PoolNodes,
    cluster_routing,
    install_queueing,
    wants_dcgm_exporter,
)
from components.outputs import ClusterArgs, ClusterOutputs
from fleet.catalog import Catalog
from fleet.errors import InputError
from fleet.model import ACCELERATOR_LABEL, Fleet, ResolvedPool
from fleet.names import system_component_name
from fleet.routing import ClusterRouting
from fleet.spec.fields import Cluster

# AMI families whose OS runs the NVIDIA device plugin itself (no DaemonSet on those nodes).
PLUGIN_BUILT_IN = ("bottlerocket",)
CLUSTER_TYPE = "accelfleet:aws:Cluster"



class AwsCluster(pulumi.ComponentResource):
    """A whole EKS site: its provider, network, cluster, GPU node groups and add-ons (the
    device plugins, JobSet, Kueue and the fleet's Kueue routing)."""

    outputs: ClusterOutputs

    def __init__(self, name: str, args: ClusterArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(CLUSTER_TYPE, name, None, opts)
        cluster, pools, catalog = args.cluster, args.pools, args.catalog
        # CPU node groups: the system group and plain CPU pools; `pools` are the GPU ones.
        system = args.fleet.system_pool(cluster.name)
        cpu_pools = [p for p in pools if p.shape.kind == "cpu"]
        cpu_groups = [*cpu_pools, *([system] if system else [])]
        pools = [p for p in pools if p.shape.kind != "cpu"]
        aws_cloud, region = args.fleet.spec.clouds.aws, args.fleet.spec.region_of("aws")
        if aws_cloud is None or region is None:
            raise InputError(
                f"cluster {cluster.name!r} is on aws but `clouds.aws` is not declared",
                hint="add `clouds: {aws: {account: ..., region: ...}}`")
        opts = pulumi.ResourceOptions(parent=self)
        provider = aws.Provider(f"{cluster.name}-aws", region=region,
                                allowed_account_ids=[aws_cloud.account], opts=opts)
        child = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers=[provider]))

        compact = {p.name: p.spec.zones[0] for p in pools
                   if needs_placement_group(p) and p.spec.zones}
        network = EksNetwork(
            cluster.name,
            EksNetworkArgs(cluster_name=cluster.name, region=region, cidr=cluster.network.cidr,
                           zones=[z for p in (*pools, *cpu_groups) for z in p.spec.zones],
                           compact_pools=compact,
                           refused_az_ids=catalog.eks_addons.refused_az_ids.get(region, ()),
                           offline_az_ids=catalog.eks_addons.offline_az_ids.get(region, ())),
            child,
        )
        # kube-proxy and CoreDNS pins fit one Kubernetes version: a cluster that names none gets
        # the version its add-ons are pinned for, not whatever EKS defaults to that day; its
        # node groups get the same version (without one, EKS gives a node group the cluster's
        # version when it is created and never moves it: issue 36), so a catalog default that
        # moves is a version bump the plan shows, on the cluster and on every node group.
        eks_version = cluster.kubernetes_version or catalog.eks_addons.default_kubernetes_version
        pins = catalog.eks_addons.pins(eks_version)
        eks = EksCluster(
            cluster.name,
            EksClusterArgs(name=cluster.name, region=region,
                           kubernetes_version=eks_version,
                           subnet_ids=list[pulumi.Input[str]](network.control_plane_subnet_ids),
                           services_cidr=cluster.network.services_cidr,
                           private_endpoint=cluster.private_endpoint,
                           authorized_cidrs=list(cluster.authorized_cidrs),
                           admin_principal_arns=list(cluster.admins)),
            child,
        )
        before = managed_addons(
            cluster.name, eks.cluster_name,
            {n: v for n, v in pins.items() if n in catalog.eks_addons.before_compute}, child)
        # Every node group of the cluster goes in here: CoreDNS waits for them all.
        node_groups: list[pulumi.Resource] = []
        for pool in pools:
            group = GpuNodeGroup(
                pool.name,
                GpuNodeGroupArgs(
                    pool=pool, catalog=catalog, cluster_name=eks.cluster_name,
                    node_role_arn=eks.node_role_arn,
                    subnet_ids=[network.private_subnet_ids[z] for z in pool.spec.zones],
                    cluster_security_group_id=eks.cluster_security_group_id,
                    efa_security_group_id=network.efa_security_group_id,
                    placement_group=network.placement_groups.get(pool.name),
                    kubernetes_version=eks_version,
                    depends_on=list(before.values())),
                child,
            )
            node_groups.append(group)
        addon_nodes: list[pulumi.Resource] = []  # the add-ons' Helm releases wait for these
        for pool in cpu_groups:
            # a system pool without zones of its own: the pools' zones, padded from the
            # account's (decided at deploy time, never a zone letter guessed offline)
            zones = (network.system_zones if pool.system and not cluster.system_pool.zones
                     else pool.spec.zones)
            cpu_group = CpuNodeGroup(
                system_component_name(cluster.name) if pool.system else pool.name,
                CpuNodeGroupArgs(
                    pool=pool, catalog=catalog, cluster_name=eks.cluster_name,
                    node_role_arn=eks.node_role_arn,
                    subnet_ids=[network.private_subnet_ids[z] for z in zones],
                    kubernetes_version=eks_version,
                    depends_on=list(before.values())),
                child,
            )
            node_groups.append(cpu_group)
            if pool.system:
                addon_nodes.append(cpu_group.node_group)
        managed_addons(cluster.name, eks.cluster_name,
                       {n: v for n, v in pins.items() if n not in before}, child,
                       depends_on=node_groups)
        gpu_taint = next((catalog.kube(p.shape).taint for p in pools), None)
        exporter: list[pulumi.Resource] = []  # the gate's Role waits for its namespace
        if gpu_taint is not None:
            scheduling = GpuScheduling(
                gpu_taint=gpu_taint,
                gpu_node_label=ACCELERATOR_LABEL,
                efa_label=catalog.kube_section("aws", "efa")["label"],
                plugin_excluded={AMI_LABEL: list(PLUGIN_BUILT_IN)},
                pools=tuple(PoolNodes(p.name, node_labels(p, catalog), pool_taints(p, catalog))
                            for p in pools),
            )
            addons = GpuAddons(cluster.name, GpuAddonsArgs(
                scheduling=scheduling, efa=any(is_efa(p) for p in pools),
                dcgm_exporter=wants_dcgm_exporter(args.fleet, cluster.name)),
                pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                    provider=eks.provider, depends_on=addon_nodes)))
            exporter = [r for n, r in addons.releases.items() if n == DCGM_EXPORTER.chart]
        # JobSet and Kueue on every cluster, then the fleet's Kueue routing for this one
        queues = install_queueing(self, cluster.name, args.routing or cluster_routing(
            args.fleet, catalog, cluster.name), eks.provider, addon_nodes,
            system_pool=system is not None)
        self.outputs = ClusterOutputs(name=cluster.name, cloud="aws", endpoint=eks.endpoint,
                                      kubeconfig=eks.kubeconfig, provider=eks.provider,
                                      ready=(*addon_nodes, *queues, *exporter))
        self.register_outputs({"endpoint": eks.endpoint, "kubeconfig": eks.kubeconfig})


def build_aws_cluster(
    cluster: Cluster,
    pools: list[ResolvedPool],
    fleet: Fleet,
    catalog: Catalog,
    opts: pulumi.ResourceOptions | None = None,
    *,
    routing: ClusterRouting | None = None,
) -> ClusterOutputs:
    """Build an EKS cluster with every pool of `pools` as a GPU node group (and its Kueue
    routing, when `Fleet` decided it)."""
    site = AwsCluster(cluster.name, ClusterArgs(cluster=cluster, pools=pools, fleet=fleet,
                                                   catalog=catalog, routing=routing), opts)
    return site.outputs
