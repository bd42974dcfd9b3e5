"""Network fabric: the cluster's VPC, subnet, Cloud NAT and firewall, and GPUDirect's extra VPCs."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from fleet.catalog import GpuNetworking

FABRIC_TYPE = "accelfleet:gcp:NetworkFabric"
GPUDIRECT_TYPE = "accelfleet:gcp:GpuDirectNetworks"
PODS_RANGE = "pods"
SERVICES_RANGE = "services"
# Extra GPUDirect subnets are carved from here, one /24 each, in order of creation.
GPUDIRECT_BASE = "192.168.0.0/16"


@dataclass(frozen=True)
class NetworkFabricArgs:
    name: str
    project: str
    region: str
    cidr: str
    pods_cidr: str | None = None
    services_cidr: str | None = None


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
            auto_create_subnetworks=False, routing_mode="REGIONAL", opts=child)
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
class ExtraNetwork:
    """One additional node network: its GCP VPC and subnet names, and how pods use it."""

    vpc: str
    subnet: str
    device_mode: str  # GKENetworkParamSet deviceMode: NetDevice or RDMA


@dataclass(frozen=True)
class GpuDirectNetworksArgs:
    cluster: str
    project: str
    region: str
    zone: str
    networking: GpuNetworking
    first_block: int = 0  # index of the first /24 of GPUDIRECT_BASE to use


def gpudirect_layout(cluster: str, net: GpuNetworking) -> list[tuple[str, list[str], str]]:
    """(VPC name, its subnet names, device mode) for each extra VPC a GPUDirect kind needs.

    TCPX / TCPXO: `extra_vpcs` VPCs of one subnet each (NetDevice). RDMA: `extra_vpcs` gVNIC
    VPCs plus one RoCE VPC with `rdma_subnets` subnets (RDMA). Counts come from the catalog.
    """
    base = f"{cluster}-{net.kind}"
    out = [(f"{base}-net-{i}", [f"{base}-sub-{i}"], "NetDevice") for i in range(net.extra_vpcs)]
    if net.rdma_subnets:
        out.append((f"{base}-rdma", [f"{base}-rdma-sub-{i}" for i in range(net.rdma_subnets)],
                    "RDMA"))
    return out


class GpuDirectNetworks(pulumi.ComponentResource):
    """The extra VPCs and subnets a GPUDirect machine type attaches to, at the catalog's MTU."""

    extra: list[ExtraNetwork]
    next_block: int

    def __init__(self, name: str, args: GpuDirectNetworksArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GPUDIRECT_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        net = args.networking
        self.extra = []
        block = args.first_block
        for vpc_name, subnets, mode in gpudirect_layout(args.cluster, net):
            rdma = mode == "RDMA"
            vpc = gcp.compute.Network(
                vpc_name, name=vpc_name, project=args.project, auto_create_subnetworks=False,
                mtu=net.mtu,
                # A RoCE VPC is created from the zone's RDMA network profile.
                network_profile=(f"projects/{args.project}/global/networkProfiles/"
                                 f"{args.zone}-vpc-roce") if rdma else None,
                opts=child)
            cidrs = []
            for subnet in subnets:
                cidr = _block(block)
                block += 1
                cidrs.append(cidr)
                gcp.compute.Subnetwork(
                    subnet, name=subnet, project=args.project, region=args.region,
                    network=vpc.id, ip_cidr_range=cidr, opts=child)
                self.extra.append(ExtraNetwork(vpc=vpc_name, subnet=subnet, device_mode=mode))
            if not rdma:  # RoCE VPCs take no firewall rules; NCCL between GPU nodes otherwise
                gcp.compute.Firewall(
                    f"{vpc_name}-allow-nccl", name=f"{vpc_name}-allow-nccl",
                    project=args.project, network=vpc.id, direction="INGRESS",
                    source_ranges=cidrs,
                    allows=[gcp.compute.FirewallAllowArgs(protocol=p)
                            for p in ("tcp", "udp", "icmp")],
                    opts=child)
        self.next_block = block
        self.register_outputs({"networks": [e.vpc for e in self.extra],
                               "subnets": [e.subnet for e in self.extra]})


def _block(index: int) -> str:
    import ipaddress

    base = ipaddress.ip_network(GPUDIRECT_BASE)
    subnets = list(base.subnets(new_prefix=24))
    return str(subnets[index])
