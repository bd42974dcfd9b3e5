"""`EksNetwork`: the VPC of one EKS cluster, its EFA security group and placement groups."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components.aws._layout import AccountZones, cluster_zones, subnet_layout
from fleet.errors import InputError
from fleet.labels import CLUSTER_TAG, POOL_LABEL, ZONE_TAG

TYPE = "accelfleet:aws:EksNetwork"
_ALL = "-1"  # every protocol, every port


@dataclass(frozen=True)
class EksNetworkArgs:
    """cidr: the VPC range; zones: the pools' zones; compact_pools: pool name -> its one zone."""

    cluster_name: str
    region: str
    cidr: str
    zones: list[str]
    compact_pools: dict[str, str] = field(default_factory=dict)
    refused_az_ids: tuple[str, ...] = ()  # AZ IDs EKS refuses for the control plane here
    offline_az_ids: tuple[str, ...] = ()  # AZ IDs closed to new resources (no nodes)


# The account's own Availability Zones: available, and no opt-in needed (Local and Wavelength
# Zones are opt-in: a pool's zones are Availability Zones).
# https://www.pulumi.com/registry/packages/aws/api-docs/getavailabilityzones/
ZONE_FILTERS = [{"name": "opt-in-status", "values": ["opt-in-not-required"]}]


def account_zones(region: str, refused_az_ids: tuple[str, ...],
                  opts: pulumi.InvokeOptions,
                  offline_az_ids: tuple[str, ...] = ()) -> AccountZones:
    """The deploying account's zones in the region, read at deploy (and preview) time."""
    found = aws.get_availability_zones(
        state="available",
        filters=[aws.GetAvailabilityZonesFilterArgs(name=f["name"], values=f["values"])
                 for f in ZONE_FILTERS],
        opts=opts)
    names, ids = tuple(found.names or ()), tuple(found.zone_ids or ())
    if len(names) != len(ids):
        raise InputError(f"the availability-zones lookup in {region} gave {len(names)} zone "
                         f"names but {len(ids)} AZ IDs", hint="this is a provider bug: report "
                         "it with `aws ec2 describe-availability-zones` output")
    return AccountZones(names=names, zone_ids=ids, refused_ids=frozenset(refused_az_ids),
                        offline_ids=frozenset(offline_az_ids))


class EksNetwork(pulumi.ComponentResource):
    """Private subnets (nodes) and public subnets (one NAT gateway) in several zones.

    Also the EFA security group, which lets members reach each other on every protocol (EFA's
    SRD traffic is not TCP/UDP), and one `cluster` placement group per compact pool.
    """

    vpc_id: pulumi.Output[str]
    private_subnet_ids: dict[str, pulumi.Output[str]]
    control_plane_subnet_ids: list[pulumi.Output[str]]
    system_zones: list[str]
    efa_security_group_id: pulumi.Output[str]
    placement_groups: dict[str, pulumi.Output[str]]

    def __init__(
        self, name: str, args: EksNetworkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        account = account_zones(args.region, args.refused_az_ids,
                                pulumi.InvokeOptions(parent=self), args.offline_az_ids)
        planned = cluster_zones(args.region, args.zones, account)
        layout = subnet_layout(args.cidr, planned.zones)
        tags = {CLUSTER_TAG: args.cluster_name}
        owned = {f"kubernetes.io/cluster/{args.cluster_name}": "shared"}

        vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=args.cidr, enable_dns_hostnames=True,
                          enable_dns_support=True, tags={**tags, "Name": name}, opts=child)
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=tags, opts=child)
        public_rt = aws.ec2.RouteTable(
            f"{name}-public", vpc_id=vpc.id, tags=tags, opts=child,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
        )
        public_ids: list[pulumi.Output[str]] = []
        self.private_subnet_ids = {}
        for z in layout:
            pub = aws.ec2.Subnet(
                f"{name}-public-{z.zone}", vpc_id=vpc.id, cidr_block=z.public_cidr,
                availability_zone=z.zone, map_public_ip_on_launch=False,
                tags={**tags, **owned, "kubernetes.io/role/elb": "1"}, opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-public-{z.zone}", subnet_id=pub.id,
                                          route_table_id=public_rt.id, opts=child)
            public_ids.append(pub.id)
            priv = aws.ec2.Subnet(
                f"{name}-private-{z.zone}", vpc_id=vpc.id, cidr_block=z.private_cidr,
                availability_zone=z.zone, map_public_ip_on_launch=False,
                tags={**tags, **owned, "kubernetes.io/role/internal-elb": "1"}, opts=child)
            self.private_subnet_ids[z.zone] = priv.id

        # One NAT gateway for the private subnets' egress (image pulls, AWS APIs).
        eip = aws.ec2.Eip(f"{name}-nat", domain="vpc", tags=tags, opts=child)
        nat = aws.ec2.NatGateway(f"{name}-nat", allocation_id=eip.id, subnet_id=public_ids[0],
                                 tags=tags, opts=pulumi.ResourceOptions(parent=self,
                                                                        depends_on=[igw]))
        private_rt = aws.ec2.RouteTable(
            f"{name}-private", vpc_id=vpc.id, tags=tags, opts=child,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
        )
        for zone, subnet_id in self.private_subnet_ids.items():
            aws.ec2.RouteTableAssociation(f"{name}-private-{zone}", subnet_id=subnet_id,
                                          route_table_id=private_rt.id, opts=child)

        efa = aws.ec2.SecurityGroup(
            f"{name}-efa", vpc_id=vpc.id, opts=child, tags={**tags, "Name": f"{name}-efa"},
            description="EFA: all traffic between members of this group, nothing else",
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-efa-in-self", security_group_id=efa.id, ip_protocol=_ALL,
            referenced_security_group_id=efa.id, description="EFA from members", opts=child)
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-efa-out-self", security_group_id=efa.id, ip_protocol=_ALL,
            referenced_security_group_id=efa.id, description="EFA to members", opts=child)

        self.placement_groups = {}
        for pool, zone in sorted(args.compact_pools.items()):
            pg = aws.ec2.PlacementGroup(f"{name}-{pool}", strategy="cluster",
                                        tags={**tags, POOL_LABEL: pool, ZONE_TAG: zone}, opts=child)
            self.placement_groups[pool] = pg.name

        self.vpc_id = vpc.id
        self.control_plane_subnet_ids = [self.private_subnet_ids[z]
                                         for z in planned.control_plane]
        self.system_zones = planned.system
        self.efa_security_group_id = efa.id
        self.register_outputs({
            "vpc_id": vpc.id,
            "private_subnet_ids": self.private_subnet_ids,
            "efa_security_group_id": efa.id,
            "placement_groups": self.placement_groups,
        })
