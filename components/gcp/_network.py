"""Network fabric: the cluster's VPC, subnet, Cloud NAT and firewall, and GPUDirect's extra VPCs."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from fleet.catalog import Catalog, GpuNetworking
from fleet.errors import CatalogError

FABRIC_TYPE = "accelfleet:gcp:NetworkFabric"
GPUDIRECT_TYPE = "accelfleet:gcp:GpuDirectNetworks"
PODS_RANGE = "pods"
SERVICES_RANGE = "services"
# Extra GPUDirect subnets are carved from here (see gpudirect_cidrs).
GPUDIRECT_BASE = "192.168.0.0/16"
NETDEVICE_PREFIX = 20
RDMA_PREFIX = 21


@dataclass(frozen=True)
class NetworkFabricArgs:
    name: str
    project: str
    region: str
    cidr: str
    pods_cidr: str | None = None
    services_cidr: str | None = None
    # The primary VPC's MTU: a GPUDirect cluster's is its GPU networks' (Cluster Toolkit's A3
    # blueprints give the primary network 8244, its A3 Ultra and A4 ones 8896); None keeps
    # Compute Engine's default (1460).
    mtu: int | None = None


class NetworkFabric(pulumi.ComponentResource):
    """A custom-mode VPC and subnet (with pod/service ranges), Cloud Router + NAT so private
    nodes reach registries, and a firewall rule for traffic inside the cluster's ranges."""

    network: gcp.compute.Network
    subnet: gcp.compute.Subnetwork

    def __init__(self, name: str, args: NetworkFabricArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(FABRIC_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        n = args.name
        self.network = gcp.compute.Network(
            f"{n}-vpc", name=f"{n}-vpc", project=args.project,
            auto_create_subnetworks=False, routing_mode="REGIONAL", mtu=args.mtu, opts=child)
        secondary = []
        if args.pods_cidr:
            secondary.append(gcp.compute.SubnetworkSecondaryIpRangeArgs(
                range_name=PODS_RANGE, ip_cidr_range=args.pods_cidr))
        if args.services_cidr:
            secondary.append(gcp.compute.SubnetworkSecondaryIpRangeArgs(
                range_name=SERVICES_RANGE, ip_cidr_range=args.services_cidr))
        self.subnet = gcp.compute.Subnetwork(
            f"{n}-subnet", name=f"{n}-subnet", project=args.project, region=args.region,
            network=self.network.id, ip_cidr_range=args.cidr, private_ip_google_access=True,
            secondary_ip_ranges=secondary,
            log_config=gcp.compute.SubnetworkLogConfigArgs(
                aggregation_interval="INTERVAL_5_SEC", flow_sampling=0.5,
                metadata="INCLUDE_ALL_METADATA"),
            opts=child)
        router = gcp.compute.Router(
            f"{n}-router", name=f"{n}-router", project=args.project, region=args.region,
            network=self.network.id, opts=child)
        gcp.compute.RouterNat(
            f"{n}-nat", name=f"{n}-nat", project=args.project, region=args.region,
            router=router.name, nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            opts=child)
        internal = [args.cidr] + [r for r in (args.pods_cidr, args.services_cidr) if r]
        gcp.compute.Firewall(
            f"{n}-allow-internal", name=f"{n}-allow-internal", project=args.project,
            network=self.network.id, direction="INGRESS", source_ranges=internal,
            allows=[gcp.compute.FirewallAllowArgs(protocol=p) for p in ("tcp", "udp", "icmp")],
            opts=child)
        self.register_outputs({"network": self.network.id, "subnet": self.subnet.id})


@dataclass(frozen=True)
class GpuDirectNetwork:
    """One extra node network of a cluster, as planned: its GKE `Network` name (the catalog's),
    GCE VPC and subnet names, address range, device mode and MTU."""

    name: str
    vpc: str
    subnet: str
    cidr: str
    device_mode: str  # GKENetworkParamSet deviceMode: NetDevice or RDMA
    mtu: int


@dataclass(frozen=True)
class ExtraNetwork:
    """One additional node network as built: its GKE `Network` name, and the VPC and subnet
    names as outputs of the resources, so that what attaches to them depends on them."""

    name: str
    vpc: pulumi.Input[str]
    subnet: pulumi.Input[str]
    device_mode: str


def gpudirect_cidrs(catalog: Catalog) -> dict[str, str]:
    """A fixed range per GKE network name of every fabric in the catalog, so that a network's
    range never moves when its cluster gains or loses a GPUDirect kind: NetDevice networks get
    a /20 each (about 4,000 nodes), RDMA networks a /21 (about 2,000), carved in order from
    GPUDIRECT_BASE (Cluster Toolkit's A3 blueprints: /20 GPU subnets; A3 Ultra: a /18 over 8
    RDMA subnets)."""
    names: dict[str, str] = {}
    for fabric in catalog.fabrics.values():
        for n in fabric.networks:
            names.setdefault(n.name, n.device_mode)
    base = ipaddress.ip_network(GPUDIRECT_BASE)
    out: dict[str, str] = {}
    cursor = int(base.network_address)
    for mode, prefix in (("NetDevice", NETDEVICE_PREFIX), ("RDMA", RDMA_PREFIX)):
        for name, m in names.items():
            if m != mode:
                continue
            block = ipaddress.ip_network((cursor, prefix))
            if not block.subnet_of(base):  # type: ignore[arg-type]
                raise CatalogError(f"the GPUDirect networks no longer fit in {GPUDIRECT_BASE}"
                                   " (components/gcp/_network.py)")
            out[name] = str(block)
            cursor += block.num_addresses
    return out


def gpudirect_plan(cluster: str, kinds: Sequence[str], catalog: Catalog
                   ) -> list[GpuDirectNetwork]:
    """Every extra node network a cluster needs for its GPUDirect kinds, once per GKE network
    name (TCPX's vpc1..vpc4 are TCPXO's too), NetDevice networks first. A NetDevice network is
    a VPC with one subnet (`<cluster>-gpu-vpc1`, `-sub`); the RDMA networks are subnets
    (`<cluster>-gpu-rdma-0`...) of one RoCE VPC per cluster (`<cluster>-gpu-rdma`)."""
    nets: dict[str, GpuNetworking] = {m.networking.kind: m.networking
                                      for m in catalog.machines.values()
                                      if m.networking is not None}
    cidrs = gpudirect_cidrs(catalog)
    planned: dict[str, GpuDirectNetwork] = {}
    for kind in sorted(kinds):
        mtu = nets[kind].mtu
        for n in catalog.fabrics[kind].networks:
            rdma = n.device_mode == "RDMA"
            base = f"{cluster}-gpu"
            want = GpuDirectNetwork(
                name=n.name, vpc=f"{base}-rdma" if rdma else f"{base}-{n.name}",
                subnet=f"{base}-{n.name}" if rdma else f"{base}-{n.name}-sub",
                cidr=cidrs[n.name], device_mode=n.device_mode, mtu=mtu)
            if planned.setdefault(n.name, want) != want:
                raise CatalogError(f"GKE network {n.name!r} is asked for with two different "
                                   "device modes or MTUs (fabrics.yaml, gcp.yaml)")
    ordered = sorted(planned.values(), key=lambda p: p.device_mode != "NetDevice")
    roce_mtus = {p.mtu for p in ordered if p.device_mode == "RDMA"}
    if len(roce_mtus) > 1:
        raise CatalogError("the RDMA networks of one cluster need one MTU (gcp.yaml "
                           "gpu_networking)")
    return ordered


@dataclass(frozen=True)
class GpuDirectNetworksArgs:
    cluster: str
    project: str
    region: str
    zone: str  # the zone of the cluster's RDMA pools: the RoCE VPC's network profile
    networks: list[GpuDirectNetwork]


class GpuDirectNetworks(pulumi.ComponentResource):
    """A cluster's extra GPU VPCs and subnets, at the catalog's MTU: one VPC per NetDevice
    network, with an NCCL firewall rule; one RoCE VPC (the zone's `vpc-roce` network profile,
    no firewall rules) for the RDMA networks."""

    extra: dict[str, ExtraNetwork]

    def __init__(self, name: str, args: GpuDirectNetworksArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GPUDIRECT_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        vpcs: dict[str, gcp.compute.Network] = {}
        self.extra = {}
        for n in args.networks:
            rdma = n.device_mode == "RDMA"
            vpc = vpcs.get(n.vpc)
            if vpc is None:
                vpc = vpcs[n.vpc] = gcp.compute.Network(
                    n.vpc, name=n.vpc, project=args.project, auto_create_subnetworks=False,
                    mtu=n.mtu,
                    network_profile=(f"projects/{args.project}/global/networkProfiles/"
                                     f"{args.zone}-vpc-roce") if rdma else None,
                    opts=child)
            subnet = gcp.compute.Subnetwork(
                n.subnet, name=n.subnet, project=args.project, region=args.region,
                network=vpc.id, ip_cidr_range=n.cidr, opts=child)
            if not rdma:  # RoCE VPCs take no firewall rules
                gcp.compute.Firewall(
                    f"{n.vpc}-allow-nccl", name=f"{n.vpc}-allow-nccl", project=args.project,
                    network=vpc.id, direction="INGRESS", source_ranges=[n.cidr],
                    allows=[gcp.compute.FirewallAllowArgs(protocol=p)
                            for p in ("tcp", "udp", "icmp")],
                    opts=child)
            self.extra[n.name] = ExtraNetwork(name=n.name, vpc=vpc.name, subnet=subnet.name,
                                              device_mode=n.device_mode)
        self.register_outputs({"networks": [n.vpc for n in args.networks],
                               "subnets": [n.subnet for n in args.networks]})
