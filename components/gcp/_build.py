"""From a validated fleet to Google Cloud components: one `GcpCluster` per GKE cluster, and
the Cloud TPU VMs that run outside Kubernetes."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.gcp._cluster import GkeCluster, GkeClusterArgs, NodeIdentity, NodeIdentityArgs
from components.gcp._cpu_pool import CpuNodePool, CpuNodePoolArgs
from components.gcp._dcgm import install_dcgm_exporter
from components.gcp._gpu_pool import GpuNodePool, GpuNodePoolArgs
from components.gcp._k8s import GpuDirectAddons, GpuDirectAddonsArgs, GpuDirectKind
from components.gcp._network import (
    PODS_RANGE,
    SERVICES_RANGE,
    ExtraNetwork,
    GpuDirectNetworks,
    GpuDirectNetworksArgs,
    NetworkFabric,
    NetworkFabricArgs,
    gpudirect_plan,
)
from components.gcp._tpu import TpuSlice, TpuSliceArgs, TpuVm, TpuVmArgs
from components.gcp._tpu_network import (
    TPU_VM_SECOND_CIDR,
    TpuSecondNetwork,
    TpuSecondNetworkArgs,
    wants_second_network,
)
from components.k8s import cluster_routing, install_queueing, wants_dcgm_exporter
from components.outputs import ClusterArgs, ClusterOutputs
from fleet.catalog import Catalog
from fleet.errors import InputError
from fleet.model import Fleet, ResolvedPool
from fleet.names import TPU_VMS_NAME, system_component_name
from fleet.routing import ClusterRouting
from fleet.spec.fields import Cluster

CLUSTER_TYPE = "accelfleet:gcp:Cluster"
TPU_VMS_TYPE = "accelfleet:gcp:TpuVms"
TPU_VM_CIDR = "10.200.0.0/20"



class GcpCluster(pulumi.ComponentResource):
    """A whole GKE site: network fabric, node identity, cluster, its system pool, GPUDirect
    networks and add-ons, the JobSet and Kueue controllers and the fleet's Kueue routing, and
    every GPU node pool, TPU slice and CPU pool that joins it."""

    outputs: ClusterOutputs

    def __init__(self, name: str, args: ClusterArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(CLUSTER_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        c = args.cluster
        project, region = _project_region(args.fleet)
        fabric = NetworkFabric(f"{c.name}-network", NetworkFabricArgs(
            name=c.name, project=project, region=region, cidr=c.network.cidr,
            pods_cidr=c.network.pods_cidr, services_cidr=c.network.services_cidr,
            mtu=cluster_mtu(args.pools, args.catalog)), child)
        identity = NodeIdentity(f"{c.name}-identity",
                                NodeIdentityArgs(name=c.name, project=project), child)
        by_kind: dict[str, list[ResolvedPool]] = {}
        for p in args.pools:
            if p.networking is not None and p.networking.kind != "efa":
                by_kind.setdefault(p.networking.kind, []).append(p)
        # TPU v6e and tpu7x slices take a second node network (catalog support.yaml)
        tpu_net = TpuSecondNetwork(f"{c.name}-tpu-network", TpuSecondNetworkArgs(
            cluster=c.name, project=project, region=region,
            mtu=args.catalog.tpu_network_mtu), child) \
            if any(wants_second_network(p) for p in args.pools) else None
        gke = GkeCluster(f"{c.name}-cluster", GkeClusterArgs(
            name=c.name, project=project, region=region, network=fabric.network.id,
            subnet=fabric.subnet.id, node_service_account=identity.email,
            release_channel=c.release_channel, private_endpoint=c.private_endpoint,
            authorized_cidrs=list(c.authorized_cidrs), kubernetes_version=c.kubernetes_version,
            multi_networking=bool(by_kind) or tpu_net is not None, pods_range=PODS_RANGE,
            services_range=SERVICES_RANGE), child)
        # The system pool first: the add-ons' Helm releases wait for its nodes.
        system = args.fleet.system_pool(c.name)
        addon_nodes: list[pulumi.Resource] = []
        if system is not None:
            addon_nodes.append(CpuNodePool(system_component_name(c.name), CpuNodePoolArgs(
                pool=system, catalog=args.catalog, cluster=gke.cluster.id, project=project,
                service_account=identity.email),
                pulumi.ResourceOptions(parent=self, depends_on=[gke])).node_pool)
        # One set of GPU networks per cluster, named as the catalog names the GKE networks
        # (TCPX and TCPXO share vpc1..vpc4); each pool attaches its kind's, in NIC order, as
        # outputs of the VPCs and subnets, so that it is created after and deleted before them.
        extra: dict[str, list[ExtraNetwork]] = {}
        kinds: list[GpuDirectKind] = []
        nets_made: list[pulumi.Resource] = []
        if by_kind:
            rdma_zones = [p.spec.zones[0] for p in by_kind.get("rdma", [])]
            nets = GpuDirectNetworks(f"{c.name}-gpudirect-networks", GpuDirectNetworksArgs(
                cluster=c.name, project=project, region=region,
                zone=rdma_zones[0] if rdma_zones else "",
                networks=gpudirect_plan(c.name, list(by_kind), args.catalog)), child)
            nets_made.append(nets)
        for kind in sorted(by_kind):
            extra[kind] = [nets.extra[n.name] for n in args.catalog.fabrics[kind].networks]
            accelerators = sorted({p.shape.machine.gke_accelerator for p in by_kind[kind]
                                   if p.shape.machine and p.shape.machine.gke_accelerator})
            kinds.append(GpuDirectKind(kind=kind, accelerators=accelerators))
        if kinds:
            GpuDirectAddons(f"{c.name}-gpudirect", GpuDirectAddonsArgs(
                cluster=c.name, kinds=kinds, provider=gke.provider,
                networks=list(nets.extra.values())),
                pulumi.ResourceOptions(parent=self, depends_on=nets_made))
        # JobSet and Kueue on every cluster, then the fleet's Kueue routing for this one
        queues = install_queueing(self, c.name, args.routing or cluster_routing(
            args.fleet, args.catalog, c.name), gke.provider, addon_nodes,
            system_pool=system is not None)
        exporter: list[pulumi.Resource] = []  # the gate's Role waits for its namespace
        if wants_dcgm_exporter(args.fleet, c.name):  # the gate reads it between proofs
            addons = install_dcgm_exporter(c.name, args.pools, args.catalog,
                                           pulumi.ResourceOptions(parent=self,
                                                                  provider=gke.provider,
                                                                  depends_on=addon_nodes))
            exporter = list(addons.releases.values()) if addons is not None else []
        pool_opts = pulumi.ResourceOptions(parent=self, depends_on=[gke])
        for p in args.pools:
            if p.shape.tpu is not None:
                TpuSlice(p.name, TpuSliceArgs(
                    pool=p, catalog=args.catalog, cluster=gke.cluster.id, project=project,
                    service_account=identity.email,
                    extra_networks=[tpu_net.extra] if tpu_net is not None
                    and wants_second_network(p) else []), pool_opts)
            elif p.shape.kind == "cpu":
                CpuNodePool(p.name, CpuNodePoolArgs(
                    pool=p, catalog=args.catalog, cluster=gke.cluster.id, project=project,
                    service_account=identity.email), pool_opts)
            else:
                kind = p.networking.kind if p.networking else ""
                GpuNodePool(p.name, GpuNodePoolArgs(
                    pool=p, catalog=args.catalog, cluster=gke.cluster.id, project=project,
                    service_account=identity.email, extra_networks=extra.get(kind, [])),
                    pool_opts)
        self.outputs = ClusterOutputs(name=c.name, cloud="gcp", endpoint=gke.endpoint,
                                      kubeconfig=gke.kubeconfig, provider=gke.provider,
                                      ready=(*addon_nodes, *queues, *exporter))
        self.register_outputs({"endpoint": gke.endpoint, "kubeconfig": gke.kubeconfig})


def build_gcp_cluster(cluster: Cluster, pools: list[ResolvedPool], fleet: Fleet,
                      catalog: Catalog, opts: pulumi.ResourceOptions | None = None, *,
                      routing: ClusterRouting | None = None) -> ClusterOutputs:
    """Build one GKE cluster with its pools (and its Kueue routing, when `Fleet` decided it);
    return what `Fleet` exports."""
    site = GcpCluster(cluster.name, ClusterArgs(cluster=cluster, pools=pools, fleet=fleet,
                                                   catalog=catalog, routing=routing), opts)
    return site.outputs


@dataclass(frozen=True)
class TpuVmsArgs:
    """The Cloud TPU VM pools (runtime: tpu-vm) of a fleet; `mtu`: their network's (the
    catalog's TPU network MTU), None for Compute Engine's default."""

    pools: list[ResolvedPool]
    fleet: Fleet
    mtu: int | None = None


class TpuVms(pulumi.ComponentResource):
    """Cloud TPU VMs outside Kubernetes, on their own private network and identity."""

    def __init__(self, name: str, args: TpuVmsArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TPU_VMS_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        project, region = _project_region(args.fleet)
        fabric = NetworkFabric(f"{name}-network", NetworkFabricArgs(
            name=name, project=project, region=region, cidr=TPU_VM_CIDR, mtu=args.mtu), child)
        identity = NodeIdentity(f"{name}-identity",
                                NodeIdentityArgs(name=name, project=project), child)
        # v6e and tpu7x VMs get the second network GKE's slices of them get (support.yaml)
        second = TpuSecondNetwork(f"{name}-tpu-network", TpuSecondNetworkArgs(
            cluster=name, project=project, region=region, mtu=args.mtu,
            cidr=TPU_VM_SECOND_CIDR), child) \
            if any(wants_second_network(p) for p in args.pools) else None
        for p in args.pools:
            TpuVm(p.name, TpuVmArgs(pool=p, project=project, network=fabric.network.id,
                                    subnet=fabric.subnet.id, service_account=identity.email,
                                    extra_networks=[second.extra] if second is not None
                                    and wants_second_network(p) else []),
                  child)
        self.register_outputs({"pools": [p.name for p in args.pools]})


def build_tpu_vms(pools: list[ResolvedPool], fleet: Fleet, catalog: Catalog,
                  opts: pulumi.ResourceOptions | None = None) -> TpuVms:
    """Build the Cloud TPU VM pools (runtime: tpu-vm) of a fleet."""
    return TpuVms(TPU_VMS_NAME, TpuVmsArgs(pools=pools, fleet=fleet,
                                           mtu=catalog.tpu_network_mtu), opts)


def gpudirect_mtu(pools: list[ResolvedPool]) -> int | None:
    """The largest MTU of the cluster's GPUDirect networks (catalog), or None without."""
    mtus = [p.networking.mtu for p in pools
            if p.networking is not None and p.networking.kind != "efa" and p.networking.mtu]
    return max(mtus) if mtus else None


def cluster_mtu(pools: list[ResolvedPool], catalog: Catalog) -> int | None:
    """The primary VPC's MTU: its GPUDirect networks' (Cluster Toolkit's blueprints give the
    primary VPC theirs), else the TPU network MTU when the cluster has TPU slices (tpu.yaml
    `network`: the references' 8896), else None (Compute Engine's default, 1460)."""
    gpudirect = gpudirect_mtu(pools)
    if gpudirect is not None:
        return gpudirect
    if any(p.shape.tpu is not None for p in pools):
        return catalog.tpu_network_mtu
    return None


def _project_region(fleet: Fleet) -> tuple[str, str]:
    gcp, region = fleet.spec.clouds.gcp, fleet.spec.region_of("gcp")
    if gcp is None or region is None:
        raise InputError("the fleet has Google Cloud pools but no `clouds.gcp`",
                         hint="declare clouds.gcp with project and region")
    return gcp.project, region
